"""User key remapping: an optional ``[keymap]`` table in the user config file, binding id → keys.

    [keymap]
    "app.run" = "ctrl+r"
    "table.filter" = "slash,f3"
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from svgagent.core.scoring.errors import ConfigError


def read_keymap(path: Path) -> dict[str, str]:
    """The ``[keymap]`` table of ``path`` (empty when the file or the table is missing)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise ConfigError(f"cannot read {path}: {err}") from None
    table = data.get("keymap", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [keymap] must be a table of binding id = \"keys\"")
    bad = [k for k, v in table.items() if not isinstance(v, str) or not v.strip()]
    if bad:
        raise ConfigError(f"{path}: [keymap] values must be key names, e.g. \"ctrl+r\" (check {', '.join(bad)})")
    return {str(k): v.replace(" ", "") for k, v in table.items()}
