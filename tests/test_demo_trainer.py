"""The demo job trains, visibly: the demo world's simulated trainer posts eval-protocol /init requests to the rollout
server the job names (a real `svgagent serve`, in process), step by step, several samples per prompt; the simulated
policy draws better as the steps pass; the job's progress, epochs and completion follow what the trainer did."""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from svgagent.core.config.settings import load_settings
from svgagent.core.demo import demo_control_plane, demo_overrides
from svgagent.core.rft.job_metrics import EVAL_REWARD, REWARD, job_curves
from svgagent.core.rft.launch import demo_request, launch, prepare_launch, with_rollouts
from svgagent.core.rft.params import RftParams
from svgagent.core.serve.server import RolloutServer
from svgagent.core.serve.training_runs import TrainingStore
from svgagent.core.serve.wiring import ServeOptions, rollout_server
from svgagent.core.sim.simulator import SimConfig, Simulator
from svgagent.core.store.run_store import Store

BASE = "accounts/fireworks/models/qwen3-0p6b"


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[Store, RolloutServer]]:
    """`svgagent serve --demo`'s server: its local judge is the simulated one."""
    with Simulator(SimConfig(seed=3)) as judge:
        settings = load_settings(
            **demo_overrides(str(judge.base_url)), store=tmp_path / "runs.db", render_size=64, max_retries=0
        )
        with Store(settings.store_path()) as store:
            options = ServeOptions(port=0, judge=True)
            async with rollout_server(settings, store, options) as server:
                yield store, server


def _launch(cp: Any, remote_url: str, rows: int = 8, **params: Any) -> str:
    """A job of its own name: its output model's name (what the demo policy draws for) is the same in every run."""
    request = with_rollouts(
        demo_request(
            RftParams(base_model=BASE, **params),
            rows=rows,
            job_id="trainer-test",
            base_url=cp.base_url,
            evaluator_poll_s=0.01,
            dataset_poll_s=0.01,
        ),
        remote_url,
    )
    return launch(prepare_launch(request), cp).job_name


async def _until(cp: Any, job: str, states: tuple[str, ...], timeout: float = 90.0) -> dict[str, Any]:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        data = await asyncio.to_thread(cp.get_job, job)  # the server runs on this loop: never block it
        if data["state"] in states:
            return data
        assert asyncio.get_running_loop().time() < deadline, data
        await asyncio.sleep(0.05)


async def test_a_remote_job_trains_step_by_step_through_the_rollout_server(
    served: tuple[Store, RolloutServer], tmp_path: Path
) -> None:
    store, server = served
    with demo_control_plane(world_dir=tmp_path / "demo", train=True) as (_, cp):
        job = await asyncio.to_thread(_launch, cp, server.url, epochs=2, chunk_size=4, n=4, rows=8)
        data = await _until(cp, job, ("JOB_STATE_COMPLETED", "JOB_STATE_FAILED"))
    assert data["state"] == "JOB_STATE_COMPLETED"
    progress = data["jobProgress"]
    assert progress["percent"] == 100 and progress["epoch"] == 1
    assert progress["totalInputRequests"] == 2 * 8 * 4  # epochs × rows × samples
    assert progress["totalProcessedRequests"] == 64 and progress["failedRequests"] == 0
    job_id = job.rsplit("/", 1)[-1]
    training = TrainingStore(store)
    (run,) = training.trainings(job)
    assert run.experiment_id == job_id and run.rollouts == 64
    steps = training.steps(run.training_id)
    assert [(s.step, s.rollouts, s.done, s.judged, s.source) for s in steps] == [
        (k, 16, 16, 16, "metadata") for k in range(1, 5)
    ]
    assert [s.epoch for s in steps] == [0, 0, 1, 1]
    assert all(s.model == f"{data['trainingConfig']['outputModel']}-step-{s.step}" for s in steps)
    # the policy drew better as it trained: more of its answers are whole drawings, and they score higher
    good = {
        step: statistics.mean("<!-- simulated: good -->" in (svg or "") for (svg,) in found)
        for step in range(1, 5)
        for found in [
            store.query(
                "SELECT r.svg FROM served_rollouts s JOIN rollouts r ON r.rollout_id = s.rollout_id WHERE s.step = ?",
                (step,),
            )
        ]
    }
    assert good[3] + good[4] > good[1] + good[2] + 0.2, good
    first, last = (statistics.mean(s.mean_local or 0 for s in part) for part in (steps[:2], steps[2:]))
    assert last > first, [s.mean_local for s in steps]
    rows = store.query("SELECT COUNT(DISTINCT row_id), COUNT(*) FROM served_rollouts WHERE training_id = ?", (job_id,))
    assert tuple(rows[0]) == (8, 64)  # every prompt, 4 samples an epoch
    # the platform's own curves, one point per step the trainer did, rising as the local mean does
    curves = job_curves(data)
    assert [step for step, _ in curves.series[REWARD]] == [1, 2, 3, 4]
    assert [step for step, _ in curves.series[EVAL_REWARD]] == [2, 4]
    reward = [value for _, value in curves.series[REWARD]]
    assert reward[2] + reward[3] > reward[0] + reward[1], reward


async def test_the_reward_hacking_window_writes_the_requirements_as_text(
    served: tuple[Store, RolloutServer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SVGAGENT_DEMO_HACK", "2-2")
    store, server = served
    with demo_control_plane(world_dir=tmp_path / "demo", train=True) as (_, cp):
        job = await asyncio.to_thread(_launch, cp, server.url, epochs=1, chunk_size=4, n=2, rows=12)
        data = await _until(cp, job, ("JOB_STATE_COMPLETED",))
    # where the judge is fooled the platform's modelled reward runs ahead of its eval reward (held-out, honest)
    curves = job_curves(data)
    reward, evaluated = dict(curves.series[REWARD]), dict(curves.series[EVAL_REWARD])
    assert sorted(evaluated) == [2, 3]
    assert reward[2] - evaluated[2] > reward[3] - evaluated[3] + 0.05, (reward, evaluated)
    texts = {
        step: sum("the requirements written out" in (svg or "") for (svg,) in rows)
        for step in (1, 2, 3)
        for rows in [
            store.query(
                "SELECT r.svg FROM served_rollouts s JOIN rollouts r ON r.rollout_id = s.rollout_id WHERE s.step = ?",
                (step,),
            )
        ]
    }
    assert texts[1] == 0 and texts[3] == 0 and texts[2] >= 2, texts


async def test_an_unreachable_rollout_server_keeps_the_job_waiting_and_says_so(tmp_path: Path) -> None:
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    with demo_control_plane(world_dir=tmp_path / "demo", train=True) as (_, cp):
        job = await asyncio.to_thread(_launch, cp, closed, rows=2, n=2)
        deadline = asyncio.get_running_loop().time() + 60
        while True:
            data = await asyncio.to_thread(cp.get_job, job)
            message = (data.get("status") or {}).get("message") or ""
            if "waiting for the rollout server" in message:
                break
            assert asyncio.get_running_loop().time() < deadline, data
            await asyncio.sleep(0.05)
    assert data["state"] == "JOB_STATE_RUNNING" and closed in message
    assert data["jobProgress"]["percent"] == 0


def test_a_trainer_with_no_job_alive_looks_into_the_world_at_its_step_pace(tmp_path: Path) -> None:
    """Each look is a locked read and write of the world file: an idle app (its demo job long finished) must not
    take ten a second (bench/tui_idle.py's 120x40 case measured 1.4 % of a core, almost all of it here)."""
    from svgagent.core.sim.control_plane import FireworksSim
    from svgagent.core.sim.trainer import Trainer, TrainerPace

    sim = FireworksSim(advance="time", step_seconds=0.05, world_dir=str(tmp_path / "demo"))
    looks = 0
    session = sim.world_session

    def counted() -> Any:
        nonlocal looks
        looks += 1
        return session()

    sim.world_session = counted  # type: ignore[method-assign]
    trainer = Trainer(sim, TrainerPace(step_s=0.5))
    trainer.start()
    try:
        time.sleep(1.6)
    finally:
        trainer.stop()
    assert 1 <= looks <= 5, looks  # at most one look per step_s (plus the first); ~16 at 0.1 s
