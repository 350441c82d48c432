"""What the engine's per-rollout work was cut to (issue 13), checked for what it sends and stores, not for speed
(bench/engine.py measures that): the policy request built once per dataset row, the PNG stored once, a task per
rollout only when a policy slot frees up, no events built for nobody, and the collector's setting for a run
made by the processes that own one (svgagent eval, the engine's process), not by Engine.run."""

from __future__ import annotations

import asyncio
import gc
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from svgagent.core.config.settings import load_settings
from svgagent.core.demo import demo_overrides
from svgagent.core.run import engine as engine_module
from svgagent.core.run.dataset import load_dataset
from svgagent.core.run.engine import Engine
from svgagent.core.run.prompt import format_prompt
from svgagent.core.scoring.endpoint import endpoint_client, http_client
from svgagent.core.scoring.models import RolloutStatus
from svgagent.core.scoring.render import Renderer
from svgagent.core.sim.simulator import Simulator
from svgagent.core.store.batch_writer import RolloutWriter
from svgagent.core.store.run_store import Store


@pytest.fixture(scope="module")
def renderer() -> Renderer:
    with Renderer(size=128, workers=1) as r:
        yield r


class Recorder:
    """The engine's own client (openai's on the bounded HTTP client), keeping every body it sends and counting, at
    each request, the rollout tasks that exist and the requests in flight (httpx2's event hooks)."""

    def __init__(self, url: str) -> None:
        self.bodies: list[bytes] = []
        self.tasks_seen: list[int] = []
        self.in_flight = self.most_in_flight = 0
        http = http_client(timeout_s=10)
        http.event_hooks = {"request": [self._sent], "response": [self._answered]}
        self.client = endpoint_client(url, "k", timeout_s=10, max_retries=0, http=http)

    async def _sent(self, request: Any) -> None:
        self.bodies.append(request.content)
        self.tasks_seen.append(sum(1 for t in asyncio.all_tasks() if t.get_coro().__qualname__ == "Engine._rollout"))
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)

    async def _answered(self, response: Any) -> None:
        self.in_flight -= 1

    async def close(self) -> None:
        await self.client.close()


def settings_for(url: str, tmp_path: Path, **overrides: Any):
    return load_settings(
        **{
            **demo_overrides(url),
            "store": tmp_path / "runs.db",
            "render_size": 128,
            "max_retries": 0,
            "request_timeout_s": 10,
            **overrides,
        }
    )


async def test_every_sample_of_a_row_sends_the_request_built_once_for_the_row(
    tmp_path: Path, renderer: Renderer, monkeypatch
) -> None:
    builds: list[str] = []
    real = engine_module.format_prompt

    def counted(prompt: str, requirements: Any) -> str:
        builds.append(prompt)
        return real(prompt, requirements)

    monkeypatch.setattr(engine_module, "format_prompt", counted)
    with Simulator() as sim:
        settings = settings_for(sim.base_url, tmp_path, rows=3, samples=3, temperature=0.7, max_tokens=900)
        policy = Recorder(sim.base_url)
        with Store(settings.store_path()) as store:
            async with Engine(settings, store, renderer=renderer, policy=policy.client) as engine:
                run_id = engine.create_run(load_dataset("builtin"))
                await engine.run(run_id)
            rollouts = store.list_rollouts(run_id)
            await policy.close()
    assert len(rollouts) == 9 and all(r.status.terminal for r in rollouts)
    assert len(builds) == 3 and len(set(builds)) == 3  # one build per row, not per sample
    assert len(policy.bodies) == 9
    expected = {}
    for r in rollouts:
        expected[r.row_index] = {
            "model": settings.model,
            "messages": [{"role": "user", "content": format_prompt(r.prompt, r.requirements)}],
            "temperature": 0.7,
            "max_tokens": 900,
        }
    sent = [json.loads(body) for body in policy.bodies]
    # each body is the request of one row, as the openai-shaped dict path serialises it, and every row was asked
    assert sorted(map(json.dumps, sent)) == sorted(json.dumps(expected[r.row_index]) for r in rollouts)


async def test_the_png_is_stored_once_with_the_rollouts_end(tmp_path: Path, renderer: Renderer, monkeypatch) -> None:
    """``judging`` is stored without the PNG (SQLite rewrites a whole row per UPDATE: a PNG stored a state early
    was written twice); the verdict carries it, and so does a judge failure, so the picture is never lost."""
    changes: list[tuple[str, dict[str, Any]]] = []
    real_submit = RolloutWriter.submit

    def submit(self: RolloutWriter, rollout_id: str, fields: dict[str, Any], **kwargs: Any) -> None:
        changes.append((rollout_id, fields))
        real_submit(self, rollout_id, fields, **kwargs)

    monkeypatch.setattr(RolloutWriter, "submit", submit)
    with Simulator() as sim:
        settings = settings_for(sim.base_url, tmp_path, rows=4, samples=1)
        with Store(settings.store_path()) as store:
            async with Engine(settings, store, renderer=renderer) as engine:
                judged = engine.create_run(load_dataset("builtin"))
                await engine.run(judged)
            # the judge unreachable: its failure still keeps the picture the rollout drew
            unreachable = endpoint_client("http://127.0.0.1:9/v1", "k", timeout_s=10, max_retries=0)
            async with Engine(settings, store, renderer=renderer, judge=unreachable) as engine:
                failed = engine.create_run(load_dataset("builtin"))
                await engine.run(failed)
            await unreachable.close()
            judged_rows = store.list_rollouts(judged, heavy=True)
            failed_rows = store.list_rollouts(failed, heavy=True)
    judging = [fields for _, fields in changes if fields["status"] is RolloutStatus.JUDGING]
    assert judging and all("png" not in fields for fields in judging)
    assert all(fields["render_s"] > 0 for fields in judging)
    with_png = [fields["status"] for _, fields in changes if "png" in fields]
    assert with_png and set(with_png) <= {RolloutStatus.SCORED, RolloutStatus.FAILED}
    scored = [r for r in judged_rows if r.status is RolloutStatus.SCORED]
    assert scored and all(r.png is not None and r.png.startswith(b"\x89PNG") for r in scored)
    judge_failures = [r for r in failed_rows if r.failure_kind is not None and r.failure_kind.value == "unreachable"]
    assert judge_failures and all(not r.is_score_valid for r in judge_failures)
    assert all(r.png is not None and r.png.startswith(b"\x89PNG") for r in judge_failures)


async def test_a_rollout_gets_its_task_when_a_policy_slot_frees_up(tmp_path: Path, renderer: Renderer) -> None:
    """Rollouts no longer all get a task up front that parks on a semaphore: with 12 rollouts at concurrency 2, the
    first policy request finds 2 rollout tasks, not 12; no more than 2 policy calls are ever in flight; the run ends
    with every rollout stored as before."""
    with Simulator(policy_latency_s=0.02) as sim:
        settings = settings_for(sim.base_url, tmp_path, rows=4, samples=3, concurrency=2, judge_concurrency=2)
        policy = Recorder(sim.base_url)
        with Store(settings.store_path()) as store:
            async with Engine(settings, store, renderer=renderer, policy=policy.client) as engine:
                run_id = engine.create_run(load_dataset("builtin"))
                summary = await engine.run(run_id)
            rollouts = store.list_rollouts(run_id)
        await policy.close()
    assert len(rollouts) == 12 and all(r.status.terminal for r in rollouts) and summary.rollouts == 12
    assert len(policy.bodies) == 12
    assert policy.tasks_seen[0] <= 2, policy.tasks_seen
    assert policy.most_in_flight <= 2


async def test_a_paid_answer_closes_its_batch_early_only_while_a_call_waits_for_its_slot(
    tmp_path: Path, renderer: Renderer, monkeypatch
) -> None:
    """6 rollouts, 2 policy slots, 10 judge slots: the first four policy answers are committed urgently (a queued
    rollout takes each one's slot), the last (and the fifth when the fourth's commit is back) and every verdict (a judge slot is always
    free) in the window, as any change; each slot is still handed on only from its commit's callback (the crash suite checks what that
    guarantees)."""
    seen: list[tuple[str, bool]] = []
    real = RolloutWriter.commit_soon

    def recording(self: RolloutWriter, rollout_id: str, fields: dict[str, Any], **kwargs: Any) -> Any:
        seen.append(("judge" if "png" in fields else "policy", kwargs.get("urgent", True)))
        return real(self, rollout_id, fields, **kwargs)

    monkeypatch.setattr(RolloutWriter, "commit_soon", recording)
    with Simulator(policy_latency_s=0.02) as sim:
        settings = settings_for(sim.base_url, tmp_path, rows=2, samples=3, concurrency=2, judge_concurrency=10)
        with Store(settings.store_path()) as store:
            async with Engine(settings, store, renderer=renderer) as engine:
                summary = await engine.run(run_id := engine.create_run(load_dataset("builtin")))
            judged = sum(r.status is RolloutStatus.SCORED for r in store.list_rollouts(run_id))  # a verdict each
    assert summary.done == 6
    policy = [urgent for what, urgent in seen if what == "policy"]
    # Answers 1-4 always find a rollout queued (2 slots + at most 3 handed on < 6), the 6th never (all 6 have
    # started). The 5th finds rollout 6 still queued when the 4th answer's commit has not come back yet: a slow
    # commit (a loaded machine) makes it urgent too, which is right, so either is correct there.
    assert len(policy) == 6 and policy[:4] == [True] * 4 and policy[5] is False
    assert [urgent for what, urgent in seen if what == "judge"] == [False] * judged


async def test_no_event_is_built_when_nobody_subscribes_and_every_change_is_published_when_one_does(
    tmp_path: Path, renderer: Renderer, monkeypatch
) -> None:
    """A headless run without a follower does not build a RolloutUpdate per state change; with a subscriber, every
    committed change is published (after its commit, as before)."""
    built: list[Any] = []
    real = engine_module.RolloutUpdate

    def counted(*args: Any) -> Any:
        built.append(args)
        return real(*args)

    monkeypatch.setattr(engine_module, "RolloutUpdate", counted)
    with Simulator() as sim:
        settings = settings_for(sim.base_url, tmp_path, rows=3, samples=1)
        with Store(settings.store_path()) as store:
            async with Engine(settings, store, renderer=renderer) as engine:
                await engine.run(engine.create_run(load_dataset("builtin")))
                assert built == []
                events = engine.bus.subscribe()
                run_id = engine.create_run(load_dataset("builtin"))
                await engine.run(run_id)
                seen = events.drain()
            rollouts = store.list_rollouts(run_id)
    assert len(seen) == len(built) > 0
    assert {e.rollout_id for e in seen} == {r.rollout_id for r in rollouts}
    final = {e.rollout_id: e.status for e in seen}  # each rollout's last event is the state it was stored in
    assert final == {r.rollout_id: r.status for r in rollouts}


def _collector() -> tuple[int, int]:
    """How many objects are out of the collector's sight, and its young generation's threshold."""
    return gc.get_freeze_count(), gc.get_threshold()[0]


async def test_an_engine_run_leaves_the_collector_as_it_found_it(tmp_path: Path, renderer: Renderer) -> None:
    """Engine.run is a library call (the app, imports, tests call it): no process-wide GC setting of its own."""
    gc.unfreeze()
    before = _collector()
    with Simulator() as sim:
        settings = settings_for(sim.base_url, tmp_path, rows=1, samples=1)
        with Store(settings.store_path()) as store:
            async with Engine(settings, store, renderer=renderer) as engine:
                await engine.run(engine.create_run(load_dataset("builtin")))
    assert _collector() == before == (0, before[1])


@pytest.fixture
def python_default_thresholds() -> Iterator[None]:
    """The collector as a fresh `svgagent eval` process has it (the test processes run with their own, conftest)."""
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*saved)


async def test_the_eval_command_runs_the_engine_with_what_exists_out_of_the_collectors_sight(
    tmp_path: Path, renderer: Renderer, python_default_thresholds: None
) -> None:
    """`svgagent eval` owns its process: while its run goes, what existed when it started is frozen and young
    collections are rarer; afterwards the collector is as it was."""
    from svgagent.core.startup_gc import YOUNG_THRESHOLD
    from svgagent.tui.cli.eval import with_progress

    gc.unfreeze()
    before = _collector()
    during: list[tuple[int, int]] = []
    with Simulator() as sim:
        settings = settings_for(sim.base_url, tmp_path, rows=1, samples=1)
        with Store(settings.store_path()) as store:
            async with Engine(settings, store, renderer=renderer) as engine:
                real = engine.run

                async def run(run_id: str) -> Any:
                    during.append(_collector())
                    return await real(run_id)

                engine.run = run  # type: ignore[method-assign]
                summary = await with_progress(engine, engine.create_run(load_dataset("builtin")), "run")
    assert summary.done == 1
    assert during[0][0] > 0 and during[0][1] == YOUNG_THRESHOLD != before[1]
    assert _collector() == before


class GcProbeEngine:
    """Stands in for core.engine.Engine in the engine's process: notes the collector's state on its run's rollout."""

    def __init__(self, settings: Any, store: Store, *, bus: Any) -> None:
        self.store = store

    async def run(self, run_id: str) -> Any:
        frozen, young = _collector()
        self.store.update_rollout(self.store.list_rollouts(run_id)[0].rollout_id, reason=f"{frozen} {young}")
        return self.store.summarize(run_id, 0.5)

    async def aclose(self) -> None:
        pass


def test_the_engine_process_runs_the_engine_with_what_exists_out_of_the_collectors_sight(tmp_path: Path) -> None:
    from svgagent.core.run.engine_process import EngineProcess
    from svgagent.core.run.events import EventBus
    from svgagent.core.startup_gc import YOUNG_THRESHOLD

    settings = settings_for("http://127.0.0.1:9/v1", tmp_path, rows=1, samples=1)
    with Store(settings.store_path()) as store:
        run_id = store.create_run(name=None, settings={}, dataset={}, rows=load_dataset("builtin").rows[:1], samples=1)
        child = EngineProcess(
            settings,
            str(store.path),
            EventBus(),
            run_id,
            factory=f"{__name__}:GcProbeEngine",
            path=[str(Path(__file__).parent)],
            nice=False,
        )
        child.start()
        child.future.result(timeout=60)
        child.join()
        frozen, young = map(int, (store.list_rollouts(run_id)[0].reason or "").split())
    assert frozen > 0 and young == YOUNG_THRESHOLD
