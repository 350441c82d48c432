"""A run shared between engine processes (``--workers N``): each with its own event loop, clients and render pool.

One event loop spends ~3 ms of CPU per rollout (two HTTP calls, parsing, store writes; bench/engine.py), so it
keeps up with about :data:`svgagent.core.run.engine.LOOP_CONCURRENCY` calls in flight at a few tenths of a second of
latency; past that, the loop and not the endpoint is what a run waits for. This module splits the run's queued
rollouts round-robin between N child engines (:class:`svgagent.core.run.engine_process.EngineProcess`, the app's
engine-process plumbing), each with a share of the concurrency and of the render workers, all writing to the one
WAL store. The parent keeps what a run has once: the lease (and its heartbeat), the run's status and summary, and
the event bus — the children's events are republished on it, so progress (the CLI's bar, the app's table) follows
a sharded run like any other.

Stopping and crashing: cancelling the parent cancels every child; a child that fails stops the others and the run
is interrupted; if the parent dies, the children see their stdin close and stop (each commits what it queued). A
resume resets and re-shards what is unfinished, so resume and the crash suite hold as with one process.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

from svgagent.core.run.engine_process import EngineProcess
from svgagent.core.scoring.models import RolloutStatus
from svgagent.core.scoring.render import usable_cpus
from svgagent.core.store.leases import LeaseOwner
from svgagent.core.store.typed_rows import RunStatus, RunSummary


def shard(ids: list[str], count: int) -> list[list[str]]:
    """``ids`` dealt round-robin into ``count`` lists (neighbouring rows land in different workers)."""
    return [ids[index::count] for index in range(count)]


async def run_with_workers(engine: Any, run_id: str, owner: LeaseOwner, count: int) -> RunSummary:
    """Process the queued rollouts of ``run_id`` (already reset and leased by ``owner``) in ``count`` child
    engines; returns the run's summary (see the module docstring). ``engine`` is the parent's
    :class:`svgagent.core.run.engine.Engine` (its store, settings, bus, lease heartbeat and run bookkeeping)."""
    store, settings = engine.store, engine.settings
    pending = await asyncio.to_thread(
        engine._read, lambda s: [r.rollout_id for r in s.list_rollouts(run_id, statuses=[RolloutStatus.QUEUED.value])]
    )
    shards = [ids for ids in shard(pending, count) if ids]
    store.set_run_status(run_id, RunStatus.RUNNING)
    child_settings = settings.model_copy(
        update={
            "concurrency": math.ceil(settings.concurrency / max(1, len(shards))),
            "judge_concurrency": math.ceil(settings.judge_concurrency / max(1, len(shards))),
            "workers": 1,
            "cache": engine.use_cache,
        }
    )
    render_workers = max(1, usable_cpus() // max(1, len(shards)))
    children = [
        EngineProcess(
            child_settings, str(store.path), engine.bus, run_id, rollouts=ids, render_workers=render_workers, nice=False
        )
        for ids in shards
    ]
    for child in children:
        child.start()
    work = asyncio.gather(*(asyncio.wrap_future(child.future) for child in children))
    beat = asyncio.create_task(engine._keep_lease(run_id, owner))
    try:
        done, _ = await asyncio.wait({work, beat}, return_when=asyncio.FIRST_COMPLETED)
        if work not in done:
            beat.result()  # the heartbeat only ends by raising: lease lost or store unwritable
        work.result()
    except BaseException:
        for child in children:
            child.cancel()
        await asyncio.shield(asyncio.to_thread(lambda: [child.join() for child in children]))
        for task in (work, beat):
            task.cancel()
        await asyncio.gather(work, beat, return_exceptions=True)
        engine._mark(run_id, RunStatus.INTERRUPTED)
        raise
    beat.cancel()
    return await engine._finish(run_id)
