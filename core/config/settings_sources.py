"""The file layers of the settings, built on pydantic-settings' public sources, each noting what it gave.

- :class:`TomlFileSource`: a TOML file (``./svgagent.toml``, the user config file) read as untrusted text
  (core/config/toml_file.py: a regular file only, capped, UTF-8, its shape checked before parsing) and handed to
  pydantic-settings as an ``InitSettingsSource`` — what its own TOML layer does with a file's table.
- :class:`DotEnvFileSource`: pydantic-settings' ``.env`` layer, made only once the path is known to be a regular
  file within the cap (a FIFO named ``.env`` hung every command) or absent.

A project file's layer notes the values it gave in :func:`noting_project_layers`'s record, so ``load_settings``
knows which settings a project file set without reading any file again.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from pydantic_settings import BaseSettings, DotEnvSettingsSource, InitSettingsSource

from svgagent.core.config.toml_file import CONFIG_MAX_BYTES, check_env_file, load_toml_config

# file -> the values its layer gave, for the project files of the settings being built (None: not noting)
_NOTED: ContextVar[dict[Path, dict[str, Any]] | None] = ContextVar("svgagent_project_layers", default=None)


@contextmanager
def noting_project_layers() -> Iterator[dict[Path, dict[str, Any]]]:
    """While inside, each project file's layer records the values it gave (file -> values) in the dict yielded."""
    noted: dict[Path, dict[str, Any]] = {}
    token = _NOTED.set(noted)
    try:
        yield noted
    finally:
        _NOTED.reset(token)


def _note(file: Path, values: dict[str, Any]) -> None:
    noted = _NOTED.get()
    if noted is not None:
        noted[file] = dict(values)


class TomlFileSource(InitSettingsSource):
    """The settings in the TOML file at ``path`` (none when there is no such file). Raises ``ValueError`` (one
    line naming the file) for one that is not a regular file, too large, not UTF-8, too deeply nested or not TOML.
    ``project``: note what it gives (see :func:`noting_project_layers`)."""

    def __init__(self, settings_cls: type[BaseSettings], path: Path, max_bytes: int, *, project: bool) -> None:
        self.path, self.project = path, project
        super().__init__(settings_cls, load_toml_config(path, max_bytes))

    def __call__(self) -> dict[str, Any]:
        values = super().__call__()
        if self.project:
            _note(self.path, values)
        return values


class DotEnvFileSource(DotEnvSettingsSource):
    """pydantic-settings' ``.env`` layer for the file at ``path`` (a project file: it notes what it gives). Raises
    ``ValueError`` (one line) when ``path`` is not a regular file or is over CONFIG_MAX_BYTES."""

    def __init__(self, settings_cls: type[BaseSettings], path: Path) -> None:
        self.path = path
        super().__init__(
            settings_cls, env_file=path if check_env_file(path, CONFIG_MAX_BYTES) else None, env_file_encoding="utf-8"
        )

    def __call__(self) -> dict[str, Any]:
        values = super().__call__()
        _note(self.path, values)
        return values
