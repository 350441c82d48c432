"""Reading a TOML config file as untrusted text: a project's ``svgagent.toml`` comes with whatever was cloned.

One reader for every place that reads one (the settings' layers, the endpoint check, the Config pane's save):
the file is opened without blocking (a FIFO put there must not hang start-up), read only if it is a regular file,
and capped at :data:`CONFIG_MAX_BYTES`.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

CONFIG_MAX_BYTES = 1_000_000


def read_regular_capped(path: Path) -> tuple[bytes, int] | None:
    """The bytes and permission bits of the regular file at ``path``; None when it is not a regular file (a FIFO,
    a device: never read). Raises ``ValueError`` when it is over :data:`CONFIG_MAX_BYTES`, ``OSError`` as
    ``open`` does."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            return None
        raw = handle.read(CONFIG_MAX_BYTES + 1)
    if len(raw) > CONFIG_MAX_BYTES:
        raise ValueError(
            f"{path.name} is too large for a config file (over {CONFIG_MAX_BYTES // 1000} kB); fix or remove it first"
        )
    return raw, stat.S_IMODE(info.st_mode)


def read_config_text(path: Path) -> str:
    """The UTF-8 text of the config file at ``path`` (read as :func:`read_regular_capped` does). Raises
    ``ValueError`` for a file that is not a regular file, too large or not UTF-8."""
    found = read_regular_capped(path)
    if found is None:
        raise ValueError(f"{path.name} is not a regular file")
    try:
        return found[0].decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{path.name} is not UTF-8 text ({err.reason} at byte {err.start})") from None
