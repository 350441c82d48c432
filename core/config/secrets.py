"""The keys the app uses: where each comes from, masked for display, and saved to ``.env`` safely.

Precedence follows the settings model: a variable set in the process environment beats the same name in ``.env``.
A blank value counts as unset in either place (the settings model treats blank keys the same way).

Nothing in this module logs, prints or puts a value into an exception message; ``SecretEntry`` hides its value from
``repr``. ``.env`` is written with :func:`svgagent.core.named_files.write_output` (atomically when it is a regular file)
with mode 0600, its other lines byte for byte (CRLF line endings included).
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from dotenv import dotenv_values
from dotenv.parser import parse_stream

from svgagent.core.named_files import write_output

KNOWN_KEYS: tuple[str, ...] = ("FIREWORKS_API_KEY", "OPENAI_API_KEY", "FIREWORKS_ACCOUNT_ID")
SECRET_MODE = 0o600
MASK_FULL = "••••"
# Below this length showing first 4 + last 4 would give away too much of the value: mask it fully.
MIN_PARTIAL_LENGTH = 16

Source = Literal["env-file", "environment", "unset"]
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BARE_VALUE_RE = re.compile(r"[A-Za-z0-9_\-.:/+=@,%~]*")


def mask(value: str | None) -> str:
    """``"fw_1…wxyz"`` for a long value, ``"••••"`` for a short one, ``""`` when there is no value."""
    if not value:
        return ""
    if len(value) < MIN_PARTIAL_LENGTH:
        return MASK_FULL
    return f"{value[:4]}…{value[-4:]}"


def is_valid_name(name: str) -> bool:
    """A variable name ``.env`` and a shell both accept."""
    return bool(_NAME_RE.fullmatch(name))


@dataclass(frozen=True, slots=True)
class SecretEntry:
    """One variable as the app sees it. ``value`` is the effective value (environment beats ``.env``).

    ``in_env_file`` says the name has a non-blank value in ``.env``; with ``source == "environment"`` that value is
    shadowed by the environment (``shadowed``).
    """

    name: str
    value: str | None = field(repr=False)
    source: Source
    masked: str
    in_env_file: bool = False

    @property
    def shadowed(self) -> bool:
        return self.source == "environment" and self.in_env_file

    @property
    def is_set(self) -> bool:
        return self.source != "unset"


def read_env_file(path: Path) -> dict[str, str | None]:
    """The variables in ``path`` as python-dotenv reads them (the same reader the settings model uses)."""
    if not path.is_file():
        return {}
    return dict(dotenv_values(path, encoding="utf-8"))


def read_secrets(env_file: Path, environ: Mapping[str, str] | None = None) -> list[SecretEntry]:
    """The known keys first (in ``KNOWN_KEYS`` order), then every other name in ``env_file`` in file order."""
    env = os.environ if environ is None else environ
    file_values = read_env_file(env_file)
    names = list(KNOWN_KEYS) + [n for n in file_values if n not in KNOWN_KEYS]
    entries = []
    for name in names:
        from_env = env.get(name)
        from_file = file_values.get(name)
        in_file = bool(from_file and from_file.strip())
        if from_env is not None and from_env.strip():
            value: str | None = from_env
            source: Source = "environment"
        elif in_file:
            value, source = from_file, "env-file"
        else:
            value, source = None, "unset"
        entries.append(SecretEntry(name, value, source, mask(value), in_env_file=in_file))
    return entries


# --- writing .env ---------------------------------------------------------------------------------------------


def _format_value(value: str) -> str:
    if _BARE_VALUE_RE.fullmatch(value):
        return value
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return f'"{escaped}"'


def _format_line(name: str, value: str, export: bool = False) -> str:
    return f"{'export ' if export else ''}{name}={_format_value(value)}"


def _check_update(name: str, value: str | None) -> None:
    if not is_valid_name(name):
        raise ValueError(f"invalid variable name {name!r}: use letters, digits and _ (not starting with a digit)")
    if value is not None and "${" in value:
        # python-dotenv expands ${NAME} in every value whatever the quoting: the value would not read back.
        raise ValueError(f"the value for {name} contains '${{', which .env readers would expand")


def _inline_comment(last_line: str, key: str, value: str | None) -> str:
    """The trailing ``  # comment`` of a key's last line, or ``""``: the shortest prefix that still parses to the
    same binding tells where the value ends."""
    for match in re.finditer(r"[ \t]+#", last_line):
        head = last_line[: match.start()]
        parsed = list(parse_stream(io.StringIO(head)))
        if len(parsed) == 1 and not parsed[0].error and parsed[0].key == key and parsed[0].value == value:
            return last_line[match.start() :]
    return ""


def _replace_binding(original: str, key: str, old_value: str | None, new_value: str) -> str:
    """Rewrite one binding's text: leading blank lines, indentation, ``export``, a trailing comment and the line
    ending are kept; only the value changes."""
    body = original.lstrip(" \t\r\n")
    leading = original[: len(original) - len(body)]
    newline = ""
    for ending in ("\r\n", "\n", "\r"):
        if body.endswith(ending):
            body, newline = body[: -len(ending)], ending
            break
    export = body.startswith("export ") or body.startswith("export\t")
    # a trailing comment is kept on one-line bindings (a multi-line quoted value is rewritten without one)
    comment = _inline_comment(body, key, old_value) if "#" in body and "\n" not in body else ""
    return f"{leading}{_format_line(key, new_value, export)}{comment}{newline}"


def render_env_file(text: str, updates: Mapping[str, str | None]) -> str:
    """``text`` with ``updates`` applied: changed keys replaced in place (a repeated key keeps its first place and
    loses the repeats), ``None`` removes a key, new keys are appended; every other line is kept byte for byte."""
    for name, value in updates.items():
        _check_update(name, value)
    out: list[str] = []
    done: set[str] = set()
    for binding in parse_stream(io.StringIO(text)):
        original = binding.original.string
        key = binding.key
        if binding.error or key is None or key not in updates:
            out.append(original)
            continue
        body = original.lstrip(" \t\r\n")
        leading = original[: len(original) - len(body)]
        new_value = updates[key]
        if new_value is None or key in done:
            out.append(leading)  # drop the binding, keep the blank lines before it
            continue
        out.append(_replace_binding(original, key, binding.value, new_value))
        done.add(key)
    result = "".join(out)
    additions = [_format_line(k, v) for k, v in updates.items() if v is not None and k not in done]
    if additions:
        newline = "\r\n" if "\r\n" in text else "\n"  # new lines end like the file's lines
        if result and not result.endswith(("\n", "\r")):
            result += newline
        result += newline.join(additions) + newline
    return result


def write_env_file(path: Path, updates: Mapping[str, str | None]) -> list[str]:
    """Apply ``updates`` to the ``.env`` at ``path`` (created if missing) and return the names that changed.

    The file is read with python-dotenv's parser, so comments, blank lines, unparseable lines and the order of
    unrelated keys stay as they were. It is written atomically with mode 0600, also when it existed with wider
    permissions. Raises ``ValueError`` for an invalid name or value and ``OSError`` when the file cannot be written.
    """
    path = Path(path)
    text = ""
    if path.is_file():  # a FIFO or device is written through, never read
        with path.open(encoding="utf-8", newline="") as handle:  # newline="": CRLF stays CRLF
            text = handle.read()
    before = read_env_file(path)
    new_text = render_env_file(text, updates)
    write_output(path, new_text, mode=SECRET_MODE)
    after = read_env_file(path)
    return [name for name in updates if before.get(name) != after.get(name) or (name in before) != (name in after)]
