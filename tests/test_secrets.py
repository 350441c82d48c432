from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from dotenv import dotenv_values

from svgagent.core.config.secrets import (
    KNOWN_KEYS,
    MASK_FULL,
    SecretEntry,
    mask,
    read_secrets,
    write_env_file,
)
from svgagent.core.config.settings import load_settings
from svgagent.core.named_files import write_output

FW = "fwX-abcdefghijklmnop1234"
OA = "skX-proj-ZYXWVUTSRQPONM9876"


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (FW, "fwX-…1234"),
        (OA, "skX-…9876"),
        ("0123456789abcdef", "0123…cdef"),  # exactly the shortest length shown partly
        ("0123456789abcde", MASK_FULL),
        ("abc", MASK_FULL),
        ("", ""),
        (None, ""),
    ],
)
def test_mask(value: str | None, expected: str) -> None:
    assert mask(value) == expected


def test_mask_never_contains_the_middle() -> None:
    shown = mask(FW)
    assert FW[4:-4] not in shown
    assert len(shown) == 9


def test_known_keys_are_listed_even_without_a_file(isolated_env: Path) -> None:
    entries = read_secrets(isolated_env / ".env", {})
    assert [e.name for e in entries] == list(KNOWN_KEYS)
    assert all(e.source == "unset" and e.value is None and e.masked == "" for e in entries)


def test_sources_and_precedence(isolated_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env_file = isolated_env / ".env"
    env_file.write_text(
        f"# keys\nFIREWORKS_API_KEY={FW}\nOPENAI_API_KEY=skX-from-dotenv-000000000\nEXTRA_TOKEN=tok-1234567890abcdef\n"
        "FIREWORKS_ACCOUNT_ID=\nSVGAGENT_CONCURRENCY=8\n"
    )
    environ = {"OPENAI_API_KEY": OA, "UNRELATED": "x"}
    by_name = {e.name: e for e in read_secrets(env_file, environ)}
    assert list(by_name) == [*KNOWN_KEYS, "EXTRA_TOKEN", "SVGAGENT_CONCURRENCY"]  # known first, then file order

    fw = by_name["FIREWORKS_API_KEY"]
    assert (fw.source, fw.value, fw.masked, fw.shadowed) == ("env-file", FW, "fwX-…1234", False)
    oa = by_name["OPENAI_API_KEY"]  # both set: the environment wins, and the entry says .env is shadowed
    assert (oa.source, oa.value, oa.in_env_file, oa.shadowed) == ("environment", OA, True, True)
    assert by_name["FIREWORKS_ACCOUNT_ID"].source == "unset"  # blank counts as unset
    assert by_name["EXTRA_TOKEN"].source == "env-file"
    assert "UNRELATED" not in by_name  # only known keys and names in .env

    # the settings model agrees on which value wins
    monkeypatch.setenv("OPENAI_API_KEY", OA)
    settings = load_settings()
    assert settings.openai_api_key is not None
    assert settings.openai_api_key.get_secret_value() == OA
    assert settings.fireworks_api_key is not None
    assert settings.fireworks_api_key.get_secret_value() == FW


def test_entry_repr_hides_the_value() -> None:
    entry = SecretEntry("FIREWORKS_API_KEY", FW, "env-file", mask(FW))
    assert FW not in repr(entry)
    assert FW not in str(entry)


ORIGINAL = (
    "# Copy to .env and fill in what you use.\n"
    "\n"
    "# Policy key\n"
    "FIREWORKS_API_KEY=old-fireworks-key-123456\n"
    "UNRELATED=keep me  # a comment that stays\n"
    "export QUOTED='single quoted'\n"
    "this line does not parse\n"
    "OPENAI_API_KEY=old-openai\n"
    "# trailing comment\n"
    "LAST=no-newline"
)


def test_write_keeps_other_lines_comments_and_order(isolated_env: Path) -> None:
    env_file = isolated_env / ".env"
    env_file.write_text(ORIGINAL)
    changed = write_env_file(
        env_file, {"FIREWORKS_API_KEY": FW, "OPENAI_API_KEY": None, "NEW_KEY": 'with space "and" #hash'}
    )
    assert sorted(changed) == ["FIREWORKS_API_KEY", "NEW_KEY", "OPENAI_API_KEY"]
    text = env_file.read_text()
    assert text == (
        "# Copy to .env and fill in what you use.\n"
        "\n"
        "# Policy key\n"
        f"FIREWORKS_API_KEY={FW}\n"
        "UNRELATED=keep me  # a comment that stays\n"
        "export QUOTED='single quoted'\n"
        "this line does not parse\n"
        "# trailing comment\n"
        "LAST=no-newline\n"
        'NEW_KEY="with space \\"and\\" #hash"\n'
    )
    values = dotenv_values(env_file)
    assert values["FIREWORKS_API_KEY"] == FW
    assert values["NEW_KEY"] == 'with space "and" #hash'
    assert values["UNRELATED"] == "keep me"
    assert values["QUOTED"] == "single quoted"
    assert values["LAST"] == "no-newline"
    assert "OPENAI_API_KEY" not in values


def test_replace_in_place_keeps_export_and_inline_comment(isolated_env: Path) -> None:
    env_file = isolated_env / ".env"
    env_file.write_text('A=1\nexport B="x #not a comment" # real comment\nC=3\n')
    write_env_file(env_file, {"B": "new"})
    assert env_file.read_text() == "A=1\nexport B=new # real comment\nC=3\n"


def test_repeated_key_keeps_first_place(isolated_env: Path) -> None:
    env_file = isolated_env / ".env"
    env_file.write_text("K=1\nA=a\nK=2\n")
    write_env_file(env_file, {"K": "3"})
    assert env_file.read_text() == "K=3\nA=a\n"


@pytest.mark.parametrize("value", ["plain", "", "  spaces  ", "multi\nline", "back\\slash", "quote'single", "a=b#c"])
def test_values_read_back_exactly(isolated_env: Path, value: str) -> None:
    env_file = isolated_env / ".env"
    write_env_file(env_file, {"K": value, "OTHER": "x"})
    assert dotenv_values(env_file) == {"K": value, "OTHER": "x"}


def test_mode_0600_new_and_existing_wide_file(isolated_env: Path) -> None:
    env_file = isolated_env / ".env"
    write_env_file(env_file, {"FIREWORKS_API_KEY": FW})
    assert _mode(env_file) == 0o600
    env_file.chmod(0o644)
    write_env_file(env_file, {"OPENAI_API_KEY": OA})
    assert _mode(env_file) == 0o600
    assert dotenv_values(env_file) == {"FIREWORKS_API_KEY": FW, "OPENAI_API_KEY": OA}


def test_atomic_no_temp_files_left(isolated_env: Path) -> None:
    env_file = isolated_env / ".env"
    for i in range(3):
        write_env_file(env_file, {"K": f"v{i}"})
    assert sorted(p.name for p in isolated_env.iterdir()) == [".env"]


def test_failed_write_leaves_old_file_and_no_temp(isolated_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env_file = isolated_env / ".env"
    env_file.write_text("K=old\n")

    def boom(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        write_env_file(env_file, {"K": "new"})
    assert env_file.read_text() == "K=old\n"
    assert sorted(p.name for p in isolated_env.iterdir()) == [".env"]


def test_symlinked_env_file_updates_target(isolated_env: Path, tmp_path: Path) -> None:
    real = tmp_path / "real.env"
    real.write_text("K=1\n")
    (isolated_env / ".env").symlink_to(real)
    write_env_file(isolated_env / ".env", {"K": "2"})
    assert (isolated_env / ".env").is_symlink()
    assert real.read_text() == "K=2\n"
    assert _mode(real) == 0o600


@pytest.mark.parametrize(
    ("name", "value", "match"),
    [("1BAD", "x", "invalid variable name"), ("HAS SPACE", "x", "invalid variable name"), ("K", "${HOME}", r"\$\{")],
)
def test_invalid_updates_raise_without_echoing_value(isolated_env: Path, name: str, value: str, match: str) -> None:
    env_file = isolated_env / ".env"
    with pytest.raises(ValueError, match=match) as info:
        write_env_file(env_file, {name: value})
    assert not env_file.exists()
    if value != "x":
        assert value not in str(info.value)


def test_write_never_logs_values(isolated_env: Path, caplog: pytest.LogCaptureFixture) -> None:
    env_file = isolated_env / ".env"
    env_file.write_text("not parseable line\n")
    with caplog.at_level("DEBUG"):
        write_env_file(env_file, {"FIREWORKS_API_KEY": FW})
        read_secrets(env_file, {})
    assert FW not in caplog.text


def test_write_output_mode(isolated_env: Path) -> None:
    target = isolated_env / "x.toml"
    write_output(target, "a = 1\n", mode=0o644)
    assert target.read_text() == "a = 1\n"
    assert _mode(target) == 0o644
