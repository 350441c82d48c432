"""Keys go only where the person sent them: a cloned project's ./svgagent.toml cannot redirect them without a
one-time confirmation per (file, host), and credentials in a base URL are refused and never stored or printed."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest
from cli_process import svgagent_argv

from svgagent.core.sim.simulator import Simulator
from svgagent.core.store.run_store import Store

KEYS = {"FIREWORKS_API_KEY": "FAKEFW-trust-0123456789", "OPENAI_API_KEY": "FAKEOA-trust-9876543210"}


def svgagent(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        svgagent_argv(*args),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={**os.environ, **KEYS, **(env or {})},
        stdin=subprocess.DEVNULL,
    )


def _project(directory: Path, base_url: str) -> Path:
    toml = directory / "svgagent.toml"
    toml.write_text(
        f'base_url = "{base_url}"\njudge_base_url = "{base_url}"\nmodel = "simulated-policy"\n'
        'judge_model = "simulated-judge"\nrender_size = 64\n'
    )
    return toml


def test_a_project_file_endpoint_receives_no_key_until_confirmed(isolated_env: Path, tmp_path: Path) -> None:
    home = {"SVGAGENT_HOME": str(tmp_path / "home")}
    with Simulator() as sim:
        assert sim.base_url is not None
        toml = _project(isolated_env, sim.base_url)
        refused = svgagent("eval", "--rows", "1", cwd=isolated_env, env=home)
        assert refused.returncode == 2, refused.stderr
        line = refused.stderr.strip()
        assert "\n" not in line
        assert str(toml) in line
        assert "svgagent trust" in line
        assert "--base-url" in line
        assert sim.stats()["total_requests"] == 0  # not one request, so no key, went there
        tui = svgagent("tui", cwd=isolated_env, env=home)  # no terminal to ask on: the same refusal
        assert tui.returncode == 2
        assert "svgagent trust" in tui.stderr
        assert sim.stats()["total_requests"] == 0

        trust_file = isolated_env.parent / "home" / "config" / "svgagent" / "trusted-endpoints.json"
        unasked = svgagent("trust", cwd=isolated_env, env=home)  # no terminal to ask on, no --yes: nothing done
        assert unasked.returncode == 2
        assert len(unasked.stderr.strip().splitlines()) == 1 and "--yes" in unasked.stderr
        assert not trust_file.exists()
        confirmed = svgagent("trust", "--yes", cwd=isolated_env, env=home)
        assert confirmed.returncode == 0
        assert "127.0.0.1" in confirmed.stdout
        assert trust_file.stat().st_mode & 0o777 == 0o600
        ran = svgagent("eval", "--rows", "1", cwd=isolated_env, env=home)
        assert ran.returncode in (0, 1), ran.stderr
        assert sim.stats()["requests"]["policy"] == 1
    with Simulator() as other:  # another host (port) in the same file: asked again
        assert other.base_url is not None
        _project(isolated_env, other.base_url)
        again = svgagent("eval", "--rows", "1", cwd=isolated_env, env=home)
        assert again.returncode == 2
        assert "svgagent trust" in again.stderr
        assert other.stats()["total_requests"] == 0


def test_endpoints_the_person_chose_need_no_confirmation(isolated_env: Path, tmp_path: Path) -> None:
    home = {"SVGAGENT_HOME": str(tmp_path / "home")}
    with Simulator() as sim:
        assert sim.base_url is not None
        _project(isolated_env, sim.base_url)
        flags = ["--base-url", sim.base_url, "--judge-base-url", sim.base_url]
        assert svgagent("eval", "--rows", "1", *flags, cwd=isolated_env, env=home).returncode in (0, 1)
        chosen = {**home, "SVGAGENT_BASE_URL": sim.base_url, "SVGAGENT_JUDGE_BASE_URL": sim.base_url}
        assert svgagent("eval", "--rows", "1", cwd=isolated_env, env=chosen).returncode in (0, 1)
        assert sim.stats()["requests"]["policy"] == 2


def test_credentials_in_a_base_url_are_refused_and_never_printed(isolated_env: Path, tmp_path: Path) -> None:
    home = {"SVGAGENT_HOME": str(tmp_path / "home")}
    out = svgagent(
        "eval", "--rows", "1", "--base-url", "http://someone:SECRETPASS@127.0.0.1:9/v1", cwd=isolated_env, env=home
    )
    assert out.returncode == 2
    assert "credentials" in out.stderr
    assert "SECRETPASS" not in out.stderr + out.stdout


def test_stored_or_imported_credentials_in_urls_are_stripped(isolated_env: Path, tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    with Store(db) as store:
        run_id = store.create_run(
            name="r", settings={"base_url": "http://u:SECRETPASS@h/v1"}, dataset={}, rows=[], samples=1
        )
    with sqlite3.connect(db) as con:  # as an older svgagent stored it
        assert "SECRETPASS" not in con.execute("SELECT settings_json FROM runs").fetchone()[0]
        con.execute("UPDATE runs SET settings_json = ?", (json.dumps({"base_url": "http://u:SECRETPASS@h/v1"}),))
    shown = svgagent("runs", "show", run_id, "--json", "--store", str(db), cwd=isolated_env)
    assert shown.returncode == 0
    assert "SECRETPASS" not in shown.stdout
    assert json.loads(shown.stdout)["run"]["settings"]["base_url"] == "http://h/v1"
    row = {
        "messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "no svg"}],
        "input_metadata": {
            "row_id": "r1",
            "completion_params": {"model": "m", "base_url": "http://u:SECRETPASS@h/v1"},
            "dataset_info": {"original_prompt": "Draw", "requirements": ["a"]},
        },
        "evaluation_result": {"score": 0.0, "is_score_valid": True},
    }
    (tmp_path / "in.jsonl").write_text(json.dumps(row) + "\n")
    imported = svgagent("import", str(tmp_path / "in.jsonl"), "--store", str(db), cwd=isolated_env)
    assert imported.returncode == 0, imported.stderr
    with sqlite3.connect(db) as con:
        stored = [r[0] for r in con.execute("SELECT settings_json FROM runs WHERE run_id != ?", (run_id,))]
    assert stored
    assert "SECRETPASS" not in stored[0]
    assert json.loads(stored[0])["base_url"] is None  # the file's endpoint is a note, never where keys go


@pytest.mark.parametrize("field", ["base_url", "judge_base_url"])
def test_rft_and_import_judging_check_the_judge_endpoint_too(isolated_env: Path, field: str) -> None:
    from svgagent.core.config.project_trust import require_trusted
    from svgagent.core.config.settings import load_settings
    from svgagent.core.scoring.errors import ConfigError

    (isolated_env / "svgagent.toml").write_text(f'{field} = "http://elsewhere.example:8080/v1"\n')
    settings = load_settings()
    with pytest.raises(ConfigError, match="elsewhere.example:8080"):
        require_trusted(settings, (field,))
    require_trusted(settings, tuple({"base_url", "judge_base_url"} - {field}))  # the other one is fine


@pytest.mark.parametrize("written", ["BASE_URL", "Base_Url"])
def test_a_project_endpoint_spelled_in_another_case_still_needs_confirming(isolated_env: Path, written: str) -> None:
    """pydantic-settings matches the file's keys case-insensitively: ``BASE_URL = …`` in svgagent.toml is the
    endpoint keys go to, so the endpoint check must see it too (it looked for ``base_url`` alone, and let it by)."""
    from svgagent.core.config.project_trust import require_trusted
    from svgagent.core.config.settings import load_settings
    from svgagent.core.scoring.errors import ConfigError

    toml = isolated_env / "svgagent.toml"
    toml.write_text(f'{written} = "http://elsewhere.example:8080/v1"\n')
    settings = load_settings()
    assert settings.base_url == "http://elsewhere.example:8080/v1"
    with pytest.raises(ConfigError, match=r"svgagent trust") as refused:
        require_trusted(settings)
    assert "\n" not in str(refused.value) and str(toml) in str(refused.value)
    assert "elsewhere.example:8080" in str(refused.value)


@pytest.mark.parametrize("meanwhile", ["deleted", "too large", "not TOML", "no endpoint"])
def test_a_project_file_changed_after_settings_read_it_fails_closed(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch, meanwhile: str
) -> None:
    """Settings took the endpoint from svgagent.toml; the file then changes before the endpoint check looks at it
    (deleted, grown past the cap, broken, the key gone). The endpoint Settings took still needs confirming: the
    check is decided by what Settings read, not by a second read of the file, which failed open."""
    from svgagent.core.config import settings as settings_module
    from svgagent.core.config.project_trust import require_trusted
    from svgagent.core.config.toml_file import CONFIG_MAX_BYTES
    from svgagent.core.scoring.errors import ConfigError

    toml = isolated_env / "svgagent.toml"
    toml.write_text('base_url = "http://elsewhere.example:8080/v1"\n')
    built = settings_module.Settings.__init__

    def build_then_change(self, **kwargs: object) -> None:  # noqa: ANN001
        built(self, **kwargs)
        if type(self) is settings_module.Settings and toml.exists():  # the first build read the file: change it
            if meanwhile == "deleted":
                toml.unlink()
            else:
                toml.write_bytes(
                    {
                        "too large": b"# " + b"x" * CONFIG_MAX_BYTES + b"\n",
                        "not TOML": b"base_url = \n",
                        "no endpoint": b'model = "m"\n',
                    }[meanwhile]
                )

    monkeypatch.setattr(settings_module.Settings, "__init__", build_then_change)
    settings = settings_module.load_settings()
    assert settings.base_url == "http://elsewhere.example:8080/v1"
    with pytest.raises(ConfigError, match=r"elsewhere\.example:8080.*svgagent trust"):
        require_trusted(settings)
