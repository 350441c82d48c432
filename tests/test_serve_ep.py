"""`svgagent serve` end to end with eval-protocol 0.3.33's own code (in the eval-protocol venv, tests/ep_venv.py).

1. A real ``@evaluation_test`` with eval-protocol's ``RemoteRolloutProcessor(remote_base_url=<svgagent serve>,
   model_base_url=<the tracing-gateway simulator>)`` over 10 SVGBench-style rows, scored by the project's scorer
   (the RFT evaluator bundle, unpacked): every row comes back FINISHED with the model's SVG as its last assistant
   message, the scores are the ones svgagent's scorer gives the same answers, and the same 10 rollouts are in
   svgagent's store, with their pictures, as one training run keyed by eval-protocol's ids.
2. Policy faults during a served rollout (429, 500, a hang): eval-protocol's processor raises the matching
   terminal error from the status the server logged, instead of polling until its timeout.

`svgagent serve` runs as its own process (the command a user runs), eval-protocol in the other venv.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ep_venv import ep_command, ep_env

from svgagent.core.config.settings import load_settings
from svgagent.core.exchange.ep_status import StatusCode
from svgagent.core.rft.bundle_entry import JudgeConfig, close_renderer, score_answer
from svgagent.core.rft.evaluator_bundle import build_bundle, config_from_settings, unpack_archive
from svgagent.core.run.prompt import ep_row
from svgagent.core.scoring.models import DatasetRow, RolloutStatus
from svgagent.core.serve.training_runs import TrainingStore
from svgagent.core.sim.simulator import SimConfig, Simulator
from svgagent.core.sim.tracing_gateway import TracingGateway
from svgagent.core.store.run_store import Store

FW_KEY = "fw-FAKE-serve-e2e-0123456789"
OPENAI_KEY = "FAKEOA-serve-e2e-9876543210"
SUBJECTS = [
    "a red fox",
    "a lighthouse",
    "three balloons",
    "a sailing boat",
    "a cactus in a pot",
    "a snowman",
    "a bicycle",
    "a cup of tea",
    "a hot-air balloon",
    "an owl on a branch",
]

EP_TEST = r"""
import json, os, sys
sys.path.insert(0, os.environ["SVGAGENT_BUNDLE_DIR"])
import importlib
bundle = importlib.import_module(os.environ["SVGAGENT_BUNDLE_MODULE"])  # the project's scorer, as RFT runs it

from eval_protocol.models import EvaluateResult, EvaluationRow, MetricResult
from eval_protocol.pytest import evaluation_test
from eval_protocol.pytest.remote_rollout_processor import RemoteRolloutProcessor


@evaluation_test(
    input_dataset=[os.environ["SVGAGENT_ROWS"]],
    completion_params=[{"model": "simulated-policy", "temperature": 0.0, "max_tokens": 2048}],
    rollout_processor=RemoteRolloutProcessor(remote_base_url=os.environ["SVGAGENT_SERVE_URL"],
                                             model_base_url=os.environ["SVGAGENT_GATEWAY_URL"],
                                             poll_interval=0.2, timeout_seconds=60),
    mode="pointwise",
)
async def test_remote_svg_rollouts(row: EvaluationRow) -> EvaluationRow:
    info = row.input_metadata.dataset_info if row.input_metadata is not None else None
    answer, requirements, prompt = bundle.rollout_inputs(row.messages, info)
    result = await bundle.score_answer(answer, requirements, prompt)
    row.evaluation_result = EvaluateResult(
        score=result.reward, is_score_valid=result.is_score_valid, reason=result.reason,
        metrics={"requirements": MetricResult(score=result.reward, is_score_valid=result.is_score_valid,
                                              reason=f"{result.fulfilled} of {result.total}")})
    return row
"""

FAULTS = r"""
import asyncio, json, os, sys, time, urllib.request
from eval_protocol.models import EvaluationRow, InputMetadata, Message
from eval_protocol.pytest.remote_rollout_processor import RemoteRolloutProcessor
from eval_protocol.pytest.types import RolloutProcessorConfig

def configure(**knobs):
    req = urllib.request.Request(os.environ["SVGAGENT_SIM_URL"].rsplit("/v1", 1)[0] + "/_sim/config",
                                 data=json.dumps(knobs).encode(), headers={"Content-Type": "application/json"})
    urllib.request.urlopen(req).read()

async def one(name, knobs):
    configure(**{"rate_limit_every": 0, "error_5xx_every": 0, "timeout_every": 0, **knobs})
    processor = RemoteRolloutProcessor(remote_base_url=os.environ["SVGAGENT_SERVE_URL"],
                                       model_base_url=os.environ["SVGAGENT_GATEWAY_URL"], poll_interval=0.1,
                                       timeout_seconds=30)
    row = EvaluationRow(messages=[Message(role="user", content="Draw a cat.\n\nRequirements:\n1. a cat")],
                        input_metadata=InputMetadata(row_id="fault-row"))
    row.execution_metadata.invocation_id = "inv-faults"
    row.execution_metadata.experiment_id = "exp-faults"
    row.execution_metadata.rollout_id = "fault-" + name
    row.execution_metadata.run_id = "run-faults"
    config = RolloutProcessorConfig(completion_params={"model": "simulated-policy"}, mcp_config_path="",
                                    semaphore=asyncio.Semaphore(4))
    started = time.monotonic()
    try:
        done = await processor([row], config)[0]
        outcome = {"status": done.rollout_status.code, "error": None}
    except Exception as err:
        outcome = {"error": type(err).__name__, "message": str(err)}
    finally:
        await processor.acleanup()
    outcome["seconds"] = time.monotonic() - started
    return name, outcome

async def main():
    cases = [("429", {"rate_limit_every": 1}), ("500", {"error_5xx_every": 1}),
             ("hang", {"timeout_every": 1, "timeout_hang_s": 60.0})]
    print(json.dumps(dict([await one(name, knobs) for name, knobs in cases])))

asyncio.run(main())
"""


@pytest.fixture(scope="module")
def ep() -> str:
    return ep_command()  # `python` of the eval-protocol venv, started warm (tests/warm_python.py)


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("serve-ep")


@pytest.fixture(scope="module")
def policy_judge() -> Iterator[Simulator]:
    with Simulator(SimConfig(seed=11, policy_latency_s=0.05)) as sim:
        yield sim


@pytest.fixture(scope="module")
def gateway(policy_judge: Simulator) -> Iterator[TracingGateway]:
    assert policy_judge.base_url is not None
    with TracingGateway(policy_judge.base_url) as gw:
        yield gw


@pytest.fixture(scope="module")
def server(work: Path) -> Iterator[dict[str, Any]]:
    """`svgagent serve` in its own process, on a store of its own; stopped with SIGTERM at the end."""
    home = work / "serve-home"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "SVGAGENT_HOME": str(home / "data"),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_CACHE_HOME": str(home / "cache"),
    }
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "svgagent.tui.cli.main",
            "serve",
            "--port",
            "0",
            "--json",
            "--rollout-timeout",
            "2",
            "--max-retries",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=open(work / "serve.stderr", "w"),
        text=True,
        env=env,
        cwd=work,
    )
    assert proc.stdout is not None
    line = json.loads(proc.stdout.readline())
    assert line["event"] == "listening"
    assert line["url"].startswith("http://127.0.0.1:")
    info = {"url": line["url"], "store": Path(line["store"]), "proc": proc}
    yield info
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def stop(server: dict[str, Any]) -> int:
    proc: subprocess.Popen[str] = server["proc"]
    proc.send_signal(signal.SIGTERM)
    return proc.wait(timeout=60)


def svgbench_rows(path: Path) -> list[DatasetRow]:
    rows = [
        DatasetRow(
            index=i,
            row_id=f"row_{i}",
            prompt=f"Draw {subject} on a plain background.",
            requirements=(
                f"{subject} is the main subject",
                "the background is plain",
                f"{subject} is drawn with at least two colours",
            ),
        )
        for i, subject in enumerate(SUBJECTS)
    ]
    path.write_text("".join(json.dumps(ep_row(row)) + "\n" for row in rows), encoding="utf-8")
    return rows


def test_policy_faults_reach_eval_protocol_as_terminal_errors_not_poll_timeouts(
    ep: str, work: Path, policy_judge: Simulator, gateway: TracingGateway, server: dict[str, Any]
) -> None:
    assert server["proc"].poll() is None  # runs before the end-to-end test, which stops the server
    env = ep_env(
        work / "fault-home",
        FIREWORKS_API_KEY=FW_KEY,
        SVGAGENT_SERVE_URL=server["url"],
        SVGAGENT_GATEWAY_URL=str(gateway.base_url),
        SVGAGENT_SIM_URL=str(policy_judge.base_url),
    )
    proc = subprocess.run([ep, "-c", FAULTS], capture_output=True, text=True, timeout=200, env=env)
    policy_judge.configure(rate_limit_every=0, error_5xx_every=0, timeout_every=0)
    assert proc.returncode == 0, proc.stderr[-3000:]
    outcomes = json.loads(proc.stdout.strip().splitlines()[-1])
    assert outcomes["429"]["error"] == "ResourceExhaustedError"
    assert "429" in outcomes["429"]["message"]
    assert outcomes["500"]["error"] == "InternalError"
    assert "HTTP 500" in outcomes["500"]["message"]
    assert outcomes["hang"]["error"] == "DeadlineExceededError"
    assert "deadline of 2 s" in outcomes["hang"]["message"]
    # raised from the status the server logged: a poll timeout would not raise, it would mark the row code 4
    for name, code in (
        ("429", StatusCode.RESOURCE_EXHAUSTED),
        ("500", StatusCode.INTERNAL),
        ("hang", StatusCode.DEADLINE_EXCEEDED),
    ):
        assert gateway.status_code(f"fault-{name}") == code


def test_the_remote_mode_bundle_runs_its_rollouts_through_svgagent_serve(
    ep: str, work: Path, policy_judge: Simulator, gateway: TracingGateway, server: dict[str, Any]
) -> None:
    """`svgagent rft create --rollouts remote --remote-url URL`'s evaluator, unpacked and run by eval-protocol's
    pytest plugin as `ep local-test` runs it: its RemoteRolloutProcessor posts every row to the server (the
    gateway comes from EP_MODEL_BASE_URL, eval-protocol's own override of the quickstart's default)."""
    assert server["proc"].poll() is None
    judge = {"judge_model": "simulated-judge", "judge_base_url": policy_judge.base_url, "max_retries": 1}
    config = {**config_from_settings(load_settings(**judge)), "rollouts": "remote", "remote_url": server["url"]}
    bundle = build_bundle(config=config)
    project = unpack_archive(bundle.archive, work / "remote-bundle")
    svgbench_rows(work / "remote-rows.jsonl")
    out = work / "remote-out"
    env = ep_env(
        work / "remote-home",
        FIREWORKS_API_KEY=FW_KEY,
        OPENAI_API_KEY=OPENAI_KEY,
        EP_MODEL_BASE_URL=str(gateway.base_url),
    )
    params = {"model": "simulated-policy", "temperature": 0.7, "max_tokens": 2048}
    proc = subprocess.run(
        [
            ep,
            "-m",
            "pytest",
            "--ep-success-threshold",
            "0.001",
            "--ep-jsonl-path",
            str(work / "remote-rows.jsonl"),
            "--ep-completion-params",
            json.dumps(params),
            "--ep-output-dir",
            str(out),
            "--ep-no-upload",
            "-p",
            "no:cacheprovider",
            bundle.entry_point,
            "-q",
        ],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-3000:]
    (results,) = (out / "experiment_results").glob("*.jsonl")
    ep_rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert len(ep_rows) == len(SUBJECTS)
    for row in ep_rows:
        assert row["rollout_status"]["code"] == StatusCode.FINISHED
        rollout_id = row["execution_metadata"]["rollout_id"]
        assert gateway.status_code(rollout_id) == StatusCode.FINISHED  # logged by svgagent serve
        (trace,) = gateway.traces(rollout_id)  # the policy was called by the server, through the gateway
        assert row["messages"][-1]["content"] == trace["output"]["content"]


def test_eval_protocols_remote_rollout_processor_through_svgagent_serve(
    ep: str,
    work: Path,
    policy_judge: Simulator,
    gateway: TracingGateway,
    server: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    judge = {
        "judge_model": "simulated-judge",
        "judge_base_url": policy_judge.base_url,
        "max_retries": 1,
        "request_timeout_s": 20.0,
    }
    bundle = build_bundle(config=config_from_settings(load_settings(**judge)))
    project = unpack_archive(bundle.archive, work / "bundle")
    entry = project / bundle.entry_point.split("::")[0]
    rows = svgbench_rows(work / "rows.jsonl")
    (work / "ep-project").mkdir()
    test_file = work / "ep-project" / "test_remote_svg.py"
    test_file.write_text(EP_TEST, encoding="utf-8")
    out = work / "ep-out"
    env = ep_env(
        work / "ep-home",
        FIREWORKS_API_KEY=FW_KEY,
        OPENAI_API_KEY=OPENAI_KEY,
        SVGAGENT_SERVE_URL=server["url"],
        SVGAGENT_GATEWAY_URL=str(gateway.base_url),
        SVGAGENT_ROWS=str(work / "rows.jsonl"),
        SVGAGENT_BUNDLE_DIR=str(entry.parent),
        SVGAGENT_BUNDLE_MODULE=entry.stem,
    )
    proc = subprocess.run(
        [
            ep,
            "-m",
            "pytest",
            "--ep-output-dir",
            str(out),
            "--ep-no-upload",
            "-p",
            "no:cacheprovider",
            "-q",
            str(test_file),
        ],
        cwd=test_file.parent,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-3000:]
    (results,) = (out / "experiment_results").glob("*.jsonl")
    ep_rows = {r["input_metadata"]["row_id"]: r for r in map(json.loads, results.read_text().splitlines())}
    assert sorted(ep_rows) == sorted(r.row_id for r in rows)

    # eval-protocol's view: every row finished, the model's SVG answer last, scored by the project's scorer
    for row in ep_rows.values():
        assert row["rollout_status"]["code"] == StatusCode.FINISHED, row["rollout_status"]
        last = row["messages"][-1]
        assert last["role"] == "assistant"
        assert "<svg" in last["content"].lower()
        assert row["evaluation_result"]["is_score_valid"] is True
    experiment = {r["execution_metadata"]["experiment_id"] for r in ep_rows.values()}
    assert len(experiment) == 1

    assert stop(server) == 0  # SIGTERM: a clean stop, the step runs closed
    served_log = (work / "serve.stderr").read_text().splitlines()
    mine = {r["execution_metadata"]["rollout_id"] for r in ep_rows.values()}
    inits = [x for x in map(json.loads, served_log) if x.get("path") == "/init" and x.get("rollout_id") in mine]
    assert len(inits) == 10
    assert {x["status"] for x in inits} == {200}  # one /init per row, each accepted

    # svgagent's view: the same 10 rollouts, one training run keyed by eval-protocol's ids, with pictures
    with Store(server["store"]) as store:
        training = TrainingStore(store)
        run = {r.experiment_id: r for r in training.trainings()}[experiment.pop()]
        assert run.rollouts == 10
        (step,) = training.steps(run.training_id)
        stored = {r.row_id: store.get_rollout(r.rollout_id) for r in store.list_rollouts(step.run_id)}
        served_ids = {
            row[0]
            for row in store.query(
                "SELECT ep_rollout_id FROM served_rollouts WHERE training_id = ?", (run.training_id,)
            )
        }
        assert store.get_run(step.run_id).status == "served"
    assert served_ids == {r["execution_metadata"]["rollout_id"] for r in ep_rows.values()}
    assert sorted(stored) == sorted(ep_rows)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    config = JudgeConfig.from_dict(bundle.config)
    try:
        for row_id, rec in stored.items():
            row = ep_rows[row_id]
            assert rec.raw_answer == row["messages"][-1]["content"]
            assert rec.prompt == rows[int(row_id.split("_")[1])].prompt
            assert rec.total == 3
            if rec.status is RolloutStatus.SCORED:
                assert rec.svg
                assert rec.png
                assert rec.png.startswith(b"\x89PNG")
            # the project's scorer, here, on the stored answer: the score eval-protocol's run recorded
            mine = score_answer_sync_here(rec.raw_answer, list(rec.requirements), rec.prompt, config)
            assert row["evaluation_result"]["score"] == mine, row_id
    finally:
        close_renderer()
    assert sum(1 for r in stored.values() if r.png) >= 5  # most answers of the simulated policy draw something


def score_answer_sync_here(answer: str, requirements: list[str], prompt: str, config: JudgeConfig) -> float:
    import asyncio

    return asyncio.run(score_answer(answer, requirements, prompt, config=config)).reward
