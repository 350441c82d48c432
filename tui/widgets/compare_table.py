"""The compare screen's table: one line per dataset row (row, mean A, mean B, Δ, valid samples, prompt), drawn
only where it is visible — a :class:`~svgagent.tui.widgets.line_table.LineTable` like the rollout table, so a
10,000-row comparison stays instant."""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text

from svgagent.core.analysis.compare import RowComparison
from svgagent.tui.widgets.compare_row import row_cells, row_key
from svgagent.tui.widgets.line_table import Column, LineTable, cursor_bindings

# the row column fits the row ids shown (3–14 cells); the prompt column takes the width that is left
COLUMNS: tuple[Column, ...] = (
    Column("row", "row", 0),
    Column("a", "A", 5, "right"),
    Column("b", "B", 5, "right"),
    Column("delta", "Δ", 7, "right"),
    Column("n", "n A/B", 5, "right"),
    Column("prompt", "prompt", 0),
)


class CompareTable(LineTable):
    """One line per dataset row. Keys move the cursor; the screen's keys do the rest (←/→ pick a side, enter
    opens): the cursor posts ``LineTable.Highlighted``, a double click ``LineTable.Selected``."""

    COMPONENT_CLASSES = LineTable.COMPONENT_CLASSES | {
        "compare-table--better",
        "compare-table--worse",
        "compare-table--dim",
    }
    DEFAULT_CSS = """
    CompareTable { scrollbar-size-horizontal: 0; }
    CompareTable > .compare-table--better { color: $success; }
    CompareTable > .compare-table--worse { color: $error; }
    CompareTable > .compare-table--dim { color: $text-muted; }
    """
    BINDINGS = cursor_bindings("compare")
    COLUMNS = COLUMNS
    GAP = 2
    LEAD = 1
    _CELL_STYLES = {"green": "better", "red": "worse", "dim": "dim"}

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.rows: list[RowComparison] = []
        self.row_keys: list[str] = []
        self._row_width = 3

    # --- LineTable ----------------------------------------------------------------------------------------
    @property
    def row_count(self) -> int:
        return len(self.rows)

    def widths(self) -> list[int]:
        return [self._row_width, *(c.width for c in COLUMNS[1:-1]), self._prompt_width()]

    def row_cells_at(self, index: int) -> Sequence[str]:
        return [cell.plain for cell in self.get_row_at(index)]

    def cell_style(self, index: int, column: int) -> Style:
        if index < 0:
            return Style()
        cell = self.get_row_at(index)[column]
        kind = self._CELL_STYLES.get(str(cell.style)) if cell.style else None
        return self.get_component_rich_style(f"compare-table--{kind}", partial=True) if kind else Style()

    # --- data ---------------------------------------------------------------------------------------------
    def fill(self, rows: list[RowComparison], keep: str | None = None) -> None:
        """Show ``rows`` in this order; the cursor stays on row ``keep`` when it is still shown."""
        self.rows = list(rows)
        self.row_keys = [row_key(r) for r in self.rows]
        self._row_width = min(max([cell_len(r.row_id) for r in self.rows] + [3]), 14)
        index = {k: i for i, k in enumerate(self.row_keys)}
        self.clamp_cursor(index.get(keep, self._cursor) if keep else 0)

    @property
    def cursor_key(self) -> str | None:
        return self.row_keys[self._cursor] if self.rows else None

    def _prompt_width(self) -> int:
        width = self.scrollable_content_region.width or self.size.width or 80
        fixed = self.LEAD + self._row_width + sum(c.width for c in COLUMNS[1:-1]) + self.GAP * (len(COLUMNS) - 1)
        return max(10, width - fixed)

    def get_row_at(self, index: int) -> tuple[Text, ...]:
        """The cells of line ``index`` as drawn (row, A, B, Δ, n A/B, prompt)."""
        return row_cells(self.rows[index], self._prompt_width())
