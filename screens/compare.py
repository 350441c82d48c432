"""The compare screen: run B against run A, aligned by dataset row (``core.compare``).

A header with both means, the paired mean difference ± its standard error, wins/losses/ties and the rows only one
run has; a table of rows (per-row means of several samples, the delta) sortable by delta and filterable to
regressions or improvements; under it both runs' pictures of the highlighted row side by side with their scores
and rationales. ←/→ pick a side, enter opens that rollout (an override there is reflected here on return).

Open it with :func:`open_compare` (``SvgAgentApp.open_compare``): the run picker and the job pane call it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.events import Resize
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Static

from svgagent.core.analysis.compare import Comparison, Only, RowComparison, SortKey, compare_runs
from svgagent.core.scoring.errors import StoreError
from svgagent.core.store.run_store import Store
from svgagent.core.terminal_text import visible_line
from svgagent.screens.keys_first import AppKeysFirst
from svgagent.tui.widgets.compare_row import CompareSide, header_text
from svgagent.tui.widgets.compare_table import CompareTable
from svgagent.tui.widgets.keys_footer import KeysFooter
from svgagent.tui.widgets.screen_text import shown, shown_line

if TYPE_CHECKING:
    from textual.app import App

NARROW_BELOW = 110
SIDE_KEYS = Binding.Group("A/B", compact=True)
# (sort key, descending, what the header says)
SORTS: tuple[tuple[SortKey, bool, str], ...] = (
    ("delta", False, "Δ, worst first"),
    ("delta", True, "Δ, best first"),
    ("abs_delta", False, "biggest change first"),
    ("row", False, "dataset order"),
)
ONLY_LABELS = {
    None: "all rows",
    "regressions": "regressions only (B worse)",
    "improvements": "improvements only (B better)",
}


def open_compare(app: App[Any], run_a: str, run_b: str) -> bool:
    """Push the compare screen of ``run_b`` against ``run_a``; a notification instead when a run is unknown or
    both are the same run. Returns whether the screen was pushed."""
    if run_a == run_b:
        app.notify("pick two different runs to compare", title="Compare", severity="warning")
        return False
    store: Store = app.store  # type: ignore[attr-defined]
    try:
        store.get_run(run_a)
        store.get_run(run_b)
    except StoreError as err:
        app.notify(str(err), title="Compare", severity="error")
        return False
    app.push_screen(CompareScreen(store, run_a, run_b))
    return True


class CompareScreen(AppKeysFirst, Screen[None]):
    SCOPED_CSS = False
    DEFAULT_CSS = """
    CompareScreen #compare-header { height: auto; padding: 0 1; background: $panel; }
    CompareScreen #compare-rows { height: 1fr; }
    CompareScreen #compare-prompt { height: 1; padding: 0 1; background: $panel; }
    CompareScreen #compare-sides { height: 11; }
    CompareScreen.-wide #compare-sides { height: 20; }
    """

    BINDINGS = [
        Binding("escape,q", "close", "Back", id="compare.back"),
        Binding(
            "enter",
            "open",
            "Open",
            id="compare.open",
            tooltip="Open the selected side's rollout (←/→ choose A or B) to read or override it",
        ),
        Binding(
            "left,h",
            "side('a')",
            "A",
            key_display="←",
            id="compare.side_a",
            group=SIDE_KEYS,
            tooltip="Select run A's side",
        ),
        Binding(
            "right,l",
            "side('b')",
            "B",
            key_display="→",
            id="compare.side_b",
            group=SIDE_KEYS,
            tooltip="Select run B's side",
        ),
        Binding(
            "S",
            "sort",
            "Sort",
            id="compare.sort",
            tooltip="Sort rows: Δ worst first → Δ best first → biggest change → dataset order",
        ),
        Binding(
            "r",
            "only('regressions')",
            "Worse",
            id="compare.only_regressions",
            tooltip="Only regressions (B below A); again: every row",
        ),
        Binding(
            "i",
            "only('improvements')",
            "Better",
            id="compare.only_improvements",
            tooltip="Only improvements (B above A); again: every row",
        ),
        Binding(
            "n",
            "next_sample",
            "Sample",
            id="compare.sample",
            tooltip="Show the row's next sample (rows can have several samples per run)",
        ),
        Binding("f", "full_image", "Image", id="compare.full", tooltip="The selected side's picture full-resolution"),
    ]

    class Computed(Message):
        def __init__(self, comparison: Comparison | None, error: str = "") -> None:
            super().__init__()
            self.comparison, self.error = comparison, error

    def __init__(self, store: Store, run_a: str, run_b: str) -> None:
        super().__init__()
        self.store = store
        self.run_a = run_a
        self.run_b = run_b
        self.comparison: Comparison | None = None
        self.rows: list[RowComparison] = []  # in table order
        self.sort_index = 0
        self.only: Only | None = None
        self.side: Literal["a", "b"] = "a"
        self.sample = 0

    def compose(self) -> ComposeResult:
        yield Static(shown_line(f"comparing {self.run_b} with {self.run_a}…", style="dim italic"), id="compare-header")
        yield CompareTable(id="compare-rows")
        yield Static(id="compare-prompt")
        with Horizontal(id="compare-sides"):
            yield CompareSide(self.store, "A", id="side-a")
            yield CompareSide(self.store, "B", id="side-b")
        yield KeysFooter()

    def on_mount(self) -> None:
        self._layout(self.app.size.width)
        self.query_one(CompareTable).focus()
        self._set_side("a")
        self._compute()

    def on_resize(self, event: Resize) -> None:
        self._layout(event.size.width)

    def _layout(self, width: int) -> None:
        self.set_class(width >= NARROW_BELOW, "-wide")

    # --- data ---------------------------------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="compare", exit_on_error=False)
    def _compute(self) -> None:
        try:
            comparison = compare_runs(self.store, self.run_a, self.run_b)
        except Exception as err:  # noqa: BLE001 - shown in the header
            self.post_message(self.Computed(None, f"{type(err).__name__}: {err}"))
            return
        self.post_message(self.Computed(comparison))

    def on_compare_screen_computed(self, message: Computed) -> None:
        if message.comparison is None:
            self.query_one("#compare-header", Static).update(shown(message.error, style="red"))
            return
        reread = self.comparison is not None  # compared again after an override: the sides may have changed
        self.comparison = message.comparison
        self._refill(reread=reread)

    @property
    def view(self) -> str:
        sort = SORTS[self.sort_index][2]
        return (
            f"showing {len(self.rows)} of {len(self.comparison.rows) if self.comparison else 0} rows · "
            f"{ONLY_LABELS[self.only]} · sorted by {sort}"
        )

    def _refill(self, *, reread: bool = False) -> None:
        c = self.comparison
        if c is None:
            return
        table = self.query_one(CompareTable)
        keep = table.cursor_key
        sort, descending, _ = SORTS[self.sort_index]
        self.rows = c.select(self.only, sort, descending=descending)
        table.fill(self.rows, keep=keep)
        self.query_one("#compare-header", Static).update(header_text(c, self.view))
        self._show_row(reread=reread)

    @property
    def current(self) -> RowComparison | None:
        table = self.query_one(CompareTable)
        if not self.rows or table.cursor_row >= len(self.rows):
            return None
        return self.rows[table.cursor_row]

    def _show_row(self, *, reread: bool = False) -> None:
        row = self.current
        prompt = self.query_one("#compare-prompt", Static)
        side_a, side_b = self.query_one("#side-a", CompareSide), self.query_one("#side-b", CompareSide)
        if row is None:
            prompt.update(
                Text("no rows to show" + (": press r/i again for every row" if self.only else ""), style="dim italic")
            )
            side_a.show(None, 0, missing="")
            side_b.show(None, 0, missing="")
            return
        text = Text(no_wrap=True, overflow="ellipsis")  # one line, cut to the width there is
        text.append(visible_line(row.row_id), style="bold")
        if not row.same_requirements:
            text.append(" · requirements differ", style="yellow")
        text.append(f" · {visible_line(' '.join(row.prompt.split()))}")
        prompt.update(text)
        side_a.show(row.a, self.sample, missing="only in B: run A has no rollout for this row", reread=reread)
        side_b.show(row.b, self.sample, missing="only in A: run B has no rollout for this row", reread=reread)

    @on(CompareTable.Highlighted, "#compare-rows")
    def _row_highlighted(self, event: CompareTable.Highlighted) -> None:
        event.stop()
        self.sample = 0
        self._show_row()

    @on(CompareTable.Selected, "#compare-rows")
    def _row_selected(self, event: CompareTable.Selected) -> None:
        event.stop()
        self.action_open()

    # --- actions ------------------------------------------------------------------------------------------
    def action_sort(self) -> None:
        self.sort_index = (self.sort_index + 1) % len(SORTS)
        self._refill()

    def action_only(self, which: Only) -> None:
        self.only = None if self.only == which else which
        self._refill()

    def _set_side(self, side: Literal["a", "b"]) -> None:
        self.side = side
        self.query_one("#side-a").set_class(side == "a", "-active")
        self.query_one("#side-b").set_class(side == "b", "-active")

    def action_side(self, side: Literal["a", "b"]) -> None:
        self._set_side(side)

    def action_next_sample(self) -> None:
        self.sample += 1
        self._show_row()

    def selected_rollout(self) -> str | None:
        return self.query_one(f"#side-{self.side}", CompareSide).picture.rollout_id

    def action_open(self) -> None:
        rollout_id = self.selected_rollout()
        if rollout_id is None:
            self.notify(f"run {self.side.upper()} has no rollout for this row", severity="warning")
            return
        from svgagent.screens.rollout_detail import RolloutDetail

        def closed(changed: bool | None) -> None:
            if changed:  # an override changes the row means: compare again
                self._compute()
            else:
                self.query_one(f"#side-{self.side}", CompareSide).picture.reload()

        self.app.push_screen(RolloutDetail(self.store, rollout_id), closed)

    def action_full_image(self) -> None:
        rollout_id = self.selected_rollout()
        if rollout_id is None:
            self.notify(f"run {self.side.upper()} has no rollout for this row", severity="warning")
            return
        from svgagent.tui.imaging import show_full_image

        show_full_image(self, rollout_id)

    def action_close(self) -> None:
        self.dismiss(None)
