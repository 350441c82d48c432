"""The server's store writes: the rollouts that end within one short window are stored in one transaction.

One SQLite transaction per served rollout was the largest share of the server's CPU after the HTTP work
(bench/serve.py; its commit alone ~130 us, most of it the WAL frames of the index pages every rollout touches).
:class:`Recorder` queues each ended rollout and commits what has queued :data:`WINDOW_S` after the first one, on the
event loop (a write is a few hundred microseconds: a thread hand-off would cost as much as it saves).

What is guaranteed — the same as one transaction per rollout:

- **A status is logged only after its rollout is committed.** :meth:`Recorder.record` returns once the batch that
  holds the rollout is committed (``conclude`` posts the status after that), so a rollout whose FINISHED status
  eval-protocol sees is in the store, with its picture.
- **Every waiter is settled, whatever the store raises.** One rollout that cannot be written (an SQLite error,
  or a value no statement takes) costs the others nothing: the batch is then written again with each on a
  savepoint of its own (``TrainingStore.record_many``), and that waiter gets a StoreError saying why. Should the
  batch's write raise anyway (a failed commit, or anything unforeseen), each rollout is written again on its own
  transaction, so only those that still cannot be written get their StoreError. The caller decides what a store
  failure means for the status it logs (:func:`~svgagent.core.serve.rollout.conclude`).
- **A waiter cancelled before its batch is committed takes its rollout out of the batch** (``stop()`` then stores
  it once, with what it had); after the commit, the rollout stays stored, and ``on_commit`` has said so.
- :meth:`Recorder.flush` (``stop()``) commits what is queued at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from svgagent.core.scoring.errors import StoreError
from svgagent.core.serve.training_runs import Served, ServedRef, TrainingStore, unstorable
from svgagent.core.store.sqlite_values import error_line

log = logging.getLogger("svgagent.serve")

WINDOW_S = 0.05  # a status waits at most this much longer: eval-protocol polls for it once a second


class Recorder:
    """Batches :meth:`TrainingStore.record_many` calls from one event loop (see the module docstring)."""

    def __init__(self, training: TrainingStore, *, window_s: float = WINDOW_S) -> None:
        self.training = training
        self.window_s = window_s
        self._queue: list[tuple[Served, asyncio.Future[ServedRef], Callable[[ServedRef], None] | None]] = []
        self._timer: asyncio.TimerHandle | None = None
        self.batches = 0  # for tests and benchmarks
        self.stored = 0

    @property
    def pending(self) -> int:
        """Rollouts queued and not yet committed."""
        return len(self._queue)

    async def record(self, served: Served, on_commit: Callable[[ServedRef], None] | None = None) -> ServedRef:
        """Store ``served`` with the rollouts that end near it; StoreError when it could not be. ``on_commit`` is
        called at the commit itself: a caller cancelled after the commit, before it resumed, still learns that
        its rollout is stored."""
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[ServedRef] = loop.create_future()
        item = (served, waiter, on_commit)
        self._queue.append(item)
        if self._timer is None:
            self._timer = loop.call_later(self.window_s, self.flush)
        try:
            return await waiter
        except asyncio.CancelledError:
            for i, queued in enumerate(self._queue):  # not written yet: it is not stored
                if queued is item:
                    del self._queue[i]
                    break
            raise

    def flush(self) -> None:
        """Commit what is queued now, and settle every one of its waiters (never raises: it runs as a timer)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        batch, self._queue = self._queue, []
        if not batch:
            return
        self.batches += 1
        try:
            outcomes: list[ServedRef | StoreError] = list(self.training.record_many([item[0] for item in batch]))
            if len(outcomes) != len(batch):
                raise StoreError(f"the store answered for {len(outcomes)} of {len(batch)} rollouts")
        except Exception as err:  # noqa: BLE001 - a failed commit, or anything unforeseen: each on its own
            log.warning(
                "storing %d rollouts together failed (%s); storing each on its own", len(batch), error_line(err)
            )
            outcomes = [self._alone(item[0]) for item in batch]
        for (_, waiter, on_commit), outcome in zip(batch, outcomes, strict=True):
            if isinstance(outcome, ServedRef):
                self.stored += 1
                if on_commit is not None:
                    on_commit(outcome)
                if not waiter.done():
                    waiter.set_result(outcome)
            elif not waiter.done():
                waiter.set_exception(outcome)

    def _alone(self, served: Served) -> ServedRef | StoreError:
        try:
            (outcome,) = self.training.record_many([served])
        except StoreError as err:
            return err
        except Exception as err:  # noqa: BLE001 - whatever it is, it is this rollout's failure alone
            return unstorable(err)
        return outcome
