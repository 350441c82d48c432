"""Run settings: one pydantic-settings model, read from every layer a user may configure.

Precedence (highest first): explicit overrides (CLI flags, the TUI form) > environment variables > ``.env`` in the
working directory > ``svgagent.toml`` in the working directory > the user config file (platformdirs) > defaults.

Environment variables are the field names upper-cased with the ``SVGAGENT_`` prefix (``SVGAGENT_CONCURRENCY=32``);
the keys keep their usual names (``FIREWORKS_API_KEY``, ``OPENAI_API_KEY``, ``FIREWORKS_ACCOUNT_ID``).

The files are read as untrusted text (core/config/settings_sources.py, core/config/toml_file.py). What the project's files —
``./.env`` and ``./svgagent.toml`` — decide among the guarded settings (endpoints, safety limits, the store's place)
waits for the person's confirmation (core/config/project_trust.py): :func:`read_settings` marks it ``pending``,
:func:`load_settings` refuses a pending limit or store.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

import platformdirs
from pydantic import AliasChoices, Field, PrivateAttr, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, EnvSettingsSource, PydanticBaseSettingsSource, SettingsConfigDict

from svgagent.core.config.field_limits import numeric_range
from svgagent.core.config.prices import check_overrides
from svgagent.core.config.project_trust import GUARDED, TRUST_FILE_NAME, find_pending, is_trusted, require_confirmed
from svgagent.core.config.settings_sources import DotEnvFileSource, TomlFileSource, noting_project_layers
from svgagent.core.config.toml_file import CONFIG_MAX_BYTES, PROJECT_CONFIG_MAX_BYTES
from svgagent.core.scoring.errors import ConfigError
from svgagent.core.scoring.models import JudgeMode, JudgeProfileName, RendererName
from svgagent.core.store.typed_rows import DEFAULT_THRESHOLD
from svgagent.core.urls import has_userinfo, strip_userinfo

APP_NAME = "svgagent"
PROJECT_CONFIG_FILE = "svgagent.toml"
ENV_FILE = ".env"
STORE_FILE = "runs.db"
SECRET_FIELDS = ("fireworks_api_key", "openai_api_key")
# Fields read from their own variable names (FIREWORKS_API_KEY, …): the Secrets pane's, not the Config pane's.
KEY_FIELDS = (*SECRET_FIELDS, "fireworks_account_id")
# Fields that describe where things live or how this process runs, not what a run measures.
LOCAL_FIELDS = ("home", "store", "cache", "keymap", "chromium_path", "budget", "prices")
KEYMAP_MAX_ENTRIES = 500  # a project's svgagent.toml is untrusted text: the [keymap] table is capped
KEYMAP_MAX_CHARS = 200


def user_config_file() -> Path:
    return Path(platformdirs.user_config_dir(APP_NAME, appauthor=False)) / "config.toml"


def trust_file() -> Path:
    """Where the person's confirmations of project-file settings are kept (core/config/project_trust.py)."""
    return user_config_file().parent / TRUST_FILE_NAME


class Settings(BaseSettings):
    """Everything a run needs. Keys are ``SecretStr`` and never leave the process unmasked."""

    model_config = SettingsConfigDict(
        env_prefix="SVGAGENT_",
        extra="ignore",
        validate_default=True,
        populate_by_name=True,
    )

    # policy (the model being evaluated / trained)
    model: str = Field("accounts/fireworks/models/qwen3-0p6b", min_length=1, description="policy model name")
    base_url: str = Field("https://api.fireworks.ai/inference/v1", description="policy OpenAI-compatible endpoint")
    temperature: float = Field(0.8, ge=0.0, le=2.0, description="policy sampling temperature")
    max_tokens: int = Field(4096, ge=16, le=131072, description="policy completion token limit")
    reasoning_effort: Literal["low", "medium", "high"] | None = Field(
        None, description="sent in the request body for reasoning models"
    )
    # judge
    judge_model: str = Field("gpt-4.1", min_length=1, description="vision judge model")
    judge_base_url: str = Field("https://api.openai.com/v1", description="judge OpenAI-compatible endpoint")
    judge_mode: JudgeMode = Field(JudgeMode.COUNT, description="count | per-requirement")
    judge_profile: JudgeProfileName = Field(
        JudgeProfileName.SVGAGENT,
        description="whose scoring recipe: svgagent | ep-quickstart (Eval Protocol's RFT reward) | svgbench",
    )
    # engine
    concurrency: int = Field(16, ge=1, le=1024, description="policy requests in flight")
    judge_concurrency: int = Field(16, ge=1, le=1024, description="judge requests in flight")
    workers: int | None = Field(
        None,
        ge=1,
        le=64,
        description="engine processes a run is shared between, each "
        "with its own event loop and clients (default: as many as the concurrency needs, "
        "up to half the CPUs)",
    )
    request_timeout_s: float = Field(120.0, gt=0, le=3600, description="per-request timeout, seconds")
    max_retries: int = Field(3, ge=0, le=20, description="client retries (backoff honours Retry-After)")
    render_size: int = Field(512, ge=32, le=4096, description="longest side of the PNG the judge sees")
    render_timeout_s: float = Field(20.0, gt=0, le=600, description="wall-clock limit per render")
    render_memory_mb: int = Field(1024, ge=128, le=16384, description="memory limit of a render worker")
    renderer: RendererName = Field(
        RendererName.CAIROSVG, description="what draws the SVG: cairosvg | chromium (a headless browser, for parity)"
    )
    threshold: float = Field(DEFAULT_THRESHOLD, ge=0.0, le=1.0, description="mean score needed to pass")
    # data
    dataset: str = Field("builtin", min_length=1, description="'builtin' or a path (questions.json / EP JSONL)")
    rows: int | None = Field(None, ge=1, le=1_000_000, description="use the first N rows")
    samples: int = Field(
        1,
        ge=1,
        le=1000,
        description="independent samples per row, like RFT's group size",
        validation_alias=AliasChoices("samples", "SVGAGENT_SAMPLES", "SVGAGENT_RUNS"),
    )
    # cost: not what a run measures, so not stored with it (a resume takes the budget it is given)
    budget: float | None = Field(
        None,
        gt=0,
        le=1_000_000,
        description="dollars a run may spend, policy and judge: it stops before the call that would pass them "
        "(resumable)",
    )
    prices: dict[str, dict[str, float]] = Field(
        default_factory=dict,
        description='the price table\'s models overridden or added: [prices."MODEL"] input, output, cached_input '
        "(USD per 1M tokens), image (USD each)",
    )
    # local
    home: Path | None = Field(None, description="data directory (env SVGAGENT_HOME)")
    store: Path | None = Field(None, description="SQLite store file or directory")
    chromium_path: Path | None = Field(
        None, description="the Chromium executable for --renderer chromium (default: chromium on PATH)"
    )
    # off by default: a new run or a rerun is a new sample; a resume never pays twice either way (answers are stored
    # on their rollouts as they arrive)
    cache: bool = Field(
        False, description="reuse earlier runs' answers to identical requests (a resume never pays twice, on or off)"
    )
    keymap: dict[str, str] = Field(
        default_factory=dict,
        description='the app\'s keys remapped by binding id, e.g. "app.run" = "ctrl+r" (the [keymap] table)',
    )
    # keys (read from their usual variable names)
    fireworks_api_key: SecretStr | None = Field(
        None, validation_alias=AliasChoices("FIREWORKS_API_KEY", "fireworks_api_key")
    )
    openai_api_key: SecretStr | None = Field(None, validation_alias=AliasChoices("OPENAI_API_KEY", "openai_api_key"))
    fireworks_account_id: str | None = Field(
        None, validation_alias=AliasChoices("FIREWORKS_ACCOUNT_ID", "fireworks_account_id")
    )

    # read the project's files, ./.env and ./svgagent.toml (False: the person's own layers only)
    read_project_files: ClassVar[bool] = True
    # settings a project file decides that the person has not confirmed (core/config/project_trust.py; set by read_settings)
    _pending: tuple[Any, ...] = PrivateAttr(default=())

    @field_validator("base_url", "judge_base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        if has_userinfo(value):  # it would be stored with the run and printed: keys go in their variables
            raise ValueError(
                "must not hold credentials (user:password@): put keys in FIREWORKS_API_KEY / OPENAI_API_KEY"
            )
        return value.rstrip("/")

    @model_validator(mode="after")
    def _profile_has_mode(self) -> Settings:
        from svgagent.core.scoring.judge_profiles import profile_named

        profile = profile_named(self.judge_profile)
        if self.judge_mode not in profile.forms:
            modes = ", ".join(m.value for m in profile.forms)
            raise ValueError(
                f"judge_profile {profile.name.value} judges by {modes} only: set judge_mode to {modes} "
                f"(or judge_profile to svgagent)"
            )
        return self

    @field_validator("keymap")
    @classmethod
    def _key_names(cls, table: dict[str, str]) -> dict[str, str]:
        if len(table) > KEYMAP_MAX_ENTRIES:
            raise ValueError(f"at most {KEYMAP_MAX_ENTRIES} entries")
        bad = [
            ident
            for ident, keys in table.items()
            if not keys.strip() or len(keys) > KEYMAP_MAX_CHARS or len(ident) > KEYMAP_MAX_CHARS
        ]
        if bad:
            raise ValueError(f'values must be key names, e.g. "ctrl+r" (check {", ".join(bad[:5])})')
        return {ident: keys.replace(" ", "") for ident, keys in table.items()}

    @field_validator("prices")
    @classmethod
    def _prices(cls, table: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        return check_overrides(table)

    @property
    def pending(self) -> tuple[Any, ...]:
        """Settings a project file decides, not confirmed yet (:class:`svgagent.core.config.project_trust.ProjectSetting`)."""
        return self._pending

    @field_validator("fireworks_api_key", "openai_api_key", mode="before")
    @classmethod
    def _blank_is_unset(cls, value: Any) -> Any:
        if isinstance(value, str) and not value.strip():
            return None
        return value

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        cwd = Path.cwd()
        # a source reads its file when made: made only when used (the settings without them must not read them)
        project: list[PydanticBaseSettingsSource] = []
        if getattr(settings_cls, "read_project_files", True):
            project = [
                DotEnvFileSource(settings_cls, cwd / ENV_FILE),
                TomlFileSource(settings_cls, cwd / PROJECT_CONFIG_FILE, PROJECT_CONFIG_MAX_BYTES, project=True),
            ]
        return (
            init_settings,
            EnvSettingsSource(settings_cls),
            *project,
            TomlFileSource(settings_cls, user_config_file(), CONFIG_MAX_BYTES, project=False),
        )

    # --- derived -------------------------------------------------------------------------------------------
    def store_path(self) -> Path:
        """The SQLite file: ``store`` (a ``.db`` file or a directory) > ``home`` > the platform data dir."""
        if self.store is not None:
            target = self.store.expanduser()
            if target.suffix in (".db", ".sqlite", ".sqlite3"):
                return target
            return target / STORE_FILE
        return self.data_dir() / STORE_FILE

    def data_dir(self) -> Path:
        """Where svgagent keeps its files: ``home`` > the platform data dir."""
        return self.home.expanduser() if self.home else Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))

    def exports_dir(self) -> Path:
        """Where the TUI writes what a person exports or saves (not the working directory: often a git checkout)."""
        return self.data_dir() / "exports"

    def public_dict(self) -> dict[str, Any]:
        """Settings safe to store and export: no keys, no local paths."""
        data = self.model_dump(mode="json", exclude=set(SECRET_FIELDS) | set(LOCAL_FIELDS))
        return data

    def missing_keys(self) -> list[str]:
        missing = []
        if self.fireworks_api_key is None:
            missing.append("FIREWORKS_API_KEY")
        if self.openai_api_key is None:
            missing.append("OPENAI_API_KEY")
        return missing


def describe_field_limits(name: str) -> str:
    """A human range for a field, e.g. 'an integer from 1 to 1024'."""
    info = Settings.model_fields.get(name)
    if info is None:
        return ""
    numeric = numeric_range(info)
    if numeric:
        return numeric
    if name == "judge_mode":
        return "one of: " + ", ".join(m.value for m in JudgeMode)
    if name == "judge_profile":
        return "one of: " + ", ".join(m.value for m in JudgeProfileName)
    if name == "renderer":
        return "one of: " + ", ".join(m.value for m in RendererName)
    if name == "reasoning_effort":
        return "one of: low, medium, high"
    return info.description or ""


def validation_message(item: Mapping[str, Any]) -> str:
    """What a pydantic error item says, as a sentence of ours: without pydantic's "Value error, " before the text a
    validator raised."""
    return str(item.get("msg", "invalid")).removeprefix("Value error, ").removeprefix("Assertion failed, ")


def format_validation_error(err: ValidationError) -> str:
    parts = []
    for item in err.errors():
        loc = ".".join(str(p) for p in item.get("loc", ())) or "settings"
        field = loc.split(".")[0]
        value = item.get("input")
        if isinstance(value, str) and has_userinfo(value):
            value = strip_userinfo(value)  # never echo credentials
        shown = "" if field in SECRET_FIELDS or isinstance(value, dict) else f"={value!r}"
        limits = describe_field_limits(field)
        msg = validation_message(item)
        parts.append(f"{loc}{shown}: {msg}" + (f" (allowed: {limits})" if limits else ""))
    return "invalid setting " + "; ".join(parts)


def read_settings(**overrides: Any) -> Settings:
    """Build settings from every layer; ``overrides`` (None values dropped) win. Settings a project file decides
    that the person has not confirmed are in ``pending`` (core/config/project_trust.py); nothing refuses them here.
    Raises ConfigError."""
    clean = {k: v for k, v in overrides.items() if v is not None}
    try:
        with noting_project_layers() as noted:
            settings = Settings(**clean)
        # highest layer first: .env, then svgagent.toml; the person's layers are read again only when a project
        # file set a guarded setting (a layer that fails now fails the load, as it would have the first time)
        found = find_pending(
            settings,
            [
                (file, noted[file])
                for file in (Path.cwd() / ENV_FILE, Path.cwd() / PROJECT_CONFIG_FILE)
                if file in noted
            ],
            lambda: settings_without_project_files(clean),
            {name: Settings.model_fields[name].default for name in GUARDED},
        )
    except ValidationError as err:
        raise ConfigError(format_validation_error(err)) from None
    except (OSError, ValueError) as err:  # unreadable or malformed toml / .env
        raise ConfigError(f"cannot read configuration: {err}") from None
    settings._pending = tuple(s for s in found if not is_trusted(s, trust_file()))
    return settings


def load_settings(**overrides: Any) -> Settings:
    """:func:`read_settings`, refusing (ConfigError, one line) a safety limit raised or a store moved by a project
    file that the person has not confirmed. A pending endpoint is refused where a key would go there
    (``require_trusted``)."""
    settings = read_settings(**overrides)
    require_confirmed(settings)
    return settings


class _PersonLayers(Settings):
    # built at its first use (a project file setting a guarded setting), not at import: ≈5 ms of every start
    model_config = SettingsConfigDict(defer_build=True)
    read_project_files: ClassVar[bool] = False


def settings_without_project_files(overrides: dict[str, Any]) -> Settings:
    """The settings the person's own layers give — flags, environment, the user config file, defaults — without
    ``./.env`` and ``./svgagent.toml`` (to tell what those files decide)."""
    return _PersonLayers(**overrides)
