"""The launch orchestration, the hyperparameter model, the job monitor and the remembered jobs, against the
simulated Fireworks control plane through the real fireworks-ai client."""

from __future__ import annotations

import json
import socket
import time
from dataclasses import replace
from pathlib import Path

import pytest

from svgagent.core.demo import demo_control_plane
from svgagent.core.rft.evaluator_bundle import archive_members
from svgagent.core.rft.fireworks_api import ControlPlane, FireworksError
from svgagent.core.rft.launch import (
    STEPS,
    LaunchCancelled,
    LaunchEvent,
    LaunchRequest,
    launch,
    mask_secret,
    plan,
    prepare_launch,
)
from svgagent.core.rft.monitor import JobPoller, JobView, PollOutcome, state_category, watch_job
from svgagent.core.rft.params import ParamsError, RftParams, allowed_range, parse_params
from svgagent.core.scoring.errors import ConfigError
from svgagent.core.sim.control_plane import FireworksSim
from svgagent.core.store.run_store import MIGRATIONS, Store

ACCT = "sim-account"
FW_KEY = "fw-FAKE-control-0123456789abcdef"
OPENAI_KEY = "FAKEOA-judge-9876543210zyxw"
FAST = {"evaluator_poll_s": 0.001, "dataset_poll_s": 0.001, "evaluator_timeout_s": 5.0, "dataset_timeout_s": 5.0}


@pytest.fixture
def sim():
    with FireworksSim() as server:
        yield server


def request(sim: FireworksSim, **kw: object) -> LaunchRequest:
    values: dict = {
        "params": RftParams(base_model="qwen3-0p6b", epochs=2, kl_beta=0.01),
        "rows": 3,
        "fireworks_api_key": FW_KEY,
        "openai_api_key": OPENAI_KEY,
        "base_url": sim.base_url,
        "max_retries": 0,
        **FAST,
    }
    values.update(kw)
    return LaunchRequest(**values)


def plane(sim: FireworksSim, key: str = FW_KEY) -> ControlPlane:
    return ControlPlane(key, base_url=sim.base_url, max_retries=0)


def dedupe(items: list) -> list:
    return [x for i, x in enumerate(items) if i == 0 or x != items[i - 1]]


def test_full_launch_sends_the_planned_requests(sim: FireworksSim, tmp_path: Path) -> None:
    prepared = prepare_launch(request(sim))
    planned = plan(prepared)
    assert sim.requests == []  # preparing and planning send nothing
    events: list[LaunchEvent] = []
    with plane(sim) as cp, Store(tmp_path / "runs.db") as store:
        result = launch(prepared, cp, on_event=events.append, store=store)
        remembered = store.list_jobs()

    # the request log is the plan (polls collapsed, the signed-URL PUT at its place), account filled in
    want = [(p.method, p.path.replace("{account}", ACCT)) for p in planned]
    got = dedupe(
        [(r.method, "<signed upload URL>" if r.path.startswith("/_upload/") else r.path) for r in sim.requests]
    )
    assert dedupe(want) == got
    for p, r in zip([p for p in planned if p.method != "GET"], [r for r in sim.requests if r.method != "GET"]):
        body = json.loads(json.dumps(p.body).replace("{account}", ACCT))
        if p.step == "secrets":
            key = {"OPENAI_API_KEY": OPENAI_KEY, "FIREWORKS_API_KEY": FW_KEY}[body["keyName"]]
            assert body["value"] == mask_secret(key)
            assert r.body["value"] == "***"
            body["value"] = "***"
        assert r.body == body, p.path
    (create,) = [r for r in sim.requests if r.method == "POST" and r.path.endswith("/reinforcementFineTuningJobs")]
    assert create.query == {"reinforcementFineTuningJobId": prepared.job_id}
    assert create.body == {  # only what was set (epochs, kl_beta): Fireworks chooses the rest, chunkSize included
        "dataset": f"accounts/{ACCT}/datasets/{prepared.dataset_id}",
        "evaluator": f"accounts/{ACCT}/evaluators/{prepared.evaluator_id}",
        "displayName": prepared.display_name,
        "trainingConfig": {"baseModel": "accounts/fireworks/models/qwen3-0p6b", "epochs": 2},
        "lossConfig": {"klBeta": 0.01},
        "evalAutoCarveout": False,
        "wandbConfig": {"enabled": False},
    }  # what `ep create rft` always sends

    assert [e.step for e in events if e.status == "start"] == list(STEPS)
    assert [(e.step, e.status) for e in events if e.status in ("done", "reused")] == [
        ("account", "done"),
        ("secrets", "done"),
        ("secrets", "done"),
        ("evaluator", "done"),
        ("dataset", "done"),
        ("job", "done"),
    ]  # two secrets: the judge's key and FIREWORKS_API_KEY
    assert result.reused == {"evaluator": False, "dataset": False, "job": False}
    assert result.job_id == prepared.job_id
    assert result.account == ACCT
    assert set(result.to_json()) == {"job", "evaluator", "dataset", "links"}
    assert result.links["job"] == f"{sim.base_url}/dashboard/fine-tuning/reinforcement/{prepared.job_id}"
    assert sim.secret_value("openai-api-key") == OPENAI_KEY  # uploaded for real ...
    assert sim.secret_value("fireworks-api-key") == FW_KEY  # as `ep create rft` uploads it too
    uploaded = sim.dataset_bytes(prepared.dataset_id).decode().splitlines()
    assert len(uploaded) == 3
    assert json.loads(uploaded[0])["input_metadata"]["dataset_info"]["total_requirements"]
    (job,) = remembered
    assert (job["job_name"], job["account"], job["base_url"]) == (result.job_name, ACCT, sim.base_url)
    assert job["evaluator"].endswith(prepared.evaluator_id)
    assert job["last_state"] == "CREATING"
    # ... and never shown: not in events, the request log, the simulator's state or the bundle
    archive_text = b"".join(archive_members(sim.evaluator_archive(prepared.evaluator_id)).values())
    text = (
        json.dumps([e.message for e in events])
        + json.dumps([r.body for r in sim.requests], default=str)
        + json.dumps(sim.dump_state())
        + json.dumps([p.to_dict() for p in planned])
        + json.dumps(remembered)
    )
    for secret in (FW_KEY, OPENAI_KEY):
        assert secret not in repr(prepared)
        assert secret not in repr(result)
        assert secret not in text
        assert secret.encode() not in archive_text
        assert secret.encode() not in sim.evaluator_archive(prepared.evaluator_id)


def test_rerun_after_a_failed_job_create_duplicates_nothing(sim: FireworksSim) -> None:
    prepared = prepare_launch(request(sim))
    sim.inject(500, route=r"/reinforcementFineTuningJobs$", method="POST", times=1)
    events: list[LaunchEvent] = []
    with plane(sim) as cp:
        with pytest.raises(FireworksError) as err:
            launch(prepared, cp, on_event=events.append)
        assert err.value.kind == "server"
        assert err.value.step == "job"
        assert "try again" in str(err.value)
        assert events[-1].status == "failed"
        assert events[-1].step == "job"
        again = launch(prepare_launch(request(sim)), cp)  # a fresh process would prepare again: same ids
        third = launch(prepare_launch(request(sim)), cp)
    assert again.reused == {"evaluator": True, "dataset": True, "job": False}
    assert third.reused == {"evaluator": True, "dataset": True, "job": True}
    assert third.job_name == again.job_name
    posts = [r.path for r in sim.requests if r.method in ("POST", "PUT") and r.status == 200]
    assert sum(p.endswith("/evaluatorsV2") for p in posts) == 1
    assert sum(p.endswith("/datasets") for p in posts) == 1
    assert sum(p.startswith("/_upload/") for p in posts) == 1
    assert sum(p.endswith("/reinforcementFineTuningJobs") for p in posts) == 1
    state = sim.dump_state()
    assert len(state["evaluators"]) == 1
    assert len(state["datasets"]) == 1
    assert len(state["jobs"]) == 1


def test_force_rebuilds_and_new_job_id_launches_another(sim: FireworksSim) -> None:
    with plane(sim) as cp:
        first = launch(prepare_launch(request(sim)), cp)
        second = launch(prepare_launch(request(sim, force_evaluator=True, job_id="second-run")), cp)
    assert second.reused["evaluator"] is False
    assert second.job_id == "second-run" != first.job_id
    evaluator_writes = [
        (r.method, r.path.rsplit("/", 1)[-1])
        for r in sim.requests
        if r.method in ("POST", "PATCH", "DELETE") and "/evaluator" in r.path
    ]
    eid = first.evaluator["name"].rsplit("/", 1)[-1]
    assert evaluator_writes.count(("DELETE", eid)) == 1
    assert evaluator_writes.count(("POST", "evaluatorsV2")) == 2
    assert not any(method == "PATCH" for method, _ in evaluator_writes)  # eval-protocol's --force: delete, create
    assert len(sim.uploads) == 2


def test_should_stop_between_steps(sim: FireworksSim) -> None:
    calls = iter([False, False, True])
    with plane(sim) as cp, pytest.raises(LaunchCancelled, match="before the secrets step|before the evaluator"):
        launch(prepare_launch(request(sim)), cp, should_stop=lambda: next(calls))


@pytest.mark.parametrize(
    ("knobs", "kind", "words"),
    [
        (
            {"evaluator_build_failure": "pip: no matching distribution for eval-protocol"},
            "build_failed",
            ["failed to build: pip: no matching distribution for eval-protocol", "Build log: http://127.0.0.1"],
        ),
        ({"admin": False}, "admin_required", ["admin role required (403)", "Only an account admin"]),
        ({"evaluator_build_steps": 10_000}, "timeout", ["still BUILDING", "run again later"]),
    ],
)
def test_evaluator_errors_are_explained(knobs: dict, kind: str, words: list[str]) -> None:
    # Only the timeout case gives up early (10,000 build steps never finish in 0.05 s); the others keep FAST's 5 s,
    # so a loaded machine polling slowly still sees the build fail or the 403 rather than timing out first.
    timeout = {"evaluator_timeout_s": 0.05} if kind == "timeout" else {}
    with FireworksSim(**knobs) as sim, plane(sim) as cp:
        with pytest.raises(FireworksError) as err:
            launch(prepare_launch(request(sim, **timeout)), cp)
    assert err.value.kind == kind
    assert err.value.step == "evaluator"
    for word in words:
        assert word in str(err.value)


def test_key_quota_and_network_errors(sim: FireworksSim) -> None:
    with plane(sim, "rejected-key") as cp, pytest.raises(FireworksError) as err:
        launch(prepare_launch(request(sim)), cp)
    assert err.value.kind == "auth"
    assert "check FIREWORKS_API_KEY" in str(err.value)
    assert err.value.step == "account"
    sim.inject(429, route=r"/datasets$", method="POST")
    with plane(sim) as cp, pytest.raises(FireworksError) as err:
        launch(prepare_launch(request(sim)), cp)
    assert err.value.kind == "rate_limit"
    assert "quota" in str(err.value)
    assert err.value.step == "dataset"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with (
        ControlPlane(FW_KEY, base_url=f"http://127.0.0.1:{port}", max_retries=0) as cp,
        pytest.raises(FireworksError) as err,
    ):
        launch(prepare_launch(request(sim)), cp)
    assert err.value.kind == "network"
    assert f"cannot reach 127.0.0.1:{port}" in str(err.value)


def test_missing_keys_fail_before_any_request(sim: FireworksSim) -> None:
    prepared = prepare_launch(request(sim, openai_api_key=None))
    with plane(sim) as cp, pytest.raises(Exception, match="OPENAI_API_KEY is not set"):
        launch(prepared, cp)
    assert sim.requests == []
    assert "(not set)" in json.dumps([p.to_dict() for p in plan(prepared)])


def test_demo_control_plane_seeds_a_job() -> None:
    with demo_control_plane(step_seconds=0.05, seed_job=True) as (sim, cp):
        job = cp.get_job("svgagent-demo-job")
        assert job["displayName"] == "svgagent demo job"
        assert cp.account == "simulated-account"
        assert sim.secret_value("openai-api-key") == "simulated-openai-key"


# ---- hyperparameters ----------------------------------------------------------------------------------------
def test_params_ranges_name_the_flag() -> None:
    assert parse_params(base_model="qwen3-0p6b").base_model == "accounts/fireworks/models/qwen3-0p6b"
    cases = {
        "--learning-rate 0.1: out of range: allowed a number from 1e-05 to 0.0005": {"learning_rate": 0.1},
        "--epochs 0: out of range: allowed an integer from 1 to 10": {"epochs": 0},
        "--lora-rank 12: must be a power of two": {"lora_rank": 12},
        "--chunk-size 20000: out of range: allowed an integer from 1 to 10000": {"chunk_size": 20_000},
        "--temperature 0: out of range: allowed a number above 0": {"temperature": 0},
        "--n 1: out of range": {"n": 1},
        "--loss ppo: not a valid value: allowed one of: grpo, dapo": {"loss": "ppo"},
        "--max-output-tokens (9000) must be smaller than --max-context-length (8192)": {
            "max_output_tokens": 9000,
            "max_context_length": 8192,
        },
        "--output-model Bad_Id: must be a model id": {"output_model": "Bad_Id"},
        "--base-model a/b: must look like accounts/": {"base_model": "a/b"},
    }
    for words, values in cases.items():
        with pytest.raises(ParamsError) as err:
            parse_params(**{"base_model": "qwen3-0p6b", **values})
        assert words in str(err.value), (words, str(err.value))
        assert err.value.problems
    with pytest.raises(ParamsError, match="--base-model: is required"):
        parse_params()
    assert allowed_range("top_p") == "a number above 0 and up to 1"
    assert parse_params(base_model="qwen3-0p6b", max_output_tokens=9000).max_context_length is None  # Fireworks'
    kwargs = parse_params(base_model="accounts/acme/models/m1", loss="DAPO", output_model="svg-v1").job_kwargs("d", "e")
    assert kwargs == {
        "dataset": "d",
        "evaluator": "e",
        "loss_config": {"method": "DAPO"},  # the client's own keys
        "training_config": {"base_model": "accounts/acme/models/m1", "output_model": "svg-v1"},
        "eval_auto_carveout": False,
        "wandb_config": {"enabled": False},
    }
    full = parse_params(
        base_model="m",
        chunk_size=10,
        epochs=1,
        learning_rate=1e-4,
        lora_rank=16,
        batch_size=4096,
        max_context_length=4096,
        temperature=1.0,
        top_p=0.9,
        max_output_tokens=2048,
        n=8,
        loss="grpo",
        kl_beta=0.1,
    ).job_kwargs("d", "e", display_name="x")
    assert full["chunk_size"] == 10
    assert full["display_name"] == "x"
    assert full["loss_config"] == {"method": "GRPO", "kl_beta": 0.1}
    assert full["inference_parameters"] == {
        "temperature": 1.0,
        "top_p": 0.9,
        "max_output_tokens": 2048,
        "response_candidates_count": 8,
    }
    assert set(full["training_config"]) == {
        "base_model",
        "epochs",
        "learning_rate",
        "lora_rank",
        "batch_size",
        "max_context_length",
    }


def test_job_kwargs_use_the_clients_own_typed_dict_keys() -> None:
    """What a type checker checks (mypy passes on params.py): every key, nested ones included, is a key of the
    fireworks-ai client's TypedDict for that argument, so the client's transform names it on the wire."""
    from fireworks.types import reinforcement_fine_tuning_job_create_params as create_params
    from fireworks.types.shared_params import reinforcement_learning_loss_config, training_config, wandb_config

    kwargs = parse_params(
        base_model="m",
        chunk_size=10,
        epochs=1,
        learning_rate=1e-4,
        lora_rank=16,
        batch_size=4096,
        max_context_length=4096,
        temperature=1.0,
        top_p=0.9,
        max_output_tokens=2048,
        n=8,
        loss="dapo",
        kl_beta=0.1,
        output_model="out",
    ).job_kwargs("d", "e", display_name="x")
    assert set(kwargs) <= set(create_params.ReinforcementFineTuningJobCreateParams.__annotations__)
    for name, typed in (
        ("training_config", training_config.TrainingConfig),
        ("inference_parameters", create_params.InferenceParameters),
        ("loss_config", reinforcement_learning_loss_config.ReinforcementLearningLossConfig),
        ("wandb_config", wandb_config.WandbConfig),
    ):
        assert kwargs[name] and set(kwargs[name]) <= set(typed.__annotations__), name


def test_job_id_is_validated_like_the_output_model(sim: FireworksSim) -> None:
    for bad in ("../../etc", "Bad_Id", "a/b", "x" * 64):
        with pytest.raises(ConfigError, match="must be a job id"):
            prepare_launch(request(sim, job_id=bad))
    assert prepare_launch(request(sim, job_id="my-run-2")).job_id == "my-run-2"
    assert sim.requests == []


# ---- monitoring ----------------------------------------------------------------------------------------------
JOB = {
    "name": "accounts/a/reinforcementFineTuningJobs/j1",
    "displayName": "run",
    "state": "JOB_STATE_RUNNING",
    "status": {"code": "OK", "message": ""},
    "createTime": "2026-01-01T00:00:00.123456789Z",
    "dataset": "accounts/a/datasets/d1",
    "evaluator": "accounts/a/evaluators/e1",
    "trainingConfig": {"outputModel": "accounts/a/models/m1"},
    "jobProgress": {
        "percent": 40,
        "epoch": 1,
        "totalInputRequests": "10",
        "totalProcessedRequests": "4",
        "failedRequests": "1",
    },
}


def test_job_view_shape_and_staleness() -> None:
    start = 1767225600.123456  # 2026-01-01T00:00:00.123456Z
    view = JobView.from_job(JOB, "https://api.fireworks.ai", fetched_at=start + 60)
    assert view.to_json() == {
        "name": JOB["name"],
        "display_name": "run",
        "state": "RUNNING",
        "status": "",
        "percent": 40,
        "epoch": 1,
        "processed": 4,
        "failed": 1,
        "total": 10,
        "created": JOB["createTime"],
        "completed": None,
        "output_model": "accounts/a/models/m1",
        "links": {
            "job": "https://app.fireworks.ai/dashboard/fine-tuning/reinforcement/j1",
            "dataset": "https://app.fireworks.ai/dashboard/datasets/d1",
            "evaluator": "https://app.fireworks.ai/dashboard/evaluators/e1",
        },
        "curves": {},  # the job reports no outputMetrics
    }
    assert (view.category, view.terminal, view.stale) == ("active", False, False)
    assert view.elapsed(now=start + 125) == pytest.approx(125, abs=0.01)
    assert view.summary_line(now=start + 125) == "RUNNING · 40% · epoch 1 · 4/10 processed (1 failed) · 2m 05s elapsed"
    stale = view.with_error(FireworksError("cannot reach api.fireworks.ai", kind="network"))
    assert stale.stale
    assert stale.error_kind == "network"
    assert stale.age(now=start + 95) == pytest.approx(35)
    assert "last known state, 35 s old (cannot reach api.fireworks.ai)" in stale.summary_line(now=start + 95)
    provisioning = JobView.from_job({**JOB, "jobProgress": {"totalInputRequests": 0}}, None)
    assert provisioning.phase == "PROVISIONING"
    assert provisioning.progress_text() == "provisioning"
    assert [state_category(s) for s in ("COMPLETED", "JOB_STATE_FAILED", "CANCELLED", "PENDING", "???")] == [
        "success",
        "error",
        "warning",
        "pending",
        "unknown",
    ]


def test_poller_backs_off_on_errors_and_keeps_the_last_state() -> None:
    clock = [1000.0]
    script: list = [
        JOB,
        FireworksError("down", kind="network"),
        FireworksError("503", kind="server"),
        FireworksError("down", kind="network"),
        FireworksError("down", kind="network"),
        FireworksError("down", kind="network"),
        {**JOB, "state": "JOB_STATE_COMPLETED"},
    ]

    def fetch() -> dict:
        clock[0] += 1
        item = script.pop(0)
        if isinstance(item, Exception):
            raise item
        return item

    poller = JobPoller(fetch, None, interval=5, max_interval=60, clock=lambda: clock[0])
    delays, sleeps, seen = [], [], []

    def on_update(outcome: PollOutcome) -> None:
        delays.append(outcome.delay)
        seen.append(outcome)

    final = watch_job(poller, on_update, sleep=lambda s: (sleeps.append(s), clock.__setitem__(0, clock[0] + s)))
    assert delays == [5, 10, 20, 40, 60, 60, 5]
    assert sleeps == delays[:-1]
    assert final.done
    assert final.view.state == "COMPLETED"
    assert not final.view.stale
    stale = seen[3].view
    assert stale.stale
    assert stale.state == "RUNNING"
    assert stale.percent == 40
    assert stale.fetched_at == 1001.0
    assert stale.age(now=clock[0]) > 30


def test_fatal_errors_stop_polling() -> None:
    def unknown() -> dict:
        raise FireworksError("not found while reading RFT job x (404)", kind="not_found")

    outcome = watch_job(JobPoller(unknown, None), lambda o: None, sleep=lambda s: None)
    assert outcome.fatal
    assert outcome.error.kind == "not_found"
    first_fails = JobPoller(lambda: (_ for _ in ()).throw(FireworksError("down", kind="network")), None)
    seen: list[PollOutcome] = []
    outcome = watch_job(first_fails, seen.append, sleep=lambda s: None)
    assert outcome.fatal
    assert len(seen) == 3
    assert all(o.view is None for o in seen)  # nothing known: give up


def test_watch_against_a_simulator_that_fails_n_times(sim: FireworksSim) -> None:
    with plane(sim) as cp:
        result = launch(prepare_launch(request(sim)), cp)
        outcomes: list[PollOutcome] = []
        poller = JobPoller(lambda: cp.get_job(result.job_name), cp.base_url, interval=0.001, max_interval=0.01)
        first = poller.poll()  # PENDING (each GET moves the job one step); then three polls fail
        sim.inject(503, route=r"/reinforcementFineTuningJobs/", method="GET", times=3)
        final = watch_job(poller, outcomes.append, sleep=time.sleep)
    assert first.view.state == "PENDING"
    errors = [o for o in outcomes if o.error is not None]
    assert len(errors) == 3
    assert all(o.view.stale and o.view.state == "PENDING" for o in errors)
    assert [o.delay for o in errors] == pytest.approx([0.002, 0.004, 0.008])
    assert final.view.state == "COMPLETED"
    assert final.view.percent == 100
    assert final.view.processed == 3 * 2


# ---- the run store's job table --------------------------------------------------------------------------------
def test_store_remembers_jobs(tmp_path: Path) -> None:
    with Store(tmp_path / "runs.db") as store:
        assert store.schema_version == len(MIGRATIONS) >= 3
        store.remember_job(
            job_name="accounts/a/reinforcementFineTuningJobs/j1",
            base_url="https://api.fireworks.ai",
            account="a",
            display_name="one",
            dataset="accounts/a/datasets/d",
            evaluator="e",
            base_model="m",
            created="2026-01-01T00:00:00Z",
            last_state="JOB_STATE_CREATING",
            job={"state": "JOB_STATE_CREATING"},
        )
        store.remember_job(
            job_name="accounts/a/reinforcementFineTuningJobs/j2",
            base_url="u",
            account="a",
            created="2026-02-01T00:00:00Z",
        )
        assert [j["job_name"].rsplit("/", 1)[-1] for j in store.list_jobs()] == ["j2", "j1"]
        assert store.update_job_state(
            "accounts/a/reinforcementFineTuningJobs/j1",
            "JOB_STATE_COMPLETED",
            {"state": "JOB_STATE_COMPLETED", "trainingConfig": {"outputModel": "om"}},
        )
        assert not store.update_job_state("nope", "JOB_STATE_RUNNING")
        store.remember_job(
            job_name="accounts/a/reinforcementFineTuningJobs/j1",
            base_url="https://api.fireworks.ai",
            account="a",
            display_name="renamed",
        )
        j1 = store.list_jobs()[1]
    assert (j1["display_name"], j1["last_state"], j1["created"]) == (
        "renamed",
        "JOB_STATE_COMPLETED",
        "2026-01-01T00:00:00Z",
    )
    assert j1["last"] == {"state": "JOB_STATE_COMPLETED", "trainingConfig": {"outputModel": "om"}}


def test_prepare_is_deterministic(sim: FireworksSim) -> None:
    a, b = prepare_launch(request(sim)), prepare_launch(request(sim))
    assert (a.dataset_id, a.evaluator_id, a.job_id) == (b.dataset_id, b.evaluator_id, b.job_id)
    c = prepare_launch(request(sim, rows=4))
    assert c.dataset_id != a.dataset_id
    assert c.job_id != a.job_id
    assert c.evaluator_id == a.evaluator_id
    d = prepare_launch(replace(request(sim), params=RftParams(base_model="qwen3-0p6b", epochs=3)))
    assert d.job_id != a.job_id
    assert d.dataset_id == a.dataset_id
    assert a.dataset_id.startswith("svgagent-builtin-")
    assert len(a.dataset_id) <= 63
