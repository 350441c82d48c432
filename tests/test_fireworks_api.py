"""ControlPlane (our layer over the real fireworks-ai client) against the local simulator; links; JobView."""

from __future__ import annotations

import io
import json
import socket
import tarfile

import pytest

from svgagent.core.rft.fireworks_api import MISSING_KEY, ControlPlane, FireworksError, secret_id_for
from svgagent.core.rft.job_states import TERMINAL, is_terminal, stops_watching
from svgagent.core.rft.links import app_url, dataset_link, evaluator_link, job_link
from svgagent.core.rft.monitor import JobView
from svgagent.core.scoring.errors import SvgAgentError
from svgagent.core.sim.control_plane import FireworksSim

ACCT = "sim-account"
JSONL = b"".join(
    json.dumps({"messages": [{"role": "user", "content": f"draw {w}"}]}).encode() + b"\n"
    for w in ("a cat", "a dog", "a tree")
)
# The same job twice, written out by hand on purpose: the client's snake_case keys (what `RftParams.job_kwargs`
# builds) ...
JOB_KWARGS = {
    "display_name": "svg rft",
    "training_config": {
        "base_model": "accounts/fireworks/models/qwen3-0p6b",
        "epochs": 1,
        "learning_rate": 1e-4,
        "lora_rank": 16,
        "output_model": "svg-drawer",
    },
    "inference_parameters": {
        "temperature": 0.8,
        "max_output_tokens": 2048,
        "response_candidates_count": 4,
        "extra_body": json.dumps({"reasoning_effort": "low"}),
    },
    "loss_config": {"method": "GRPO", "kl_beta": 0.01},
    "eval_auto_carveout": True,
}
# ... and the camelCase body the client sends for them
JOB_BODY = {
    "displayName": "svg rft",
    "trainingConfig": {
        "baseModel": "accounts/fireworks/models/qwen3-0p6b",
        "epochs": 1,
        "learningRate": 1e-4,
        "loraRank": 16,
        "outputModel": "svg-drawer",
    },
    "inferenceParameters": {
        "temperature": 0.8,
        "maxOutputTokens": 2048,
        "responseCandidatesCount": 4,
        "extraBody": json.dumps({"reasoning_effort": "low"}),
    },
    "lossConfig": {"method": "GRPO", "klBeta": 0.01},
    "evalAutoCarveout": True,
}
FAST = {"poll_s": 0.001, "timeout_s": 5.0}


@pytest.fixture
def sim():
    with FireworksSim() as server:
        yield server


def plane(sim: FireworksSim, key: str = "test-key", **kw: object) -> ControlPlane:
    kw.setdefault("max_retries", 0)
    return ControlPlane(key, base_url=sim.base_url, **kw)


def bundle(
    source: str = "def evaluate(row):\n    return 1.0\n",
    *,
    root: str | None = "proj",
    requirements: bool = True,
    entry_file: str = "main.py",
) -> bytes:
    """An evaluator archive; by default laid out as `ep upload` packs one (everything under one folder)."""
    files = {entry_file: source.encode()}
    if requirements:
        files["requirements.txt"] = b"openai>=1.40\n"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(f"{root}/{name}" if root else name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def ensure(cp: ControlPlane, code_hash: str = "h1", archive: bytes | None = None, **kw: object) -> dict:
    return cp.ensure_evaluator(
        "svg-judge",
        "SVG judge",
        "main.py::evaluate",
        archive or bundle(),
        code_hash,
        filename="proj.tar.gz",
        **{**FAST, **kw},
    )


def ready(sim: FireworksSim) -> ControlPlane:
    cp = plane(sim)
    cp.create_dataset("svg-prompts", "SVG prompts", JSONL, **FAST)
    ensure(cp)
    return cp


def bodies(sim: FireworksSim, method: str, suffix: str) -> list:
    return [r.body for r in sim.requests if r.method == method and r.path.endswith(suffix)]


def test_full_sequence_through_the_real_client(sim: FireworksSim) -> None:
    cp = plane(sim)
    assert cp.resolve_account() == ACCT
    assert cp.upsert_secret("OPENAI_API_KEY", "sk-live-123")["created"] is True
    assert cp.upsert_secret("OPENAI_API_KEY", "sk-live-456") == {
        "name": f"accounts/{ACCT}/secrets/openai-api-key",
        "keyName": "OPENAI_API_KEY",
        "created": False,
    }
    assert sim.secret_value("openai-api-key") == "sk-live-456"
    dataset = cp.create_dataset("svg-prompts", "SVG prompts", JSONL, **FAST)
    assert (dataset["state"], dataset["exampleCount"]) == ("READY", "3")
    stages: list[str] = []
    evaluator = ensure(cp, on_progress=lambda stage, detail: stages.append(stage))
    assert evaluator["state"] == "ACTIVE"
    assert evaluator["description"] == "[code h1]"
    assert stages[:3] == ["create", "upload", "validate"]
    assert "building" in stages
    assert stages[-1] == "active"
    job = cp.create_job("svg-run-1", {"dataset": "svg-prompts", "evaluator": "svg-judge", **JOB_KWARGS})
    summary = JobView.from_job(job, None)
    assert (summary.job_id, summary.state, summary.output_model) == (
        "svg-run-1",
        "CREATING",
        f"accounts/{ACCT}/models/svg-drawer",
    )
    seen = []
    while not summary.terminal:
        summary = JobView.from_job(cp.get_job(summary.name), None)
        seen.append(summary.phase)
    assert seen[:4] == ["PENDING", "VALIDATING", "PROVISIONING", "RUNNING"]
    assert (summary.state, summary.percent, summary.processed, summary.total) == ("COMPLETED", 100, 3, 3)
    assert summary.completed

    assert sim.paths()[:6] == [
        "GET /verifyApiKey",
        f"GET /v1/accounts/{ACCT}/secrets/openai-api-key",
        f"POST /v1/accounts/{ACCT}/secrets",
        f"GET /v1/accounts/{ACCT}/secrets/openai-api-key",
        f"PATCH /v1/accounts/{ACCT}/secrets/openai-api-key",
        f"GET /v1/accounts/{ACCT}/datasets/svg-prompts",
    ]
    assert bodies(sim, "POST", "/secrets") == [  # named by its bare id, as eval-protocol does
        {"name": "openai-api-key", "keyName": "OPENAI_API_KEY", "value": "***"}
    ]
    assert bodies(sim, "PATCH", "/openai-api-key") == [{"keyName": "OPENAI_API_KEY", "value": "***"}]
    assert bodies(sim, "POST", "/datasets") == [
        {
            "datasetId": "svg-prompts",
            "dataset": {  # eval-protocol's kind
                "displayName": "SVG prompts",
                "exampleCount": "3",
                "evalProtocol": {},
                "format": "FORMAT_UNSPECIFIED",
            },
        }
    ]
    assert bodies(sim, "POST", ":upload") == [{"file": {"filename": "svg-prompts.jsonl", "size": len(JSONL)}}]
    assert bodies(sim, "POST", "/evaluatorsV2") == [
        {
            "evaluatorId": "svg-judge",
            "evaluator": {"displayName": "SVG judge", "description": "[code h1]", "entryPoint": "main.py::evaluate"},
        }
    ]
    assert bodies(sim, "POST", "svg-judge:getUploadEndpoint") == [
        {"filenameToSize": {"proj.tar.gz": str(len(bundle()))}}
    ]
    (upload,) = sim.uploads
    assert (upload["size"], upload["authorization_sent"]) == (len(bundle()), False)
    assert not [h for h in upload["headers"] if h.startswith("x-stainless")]  # no client metadata to storage
    assert bodies(sim, "POST", "svg-judge:validateUpload") == [{}]
    (create,) = [r for r in sim.requests if r.method == "POST" and r.path.endswith("/reinforcementFineTuningJobs")]
    assert create.query == {"reinforcementFineTuningJobId": "svg-run-1"}
    assert create.body == {
        "dataset": f"accounts/{ACCT}/datasets/svg-prompts",
        "evaluator": f"accounts/{ACCT}/evaluators/svg-judge",
        **JOB_BODY,
    }
    logged = json.dumps([r.body for r in sim.requests]) + json.dumps(sim.dump_state())
    assert "sk-live" not in logged


def test_account_from_environment_skips_verify(sim: FireworksSim, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FIREWORKS_ACCOUNT_ID", ACCT)
    monkeypatch.setenv("FIREWORKS_API_KEY", "env-key")
    monkeypatch.setenv("FIREWORKS_BASE_URL", sim.base_url + "/v1")  # a pasted /v1 suffix is tolerated
    cp = ControlPlane(max_retries=0)
    assert cp.resolve_account() == ACCT
    assert cp.base_url == sim.base_url
    assert cp.list_jobs().jobs == []
    assert sim.paths() == [f"GET /v1/accounts/{ACCT}/reinforcementFineTuningJobs"]
    assert cp.verify_key() == ACCT


def test_existing_evaluator_is_used_as_it_is(sim: FireworksSim) -> None:
    cp = ready(sim)
    before = len(sim.requests)
    stages: list[str] = []
    assert ensure(cp, on_progress=lambda s, d: stages.append(s))["state"] == "ACTIVE"
    assert stages == ["reuse"]
    assert sim.paths()[before:] == [f"GET /v1/accounts/{ACCT}/evaluators/svg-judge"]


def test_force_deletes_and_creates_the_evaluator_again(sim: FireworksSim) -> None:
    """eval-protocol's `--force`: DELETE then create and upload again (never PATCH ...?prepareCodeUpload)."""
    cp = ready(sim)
    before = len(sim.requests)
    stages: list[str] = []
    assert ensure(cp, "h2", force=True, on_progress=lambda s, d: stages.append(s))["description"] == "[code h2]"
    new = [f"{r.method} {r.path.rsplit('/', 1)[-1]}" for r in sim.requests[before:] if r.method != "GET"]
    assert new[:3] == ["DELETE svg-judge", "POST evaluatorsV2", "POST svg-judge:getUploadEndpoint"]
    assert new[3].startswith("PUT ")
    assert new[4] == "POST svg-judge:validateUpload"
    assert len(new) == 5
    assert stages[:2] == ["delete", "create"]
    assert len(sim.uploads) == 2


def test_failed_evaluator_is_reported_with_what_to_do(sim: FireworksSim) -> None:
    sim.config.evaluator_build_failure = "pip failed"
    cp = plane(sim)
    with pytest.raises(FireworksError):
        ensure(cp)
    sim.config.evaluator_build_failure = None
    with pytest.raises(FireworksError) as err:  # the same code again: reported, not rebuilt behind the user's back
        ensure(cp)
    assert err.value.kind == "build_failed"
    assert "--force" in str(err.value)
    assert ensure(cp, force=True)["state"] == "ACTIVE"


def test_secret_lookup_answered_with_500_means_not_found(sim: FireworksSim) -> None:
    sim.config.missing_secret_500_every = 1  # every lookup of a missing secret: 500
    cp = plane(sim)
    assert cp.upsert_secret("OPENAI_API_KEY", "sk-live-1")["created"] is True
    assert [r.status for r in sim.requests if "/secrets" in r.path] == [500, 200]
    # a 500 that lied (the secret was there): the create answers 409 and the secret is updated
    sim.inject(500, times=1, route="/secrets/openai-api-key$", method="GET")
    assert cp.upsert_secret("OPENAI_API_KEY", "sk-live-2")["created"] is False
    assert sim.secret_value("openai-api-key") == "sk-live-2"
    assert [(r.method, r.status) for r in sim.requests if "/secrets" in r.path][2:] == [
        ("GET", 500),
        ("POST", 409),
        ("PATCH", 200),
    ]


def test_job_ids_are_checked_before_any_request(sim: FireworksSim) -> None:
    cp = ready(sim)
    before = len(sim.requests)
    for bad in ("../../etc", "a/b", "Job_1", "accounts/a/reinforcementFineTuningJobs/../x", ""):
        for call in (
            cp.get_job,
            cp.cancel_job,
            cp.resume_job,
            cp.delete_job,
            lambda ref: cp.create_job(ref or "-", {"dataset": "svg-prompts", "evaluator": "svg-judge"}),
        ):
            with pytest.raises(FireworksError) as err:
                call(bad)
            assert err.value.kind == "invalid", bad
    assert len(sim.requests) == before
    with pytest.raises(FireworksError) as err:
        cp.get_job(f"accounts/{ACCT}/reinforcementFineTuningJobs/nope")
    assert err.value.kind == "not_found"


def test_build_failure_reports_message_and_log_link(sim: FireworksSim) -> None:
    sim.config.evaluator_build_failure = "ModuleNotFoundError: No module named 'cairosvgg'"
    with pytest.raises(FireworksError) as err:
        ensure(plane(sim))
    assert err.value.kind == "build_failed"
    assert isinstance(err.value, SvgAgentError)
    assert "No module named 'cairosvgg'" in str(err.value)
    assert err.value.link
    assert err.value.link.startswith(sim.base_url + "/_logs/")
    assert err.value.link in str(err.value)


def test_build_timeout_says_what_to_do(sim: FireworksSim) -> None:
    sim.config.evaluator_build_steps = 10_000
    with pytest.raises(FireworksError) as err:
        ensure(plane(sim), poll_s=0.001, timeout_s=0.05)
    assert err.value.kind == "timeout"
    assert "still BUILDING" in str(err.value)
    assert f"{sim.base_url}/dashboard/evaluators/svg-judge" in str(err.value)


def test_admin_role_required(sim: FireworksSim) -> None:
    sim.config.admin = False
    with pytest.raises(FireworksError) as err:
        ensure(plane(sim))
    assert err.value.kind == "admin_required"
    assert err.value.status_code == 403
    assert "admin role required" in str(err.value)
    assert "account admin" in str(err.value)


def test_rejected_key(sim: FireworksSim) -> None:
    with pytest.raises(FireworksError) as err:
        plane(sim, key="rejected-key").resolve_account()
    assert err.value.kind == "auth"
    assert "FIREWORKS_API_KEY" in str(err.value)
    assert "401" in str(err.value)


def test_missing_key() -> None:
    with pytest.raises(FireworksError) as err:
        ControlPlane(base_url="http://127.0.0.1:9")
    assert str(err.value) == MISSING_KEY
    assert err.value.kind == "missing_key"


def test_unreachable_host_names_it() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    cp = ControlPlane("k", base_url=f"http://127.0.0.1:{port}", max_retries=0)
    with pytest.raises(FireworksError) as err:
        cp.resolve_account()
    assert err.value.kind == "network"
    assert f"127.0.0.1:{port}" in str(err.value)


def test_rate_limit_and_transient_server_errors(sim: FireworksSim) -> None:
    cp = plane(sim, account_id=ACCT)
    sim.inject(429, times=None, route="reinforcementFineTuningJobs")
    with pytest.raises(FireworksError) as err:
        cp.list_jobs()
    assert err.value.kind == "rate_limit"
    assert "quota" in str(err.value)
    sim.clear_faults()
    sim.inject(503, times=1, retry_after_s=0.01)
    assert plane(sim, account_id=ACCT, max_retries=2).list_jobs().jobs == []  # the client's own retry
    assert [r.status for r in sim.requests[-2:]] == [503, 200]
    sim.inject(500, times=None)
    with pytest.raises(FireworksError) as err:
        cp.get_job("x")
    assert err.value.kind == "server"


def test_dataset_is_idempotent(sim: FireworksSim) -> None:
    cp = plane(sim)
    cp.create_dataset("svg-prompts", "SVG prompts", JSONL, **FAST)
    before = len(sim.requests)
    assert cp.create_dataset("svg-prompts", "SVG prompts", JSONL, **FAST)["state"] == "READY"
    assert sim.paths()[before:] == [f"GET /v1/accounts/{ACCT}/datasets/svg-prompts"]
    with pytest.raises(FireworksError) as err:
        cp.create_dataset("svg-prompts", "SVG prompts", JSONL + JSONL, **FAST)
    assert err.value.kind == "conflict"
    assert "3 examples" in str(err.value)
    with pytest.raises(FireworksError):
        cp.create_dataset("Bad Id", "x", JSONL)
    with pytest.raises(FireworksError):
        cp.create_dataset("empty", "x", b"\n")


def test_dataset_signed_url_path_for_large_files(sim: FireworksSim) -> None:
    cp = plane(sim)
    cp.DIRECT_UPLOAD_LIMIT = 10
    assert cp.create_dataset("big", "Big", JSONL, **FAST)["exampleCount"] == "3"
    assert [p.split("/")[-1] for p in sim.paths() if p.startswith("POST")] == [
        "datasets",
        "big:getUploadEndpoint",
        "big:validateUpload",
    ]
    assert sim.uploads[0]["authorization_sent"] is False
    assert sim.dataset_bytes("big") == JSONL


def test_list_jobs_paging(sim: FireworksSim) -> None:
    cp = ready(sim)
    for i in range(5):
        cp.create_job(f"job-{i}", {"dataset": "svg-prompts", "evaluator": "svg-judge", **JOB_KWARGS})
    ids, token, pages = [], None, 0
    while True:
        page = cp.list_jobs(page_size=2, page_token=token, order_by="name")
        ids += [JobView.from_job(j, None).job_id for j in page.jobs]
        pages += 1
        if not (token := page.next_page_token):
            break
    assert pages == 3
    assert ids == [f"job-{i}" for i in range(5)]
    assert len(cp.list_jobs().jobs) == 5


def test_cancel_and_resume(sim: FireworksSim) -> None:
    cp = ready(sim)
    cp.create_job("run", {"dataset": "svg-prompts", "evaluator": "svg-judge", **JOB_KWARGS})
    cp.cancel_job(f"accounts/{ACCT}/reinforcementFineTuningJobs/run")
    assert sim.job_state("run") == "JOB_STATE_CANCELLING"
    assert JobView.from_job(cp.get_job("run"), None).state == "CANCELLED"
    with pytest.raises(FireworksError) as err:
        cp.cancel_job("run")
    assert err.value.kind == "invalid"
    assert "cannot be cancelled" in str(err.value)
    assert JobView.from_job(cp.resume_job("run"), None).state == "RUNNING"
    cp.delete_job("run")
    with pytest.raises(FireworksError) as err:
        cp.get_job("run")
    assert err.value.kind == "not_found"


def test_failed_job_summary_and_resume(sim: FireworksSim) -> None:
    sim.config.job_failure = "evaluator crashed on 40% of rollouts"
    cp = ready(sim)
    cp.create_job(None, {"dataset": "svg-prompts", "evaluator": "svg-judge", **JOB_KWARGS})
    (job,) = cp.list_jobs().jobs
    summary = JobView.from_job(job, None)
    while not summary.terminal:
        summary = JobView.from_job(cp.get_job(summary.job_id), None)
    assert (summary.state, summary.status) == ("FAILED", "evaluator crashed on 40% of rollouts")
    assert JobView.from_job(cp.resume_job(summary.name), None).phase == "RUNNING"


def test_job_body_errors(sim: FireworksSim) -> None:
    cp = ready(sim)
    before = len(sim.requests)
    with pytest.raises(FireworksError) as err:
        cp.create_job("x", {"evaluator": "svg-judge"})
    assert err.value.kind == "invalid"
    assert len(sim.requests) == before  # refused before any request
    with pytest.raises(FireworksError) as err:
        cp.create_job("x", {"dataset": "svg-prompts", "evaluator": "svg-judge", "training_config": {"epochs": 1}})
    assert err.value.kind == "invalid"
    assert "trainingConfig.baseModel" in str(err.value)
    cp.create_job("dup", {"dataset": "svg-prompts", "evaluator": "svg-judge", **JOB_KWARGS})
    with pytest.raises(FireworksError) as err:
        cp.create_job("dup", {"dataset": "svg-prompts", "evaluator": "svg-judge", **JOB_KWARGS})
    assert err.value.kind == "conflict"
    assert "already exists" in str(err.value)
    before = len(sim.requests)
    with pytest.raises(FireworksError) as err:  # only the client's own arguments: nothing unexplained is sent
        cp.create_job(None, {"dataset": "svg-prompts", "evaluator": "svg-judge", "futureField": {"a": 1}})
    assert err.value.kind == "invalid"
    assert "futureField" in str(err.value)
    assert len(sim.requests) == before


def test_secret_ids() -> None:
    assert secret_id_for("OPENAI_API_KEY") == "openai-api-key"
    with pytest.raises(FireworksError):
        secret_id_for("1BAD")


def test_job_view_parser_and_the_one_set_of_states() -> None:
    empty = JobView.from_job({}, None)
    assert (empty.state, empty.percent, empty.total, empty.name, empty.output_model) == (
        "UNSPECIFIED",
        None,
        0,
        "",
        None,
    )
    running = JobView.from_job(
        {
            "name": "accounts/a/reinforcementFineTuningJobs/j1",
            "displayName": "run",
            "state": "JOB_STATE_RUNNING",
            "status": {"code": "OK", "message": ""},
            "createTime": "2025-01-01T00:00:00Z",
            "trainingConfig": {"outputModel": "accounts/a/models/m"},
            "jobProgress": {
                "percent": 40,
                "epoch": 1,
                "totalInputRequests": "200",
                "successfullyProcessedRequests": "78",
                "failedRequests": "2",
            },
        },
        None,
    )
    assert (running.job_id, running.phase, running.percent, running.epoch) == ("j1", "RUNNING", 40, 1)
    assert (running.processed, running.failed, running.total) == (80, 2, 200)
    assert running.output_model == "accounts/a/models/m"
    assert not running.terminal
    provisioning = JobView.from_job({"state": "JOB_STATE_RUNNING", "jobProgress": {"totalInputRequests": 0}}, None)
    assert provisioning.provisioning
    assert provisioning.phase == "PROVISIONING"
    assert JobView.from_job({"state": "JOB_STATE_RUNNING"}, None).provisioning  # progress absent
    for state in ("COMPLETED", "JOB_STATE_FAILED", "CANCELLED", "JOB_STATE_EARLY_STOPPED", "EXPIRED"):
        assert is_terminal(state)
        assert stops_watching(state)
    for state in ("RUNNING", "JOB_STATE_CANCELLING", "JOB_STATE_PAUSED", "JOB_STATE_WRITING_RESULTS", None):
        assert not is_terminal(state)
    assert stops_watching("JOB_STATE_PAUSED")
    assert not stops_watching("RUNNING")  # paused: waits on the person
    paused = JobView.from_job({"name": "accounts/a/reinforcementFineTuningJobs/j2", "state": "JOB_STATE_PAUSED"}, None)
    assert not paused.terminal
    assert paused.stops_watching
    assert "svgagent rft resume j2" in paused.why_stopped()
    assert {JobView.from_job({"state": s}, None).terminal for s in TERMINAL} == {True}


def test_links() -> None:
    assert app_url(None) == "https://app.fireworks.ai"
    assert (
        evaluator_link("https://api.fireworks.ai", "svg-judge")
        == "https://app.fireworks.ai/dashboard/evaluators/svg-judge"
    )
    assert (
        dataset_link("https://api.fireworks.ai/", "accounts/a/datasets/d1")
        == "https://app.fireworks.ai/dashboard/datasets/d1"
    )
    assert (
        job_link("https://api.fireworks.ai", "accounts/a/reinforcementFineTuningJobs/j9")
        == "https://app.fireworks.ai/dashboard/fine-tuning/reinforcement/j9"
    )
    assert app_url("https://api.staging.example.com:8443") == "https://app.staging.example.com:8443"
    assert job_link("http://127.0.0.1:5555", "j") == "http://127.0.0.1:5555/dashboard/fine-tuning/reinforcement/j"
    assert app_url("http://localhost:8765") == "http://localhost:8765"
    # eval-protocol's mapping (fireworks_rft._map_api_host_to_app_host)
    assert app_url("https://dev.api.fireworks.ai") == "https://dev.fireworks.ai"
    assert app_url("https://staging.api.fireworks.ai/") == "https://app.fireworks.ai"
    assert evaluator_link("https://dev.api.fireworks.ai", "e") == "https://dev.fireworks.ai/dashboard/evaluators/e"
    assert app_url("https://gateway.example.com") == "https://gateway.example.com"
