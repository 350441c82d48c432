"""The training view: what an RFT job's rollouts look like, step by step, as `svgagent serve` stores them.

A header names the training run (the job, or eval-protocol's experiment) with its steps and rollouts; a sparkline
draws the mean local score per step (``serve --judge``; otherwise the rollouts per step); a table lists the steps
(rollouts, finished, errors, mean local score, model), beside the picture of a rollout of the highlighted step (its
first row's); while the cursor is on the newest step it follows the steps as they arrive. It re-reads the store every second in a thread, so rollouts
stream in while the server runs. ``space`` marks a step; ``c`` compares the marked step with the highlighted one
(with none marked: the first step with the last) side by side with their pictures, on the compare screen.

Open it from the Jobs pane (a job, then ``t``) or with ``svgagent tui --serve``.
"""

from __future__ import annotations

from typing import Any

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Sparkline, Static

from svgagent.core.serve.training_runs import TrainingRun, TrainingStep, TrainingStore
from svgagent.core.store.run_store import Store
from svgagent.core.terminal_text import clipped, one_line, visible_line
from svgagent.screens.compare import open_compare
from svgagent.screens.keys_first import AppKeysFirst
from svgagent.tui.widgets.keys_footer import KeysFooter
from svgagent.tui.widgets.picture import Picture, PictureShown
from svgagent.tui.widgets.screen_text import shown, shown_line

REFRESH_S = 1.0
COLUMNS = ("step", "rollouts", "done", "errors", "local mean", "model")


def _mean(step: TrainingStep) -> str:
    return "–" if step.mean_local is None else f"{step.mean_local:.3f}"


class TrainingScreen(AppKeysFirst, Screen[None]):
    SCOPED_CSS = False
    DEFAULT_CSS = """
    TrainingScreen #training-header { height: auto; padding: 0 1; background: $panel; }
    TrainingScreen #training-spark { height: 3; margin: 0 1; }
    TrainingScreen #training-body { height: 1fr; }
    TrainingScreen #training-steps { height: 1fr; width: 1fr; }
    TrainingScreen #training-side { width: 45%; height: 1fr; padding: 0 1; }
    TrainingScreen #training-caption { height: auto; color: $text-muted; }
    TrainingScreen #training-hint { height: auto; padding: 0 1; color: $text-muted; }
    """
    BINDINGS = [
        Binding("escape,q", "close", "Back", id="training.back"),
        Binding("space", "mark", "Mark", id="training.mark", tooltip="Mark the highlighted step as side A"),
        Binding(
            "c",
            "compare",
            "Compare",
            id="training.compare",
            tooltip="Compare the marked step (or the first) with the highlighted one (or the last), with pictures",
        ),
        Binding(
            "f", "first_last", "First↔last", id="training.first_last", tooltip="Compare the first step with the last"
        ),
        Binding("r", "refresh", "Refresh", id="training.refresh", tooltip="Read the store again now"),
    ]

    def __init__(
        self,
        store: Store,
        *,
        job_name: str | None = None,
        training_id: str | None = None,
        title: str | None = None,
        serving: str | None = None,
    ) -> None:
        super().__init__()
        self.store = store
        self.job_name = job_name
        self.training_id = training_id
        self.title_text = title
        self.serving = serving
        self.training_run: TrainingRun | None = None
        self.steps: list[TrainingStep] = []
        self.marked: int | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="training-header")
        yield Sparkline([], id="training-spark")
        with Horizontal(id="training-body"):
            table: DataTable[str] = DataTable(id="training-steps", cursor_type="row", zebra_stripes=True)
            yield table
            with Vertical(id="training-side"):
                yield Static("", id="training-caption", markup=False)
                yield Picture(self.store, id="training-picture", on_shown=self._picture_shown)
        yield Static(id="training-hint")
        yield KeysFooter()

    def on_mount(self) -> None:
        table = self.query_one("#training-steps", DataTable)
        for name in COLUMNS:
            table.add_column(name, key=name)
        self._redraw()
        self.action_refresh()
        self.set_interval(REFRESH_S, self.action_refresh)

    # --- reading ----------------------------------------------------------------------------------------------
    def action_refresh(self) -> None:
        self._load()

    @work(thread=True, exclusive=True, group="training-read")
    def _load(self) -> None:
        with self.store.reader() as reader:
            training = TrainingStore(reader)
            runs = (
                training.trainings(self.job_name)
                if self.training_id is None
                else [r for r in training.trainings() if r.training_id == self.training_id]
            )
            run = runs[0] if runs else None
            steps = training.steps(run.training_id) if run is not None else []
        self.app.call_from_thread(self._apply, run, steps)

    def _apply(self, run: TrainingRun | None, steps: list[TrainingStep]) -> None:
        if run == self.training_run and steps == self.steps:
            return
        table = self.query_one("#training-steps", DataTable)
        following = not self.steps or table.cursor_row >= len(self.steps) - 1  # on the newest step: stay on it
        self.training_run, self.steps = run, steps
        self._redraw()
        if following and steps:
            table.move_cursor(row=len(steps) - 1)
        self._show_step()

    # --- the highlighted step's picture -----------------------------------------------------------------------
    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_step()

    def on_resize(self) -> None:
        side = self.query_one("#training-side")
        self.query_one("#training-picture", Picture).fit(side.size.width - 2, side.size.height - 2)

    def _show_step(self) -> None:
        step = self._highlighted()
        if step is None:
            self.query_one("#training-caption", Static).update("")
            self.query_one("#training-picture", Picture).show(None)
            return
        self._pick(step)

    @work(thread=True, exclusive=True, group="training-pick")
    def _pick(self, step: TrainingStep) -> None:
        with self.store.reader() as reader:
            rollout = TrainingStore(reader).step_picture(step.run_id)
        self.app.call_from_thread(self._picked, step, rollout)

    def _picked(self, step: TrainingStep, rollout_id: str | None) -> None:
        current = self._highlighted()
        if current is None or current.step != step.step:
            return
        picture = self.query_one("#training-picture", Picture)
        if rollout_id is None:
            self.query_one("#training-caption", Static).update(f"step {step.step}: no picture yet")
            picture.show(None)
            return
        if rollout_id != picture.rollout_id:
            picture.show(rollout_id)

    def _picture_shown(self, event: PictureShown) -> None:
        record, step = event.record, self._highlighted()
        if record is None or step is None:
            return
        score = "–" if record.effective_score is None else f"{record.effective_score:.2f}"
        prompt = clipped(one_line(record.prompt), 60, words=True)
        caption = shown_line(f"step {step.step} · score {score} · {prompt}")
        if record.ep_rollout_id:  # the ids the Fireworks dashboard shows: `/` finds the rollout by either
            caption.append("\n").append(
                shown_line(f"eval-protocol rollout {record.ep_rollout_id} · row {record.row_id}")
            )
        self.query_one("#training-caption", Static).update(caption)

    # --- drawing ----------------------------------------------------------------------------------------------
    def _redraw(self) -> None:
        header = self.query_one("#training-header", Static)
        hint = self.query_one("#training-hint", Static)
        spark = self.query_one("#training-spark", Sparkline)
        table = self.query_one("#training-steps", DataTable)
        serving = f" · serving on {self.serving}" if self.serving else ""
        if self.training_run is None:
            who = self.title_text or self.job_name or "this server"
            header.update(shown(f"Training view · {visible_line(who)}{visible_line(serving)}\nno served rollouts yet"))
            hint.update(
                shown(
                    f"Launch a job from the Jobs pane (5, then n) with its rollout server {self.serving}: its "
                    "rollouts appear here, step by step."
                    if self.serving
                    else "Point the job's evaluator at `svgagent serve` (rft create --rollouts remote --remote-url "
                    "URL; serve --job NAME): its rollouts appear here, step by step."
                )
            )
            spark.data = []
            table.clear()
            return
        run = self.training_run
        judged = any(s.judged for s in self.steps)
        means = [s.mean_local or 0.0 for s in self.steps] if judged else [float(s.rollouts) for s in self.steps]
        first, last = (self.steps[0], self.steps[-1]) if self.steps else (None, None)
        trend = ""
        if judged and first is not None and last is not None:
            trend = f" · local mean step {first.step}: {_mean(first)} → step {last.step}: {_mean(last)}"
        header.update(  # the training's label and models come from the rollout server's requests: outside text
            shown(
                f"Training view · {visible_line(self.title_text or run.label)}{visible_line(serving)}\n"
                f"{len(self.steps)} steps · {run.rollouts} rollouts{trend}"
            )
        )
        spark.data = means
        hint.update(
            (
                "sparkline: mean local score per step"
                if judged
                else "sparkline: rollouts per step (scores come from the platform; `serve --judge` adds local ones)"
            )
            + (f" · marked: step {self.marked}" if self.marked is not None else "")
        )
        self._fill(table)

    def _fill(self, table: DataTable[Any]) -> None:
        keep = table.cursor_row
        table.clear()
        for s in self.steps:
            mark = "▶ " if s.step == self.marked else ""
            table.add_row(
                f"{mark}{s.step}",
                str(s.rollouts),
                str(s.done),
                str(s.failed),
                _mean(s),
                shown_line(clipped(s.model or "", 28, keep="end")),  # a checkpoint's name ends with its step
                key=str(s.step),
            )
        if self.steps:
            table.move_cursor(row=min(max(keep, 0), len(self.steps) - 1))

    # --- actions ----------------------------------------------------------------------------------------------
    def _highlighted(self) -> TrainingStep | None:
        table = self.query_one("#training-steps", DataTable)
        if not self.steps or table.cursor_row < 0:
            return None
        return self.steps[min(table.cursor_row, len(self.steps) - 1)]

    def action_mark(self) -> None:
        step = self._highlighted()
        if step is None:
            return
        self.marked = None if self.marked == step.step else step.step
        self._redraw()

    def action_compare(self) -> None:
        if len(self.steps) < 2:
            self.notify("a comparison needs two steps", title="Training", severity="warning")
            return
        by_step = {s.step: s for s in self.steps}
        current = self._highlighted()
        if self.marked is not None and current is not None and current.step != self.marked:
            a, b = by_step[self.marked], current
        else:
            a, b = self.steps[0], self.steps[-1]
        open_compare(self.app, a.run_id, b.run_id)

    def action_first_last(self) -> None:
        if len(self.steps) < 2:
            self.notify("a comparison needs two steps", title="Training", severity="warning")
            return
        open_compare(self.app, self.steps[0].run_id, self.steps[-1].run_id)

    def action_close(self) -> None:
        self.app.pop_screen()
