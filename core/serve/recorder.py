"""The server's store writes: the rollouts that end within one short window are stored in one transaction.

One SQLite transaction per served rollout was the largest share of the server's CPU after the HTTP work
(bench/serve.py; its commit alone ~130 us, most of it the WAL frames of the index pages every rollout touches).
:class:`Recorder` queues each ended rollout and commits what has queued :data:`WINDOW_S` after the first one, on the
event loop (a write is a few hundred microseconds: a thread hand-off would cost as much as it saves).

What is guaranteed — the same as one transaction per rollout:

- **A status is logged only after its rollout is committed.** :meth:`Recorder.record` returns once the batch that
  holds the rollout is committed (``conclude`` posts the status after that), so a rollout whose FINISHED status
  eval-protocol sees is in the store, with its picture.
- **One rollout that cannot be written costs the others nothing**: the batch is then written again with each on a
  savepoint of its own (``TrainingStore.record_many``); its waiter gets the StoreError. A batch whose commit fails
  gives every waiter the StoreError, and none of it is stored. Either way the caller logs the status anyway (a
  store failure is never an error status: eval-protocol would pay for the same answer again).
- **A waiter cancelled before its batch is committed takes its rollout out of the batch** (``stop()`` then stores
  and logs it as stopped, once); after the commit, the rollout stays stored.
- :meth:`Recorder.flush` (``stop()``) commits what is queued at once.
"""

from __future__ import annotations

import asyncio
import sqlite3

from svgagent.core.scoring.errors import StoreError
from svgagent.core.training import Served, ServedRef, TrainingStore

WINDOW_S = 0.05  # a status waits at most this much longer: eval-protocol polls for it once a second


class Recorder:
    """Batches :meth:`TrainingStore.record_many` calls from one event loop (see the module docstring)."""

    def __init__(self, training: TrainingStore, *, window_s: float = WINDOW_S) -> None:
        self.training = training
        self.window_s = window_s
        self._queue: list[tuple[Served, asyncio.Future[ServedRef]]] = []
        self._timer: asyncio.TimerHandle | None = None
        self.batches = 0  # for tests and benchmarks
        self.stored = 0

    @property
    def pending(self) -> int:
        """Rollouts queued and not yet committed."""
        return len(self._queue)

    async def record(self, served: Served) -> ServedRef:
        """Store ``served`` with the rollouts that end near it; StoreError (or sqlite3.Error) when it could not be."""
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[ServedRef] = loop.create_future()
        item = (served, waiter)
        self._queue.append(item)
        if self._timer is None:
            self._timer = loop.call_later(self.window_s, self.flush)
        try:
            return await waiter
        except asyncio.CancelledError:
            if item in self._queue:  # not written yet: it is not stored
                self._queue.remove(item)
            raise

    def flush(self) -> None:
        """Commit what is queued now, and settle its waiters."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        batch, self._queue = self._queue, []
        if not batch:
            return
        outcomes: list[ServedRef | StoreError | sqlite3.Error]
        try:
            outcomes = list(self.training.record_many([served for served, _ in batch]))
        except (StoreError, sqlite3.Error) as err:
            outcomes = [err] * len(batch)
        self.batches += 1
        for (_, waiter), outcome in zip(batch, outcomes, strict=True):
            if isinstance(outcome, ServedRef):
                self.stored += 1
                if not waiter.done():
                    waiter.set_result(outcome)
            elif not waiter.done():
                waiter.set_exception(outcome)
