"""The leaderboard screen (run picker: ``space`` marks runs, ``l`` opens it): the marked runs side by side —
mean ± stderr, pass rate, the paired Δ from the best on the rows every run scored, dollars, latency, the kinds of
requirement each misses most — and which model to pick (core/analysis/leaderboard.py, what ``svgagent runs
leaderboard`` prints). ``s`` sorts by the next column (``S`` the one before), ``-`` reverses, ``c`` compares the
highlighted run with the best row by row."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Static

from svgagent.core.analysis.leaderboard import Leaderboard, LeaderboardRow, build_leaderboard, model_label
from svgagent.core.config.prices import PriceTable, usd_text
from svgagent.core.store.run_store import Store
from svgagent.screens.keys_first import AppKeysFirst
from svgagent.tui.widgets.keys_footer import KeysFooter
from svgagent.tui.widgets.leaderboard_table import LeaderboardTable
from svgagent.tui.widgets.line_table import LineTable
from svgagent.tui.widgets.screen_text import shown, shown_line


def detail_text(r: LeaderboardRow) -> Text:
    """Everything about the highlighted run that the table has no room for (its texts are outside text)."""
    text = Text()
    text.append(shown_line(model_label(r.model), "bold"))
    text.append(shown_line(f"  {r.name}", "dim"))
    text.append("\n")
    text.append(
        shown_line(
            f"judged by {r.judge_model} ({r.judge_profile}) on {r.dataset}: {r.rows} rows, {r.rollouts} rollouts, "
            f"{r.valid} scored"
        )
    )
    cost = r.cost
    text.append(
        f"\n{usd_text(cost.total_usd)} = policy {usd_text(cost.policy_usd)} ({cost.policy_tokens:,} tokens) + judge "
        f"{usd_text(cost.judge_usd)} ({cost.judge_tokens:,} tokens)"
    )
    p50 = "–" if r.latency_p50_s is None else f"{r.latency_p50_s:.2f}"
    p90 = "–" if r.latency_p90_s is None else f"{r.latency_p90_s:.2f}"
    text.append(f" · latency p50 {p50} s, p90 {p90} s")
    if not r.is_best and r.diff_vs_best is not None:
        text.append(f"\nagainst the best on the shared rows: {r.wins} wins, {r.losses} losses")
    themes = " · ".join(f"{t.theme} {t.failed}/{t.judged}" for t in r.themes)
    text.append(
        f"\nmissed: {themes}" if themes else "\nmissed: no per-requirement verdicts (judge mode per-requirement)"
    )
    return text


class LeaderboardScreen(AppKeysFirst, Screen[None]):
    """The leaderboard of ``run_ids`` (read in a thread)."""

    SCOPED_CSS = False
    DEFAULT_CSS = """
    LeaderboardScreen #board-title { height: auto; padding: 0 1; }
    LeaderboardScreen LeaderboardTable { height: 1fr; }
    LeaderboardScreen #board-detail { height: auto; padding: 0 1; border-top: solid $panel; }
    LeaderboardScreen #board-summary { height: auto; padding: 0 1; }
    """
    BINDINGS = [
        Binding("escape,q", "close", "Back", id="leaderboard.back"),
        Binding("s", "sort(1)", "Sort", id="leaderboard.sort", tooltip="Sort by the next column"),
        Binding("S", "sort(-1)", "Sort back", show=False, id="leaderboard.sort_back"),
        Binding("minus", "reverse", "Reverse", key_display="-", id="leaderboard.reverse"),
        Binding(
            "c",
            "compare",
            "Compare",
            id="leaderboard.compare",
            tooltip="Compare the highlighted run with the best one, row by row",
        ),
    ]

    class Ready(Message):
        def __init__(self, board: Leaderboard | None, error: str = "") -> None:
            super().__init__()
            self.board, self.error = board, error

    def __init__(self, store: Store, run_ids: Sequence[str], *, prices: PriceTable | None = None) -> None:
        super().__init__()
        self.store = store
        self.run_ids = list(run_ids)
        self.prices = prices
        self.board: Leaderboard | None = None

    def compose(self) -> ComposeResult:
        yield Static(Text(f"Leaderboard of {len(self.run_ids)} runs — reading…", style="bold"), id="board-title")
        yield LeaderboardTable(id="board-table")
        yield Static(id="board-detail")
        yield Static(id="board-summary")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.query_one(LeaderboardTable).focus()
        self._build()

    @work(thread=True, exclusive=True, group="leaderboard", exit_on_error=False)
    def _build(self) -> None:
        try:
            with self.store.reader() as store:
                board = build_leaderboard(store, self.run_ids, prices=self.prices)
        except Exception as err:  # noqa: BLE001 - shown on the screen
            self.post_message(self.Ready(None, f"{type(err).__name__}: {err}"))
            return
        self.post_message(self.Ready(board))

    def on_leaderboard_screen_ready(self, message: Ready) -> None:
        title = self.query_one("#board-title", Static)
        if message.board is None:
            title.update(shown(message.error, style="red"))
            return
        board = self.board = message.board
        table = self.query_one(LeaderboardTable)
        table.fill(board, table.sort_key, table.reverse)
        shared = f"Δ best: paired over the {board.shared_rows} rows every run scored" if board.shared_rows else ""
        head = Text(f"Leaderboard of {len(board.rows)} runs", style="bold")
        if shared:
            head.append(f"  {shared}", style="dim")
        for note in board.notes:
            head.append("\nnote: ", style="yellow")
            head.append(shown_line(note))
        title.update(head)
        self.query_one("#board-summary", Static).update(shown(board.summary, style="bold"))
        self._show_detail()

    def _show_detail(self) -> None:
        row = self.query_one(LeaderboardTable).current
        self.query_one("#board-detail", Static).update(detail_text(row) if row is not None else "")

    @on(LineTable.Highlighted)
    def _moved(self) -> None:
        self._show_detail()

    # --- actions ------------------------------------------------------------------------------------------
    def action_sort(self, step: int) -> None:
        table = self.query_one(LeaderboardTable)
        if self.board is None:
            return
        keys = table.sortable_keys()
        index = keys.index(table.sort_key) if table.sort_key in keys else -1
        keep = table.current.run_id if table.current else None
        table.fill(self.board, keys[(index + step) % len(keys)], table.reverse, keep)
        self._show_detail()

    def action_reverse(self) -> None:
        table = self.query_one(LeaderboardTable)
        if self.board is None:
            return
        table.fill(self.board, table.sort_key, not table.reverse, table.current.run_id if table.current else None)
        self._show_detail()

    def action_compare(self) -> None:
        row = self.query_one(LeaderboardTable).current
        if self.board is None or row is None or self.board.best_run is None:
            return
        if row.run_id == self.board.best_run:
            self.notify("this is the best run: move to another one to compare it with", severity="warning")
            return
        self.app.open_compare(self.board.best_run, row.run_id)  # type: ignore[attr-defined]

    def action_close(self) -> None:
        self.dismiss(None)
