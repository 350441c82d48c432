"""Pick a stored run to open (key ``o`` on the dashboard; ``svgagent tui --run RUN`` opens one directly), or two
runs to compare: ``a`` marks run A, ``b`` run B, ``c`` (or enter once both are marked) opens the compare screen;
or any number of runs side by side: ``space`` marks runs, ``l`` opens their leaderboard (none marked: the runs the
filter shows).
``/`` filters the list: every word must occur in a run's id, name, model, dataset or status (``latest``: the newest);
enter in the filter opens the only match, or goes to the list."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from svgagent.core.store.outcomes import OutcomeCounts
from svgagent.core.store.run_refs import filter_runs
from svgagent.core.store.run_store import Store
from svgagent.core.store.typed_rows import RunRecord, mean_text
from svgagent.core.terminal_text import visible_line
from svgagent.tui.widgets.keys_footer import KeysFooter
from svgagent.tui.widgets.screen_text import shown_line


def run_line(
    run: RunRecord, current: str | None = None, mark: str = "", counts: tuple[int, OutcomeCounts] | None = None
) -> Text:
    """Two lines about ``run``; its name, model and dataset came from outside (imports, configs): escaped.
    ``counts``: its rollouts and their outcomes (``Store.outcome_counts``; a served run has no stored summary)."""
    summary = run.summary or {}
    mean = summary.get("mean_score")
    if counts is not None:
        rollouts, outcomes = counts  # next to the mean: a stopped run's mean is of its finished rollouts only
        done = outcomes.scored + outcomes.unscored
        count = f"{done}/{rollouts} done: {outcomes.text()}"
    else:
        rollouts = summary.get("rollouts", run.dataset.get("rows", "?"))
        done = summary.get("done")
        count = f"{done}/{rollouts} done" if done is not None else f"{rollouts} rollouts"
    text = Text()
    text.append("▶ " if run.run_id == current else "  ")
    if mark:
        text.append(f" {mark} ", style="bold reverse")
        text.append(" ")
    text.append(visible_line(run.name), style="bold")
    if run.name != run.run_id:
        text.append(f"  {visible_line(run.run_id)}", style="dim")
    text.append(
        "\n"
        + visible_line(
            f"    {run.created[:16].replace('T', ' ')} · {run.status} · {run.settings.get('model', '?')} · "
            f"{run.dataset.get('name', '?')} · {count} · mean " + mean_text(mean)
        ),
        style="dim",
    )
    return text


class RunPicker(ModalScreen[str | None]):
    """Dismisses with the chosen run id, or None."""

    BINDINGS = [
        Binding(
            "escape,q",
            "cancel",
            "Cancel",
            id="picker.cancel",
            tooltip="Close (escape in the filter: back to the list; on the list with a filter: clear it)",
        ),
        Binding(
            "slash",
            "filter",
            "Filter",
            key_display="/",
            id="picker.filter",
            tooltip="Filter the runs: words of the id, name, model, dataset or status; latest: the newest",
        ),
        Binding("enter", "choose", "Open", id="picker.open", show=True),
        Binding("j", "move(1)", "Down", show=False, id="picker.down"),
        Binding("k", "move(-1)", "Up", show=False, id="picker.up"),
        Binding("a", "mark('A')", "Mark A", id="picker.mark_a", tooltip="Mark the highlighted run as A, the baseline"),
        Binding(
            "b", "mark('B')", "Mark B", id="picker.mark_b", tooltip="Mark the highlighted run as B, compared with A"
        ),
        Binding(
            "c",
            "compare",
            "Compare",
            id="app.compare",
            tooltip="Compare B with A row by row (B: the marked or else the highlighted run; enter too once "
            "both are marked)",
        ),
        Binding("space", "board_mark", "Mark", id="picker.board_mark", tooltip="Mark the run for the leaderboard"),
        Binding(
            "l",
            "leaderboard",
            "Leaderboard",
            id="picker.leaderboard",
            tooltip="The marked runs side by side (none marked: every run the filter shows)",
        ),
        Binding(
            "p",
            "filmstrip",
            "Filmstrip",
            id="picker.filmstrip",
            tooltip="One prompt's pictures in A, then B (the marked or else the highlighted run)",
        ),
    ]

    def __init__(self, store: Store, *, current: str | None = None) -> None:
        super().__init__()
        self.store = store
        self.current = current
        self.runs = store.list_runs()
        self.counts = {run.run_id: store.outcome_counts(run.run_id) for run in self.runs}
        self.shown = list(self.runs)  # the runs the filter keeps
        self.marks: dict[str, str] = {}  # "A"/"B" → run id
        self.board_marks: list[str] = []  # run ids marked for the leaderboard, in the order marked

    def compose(self) -> ComposeResult:
        with Vertical(id="picker"):
            yield Static(id="picker-title")
            # mounted with the screen, so the keys typed after / land in it
            yield Input(
                placeholder="/ filter: id, name, model, dataset, status, latest", id="runs-filter", compact=True
            )
            yield OptionList(id="runs")
            yield Static("No runs yet: press escape, then r to start one.", id="runs-empty")
        yield KeysFooter()

    def on_mount(self) -> None:
        self._show()
        self.set_focus(self.query_one(OptionList) if self.runs else None)

    def _show(self) -> None:
        """List the runs the filter keeps, the highlight staying on its run when it can."""
        options = self.query_one(OptionList)
        before = self._highlighted()
        marked = self._mark_labels()
        options.clear_options()
        options.add_options(
            [
                Option(run_line(r, self.current, marked.get(r.run_id, ""), self.counts.get(r.run_id)), id=r.run_id)
                for r in self.shown
            ]
        )
        ids = [r.run_id for r in self.shown]
        if ids:
            options.highlighted = ids.index(before) if before in ids else 0
        text = self.query_one("#runs-filter", Input).value.strip()
        count = (
            f"{len(self.shown)} of {len(self.runs)} match {visible_line(repr(text))}"
            if text
            else f"{len(self.runs)} stored"
        )
        self.query_one("#picker-title", Static).update(
            Text.assemble(
                (f"Open a run — {count}, newest first", "bold"),
                ("   / filter · a/b: mark A/B · c: compare · space: mark · l: leaderboard", "dim"),
            )
        )
        empty = self.query_one("#runs-empty", Static)
        empty.display = not self.shown
        if self.runs and not self.shown:
            empty.update(shown_line(f"No run matches {text!r}: escape clears the filter."))

    # --- the filter ---------------------------------------------------------------------------------------
    def action_filter(self) -> None:
        self.set_focus(self.query_one("#runs-filter", Input))

    @on(Input.Changed, "#runs-filter")
    def _filter_typed(self, event: Input.Changed) -> None:
        self.shown = filter_runs(self.runs, event.value)
        self._show()

    @on(Input.Submitted, "#runs-filter")
    def _filter_submitted(self) -> None:
        if len(self.shown) == 1 and len(self.marks) < 2:
            self.dismiss(self.shown[0].run_id)
        elif self.shown:
            self.set_focus(self.query_one(OptionList))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if len(self.marks) == 2:
            self.action_compare()
            return
        self.dismiss(event.option.id)

    def action_choose(self) -> None:
        if len(self.marks) == 2:
            self.action_compare()
            return
        run_id = self._highlighted()
        if run_id is not None:
            self.dismiss(run_id)

    def action_move(self, step: int) -> None:
        options = self.query_one(OptionList)
        options.action_cursor_down() if step > 0 else options.action_cursor_up()

    def action_cancel(self) -> None:
        box = self.query_one("#runs-filter", Input)
        if box.has_focus:
            self.set_focus(self.query_one(OptionList))
        elif box.value:
            box.value = ""  # the list comes back with Input.Changed
        else:
            self.dismiss(None)

    # --- compare two runs ---------------------------------------------------------------------------------
    def _highlighted(self) -> str | None:
        options = self.query_one(OptionList)
        if options.highlighted is None or not options.option_count:
            return None
        return options.get_option_at_index(options.highlighted).id

    def action_mark(self, side: str) -> None:
        """Mark the highlighted run as ``side`` (again: unmark it); a run is never both A and B."""
        run_id = self._highlighted()
        if run_id is None:
            return
        if self.marks.get(side) == run_id:
            del self.marks[side]
        else:
            self.marks = {k: v for k, v in self.marks.items() if v != run_id}
            self.marks[side] = run_id
        self._redraw_marks()

    def _mark_labels(self) -> dict[str, str]:
        """Run id → its mark: A or B (compare), ● (leaderboard), both side by side."""
        labels = {run_id: "●" for run_id in self.board_marks}
        for side, run_id in self.marks.items():
            labels[run_id] = side + labels.get(run_id, "")
        return labels

    def _redraw_marks(self) -> None:
        marked = self._mark_labels()
        options = self.query_one(OptionList)
        for run in self.shown:
            options.replace_option_prompt(
                run.run_id, run_line(run, self.current, marked.get(run.run_id, ""), self.counts.get(run.run_id))
            )

    # --- the leaderboard of any number of runs --------------------------------------------------------------
    def action_board_mark(self) -> None:
        run_id = self._highlighted()
        if run_id is None:
            return
        if run_id in self.board_marks:
            self.board_marks.remove(run_id)
        else:
            self.board_marks.append(run_id)
        self._redraw_marks()
        self.action_move(1)

    def action_leaderboard(self) -> None:
        from svgagent.core.config.prices import price_table
        from svgagent.screens.leaderboard import LeaderboardScreen

        run_ids = list(self.board_marks) or [r.run_id for r in self.shown]
        if not run_ids:
            self.notify("no runs to put side by side", severity="warning")
            return
        settings = getattr(self.app, "settings", None)
        prices = price_table(getattr(settings, "prices", None))
        self.dismiss(None)
        self.app.push_screen(LeaderboardScreen(self.store, run_ids, prices=prices))

    def action_compare(self) -> None:
        run_a = self.marks.get("A")
        run_b = self.marks.get("B") or self._highlighted()
        if run_a is None:
            self.notify("press a on the baseline run (A) first, then b on the other one", severity="warning")
            return
        if run_b is None or run_b == run_a:
            self.notify("mark run B with b, or move to the run to compare with A", severity="warning")
            return
        self.dismiss(None)
        self.app.open_compare(run_a, run_b)  # type: ignore[attr-defined]

    def action_filmstrip(self) -> None:
        from svgagent.core.analysis.filmstrip import StripColumn
        from svgagent.screens.filmstrip import open_filmstrip

        run_a = self.marks.get("A")
        run_b = self.marks.get("B") or self._highlighted()
        if run_a is None or run_b is None or run_b == run_a:
            self.notify(
                "press a on one run and b on another (or move to it): a filmstrip shows both", severity="warning"
            )
            return
        names = {r.run_id: r.name for r in self.runs}
        columns = [
            StripColumn(f"{side} · {names.get(run, run)[:30]}", run) for side, run in (("A", run_a), ("B", run_b))
        ]
        self.dismiss(None)
        open_filmstrip(self.app, self.store, columns, title="Runs A and B")
