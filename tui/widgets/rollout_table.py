"""The rollout table: one line per current rollout, keyed by rollout id, drawn only where it is visible.

A :class:`~svgagent.tui.widgets.line_table.LineTable`: rows live in a dict keyed by rollout id, the view order is
a list of ids (filtered, then sorted), and only the lines on screen are drawn — so a 10,000-row run loads, sorts
and filters in milliseconds. Live updates repaint only the cells whose text changed. The header shows the sort
column with its direction (▲/▼, always visible, however narrow the column); a click on a header sorts by it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from rich.style import Style
from textual.binding import Binding
from textual.events import Click
from textual.message import Message

from svgagent.core.store.filter_language import SORT_FIELDS, Query, parse_query, sort_records
from svgagent.core.store.typed_rows import RolloutRecord, RunTally, paused_gc
from svgagent.tui.widgets.line_table import LineTable, cursor_bindings
from svgagent.tui.widgets.rollout_cells import COLUMNS, FIXED_WIDTH, GAP, PROMPT_MIN, SORTABLE, cells_for, state_style

_STATUS_COL = [c.key for c in COLUMNS].index("status")
_SCORE_COL = [c.key for c in COLUMNS].index("score")
_PROMPT_COL = [c.key for c in COLUMNS].index("prompt")
MARK = "●"
DEFAULT_SORT = "row"


class RolloutTable(LineTable):
    """Rollouts of one run. Keys move, mark, sort and ask for the filter; the screen owns the data flow."""

    COMPONENT_CLASSES = LineTable.COMPONENT_CLASSES | {
        "rollout-table--marked",
        "rollout-table--queued",
        "rollout-table--busy",
        "rollout-table--scored",
        "rollout-table--failed",
        "rollout-table--invalid",
        "rollout-table--overridden",
    }
    BINDINGS = [
        *cursor_bindings("table"),
        Binding("enter", "choose", "Open", id="table.open", tooltip="Open the rollout screen"),
        Binding("space", "mark", "Mark", id="table.mark", tooltip="Mark the rollout (for R rerun)"),
        Binding(
            "a",
            "mark_all",
            "Mark all",
            show=False,
            id="table.mark_all",
            tooltip="Mark every rollout shown (all the filter keeps)",
        ),
        Binding("A", "unmark_all", "Unmark all", show=False, id="table.unmark_all", tooltip="Unmark every rollout"),
        Binding(
            "v",
            "mark_range",
            "Mark range",
            show=False,
            id="table.mark_range",
            tooltip="Mark the rows from the last one you marked down or up to this one",
        ),
        Binding(
            "slash",
            "filter",
            "Filter",
            id="table.filter",
            key_display="/",
            tooltip="Filter: score<0.5 status:failed invalid overridden row:3 text",
        ),
        Binding("S", "sort", "Sort", id="table.sort", tooltip="Pick the column to sort by (or click its header)"),
        Binding(
            "minus",
            "reverse",
            "Reverse",
            show=False,
            key_display="-",
            id="table.reverse",
            tooltip="Reverse the sort order",
        ),
    ]
    COLUMNS = COLUMNS
    GAP = GAP

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

    class SortRequested(Message):
        """The person wants to pick the sort column (the screen shows the choice)."""

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._records: dict[str, RolloutRecord] = {}
        self.tally = RunTally()  # the summary of every row (not only those the filter shows), kept up to date
        self._cells: dict[str, tuple[str, ...]] = {}
        self._order: list[str] = []
        self._index: dict[str, int] = {}
        self._marked: set[str] = set()
        self._anchor: str | None = None  # the last row space marked: where v's range starts
        self._announced: str | None = "\0"
        self.query_filter: Query = parse_query("")
        self.sort_column = DEFAULT_SORT
        self.sort_reverse = False
        self.empty_message: list[str] = ["no rollouts"]

    # --- LineTable --------------------------------------------------------------------------------------------
    @property
    def row_count(self) -> int:
        return len(self._order)

    def widths(self) -> list[int]:
        width = self.scrollable_content_region.width or self.size.width
        prompt = max(PROMPT_MIN, width - FIXED_WIDTH)
        return [prompt if i == _PROMPT_COL else c.width for i, c in enumerate(COLUMNS)]

    def row_cells_at(self, index: int) -> Sequence[str]:
        return self.row_cells(self._order[index])

    def header_labels(self) -> list[str]:
        """Labels, the sort column's with its direction: the arrow replaces the label's end when it is narrow."""
        labels = []
        for column, width in zip(COLUMNS, self.widths()):
            label = column.label
            if column.key == self.sort_column:
                arrow = "▼" if self.sort_reverse else "▲"
                label = (label if len(label) < width else label[: max(0, width - 1)]) + arrow
            labels.append(label)
        return labels

    def row_style(self, index: int) -> Style:
        if self._order[index] in self._marked:
            return self.get_component_rich_style("rollout-table--marked", partial=True)
        return Style()

    def cell_style(self, index: int, column: int) -> Style:
        if index < 0:
            return Style()
        rec = self._records[self._order[index]]
        if column == _STATUS_COL:
            return self.get_component_rich_style(f"rollout-table--{state_style(rec)}", partial=True)
        if column == _SCORE_COL and rec.overridden:
            return self.get_component_rich_style("rollout-table--overridden", partial=True)
        return Style()

    def empty_lines(self) -> list[str]:
        if not self._records:
            return self.empty_message
        return [f"no rollout matches the filter {self.query_filter.text!r}", "press / to change it, escape to clear it"]

    def cursor_moved(self) -> None:
        self._announce()

    def row_chosen(self) -> None:
        if self.cursor_id is not None:
            self.post_message(self.Opened(self.cursor_id))

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
        dirty: list[tuple[int, list[int]]] = []  # (row, columns) whose text changed
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
                dirty.append(
                    (self._index[rid], [i for i, (a, b) in enumerate(zip(old_cells or (), new_cells)) if a != b])
                )
        if rebuild:
            self._rebuild()
        elif dirty:
            self.refresh_cells(dirty)

    def merge(self, records: Iterable[RolloutRecord], removed: Iterable[str] = ()) -> None:
        """Rows read from the store a moment ago (in a thread, while the engine may still be writing): each
        replaces the table's row unless the table's is newer — a live update arrived after the read. ``removed``
        rollouts are no longer current (a rerun replaced them)."""
        newer = [r for r in records if (old := self._records.get(r.rollout_id)) is None or r.updated >= old.updated]
        gone = [replace(self._records[rid], is_current=False) for rid in removed if rid in self._records]
        self.apply(newer + gone)

    def _moves(self, old: RolloutRecord, new: RolloutRecord) -> bool:
        if not self.query_filter.empty and (
            self.query_filter.matches(old, self._marked) != self.query_filter.matches(new, self._marked)
        ):
            return True
        key = SORT_FIELDS[self.sort_column]
        return self.sort_column != DEFAULT_SORT and key(old) != key(new)

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
        self._anchor = None
        self._marks_changed()

    def _marks_changed(self) -> None:
        if "marked" in self.query_filter.text:  # the filter's `marked` keyword: the rows it keeps changed
            self._rebuild()
        self.refresh()

    def _rebuild(self) -> None:
        current = self.cursor_id
        chosen = self.query_filter.filter(self._records.values(), self._marked)
        self._order = [r.rollout_id for r in sort_records(chosen, self.sort_column, reverse=self.sort_reverse)]
        self._index = {rid: i for i, rid in enumerate(self._order)}
        self.clamp_cursor(self._index.get(current, self._cursor))
        self._announce()

    # --- cursor -------------------------------------------------------------------------------------------
    def move_to(self, rollout_id: str) -> bool:
        if rollout_id not in self._index:
            return False
        self.move_cursor(self._index[rollout_id])
        return True

    def _announce(self) -> None:
        if self.cursor_id != self._announced:
            self._announced = self.cursor_id
            self.post_message(self.CursorMoved(self.cursor_id))

    def action_mark(self) -> None:
        rid = self.cursor_id
        if rid is None:
            return
        self._marked.symmetric_difference_update({rid})
        self._anchor = rid
        self.refresh_line(self._cursor)
        self.move_cursor(self._cursor + 1)

    def action_mark_all(self) -> None:
        self._marked.update(self._order)
        self._marks_changed()
        self.notify(f"{len(self._marked)} marked", timeout=2)

    def action_unmark_all(self) -> None:
        count = len(self._marked)
        self.clear_marks()
        self.notify(f"{count} unmarked", timeout=2)

    def action_mark_range(self) -> None:
        """Mark every row between the last one marked with space and the cursor (both included)."""
        start = self._index.get(self._anchor or "")
        if start is None or self.cursor_id is None:
            self.notify("mark a first row with space, move, then v marks the rows in between", severity="warning")
            return
        low, high = sorted((start, self._cursor))
        self._marked.update(self._order[low : high + 1])
        self._anchor = self.cursor_id
        self._marks_changed()
        self.notify(f"{high - low + 1} rows marked ({len(self._marked)} in all)", timeout=2)

    def action_filter(self) -> None:
        self.post_message(self.FilterRequested())

    def action_sort(self) -> None:
        self.post_message(self.SortRequested())

    def action_reverse(self) -> None:
        self.set_sort(self.sort_column, not self.sort_reverse)

    def on_click(self, event: Click) -> None:
        if event.y == 0:  # the header: sort by the clicked column (again: the other way round)
            x = event.x + round(self.scroll_x)
            for column, start, width in zip(COLUMNS, self.column_offsets(), self.widths()):
                if column.key in SORTABLE and start <= x < start + width:
                    self.set_sort(column.key, not self.sort_reverse if column.key == self.sort_column else False)
                    return
            return
        super().on_click(event)
