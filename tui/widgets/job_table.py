"""The Jobs pane's table: one row per RFT job, keyed by the job's resource name. A poll changes only the cells
that changed; the rows are rebuilt only when the set or order of jobs changes (the cursor stays on its job)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.text import Text
from textual.binding import Binding
from textual.widgets import DataTable

from svgagent.tui.widgets.job_cells import COLUMNS, cells_for

if TYPE_CHECKING:
    from svgagent.core.rft.monitor import JobView


class JobTable(DataTable[Text]):
    DEFAULT_CSS = """
    JobTable { height: auto; max-height: 45%; scrollbar-size-vertical: 1; scrollbar-size-horizontal: 0; }
    JobTable > .datatable--header { text-style: bold; color: $text-muted; }
    """
    BINDINGS = [
        Binding("j", "cursor_down", "Down", show=False, id="jobs.down"),
        Binding("k", "cursor_up", "Up", show=False, id="jobs.up"),
    ]

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 - Textual's name
        super().__init__(id=id, cursor_type="row", zebra_stripes=False)
        self._order: list[str] = []
        self._cells: dict[str, tuple[str, ...]] = {}

    def on_mount(self) -> None:
        for column in COLUMNS:
            self.add_column(Text(column.label, justify=column.justify), width=column.width, key=column.key)

    @property
    def names(self) -> list[str]:
        """Job resource names, in row order."""
        return list(self._order)

    @property
    def selected(self) -> str | None:
        """The job under the cursor."""
        if not self._order or not 0 <= self.cursor_row < len(self._order):
            return None
        return self._order[self.cursor_row]

    def row_text(self, name: str) -> tuple[str, ...]:
        """The plain text of a row's cells (for tests and the palette)."""
        return tuple(str(cell) for cell in self.get_row(name))

    def show(self, views: Sequence[JobView], now: float) -> None:
        names = [view.name for view in views]
        cells = {view.name: cells_for(view, now) for view in views}
        if names != self._order:
            keep = self.selected
            self.clear()
            self._cells.clear()
            for name in names:
                self.add_row(*cells[name], key=name)
                self._cells[name] = tuple(cell.markup for cell in cells[name])
            self._order = names
            if keep in names:
                self.move_cursor(row=names.index(keep), animate=False)
            return
        for name in names:
            new = tuple(cell.markup for cell in cells[name])
            old = self._cells.get(name, ())
            for index, column in enumerate(COLUMNS):
                if index >= len(old) or old[index] != new[index]:
                    self.update_cell(name, column.key, cells[name][index])
            self._cells[name] = new

    def select(self, name: str) -> None:
        if name in self._order:
            self.move_cursor(row=self._order.index(name), animate=False)
