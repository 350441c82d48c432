from __future__ import annotations

import os
from pathlib import Path

import pytest

from svgagent.core.config.settings import Settings, load_settings, user_config_file
from svgagent.core.scoring.errors import ConfigError
from svgagent.core.scoring.models import JudgeMode


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
    # the project files lower concurrency (a safety limit: raising it would need a confirmation, see below)
    user.write_text('model = "from-user"\njudge_model = "judge-user"\nconcurrency = 4\nthreshold = 0.1\nruns = 5\n')
    (isolated_env / "svgagent.toml").write_text('model = "from-toml"\nconcurrency = 3\nthreshold = 0.2\nruns = 4\n')
    (isolated_env / ".env").write_text("SVGAGENT_CONCURRENCY=2\nSVGAGENT_THRESHOLD=0.3\nOPENAI_API_KEY=sk-dotenv\n")
    monkeypatch.setenv("SVGAGENT_THRESHOLD", "0.4")
    s = load_settings(samples=7)
    assert s.judge_model == "judge-user"  # only the user file sets it
    assert s.model == "from-toml"  # project toml beats user file
    assert s.concurrency == 2  # .env beats toml
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
    from svgagent.core.config.toml_file import PROJECT_CONFIG_MAX_BYTES

    project = isolated_env / "svgagent.toml"
    project.write_bytes(b'model = "' + b"a" * PROJECT_CONFIG_MAX_BYTES + b'"\n')
    with pytest.raises(ConfigError, match="svgagent.toml is too large for a config file"):
        load_settings()
    project.write_bytes(b'model = "caf\xe9"\n')
    with pytest.raises(ConfigError, match="svgagent.toml is not UTF-8 text"):
        load_settings()


def test_the_file_layers_use_public_pydantic_settings_api_and_the_capped_reader(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The TOML layers are InitSettingsSource fed with what core/config/toml_file.py read, the .env layer a
    DotEnvSettingsSource made once the file is known to be regular: no private method of pydantic-settings is
    overridden (the <2.17 pin was for one). Through load_settings: each TOML file is read by the capped reader, an
    oversized user config file is refused with one line, and svgagent.toml as a FIFO is refused with one line,
    never opened for a blocking read."""
    import threading

    from pydantic_settings import DotEnvSettingsSource, InitSettingsSource

    from svgagent.core.config import toml_file as config_file
    from svgagent.core.config.settings_sources import DotEnvFileSource, TomlFileSource
    from svgagent.core.config.toml_file import CONFIG_MAX_BYTES

    for source, base in ((TomlFileSource, InitSettingsSource), (DotEnvFileSource, DotEnvSettingsSource)):
        assert issubclass(source, base)
        private = [n for n, v in vars(source).items() if callable(v) and n.startswith("_") and not n.startswith("__")]
        assert private == []  # what it defines is public in pydantic-settings, or its own

    project, user = isolated_env / "svgagent.toml", user_config_file()
    project.write_text("concurrency = 3\n")
    user.parent.mkdir(parents=True)
    user.write_text('judge_model = "from-user"\n')
    read = []
    capped = config_file.read_config_text
    monkeypatch.setattr(
        config_file, "read_config_text", lambda path, cap: (read.append((path, cap)), capped(path, cap))[1]
    )
    settings = load_settings()
    assert (settings.concurrency, settings.judge_model) == (3, "from-user")
    env = isolated_env / ".env"  # none here: looked for with the same reader
    # (the user file twice: concurrency, a safety limit, is set by the project file, so the person's own layers are
    # read too, to compare)
    assert set(read) == {
        (env, CONFIG_MAX_BYTES),
        (project, config_file.PROJECT_CONFIG_MAX_BYTES),
        (user, CONFIG_MAX_BYTES),
    }

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
        with pytest.raises(ConfigError, match=r"svgagent.toml is not a regular file") as refused:
            load_settings()
    finally:
        unblock.cancel()
    assert "\n" not in str(refused.value)


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
