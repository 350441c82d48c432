"""The rollout table: one line per current rollout, keyed by rollout id, drawn only where it is visible.

A Line API widget (like toolong's log view) rather than a DataTable: rows live in a dict keyed by rollout id, the
view order is a list of ids (filtered, then sorted), and ``render_line`` draws only the lines on screen — so a
10,000-row run loads, sorts and filters in milliseconds. Live updates refresh only the cells whose text changed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.events import Click
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from svgagent.core.query import SORT_FIELDS, Query, parse_query, sort_records
from svgagent.core.records import RolloutRecord, RunTally, paused_gc

from svgagent.tui.widgets.rollout_cells import COLUMNS, GAP, SORTABLE, STATUS_STYLES, TABLE_WIDTH, cells_for

_OFFSETS = tuple(sum(c.width + GAP for c in COLUMNS[:i]) for i in range(len(COLUMNS)))
_STATUS_COL = [c.key for c in COLUMNS].index("status")
_SCORE_COL = [c.key for c in COLUMNS].index("score")
MARK = "●"


def _fit(text: str, width: int, justify: str) -> str:
    if cell_len(text) > width:
        return set_cell_size(text, width - 1) + "…"
    pad = " " * (width - cell_len(text))
    return pad + text if justify == "right" else text + pad


class RolloutTable(ScrollView, can_focus=True):
    """Rollouts of one run. Keys move, mark, sort and ask for the filter; the screen owns the data flow."""

    COMPONENT_CLASSES = {
        "rollout-table--header",
        "rollout-table--cursor",
        "rollout-table--cursor-blurred",
        "rollout-table--marked",
        "rollout-table--queued",
        "rollout-table--busy",
        "rollout-table--scored",
        "rollout-table--failed",
        "rollout-table--overridden",
        "rollout-table--empty",
    }
    BINDINGS = [
        Binding("down,j", "cursor_down", "Down", show=False, id="table.down"),
        Binding("up,k", "cursor_up", "Up", show=False, id="table.up"),
        Binding("pagedown", "page(1)", "Page down", show=False, id="table.page_down"),
        Binding("pageup", "page(-1)", "Page up", show=False, id="table.page_up"),
        Binding("home,g", "first", "First row", show=False, id="table.first"),
        Binding("end,G", "last", "Last row", show=False, id="table.last"),
        Binding("enter", "open", "Open", id="table.open", tooltip="Open the rollout screen"),
        Binding("space", "mark", "Mark", id="table.mark", tooltip="Mark the rollout (for R rerun)"),
        Binding("slash", "filter", "Filter", id="table.filter", key_display="/",
                tooltip="Filter: score<0.5 status:failed invalid overridden row:3 text"),
        Binding("S", "sort", "Sort", id="table.sort", tooltip="Sort by the next column"),
        Binding("minus", "reverse", "Reverse", show=False, key_display="-", id="table.reverse",
                tooltip="Reverse the sort order"),
    ]

    class CursorMoved(Message):
        """The highlighted rollout changed (None: the table is empty)."""

        def __init__(self, rollout_id: str | None) -> None:
            super().__init__()
            self.rollout_id = rollout_id

    class Opened(Message):
        def __init__(self, rollout_id: str) -> None:
            super().__init__()
            self.rollout_id = rollout_id

    class FilterRequested(Message):
        pass

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._records: dict[str, RolloutRecord] = {}
        self.tally = RunTally()  # the summary of every row (not only those the filter shows), kept up to date
        self._cells: dict[str, tuple[str, ...]] = {}
        self._order: list[str] = []
        self._index: dict[str, int] = {}
        self._marked: set[str] = set()
        self._cursor = 0
        self._announced: str | None = "\0"
        self.query_filter: Query = parse_query("")
        self.sort_column = "rollout"
        self.sort_reverse = False
        self.empty_message: list[str] = ["no rollouts"]
        self.virtual_size = Size(TABLE_WIDTH, 1)

    # --- data ---------------------------------------------------------------------------------------------
    @property
    def records(self) -> Mapping[str, RolloutRecord]:
        return self._records

    @property
    def visible_ids(self) -> list[str]:
        return list(self._order)

    @property
    def marked(self) -> frozenset[str]:
        return frozenset(self._marked)

    @property
    def cursor_id(self) -> str | None:
        return self._order[self._cursor] if self._order else None

    def row_cells(self, rollout_id: str) -> tuple[str, ...]:
        """The text of every column for ``rollout_id`` as drawn (mark column included)."""
        cells = self._cells[rollout_id]
        return (MARK if rollout_id in self._marked else "",) + cells[1:]

    def load(self, records: Iterable[RolloutRecord]) -> None:
        """Replace every row (a new run, a reload after a rerun); the cursor stays on its rollout if it can."""
        with paused_gc():  # 10,000 rows of cells: long-lived objects, no garbage
            self._records = {r.rollout_id: r for r in records if r.is_current}
            self._cells = {rid: cells_for(r) for rid, r in self._records.items()}
            self.tally = RunTally(self._records.values())
        self._marked &= set(self._records)
        self._rebuild()

    def apply(self, records: Iterable[RolloutRecord]) -> None:
        """Live changes: new states of some rollouts. Only changed cells are repainted, unless the row has to
        move (the sort key or the filter verdict changed), in which case the view order is rebuilt."""
        rebuild = False
        for rec in records:
            rid = rec.rollout_id
            old = self._records.get(rid)
            if not rec.is_current:
                if old is not None:
                    del self._records[rid], self._cells[rid]
                    self.tally.replace(old, None)
                    self._marked.discard(rid)
                    rebuild = True
                continue
            self.tally.replace(old, rec)
            new_cells = cells_for(rec)
            old_cells = self._cells.get(rid)
            self._records[rid], self._cells[rid] = rec, new_cells
            if old is None or self._moves(old, rec):
                rebuild = True
            elif not rebuild and new_cells != old_cells and rid in self._index:
                changed = [i for i, (a, b) in enumerate(zip(old_cells or (), new_cells)) if a != b]
                self._refresh_cells(self._index[rid], changed)
        if rebuild:
            self._rebuild()

    def merge(self, records: Iterable[RolloutRecord], removed: Iterable[str] = ()) -> None:
        """Rows read from the store a moment ago (in a thread, while the engine may still be writing): each
        replaces the table's row unless the table's is newer — a live update arrived after the read. ``removed``
        rollouts are no longer current (a rerun replaced them)."""
        newer = [r for r in records
                 if (old := self._records.get(r.rollout_id)) is None or r.updated >= old.updated]
        gone = [replace(self._records[rid], is_current=False) for rid in removed if rid in self._records]
        self.apply(newer + gone)

    def _moves(self, old: RolloutRecord, new: RolloutRecord) -> bool:
        if not self.query_filter.empty and (
            self.query_filter.matches(old, self._marked) != self.query_filter.matches(new, self._marked)
        ):
            return True
        key = SORT_FIELDS[self.sort_column]
        return self.sort_column != "rollout" and key(old) != key(new)

    def set_filter(self, text: str) -> None:
        """Show only rollouts matching ``text`` (raises QueryError and keeps the old filter if it is invalid)."""
        self.query_filter = parse_query(text)
        self._rebuild()

    def set_sort(self, column: str, reverse: bool = False) -> None:
        if column not in SORTABLE:
            raise ValueError(f"cannot sort by {column!r}")
        self.sort_column, self.sort_reverse = column, reverse
        self._rebuild()

    def clear_marks(self) -> None:
        self._marked.clear()
        self.refresh()

    def _rebuild(self) -> None:
        current = self.cursor_id
        chosen = self.query_filter.filter(self._records.values(), self._marked)
        self._order = [r.rollout_id for r in sort_records(chosen, self.sort_column, reverse=self.sort_reverse)]
        self._index = {rid: i for i, rid in enumerate(self._order)}
        self.virtual_size = Size(TABLE_WIDTH, len(self._order) + 1)
        self._cursor = self._index.get(current, min(self._cursor, max(len(self._order) - 1, 0)))
        self.refresh()
        if self.is_mounted:
            self.call_after_refresh(self._scroll_to_cursor)
        self._announce()

    # --- cursor -------------------------------------------------------------------------------------------
    def move_to(self, rollout_id: str) -> bool:
        if rollout_id not in self._index:
            return False
        self._move(self._index[rollout_id])
        return True

    def _move(self, index: int) -> None:
        if not self._order:
            return
        old, self._cursor = self._cursor, max(0, min(index, len(self._order) - 1))
        if old != self._cursor:
            self._refresh_cells(old, range(len(COLUMNS)))
            self._refresh_cells(self._cursor, range(len(COLUMNS)))
        self._scroll_to_cursor()
        self._announce()

    def _rows_visible(self) -> int:
        return max(1, self.scrollable_content_region.height - 1)

    def _scroll_to_cursor(self) -> None:
        top, rows = round(self.scroll_y), self._rows_visible()
        if self._cursor < top:
            self.scroll_to(y=self._cursor, animate=False, immediate=True)
        elif self._cursor >= top + rows:
            self.scroll_to(y=self._cursor - rows + 1, animate=False, immediate=True)

    def _announce(self) -> None:
        if self.cursor_id != self._announced:
            self._announced = self.cursor_id
            self.post_message(self.CursorMoved(self.cursor_id))

    def action_cursor_down(self) -> None:
        self._move(self._cursor + 1)

    def action_cursor_up(self) -> None:
        self._move(self._cursor - 1)

    def action_page(self, direction: int) -> None:
        self._move(self._cursor + direction * self._rows_visible())

    def action_first(self) -> None:
        self._move(0)

    def action_last(self) -> None:
        self._move(len(self._order) - 1)

    def action_open(self) -> None:
        if self.cursor_id is not None:
            self.post_message(self.Opened(self.cursor_id))

    def action_mark(self) -> None:
        rid = self.cursor_id
        if rid is None:
            return
        self._marked.symmetric_difference_update({rid})
        self._refresh_cells(self._cursor, range(len(COLUMNS)))
        self._move(self._cursor + 1)

    def action_filter(self) -> None:
        self.post_message(self.FilterRequested())

    def action_sort(self) -> None:
        i = SORTABLE.index(self.sort_column)
        self.set_sort(SORTABLE[(i + 1) % len(SORTABLE)], self.sort_reverse)
        self.notify(f"sorted by {self.sort_column}" + (" (descending)" if self.sort_reverse else ""), timeout=2)

    def action_reverse(self) -> None:
        self.set_sort(self.sort_column, not self.sort_reverse)

    def on_click(self, event: Click) -> None:
        index = round(self.scroll_y) + event.y - 1
        if event.y >= 1 and 0 <= index < len(self._order):
            self._move(index)
            if event.chain == 2:
                self.action_open()

    # --- drawing ------------------------------------------------------------------------------------------
    def _refresh_cells(self, index: int, columns: Iterable[int]) -> None:
        y = index - round(self.scroll_y) + 1
        if not 1 <= y < self.size.height:
            return
        x0 = round(self.scroll_x)
        for col in columns:
            self.refresh(Region(_OFFSETS[col] - x0, y, COLUMNS[col].width + GAP, 1))

    def _style(self, name: str) -> Style:
        return self.get_component_rich_style(f"rollout-table--{name}", partial=True)

    def render_line(self, y: int) -> Strip:
        width = max(self.size.width, TABLE_WIDTH)
        base = self.rich_style
        if y == 0:
            strip = self._header(base + self._style("header"))
        elif not self._order:
            lines = self.empty_message if not self._records else [
                f"no rollout matches the filter {self.query_filter.text!r}", "press / to change it, escape to clear it"
            ]
            text = lines[y - 2] if 0 <= y - 2 < len(lines) else ""
            strip = Strip([Segment("  " + text, base + self._style("empty"))])
        else:
            index = round(self.scroll_y) + y - 1
            strip = self._row(index, base) if index < len(self._order) else Strip([])
        return strip.extend_cell_length(width, base).crop(round(self.scroll_x), round(self.scroll_x) + self.size.width)

    def _header(self, style: Style) -> Strip:
        segments = []
        for col in COLUMNS:
            label = col.label
            if col.key == self.sort_column:
                label = label + ("▼" if self.sort_reverse else "▲")
            segments.append(Segment(_fit(label, col.width, col.justify) + " " * GAP, style))
        return Strip(segments).extend_cell_length(max(self.size.width, TABLE_WIDTH), style)

    def _row(self, index: int, base: Style) -> Strip:
        rid = self._order[index]
        rec = self._records[rid]
        cells = self.row_cells(rid)
        row_style = base
        if rid in self._marked:
            row_style += self._style("marked")
        cursor = None
        if index == self._cursor:
            cursor = self._style("cursor" if self.has_focus else "cursor-blurred")
        segments = []
        for i, (col, text) in enumerate(zip(COLUMNS, cells)):
            style = row_style
            if i == _STATUS_COL:
                style += self._style(STATUS_STYLES[rec.status])
            elif i == _SCORE_COL and rec.overridden:
                style += self._style("overridden")
            if cursor is not None:
                style += cursor
            segments.append(Segment(_fit(text, col.width, col.justify), style))
            segments.append(Segment(" " * GAP, row_style + cursor if cursor else row_style))
        return Strip(segments)

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()

    def on_resize(self) -> None:
        self._scroll_to_cursor()
