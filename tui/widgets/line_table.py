"""One base for the app's tables (rollouts, compare rows, RFT jobs): a Line API widget that draws only the lines
on screen (like toolong's log view), so a 10,000-row table loads, sorts and scrolls in milliseconds.

:class:`LineTable` owns what every table does the same way: a header line, one line per row, the cursor (keys,
clicks, scrolling it into view, a message when it moves), cropping to the visible width when the table is wider
than the widget, and drawing a row from its cells and :class:`Column` widths. Subclasses hold their rows and say
how many there are (``row_count``) and what a row's cells are (``row_cells_at``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.events import Click
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from svgagent.core.terminal_text import clipped, visible_line
from svgagent.tui.widgets.screen_text import escaped

Cell = str | Text  # plain text drawn in the row's style, or text with styles of its own; never markup, and its
# control characters are shown as escapes (``visible_line``) whoever built it: cells hold outside text


@dataclass(frozen=True, slots=True)
class Column:
    key: str  # for the rollout table also the sort field (svgagent.core.store.filter_language.SORT_FIELDS), except "mark"
    label: str
    width: int  # 0: the subclass decides (see ``LineTable.widths``)
    justify: Literal["left", "right"] = "left"


def fit(text: str, width: int, justify: str = "left") -> str:
    """``text`` cut (with an ellipsis) or padded to exactly ``width`` cells."""
    if width <= 0:
        return ""
    text = clipped(text, width)
    if cell_len(text) > width:  # a character sequence Rich measures wider than terminal_text does (rare emoji)
        text = set_cell_size(text, width)
    pad = " " * (width - cell_len(text))
    return pad + text if justify == "right" else text + pad


def cursor_bindings(prefix: str) -> list[Binding]:
    """The cursor keys of a table, with ids under ``prefix`` (``table.down``…) so a keymap can remap them."""
    return [
        Binding("down,j", "cursor(1)", "Down", show=False, id=f"{prefix}.down"),
        Binding("up,k", "cursor(-1)", "Up", show=False, id=f"{prefix}.up"),
        Binding("pagedown", "page(1)", "Page down", show=False, id=f"{prefix}.page_down"),
        Binding("pageup", "page(-1)", "Page up", show=False, id=f"{prefix}.page_up"),
        Binding("home,g", "first", "First row", show=False, id=f"{prefix}.first"),
        Binding("end,G", "last", "Last row", show=False, id=f"{prefix}.last"),
    ]


class _LineMessage(Message):
    def __init__(self, table: LineTable, index: int) -> None:
        super().__init__()
        self.table, self.index = table, index

    @property
    def control(self) -> LineTable:
        return self.table


class LineTable(ScrollView, can_focus=True):
    """A header line and one line per row, drawn only where visible; a cursor row. Subclasses set ``COLUMNS``
    and implement ``row_count`` and ``row_cells_at``; they may override ``row_style``/``cell_style`` (colours),
    ``empty_lines``, ``cursor_moved`` and ``row_chosen``."""

    COMPONENT_CLASSES = {"line-table--header", "line-table--cursor", "line-table--cursor-blurred", "line-table--empty"}
    DEFAULT_CSS = """
    LineTable { height: 1fr; scrollbar-size-vertical: 1; scrollbar-size-horizontal: 1; }
    LineTable > .line-table--header { text-style: bold; color: $text-muted; background: $panel; }
    LineTable > .line-table--cursor {
        background: $block-cursor-background; color: $block-cursor-foreground; text-style: bold;
    }
    LineTable > .line-table--cursor-blurred { background: $block-cursor-blurred-background; }
    LineTable > .line-table--empty { color: $text-muted; }
    """
    COLUMNS: ClassVar[Sequence[Column]] = ()
    GAP = 1  # cells between columns
    LEAD = 0  # blank cells before the first column

    class Highlighted(_LineMessage):
        """The cursor moved to line ``index``."""

    class Selected(_LineMessage):
        """Line ``index`` was chosen (enter, a double click)."""

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._cursor = 0

    # --- what subclasses provide --------------------------------------------------------------------------
    @property
    def row_count(self) -> int:
        raise NotImplementedError

    @property
    def columns(self) -> Sequence[Column]:
        return self.COLUMNS

    def row_cells_at(self, index: int) -> Sequence[Cell]:
        """The cells of line ``index`` (``columns`` order)."""
        raise NotImplementedError

    def widths(self) -> list[int]:
        """Each column's width in cells (the columns' own widths by default)."""
        return [c.width for c in self.columns]

    def header_labels(self) -> list[str]:
        return [c.label for c in self.columns]

    def row_style(self, index: int) -> Style:
        """Extra style of a whole line (e.g. marked rows)."""
        return Style()

    def cell_style(self, index: int, column: int) -> Style:
        """Extra style of one cell (e.g. a status colour)."""
        return Style()

    def empty_lines(self) -> list[str]:
        return ["no rows to show"]

    def cursor_moved(self) -> None:
        self.post_message(self.Highlighted(self, self._cursor))

    def row_chosen(self) -> None:
        self.post_message(self.Selected(self, self._cursor))

    # --- geometry -----------------------------------------------------------------------------------------
    def line_width(self) -> int:
        widths = self.widths()
        return self.LEAD + sum(widths) + self.GAP * max(0, len(widths) - 1)

    def _update_virtual_size(self) -> None:
        self.virtual_size = Size(self.line_width(), self.row_count + 1)

    def rows_visible(self) -> int:
        return max(1, self.scrollable_content_region.height - 1)

    def line_y(self, index: int) -> int | None:
        """The widget line that shows row ``index``, or None when it is scrolled out of view."""
        return self._lines_on_screen((index,)).get(index)

    def _lines_on_screen(self, indexes: Iterable[int]) -> dict[int, int]:
        """Row index → the widget line showing it, for the rows of ``indexes`` in view."""
        top, height = round(self.scroll_y), self.size.height
        return {index: y for index in indexes if 1 <= (y := index - top + 1) < height}

    def refresh_line(self, index: int, x: int = 0, width: int | None = None) -> None:
        """Repaint row ``index`` (only cells ``x`` … ``x + width`` of the table's line when given)."""
        y = self.line_y(index)
        if y is None:
            return
        x0 = round(self.scroll_x)
        self.refresh(Region(x - x0, y, self.size.width if width is None else width, 1))

    def refresh_cells(self, dirty: Iterable[tuple[int, Iterable[int]]]) -> None:
        """Repaint cells: (row index, its column numbers) — only of rows in view, with one refresh for all (a
        live batch changes dozens of rows)."""
        dirty = list(dirty)
        lines = self._lines_on_screen(index for index, _ in dirty)
        if not lines:
            return
        x0, offsets, widths = round(self.scroll_x), self.column_offsets(), self.widths()
        self.refresh(
            *[
                Region(offsets[col] - x0, lines[index], widths[col] + self.GAP, 1)
                for index, columns in dirty
                if index in lines
                for col in columns
            ]
        )

    def column_offsets(self) -> list[int]:
        offsets, x = [], self.LEAD
        for w in self.widths():
            offsets.append(x)
            x += w + self.GAP
        return offsets

    # --- cursor -------------------------------------------------------------------------------------------
    @property
    def cursor_row(self) -> int:
        return self._cursor

    def move_cursor(self, row: int) -> None:
        if not self.row_count:
            return
        old, self._cursor = self._cursor, max(0, min(row, self.row_count - 1))
        if old != self._cursor:
            self.refresh_line(old)
            self.refresh_line(self._cursor)
        self.scroll_to_cursor()
        if old != self._cursor:
            self.cursor_moved()

    def clamp_cursor(self, index: int) -> None:
        """Put the cursor on ``index`` after the rows changed (no message; the caller says what changed)."""
        self._cursor = max(0, min(index, self.row_count - 1))
        self._update_virtual_size()
        self.refresh()
        if self.is_mounted:
            self.call_after_refresh(self.scroll_to_cursor)

    def scroll_to_cursor(self) -> None:
        top, rows = round(self.scroll_y), self.rows_visible()
        if self._cursor < top:
            self.scroll_to(y=self._cursor, animate=False, immediate=True)
        elif self._cursor >= top + rows:
            self.scroll_to(y=self._cursor - rows + 1, animate=False, immediate=True)

    def action_cursor(self, step: int) -> None:
        self.move_cursor(self._cursor + step)

    def action_page(self, direction: int) -> None:
        self.move_cursor(self._cursor + direction * self.rows_visible())

    def action_first(self) -> None:
        self.move_cursor(0)

    def action_last(self) -> None:
        self.move_cursor(self.row_count - 1)

    def action_choose(self) -> None:
        if self.row_count:
            self.row_chosen()

    def on_click(self, event: Click) -> None:
        index = round(self.scroll_y) + event.y - 1
        if event.y >= 1 and 0 <= index < self.row_count:
            self.move_cursor(index)
            if event.chain == 2:
                self.row_chosen()

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()

    def on_resize(self) -> None:
        self._update_virtual_size()
        self.scroll_to_cursor()

    # --- drawing ------------------------------------------------------------------------------------------
    def component_style(self, name: str) -> Style:
        return self.get_component_rich_style(f"line-table--{name}", partial=True)

    def render_line(self, y: int) -> Strip:
        width = max(self.size.width, self.line_width())
        base = self.rich_style
        if y == 0:
            style = base + self.component_style("header")
            strip = self._cells_strip(self.header_labels(), style, style, header=True).extend_cell_length(width, style)
        elif not self.row_count:
            lines = self.empty_lines()
            text = lines[y - 2] if 0 <= y - 2 < len(lines) else ""
            strip = Strip([Segment("  " + visible_line(text), base + self.component_style("empty"))])
        else:
            index = round(self.scroll_y) + y - 1
            strip = self._row(index, base) if index < self.row_count else Strip([])
        x0 = round(self.scroll_x)
        return strip.extend_cell_length(width, base).crop(x0, x0 + self.size.width)

    def _row(self, index: int, base: Style) -> Strip:
        line_style = base + self.row_style(index)
        cursor = None
        if index == self._cursor:
            cursor = self.component_style("cursor" if self.has_focus else "cursor-blurred")
            line_style += cursor
        strip = self._cells_strip(self.row_cells_at(index), line_style, base, index=index, cursor=cursor)
        return strip.extend_cell_length(max(self.size.width, self.line_width()), line_style)

    def _cells_strip(
        self,
        cells: Iterable[Cell],
        line_style: Style,
        base: Style,
        *,
        header: bool = False,
        index: int = -1,
        cursor: Style | None = None,
    ) -> Strip:
        segments: list[Segment] = []
        if self.LEAD:
            segments.append(Segment(" " * self.LEAD, line_style))
        gap = " " * self.GAP
        for i, (column, width, cell) in enumerate(zip(self.columns, self.widths(), cells)):
            if i:
                segments.append(Segment(gap, line_style))
            style = line_style if header else line_style + self.cell_style(index, i)
            if cursor is not None and not header:
                style += cursor
            if isinstance(cell, Text):
                segments.extend(self._text_segments(escaped(cell, one_line=True), width, column.justify, style, cursor))
            else:
                segments.append(Segment(fit(visible_line(cell), width, column.justify), style))
        return Strip(segments)

    def _text_segments(self, text: Text, width: int, justify: str, style: Style, cursor: Style | None) -> list[Segment]:
        """A cell with styles of its own (``Text`` spans), cut or padded to ``width``."""
        cell = text.copy()
        if cell.cell_len > width:
            cell.truncate(max(0, width - 1))
            cell.append("…")
        cell.align("right" if justify == "right" else "left", width)
        console = self.app.console
        whole = console.get_style(cell.style, default=Style()) if cell.style else Style()  # not in the spans
        segments = []
        for segment in cell.render(console):
            own = whole + (segment.style or Style())
            segments.append(Segment(segment.text, style + own + cursor if cursor is not None else style + own))
        return segments
