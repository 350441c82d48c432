"""Start, stop, resume and rerun runs with the core engine — in a process of its own (``core.engine_process``).

The engine's CPU (HTTP clients, SVG extraction, store writes: ≈4 ms a rollout) used to share the app's event loop
and showed up as key latency (gaps of 0.15–2 s with 64 rollouts in flight, bench/tui.py); on a thread it still
shared the GIL and the garbage collector. Now the app's loop only waits for the child's result (an async worker,
so failures are reported in one place, ``SvgAgentApp.on_worker_state_changed``). The child's state changes are
republished on the app's thread-safe event bus; the UI follows the bus (``tui.live_feed``), never the engine.
Stopping asks the child to cancel its run: the engine marks the run interrupted and keeps every finished rollout;
rollouts that were in flight go back to ``queued`` so the table shows what a resume will redo.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence

from textual.app import App
from textual.message import Message
from textual.worker import Worker, WorkerCancelled, WorkerFailed, WorkerState

from svgagent.core.config.settings import Settings
from svgagent.core.run.dataset import Dataset
from svgagent.core.run.engine_process import ENGINE, EngineProcess
from svgagent.core.run.events import EventBus
from svgagent.core.run.setup import create_run
from svgagent.core.scoring.errors import SvgAgentError
from svgagent.core.scoring.models import RolloutStatus, RolloutUpdate
from svgagent.core.store.outcomes import Outcome
from svgagent.core.store.run_store import Store
from svgagent.core.store.typed_rows import RunStatus, RunSummary

ENGINE_GROUP = "engine"


class RunEnded(Message):
    """The engine stopped working on ``run_id``: finished (``summary``), failed (``error``) or was cancelled."""

    def __init__(self, run_id: str, summary: RunSummary | None = None, error: str | None = None) -> None:
        super().__init__()
        self.run_id = run_id
        self.summary = summary
        self.error = error


class RunControl:
    """At most one run in progress. ``clock`` (seconds, monotonic) is injectable so tests control time;
    ``engine_factory`` ("module:attribute", found on ``engine_path`` in the child) lets tests and benchmarks run
    a stand-in engine through the same process."""

    def __init__(
        self, app: App[object], store: Store, bus: EventBus[RolloutUpdate], clock: Callable[[], float]
    ) -> None:
        self.app = app
        self.store = store
        self.bus = bus
        self.clock = clock
        self.run_id: str | None = None
        self.worker: Worker[RunSummary] | None = None
        self.engine_process: EngineProcess | None = None
        self.engine_factory = ENGINE
        self.engine_path: Sequence[str] = ()
        self.started_at: float | None = None
        self.finished_at: float | None = None
        self.done_at_start = 0
        self.worked_before = 0.0

    @property
    def running(self) -> bool:
        return self.worker is not None and self.worker.state in (WorkerState.PENDING, WorkerState.RUNNING)

    def session_elapsed(self, run_id: str | None) -> float | None:
        """Seconds the engine has worked on ``run_id`` in this session (None if it has not): the ETA's pace."""
        if run_id is None or run_id != self.run_id or self.started_at is None:
            return None
        end = self.finished_at if self.finished_at is not None else self.clock()
        return max(0.0, end - self.started_at)

    def elapsed(self, run_id: str | None, stored: float | None) -> float | None:
        """Seconds engines have worked on ``run_id`` over all its sessions (start, resumes, reruns, the CLI's):
        the stored time of the sessions before this one plus this one's; for a run not worked on in this session,
        ``stored`` (the run's ``worked_s``; None: never worked on)."""
        session = self.session_elapsed(run_id)
        return self.worked_before + session if session is not None else stored

    def start(
        self, settings: Settings, *, dataset: Dataset | None = None, run_id: str | None = None, name: str | None = None
    ) -> str:
        """Create a run from ``dataset`` (or continue ``run_id``) and process it in the engine's process.
        Subscribe to the bus before calling this, or the first events may be missed."""
        if self.running:
            raise RuntimeError("a run is already in progress")
        if run_id is None:
            if dataset is None:
                raise ValueError("start needs a dataset or a run id")
            run_id = create_run(settings, self.store, dataset, name=name)
        else:
            self.store.check_not_leased(run_id)  # RunBusy: another process is working on it
        self.run_id = run_id
        self.started_at, self.finished_at = self.clock(), None
        self.done_at_start = self._terminal(run_id)
        self.worked_before = self.store.get_run(run_id).worked_s or 0.0  # the engine adds this session's at its end
        child = EngineProcess(
            settings, str(self.store.path), self.bus, run_id, factory=self.engine_factory, path=self.engine_path
        )
        self.engine_process = child
        child.start()
        self.worker = self.app.run_worker(
            self._wait(child), name=f"engine {run_id}", group=ENGINE_GROUP, exclusive=True, exit_on_error=False
        )
        return run_id

    async def _wait(self, child: EngineProcess) -> RunSummary:
        try:
            return await asyncio.shield(asyncio.wrap_future(child.future))
        except asyncio.CancelledError:
            child.cancel()  # the stop, or the app's worker was cancelled (the app is closing): stop the engine
            raise
        except Exception:
            # the process failed or died: whatever it had not finished is not running any more
            self.store.set_run_status(child.run_id, "interrupted")
            raise
        finally:
            self.finished_at = self.clock()

    async def stop(self) -> bool:
        """Cancel the run in progress and wait until it has stopped; False when nothing was running."""
        if not self.running or self.worker is None or self.engine_process is None:
            return False
        self.engine_process.cancel()
        try:
            await self.worker.wait()
        except (WorkerCancelled, WorkerFailed):
            pass
        await asyncio.to_thread(self.engine_process.join)
        if self.run_id is not None:  # a write of up to every row: off the loop
            await asyncio.to_thread(self._stopped, self.run_id)
        return True

    def _stopped(self, run_id: str) -> None:
        """The engine's process has ended after a stop: what was in flight goes back to ``queued``, and a run it
        did not finish is ``interrupted`` — also one it never got to mark ``running`` (``r s`` in one burst: the
        process was stopped while it started, and the run stayed ``created``) or could not mark on its way out."""
        self.store.reset_unfinished(run_id)
        run = self.store.get_run(run_id)
        if run.status in (RunStatus.CREATED, RunStatus.RUNNING):
            summary = self.store.summarize(run_id, run.threshold)
            self.store.set_run_status(run_id, RunStatus.INTERRUPTED, summary)

    def shutdown(self) -> None:
        """The app is closing: stop the engine's process and wait for it (bounded: then it is killed)."""
        if self.engine_process is not None and self.engine_process.thread.is_alive():
            self.engine_process.cancel()
            self.engine_process.join()
            with contextlib.suppress(SvgAgentError):  # closing anyway: a resume resets and continues the run
                self._stopped(self.engine_process.run_id)

    def _terminal(self, run_id: str) -> int:
        return sum(n for status, n in self.store.status_counts(run_id).items() if status.terminal)

    def unfinished(self, run_id: str) -> int:
        """Current rollouts of ``run_id`` not finished yet (counted in the store: a run may have 10,000)."""
        return sum(n for status, n in self.store.status_counts(run_id).items() if not status.terminal)

    def failed_ids(self, run_id: str) -> list[str]:
        """The rollouts `R` reruns when none is marked: those without a valid score (invalid or failed, not the
        model's valid 0s — core/store/outcomes.py)."""
        return [
            r.rollout_id
            for r in self.store.list_rollouts(run_id, statuses=[RolloutStatus.FAILED.value, RolloutStatus.SCORED.value])
            if r.outcome in (Outcome.INVALID, Outcome.FAILED)
        ]
