"""The engine's store writer: rollout state changes committed in batches, one transaction every ~50 ms, from a thread.

Each rollout changes state four or five times; one SQLite transaction per change was a fifth of the engine's CPU
per rollout (bench/engine.py). :class:`RolloutWriter` queues the changes and a thread of its own, on a connection of
its own, commits what has queued once per :data:`WINDOW_S` (changes to the same rollout within one batch merge into
one UPDATE). A change that must be durable before its call's slot is handed on — a paid answer — closes its batch
within :data:`URGENT_S` (:meth:`RolloutWriter.commit`, or :meth:`RolloutWriter.commit_soon`, whose future's callback
hands the slot on while the rollout goes on). 20 ms, not 5: at C=256 a 5 ms window made ≈0.7 transactions per
rollout, 20 ms ≈0.4 (the writer's CPU 0.55 → 0.42 ms per rollout, BENCHMARKS.md "Engine CPU, fifth pass"); the wait
holds only a slot, not the rollout. When nothing waits for that slot (no rollout queued for a policy slot, a judge
slot free) the engine's commit takes the window like any change: a run's last few hundred rollouts commit in fewer
transactions.

The engine's event loop closes the batches (a timer of the loop: a submit is a list append, no condition variable)
and hands each to the thread through a queue; the thread blocks on that queue only, and commits the batches that
queued while it wrote in one transaction (they would each have been one).

What is guaranteed:

- **A crash loses at most the last window of state, never an acknowledged paid answer.** The engine hands a
  call's concurrency slot on only once the commit of its policy answer or judge verdict has succeeded (and caches
  the answer in that same transaction). So after a crash (SIGKILL, power cut) a resume regenerates at
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
import queue
import threading
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from svgagent.core.scoring.errors import StoreError
from svgagent.core.store.run_store import Store

WINDOW_S = 0.05
URGENT_S = 0.02


class _Change(NamedTuple):
    rollout_id: str
    fields: dict[str, Any]
    cache: tuple[str, str, dict[str, Any]] | None
    done: Callable[[StoreError | None], None] | None
    waiter: tuple[asyncio.AbstractEventLoop, asyncio.Future[None]] | None  # settled once committed


class _Flush(NamedTuple):  # settled once every batch queued before it is committed (or failed)
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[None]


_STOP = None  # queued last by close(): the thread commits what is before it and ends


class RolloutWriter:
    """Queues rollout changes from the engine's event loop and commits them from a thread (see the module
    docstring). Open it per run; :meth:`close` (or ``async with``) commits what is queued and stops the thread."""

    def __init__(
        self,
        store: Store,
        *,
        window_s: float = WINDOW_S,
        urgent_s: float = URGENT_S,
        committed: Callable[[Iterator[tuple[str, dict[str, Any]]]], None] | None = None,
    ) -> None:
        """``committed``: called on the writer's thread after each transaction, with its changes as (rollout id,
        fields) pairs in submission order (lazily: a caller with nobody to tell need not iterate them)."""
        self._path = store.path
        self._committed = committed
        self.window_s = window_s
        self.urgent_s = urgent_s
        self._pending: list[_Change] = []  # the open batch (appended on the loop, taken by a cut or close())
        self._lock = threading.Lock()
        self._batches: queue.SimpleQueue[list[_Change] | _Flush | None] = queue.SimpleQueue()
        self._timer: asyncio.TimerHandle | None = None  # the open batch's cut
        self._cut_at = 0.0
        self._closing = False
        self.error: StoreError | None = None
        self.batches = 0  # transactions committed (for tests and bench/engine.py)
        self._thread: threading.Thread | None = None

    # --- the engine's side (its event loop's thread) -------------------------------------------------------
    def submit(
        self,
        rollout_id: str,
        fields: dict[str, Any],
        *,
        cache: tuple[str, str, dict[str, Any]] | None = None,
        done: Callable[[StoreError | None], None] | None = None,
        urgent: bool = False,
        _waiter: tuple[asyncio.AbstractEventLoop, asyncio.Future[None]] | None = None,
    ) -> None:
        """Queue a change of ``rollout_id`` (and, in the same transaction, a cache entry). ``done`` is called
        from the writer's thread once it is committed (with None) or could not be (with the error)."""
        if self.error is not None:
            raise self.error
        with self._lock:  # close() may run in another thread: a change is either before its cut, or refused
            if self._closing:
                raise StoreError("the store writer is closed")
            self._pending.append(_Change(rollout_id, fields, cache, done, _waiter))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="store-writer", daemon=True)
                self._thread.start()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop to time the batch: it goes now
            self._cut()
            return
        # the first change of a batch sets its cut, an urgent one may bring it forward (the window's start is the
        # first change's time, as the loop saw it)
        cut_at = loop.time() + (self.urgent_s if urgent else self.window_s)
        timer = self._timer
        if timer is None or cut_at < self._cut_at:
            if timer is not None:
                timer.cancel()
            self._timer = loop.call_at(cut_at, self._cut)
            self._cut_at = cut_at

    async def commit(
        self,
        rollout_id: str,
        fields: dict[str, Any],
        *,
        cache: tuple[str, str, dict[str, Any]] | None = None,
        done: Callable[[StoreError | None], None] | None = None,
    ) -> None:
        """Queue a change that must be durable before the caller goes on, and wait until it is (raises the
        :class:`StoreError` if it cannot be)."""
        await self.commit_soon(rollout_id, fields, cache=cache, done=done)

    def commit_soon(
        self,
        rollout_id: str,
        fields: dict[str, Any],
        *,
        cache: tuple[str, str, dict[str, Any]] | None = None,
        done: Callable[[StoreError | None], None] | None = None,
        urgent: bool = True,
    ) -> asyncio.Future[None]:
        """:meth:`commit` without waiting: the change closes its batch within ``urgent_s`` (``urgent``: something
        waits for it; else within the window, as any change); the future returned (of the running loop) is settled
        once it is committed, or with the :class:`StoreError`. The engine hands a paid call's slot on from the
        future's callback, so its rollout goes on while the answer is written; when no rollout waits for that slot,
        the commit need not hurry (fewer transactions as a run ends)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        self.submit(rollout_id, fields, cache=cache, done=done, urgent=urgent, _waiter=(loop, future))
        return future

    async def flush(self) -> None:
        """Wait until everything queued so far is committed (raises the writer's :class:`StoreError`, if any)."""
        with self._lock:
            thread, closing = self._thread, self._closing
        if closing:  # close() handed everything to the thread, which ends once it is committed
            if thread is not None:
                await asyncio.to_thread(thread.join)
        elif thread is not None and self.error is None:
            self._cut()
            loop = asyncio.get_running_loop()
            future: asyncio.Future[None] = loop.create_future()
            self._batches.put(_Flush(loop, future))
            await future
        if self.error is not None:
            raise self.error

    def close(self) -> None:
        """Commit what is queued and stop the thread (blocking, from any thread; an error stays in :attr:`error`)."""
        with self._lock:
            if self._closing:
                thread = None if self._thread is threading.current_thread() else self._thread
            else:
                self._closing = True
                batch, self._pending = self._pending, []
                if batch:
                    self._batches.put(batch)
                self._batches.put(_STOP)
                thread = self._thread
        if thread is not None:
            thread.join()

    async def __aenter__(self) -> RolloutWriter:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.close)

    def _cut(self) -> None:
        """Close the open batch: hand it to the thread (on the loop: its timer, or a flush)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        with self._lock:
            batch, self._pending = self._pending, []
        if batch:
            self._batches.put(batch)

    # --- the writer's thread --------------------------------------------------------------------------------
    def _run(self) -> None:
        store: Store | None = None
        try:
            while True:
                changes, flushes, stop = self._next_batch()
                if changes:
                    if store is None and self.error is None:
                        try:
                            store = Store(self._path)
                        except StoreError as err:
                            self._fail(err)
                    self._write(store, changes)
                for flush in flushes:
                    _wake(flush.loop, [flush.future], self.error)
                if stop:
                    return
        finally:
            if store is not None:
                store.close()

    def _next_batch(self) -> tuple[list[_Change], list[_Flush], bool]:
        """Wait for a batch, then take every batch queued behind it too: (their changes, the flushes among them,
        whether close() ended the queue)."""
        item = self._batches.get()
        changes: list[_Change] = []
        flushes: list[_Flush] = []
        while True:
            if item is _STOP:
                return changes, flushes, True
            if isinstance(item, _Flush):
                flushes.append(item)
            else:
                changes += item
            try:
                item = self._batches.get_nowait()
            except queue.Empty:
                return changes, flushes, False

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
            if error is None and self._committed is not None:
                self._committed((change.rollout_id, change.fields) for change in batch)
        waiting: dict[asyncio.AbstractEventLoop, list[asyncio.Future[None]]] = {}
        for change in batch:
            if change.done is not None:
                change.done(error)
            if change.waiter is not None:
                waiting.setdefault(change.waiter[0], []).append(change.waiter[1])
        for loop, futures in waiting.items():  # one wake-up of each waiting loop per batch, not one per change
            _wake(loop, futures, error)

    def _fail(self, err: StoreError) -> StoreError:
        if self.error is None:
            self.error = err
        return self.error


def _wake(loop: asyncio.AbstractEventLoop, futures: list[asyncio.Future[None]], error: StoreError | None) -> None:
    try:
        loop.call_soon_threadsafe(_settle, futures, error)
    except RuntimeError:  # that loop has closed: nobody waits any more
        pass


def _settle(futures: list[asyncio.Future[None]], error: StoreError | None) -> None:
    for future in futures:
        if future.done():  # its rollout was cancelled meanwhile
            continue
        if error is None:
            future.set_result(None)
        else:
            future.set_exception(error)
