"""The dashboard's open run: which run the table shows, kept in step with the store and the engine.

:class:`OpenRun` owns one responsibility of the dashboard — the run on screen, live. It opens and reloads a run
(a big run is read in a thread, see ``tui.live_feed``), applies the live feed's batches to the table, keeps the
summary line and the score histogram (from the table's ``RunTally``: no full pass per update), and drives the
engine through ``RunControl``: start, stop, resume, rerun. The dashboard handles the messages and keys and hands
them over here; its own job is the layout, the panes and the screens it opens.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from textual.screen import Screen

from svgagent.core.analysis.failure_causes import FailureCause, dominant_failure
from svgagent.core.config.prices import Cost, group_cost, price_table, rollouts_cost
from svgagent.core.config.settings import Settings
from svgagent.core.run.dataset import load_dataset
from svgagent.core.scoring.errors import StoreError, SvgAgentError
from svgagent.core.store.typed_rows import DEFAULT_THRESHOLD, RunSummary, TokenGroup, mean_text
from svgagent.core.terminal_text import visible_line
from svgagent.tui.live_feed import LiveBatch, LiveFeed, RunReloaded
from svgagent.tui.run_control import RunEnded
from svgagent.tui.widgets.histogram import Histogram
from svgagent.tui.widgets.preview import Preview
from svgagent.tui.widgets.rollout_table import RolloutTable
from svgagent.tui.widgets.summary_bar import SummaryBar, estimate_eta, format_summary

BUDGET_REACHED = "budget reached:"  # how core.run.budget.BudgetReached's line starts
LIVE_RECOUNT_S = 2.0  # a live run's dollars and dominant failure are worked out again at most this often

if TYPE_CHECKING:
    from svgagent.tui.services import AppServices

SUMMARY_EVERY_BATCH_ROWS = 2_000  # up to this many rows every live batch refreshes the summary
SUMMARY_MIN_INTERVAL_S = 0.5  # above it, at most this often
BACKGROUND_RELOAD_ROWS = 2_000  # from this many rows a reload reads the store in a thread
HOLD_FRAMES = 3  # a live batch waits at most this many frames for keys to be shown (a held key repeats)
NO_RUN = "no run open: press o to open one or r to start one"


def _names(missing: list[str]) -> str:
    return " and ".join(missing) + (" is" if len(missing) == 1 else " are")


class OpenRun:
    """The run ``screen`` shows (its ``RolloutTable``, ``Preview``, ``SummaryBar`` and ``#score-hist``).
    ``show_pane(name)`` brings a pane forward (the keys missing: Secrets); ``changed()`` is called whenever what
    the keys can do may have changed (the footer follows)."""

    def __init__(
        self,
        screen: Screen[object],
        services: AppServices,
        *,
        show_pane: Callable[[str], None],
        changed: Callable[[], None],
    ) -> None:
        self.screen = screen
        self.services = services
        self.show_pane = show_pane
        self.changed = changed
        self.run_id: str | None = None
        self.threshold = DEFAULT_THRESHOLD
        self.earlier: tuple[TokenGroup, ...] = ()  # the open run's attempts reruns replaced: the run paid them too
        self.unfinished = 0
        self.feed = LiveFeed(screen, services.store, services.bus)
        self._summary_at = 0.0  # time.monotonic() of the last summary refresh
        self._cost_cache: Cost | None = None  # the open run's dollars (see _cost)
        self._cost_for: str | None = None
        self._cost_at = 0.0
        self._cause: tuple[tuple[object, ...], FailureCause | None] = ((), None)  # (what it was read for, cause)
        self._cause_at = 0.0

    @property
    def table(self) -> RolloutTable:
        return self.screen.query_one(RolloutTable)

    @property
    def live(self) -> bool:
        control = self.services.control
        return control.running and control.run_id == self.run_id and self.run_id is not None

    def notify(self, message: str, **kwargs: object) -> None:
        self.screen.notify(message, **kwargs)  # type: ignore[arg-type]

    # --- opening and reading ------------------------------------------------------------------------------
    def open(self, run_id: str) -> None:
        """Show ``run_id``; a store that cannot be read (damaged) is one notification, not the app's end."""
        store = self.services.store
        try:
            run = store.get_run(run_id)
            records, earlier = store.current_and_earlier_tokens(run_id)  # one snapshot: a rerun counted once
        except StoreError as err:
            self.notify(str(err), title="Run store", severity="error", timeout=15)
            return
        self.run_id = run_id
        self.threshold = run.threshold  # the run's own, else the one default: as `runs show` and a stop judge it
        self.earlier = earlier
        self.table.load(records)
        self.screen.sub_title = visible_line(f"{run.name} ({run_id})")  # a run name: outside text
        self.refresh_summary()

    def reload(self) -> None:
        """Read the open run again (stop, resume, rerun, the run's end). A big run is read and compared in a
        thread, and the table takes only the rows that changed: a 10,000-row reload would freeze the screen."""
        if self.run_id is None:
            return
        table = self.table
        if len(table.records) >= BACKGROUND_RELOAD_ROWS:
            self.feed.reload(self.run_id, table.records)
            return
        records, self.earlier = self.services.store.current_and_earlier_tokens(self.run_id)
        table.load(records)
        self.screen.query_one(Preview).reload()
        self.refresh_summary()

    def reread(self, rollout_id: str) -> None:
        """One rollout changed outside the engine (an override on the rollout screen)."""
        self.table.apply(self.services.store.get_rollouts([rollout_id]))
        self.screen.query_one(Preview).reload()
        self.refresh_summary()

    def reloaded(self, message: RunReloaded) -> None:
        if message.run_id != self.run_id:
            return
        self.earlier = message.earlier
        with self.screen.app.batch_update():
            self.table.merge(message.changed, message.removed)
            self.screen.query_one(Preview).reload()
            self.refresh_summary()

    def apply_batch(self, batch: LiveBatch) -> None:
        """A live batch from the feed (at most ~10 a second): the table, the preview if its rollout changed, and
        the summary — on a big run at most twice a second (the once-a-second tick adds one). While a key is on its
        way to the screen the batch waits for the frame that shows it (at most ``HOLD_FRAMES`` frames): that frame
        then draws the key's change alone, not the batch's rows too."""
        if batch.held < HOLD_FRAMES and self.services.input_on_its_way() and self.feed.is_current(batch):
            batch.held += 1
            self.screen.call_after_refresh(self.apply_batch, batch)
            return
        try:
            if batch.run_id != self.run_id or not self.feed.is_current(batch):
                return
            table = self.table
            with self.screen.app.batch_update():
                table.merge(batch.records)  # a reload may have read newer rows meanwhile: keep those
                now = time.monotonic()
                if len(table.records) < SUMMARY_EVERY_BATCH_ROWS or now - self._summary_at >= SUMMARY_MIN_INTERVAL_S:
                    self.refresh_summary()
                if table.cursor_id in {r.rollout_id for r in batch.records}:
                    self.screen.query_one(Preview).reload()
        finally:
            self.feed.applied(batch)

    def refresh_summary(self) -> None:
        self._summary_at = time.monotonic()
        bar = self.screen.query_one(SummaryBar)
        table = self.table
        self.screen.query_one("#score-hist", Histogram).show_sorted(
            table.tally.scores, filter_text=table.query_filter.text
        )
        if self.run_id is None:
            bar.show(format_summary(None))
            self.changed()
            return
        control = self.services.control
        summary = table.tally.summary(self.threshold, self.earlier)  # tokens: every attempt's
        cost = self._cost(table)
        run = self.services.store.get_run(self.run_id)
        elapsed = control.elapsed(self.run_id, run.worked_s)  # every session's work on the run
        eta = (
            estimate_eta(summary.done, control.done_at_start, summary.rollouts, control.session_elapsed(self.run_id))
            if self.live
            else None
        )  # this session's pace
        bar.show(
            format_summary(
                summary,
                run_label=run.name,
                elapsed=elapsed,
                eta=eta,
                shown=len(table.visible_ids),
                state="running" if self.live else run.status,
                cost=cost,
                cause=cause.headline if (cause := self.failure_cause(summary)) else "",
            )
        )
        self.unfinished = summary.rollouts - summary.done
        self.changed()

    def _cost(self, table: Any) -> Cost | None:
        """The open run's dollars at the price table's rates — its current rollouts' and the attempts reruns replaced
        (paid too, as `runs show` counts them) — worked out again at most every :data:`LIVE_RECOUNT_S` seconds while
        it runs: a pass over 10,000 rollouts is not for every live batch."""
        now = time.monotonic()
        if self._cost_for == self.run_id and self.live and now - self._cost_at < LIVE_RECOUNT_S:
            return self._cost_cache
        run = self.services.store.get_run(self.run_id)
        prices = price_table(self.services.settings.prices)
        models = run.settings.get("model"), run.settings.get("judge_model")
        cost = rollouts_cost(table.records.values(), prices, *models)
        for group in self.earlier:
            cost = cost + group_cost(group, prices, *models)
        self._cost_cache = cost
        self._cost_for, self._cost_at = self.run_id, now
        return self._cost_cache

    def failure_cause(self, summary: RunSummary) -> FailureCause | None:
        """The open run's most frequent failure without a valid score (core.analysis.failure_causes, as the CLI
        says it), read again when the number of such rollouts changed — while the run is live, at most every
        :data:`LIVE_RECOUNT_S` seconds (two grouped queries are not for every live batch)."""
        if self.run_id is None or not summary.outcomes.unscored:
            return None
        key = (self.run_id, summary.outcomes.unscored, summary.rollouts)
        now = time.monotonic()
        recent = self._cause[0][:1] == (self.run_id,) and self.live and now - self._cause_at < LIVE_RECOUNT_S
        if self._cause[0] != key and not recent:
            try:
                self._cause = (key, dominant_failure(self.services.store, self.run_id))
            except StoreError:
                return None
            self._cause_at = now
        return self._cause[1]

    def tick(self) -> None:
        if self.live:
            self.refresh_summary()

    # --- driving the engine -------------------------------------------------------------------------------
    def keys_ready(self, settings: Settings) -> bool:
        if self.services.demo:
            return True
        missing = settings.missing_keys()
        if missing:
            self.notify(
                f"{_names(missing)} not set: add {'it' if len(missing) == 1 else 'them'} here, then press r",
                title="Keys missing",
                severity="error",
                timeout=8,
            )
            self.show_pane("secrets")
            return False
        return True

    def busy(self) -> bool:
        if self.services.control.running:
            self.notify("a run is in progress: press s to stop it first", severity="warning")
            return True
        return False

    def start(self, name: str | None = None) -> None:
        settings = self.services.settings
        if self.busy() or not self.keys_ready(settings):
            return
        try:
            dataset = load_dataset(settings.dataset)
        except SvgAgentError as err:
            self.notify(str(err), title="Dataset", severity="error", timeout=8)
            self.show_pane("config")
            return
        self.feed.subscribe()  # before the engine starts: its first events are not missed
        run_id = self.services.control.start(settings, dataset=dataset, name=name)
        self.feed.follow(run_id)
        self.open(run_id)
        self.show_pane("rollouts")
        rows = len(self.table.records)
        self.notify(f"run {run_id}: {rows} rollouts → {settings.model}", title="Run started", timeout=3)

    def start_eval(self, model: str, dataset_link: str, job: str = "the job") -> bool:
        """An RFT job's output model: point the settings' model at it and start a run of it, named `eval of
        <model>`, on the Config's dataset — to compare with a run of the base model. False when busy."""
        services = self.services
        if self.busy():
            return False
        services.settings = services.settings.model_copy(update={"model": model})
        from svgagent.core.rft.launch import trained_on  # the Fireworks client: not before the first frame

        settings = services.settings
        same = trained_on(settings.dataset, settings.rows, dataset_link.rsplit("/", 1)[-1])
        self.start(name=f"eval of {model}")
        if same is False:
            rows = f", {settings.rows} rows" if settings.rows else ""
            self.notify(
                f"{job} trained on another dataset than the Config's ({settings.dataset}{rows}): the eval "
                "uses the Config's",
                title="Dataset",
                severity="warning",
                timeout=8,
            )
        return True

    async def stop(self) -> None:
        control = self.services.control
        if not control.running:
            self.notify("no run in progress", severity="warning", timeout=3)
            return
        await control.stop()
        self.feed.stop()
        self.reload()
        done = sum(1 for r in self.table.records.values() if r.status.terminal)
        self.notify(f"stopped: {done} finished rollouts kept; c resumes the rest", title="Run stopped", timeout=4)

    def _resume(self, what: str) -> bool:
        services = self.services
        if self.run_id is None:
            self.notify(NO_RUN, severity="warning")
            return False
        run = services.store.get_run(self.run_id)
        settings = services.settings_for_run(run.measured_settings)
        if not self.keys_ready(settings):
            return False
        try:
            services.store.check_not_leased(self.run_id)  # a CLI resume of the same run: never both
        except SvgAgentError as err:
            self.notify(str(err), title="Run busy", severity="error", timeout=8)
            return False
        self.feed.subscribe()
        services.control.start(settings, run_id=self.run_id)
        self.feed.follow(self.run_id)
        self.reload()
        self.notify(what, title="Run resumed", timeout=3)
        return True

    def resume(self) -> None:
        if self.busy():
            return
        if self.run_id is None:
            self.notify(NO_RUN, severity="warning")
            return
        left = self.services.control.unfinished(self.run_id)
        if left == 0:
            self.notify("nothing left to run here; R reruns marked or failed rollouts", timeout=4)
            return
        self._resume(f"{left} unfinished rollouts of {self.run_id}")

    def rerun(self) -> None:
        if self.busy():
            return
        if self.run_id is None:
            self.notify(NO_RUN, severity="warning")
            return
        table = self.table
        ids = sorted(table.marked) or self.services.control.failed_ids(self.run_id)
        if not ids:
            self.notify("nothing to rerun: mark rollouts with space (there are no failed ones)", severity="warning")
            return
        try:
            self.services.store.new_attempts(self.run_id, ids)
        except SvgAgentError as err:  # another process is working on this run
            self.notify(str(err), title="Run busy", severity="error", timeout=8)
            return
        table.clear_marks()
        self._resume(f"{len(ids)} rollouts rerun as new attempts")

    def ended(self, event: RunEnded) -> None:
        self.feed.stop()
        if event.run_id == self.run_id:
            self.reload()
        if event.error and BUDGET_REACHED in event.error:  # interrupted, and resumable
            line = event.error[event.error.index(BUDGET_REACHED) :]
            self.notify(
                f"{line}. c resumes it: raise or clear the budget in the Config pane (3) first",
                title="Budget reached",
                severity="warning",
                timeout=10,
            )
        elif event.error:
            self.notify(event.error, title="Run failed", severity="error", timeout=10)
        elif event.summary is not None:
            s = event.summary
            mean = mean_text(s.mean_score, s.threshold)
            done = f"{s.done}/{s.rollouts} done, mean {mean} ({'PASS' if s.passed else 'FAIL'})"
            cause = self.failure_cause(s) if event.run_id == self.run_id else None
            if cause is None:
                self.notify(done, title="Run finished", timeout=5)
            else:  # why, in the toast and the message log (L): not a page down in each rollout's detail
                severity = "error" if cause.count == cause.total else "warning"
                self.notify(f"{done}\n{cause.line}", title="Run finished", severity=severity, timeout=12)
