"""Start, stop, resume and rerun runs with the core engine — on a thread of its own, with its own event loop.

The engine's CPU (HTTP clients, SVG extraction, store writes: ≈4 ms a rollout) used to share the app's event loop
and showed up as key latency (gaps of 0.15–2 s with 64 rollouts in flight, bench/tui.py). Now it runs on an
:class:`EngineThread`; the app's loop only waits for its result (an async worker, so failures are reported in
one place, ``SvgAgentApp.on_worker_state_changed``). The engine publishes every state change on the app's event
bus, which is thread-safe; the UI follows the bus (``tui.live_feed``), never the engine. Stopping cancels the
engine's task on its own loop: the engine marks the run interrupted and keeps every finished rollout; rollouts
that were in flight go back to ``queued`` so the table shows what a resume will redo.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable
from typing import Protocol

from textual.app import App
from textual.message import Message
from textual.worker import Worker, WorkerCancelled, WorkerFailed, WorkerState

from svgagent.core.dataset import Dataset
from svgagent.core.events import EventBus
from svgagent.core.records import RunSummary
from svgagent.core.scoring.models import RolloutStatus, RolloutUpdate
from svgagent.core.settings import Settings
from svgagent.core.store import Store

ENGINE_GROUP = "engine"
JOIN_TIMEOUT_S = 10.0


class RunEnded(Message):
    """The engine stopped working on ``run_id``: finished (``summary``), failed (``error``) or was cancelled."""

    def __init__(self, run_id: str, summary: RunSummary | None = None, error: str | None = None) -> None:
        super().__init__()
        self.run_id = run_id
        self.summary = summary
        self.error = error


class RunnableEngine(Protocol):
    """What the engine thread needs of ``core.engine.Engine`` (tests and benchmarks pass stand-ins)."""

    async def run(self, run_id: str) -> RunSummary: ...

    async def aclose(self) -> None: ...


EngineFactory = Callable[..., RunnableEngine]  # (settings, store, *, bus) -> engine


class EngineThread:
    """One run of the engine on a daemon thread with its own event loop. The engine is built on that thread, so
    its HTTP clients and semaphores belong to that loop. ``future`` holds the run's summary (or its exception;
    ``asyncio.CancelledError`` when :meth:`cancel` stopped it)."""

    def __init__(self, factory: EngineFactory, settings: Settings, store: Store, bus: EventBus[RolloutUpdate],
                 run_id: str) -> None:
        self._factory, self._settings, self._store, self._bus = factory, settings, store, bus
        self.run_id = run_id
        self.future: concurrent.futures.Future[RunSummary] = concurrent.futures.Future()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[RunSummary] | None = None
        self._cancelled = False
        self.thread = threading.Thread(target=self._main, name=f"engine {run_id}", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _main(self) -> None:
        try:
            result = asyncio.run(self._run())
        except BaseException as err:  # noqa: BLE001 - handed to whoever waits, cancellation included
            self.future.set_exception(err)
        else:
            self.future.set_result(result)

    async def _run(self) -> RunSummary:
        with self._lock:
            self._loop, self._task = asyncio.get_running_loop(), asyncio.current_task()  # type: ignore[assignment]
            if self._cancelled:
                raise asyncio.CancelledError
        engine = self._factory(self._settings, self._store, bus=self._bus)
        try:
            return await engine.run(self.run_id)
        finally:
            await engine.aclose()

    def cancel(self) -> None:
        """Ask the engine to stop (from any thread); ``future`` completes once it has."""
        with self._lock:
            self._cancelled = True
            loop, task = self._loop, self._task
        if loop is not None and task is not None:
            try:
                loop.call_soon_threadsafe(task.cancel)
            except RuntimeError:  # its loop has already closed: the run is over
                pass

    def join(self, timeout: float = JOIN_TIMEOUT_S) -> None:
        self.thread.join(timeout)


class RunControl:
    """At most one run in progress. ``clock`` (seconds, monotonic) is injectable so tests control time."""

    def __init__(self, app: App[object], store: Store, bus: EventBus[RolloutUpdate],
                 clock: Callable[[], float]) -> None:
        self.app = app
        self.store = store
        self.bus = bus
        self.clock = clock
        self.run_id: str | None = None
        self.worker: Worker[RunSummary] | None = None
        self.engine_thread: EngineThread | None = None
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
        """Create a run from ``dataset`` (or continue ``run_id``) and process it on the engine's thread. Subscribe
        to the bus before calling this, or the first events may be missed."""
        if self.running:
            raise RuntimeError("a run is already in progress")
        from svgagent.core import engine  # imports the HTTP clients: only when a run starts

        if run_id is None:
            if dataset is None:
                raise ValueError("start needs a dataset or a run id")
            run_id = engine.create_run(settings, self.store, dataset, name=name)
        self.run_id = run_id
        self.started_at, self.finished_at = self.clock(), None
        self.done_at_start = self._terminal(run_id)
        thread = EngineThread(engine.Engine, settings, self.store, self.bus, run_id)
        self.engine_thread = thread
        thread.start()
        self.worker = self.app.run_worker(self._wait(thread), name=f"engine {run_id}", group=ENGINE_GROUP,
                                          exclusive=True, exit_on_error=False)
        return run_id

    async def _wait(self, thread: EngineThread) -> RunSummary:
        try:
            return await asyncio.shield(asyncio.wrap_future(thread.future))
        except asyncio.CancelledError:
            thread.cancel()  # the app's worker was cancelled (the app is closing): stop the engine too
            raise
        finally:
            self.finished_at = self.clock()

    async def stop(self) -> bool:
        """Cancel the run in progress and wait until it has stopped; False when nothing was running."""
        if not self.running or self.worker is None or self.engine_thread is None:
            return False
        self.engine_thread.cancel()
        try:
            await self.worker.wait()
        except (WorkerCancelled, WorkerFailed):
            pass
        await asyncio.to_thread(self.engine_thread.join)
        if self.run_id is not None:
            self.store.reset_unfinished(self.run_id)
        return True

    def shutdown(self) -> None:
        """The app is closing: stop the engine's thread and wait for it (bounded), wherever it is."""
        if self.engine_thread is not None and self.engine_thread.thread.is_alive():
            self.engine_thread.cancel()
            self.engine_thread.join()

    def _terminal(self, run_id: str) -> int:
        return sum(n for status, n in self.store.status_counts(run_id).items() if status.terminal)

    def unfinished(self, run_id: str) -> int:
        """Current rollouts of ``run_id`` not finished yet (counted in the store: a run may have 10,000)."""
        return sum(n for status, n in self.store.status_counts(run_id).items() if not status.terminal)

    def failed_ids(self, run_id: str) -> list[str]:
        return [r.rollout_id for r in self.store.list_rollouts(run_id, statuses=[RolloutStatus.FAILED.value])]
