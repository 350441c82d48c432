"""The engine end to end against the project's simulator, through its real chat client (core/scoring/endpoint.py)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from svgagent.core.config.settings import load_settings
from svgagent.core.demo import demo_overrides
from svgagent.core.run.dataset import load_dataset
from svgagent.core.run.engine import Engine
from svgagent.core.scoring.models import RolloutStatus
from svgagent.core.scoring.render import Renderer
from svgagent.core.sim.simulator import Simulator
from svgagent.core.store.run_store import Store

STATES = ["generating", "rendering", "judging"]


@pytest.fixture(scope="module")
def renderer() -> Renderer:
    with Renderer(size=256, workers=2) as r:
        yield r


@pytest.fixture
def sim() -> Simulator:
    with Simulator() as s:
        yield s


def make(sim: Simulator, tmp_path: Path, **overrides: object):
    settings = load_settings(
        **{
            **demo_overrides(sim.base_url),
            "store": tmp_path / "runs.db",
            "render_size": 256,
            "max_retries": 2,
            "request_timeout_s": 5,
            **overrides,
        }
    )
    return settings, Store(settings.store_path())


async def run_once(settings, store, renderer, *, name="t", use_cache=None):
    async with Engine(settings, store, renderer=renderer, use_cache=use_cache) as engine:
        sub = engine.bus.subscribe()
        run_id = engine.create_run(load_dataset("builtin"), name=name)
        summary = await engine.run(run_id)
        sub.close()
        events = [e async for e in sub]
    return run_id, summary, events


async def test_run_end_to_end(sim: Simulator, tmp_path: Path, renderer: Renderer) -> None:
    settings, store = make(sim, tmp_path, rows=6, samples=2)
    run_id, summary, events = await run_once(settings, store, renderer)
    rollouts = store.list_rollouts(run_id, heavy=True)
    assert len(rollouts) == 12
    assert all(r.status.terminal for r in rollouts)
    assert summary.rollouts == 12
    assert summary.done == 12
    assert store.get_run(run_id).status == "completed"
    assert sim.stats()["requests"]["policy"] == 12  # each rollout generated exactly once
    scored = [r for r in rollouts if r.status is RolloutStatus.SCORED]
    assert scored, "the simulator's mix always includes good answers"
    for r in scored:
        assert r.png is not None
        assert r.png.startswith(b"\x89PNG")
        assert r.svg
        assert r.raw_answer
        assert r.rationale
        assert 0 <= r.fulfilled <= r.total
        assert r.score == pytest.approx(r.fulfilled / r.total)
        assert r.generation_s > 0
        assert r.render_s > 0
        assert r.judge_s > 0
        assert r.prompt_tokens > 0
    for r in rollouts:
        if r.status is RolloutStatus.FAILED:
            assert r.reason, "every failure has a reason"
            if r.is_score_valid:  # a model fault: valid zero
                assert r.score == 0.0
    # every rollout published its path through the states, in order, ending terminal
    by_id: dict[str, list[str]] = {}
    for e in events:
        by_id.setdefault(e.rollout_id, []).append(e.status.value)
    assert set(by_id) == {r.rollout_id for r in rollouts}
    for seq in by_id.values():
        assert seq[0] == "generating" and seq[-1] in ("scored", "failed"), seq
        assert [s for s in seq if s in STATES] == STATES[: len([s for s in seq if s in STATES])]
    # the mean counts valid scores only
    valid = [r.score for r in rollouts if r.is_score_valid]
    assert summary.mean_score == pytest.approx(sum(valid) / len(valid))


async def test_per_requirement_mode_keeps_each_verdict(sim: Simulator, tmp_path: Path, renderer: Renderer) -> None:
    settings, store = make(sim, tmp_path, rows=4, judge_mode="per-requirement")
    run_id, _, _ = await run_once(settings, store, renderer)
    scored = [r for r in store.list_rollouts(run_id, heavy=True) if r.status is RolloutStatus.SCORED]
    assert scored
    for r in scored:
        assert r.verdicts is not None
        assert [v[0] for v in r.verdicts] == list(range(1, r.total + 1))
        assert r.fulfilled == sum(1 for v in r.verdicts if v[1])


async def test_cache_avoids_paying_twice(sim: Simulator, tmp_path: Path, renderer: Renderer) -> None:
    settings, store = make(sim, tmp_path, rows=3, samples=2, cache=True)
    first, s1, _ = await run_once(settings, store, renderer)
    calls = sim.stats()["requests"]
    second, s2, _ = await run_once(settings, store, renderer)
    assert sim.stats()["requests"]["policy"] == calls["policy"]
    assert sim.stats()["requests"]["judge"] == calls["judge"]
    assert s1.mean_score == s2.mean_score
    assert all(r.cached for r in store.list_rollouts(second))
    await run_once(settings, store, renderer, use_cache=False)
    assert sim.stats()["requests"]["policy"] == calls["policy"] + 6


async def test_faults_end_every_rollout_terminal_within_limits(tmp_path: Path, renderer: Renderer) -> None:
    # Every judge answer that no numbered fault replaces is garbage (judge_garbage_every=1): with a sparser rate the
    # interleaving of policy and judge requests decided whether any garbage was sent at all (0 in about one run in 4).
    knobs = dict(
        rate_limit_every=4,
        retry_after_s=0.01,
        error_5xx_every=7,
        empty_choices_every=9,
        judge_garbage_every=1,
        timeout_every=13,
        timeout_hang_s=3.0,
        reset_every=17,
    )
    with Simulator(**knobs) as sim:
        settings, store = make(
            sim, tmp_path, rows=12, samples=2, concurrency=4, judge_concurrency=3, request_timeout_s=0.8, max_retries=1
        )
        run_id, summary, _ = await run_once(settings, store, renderer)
        stats = sim.stats()
    rollouts = store.list_rollouts(run_id)
    assert len(rollouts) == 24
    assert all(r.status.terminal for r in rollouts)
    assert all(r.reason for r in rollouts if r.status is RolloutStatus.FAILED)
    assert stats["max_in_flight"]["policy"] <= 4
    assert stats["max_in_flight"]["judge"] <= 3
    assert stats["faults"]["rate_limit"] > 0
    assert stats["faults"]["judge_garbage"] > 0
    assert any("no usable answer" in r.reason for r in rollouts if r.status is RolloutStatus.FAILED)
    # retries are bounded: at most (1 + max_retries) attempts per call, judge format retry at most doubles it
    assert stats["requests"]["policy"] <= 24 * 2
    assert stats["requests"]["judge"] <= 24 * 2 * 2
    assert summary.done == 24


async def test_stop_then_resume_keeps_finished_rollouts(tmp_path: Path, renderer: Renderer) -> None:
    with Simulator(policy_latency_s=0.05, judge_latency_s=0.05) as sim:
        settings, store = make(sim, tmp_path, rows=10, samples=2, concurrency=2, judge_concurrency=2)
        async with Engine(settings, store, renderer=renderer) as engine:
            run_id = engine.create_run(load_dataset("builtin"))
            assert store.get_run(run_id).worked_s is None
            sub = engine.bus.subscribe()
            started = time.monotonic()
            task = asyncio.create_task(engine.run(run_id))
            finished = 0
            async for event in sub:
                finished += event.status.terminal
                if finished >= 5:
                    break
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        assert store.get_run(run_id).status == "interrupted"
        first = store.get_run(run_id).worked_s  # the run's elapsed: what its sessions worked, summed
        assert first is not None and 0 < first < time.monotonic() - started
        before = {r.rollout_id: r for r in store.list_rollouts(run_id) if r.status.terminal}
        assert 5 <= len(before) < 20
        resumed = time.monotonic()
        async with Engine(settings, store, renderer=renderer) as engine:
            summary = await engine.run(run_id)
        assert first < store.get_run(run_id).worked_s < first + time.monotonic() - resumed  # type: ignore[operator]
        after = store.list_rollouts(run_id)
        assert summary.done == 20
        assert len(after) == 20
        assert len({(r.row_index, r.sample_index) for r in after}) == 20
        for rid, old in before.items():  # finished rollouts untouched by the resume
            assert store.get_rollout(rid).updated == old.updated
        # only requests cut off in flight by the stop (at most `concurrency`) were sent again
        assert 20 <= sim.stats()["requests"]["policy"] <= 20 + settings.concurrency


async def test_reruns_and_new_runs_never_get_a_cached_answer(
    sim: Simulator, tmp_path: Path, renderer: Renderer
) -> None:
    # issue 11: attempt 2 was attempt 1's cached answer. A rerun is a new sample even with the cache on; a new run
    # asks the endpoint unless the person turned the cache on.
    settings, store = make(sim, tmp_path, rows=3, cache=True)
    run_id, _, _ = await run_once(settings, store, renderer)
    paid = sim.stats()["requests"]["policy"]
    store.new_attempts(run_id, [r.rollout_id for r in store.list_rollouts(run_id)])
    async with Engine(settings, store, renderer=renderer) as engine:
        await engine.run(run_id)
    reruns = store.list_rollouts(run_id)
    assert [r.attempt for r in reruns] == [2, 2, 2]
    assert not any(r.cached for r in reruns)
    assert sim.stats()["requests"]["policy"] == paid + 3
    default, _ = make(sim, tmp_path)
    assert default.cache is False
    fresh, _, _ = await run_once(default.model_copy(update={"rows": 3}), store, renderer)
    assert not any(r.cached for r in store.list_rollouts(fresh))
    assert sim.stats()["requests"]["policy"] == paid + 6


# --- a run shared between engine processes (--workers) ----------------------------------------------------------------


async def test_a_run_shared_between_worker_processes_ends_like_one(
    sim: Simulator, tmp_path: Path, renderer: Renderer
) -> None:
    settings, store = make(
        sim, tmp_path, rows=10, samples=2, workers=2, concurrency=4, judge_concurrency=4, render_size=128
    )
    run_id, summary, events = await run_once(settings, store, renderer, name="workers")
    rollouts = store.list_rollouts(run_id)
    assert summary.done == summary.rollouts == len(rollouts) == 20
    assert all(r.status.terminal for r in rollouts)
    assert store.get_run(run_id).status == "completed"
    assert sim.stats()["requests"]["policy"] == 20  # every rollout generated once, by one of the workers
    # the workers' events reach the parent's bus: each rollout was seen going through its states
    assert {e.rollout_id for e in events} == {r.rollout_id for r in rollouts}
    assert {e.status.value for e in events} >= {"generating", "scored"}


def test_rollouts_are_dealt_round_robin_and_workers_follow_the_concurrency(monkeypatch) -> None:
    from svgagent.core.run import engine as engine_module
    from svgagent.core.run.engine import engine_workers
    from svgagent.core.run.engine_workers import shard

    assert shard(["a", "b", "c", "d", "e"], 2) == [["a", "c", "e"], ["b", "d"]]
    assert sorted(sum(shard([str(i) for i in range(7)], 3), [])) == [str(i) for i in range(7)]
    monkeypatch.setattr(engine_module, "usable_cpus", lambda: 8)
    assert engine_workers(load_settings(concurrency=16)) == 1
    assert engine_workers(load_settings(concurrency=256)) == 2
    assert engine_workers(load_settings(concurrency=1024)) == 4  # half the CPUs at most
    assert engine_workers(load_settings(concurrency=1024, workers=6)) == 6
    monkeypatch.setattr(engine_module, "usable_cpus", lambda: 2)
    assert engine_workers(load_settings(concurrency=1024)) == 1
