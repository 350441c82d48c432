"""The Jobs pane: the account's RFT jobs and the ones launched here, polled from the control plane.

Polling follows dolphie: one fetch at a time in a thread worker; when it has finished (and its result is on the
screen) the next one is armed with ``set_timer`` — the interval after a success, a growing backoff after errors —
so slow polls never overlap. When a poll fails the last known state stays, with its age. Nothing connects until
the pane is first shown (at 80×24 that is when you open it), so start-up never waits for the network or the
Fireworks client's import. Every time shown comes from the app's injectable wall clock (``app.wall_clock``).

The source is ``source=`` or ``app.job_source``, else chosen from the settings (`job_source_for`: the simulator in
demo mode); the pane closes it when it is unmounted (that stops the demo simulator).

(Over 400 lines: polling and the job actions — cancel, resume, launch, links, eval of the output model — are one
widget, as they act on the same selection and poller; what it draws is in job_cells, the table in job_table.)
"""

from __future__ import annotations

import hashlib
import time
import webbrowser
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from rich.console import Group
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.events import Show
from textual.message import Message
from textual.timer import Timer

from svgagent.core.demo import job_source_for
from svgagent.core.rft.job_metrics import EVAL_REWARD, LABELS, REWARD
from svgagent.core.rft.job_source import (
    DEFAULT_POLL_S,
    DEMO_POLL_S,
    EVALUABLE,
    RESUMABLE,
    JobSource,
    JobsOutcome,
    JobsPoller,
)
from svgagent.tui.browser import browser_available
from svgagent.tui.widgets.curve_chart import PLATFORM_COLOURS, ChartLine, CurveChart
from svgagent.tui.widgets.job_cells import LINK_KINDS, detail_key, job_detail, status_line
from svgagent.tui.widgets.job_table import JobTable
from svgagent.tui.widgets.text_box import TextBox

if TYPE_CHECKING:
    from svgagent.core.rft.launch import LaunchResult
    from svgagent.core.rft.monitor import JobView


CHART_MIN_PANE_ROWS = 30  # a pane at least this tall shows the selected job's curves as a chart too


class JobPanel(Vertical):
    PALETTE_TITLE = "Jobs"  # its keys in the command palette (tui/palette_commands.py)
    DEFAULT_CSS = """
    JobPanel { height: 1fr; }
    JobPanel > #jobs-status { height: 1; padding: 0 1; }
    JobPanel > #jobs-detail-box { height: 1fr; padding: 0 1; }
    JobPanel #jobs-detail { height: auto; }
    JobPanel > #jobs-chart { height: 1fr; min-height: 12; display: none; margin: 0 1; }
    JobPanel.-curves > #jobs-chart { display: block; }
    JobPanel.-curves > #jobs-detail-box { height: auto; max-height: 50%; }
    """
    BINDINGS = [
        Binding("u", "refresh_jobs", "Refresh", id="jobs.refresh", tooltip="Fetch the RFT jobs now"),
        Binding(
            "n",
            "new_job",
            "New job",
            id="jobs.new",
            tooltip="Launch an RFT job: hyperparameters, a dry-run preview, then confirm",
        ),
        Binding("K", "cancel_job", "Cancel", id="jobs.cancel", tooltip="Cancel the selected job (asks first)"),
        Binding(
            "p",
            "resume_job",
            "Resume",
            id="jobs.resume",
            tooltip="Resume the selected job (cancelled, failed or paused)",
        ),
        Binding(
            "e",
            "eval_output",
            "Eval",
            id="jobs.eval_output",
            tooltip="Start a run of the job's output model on the Config's dataset (compare with the base model)",
        ),
        Binding(
            "v",
            "evaluate",
            "Before/after",
            id="jobs.evaluate",
            tooltip="Deploy the trained model (its cost asked first), run it and its base model on the held-out rows, "
            "compare them with pictures",
        ),
        Binding(
            "t",
            "training",
            "Training",
            id="jobs.training",
            tooltip="The job's rollouts step by step, with pictures (served by `svgagent serve`)",
        ),
        Binding(
            "y",
            "copy_link",
            "Copy",
            id="jobs.copy_link",
            tooltip="Copy the selected dashboard link to the clipboard (OSC 52)",
        ),
        Binding(
            "b",
            "open_link",
            "Browser",
            id="jobs.open_link",
            tooltip="Open the selected dashboard link in a web browser, when this machine has one",
        ),
        Binding(
            "l",
            "next_link",
            "Next link",
            id="jobs.next_link",
            show=False,
            tooltip="Select the job, dataset or evaluator link",
        ),
    ]

    class Polled(Message):
        """A poll (or an action on one job) finished; ``note`` is said to the user."""

        def __init__(
            self,
            poller: JobsPoller,
            outcome: JobsOutcome,
            note: str = "",
            poll_again: bool = False,
            select: str | None = None,
        ) -> None:
            super().__init__()
            self.poller, self.outcome, self.note = poller, outcome, note
            self.poll_again, self.select = poll_again, select

    class ActionFailed(Message):
        def __init__(self, title: str, error: str) -> None:
            super().__init__()
            self.title, self.error = title, error

    # What the pane asks of its screen (widgets never open screens themselves):
    class CancelRequested(Message):
        """Cancel ``view``'s job once the person confirms; the screen calls `JobPanel.cancel`."""

        def __init__(self, panel: JobPanel, view: JobView) -> None:
            super().__init__()
            self.panel, self.view = panel, view

    class LaunchRequested(Message):
        """Open the launch screen for ``source``; a launch there is handed back with `JobPanel.job_launched`."""

        def __init__(self, panel: JobPanel, source: JobSource) -> None:
            super().__init__()
            self.panel, self.source = panel, source

    class EvalRequested(Message):
        """Start a run of ``model`` (the output model of ``view``'s job) on the Config's dataset."""

        def __init__(self, panel: JobPanel, view: JobView, model: str) -> None:
            super().__init__()
            self.panel, self.view, self.model = panel, view, model

    class EvaluateRequested(Message):
        """Evaluate ``view``'s trained model against its base model on the held-out rows (its screen)."""

        def __init__(self, panel: JobPanel, view: JobView) -> None:
            super().__init__()
            self.panel, self.view = panel, view

    class TrainingRequested(Message):
        """Open the training view of ``view``'s job (the rollouts `svgagent serve` stored for it)."""

        def __init__(self, panel: JobPanel, view: JobView) -> None:
            super().__init__()
            self.panel, self.view = panel, view

    def __init__(
        self,
        *,
        id: str | None = None,
        source: JobSource | None = None,  # noqa: A002
        interval: float | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        super().__init__(id=id)
        self._given_source = source
        self._interval = interval
        self._clock = clock
        self.source: JobSource | None = None
        self.poller: JobsPoller | None = None
        self.views: tuple[JobView, ...] = ()
        self.outcome: JobsOutcome | None = None
        self.link = "job"
        self.polls = 0
        self._started = False
        self._fetching = False
        self._again = False
        self._timer: Timer | None = None
        self._next_at: float | None = None
        self._derived_from: tuple[object, ...] | None = None
        self._key_state: tuple[object, ...] = ()

    # --- configuration (constructor first, then the app's) ------------------------------------------------
    @property
    def clock(self) -> Callable[[], float]:
        return self._clock or getattr(self.app, "wall_clock", None) or time.time

    @property
    def interval(self) -> float:
        if self._interval is not None:
            return self._interval
        configured = getattr(self.app, "job_poll_s", None)
        if configured:
            return float(configured)
        return DEMO_POLL_S if self.source is not None and self.source.demo else DEFAULT_POLL_S

    def compose(self) -> ComposeResult:
        yield TextBox(Text("not connected yet", style="dim"), id="jobs-status")
        yield JobTable(id="jobs-table")
        with VerticalScroll(id="jobs-detail-box"):  # tab reaches it: the arrows scroll a long detail
            yield TextBox(id="jobs-detail")
        yield CurveChart(id="jobs-chart")

    def on_show(self, event: Show) -> None:
        self.start()

    def on_mount(self) -> None:
        self.set_interval(1.0, self._tick)

    def on_unmount(self) -> None:
        self._stop_timer()
        if self.source is not None:
            self.source.close()

    # --- source and polling -------------------------------------------------------------------------------
    def _source_key(self) -> tuple[object, ...]:
        app: Any = self.app
        settings = getattr(app, "settings", None)
        key = getattr(settings, "fireworks_api_key", None)
        digest = hashlib.sha256(key.get_secret_value().encode()).hexdigest() if key is not None else None
        return (bool(getattr(app, "demo", False)), digest)  # a digest: no second copy of the key

    def _make_source(self) -> JobSource:
        app: Any = self.app
        given = self._given_source or getattr(app, "job_source", None)
        if given is not None:
            self._derived_from = None
            return given
        self._derived_from = self._source_key()
        return job_source_for(app.settings, demo=app.demo, store=getattr(app, "store", None))

    def start(self) -> None:
        """Connect and poll (once; later calls do nothing). Happens when the pane is first shown."""
        if self._started:
            return
        self._started = True
        self._use(self._make_source())

    def _use(self, source: JobSource) -> None:
        self._stop_timer()
        self._fetching = self._again = False  # a fetch still running for an old source is ignored when it ends
        self.source = source
        self.views, self.outcome = (), None
        self.query_one(JobTable).show((), self.clock())
        if not source.available:
            self.poller = None
            self._redraw()
            return
        self.poller = JobsPoller(source, interval=self.interval, clock=self.clock)
        self._redraw()
        self.poll()

    def poll(self) -> None:
        """Fetch now, unless a fetch is already running (then fetch again as soon as it is done)."""
        if self.poller is None:
            return
        if self._fetching:
            self._again = True
            return
        self._stop_timer()
        self._fetching = True
        self.run_worker(
            partial(self._poll_in_thread, self.poller),
            thread=True,
            name="RFT job poll",
            group="jobs-poll",
            exit_on_error=False,
        )

    def _poll_in_thread(self, poller: JobsPoller) -> None:
        outcome = poller.poll()
        self.post_message(self.Polled(poller, outcome))

    def _stop_timer(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self._next_at = None

    def _quiet(self, delay: float) -> float:
        """While no job moves (none, or all ended or paused) polls come at most every DEFAULT_POLL_S seconds (the
        demo's 2 s is for watching its job move): an idle app does not keep fetching the same list."""
        if all(view.stops_watching for view in self.views):
            return max(delay, DEFAULT_POLL_S)
        return delay

    def _arm(self, delay: float) -> None:
        self._stop_timer()
        self._next_at = self.clock() + delay
        self._timer = self.set_timer(delay, self.poll, name="jobs-poll")

    def on_job_panel_polled(self, message: Polled) -> None:
        message.stop()
        if message.poller is not self.poller:
            return  # from a source that has been replaced
        is_poll = not message.note and not message.poll_again
        if is_poll:
            self._fetching = False
            self.polls += 1
        self.outcome = message.outcome
        self.views = message.outcome.views
        again = message.poll_again or self._again
        if is_poll and not again and not message.outcome.fatal:
            self._arm(self._quiet(message.outcome.delay))  # the next poll: only now that this one is done
        with self.app.batch_update():
            table = self.query_one(JobTable)
            table.show(self.views, self.clock())
            if message.select:
                table.select(message.select)
            self._redraw()
        if message.note:
            self.notify(message.note, title="RFT job", timeout=5)
        if again:
            self._again = False
            self.poll()

    def on_job_panel_action_failed(self, message: ActionFailed) -> None:
        message.stop()
        self.notify(message.error, title=message.title, severity="error", timeout=10)

    # --- drawing ------------------------------------------------------------------------------------------
    @property
    def selected_view(self) -> JobView | None:
        name = self.query_one(JobTable).selected
        return next((v for v in self.views if v.name == name), None)

    @on(JobTable.Highlighted, "#jobs-table")
    def _job_highlighted(self, event: JobTable.Highlighted) -> None:
        event.stop()
        self._redraw()

    def _tick(self) -> None:
        if self.source is None or not self.source.available:
            return
        running = [v for v in self.views if not v.terminal]
        if running:
            self.query_one(JobTable).show(self.views, self.clock())
        self._redraw()

    def _redraw(self) -> None:
        """Show the status line and the detail; a part whose text is unchanged is not touched (the pane ticks every
        second: an idle app must not lay the screen out again for nothing)."""
        now = self.clock()
        source, outcome, view = self.source, self.outcome, self.selected_view
        if source is None:
            self._show("#jobs-status", Text("not connected yet", style="dim"))
            self._show("#jobs-detail", Text(""))
            return
        if not source.available:
            self._show("#jobs-status", Text("not connected", style="dim"))
            self._show("#jobs-detail", Text(source.unavailable or "", style="yellow"))
            self._keys_changed()
            return
        error = outcome.error if outcome is not None else None
        next_in = None if self._next_at is None else max(0.0, self._next_at - now)
        self._show(
            "#jobs-status",
            status_line(
                count=len(self.views),
                updated_at=outcome.updated_at if outcome else None,
                now=now,
                error=str(error) if error else None,
                fatal=bool(outcome and outcome.fatal),
                next_in=next_in,
                connecting=outcome is None,
            ),
        )
        key = (
            str(error) if error is not None else None,
            outcome is None,
            bool(self.views),
            source.label,
            detail_key(view, now, self.link) if view is not None else None,
        )
        self._show("#jobs-detail", key, lambda: self._detail(view, now))
        self._chart(view)
        self._keys_changed()

    def on_resize(self) -> None:
        self._chart(self.selected_view)

    def _chart(self, view: JobView | None) -> None:
        """The selected job's own reward and eval reward per step as a chart, when the pane is tall enough for one
        beside the job's details (zoomed with +, or a tall terminal); the details always show them as sparklines."""
        curves = view.curves if view is not None else None
        tall = self.size.height >= CHART_MIN_PANE_ROWS
        self.set_class(bool(curves and curves.series) and tall, "-curves")
        if curves and tall:
            lines = [
                ChartLine(f"platform {LABELS[name]}", curves.series.get(name, ()), PLATFORM_COLOURS[name])
                for name in (REWARD, EVAL_REWARD)  # in 0..1; the loss has its line in the details
            ]
            self.query_one("#jobs-chart", CurveChart).show(lines, title="the job's own metrics per step", share=True)

    def _detail(self, view: JobView | None, now: float) -> Group:
        outcome, error = self.outcome, self.outcome.error if self.outcome is not None else None
        parts: list[Any] = []
        if error is not None:
            parts.append(
                Text(f"{'Cannot list RFT jobs' if not self.views else 'Last poll failed'}: {error}", style="yellow")
            )
        if outcome is None:
            parts.append(Text(f"fetching RFT jobs from the {self.source.label if self.source else '?'}…", style="dim"))
        elif view is not None:
            parts.append(job_detail(view, now, self.link))
        elif not self.views and error is None:
            parts.append(Text("No RFT jobs in this account yet: press n to launch one.", style="dim"))
        return Group(*parts)

    def _show(self, selector: str, key: object, content: Callable[[], Any] | None = None) -> None:
        """Show ``content()`` (or ``key``, a Text) in the part ``selector`` unless it already shows ``key``; the
        screen is laid out again only when the part's height changes (the elapsed time ticking: a repaint)."""
        box = self.query_one(selector, TextBox)
        if content is None:
            box.show(key)
        else:
            box.show(content, key=key)

    def _keys_changed(self) -> None:
        view = self.selected_view
        state = (view.name, view.state, bool(view.output_model), tuple(view.links)) if view else None
        key = (state, self.source is not None and self.source.available)
        if key != self._key_state:
            self._key_state = key
            self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Show only the keys that apply to the selected job, so the Footer fits."""
        view = self.selected_view
        if action == "cancel_job":
            return view is not None and not view.terminal and view.state != "CANCELLING"
        if action == "resume_job":
            return view is not None and view.state in RESUMABLE
        if action == "eval_output":
            return view is not None and bool(view.output_model) and view.state in EVALUABLE
        if action in ("copy_link", "open_link", "next_link"):
            return view is not None and bool(view.links)
        return True

    # --- actions ------------------------------------------------------------------------------------------
    def action_refresh_jobs(self) -> None:
        if not self._started:
            self.start()
            return
        if self._derived_from is not None and self._source_key() != self._derived_from:
            if self.source is not None:
                self.source.close()  # keys saved or demo mode left: connect again with the new settings
            self._use(self._make_source())
            return
        if self.source is not None and not self.source.available:
            self.notify(self.source.unavailable or "not connected", severity="warning", timeout=6)
            return
        self.poll()

    def _need_view(self) -> JobView | None:
        self.start()
        view = self.selected_view
        if view is None:
            self.notify("no RFT job selected", severity="warning", timeout=3)
        return view

    def _act(self, title: str, work: Callable[[JobSource], dict[str, Any]], note: Callable[[JobView], str]) -> None:
        poller = self.poller
        if poller is None:
            return

        def run() -> None:
            from svgagent.core.rft.fireworks_api import FireworksError

            try:
                job = work(poller.source)
            except FireworksError as err:
                self.post_message(self.ActionFailed(title, str(err)))
                return
            outcome = poller.put(job)
            view = next((v for v in outcome.views if v.name == job.get("name")), None)
            self.post_message(self.Polled(poller, outcome, note=note(view) if view else title, poll_again=True))

        self.run_worker(run, thread=True, name=title, group="jobs-action", exit_on_error=False)

    def action_cancel_job(self) -> None:
        view = self._need_view()
        if view is None:
            return
        if view.terminal:
            self.notify(f"{view.job_id} has already ended ({view.state})", severity="warning", timeout=4)
            return

        self.post_message(self.CancelRequested(self, view))

    def cancel(self, view: JobView) -> None:
        """Cancel ``view``'s job (the screen asked the person first: see `CancelRequested`)."""
        self._act(
            f"cancel {view.job_id}",
            lambda source: source.cancel(view.name),
            lambda v: f"cancel requested: {v.job_id} is {v.phase}",
        )

    def action_resume_job(self) -> None:
        view = self._need_view()
        if view is None:
            return
        if view.state not in RESUMABLE:
            self.notify(
                f"{view.job_id} is {view.phase}: only cancelled, failed or paused jobs can be resumed",
                severity="warning",
                timeout=5,
            )
            return
        self._act(
            f"resume {view.job_id}",
            lambda source: source.resume(view.name),
            lambda v: f"resumed: {v.job_id} is {v.phase}",
        )

    def action_new_job(self) -> None:
        self.start()
        source = self.source
        if source is None or not source.available:
            self.notify(
                source.unavailable if source else "not connected", title="Cannot launch", severity="warning", timeout=8
            )
            return
        self.post_message(self.LaunchRequested(self, source))

    def job_launched(self, result: LaunchResult) -> None:
        """A launch from the launch screen succeeded: show its job at once, then poll."""
        poller = self.poller
        if poller is None:
            return
        self.post_message(self.Polled(poller, poller.put(result.job), poll_again=True, select=result.job_name))

    def _link(self) -> tuple[str, str] | None:
        view = self._need_view()
        if view is None:
            return None
        if not view.links:
            self.notify("this job has no links yet", severity="warning", timeout=3)
            return None
        kind = self.link if self.link in view.links else next(iter(view.links))
        return kind, view.links[kind]

    def action_copy_link(self) -> None:
        link = self._link()
        if link is None:
            return
        self.app.copy_to_clipboard(link[1])
        self.notify(
            f"{link[1]}\n(sent with OSC 52: your terminal must allow clipboard writes)",
            title=f"Copied the {link[0]} link",
            timeout=5,
        )

    def action_open_link(self) -> None:
        link = self._link()
        if link is None:
            return
        if not browser_available():
            self.notify(
                f"No web browser on this machine (over SSH there usually is none): press y to copy the "
                f"{link[0]} link instead.\n{link[1]}",
                title="Cannot open",
                severity="warning",
                timeout=8,
            )
            return
        if webbrowser.open(link[1], new=2):
            self.notify(link[1], title=f"Opened the {link[0]} link", timeout=4)
        else:
            self.notify(f"the browser did not start: press y to copy the link\n{link[1]}", severity="warning")

    def action_next_link(self) -> None:
        view = self._need_view()
        if view is None or not view.links:
            return
        kinds = [k for k in LINK_KINDS if k in view.links]
        current = self.link if self.link in kinds else kinds[0]
        self.link = kinds[(kinds.index(current) + 1) % len(kinds)]
        self._redraw()

    def action_training(self) -> None:
        view = self._need_view()
        if view is not None:
            self.post_message(self.TrainingRequested(self, view))

    def action_evaluate(self) -> None:
        view = self._need_view()
        if view is None:
            return
        if not view.output_model or view.state not in EVALUABLE:
            self.notify(f"{view.job_id} has no trained model yet ({view.phase})", severity="warning", timeout=4)
            return
        self.post_message(self.EvaluateRequested(self, view))

    def action_eval_output(self) -> None:
        """Point the Config's model at the job's output model and start a run of it (the dashboard's run
        action), named `eval of <model>`, on the Config's dataset — compare it with a run of the base model."""
        view = self._need_view()
        if view is None:
            return
        model = view.output_model
        if not model or view.state not in EVALUABLE:
            self.notify(f"{view.job_id} has no trained model yet ({view.phase})", severity="warning", timeout=4)
            return
        self.post_message(self.EvalRequested(self, view, model))
