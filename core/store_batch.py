"""The engine's store writer: rollout state changes committed in batches, one transaction every ~50 ms, from a thread.

Each rollout changes state four or five times; one SQLite transaction per change was a fifth of the engine's CPU
per rollout (bench/engine.py). :class:`RolloutWriter` queues the changes and a thread of its own, on a connection of
its own, commits what has queued once per :data:`WINDOW_S` (changes to the same rollout within one batch merge into
one UPDATE). A change that must be durable before the rollout goes on — a paid answer — closes its batch within
:data:`URGENT_S` and is awaited.

What is guaranteed:

- **A crash loses at most the last window of state, never an acknowledged paid answer.** The engine awaits the
  commit of every policy answer and judge verdict before it releases that call's concurrency slot (and before it
  caches the answer: both are in one transaction). So after a crash (SIGKILL, power cut) a resume regenerates at
  most the answers of the rollouts that held a slot at that moment — as before batching — and what is lost beyond
  that is state of the last window: a rollout that was ``generating`` or ``rendering`` is queued again, and redoes
  work that costs nothing (a render).
- **Events describe stored state**: a rollout's ``RolloutUpdate`` is published after the change is committed, so a
  reader who reacts to it (the TUI, the CLI's progress) reads the new state.
- **A storage error is never a verdict**: when a batch cannot be committed (disk full, damaged file) the writer
  keeps the :class:`StoreError`; every waiter gets it, and every later :meth:`RolloutWriter.submit` raises it, so
  the engine stops the run as interrupted (the rollouts of the lost batch resume from their last stored state).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from svgagent.core.scoring.errors import StoreError
from svgagent.core.store import Store

WINDOW_S = 0.05
URGENT_S = 0.005


@dataclass
class _Change:
    rollout_id: str
    fields: dict[str, Any]
    cache: tuple[str, str, dict[str, Any]] | None = None
    done: Callable[[StoreError | None], None] | None = None
    urgent: bool = False
    waiter: tuple[asyncio.AbstractEventLoop, asyncio.Future[None]] | None = None  # settled once committed
    at: float = field(default_factory=time.monotonic)


class RolloutWriter:
    """Queues rollout changes from the engine's event loop and commits them from a thread (see the module
    docstring). Open it per run; :meth:`close` (or ``async with``) commits what is queued and stops the thread."""

    def __init__(self, store: Store, *, window_s: float = WINDOW_S, urgent_s: float = URGENT_S) -> None:
        self._path = store.path
        self.window_s = window_s
        self.urgent_s = urgent_s
        self._changes: list[_Change] = []
        self._urgent_queued = False
        self._cond = threading.Condition()
        self._closing = False
        self._idle = True
        self.error: StoreError | None = None
        self.batches = 0  # transactions committed (for tests and bench/engine.py)
        self._thread: threading.Thread | None = None

    # --- the engine's side (its event loop's thread) -------------------------------------------------------
    def submit(self, rollout_id: str, fields: dict[str, Any], *, cache: tuple[str, str, dict[str, Any]] | None = None,
               done: Callable[[StoreError | None], None] | None = None, urgent: bool = False,
               _waiter: tuple[asyncio.AbstractEventLoop, asyncio.Future[None]] | None = None) -> None:
        """Queue a change of ``rollout_id`` (and, in the same transaction, a cache entry). ``done`` is called
        from the writer's thread once it is committed (with None) or could not be (with the error)."""
        with self._cond:
            if self.error is not None:
                raise self.error
            if self._closing:
                raise StoreError("the store writer is closed")
            # wake the writer only when this change can move its deadline: the first of a batch, or its first
            # urgent change (waking it for every change cost a thread switch each)
            wake = not self._changes or (urgent and not self._urgent_queued)
            self._changes.append(_Change(rollout_id, fields, cache, done, urgent, _waiter))
            self._urgent_queued = self._urgent_queued or urgent
            self._idle = False
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="store-writer", daemon=True)
                self._thread.start()
            if wake:
                self._cond.notify()

    async def commit(self, rollout_id: str, fields: dict[str, Any], *,
                     cache: tuple[str, str, dict[str, Any]] | None = None,
                     done: Callable[[StoreError | None], None] | None = None) -> None:
        """Queue a change that must be durable before the caller goes on, and wait until it is (raises the
        :class:`StoreError` if it cannot be)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        self.submit(rollout_id, fields, cache=cache, done=done, urgent=True, _waiter=(loop, future))
        await future

    async def flush(self) -> None:
        """Wait until everything queued so far is committed (raises the writer's :class:`StoreError`, if any)."""
        await asyncio.to_thread(self._wait_idle)
        if self.error is not None:
            raise self.error

    def close(self) -> None:
        """Commit what is queued and stop the thread (blocking; an error stays in :attr:`error`)."""
        with self._cond:
            self._closing = True
            self._cond.notify()
            thread = self._thread
        if thread is not None:
            thread.join()

    async def __aenter__(self) -> RolloutWriter:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.close)

    def _wait_idle(self) -> None:
        with self._cond:
            while not self._idle and self.error is None:
                self._cond.wait()

    # --- the writer's thread --------------------------------------------------------------------------------
    def _run(self) -> None:
        store: Store | None = None
        try:
            while True:
                batch = self._next_batch()
                if batch is None:
                    return
                if store is None and self.error is None:
                    try:
                        store = Store(self._path)
                    except StoreError as err:
                        self._fail(err)
                self._write(store, batch)
        finally:
            if store is not None:
                store.close()

    def _next_batch(self) -> list[_Change] | None:
        """Wait for the first change, then until its batch closes (the window, or sooner for an urgent change)."""
        with self._cond:
            while not self._changes:
                self._idle = True
                self._cond.notify_all()
                if self._closing:
                    return None
                self._cond.wait()
            first = self._changes[0].at
            while not self._closing:
                urgent = next((c.at for c in self._changes if c.urgent), None)
                deadline = min(first + self.window_s, urgent + self.urgent_s if urgent is not None else first + 1e9)
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            batch, self._changes = self._changes, []
            self._urgent_queued = False
            return batch

    def _write(self, store: Store | None, batch: list[_Change]) -> None:
        error = self.error
        if error is None and store is not None:
            merged: dict[str, dict[str, Any]] = {}
            for change in batch:  # later changes of a rollout win, column by column (dicts keep the first order)
                merged.setdefault(change.rollout_id, {}).update(change.fields)
            try:
                store.write_batch(list(merged.items()), [c.cache for c in batch if c.cache is not None])
                self.batches += 1
            except StoreError as err:
                error = self._fail(err)
        waiting: dict[asyncio.AbstractEventLoop, list[asyncio.Future[None]]] = {}
        for change in batch:
            if change.done is not None:
                change.done(error)
            if change.waiter is not None:
                waiting.setdefault(change.waiter[0], []).append(change.waiter[1])
        for loop, futures in waiting.items():  # one wake-up of each waiting loop per batch, not one per change
            try:
                loop.call_soon_threadsafe(_settle, futures, error)
            except RuntimeError:  # that loop has closed: nobody waits any more
                pass

    def _fail(self, err: StoreError) -> StoreError:
        with self._cond:
            if self.error is None:
                self.error = err
            self._cond.notify_all()
            return self.error


def _settle(futures: list[asyncio.Future[None]], error: StoreError | None) -> None:
    for future in futures:
        if future.done():  # its rollout was cancelled meanwhile
            continue
        if error is None:
            future.set_result(None)
        else:
            future.set_exception(error)
