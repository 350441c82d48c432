from __future__ import annotations

import os
from pathlib import Path

import pytest

from svgagent.core.scoring.errors import ConfigError
from svgagent.core.scoring.models import JudgeMode
from svgagent.core.settings import Settings, load_settings, user_config_file


def test_defaults() -> None:
    s = load_settings()
    assert s.model == "accounts/fireworks/models/qwen3-0p6b"
    assert s.base_url == "https://api.fireworks.ai/inference/v1"
    assert s.temperature == 0.8
    assert s.judge_model == "gpt-4.1"
    assert s.judge_base_url == "https://api.openai.com/v1"
    assert s.judge_mode is JudgeMode.COUNT
    assert (s.concurrency, s.judge_concurrency, s.render_size, s.threshold) == (16, 16, 512, 0.5)
    assert s.dataset == "builtin"
    assert s.rows is None
    assert s.samples == 1
    assert s.missing_keys() == ["FIREWORKS_API_KEY", "OPENAI_API_KEY"]


def test_precedence_flags_env_dotenv_toml_user(isolated_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user = user_config_file()
    user.parent.mkdir(parents=True)
    user.write_text('model = "from-user"\njudge_model = "judge-user"\nconcurrency = 2\nthreshold = 0.1\nruns = 5\n')
    (isolated_env / "svgagent.toml").write_text('model = "from-toml"\nconcurrency = 3\nthreshold = 0.2\nruns = 4\n')
    (isolated_env / ".env").write_text("SVGAGENT_CONCURRENCY=4\nSVGAGENT_THRESHOLD=0.3\nOPENAI_API_KEY=sk-dotenv\n")
    monkeypatch.setenv("SVGAGENT_THRESHOLD", "0.4")
    s = load_settings(samples=7)
    assert s.judge_model == "judge-user"  # only the user file sets it
    assert s.model == "from-toml"  # project toml beats user file
    assert s.concurrency == 4  # .env beats toml
    assert s.threshold == 0.4  # environment beats .env
    assert s.samples == 7  # explicit override beats everything
    assert s.openai_api_key is not None
    assert s.openai_api_key.get_secret_value() == "sk-dotenv"


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("concurrency", 0, "concurrency=0"),
        ("concurrency", 5000, "1 to 1024"),
        ("temperature", 3.0, "0 to 2"),
        ("threshold", 1.5, "threshold=1.5"),
        ("judge_mode", "vibes", "count, per-requirement"),
        ("render_size", 1, "render_size"),
        ("base_url", "ftp://x", "http:// or https://"),
    ],
)
def test_invalid_values_give_one_clear_line(field: str, value: object, expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(**{field: value})
    message = str(info.value)
    assert expected in message
    assert field in message
    assert "\n" not in message
    assert "Traceback" not in message


def test_invalid_value_from_toml_names_field(isolated_env: Path) -> None:
    (isolated_env / "svgagent.toml").write_text("judge_concurrency = -1\n")
    with pytest.raises(ConfigError, match="judge_concurrency"):
        load_settings()


def test_malformed_toml_is_a_config_error(isolated_env: Path) -> None:
    (isolated_env / "svgagent.toml").write_text("model = \n")
    with pytest.raises(ConfigError, match="configuration"):
        load_settings()


def test_a_project_config_is_read_as_untrusted_text(isolated_env: Path) -> None:
    """A cloned project's svgagent.toml is read capped (a huge file is refused, not loaded into memory) and must be
    UTF-8."""
    from svgagent.core.config_file import CONFIG_MAX_BYTES

    project = isolated_env / "svgagent.toml"
    project.write_bytes(b'model = "' + b"a" * CONFIG_MAX_BYTES + b'"\n')
    with pytest.raises(ConfigError, match="svgagent.toml is too large for a config file"):
        load_settings()
    project.write_bytes(b'model = "caf\xe9"\n')
    with pytest.raises(ConfigError, match="svgagent.toml is not UTF-8 text"):
        load_settings()


def test_the_capped_reader_is_the_one_pydantic_settings_calls(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CappedTomlSource overrides pydantic-settings' private ``_read_file``: if a release renamed it, both TOML
    layers would silently go back to a plain uncapped read. Through the public path (load_settings): each file is
    read by the capped reader, an oversized user config file is refused with one line too, and a FIFO named
    svgagent.toml is never opened for reading (start-up does not wait on it)."""
    import threading

    from svgagent.core import settings as settings_module
    from svgagent.core.config_file import CONFIG_MAX_BYTES

    project, user = isolated_env / "svgagent.toml", user_config_file()
    project.write_text("concurrency = 3\n")
    user.parent.mkdir(parents=True)
    user.write_text('judge_model = "from-user"\n')
    read = []
    capped = settings_module.read_config_text
    monkeypatch.setattr(settings_module, "read_config_text", lambda path: (read.append(path), capped(path))[1])
    settings = load_settings()
    assert (settings.concurrency, settings.judge_model) == (3, "from-user")
    assert sorted(read) == sorted([project, user])

    user.write_bytes(b"# " + b"x" * CONFIG_MAX_BYTES + b"\n")
    with pytest.raises(ConfigError, match=r"^cannot read configuration: config.toml is too large for a config file"):
        load_settings()

    user.unlink()
    project.unlink()
    os.mkfifo(project)

    def unblock_a_reader() -> None:  # a blocking open for reading would hang the test: the writer's end frees it
        try:
            os.close(os.open(project, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:  # no reader waiting: nothing to free
            pass

    unblock = threading.Timer(10, unblock_a_reader)
    unblock.daemon = True
    unblock.start()
    try:
        read.clear()
        assert load_settings().concurrency == Settings.model_fields["concurrency"].default
    finally:
        unblock.cancel()
    assert read == []  # pydantic-settings skips what is not a regular file; the capped reader would refuse it


def test_store_path_home_and_override(isolated_env: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    default = load_settings().store_path()
    assert str(default).startswith(os.environ["XDG_DATA_HOME"])
    monkeypatch.setenv("SVGAGENT_HOME", str(tmp_path / "h"))
    assert load_settings().store_path() == tmp_path / "h" / "runs.db"
    assert load_settings(store=tmp_path / "x.db").store_path() == tmp_path / "x.db"
    assert load_settings(store=tmp_path / "dir").store_path() == tmp_path / "dir" / "runs.db"


def test_public_dict_has_no_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FIREWORKS_API_KEY", "FAKEFW-secret-value-123456")
    s = load_settings(openai_api_key="FAKEOA-secret-value-123456")
    dumped = repr(s.public_dict()) + repr(s)
    assert "secret-value" not in dumped
    assert "fireworks_api_key" not in s.public_dict()


def test_settings_model_has_every_documented_field() -> None:
    for name in (
        "model",
        "base_url",
        "temperature",
        "max_tokens",
        "reasoning_effort",
        "judge_model",
        "judge_base_url",
        "judge_mode",
        "concurrency",
        "judge_concurrency",
        "request_timeout_s",
        "max_retries",
        "render_size",
        "threshold",
        "dataset",
        "rows",
        "samples",
    ):
        assert name in Settings.model_fields
