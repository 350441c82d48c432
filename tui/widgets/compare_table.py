"""The compare screen's table: one line per dataset row (row, mean A, mean B, Δ, valid samples, prompt), drawn
only where it is visible — a Line API widget like the rollout table, so a 10,000-row comparison stays instant."""

from __future__ import annotations

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

from svgagent.core.compare import RowComparison

from svgagent.tui.widgets.compare_row import row_cells, row_key

# (label, width, justify); the prompt column takes the width that is left
COLUMNS: tuple[tuple[str, int, str], ...] = (("row", 0, "left"), ("A", 5, "right"), ("B", 5, "right"),
                                             ("Δ", 7, "right"), ("n A/B", 5, "right"), ("prompt", 0, "left"))
GAP = 2


def _fit(text: str, width: int, justify: str) -> str:
    if cell_len(text) > width:
        return set_cell_size(text, max(0, width - 1)) + "…" if width > 0 else ""
    pad = " " * (width - cell_len(text))
    return pad + text if justify == "right" else text + pad


class CompareTable(ScrollView, can_focus=True):
    """One line per dataset row, drawn only where it is visible (a 10,000-row comparison stays instant, like the
    rollout table). Keys move the cursor; the screen's keys do the rest (←/→ pick a side, enter opens)."""

    COMPONENT_CLASSES = {"compare-table--header", "compare-table--cursor", "compare-table--cursor-blurred",
                         "compare-table--better", "compare-table--worse", "compare-table--dim"}
    DEFAULT_CSS = """
    CompareTable { height: 1fr; scrollbar-size-vertical: 1; }
    CompareTable > .compare-table--header { text-style: bold; color: $text-muted; background: $panel; }
    CompareTable > .compare-table--cursor {
        background: $block-cursor-background; color: $block-cursor-foreground; text-style: bold;
    }
    CompareTable > .compare-table--cursor-blurred { background: $block-cursor-blurred-background; }
    CompareTable > .compare-table--better { color: $success; }
    CompareTable > .compare-table--worse { color: $error; }
    CompareTable > .compare-table--dim { color: $text-muted; }
    """
    BINDINGS = [
        Binding("down,j", "cursor(1)", "Down", show=False, id="compare.down"),
        Binding("up,k", "cursor(-1)", "Up", show=False, id="compare.up"),
        Binding("pagedown", "page(1)", "Page down", show=False, id="compare.page_down"),
        Binding("pageup", "page(-1)", "Page up", show=False, id="compare.page_up"),
        Binding("home,g", "first", "First row", show=False, id="compare.first"),
        Binding("end,G", "last", "Last row", show=False, id="compare.last"),
    ]
    _CELL_STYLES = {"green": "better", "red": "worse", "dim": "dim"}

    class Highlighted(Message):
        """The cursor moved to line ``index``."""

        def __init__(self, index: int) -> None:
            super().__init__()
            self.index = index

    class Selected(Message):
        """A line was double-clicked."""

        def __init__(self, index: int) -> None:
            super().__init__()
            self.index = index

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.rows: list[RowComparison] = []
        self.row_keys: list[str] = []
        self._cursor = 0
        self._row_width = 3

    # --- data ---------------------------------------------------------------------------------------------
    def fill(self, rows: list[RowComparison], keep: str | None = None) -> None:
        """Show ``rows`` in this order; the cursor stays on row ``keep`` when it is still shown."""
        self.rows = list(rows)
        self.row_keys = [row_key(r) for r in self.rows]
        self._row_width = min(max([cell_len(r.row_id) for r in self.rows] + [3]), 14)
        index = {k: i for i, k in enumerate(self.row_keys)}
        self._cursor = index.get(keep, min(self._cursor, max(len(self.rows) - 1, 0))) if keep else 0
        self.virtual_size = Size(1, len(self.rows) + 1)
        self.refresh()
        if self.is_mounted:
            self.call_after_refresh(self._scroll_to_cursor)

    @property
    def row_count(self) -> int:
        return len(self.rows)

    @property
    def cursor_row(self) -> int:
        return self._cursor

    @property
    def cursor_key(self) -> str | None:
        return self.row_keys[self._cursor] if self.rows else None

    def _prompt_width(self) -> int:
        width = self.scrollable_content_region.width or self.size.width or 80
        fixed = self._row_width + sum(w for _, w, _ in COLUMNS[1:-1]) + GAP * (len(COLUMNS) - 1) + 1
        return max(10, width - fixed)

    def get_row_at(self, index: int) -> tuple[Text, ...]:
        """The cells of line ``index`` as drawn (row, A, B, Δ, n A/B, prompt)."""
        return row_cells(self.rows[index], self._prompt_width())

    # --- cursor -------------------------------------------------------------------------------------------
    def move_cursor(self, row: int) -> None:
        if not self.rows:
            return
        old, self._cursor = self._cursor, max(0, min(row, len(self.rows) - 1))
        if old != self._cursor:
            self._refresh_line(old)
            self._refresh_line(self._cursor)
            self.post_message(self.Highlighted(self._cursor))
        self._scroll_to_cursor()

    def _rows_visible(self) -> int:
        return max(1, self.scrollable_content_region.height - 1)

    def _scroll_to_cursor(self) -> None:
        top, rows = round(self.scroll_y), self._rows_visible()
        if self._cursor < top:
            self.scroll_to(y=self._cursor, animate=False, immediate=True)
        elif self._cursor >= top + rows:
            self.scroll_to(y=self._cursor - rows + 1, animate=False, immediate=True)

    def action_cursor(self, step: int) -> None:
        self.move_cursor(self._cursor + step)

    def action_page(self, direction: int) -> None:
        self.move_cursor(self._cursor + direction * self._rows_visible())

    def action_first(self) -> None:
        self.move_cursor(0)

    def action_last(self) -> None:
        self.move_cursor(len(self.rows) - 1)

    def on_click(self, event: Click) -> None:
        index = round(self.scroll_y) + event.y - 1
        if event.y >= 1 and 0 <= index < len(self.rows):
            self.move_cursor(index)
            if event.chain == 2:
                self.post_message(self.Selected(index))

    # --- drawing ------------------------------------------------------------------------------------------
    def _refresh_line(self, index: int) -> None:
        y = index - round(self.scroll_y) + 1
        if 1 <= y < self.size.height:
            self.refresh(Region(0, y, self.size.width, 1))

    def _style(self, name: str) -> Style:
        return self.get_component_rich_style(f"compare-table--{name}", partial=True)

    def _widths(self) -> list[int]:
        return [self._row_width if i == 0 else (self._prompt_width() if i == len(COLUMNS) - 1 else w)
                for i, (_, w, _) in enumerate(COLUMNS)]

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width or self.size.width
        base = self.rich_style
        widths = self._widths()
        if y == 0:
            style = base + self._style("header")
            segments = [Segment(_fit(label, w, justify) + " " * GAP, style)
                        for (label, _, justify), w in zip(COLUMNS, widths)]
            return Strip([Segment(" ", style), *segments]).adjust_cell_length(width, style)
        index = round(self.scroll_y) + y - 1
        if not self.rows:
            text = "no rows to show" if y == 2 else ""
            return Strip([Segment("  " + text, base + self._style("dim"))]).adjust_cell_length(width, base)
        if index >= len(self.rows):
            return Strip.blank(width, base)
        cursor = None
        if index == self._cursor:
            cursor = self._style("cursor" if self.has_focus else "cursor-blurred")
        line_style = base + cursor if cursor else base
        segments = [Segment(" ", line_style)]
        for cell, (_, _, justify), w in zip(row_cells(self.rows[index], widths[-1]), COLUMNS, widths):
            style = base
            kind = self._CELL_STYLES.get(str(cell.style)) if cell.style else None
            if kind:
                style += self._style(kind)
            if cursor is not None:
                style += cursor
            segments.append(Segment(_fit(cell.plain, w, justify), style))
            segments.append(Segment(" " * GAP, line_style))
        return Strip(segments).adjust_cell_length(width, line_style)

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()

    def on_resize(self) -> None:
        self._scroll_to_cursor()
