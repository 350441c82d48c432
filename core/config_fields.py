"""The run settings seen as form fields, and the project file they are saved to — no UI here.

``form_fields`` turns ``Settings.model_fields`` into field specs (an input, a select of choices, a switch, the
dataset picker); ``validate_field`` checks one typed value through the model's own validators, exactly as when
settings load; ``save_project_config`` writes what a person changed into ``svgagent.toml``, keeping the rest of the
file as it was (comments included). The Config pane (``svgagent.tui.widgets.config_form``) draws them.
"""

from __future__ import annotations

import math
import tomllib
import types
import typing
from dataclasses import dataclass
from datetime import date, datetime, time
from enum import Enum
from pathlib import Path
from typing import Any, Literal

from pydantic import SecretStr, ValidationError

from svgagent.core.config_file import read_regular_capped
from svgagent.core.output import TargetKind, resolve_target, write_output
from svgagent.core.settings import KEY_FIELDS, PROJECT_CONFIG_FILE, Settings, describe_field_limits
from svgagent.core.toml_edit import set_top_level_keys

FieldKind = Literal["input", "select", "switch", "dataset"]
DATASET_FILE = "file"


@dataclass(frozen=True, slots=True)
class FieldSpec:
    name: str
    kind: FieldKind
    description: str
    optional: bool = False
    choices: tuple[tuple[str, Any], ...] = ()


def _split_optional(annotation: Any) -> tuple[Any, bool]:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        optional = len(args) < len(typing.get_args(annotation))
        return (args[0] if len(args) == 1 else annotation), optional
    return annotation, False


def _mentions(annotation: Any, kinds: tuple[type, ...]) -> bool:
    if isinstance(annotation, type) and issubclass(annotation, kinds):
        return True
    return any(_mentions(arg, kinds) for arg in typing.get_args(annotation))


def form_fields(model: type[Settings] = Settings) -> list[FieldSpec]:
    """The fields the form shows, in model order. Skipped: keys (fields with their own variable name, secrets)
    and local paths; they belong to the Secrets pane and the command line."""
    specs = []
    for name, info in model.model_fields.items():
        table = typing.get_origin(info.annotation) is dict  # the keymap: edited in the config file
        if name in KEY_FIELDS or table or _mentions(info.annotation, (SecretStr, Path)):
            continue
        base, optional = _split_optional(info.annotation)
        description = info.description or ""
        if name == "dataset":
            specs.append(FieldSpec(name, "dataset", description))
        elif base is bool:
            specs.append(FieldSpec(name, "switch", description, optional))
        elif isinstance(base, type) and issubclass(base, Enum):
            choices = tuple((str(m.value), m) for m in base)
            specs.append(FieldSpec(name, "select", description, optional, choices))
        elif typing.get_origin(base) is Literal:
            choices = tuple((str(v), v) for v in typing.get_args(base))
            specs.append(FieldSpec(name, "select", description, optional, choices))
        else:
            specs.append(FieldSpec(name, "input", description, optional))
    return specs


_SHORT_MESSAGES = {
    "int_parsing": "not a whole number",
    "int_from_float": "not a whole number",
    "float_parsing": "not a number",
    "greater_than": "out of range",
    "greater_than_equal": "out of range",
    "less_than": "out of range",
    "less_than_equal": "out of range",
    "string_too_short": "must not be empty",
    "missing": "required",
}


def field_error_message(name: str, err: ValidationError) -> str:
    """One short line for the first problem, with the allowed range when the model has one."""
    item = err.errors()[0] if err.errors() else {"type": "", "msg": "invalid"}
    msg = _SHORT_MESSAGES.get(item["type"]) or str(item.get("msg", "invalid")).removeprefix("Value error, ")
    limits = describe_field_limits(name)
    info = Settings.model_fields.get(name)
    if limits and (info is None or limits != info.description):
        return f"{msg} — allowed: {limits}"
    return msg


def validate_field(base: Settings, name: str, raw: Any) -> tuple[Any, str | None]:
    """``(value, None)`` when ``raw`` is a valid value for ``name`` (blank text means None for optional fields),
    else ``(None, message)``. Validation runs the model's own field constraints and validators."""
    value = raw
    if isinstance(raw, str):
        value = raw.strip()
        info = Settings.model_fields[name]
        if value == "" and _split_optional(info.annotation)[1]:
            value = None
    trial = base.model_copy()
    try:
        Settings.__pydantic_validator__.validate_assignment(trial, name, value)
    except ValidationError as err:
        return None, field_error_message(name, err)
    return getattr(trial, name), None


def input_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, Enum):
        return str(value.value)
    return str(value)


# --- svgagent.toml -----------------------------------------------------------------------------------------------

_BARE_KEY = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r", "\b": "\\b", "\f": "\\f"}


def toml_string(text: str) -> str:
    out = []
    for ch in text:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def toml_key(key: str) -> str:
    return key if key and set(key) <= _BARE_KEY else toml_string(key)


def toml_value(value: Any) -> str:
    """A TOML literal for a scalar, a list or a (inline) table."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Enum):
        return toml_value(value.value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{toml_key(str(k))} = {toml_value(v)}" for k, v in value.items()) + " }"
    return toml_string(str(value))


def dump_toml(data: dict[str, Any], header: str = "") -> str:
    """Flat ``key = value`` lines (None values are left out: TOML has no null)."""
    lines = [f"# {line}" for line in header.splitlines()]
    lines += [f"{toml_key(k)} = {toml_value(v)}" for k, v in data.items() if v is not None]
    return "\n".join(lines) + "\n"


_HEADER = "svgagent run settings: the fields changed in the TUI's Config pane, and what was here before."


def _read_project_config(path: Path) -> tuple[str, dict[str, Any], int] | None:
    """The text, its parsed TOML and the permission bits of the regular file at ``path`` (None: it is a FIFO or
    a device, written through and never read). Raises ``ValueError`` for a file too large or not TOML."""
    found = read_regular_capped(path)  # a FIFO swapped in meanwhile must not block the open
    if found is None:
        return None
    raw, mode = found
    try:
        text = raw.decode("utf-8")
        data = tomllib.loads(text)
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise ValueError(f"{path.name} is not valid TOML ({err}); fix or remove it first") from None
    return text, data, mode


def save_project_config(values: dict[str, Any], path: Path | None = None) -> Path:
    """Write ``values`` — the fields a person changed — into ``svgagent.toml`` (atomically; a symlink is followed,
    a FIFO or a device written through). Only those keys' lines change or are added; the file's comments, blank
    lines, other keys and tables stay as they were (see ``core/toml_edit.py``; a layout it cannot edit line by
    line is written anew with the same keys and values). A None value removes its key (TOML has no null). Raises
    ``ValueError`` if that file is too large or not TOML, ``OSError`` if it cannot be read or written."""
    target = path or Path.cwd() / PROJECT_CONFIG_FILE
    kind, real = resolve_target(target)
    # the file read is the file written: the path resolved once (a symlink followed), not again by name
    written = real if real is not None else target
    current = _read_project_config(real) if kind is TargetKind.FILE and real is not None else None
    if current is None or not current[0].strip():
        mode = current[2] if current else 0o644
        write_output(written, dump_toml(values, _HEADER), mode=mode)
        return target
    text, data, mode = current  # parsed once, when read; the edit and the fallback reuse it
    edited = set_top_level_keys(text, values, toml_value, toml_key, data)
    if edited is None:
        kept = {k: v for k, v in data.items() if k not in values}
        edited = dump_toml({**kept, **values}, _HEADER)
    write_output(written, edited, mode=mode)
    return target
