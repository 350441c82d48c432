"""Text from outside svgagent made safe to show on a terminal: the one rule for the CLI's prints, the app's cells
and the CSV export.

Outside text (model answers, a judge's rationale, an endpoint's error, imported rows, run names, ``/init`` prompts)
may hold control characters: ``ESC ] 52`` writes the clipboard of whoever displays it, ``ESC ] 0`` retitles the
window, ``ESC [ 2 J`` clears the screen, and the bidi overrides and isolates (U+202A–U+202E, U+2066–U+2069, the
direction marks) reorder what is drawn after them. They are shown as visible escapes (``\\x1b``, ``\\u202e``),
never emitted.
"""

from __future__ import annotations

import os
import re
import unicodedata
from typing import Literal

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


# --- cutting text to a width -----------------------------------------------------------------------------------------
ELLIPSIS = "…"
_ZERO_WIDTH_CATEGORIES = frozenset({"Mn", "Me", "Cf"})  # combining marks, enclosing marks, format (ZWJ, ZWSP)


def _char_cells(char: str) -> int:
    if char < "\u0300":  # ASCII and Latin-1: one cell each (controls are escaped before anything is measured)
        return 1
    if unicodedata.category(char) in _ZERO_WIDTH_CATEGORIES or "\U0001f3fb" <= char <= "\U0001f3ff":
        return 0  # skin-tone modifiers join the emoji before them
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def cells(text: str) -> int:
    """The terminal cells ``text`` takes: wide (CJK, emoji) characters two, combining and format characters none."""
    return len(text) if text.isascii() else sum(_char_cells(c) for c in text)


def _head(text: str, width: int) -> str:
    """The longest start of ``text`` that fits in ``width`` cells."""
    if text.isascii():
        return text[: max(0, width)]
    used = 0
    for i, char in enumerate(text):
        used += _char_cells(char)
        if used > width:
            return text[:i]
    return text


def _tail(text: str, width: int) -> str:
    """The longest end of ``text`` that fits in ``width`` cells."""
    return _head(text[::-1], width)[::-1]


def clipped(text: str, width: int, *, keep: Literal["start", "end", "middle"] = "start", words: bool = False) -> str:
    """``text`` in at most ``width`` cells: as it is when it fits, else cut with one ``…`` where text was left out —
    the one way svgagent shortens text for a screen, a table or a line.

    ``keep``: ``"start"`` keeps the beginning (``a long reas…``), ``"end"`` the end (``…the id's tail``), ``"middle"``
    both ends (``/home/…/file.png``). ``words``: with ``keep="start"``, cut between words (``the image covers…``, not
    ``the image covers 70% of t…``) unless that would leave less than half the width."""
    if width <= 0:
        return ""
    if cells(text) <= width:
        return text
    room = width - 1  # the ellipsis takes one cell
    if keep == "end":
        return ELLIPSIS + _tail(text, room).lstrip()
    if keep == "middle":
        head = _head(text, room - room // 2)
        return head + ELLIPSIS + _tail(text, room - cells(head))
    head = _head(text, room)
    if words:
        space = head.rfind(" ") if text[len(head)] != " " else len(head)
        if space > 0 and cells(head[:space]) >= room // 2:
            head = head[:space]
        head = head.rstrip(" ,;:-–—")
    return head.rstrip() + ELLIPSIS


def one_line(text: str | None) -> str:
    """``text`` on one line: every run of whitespace (newlines, tabs) one space, none at either end."""
    return " ".join((text or "").split())


def short_path(path: str | os.PathLike[str], width: int, *, home: str | os.PathLike[str] | None = None) -> str:
    """A path as a person recognises it in ``width`` cells: ``~`` for the home directory, the file's name whole
    (while it fits), the directory cut in its middle (``~/work/…/exports/run.jsonl``); controls shown as escapes."""
    text = os.fspath(path)
    base = os.fspath(home) if home is not None else os.path.expanduser("~")
    if base not in ("", "/", "~") and (text == base or text.startswith(base.rstrip("/") + "/")):
        text = "~" + text[len(base.rstrip("/")) :]
    text = visible_line(text)
    if cells(text) <= width:
        return text
    folder, slash, name = text.rpartition("/")
    if not slash or cells(name) + 3 > width:  # no room for a directory beside the name: the name's two ends
        return clipped(name or text, width, keep="middle")
    return _short_folder(folder, width - cells(name) - 1) + "/" + name


def _short_folder(folder: str, width: int) -> str:
    """``folder`` in ``width`` cells, cut between its parts: its first part, ``…``, as many of its last as fit."""
    parts = folder.split("/")
    head = parts[0] or "/" + (parts[1] if len(parts) > 1 else "")  # "~", "relative", or "/tmp" of an absolute path
    rest = parts[1:] if parts[0] else parts[2:]
    kept: list[str] = []
    while rest and cells("/".join([head, ELLIPSIS, rest[-1], *kept])) <= width:
        kept.insert(0, rest.pop())
    if not kept and cells(f"{head}/{ELLIPSIS}") > width:
        return clipped(folder, width, keep="middle")
    return "/".join([head, ELLIPSIS, *kept]) if rest else "/".join([head, *kept])


def folded(text: str, width: int) -> list[str]:
    """``text`` (a path, a URL, a model's resource name: no spaces) on lines of at most ``width`` cells, each line
    ending after a ``/`` where it can, so no part of a name is split where a width happened to fall."""
    if width <= 0:
        return [text]
    lines: list[str] = []
    line = ""
    for piece in re.findall(r"[^/]*/|[^/]+", text):
        if cells(line + piece) <= width:
            line += piece
            continue
        if line:
            lines.append(line)
        while cells(piece) > width:
            head = _head(piece, width) or piece[:1]
            lines.append(head)
            piece = piece[len(head) :]
        line = piece
    if line or not lines:
        lines.append(line)
    return lines
