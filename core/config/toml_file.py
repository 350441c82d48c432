"""Reading a config file as untrusted text: a project's ``svgagent.toml`` and ``.env`` come with whatever was cloned.

One reader for every place that reads one (the settings' layers, the Config pane's save): the file is opened
without blocking (a FIFO put there must not hang start-up), read only if it is a regular file (a FIFO, a device or
a directory is refused with one line), capped (:data:`PROJECT_CONFIG_MAX_BYTES` for a project's ``svgagent.toml``,
:data:`CONFIG_MAX_BYTES` for the user config file and ``.env``), and a TOML file's shape is checked before it is
parsed (core/config/toml_shape.py: no recursion error, no parse slower than linear).
"""

from __future__ import annotations

import os
import stat
import tomllib
from pathlib import Path
from typing import Any

from svgagent.core.config.toml_shape import check_toml_shape

PROJECT_CONFIG_MAX_BYTES = 64 * 1024  # ./svgagent.toml: a settings file, from whatever project was cloned
CONFIG_MAX_BYTES = 256 * 1024  # the user config file and ./.env


def _size(limit: int) -> str:
    return f"{limit // 1024} KiB"


def read_regular_capped(path: Path, max_bytes: int = CONFIG_MAX_BYTES) -> tuple[bytes, int] | None:
    """The bytes and permission bits of the regular file at ``path``; None when it is not a regular file (a FIFO,
    a device: never read). Raises ``ValueError`` when it is over ``max_bytes``, ``OSError`` as ``open`` does."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            return None
        raw = handle.read(max_bytes + 1)
    if len(raw) > max_bytes:
        raise ValueError(
            f"{path.name} is too large for a config file (over {_size(max_bytes)}); fix or remove it first"
        )
    return raw, stat.S_IMODE(info.st_mode)


def read_config_text(path: Path, max_bytes: int = CONFIG_MAX_BYTES) -> str:
    """The UTF-8 text of the config file at ``path`` (read as :func:`read_regular_capped` does). Raises
    ``ValueError`` for a file that is not a regular file, too large or not UTF-8, ``OSError`` as ``open`` does."""
    try:
        found = read_regular_capped(path, max_bytes)
    except IsADirectoryError:
        found = None
    if found is None:
        raise ValueError(f"{path} is not a regular file (a FIFO, a device or a directory): remove it or rename it")
    try:
        return found[0].decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{path.name} is not UTF-8 text ({err.reason} at byte {err.start})") from None


def parse_toml_config(text: str, path: Path) -> dict[str, Any]:
    """``text`` (the file at ``path``) parsed, once its shape was checked. Raises ``ValueError`` naming ``path``."""
    check_toml_shape(text, str(path))
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:  # which of the config files: its own text does not say
        raise ValueError(f"{path} is not valid TOML: {err}") from None
    except RecursionError:  # not past the shape check; kept so that no parse ends in a traceback
        raise ValueError(f"{path} nests too deeply to be a settings file; fix or remove it") from None


def load_toml_config(path: Path, max_bytes: int = CONFIG_MAX_BYTES) -> dict[str, Any]:
    """The settings in the TOML file at ``path`` ({} when there is none). Raises ``ValueError`` (one line) for a
    path that is not a regular file, too large, not UTF-8, too deeply nested or not TOML."""
    try:
        text = read_config_text(path, max_bytes)
    except FileNotFoundError:
        return {}
    return parse_toml_config(text, path)


def check_env_file(path: Path, max_bytes: int = CONFIG_MAX_BYTES) -> bool:
    """Whether there is a ``.env`` at ``path`` to read (python-dotenv reads it next). Raises ``ValueError`` (one
    line) for a path that is not a regular file — a FIFO would hang the read — or is over ``max_bytes``."""
    try:
        read_config_text(path, max_bytes)
    except FileNotFoundError:
        return False
    return True
