"""The run settings seen as form fields, and the project file they are saved to — no UI here.

``form_fields`` turns ``Settings.model_fields`` into field specs (an input, a select of choices, a switch, the
dataset picker); ``validate_field`` checks one typed value through the model's own validators, exactly as when
settings load; ``save_project_config`` writes what a person changed into ``svgagent.toml`` with tomlkit, keeping the
rest of the file as it was (comments included). The Config pane (``svgagent.tui.widgets.config_form``) draws them.
"""

from __future__ import annotations

import re
import tomllib
import types
import typing
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Literal

import tomlkit
from pydantic import SecretStr, ValidationError
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import String

from svgagent.core.config.project_trust import remember_saved
from svgagent.core.config.settings import (
    KEY_FIELDS,
    PROJECT_CONFIG_FILE,
    Settings,
    describe_field_limits,
    trust_file,
    validation_message,
)
from svgagent.core.config.toml_file import PROJECT_CONFIG_MAX_BYTES, parse_toml_config, read_regular_capped
from svgagent.core.named_files import TargetKind, resolve_target, write_output

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
    msg = _SHORT_MESSAGES.get(item["type"]) or validation_message(item)
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

_HEADER = "svgagent run settings: the fields changed in the TUI's Config pane, and what was here before."


def _toml_native(value: Any) -> Any:
    """``value`` as the plain type TOML writes (an enum as its value, a path as text; None is left out)."""
    if isinstance(value, Enum):
        return _toml_native(value.value)
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [_toml_native(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _toml_native(v) for k, v in value.items() if v is not None}
    return value


def new_config_text(values: dict[str, Any]) -> str:
    """A new settings file holding ``values`` (None values are left out: TOML has no null), under a header comment."""
    doc = tomlkit.document()
    doc.add(tomlkit.comment(_HEADER))
    for name, value in values.items():
        if value is not None:
            doc[name] = _toml_native(value)
    return tomlkit.dumps(doc)


def _in_style_of(old: Any, value: Any) -> Any:
    """``value`` written as ``old`` was: a literal string ('…') stays one where the new text can be one."""
    written = old.as_string() if isinstance(old, String) else ""
    literal = written.startswith("'") and not written.startswith("'''")
    if literal and isinstance(value, str) and "'" not in value and value.isprintable():
        return tomlkit.string(value, literal=True)
    return value


def _spellings(doc: Any, name: str) -> list[str]:
    """The top-level keys of ``doc`` that set ``name`` (settings read a file's keys whatever their case)."""
    return [key for key in doc if key.lower() == name]


def edit_config_text(text: str, data: dict[str, Any], values: dict[str, Any]) -> str:
    """``text`` (``data`` parsed) with the top-level settings of ``values`` set, a None value removing its key:
    tomlkit changes those keys' values and keeps every other byte — comments, blank lines, order, tables, dotted
    keys, inline tables, strings — as the person wrote it. A new key goes where tomlkit puts one: after the
    top-level part, before the first table.
    Raises ``ValueError`` when the result would not read back as exactly that change."""
    try:
        doc = tomlkit.parse(text)
    except TOMLKitError as err:
        raise ValueError(f"cannot edit this file as TOML ({err}); fix it first") from None
    expected = dict(data)
    for name, value in values.items():
        found = _spellings(doc, name)
        for key in found:
            if value is None:
                del doc[key]
            else:
                doc[key] = _in_style_of(doc.item(key), _toml_native(value))
        if value is not None and not found:
            doc[name] = _toml_native(value)
        for key in [key for key in expected if key.lower() == name]:
            del expected[key]
        if value is not None:
            expected.update(tomllib.loads(tomlkit.dumps({key: _toml_native(value) for key in found or [name]})))
    edited = _keep_line_endings(text, tomlkit.dumps(doc))
    if tomllib.loads(edited) != expected:
        raise ValueError("this file cannot be edited without changing other settings in it; edit it by hand")
    return edited


def _keep_line_endings(before: str, after: str) -> str:
    """``after`` with CRLF line ends where tomlkit wrote LF, when every line of ``before`` ended in CRLF."""
    if "\r\n" not in before or before.count("\n") != before.count("\r\n"):
        return after
    return re.sub(r"(?<!\r)\n", "\r\n", after)


def _read_project_config(path: Path, max_bytes: int) -> tuple[str, dict[str, Any], int] | None:
    """The text, its parsed TOML and the permission bits of the regular file at ``path`` (None: it is a FIFO or
    a device, written through and never read). Raises ``ValueError`` for a file too large, too deeply nested or not
    TOML."""
    found = read_regular_capped(path, max_bytes)  # a FIFO swapped in meanwhile must not block the open
    if found is None:
        return None
    raw, mode = found
    try:
        text = raw.decode("utf-8")
        data = parse_toml_config(text, path)
    except (UnicodeDecodeError, ValueError) as err:
        raise ValueError(f"{path.name} is not valid TOML ({err}); fix or remove it first") from None
    return text, data, mode


def save_project_config(
    values: dict[str, Any], path: Path | None = None, max_bytes: int = PROJECT_CONFIG_MAX_BYTES
) -> Path:
    """Write ``values`` — the fields a person changed — into ``svgagent.toml`` (atomically; a symlink is followed,
    a FIFO or a device written through). Only those keys' values change or are added; the file's comments, blank
    lines, other keys and tables stay as they were (:func:`edit_config_text`). A None value removes its key (TOML
    has no null). The guarded settings saved (endpoints, limits: core/config/project_trust.py) are the person's own, and
    remembered as confirmed for that file. Raises ``ValueError`` if that file is too large or not TOML, ``OSError``
    if it cannot be read or written."""
    target = path or Path.cwd() / PROJECT_CONFIG_FILE
    kind, real = resolve_target(target)
    # the file read is the file written: the path resolved once (a symlink followed), not again by name
    written = real if real is not None else target
    current = _read_project_config(real, max_bytes) if kind is TargetKind.FILE and real is not None else None
    if current is None or not current[0].strip():
        text, mode = new_config_text(values), (current[2] if current else 0o644)
    else:
        text, mode = edit_config_text(current[0], current[1], values), current[2]
    remember_saved(values, target, trust_file())
    write_output(written, text, mode=mode)
    return target
