"""The dashboard's run actions — start, stop, resume, rerun, open, full image — and what follows a run's end.

A mixin of :class:`~svgagent.screens.dashboard.Dashboard`, kept apart so each module stays small.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.app import SuspendNotSupported

from svgagent.core.dataset import load_dataset
from svgagent.core.errors import SvgAgentError

from ..tui.imaging import show_full_resolution
from ..tui.run_control import RunEnded
from ..tui.widgets.preview import Preview
from ..tui.widgets.rollout_table import RolloutTable
from .rollout_detail import RolloutDetail
from .run_picker import RunPicker

if TYPE_CHECKING:
    from .dashboard import Dashboard


def _names(missing: list[str]) -> str:
    return " and ".join(missing) + (" is" if len(missing) == 1 else " are")


class RunActions:
    """Action handlers; ``self`` is the Dashboard."""

    def _check_keys(self: Dashboard, settings: Any) -> bool:
        if self.svg_app.demo:
            return True
        missing = settings.missing_keys()
        if missing:
            self.notify(f"{_names(missing)} not set: add {'it' if len(missing) == 1 else 'them'} here, then press r",
                        title="Keys missing", severity="error", timeout=8)
            self.action_pane("secrets")
            return False
        return True

    def _busy(self: Dashboard) -> bool:
        if self.svg_app.control.running:
            self.notify("a run is in progress: press s to stop it first", severity="warning")
            return True
        return False

    def action_start_run(self: Dashboard, name: str | None = None) -> None:
        settings = self.svg_app.settings
        if self._busy() or not self._check_keys(settings):
            return
        try:
            dataset = load_dataset(settings.dataset)
        except SvgAgentError as err:
            self.notify(str(err), title="Dataset", severity="error", timeout=8)
            self.action_pane("config")
            return
        run_id = self.svg_app.control.start(settings, dataset=dataset, name=name)
        self.start_feed()
        self.open_run(run_id)
        self.action_pane("rollouts")
        rows = len(self.query_one(RolloutTable).records)
        self.notify(f"run {run_id}: {rows} rollouts → {settings.model}", title="Run started", timeout=3)

    async def action_stop_run(self: Dashboard) -> None:
        control = self.svg_app.control
        if not control.running:
            self.notify("no run in progress", severity="warning", timeout=3)
            return
        await control.stop()
        self.reload_run()
        table = self.query_one(RolloutTable)
        done = sum(1 for r in table.records.values() if r.status.terminal)
        self.notify(f"stopped: {done} finished rollouts kept; c resumes the rest", title="Run stopped", timeout=4)

    def _resume(self: Dashboard, what: str) -> bool:
        app = self.svg_app
        if self.run_id is None:
            self.notify("no run open: press o to open one or r to start one", severity="warning")
            return False
        run = app.store.get_run(self.run_id)
        settings = app.settings_for_run(run.settings)
        if not self._check_keys(settings):
            return False
        app.control.start(settings, run_id=self.run_id)
        self.start_feed()
        self.reload_run()
        self.notify(what, title="Run resumed", timeout=3)
        return True

    def action_resume_run(self: Dashboard) -> None:
        if self._busy():
            return
        if self.run_id is None:
            self.notify("no run open: press o to open one or r to start one", severity="warning")
            return
        left = self.svg_app.control.unfinished(self.run_id)
        if left == 0:
            self.notify("nothing left to run here; R reruns marked or failed rollouts", timeout=4)
            return
        self._resume(f"{left} unfinished rollouts of {self.run_id}")

    def action_rerun(self: Dashboard) -> None:
        if self._busy():
            return
        if self.run_id is None:
            self.notify("no run open: press o to open one or r to start one", severity="warning")
            return
        table = self.query_one(RolloutTable)
        ids = sorted(table.marked) or self.svg_app.control.failed_ids(self.run_id)
        if not ids:
            self.notify("nothing to rerun: mark rollouts with space (there are no failed ones)", severity="warning")
            return
        self.svg_app.store.new_attempts(self.run_id, ids)
        table.clear_marks()
        self._resume(f"{len(ids)} rollouts rerun as new attempts")

    def action_open_run(self: Dashboard) -> None:
        if self._busy():
            return

        def opened(run_id: str | None) -> None:
            if run_id:
                self.open_run(run_id)
                self.action_pane("rollouts")

        self.app.push_screen(RunPicker(self.svg_app.store, current=self.run_id), opened)

    def action_stats(self: Dashboard) -> None:
        if self.run_id is None:
            self.notify("no run open: press o to open one", severity="warning")
            return
        from .stats import StatsScreen

        def chosen(query: str | None) -> None:
            if query and self._apply_filter(query, quiet=False):  # a histogram bin: its rollouts
                self._filter_done()
                self.action_pane("rollouts")

        run = self.svg_app.store.get_run(self.run_id)
        self.app.push_screen(StatsScreen(self.svg_app.store, self.run_id, name=run.name), chosen)

    def action_export(self: Dashboard) -> None:
        if self.run_id is None:
            self.notify("no run open: press o to open one", severity="warning")
            return
        from .export_dialog import ExportDialog

        run = self.svg_app.store.get_run(self.run_id)
        self.app.push_screen(ExportDialog(self.svg_app.store, self.run_id, name=run.name))

    def action_full_image(self: Dashboard) -> None:
        rollout_id = self.query_one(RolloutTable).cursor_id
        if rollout_id is None:
            self.notify("no rollout selected", severity="warning")
            return
        show_full_image(self, rollout_id)

    def on_rollout_table_opened(self: Dashboard, event: RolloutTable.Opened) -> None:
        def closed(_: object = None) -> None:
            table = self.query_one(RolloutTable)
            table.apply(self.svg_app.store.get_rollouts([event.rollout_id]))
            self.query_one(Preview).reload()
            self.refresh_summary()

        self.app.push_screen(RolloutDetail(self.svg_app.store, event.rollout_id), closed)

    def on_run_ended(self: Dashboard, event: RunEnded) -> None:
        if event.run_id == self.run_id:
            self.reload_run()
        if event.error:
            self.notify(event.error, title="Run failed", severity="error", timeout=10)
        elif event.summary is not None:
            s = event.summary
            mean = "–" if s.mean_score is None else f"{s.mean_score:.3f}"
            self.notify(f"{s.done}/{s.rollouts} done, mean {mean} ({'PASS' if s.passed else 'FAIL'})",
                        title="Run finished", timeout=5)


def show_full_image(screen: Any, rollout_id: str) -> None:
    """Suspend the app and draw the rollout's PNG with the terminal's best graphics; back on any key."""
    record = screen.app.store.get_rollout(rollout_id)
    if not record.png:
        screen.notify("this rollout has no image", severity="warning")
        return
    try:
        with screen.app.suspend():
            show_full_resolution(record.png, f"{record.rollout_id} ({record.row_id})")
    except SuspendNotSupported:
        screen.notify("the full-resolution view needs a real terminal", severity="warning")
