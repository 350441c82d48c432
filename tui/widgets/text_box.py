"""A ``Static`` for text that changes while the app runs (live rollouts, ticking times, a summary line).

Every ``Static.update()`` asks Textual for a layout, and a layout of the whole dashboard is a reflow of every
widget on it plus a repaint of the screen (20–200 ms on a loaded machine), while a repaint of one widget costs
almost nothing. :class:`TextBox` keeps what it shows and, in :meth:`TextBox.show`, does nothing when the new text
is the same (:func:`signature`: equal text and styles), repaints only itself when its height at its current width
stays the same, and asks for a layout only when it changes (or when it is not laid out yet).
"""

from __future__ import annotations

import sys
from typing import Any

from rich.console import Group
from rich.text import Text
from textual.css.scalar import Unit
from textual.widgets import Static

from svgagent.tui.widgets.screen_text import safe_renderable


def signature(content: Any) -> object:
    """What ``content`` shows, as a value: equal signatures, equal drawings. Text, groups of it and syntax blocks
    compare by text and styles; anything else only to itself (it is always drawn again)."""
    if isinstance(content, str):
        return content
    if isinstance(content, Text):
        return (
            "text",
            content.plain,
            tuple(content.spans),
            content.style,
            content.justify,
            content.overflow,
            content.no_wrap,
            content.end,
            content.tab_size,
        )
    if isinstance(content, Group):
        return ("group", content.fit, tuple(signature(part) for part in content.renderables))
    syntax = sys.modules.get("rich.syntax")  # not imported yet: nothing can be a Syntax (≈55 ms not paid at start)
    if syntax is not None and isinstance(content, syntax.Syntax):
        return (
            "syntax",
            content.code,
            str(content.lexer),
            content.line_numbers,
            content.start_line,
            content.line_range,
            content.highlight_lines,
            content.code_width,
            content.tab_size,
            content.word_wrap,
            content.background_style,
            content.indent_guides,
            content.padding,
        )  # its theme is private to Rich: the app's SVG blocks all use one (rollout_info.svg_renderable)
    return content  # compared by identity: never equal to what another call built


_UNSET: Any = object()


class TextBox(Static):
    """``show(content)`` instead of ``update``: no work when nothing changed, no layout when the height stays.
    ``redraws`` and ``layouts`` count what :meth:`show` did (tests read them). What it shows holds outside text:
    a string is never markup, and controls in text are shown as escapes (``screen_text.safe_renderable``)."""

    def __init__(
        self, content: Any = "", *, id: str | None = None, classes: str | None = None, markup: bool = False
    ) -> None:
        super().__init__(safe_renderable(content) if not markup else content, id=id, classes=classes, markup=markup)
        self._key = signature(content)
        self.redraws = 0  # shows that changed the content
        self.layouts = 0  # of them, those that asked for a layout

    def show(self, content: Any, *, key: object = _UNSET) -> bool:
        """Show ``content`` (a renderable, or a function making one when ``key`` says what it will show) unless
        it shows that already. True when it changed."""
        key = signature(content) if key is _UNSET else key
        if key == self._key:
            return False
        self._key = key
        renderable = safe_renderable(content() if callable(content) else content)
        self.redraws += 1
        if self._height_fixed():
            self.update(renderable, layout=False)
            return True
        width, before = self.content_size.width, self.content_size.height
        if not width or not self.is_mounted or self._width_auto():
            self.layouts += 1
            self.update(renderable)
            return True
        self.update(renderable, layout=False)
        if self._height_at(width) != before:
            self.layouts += 1
            self.refresh(layout=True)
        return True

    def _height_fixed(self) -> bool:
        height, width = self.styles.height, self.styles.width
        return height is not None and height.unit is Unit.CELLS and (width is None or not width.is_auto)

    def _width_auto(self) -> bool:
        width = self.styles.width
        return width is not None and width.is_auto

    def _height_at(self, width: int) -> int:
        """The content's height at ``width`` as the layout would give it (within a max-height in cells)."""
        height = self.get_content_height(self.container_size, self.app.size, width)
        styles, gutter = self.styles, self.styles.gutter.height
        if styles.max_height is not None and styles.max_height.unit is Unit.CELLS:
            height = min(height, max(0, int(styles.max_height.value) - gutter))
        if styles.min_height is not None and styles.min_height.unit is Unit.CELLS:
            height = max(height, int(styles.min_height.value) - gutter)
        return height
