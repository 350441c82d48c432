"""What the Jobs pane's keys do: cancel (after a confirmation), resume, launch a new job, copy or open a dashboard
link, and evaluate a trained model. A mixin of :class:`~svgagent.tui.widgets.job_panel.JobPanel`, kept apart so
each module stays small; network calls run in thread workers and come back as ``JobPanel.Polled`` messages."""

from __future__ import annotations

import hashlib
import webbrowser
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .job_cells import LINK_KINDS
from .job_source import RESUMABLE, JobSource

if TYPE_CHECKING:
    from svgagent.core.rft_launch import LaunchResult
    from svgagent.core.rft_monitor import JobView

    from .job_panel import JobPanel

EVALUABLE = frozenset({"COMPLETED", "EARLY_STOPPED"})


def browser_available() -> bool:
    """True when `webbrowser` would open a graphical browser; a console browser (lynx, w3m) would take over this
    terminal, and over SSH there is usually none at all."""
    try:
        browser = webbrowser.get()
    except webbrowser.Error:
        return False
    if isinstance(browser, webbrowser.GenericBrowser) and not isinstance(browser, webbrowser.BackgroundBrowser):
        return False
    return not (isinstance(browser, webbrowser.UnixBrowser) and not browser.background)


class JobActions:
    """Action handlers; ``self`` is the JobPanel."""

    def _need_view(self: JobPanel) -> JobView | None:
        self.start()
        view = self.selected_view
        if view is None:
            self.notify("no RFT job selected", severity="warning", timeout=3)
        return view

    def _act(self: JobPanel, title: str, work: Callable[[JobSource], dict[str, Any]],
             note: Callable[[JobView], str]) -> None:
        poller = self.poller
        if poller is None:
            return

        def run() -> None:
            from svgagent.core.fireworks_api import FireworksError

            try:
                job = work(poller.source)
            except FireworksError as err:
                self.post_message(self.ActionFailed(title, str(err)))
                return
            outcome = poller.put(job)
            view = next((v for v in outcome.views if v.name == job.get("name")), None)
            self.post_message(self.Polled(poller, outcome, note=note(view) if view else title, poll_again=True))

        self.run_worker(run, thread=True, name=title, group="jobs-action", exit_on_error=False)

    def action_cancel_job(self: JobPanel) -> None:
        view = self._need_view()
        if view is None:
            return
        if view.terminal:
            self.notify(f"{view.job_id} has already ended ({view.state})", severity="warning", timeout=4)
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self._act(f"cancel {view.job_id}", lambda source: source.cancel(view.name),
                          lambda v: f"cancel requested: {v.job_id} is {v.phase}")

        from svgagent.screens.confirm import Confirm

        self.app.push_screen(Confirm(f"Cancel RFT job {view.job_id}?",
                                     f"{view.display_name or view.job_id} is {view.phase}"
                                     f"{f' at {view.percent}%' if view.percent is not None else ''}. Its training "
                                     "stops; p resumes it later from where it stopped.",
                                     yes="cancel the job", no="keep it running"), answered)

    def action_resume_job(self: JobPanel) -> None:
        view = self._need_view()
        if view is None:
            return
        if view.state not in RESUMABLE:
            self.notify(f"{view.job_id} is {view.phase}: only cancelled, failed or paused jobs can be resumed",
                        severity="warning", timeout=5)
            return
        self._act(f"resume {view.job_id}", lambda source: source.resume(view.name),
                  lambda v: f"resumed: {v.job_id} is {v.phase}")

    def action_new_job(self: JobPanel) -> None:
        self.start()
        source = self.source
        if source is None or not source.available:
            self.notify(source.unavailable if source else "not connected", title="Cannot launch",
                        severity="warning", timeout=8)
            return
        from svgagent.screens.rft_launch import RftLaunchScreen

        app: Any = self.app
        self.app.push_screen(RftLaunchScreen(source, app.settings, on_launched=self.job_launched))

    def job_launched(self: JobPanel, result: LaunchResult) -> None:
        """A launch from the launch screen succeeded: show its job at once, then poll."""
        poller = self.poller
        if poller is None:
            return
        self.post_message(self.Polled(poller, poller.put(result.job), poll_again=True, select=result.job_name))

    def _link(self: JobPanel) -> tuple[str, str] | None:
        view = self._need_view()
        if view is None:
            return None
        if not view.links:
            self.notify("this job has no links yet", severity="warning", timeout=3)
            return None
        kind = self.link if self.link in view.links else next(iter(view.links))
        return kind, view.links[kind]

    def action_copy_link(self: JobPanel) -> None:
        link = self._link()
        if link is None:
            return
        self.app.copy_to_clipboard(link[1])
        self.notify(f"{link[1]}\n(sent with OSC 52: your terminal must allow clipboard writes)",
                    title=f"Copied the {link[0]} link", timeout=5)

    def action_open_link(self: JobPanel) -> None:
        link = self._link()
        if link is None:
            return
        if not browser_available():
            self.notify(f"No web browser on this machine (over SSH there usually is none): press y to copy the "
                        f"{link[0]} link instead.\n{link[1]}", title="Cannot open", severity="warning", timeout=8)
            return
        if webbrowser.open(link[1], new=2):
            self.notify(link[1], title=f"Opened the {link[0]} link", timeout=4)
        else:
            self.notify(f"the browser did not start: press y to copy the link\n{link[1]}", severity="warning")

    def action_next_link(self: JobPanel) -> None:
        view = self._need_view()
        if view is None or not view.links:
            return
        kinds = [k for k in LINK_KINDS if k in view.links]
        current = self.link if self.link in kinds else kinds[0]
        self.link = kinds[(kinds.index(current) + 1) % len(kinds)]
        self._redraw()

    def action_eval_output(self: JobPanel) -> None:
        """Point the Config's model at the job's output model and start a run of it (the dashboard's run
        action), named `eval of <model>`, on the Config's dataset — compare it with a run of the base model."""
        view = self._need_view()
        if view is None:
            return
        model = view.output_model
        if not model or view.state not in EVALUABLE:
            self.notify(f"{view.job_id} has no trained model yet ({view.phase})", severity="warning", timeout=4)
            return
        app: Any = self.app
        if app.control.running:
            self.notify("a run is in progress: press s to stop it first", severity="warning")
            return
        start = getattr(self.screen, "action_start_run", None)
        if start is None:
            return
        app.settings = app.settings.model_copy(update={"model": model})
        try:
            from textual.widgets import Input

            self.screen.query_one("#config-form #field-model", Input).value = model
        except Exception:  # noqa: BLE001 - no Config form (or no model field): the settings are enough
            pass
        same = same_dataset(app.settings, view)
        start(name=f"eval of {model}")
        if same is False:
            self.notify(f"{view.job_id} trained on another dataset than the Config's ({app.settings.dataset}"
                        f"{f', {app.settings.rows} rows' if app.settings.rows else ''}): the eval uses the Config's",
                        title="Dataset", severity="warning", timeout=8)


def same_dataset(settings: Any, view: JobView) -> bool | None:
    """Whether the Config's dataset (with its row limit) is the one ``view``'s job trained on: launches name the
    Fireworks dataset after the SHA-256 of its rows (see `prepare_launch`). None when it cannot be told."""
    dataset_id = view.links.get("dataset", "").rsplit("/", 1)[-1]
    if not dataset_id:
        return None
    try:
        from svgagent.core.dataset import load_dataset, select_rows
        from svgagent.core.rft_launch import dataset_jsonl

        rows = select_rows(load_dataset(settings.dataset), settings.rows)
    except Exception:  # noqa: BLE001 - the run action reports a bad dataset itself
        return None
    return dataset_id.endswith("-" + hashlib.sha256(dataset_jsonl(rows)).hexdigest()[:12])
