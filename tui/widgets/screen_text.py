"""Text from outside on the app's screen: the rule of :mod:`svgagent.core.terminal_text` where the UI turns strings
into cells.

Every string that came from outside (model answers, a judge's text, reasons and errors, imported rows, run names,
``/init`` prompts, dataset text) reaches a widget through one of these, never as a ``str`` a widget would read as
Rich or Textual markup:

- :func:`shown` / :func:`shown_line` — the string as a ``Text`` (no markup), its controls visible;
- :func:`escaped` — a ``Text`` already built (spans kept) with its controls made visible; the table cell path
  (``LineTable``), ``TextBox.show`` and the app's notifications apply it to whatever they are given;
- :class:`ControlFilter` — the last net: the app's line filter drops any control that still reached a line of
  cells (each takes no cell, so nothing moves), so nothing a widget forgot is ever written to the terminal.
"""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.segment import Segment
from rich.style import StyleType
from rich.text import Span, Text
from textual.color import Color
from textual.filter import LineFilter

from svgagent.core.terminal_text import escapes, has_controls, visible, visible_line, without_controls


def shown(text: str | None, style: StyleType = "", *, one_line: bool = False) -> Text:
    """Outside ``text`` as a ``Text`` in ``style``: never parsed as markup, controls shown as escapes (tab and
    newline kept unless ``one_line``)."""
    text = text or ""
    return Text(visible_line(text) if one_line else visible(text), style=style)


def shown_line(text: str | None, style: StyleType = "") -> Text:
    """:func:`shown` for one line (a title, a cell): newline and tab escaped too."""
    return shown(text, style, one_line=True)


def escaped(text: Text, *, one_line: bool = False) -> Text:
    """``text`` with its controls shown as escapes, each escape in the style the control had; ``text`` itself when
    it has none (the common case costs one search)."""
    plain = text.plain
    if not has_controls(plain):
        return text
    found = escapes(plain, one_line=one_line)
    if not found:  # only tabs and newlines, kept in multi-line text
        return text
    out = text.blank_copy()
    cut = 0
    for index, escape in found:
        if cut < index:
            out.append_text(text[cut:index])
        spans = [Span(0, len(escape), span.style) for span in text[index : index + 1].spans]
        out.append_text(Text(escape, spans=spans))
        cut = index + 1
    if cut < len(plain):
        out.append_text(text[cut:])
    return out


def safe_renderable(content: Any, *, one_line: bool = False) -> Any:
    """``content`` for a widget: a ``str`` becomes plain :func:`shown` text (never markup), a ``Text`` is
    :func:`escaped`, a ``Group`` has its parts made safe; anything else (tables, syntax, pictures) is returned as
    it is — those are built from :func:`shown` text where they are made."""
    if isinstance(content, str):
        return shown(content, one_line=one_line)
    if isinstance(content, Text):
        return escaped(content, one_line=one_line)
    if isinstance(content, Group):
        parts = [safe_renderable(part, one_line=one_line) for part in content.renderables]
        if all(new is old for new, old in zip(parts, content.renderables)):
            return content
        return Group(*parts, fit=content.fit)
    return content


class ControlFilter(LineFilter):
    """Drops control characters (and bidi controls) from the text of every line the app draws: whatever a widget
    built, the terminal receives no escape sequence but the app's own. Styles, links and widths are kept."""

    def apply(self, segments: list[Segment], background: Color) -> list[Segment]:
        if not has_controls("".join([segment.text for segment in segments])):  # one search: the common case
            return segments
        out: list[Segment] = []
        for segment in segments:
            text, style, control = segment
            if control or not has_controls(text):
                out.append(segment)
            elif kept := without_controls(text):
                out.append(Segment(kept, style, control))
        return out
