"""The leaderboard screen's table: one line per run (core/analysis/leaderboard.py), sortable by any column — a
:class:`~svgagent.tui.widgets.line_table.LineTable` like the other tables. Below 110 cells it leaves out the
judge profile, the dataset, the rows and the latency (the screen's detail line has them)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len

from svgagent.core.analysis.leaderboard import COLUMNS as SORTABLE
from svgagent.core.analysis.leaderboard import Leaderboard, LeaderboardRow, model_label
from svgagent.core.config.prices import usd_text
from svgagent.tui.widgets.line_table import Column, LineTable, cursor_bindings

WIDE_FROM = 110
ALL_COLUMNS: tuple[Column, ...] = (
    Column("model", "model / run", 0),
    Column("judge_profile", "profile", 10),
    Column("dataset", "data", 9),
    Column("rows", "rows", 4, "right"),
    Column("mean", "mean ± se", 10, "right"),
    Column("pass_rate", "pass", 4, "right"),
    Column("diff", "Δ best", 11, "right"),
    Column("cost", "$", 8, "right"),
    Column("latency", "p50 s", 5, "right"),
    Column("themes", "misses most", 12),
)
NARROW = ("model", "mean", "pass_rate", "diff", "cost", "themes")
SORT_KEYS = {c.key: c.key if c.key in SORTABLE else "mean" for c in ALL_COLUMNS}  # themes: the mean's order


def _num(value: float | None, digits: int = 2, *, sign: bool = False) -> str:
    if value is None:
        return "–"
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


def row_text(r: LeaderboardRow, key: str, *, wide: bool) -> str:
    """One cell of run ``r`` (plain text: LineTable escapes it)."""
    if key == "model":
        return model_label(r.model) + ("" if r.name == r.run_id else f" · {r.name}")
    if key == "judge_profile":
        return r.judge_profile
    if key == "dataset":
        return r.dataset
    if key == "rows":
        return str(r.rows)
    if key == "mean":
        return _num(r.mean) + ("" if r.stderr is None else f" ±{r.stderr:.2f}")
    if key == "pass_rate":
        return "–" if r.pass_rate is None else f"{100 * r.pass_rate:.0f}%"
    if key == "diff":
        if r.is_best:
            return "best"
        return _num(r.diff_vs_best, sign=True) + ("" if r.diff_stderr is None else f" ±{r.diff_stderr:.2f}")
    if key == "cost":
        return usd_text(r.usd)
    if key == "latency":
        return _num(r.latency_p50_s, 1)
    return r.theme_text(2 if wide else 1) or "–"


class LeaderboardTable(LineTable):
    """One line per run, in the order the screen gives; the header marks the sort column (▼ best first, ▲
    reversed)."""

    BINDINGS = cursor_bindings("leaderboard")
    GAP = 2
    LEAD = 1

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.rows: list[LeaderboardRow] = []
        self.sort_key = "diff"
        self.reverse = False

    @property
    def wide(self) -> bool:
        return (self.size.width or 80) >= WIDE_FROM

    @property
    def columns(self) -> Sequence[Column]:
        return ALL_COLUMNS if self.wide else tuple(c for c in ALL_COLUMNS if c.key in NARROW)

    @property
    def row_count(self) -> int:
        return len(self.rows)

    def header_labels(self) -> list[str]:
        arrow = "▲" if self.reverse else "▼"
        return [f"{c.label} {arrow}" if SORT_KEYS[c.key] == self.sort_key else c.label for c in self.columns]

    def widths(self) -> list[int]:
        """The model column fits the longest name it can; the themes column (last) takes what is left."""
        fixed = [c.width for c in self.columns[1:]]
        width = self.scrollable_content_region.width or self.size.width or 80
        room = width - self.LEAD - sum(fixed) - self.GAP * len(fixed)
        longest = max([cell_len(row_text(r, "model", wide=True)) for r in self.rows] + [12])
        model = max(14, min(room, longest))
        return [model, *fixed[:-1], max(fixed[-1], fixed[-1] + room - model)]

    def row_cells_at(self, index: int) -> Sequence[str]:
        r = self.rows[index]
        return [row_text(r, c.key, wide=self.wide) for c in self.columns]

    def empty_lines(self) -> list[str]:
        return ["reading the runs…"]

    def fill(self, board: Leaderboard, sort_key: str, reverse: bool, keep: str | None = None) -> None:
        """Show ``board``'s rows sorted by ``sort_key``, best first (``reverse``: worst first; runs without the
        value last either way); the cursor stays on run ``keep`` when it can."""
        self.sort_key, self.reverse = sort_key, reverse
        self.rows = board.sorted(sort_key, reverse=reverse)
        ids = [r.run_id for r in self.rows]
        self.clamp_cursor(ids.index(keep) if keep in ids else 0)

    @property
    def current(self) -> LeaderboardRow | None:
        return self.rows[self.cursor_row] if self.rows else None

    def sortable_keys(self) -> list[str]:
        """The sort keys of the columns shown, left to right, each once."""
        return list(dict.fromkeys(SORT_KEYS[c.key] for c in self.columns))
