"""The engine's rollouts started as policy slots free up: one task per rollout, made when it may start.

Before this, every rollout of a run got its task at once and waited on a semaphore for a policy slot: on a
1,000-rollout run at concurrency 256, 744 tasks parked on the semaphore, each woken once by the slot it got
(BENCHMARKS.md, "Engine CPU, fifth pass"). Here a run's rollouts queue as records; :class:`RolloutPool` starts one
task per free slot, and a slot handed back (:meth:`RolloutPool.release`) starts the next rollout directly. The
engine hands a slot back when the policy answer of its rollout is committed (the writer's future callback), or at
once when there was nothing to pay for (a cached answer, a failed call), so at most ``slots`` policy calls are
unacknowledged at any time, as with the semaphore.

Rollouts that need no policy call (a resume that stored the answer) start at once, without a slot. The first
exception a rollout's task raises (a :class:`StoreError`: rollouts record their own failures) or that
:meth:`RolloutPool.fail` is given ends :attr:`RolloutPool.done` with it; :meth:`RolloutPool.stop` then cancels
what runs and starts nothing more.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Coroutine, Iterable
from typing import Any, Generic, TypeVar

R = TypeVar("R")


class RolloutPool(Generic[R]):
    """Runs ``run(record)`` for every record given to :meth:`start`, at most ``slots`` of the queued ones holding a
    slot at once (see the module docstring)."""

    def __init__(self, run: Callable[[R], Coroutine[Any, Any, None]], slots: int) -> None:
        self._run = run
        self._free = max(1, slots)
        self._queue: deque[R] = deque()
        self._live: set[asyncio.Task[None]] = set()
        self._stopping = False
        self.done: asyncio.Future[None] | None = None
        self.started = 0  # tasks made (for tests)

    def start(self, free: Iterable[R], queued: Iterable[R]) -> asyncio.Future[None]:
        """Start ``free`` now and ``queued`` as slots allow; the future returned ends when all of them have
        (with the first failure: see the module docstring)."""
        loop = asyncio.get_running_loop()
        self.done = loop.create_future()
        for record in free:
            self._spawn(record)
        self._queue.extend(queued)
        while self._free and self._queue:
            self._free -= 1
            self._spawn(self._queue.popleft())
        self._check()
        return self.done

    @property
    def waiting(self) -> bool:
        """Whether a rollout waits for a slot (a slot handed back now starts one)."""
        return bool(self._queue) and not self._stopping

    def release(self) -> None:
        """A slot is free again: the next queued rollout takes it (on the loop)."""
        if self._queue and not self._stopping:
            self._spawn(self._queue.popleft())
        else:
            self._free += 1

    def release_when_stored(self, stored: asyncio.Future[None]) -> None:
        """The done-callback of a policy answer's commit: the slot goes to the next rollout (a storage error
        ends the run instead: :meth:`check_stored`)."""
        if self.check_stored(stored):
            self.release()

    def check_stored(self, stored: asyncio.Future[None]) -> bool:
        """Whether a paid answer's commit succeeded; if not, :meth:`fail` with its error."""
        error = None if stored.cancelled() else stored.exception()
        if error is not None:
            self.fail(error)
        return error is None

    def fail(self, error: BaseException) -> None:
        """End :attr:`done` with ``error`` (unless it has ended) and start nothing more."""
        self._stopping = True
        if self.done is not None and not self.done.done():
            self.done.set_exception(error)

    def drain(self) -> None:
        """Start nothing more; the rollouts that run finish, and :attr:`done` ends with the last of them (a run's
        budget reached: core/run/budget.py)."""
        self._stopping = True
        self._queue.clear()
        self._check()

    async def stop(self) -> None:
        """Start nothing more, cancel the rollouts that run and wait until they have ended."""
        self._stopping = True
        self._queue.clear()
        tasks = list(self._live)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _spawn(self, record: R) -> None:
        task = asyncio.get_running_loop().create_task(self._run(record))
        self.started += 1
        self._live.add(task)
        task.add_done_callback(self._ended)

    def _ended(self, task: asyncio.Task[None]) -> None:
        self._live.discard(task)
        if not task.cancelled():
            error = task.exception()
            if error is not None:
                self.fail(error)
                return
        self._check()

    def _check(self) -> None:
        if not self._live and not self._queue and self.done is not None and not self.done.done():
            self.done.set_result(None)
