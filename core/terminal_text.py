"""Text from outside svgagent made safe to show on a terminal: the one rule for the CLI's prints, the app's cells
and the CSV export.

Outside text (model answers, a judge's rationale, an endpoint's error, imported rows, run names, ``/init`` prompts)
may hold control characters: ``ESC ] 52`` writes the clipboard of whoever displays it, ``ESC ] 0`` retitles the
window, ``ESC [ 2 J`` clears the screen, and the bidi overrides and isolates (U+202A–U+202E, U+2066–U+2069, the
direction marks) reorder what is drawn after them. They are shown as visible escapes (``\\x1b``, ``\\u202e``),
never emitted.
"""

from __future__ import annotations

import re

# bidi embeddings and overrides (LRE RLE PDF LRO RLO), isolates (LRI RLI FSI PDI) and marks (ALM LRM RLM)
_BIDI = "\u202a-\u202e\u2066-\u2069\u061c\u200e\u200f"
# C0 controls but tab and newline, DEL, and C1 (0x9b is CSI on terminals that read 8-bit controls), and bidi
_CONTROL = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}]")
# the same, tab and newline included: what one line (a table cell, a title) must not hold either
_CONTROL_LINE = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with every control character but tab and newline, and every bidi control, written as an escape
    (ESC as ``\\x1b``, RLO as ``\\u202e``). Printable text is kept as it is, so a second call changes nothing."""
    return _CONTROL.sub(_escape, text) if _CONTROL.search(text) else text


def visible_line(text: str) -> str:
    """:func:`visible` for one line: tab and newline are escaped too (a table cell, a title)."""
    return _CONTROL_LINE.sub(_escape, text) if _CONTROL_LINE.search(text) else text


def escapes(text: str, *, one_line: bool = False) -> list[tuple[int, str]]:
    """Where :func:`visible` (:func:`visible_line` when ``one_line``) changes ``text``: (index, escape) per control."""
    pattern = _CONTROL_LINE if one_line else _CONTROL
    return [(m.start(), _escape(m)) for m in pattern.finditer(text)]


def has_controls(text: str) -> bool:
    """Whether :func:`visible_line` would change ``text``."""
    return _CONTROL_LINE.search(text) is not None


def without_controls(text: str) -> str:
    """``text`` with every character :func:`visible_line` escapes removed: a last filter where text is already laid
    out (each of them takes no cell, so what is left keeps its width)."""
    return _CONTROL_LINE.sub("", text)
