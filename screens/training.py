"""The training view: what an RFT job's rollouts look like, step by step, as `svgagent serve` stores them.

A header names the training run (the job, or eval-protocol's experiment) with its steps and rollouts; a chart
draws one metric per step (``m`` cycles: the mean local score beside the platform's own reward and eval reward when
the job reports them, the platform's loss, each score component; tui/widgets/training_curves.py); a table lists the steps
(rollouts, finished, errors, mean local score, model, dollars), beside the picture of a rollout of the highlighted step (its
first row's); while the cursor is on the newest step it follows the steps as they arrive. It re-reads the store every second in a thread, so rollouts
stream in while the server runs. ``space`` marks a step; ``c`` compares the marked step with the highlighted one
(with none marked: the first step with the last) side by side with their pictures, on the compare screen.
A line under the sparkline sums up the evaluator's health (tui/widgets/health_summary.py), checked again whenever
the steps change; ``w`` shows it in full (screens/health.py), ``p`` picks a prompt and shows its filmstrip
(screens/filmstrip.py).

Open it from the Jobs pane (a job, then ``t``) or with ``svgagent tui --serve``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Static

from svgagent.core.analysis.health import StepRef
from svgagent.core.analysis.step_components import StepComponents, step_components
from svgagent.core.config.prices import Cost, price_table, run_cost, usd_text
from svgagent.core.rft.job_metrics import JobCurves
from svgagent.core.serve.training_runs import TrainingRun, TrainingStep, TrainingStore
from svgagent.core.store.run_store import Store
from svgagent.core.terminal_text import clipped, one_line, visible_line
from svgagent.screens.compare import open_compare
from svgagent.screens.keys_first import AppKeysFirst
from svgagent.tui.widgets.health_summary import HealthSummary
from svgagent.tui.widgets.keys_footer import KeysFooter
from svgagent.tui.widgets.picture import Picture, PictureShown
from svgagent.tui.widgets.screen_text import shown, shown_line
from svgagent.tui.widgets.training_curves import TrainingCurves

if TYPE_CHECKING:
    from svgagent.core.rft.monitor import JobView

REFRESH_S = 1.0
COLUMNS = ("step", "rollouts", "done", "errors", "local mean", "model", "$")


def _mean(step: TrainingStep) -> str:
    return "–" if step.mean_local is None else f"{step.mean_local:.3f}"


class TrainingScreen(AppKeysFirst, Screen[None]):
    SCOPED_CSS = False
    DEFAULT_CSS = """
    TrainingScreen #training-header { height: auto; padding: 0 1; background: $panel; }
    TrainingScreen #training-spark { height: 33%; min-height: 9; max-height: 16; margin: 0 1; }
    TrainingScreen #training-body { height: 1fr; }
    TrainingScreen #training-steps { height: 1fr; width: 1fr; }
    TrainingScreen #training-side { width: 45%; height: 1fr; padding: 0 1; }
    TrainingScreen #training-caption { height: auto; color: $text-muted; }
    TrainingScreen #training-hint { height: auto; padding: 0 1; color: $text-muted; }
    """
    FOOTER_DROP = ("training.refresh", "training.first_last")  # r and f still work; ? lists them
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
        Binding(
            "m",
            "next_metric",
            "Metric",
            id="training.metric",
            tooltip="Chart the next metric per step: score (local and the platform's), loss, SVG found, rendered, ...",
        ),
        Binding("p", "filmstrip", "Filmstrip", id="training.filmstrip", tooltip="One prompt's pictures at every step"),
        Binding("w", "health", "Health", id="training.health", tooltip="Evaluator health: warnings and suspects"),
    ]

    def __init__(
        self,
        store: Store,
        *,
        job_name: str | None = None,
        training_id: str | None = None,
        title: str | None = None,
        serving: str | None = None,
        platform: Callable[[], JobView | None] | None = None,
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
        self.platform = platform  # the job as the Jobs pane last polled it: its own curves (outputMetrics)
        self.components: dict[str, StepComponents] = {}
        # a step's dollars (every attempt of its run, at the price table's rates), by run id, with the (rollouts,
        # done) they were worked out at: read again only when the step changed
        self._costs: dict[str, tuple[tuple[int, int], Cost]] = {}

    def compose(self) -> ComposeResult:
        yield Static(id="training-header")
        yield TrainingCurves(id="training-spark")
        yield HealthSummary(self.store, id="training-health")
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
            components = step_components(reader, [s.run_id for s in steps])
            self._price_steps(reader, steps)
        self.app.call_from_thread(self._apply, run, steps, components)

    def _price_steps(self, reader: Store, steps: list[TrainingStep]) -> None:
        """Work out the dollars of the steps that changed since they were last priced (in the reading thread)."""
        settings = getattr(self.app, "settings", None)
        table = price_table(getattr(settings, "prices", None))
        for step in steps:
            key = (step.rollouts, step.done)
            known = self._costs.get(step.run_id)
            if known is not None and known[0] == key:
                continue
            run = reader.get_run(step.run_id)
            cost = run_cost(
                reader, step.run_id, table, step.model or run.settings.get("model"), run.settings.get("judge_model")
            )
            self._costs[step.run_id] = (key, cost)

    def _apply(
        self, run: TrainingRun | None, steps: list[TrainingStep], components: dict[str, StepComponents] | None = None
    ) -> None:
        chart = self.query_one("#training-spark", TrainingCurves)
        view = self.platform() if self.platform is not None else None
        curves = view.curves if view is not None else JobCurves()
        if components is not None and (components != self.components or curves != chart.curves):
            self.components = components
            chart.set_data(steps, components, curves)
        if run == self.training_run and steps == self.steps:
            return
        table = self.query_one("#training-steps", DataTable)
        following = not self.steps or table.cursor_row >= len(self.steps) - 1  # on the newest step: stay on it
        self.training_run, self.steps = run, steps
        self.query_one(HealthSummary).check([StepRef(s.step, s.run_id) for s in steps])
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
        cost = self._costs.get(step.run_id)
        usd = f" · step {usd_text(cost[1].total_usd)}" if cost is not None else ""  # the column may be scrolled off
        caption = shown_line(f"step {step.step} · score {score}{usd} · {prompt}")
        if record.ep_rollout_id:  # the ids the Fireworks dashboard shows: `/` finds the rollout by either
            caption.append("\n").append(
                shown_line(f"eval-protocol rollout {record.ep_rollout_id} · row {record.row_id}")
            )
        self.query_one("#training-caption", Static).update(caption)

    # --- drawing ----------------------------------------------------------------------------------------------
    def _redraw(self) -> None:
        header = self.query_one("#training-header", Static)
        hint = self.query_one("#training-hint", Static)
        chart = self.query_one("#training-spark", TrainingCurves)
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
            table.clear()
            return
        run = self.training_run
        judged = any(s.judged for s in self.steps)
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
        chart.set_data(self.steps, self.components, chart.curves)
        hint.update(
            f"chart: {chart.label()} (m: next metric)"
            + ("" if judged else " · local scores need `serve --judge`")
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
                usd_text(self._costs[s.run_id][1].total_usd) if s.run_id in self._costs else "–",
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

    def action_next_metric(self) -> None:
        self.query_one("#training-spark", TrainingCurves).cycle()
        self._redraw()

    def action_filmstrip(self) -> None:
        from svgagent.core.analysis.filmstrip import StripColumn
        from svgagent.screens.filmstrip import open_filmstrip

        if not self.steps:
            self.notify("no steps yet", title="Filmstrip", severity="warning")
            return
        picture = self.query_one("#training-picture", Picture)
        current = picture.record.row_id if picture.record is not None else ""
        columns = [StripColumn(f"step {s.step}", s.run_id, s.step) for s in self.steps]
        label = self.title_text or (self.training_run.label if self.training_run else "")
        training_id = self.training_run.training_id if self.training_run else None
        open_filmstrip(self.app, self.store, columns, title=label, current=current, training_id=training_id)

    def action_health(self) -> None:
        from svgagent.screens.health import HealthScreen

        report = self.query_one(HealthSummary).report
        if report is None:
            self.notify("no rollouts to check yet", title="Evaluator health")
            return
        label = self.title_text or (self.training_run.label if self.training_run else "")
        self.app.push_screen(HealthScreen(self.store, report, title=label))

    def action_close(self) -> None:
        self.app.pop_screen()
