"""The preview's body — the highlighted rollout's picture and its text — as one line-drawn widget whose size the
layout sets (the pane's), never its content.

A cursor moving over the rollout table shows a new rollout at each step: another picture size, a rationale and
an SVG of another length. With the text in widgets of their own height, each step was a layout of the whole
screen (≈60 – 100 ms on a loaded machine); here each step only repaints: the picture's segments and the text's
wrapped lines are cached strips (per section: a live change of one section re-wraps only it), the scrollable
height is set without asking for a layout (assigning Textual's ``virtual_size`` reactive would), and the vertical
scrollbar is always there, so its appearing never changes the text's width (with nothing to scroll it is drawn
in the background's colour: no track where a scrollbar would have been hidden).

Two arrangements (:class:`~svgagent.tui.widgets.preview.Preview` picks one for the pane's size): *beside* — the
picture in a fixed box on the left, the text in the rest, scrolling under a still picture; *stacked* — the
picture on top, a blank line, the text below, all of it scrolling.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rich.console import RenderableType
from rich.style import Style
from rich.text import Text
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widget import Widget

from svgagent.core.store.run_store import Store
from svgagent.core.store.typed_rows import RolloutRecord
from svgagent.tui.imaging import HalfBlocks
from svgagent.tui.widgets.picture import PictureShown, PictureSource, note_strips, picture_strips
from svgagent.tui.widgets.screen_text import safe_renderable
from svgagent.tui.widgets.text_box import signature

GUTTER = 2  # columns between the picture and the text beside it


class PreviewBody(PictureSource, ScrollView):
    """``show(rollout_id)``/``fit`` load the picture (:class:`PictureSource`); ``show_text(sections)`` sets the
    text; ``set_beside(beside)`` picks the arrangement."""

    DEFAULT_CSS = """
    PreviewBody { height: 1fr; overflow-y: scroll; overflow-x: hidden; scrollbar-size-vertical: 1; }
    PreviewBody.-fits {
        scrollbar-background: transparent; scrollbar-background-hover: transparent;
        scrollbar-background-active: transparent; scrollbar-color: transparent;
        scrollbar-color-hover: transparent; scrollbar-color-active: transparent;
    }
    """

    def __init__(
        self,
        store: Store,
        *,
        id: str | None = None,
        on_shown: Callable[[PictureShown], None] | None = None,
        sections_of: Callable[[RolloutRecord], Sequence[RenderableType]] | None = None,
    ) -> None:
        """``sections_of``: the text ``show_text`` will be given for a record; the thread worker that reads the
        record wraps it at the text's width, so the loop only swaps the lines in (a long SVG source is tens of
        milliseconds of syntax highlighting)."""
        super().__init__(id=id)
        self._init_source(store, on_shown)
        self._sections_of = sections_of
        self.beside = False
        self._picture: HalfBlocks | Text = Text("")
        self._sections: list[tuple[object, RenderableType]] = []  # (signature, renderable)
        self._picture_lines: tuple[object, list[Strip]] | None = None  # (style, width) → lines
        self._section_lines: list[tuple[object, list[Strip]]] = []  # (signature, wrapped lines) at _wrapped_at
        self._wrapped_at: object = None  # (style, width) of _section_lines
        self._text: list[Strip] | None = None  # every section's lines, a blank line after each

    # --- what it shows -------------------------------------------------------------------------------------
    def set_beside(self, beside: bool) -> None:
        if beside != self.beside:
            self.beside = beside
            self._changed(text=True)

    def fit(self, cols: int, lines: int) -> None:
        before = self.cols
        super().fit(cols, lines)
        if self.cols != before:
            self._picture_lines = None
            self._changed(text=self.beside)

    def show_text(self, sections: Sequence[RenderableType]) -> bool:
        """The text below or beside the picture, a blank line after each section. True when it changed."""
        keyed = [(signature(section), section) for section in sections]
        if [key for key, _ in keyed] == [key for key, _ in self._sections]:
            return False
        self._sections = keyed
        self._text = None
        self._changed()
        return True

    def _draw(self, content: HalfBlocks | Text) -> None:
        if content is self._picture or (
            isinstance(content, Text)
            and isinstance(self._picture, Text)
            and signature(content) == signature(self._picture)
        ):
            return
        self._picture, self._picture_lines = content, None
        self._changed()

    @property
    def text(self) -> str:
        """The text as it is wrapped at its column, without styles."""
        return "\n".join(strip.text.rstrip() for strip in self._text_lines())

    @property
    def content(self) -> Text:
        """Everything it shows as plain text, the picture (or its note) first."""
        picture = self._picture.plain
        return Text(f"{picture}\n\n{self.text}" if picture else self.text)

    # --- the text wrapped in the picture's thread worker -----------------------------------------------------
    def _request_context(self) -> object:
        if self._sections_of is None or self._width() <= 0:
            return None
        base, width = self._base(), self._text_width()
        return base, width, self.app.console, self.app.console_options.update_width(width).update(highlight=False)

    def _prepare(self, record: RolloutRecord, context: object) -> object:
        assert self._sections_of is not None
        _, _, console, options = context  # type: ignore[misc]
        base = context[0]  # type: ignore[index]
        return [(signature(section), _wrap(console, section, options, base)) for section in self._sections_of(record)]

    def _prepared(self, prepared: object, context: object) -> None:
        at = context[:2]  # type: ignore[index]
        if at != (self._base(), self._text_width()):
            return  # the text's column changed meanwhile: wrapped again on the loop when drawn
        if self._wrapped_at != at:
            self._wrapped_at, self._section_lines = at, []
        known = self._section_lines
        self._section_lines = known + [
            (key, lines)
            for key, lines in prepared  # type: ignore[attr-defined]
            if not any(key == other for other, _ in known)
        ]

    # --- geometry ------------------------------------------------------------------------------------------
    @property
    def text_x(self) -> int:
        """The column (in the widget) where the text starts."""
        return self.cols + GUTTER if self.beside else 0

    def _width(self) -> int:
        return self.scrollable_content_region.width

    def _text_width(self) -> int:
        return max(1, self._width() - self.text_x)

    def _text_top(self) -> int:
        """The line (of the scrolled content) where the text starts."""
        picture = len(self._lines_of_picture())
        return 0 if self.beside or not picture else picture + 1

    def _changed(self, *, text: bool = False) -> None:
        """Something shown changed: the scrollable height follows, without a layout (the widget's own size is its
        pane's, and its vertical scrollbar is always there: only the bar's thumb and the scroll range change);
        repaint."""
        if text:
            self._text = None
        if self._width() <= 0:
            return  # not laid out yet: on_resize does it
        height = len(self._text_lines()) + self._text_top()
        size = Size(self._width(), height)
        if size != self.virtual_size:
            self.set_reactive(Widget.virtual_size, size)
            self.vertical_scrollbar.window_virtual_size = height
            if self.scroll_y > self.max_scroll_y:
                self.scroll_to(y=self.max_scroll_y, animate=False, immediate=True)
        self.set_class(height <= self.scrollable_content_region.height, "-fits")  # nothing to scroll: no track
        self.refresh()

    def on_resize(self) -> None:
        self._text = self._picture_lines = None
        self._changed()

    # --- drawing -------------------------------------------------------------------------------------------
    def _base(self) -> Style:
        return self.visual_style.rich_style

    def _lines_of_picture(self) -> list[Strip]:
        base, width = self._base(), self.cols if self.beside else self._width()
        if self._picture_lines is None or self._picture_lines[0] != (base, width):
            shown = self._picture
            lines = (
                picture_strips(shown, base)
                if isinstance(shown, HalfBlocks)
                else note_strips(shown, width, base, self.app.console, self.app.console_options)
                if shown.plain
                else []
            )
            self._picture_lines = ((base, width), lines)
        return self._picture_lines[1]

    def _text_lines(self) -> list[Strip]:
        if self._text is not None:
            return self._text
        base, width = self._base(), self._text_width()
        if self._wrapped_at != (base, width):
            self._wrapped_at, self._section_lines = (base, width), []
        console = self.app.console
        options = self.app.console_options.update_width(width).update(highlight=False)
        wrapped: list[tuple[object, list[Strip]]] = []  # signatures need not hash (a Syntax's sets)
        lines: list[Strip] = []
        for key, section in self._sections:
            strips = next((done for known, done in self._section_lines if known == key), None)
            if strips is None:
                strips = _wrap(console, section, options, base)
            wrapped.append((key, strips))
            lines.extend(strips)
            lines.append(Strip.blank(0))
        self._section_lines, self._text = wrapped, lines
        return lines

    def render_line(self, y: int) -> Strip:
        width, base = self._width(), self._base()
        row = y + round(self.scroll_offset.y)
        text = self._text_lines()
        if self.beside:
            picture = self._lines_of_picture()
            left = picture[y] if y < len(picture) else Strip.blank(0)
            right = text[row] if row < len(text) else Strip.blank(0)
            return Strip.join(
                [left.adjust_cell_length(self.text_x, base), right.adjust_cell_length(self._text_width(), base)]
            ).adjust_cell_length(width, base)
        picture, top = self._lines_of_picture(), self._text_top()
        line = picture[row] if row < len(picture) else text[row - top] if top <= row < top + len(text) else None
        return (line or Strip.blank(0)).adjust_cell_length(width, base)


def _wrap(console: Any, section: RenderableType, options: Any, base: Style) -> list[Strip]:
    """``section`` wrapped at the options' width, on ``base``: its lines as strips (on the loop or in a thread)."""
    section = safe_renderable(section)  # outside text: its controls shown as escapes (widgets/screen_text)
    return [Strip(line) for line in console.render_lines(section, options, style=base, pad=False)]
