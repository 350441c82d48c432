"""What a rollout column may hold: a value from outside (an endpoint's answer, an ``/init`` body, an import) made
into one SQLite stores, whatever its type or size, before it reaches a statement.

A value SQLite cannot bind makes the whole statement fail — and with it every rollout written in the same
transaction: an integer past 64 bits (``OverflowError``), a string holding a lone surrogate (JSON allows ``\\ud800``;
UTF-8 does not: ``UnicodeEncodeError``), a JSON object where text was expected (``ProgrammingError``). So each
column has a kind, and :func:`storable` turns any value into one of that kind or ``None``:

- token counts: an integer from 0 to :data:`~svgagent.core.scoring.chat.MAX_TOKEN_COUNT` (the bound the chat
  client applies to answers: larger or negative "counts" are not counts, read as 0);
- other integers: within SQLite's 64 bits (``None`` past them); a bool is 0 or 1;
- reals: finite (``None`` for inf and NaN);
- text: a string with any lone surrogate replaced by U+FFFD; a non-string (a dict ``finish_reason``) as its JSON
  text. The caps on length are :mod:`svgagent.core.store.size_caps`'s, applied after this.
"""

from __future__ import annotations

import enum
import json
import math
import re
from typing import Any

from svgagent.core.scoring.models import MAX_TOKEN_COUNT
from svgagent.core.store.typed_rows import TOKEN_COLUMN_NAMES

TOKEN_COLUMNS = frozenset(TOKEN_COLUMN_NAMES)
INTEGER_COLUMNS = frozenset({"fulfilled", "total", "is_score_valid", "cached", "is_current", "override_fulfilled"})
REAL_COLUMNS = frozenset({"score", "generation_s", "render_s", "judge_s", "override_score"})
BLOB_COLUMNS = frozenset({"png"})
_INT64 = range(-(2**63), 2**63)
_SURROGATE = re.compile("[\ud800-\udfff]")


def token_count(value: Any) -> int:
    """``value`` when it is a count of tokens (an int from 0 to MAX_TOKEN_COUNT), else 0."""
    if type(value) is int and 0 <= value <= MAX_TOKEN_COUNT:
        return value
    if type(value) is float and value.is_integer() and 0 <= value <= MAX_TOKEN_COUNT:
        return int(value)
    return 0


def safe_text(text: str) -> str:
    """``text`` as UTF-8 can hold it: each lone surrogate becomes U+FFFD (the text itself when it has none)."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


def as_text(value: Any) -> str:
    """Any value as text: a string made safe, anything else as its JSON (or, failing that, its type's name)."""
    if isinstance(value, str):
        return safe_text(value)
    try:
        return safe_text(json.dumps(value, ensure_ascii=False, default=repr))
    except (ValueError, TypeError, RecursionError):
        return f"<{type(value).__name__}>"


def error_line(err: BaseException, limit: int = 300) -> str:
    """An exception as one line a reason keeps (or a log line shows): its type and its message, lines joined."""
    text = " ".join(safe_text(str(err)).split())
    return f"{type(err).__name__}: {text[:limit]}" if text else type(err).__name__


def storable(column: str, value: Any) -> Any:
    """``value`` as ``column`` keeps it (see the module docstring); None stays None."""
    if value is None:
        return None
    if isinstance(value, enum.Enum):
        value = value.value
    if column in TOKEN_COLUMNS:
        return token_count(value)
    if column in INTEGER_COLUMNS:
        if isinstance(value, bool):
            return int(value)
        if type(value) is float and value.is_integer():
            value = int(value)
        return value if type(value) is int and value in _INT64 else None
    if column in REAL_COLUMNS:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        try:
            number = float(value)
        except OverflowError:
            return None
        return number if math.isfinite(number) else None
    if column in BLOB_COLUMNS:
        return value if isinstance(value, bytes) else None
    return as_text(value)
