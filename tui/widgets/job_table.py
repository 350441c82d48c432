"""The Jobs pane's table: one row per RFT job, keyed by the job's resource name — a
:class:`~svgagent.tui.widgets.line_table.LineTable` like the rollout and compare tables. A poll repaints only the
rows whose cells changed; the cursor stays on its job when the set or order of jobs changes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.text import Text

from svgagent.tui.widgets.job_cells import COLUMNS, cells_for
from svgagent.tui.widgets.line_table import LineTable, cursor_bindings

NAME_MAX = 48  # cells of a job's name at most: the other columns stay near it on a wide pane

if TYPE_CHECKING:
    from svgagent.core.rft.monitor import JobView


class JobTable(LineTable):
    DEFAULT_CSS = """
    JobTable { height: auto; max-height: 45%; scrollbar-size-horizontal: 0; }
    """
    BINDINGS = cursor_bindings("jobs")
    COLUMNS = COLUMNS
    GAP = 2
    LEAD = 1

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 - Textual's name
        super().__init__(id=id)
        self._order: list[str] = []
        self._cells: dict[str, tuple[Text, ...]] = {}

    # --- LineTable ----------------------------------------------------------------------------------------
    def widths(self) -> list[int]:
        """The job column takes what the pane has left over its other columns (its name is cut at its end), up
        to :data:`NAME_MAX`; a pane too narrow for every column keeps its own width (the left columns show)."""
        widths = [c.width for c in COLUMNS]
        room = (self.scrollable_content_region.width or self.size.width) - self.LEAD - self.GAP * (len(widths) - 1)
        widths[0] = max(widths[0], min(NAME_MAX, room - sum(widths[1:])))
        return widths

    @property
    def row_count(self) -> int:
        return len(self._order)

    def row_cells_at(self, index: int) -> Sequence[Text]:
        return self._cells[self._order[index]]

    def empty_lines(self) -> list[str]:
        return []  # the status line above says why (no jobs yet, not connected)

    # --- data ---------------------------------------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        """Job resource names, in row order."""
        return list(self._order)

    @property
    def selected(self) -> str | None:
        """The job under the cursor."""
        return self._order[self._cursor] if self._order else None

    def row_text(self, name: str) -> tuple[str, ...]:
        """The plain text of a row's cells (for tests and the palette)."""
        return tuple(cell.plain for cell in self._cells[name])

    def show(self, views: Sequence[JobView], now: float) -> None:
        names = [view.name for view in views]
        cells = {view.name: cells_for(view, now) for view in views}
        if names != self._order:
            keep = self.selected
            self._order, self._cells = names, cells
            index = names.index(keep) if keep in names else self._cursor
            self.clamp_cursor(index)
            self.refresh(layout=True)
            if keep != self.selected:
                self.cursor_moved()
            return
        for index, name in enumerate(names):
            if [c.markup for c in cells[name]] != [c.markup for c in self._cells.get(name, ())]:
                self._cells[name] = cells[name]
                self.refresh_line(index)

    def select(self, name: str) -> None:
        if name in self._order:
            self.move_cursor(self._order.index(name))
