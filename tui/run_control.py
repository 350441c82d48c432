"""Start, stop, resume and rerun runs with the core engine, as one async worker on the app's event loop.

The engine publishes every state change on the app's event bus; the UI follows the bus, never the engine.
Stopping cancels the worker: the engine marks the run interrupted and keeps every finished rollout; rollouts that
were in flight go back to ``queued`` so the table shows what a resume will redo.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.app import App
from textual.message import Message
from textual.worker import Worker, WorkerCancelled, WorkerFailed, WorkerState

from svgagent.core.dataset import Dataset
from svgagent.core.events import EventBus
from svgagent.core.scoring.models import RolloutStatus, RolloutUpdate
from svgagent.core.records import RunSummary
from svgagent.core.settings import Settings
from svgagent.core.store import Store

ENGINE_GROUP = "engine"


class RunEnded(Message):
    """The engine stopped working on ``run_id``: finished (``summary``), failed (``error``) or was cancelled."""

    def __init__(self, run_id: str, summary: RunSummary | None = None, error: str | None = None) -> None:
        super().__init__()
        self.run_id = run_id
        self.summary = summary
        self.error = error


class RunControl:
    """At most one run in progress. ``clock`` (seconds, monotonic) is injectable so tests control time."""

    def __init__(self, app: App, store: Store, bus: EventBus[RolloutUpdate], clock: Callable[[], float]) -> None:
        self.app = app
        self.store = store
        self.bus = bus
        self.clock = clock
        self.run_id: str | None = None
        self.worker: Worker[RunSummary] | None = None
        self.started_at: float | None = None
        self.finished_at: float | None = None
        self.done_at_start = 0

    @property
    def running(self) -> bool:
        return self.worker is not None and self.worker.state in (WorkerState.PENDING, WorkerState.RUNNING)

    def elapsed(self, run_id: str | None) -> float | None:
        """Seconds the engine has worked on ``run_id`` in this session (None if it has not)."""
        if run_id is None or run_id != self.run_id or self.started_at is None:
            return None
        end = self.finished_at if self.finished_at is not None else self.clock()
        return max(0.0, end - self.started_at)

    def start(self, settings: Settings, *, dataset: Dataset | None = None, run_id: str | None = None,
              name: str | None = None) -> str:
        """Create a run from ``dataset`` (or continue ``run_id``) and process it in the background."""
        if self.running:
            raise RuntimeError("a run is already in progress")
        from svgagent.core.engine import Engine  # imports the HTTP clients: only when a run starts

        engine = Engine(settings, self.store, bus=self.bus)
        if run_id is None:
            if dataset is None:
                raise ValueError("start needs a dataset or a run id")
            run_id = engine.create_run(dataset, name=name)
        self.run_id = run_id
        self.started_at, self.finished_at = self.clock(), None
        self.done_at_start = self._terminal(run_id)
        self.worker = self.app.run_worker(
            self._execute(engine, run_id), name=f"engine {run_id}", group=ENGINE_GROUP, exclusive=True,
            exit_on_error=False,
        )
        return run_id

    async def _execute(self, engine: Any, run_id: str) -> RunSummary:
        try:
            return await engine.run(run_id)
        finally:
            self.finished_at = self.clock()
            await engine.aclose()

    async def stop(self) -> bool:
        """Cancel the run in progress and wait until it has stopped; False when nothing was running."""
        if not self.running or self.worker is None:
            return False
        worker = self.worker
        worker.cancel()
        try:
            await worker.wait()
        except (WorkerCancelled, WorkerFailed):
            pass
        if self.run_id is not None:
            self.store.reset_unfinished(self.run_id)
        return True

    def _terminal(self, run_id: str) -> int:
        return sum(n for status, n in self.store.status_counts(run_id).items() if status.terminal)

    def unfinished(self, run_id: str) -> int:
        """Current rollouts of ``run_id`` not finished yet (counted in the store: a run may have 10,000)."""
        return sum(n for status, n in self.store.status_counts(run_id).items() if not status.terminal)

    def failed_ids(self, run_id: str) -> list[str]:
        return [r.rollout_id for r in self.store.list_rollouts(run_id, statuses=[RolloutStatus.FAILED.value])]
