"""The engine's rollout pool (core/run/rollout_pool.py): a task per rollout made only when a slot frees up, the slot
handed on by a paid answer's commit, the first failure ending the run. (The engine with it: tests/test_engine_hot_path.py;
the crash guarantee: tests/test_crash_resume.py.)"""

from __future__ import annotations

import asyncio

import pytest

from svgagent.core.run.rollout_pool import RolloutPool
from svgagent.core.scoring.errors import StoreWriteError


async def test_queued_rollouts_start_as_slots_are_handed_back_and_free_ones_at_once() -> None:
    gates = {i: asyncio.Event() for i in (*range(8), 100, 101)}
    running: list[int] = []

    async def rollout(i: int) -> None:
        running.append(i)
        await gates[i].wait()
        if i < 100:
            pool.release()  # a queued rollout hands its slot on (the engine: once its answer is committed)

    pool: RolloutPool[int] = RolloutPool(rollout, 3)
    done = pool.start([100, 101], range(8))
    await asyncio.sleep(0)
    assert pool.started == 5 and sorted(running) == [0, 1, 2, 100, 101]  # 3 slots + the two that need none
    gates[1].set()
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert pool.started == 6 and running[-1] == 3  # the freed slot started the next queued rollout, no sooner
    for gate in gates.values():
        gate.set()
    await asyncio.wait_for(done, 5)
    assert sorted(running) == [*range(8), 100, 101]


async def test_a_failed_commit_ends_the_run_with_its_error_and_starts_nothing_more() -> None:
    loop = asyncio.get_running_loop()
    hold = asyncio.Event()

    async def rollout(i: int) -> None:
        await hold.wait()

    pool: RolloutPool[int] = RolloutPool(rollout, 2)
    done = pool.start([], range(6))
    await asyncio.sleep(0)
    stored = loop.create_future()
    stored.set_exception(StoreWriteError("disk is full"))
    pool.release_when_stored(stored)  # the slot is not handed on: the run stops
    assert pool.started == 2
    with pytest.raises(StoreWriteError):
        await done
    await pool.stop()
    assert pool.started == 2


async def test_a_rollout_that_raises_ends_the_run_and_stop_cancels_the_others() -> None:
    hold = asyncio.Event()
    cancelled: list[int] = []

    async def rollout(i: int) -> None:
        if i == 0:
            raise StoreWriteError("cannot write")
        try:
            await hold.wait()
        except asyncio.CancelledError:
            cancelled.append(i)
            raise

    pool: RolloutPool[int] = RolloutPool(rollout, 3)
    done = pool.start([], range(10))
    with pytest.raises(StoreWriteError):
        await done
    await pool.stop()
    assert sorted(cancelled) == [1, 2] and pool.started == 3
