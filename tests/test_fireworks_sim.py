"""The Fireworks control-plane simulator, driven through the real fireworks-ai client (127.0.0.1 only)."""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import tarfile
import time

import fireworks
import httpx
import pytest

from svgagent.core.sim.control_plane import FireworksSim

ACCT = "sim-account"
JSONL = b'{"messages": [{"role": "user", "content": "a cat"}]}\n{"messages": [{"role": "user", "content": "a dog"}]}\n'


@pytest.fixture
def sim():
    with FireworksSim() as server:
        yield server


def client(sim: FireworksSim, key: str = "test-key", retries: int = 0) -> fireworks.Fireworks:
    return fireworks.Fireworks(api_key=key, account_id=ACCT, base_url=sim.base_url, max_retries=retries)


EP_DATASET = {"eval_protocol": {}, "format": "FORMAT_UNSPECIFIED"}  # what eval-protocol creates


def ready_dataset(fw: fireworks.Fireworks, did: str = "ds", kind: dict | None = None) -> None:
    fw.datasets.create(dataset_id=did, dataset={"display_name": did, **(EP_DATASET if kind is None else kind)})
    fw.datasets.upload(did, file=(f"{did}.jsonl", JSONL, "application/jsonl"))
    while fw.datasets.get(did).state != "READY":
        pass


def tarball(files: dict[str, str]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


GOOD_BUNDLE = {"proj/main.py": "def evaluate(x):\n    return x * 2\n", "proj/requirements.txt": "openai\n"}


def active_evaluator(
    fw: fireworks.Fireworks, eid: str = "ev", archive: bytes | None = None, entry_point: str = "main.py::evaluate"
) -> None:
    archive = tarball(GOOD_BUNDLE) if archive is None else archive
    fw.evaluators.create(evaluator_id=eid, evaluator={"display_name": eid, "entry_point": entry_point})
    url = fw.evaluators.get_upload_endpoint(eid, filename_to_size={"b.tar.gz": str(len(archive))})
    put(fw, url.filename_to_signed_urls["b.tar.gz"], archive)
    fw.evaluators.validate_upload(eid, body={})
    while fw.evaluators.get(eid).state == "BUILDING":
        pass


def put(fw: fireworks.Fireworks, url: str, data: bytes, **headers: str) -> httpx.Response:
    return fw.put(
        url,
        content=data,
        cast_to=httpx.Response,
        options={
            "headers": {
                "Authorization": fireworks.omit,
                "Content-Type": "application/octet-stream",
                "X-Goog-Content-Length-Range": f"{len(data)},{len(data)}",
                **headers,
            }
        },
    )


def job_body(**training: object) -> dict[str, object]:
    return {
        "dataset": f"accounts/{ACCT}/datasets/ds",
        "evaluator": f"accounts/{ACCT}/evaluators/ev",
        "training_config": {"base_model": "accounts/fireworks/models/qwen3-0p6b", **training},
    }


def test_verify_api_key_reports_account_and_rejects_bad_key(sim: FireworksSim) -> None:
    response = client(sim).get("/verifyApiKey", cast_to=httpx.Response)
    assert response.headers["x-fireworks-account-id"] == ACCT
    with pytest.raises(fireworks.AuthenticationError) as err:
        client(sim, key="rejected-key").get("/verifyApiKey", cast_to=httpx.Response)
    assert err.value.body == {"error": {"code": 401, "message": "invalid API key", "status": "UNAUTHENTICATED"}}


def test_other_account_is_forbidden_and_unknown_route_is_404(sim: FireworksSim) -> None:
    with pytest.raises(fireworks.PermissionDeniedError):
        client(sim).datasets.list(account_id="someone-else")
    with pytest.raises(fireworks.NotFoundError):
        client(sim).get("/v1/nothing-here", cast_to=httpx.Response)


def test_secrets_store_values_but_never_show_them(sim: FireworksSim) -> None:
    fw = client(sim)
    fw.secrets.create(name=f"accounts/{ACCT}/secrets/openai-api-key", key_name="OPENAI_API_KEY", value="sk-first")
    got = fw.secrets.get("openai-api-key")
    assert (got.key_name, got.value) == ("OPENAI_API_KEY", None)
    fw.secrets.update("openai-api-key", key_name="OPENAI_API_KEY", value="sk-second")
    assert sim.secret_value("openai-api-key") == "sk-second"
    with pytest.raises(fireworks.ConflictError):
        fw.secrets.create(name="openai-api-key", key_name="OPENAI_API_KEY", value="x")
    with pytest.raises(fireworks.NotFoundError):
        fw.secrets.update("missing", key_name="MISSING", value="x")
    dumped = json.dumps([r.body for r in sim.requests]) + json.dumps(sim.dump_state())
    assert "sk-first" not in dumped
    assert "sk-second" not in dumped
    assert "***" in dumped


def test_ids_are_validated_and_duplicates_conflict(sim: FireworksSim) -> None:
    fw = client(sim)
    for bad in ("Upper", "9starts-with-digit", "under_score", "a" * 64):
        with pytest.raises(fireworks.BadRequestError) as err:
            fw.datasets.create(dataset_id=bad, dataset={"display_name": "x"})
        assert err.value.body["error"]["status"] == "INVALID_ARGUMENT"
    fw.datasets.create(dataset_id="a" * 63, dataset={"display_name": "x"})
    with pytest.raises(fireworks.ConflictError) as err:
        fw.datasets.create(dataset_id="a" * 63, dataset={"display_name": "x"})
    assert err.value.body["error"]["status"] == "ALREADY_EXISTS"


def test_dataset_multipart_upload_counts_examples(sim: FireworksSim) -> None:
    fw = client(sim)
    created = fw.datasets.create(dataset_id="ds", dataset={"display_name": "DS", "example_count": "99"})
    assert created.state == "UPLOADING"
    fw.datasets.upload("ds", file=("ds.jsonl", JSONL, "application/jsonl"))
    got = fw.datasets.get("ds")
    assert (got.state, got.example_count, got.name) == ("READY", "2", f"accounts/{ACCT}/datasets/ds")
    assert sim.dataset_bytes("ds") == JSONL
    with pytest.raises(fireworks.BadRequestError):  # already READY
        fw.datasets.upload("ds", file=("ds.jsonl", JSONL, "application/jsonl"))
    fw.datasets.create(dataset_id="broken", dataset={"display_name": "B"})
    with pytest.raises(fireworks.BadRequestError) as err:
        fw.datasets.upload("broken", file=("b.jsonl", b'{"ok": 1}\nnot json\n', "application/jsonl"))
    assert "line 2" in err.value.body["error"]["message"]


def test_dataset_signed_url_upload(sim: FireworksSim) -> None:
    fw = client(sim)
    fw.datasets.create(dataset_id="big", dataset={"display_name": "Big"})
    with pytest.raises(fireworks.BadRequestError):  # nothing uploaded yet
        fw.datasets.validate_upload("big", body={})
    urls = fw.datasets.get_upload_endpoint("big", filename_to_size={"big.jsonl": str(len(JSONL))})
    url = urls.filename_to_signed_urls["big.jsonl"]
    assert url.startswith(sim.base_url + "/_upload/")
    with pytest.raises(fireworks.PermissionDeniedError, match="SignatureDoesNotMatch"):  # signed headers
        fw.put(url, content=JSONL, cast_to=httpx.Response, options={"headers": {"Authorization": fireworks.omit}})
    with pytest.raises(fireworks.BadRequestError, match="X-Goog-Content-Length-Range"):
        put(fw, url, JSONL, **{"X-Goog-Content-Length-Range": "1,1"})
    assert put(fw, url, JSONL).status_code == 200
    fw.datasets.validate_upload("big", body={})
    assert fw.datasets.get("big").state == "READY"
    assert sim.uploads[-1]["authorization_sent"] is False


def test_evaluator_builds_to_active_and_keeps_the_bundle(sim: FireworksSim) -> None:
    fw = client(sim)
    bundle = tarball(GOOD_BUNDLE)
    created = fw.evaluators.create(
        evaluator_id="ev",
        evaluator={"display_name": "SVG judge", "entry_point": "main.py::evaluate", "commit_hash": "h1"},
    )
    assert created.state == "BUILDING"
    assert created.commit_hash == "h1"
    urls = fw.evaluators.get_upload_endpoint("ev", filename_to_size={"ev.tar.gz": str(len(bundle))})
    url = urls.filename_to_signed_urls["ev.tar.gz"]
    with pytest.raises(fireworks.APIStatusError):  # size must match the declared one
        put(fw, url, bundle + b"x")
    put(fw, url, bundle)
    fw.evaluators.validate_upload("ev", body={})
    assert [fw.evaluators.get("ev").state for _ in range(3)] == ["BUILDING", "ACTIVE", "ACTIVE"]
    namespace: dict[str, object] = {}
    with tarfile.open(fileobj=io.BytesIO(sim.evaluator_archive("ev")), mode="r:gz") as tar:
        exec(tar.extractfile("proj/main.py").read().decode(), namespace)
    assert namespace["evaluate"](21) == 42
    assert [e.name for e in fw.evaluators.list()] == [f"accounts/{ACCT}/evaluators/ev"]
    fw.evaluators.delete("ev")
    with pytest.raises(fireworks.NotFoundError):
        fw.evaluators.get("ev")


def test_evaluator_build_failure_has_message_and_log(sim: FireworksSim) -> None:
    sim.config.evaluator_build_failure = "pip install failed: no matching distribution for cairosvgg"
    fw = client(sim)
    active_evaluator(fw)
    got = fw.evaluators.get("ev")
    assert got.state == "BUILD_FAILED"
    assert "cairosvgg" in got.status.message
    log_url = fw.evaluators.get_build_log_endpoint("ev").build_log_signed_uri
    assert "cairosvgg" in httpx.get(log_url).text


@pytest.mark.parametrize(
    ("files", "entry_point", "reason"),
    [
        ({"main.py": "def evaluate(x): ...\n", "requirements.txt": ""}, "main.py::evaluate", "one top-level folder"),
        ({"proj/main.py": "def evaluate(x): ...\n"}, "main.py::evaluate", "requirements.txt is missing"),
        (GOOD_BUNDLE, "proj/main.py::evaluate", "does not resolve inside the archive"),
        (GOOD_BUNDLE, "main.py::score", "defines no score"),
        (GOOD_BUNDLE, "main.py", "must look like path/to/file.py::function"),
        ({**GOOD_BUNDLE, "proj/main.py": "def evaluate(:\n"}, "main.py::evaluate", "is not valid Python"),
    ],
)
def test_evaluator_build_rejects_what_the_platform_would(
    sim: FireworksSim, files: dict[str, str], entry_point: str, reason: str
) -> None:
    fw = client(sim)
    active_evaluator(fw, archive=tarball(files), entry_point=entry_point)
    got = fw.evaluators.get("ev")
    assert got.state == "BUILD_FAILED" and reason in got.status.message, got.status.message
    assert reason in httpx.get(fw.evaluators.get_build_log_endpoint("ev").build_log_signed_uri).text


def test_evaluator_upload_that_is_not_an_archive_fails_its_build(sim: FireworksSim) -> None:
    fw = client(sim)
    active_evaluator(fw, archive=b"not a tarball")
    assert "not a readable .tar.gz" in fw.evaluators.get("ev").status.message


def test_missing_secret_is_sometimes_answered_with_500(sim: FireworksSim) -> None:
    fw = client(sim)
    statuses = []
    for _ in range(4):
        with pytest.raises(fireworks.APIStatusError) as err:
            fw.secrets.get("nothing-here")
        statuses.append(err.value.status_code)
    assert statuses == [404, 500, 404, 500]  # every other lookup, as SimConfig.missing_secret_500_every says
    sim.config.missing_secret_500_every = 0
    with pytest.raises(fireworks.NotFoundError):
        fw.secrets.get("nothing-here")


def test_evaluator_create_needs_admin_when_configured(sim: FireworksSim) -> None:
    sim.config.admin = False
    with pytest.raises(fireworks.PermissionDeniedError) as err:
        client(sim).evaluators.create(evaluator_id="ev", evaluator={"display_name": "x"})
    assert err.value.body["error"]["message"] == "admin role required"


def test_job_lifecycle_per_poll(sim: FireworksSim) -> None:
    fw = client(sim)
    ready_dataset(fw)
    active_evaluator(fw)
    job = fw.reinforcement_fine_tuning_jobs.create(reinforcement_fine_tuning_job_id="job-1", **job_body(epochs=2))
    assert job.state == "JOB_STATE_CREATING"
    assert job.name == f"accounts/{ACCT}/reinforcementFineTuningJobs/job-1"
    seen = []
    while job.state != "JOB_STATE_COMPLETED":
        job = fw.reinforcement_fine_tuning_jobs.get("job-1")
        progress = job.job_progress
        seen.append((job.state, progress and progress.percent, progress and progress.total_input_requests))
    assert [s for s, _, _ in seen[:3]] == ["JOB_STATE_PENDING", "JOB_STATE_VALIDATING", "JOB_STATE_RUNNING"]
    assert seen[2][2] == 0  # provisioning: RUNNING with no input requests yet
    percents = [p for s, p, _ in seen if s == "JOB_STATE_RUNNING"]
    assert percents == sorted(percents)
    assert percents[-1] == 75
    assert job.job_progress.total_input_requests == 4
    assert job.job_progress.epoch == 1
    assert job.completed_time is not None
    assert job.training_config.output_model == f"accounts/{ACCT}/models/job-1"


def test_job_validation(sim: FireworksSim) -> None:
    fw = client(sim)
    ready_dataset(fw)
    with pytest.raises(fireworks.BadRequestError, match="evaluator .* does not exist"):
        fw.reinforcement_fine_tuning_jobs.create(**job_body())
    active_evaluator(fw)
    with pytest.raises(fireworks.BadRequestError) as err:
        fw.reinforcement_fine_tuning_jobs.create(
            dataset=f"accounts/{ACCT}/datasets/ds", evaluator=f"accounts/{ACCT}/evaluators/ev", training_config={}
        )
    assert "trainingConfig.baseModel" in err.value.body["error"]["message"]
    with pytest.raises(fireworks.BadRequestError, match="dataset is required"):
        fw.post(f"/v1/accounts/{ACCT}/reinforcementFineTuningJobs", cast_to=object, body={"evaluator": "x"})
    with pytest.raises(fireworks.BadRequestError, match="chunkSize"):
        fw.reinforcement_fine_tuning_jobs.create(chunk_size=0, **job_body())
    with pytest.raises(fireworks.BadRequestError, match="invalid job id"):
        fw.reinforcement_fine_tuning_jobs.create(reinforcement_fine_tuning_job_id="Bad_Id", **job_body())
    fw.reinforcement_fine_tuning_jobs.create(reinforcement_fine_tuning_job_id="dup", **job_body())
    with pytest.raises(fireworks.ConflictError):
        fw.reinforcement_fine_tuning_jobs.create(reinforcement_fine_tuning_job_id="dup", **job_body())
    with pytest.raises(fireworks.NotFoundError):
        fw.reinforcement_fine_tuning_jobs.get("nope")


def test_job_needs_an_eval_protocol_dataset(sim: FireworksSim) -> None:
    fw = client(sim)
    ready_dataset(fw, "chat", kind={"format": "CHAT", "user_uploaded": {}})  # what svgagent used to create
    active_evaluator(fw)
    with pytest.raises(fireworks.BadRequestError, match="not an Eval Protocol dataset"):
        fw.reinforcement_fine_tuning_jobs.create(**{**job_body(), "dataset": f"accounts/{ACCT}/datasets/chat"})
    ready_dataset(fw)
    assert fw.reinforcement_fine_tuning_jobs.create(**job_body()).state == "JOB_STATE_CREATING"


def test_job_failure_then_resume_completes(sim: FireworksSim) -> None:
    sim.config.job_failure = "rollout error rate too high"
    fw = client(sim)
    ready_dataset(fw)
    active_evaluator(fw)
    fw.reinforcement_fine_tuning_jobs.create(reinforcement_fine_tuning_job_id="j", **job_body())
    job = fw.reinforcement_fine_tuning_jobs.get("j")
    while job.state not in ("JOB_STATE_FAILED", "JOB_STATE_COMPLETED"):
        job = fw.reinforcement_fine_tuning_jobs.get("j")
    assert job.state == "JOB_STATE_FAILED"
    assert job.status.message == "rollout error rate too high"
    assert job.job_progress.percent == 50
    resumed = fw.reinforcement_fine_tuning_jobs.resume("j", body={})
    assert resumed.state == "JOB_STATE_RUNNING"
    assert resumed.job_progress.percent == 50
    while job.state != "JOB_STATE_COMPLETED":
        job = fw.reinforcement_fine_tuning_jobs.get("j")


def test_cancel_resume_delete(sim: FireworksSim) -> None:
    fw = client(sim)
    ready_dataset(fw)
    active_evaluator(fw)
    fw.reinforcement_fine_tuning_jobs.create(reinforcement_fine_tuning_job_id="j", **job_body())
    with pytest.raises(fireworks.BadRequestError):  # only stopped jobs resume
        fw.reinforcement_fine_tuning_jobs.resume("j", body={})
    fw.reinforcement_fine_tuning_jobs.cancel("j", body={})
    assert sim.job_state("j") == "JOB_STATE_CANCELLING"
    assert fw.reinforcement_fine_tuning_jobs.get("j").state == "JOB_STATE_CANCELLED"
    with pytest.raises(fireworks.BadRequestError):
        fw.reinforcement_fine_tuning_jobs.cancel("j", body={})
    assert fw.reinforcement_fine_tuning_jobs.resume("j", body={}).state == "JOB_STATE_RUNNING"
    sim.set_job_state("j", "JOB_STATE_PAUSED")
    assert fw.reinforcement_fine_tuning_jobs.resume("j", body={}).state == "JOB_STATE_RUNNING"
    fw.reinforcement_fine_tuning_jobs.delete("j")
    with pytest.raises(fireworks.NotFoundError):
        fw.reinforcement_fine_tuning_jobs.get("j")


def test_time_mode_advances_with_the_clock() -> None:
    with FireworksSim(advance="time", step_seconds=0.05) as sim:
        fw = client(sim)
        fw.datasets.create(dataset_id="ds", dataset={"display_name": "x", **EP_DATASET})
        fw.datasets.upload("ds", file=("ds.jsonl", JSONL, "application/jsonl"))
        assert fw.datasets.get("ds").state == "UPLOADING"  # a GET alone does not advance in time mode
        time.sleep(0.12)
        assert fw.datasets.get("ds").state == "READY"


def test_list_paging(sim: FireworksSim) -> None:
    fw = client(sim)
    for i in range(5):
        fw.datasets.create(dataset_id=f"d{i}", dataset={"display_name": str(i)})
    first = fw.datasets.list(page_size=2)
    assert [d.name.rsplit("/", 1)[1] for d in first.datasets] == ["d0", "d1"]
    assert first.next_page_token
    every = [d.name.rsplit("/", 1)[1] for d in first]  # iterating a page follows nextPageToken
    assert every == [f"d{i}" for i in range(5)]
    last = fw.datasets.list(page_size=2, page_token=fw.datasets.list(page_size=4).next_page_token)
    assert len(last.datasets) == 1
    assert not last.next_page_token
    with pytest.raises(fireworks.BadRequestError):
        fw.datasets.list(page_token="garbage!")


def test_injected_faults(sim: FireworksSim) -> None:
    fw = client(sim)
    sim.inject(429, times=1, retry_after_s=0.01)
    assert client(sim, retries=1).get("/verifyApiKey", cast_to=httpx.Response).status_code == 200  # client retried
    assert [r.status for r in sim.requests] == [429, 200]
    sim.inject(503, times=None, route="/evaluators")
    with pytest.raises(fireworks.InternalServerError):
        fw.evaluators.list()
    fw.datasets.list()  # other routes unaffected
    sim.clear_faults()
    fw.evaluators.list()
    sim.inject(401, method="POST")
    fw.datasets.list()
    with pytest.raises(fireworks.AuthenticationError):
        fw.datasets.create(dataset_id="x", dataset={})


def test_reset_forgets_everything(sim: FireworksSim) -> None:
    fw = client(sim)
    fw.datasets.create(dataset_id="ds", dataset={"display_name": "x"})
    sim.inject(500, times=None)
    sim.reset()
    assert sim.requests == []
    assert sim.dump_state()["datasets"] == {}
    assert fw.datasets.list().datasets == []


def test_dashboard_page_is_local(sim: FireworksSim) -> None:
    fw = client(sim)
    fw.datasets.create(dataset_id="ds", dataset={"display_name": "x"})
    page = httpx.get(f"{sim.base_url}/dashboard/datasets/ds")
    assert page.status_code == 200
    assert "SIMULATOR" in page.text
    assert "accounts/sim-account/datasets/ds" in page.text


def test_standalone_cli_serves() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("FIREWORKS_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "svgagent.core.sim.control_plane", "--port", str(port), "--account", "cli-acct"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                response = httpx.get(f"http://127.0.0.1:{port}/verifyApiKey", headers={"Authorization": "Bearer k"})
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.stderr else ""
                time.sleep(0.05)
        assert response.headers["x-fireworks-account-id"] == "cli-acct"
    finally:
        proc.terminate()
        proc.wait(10)


def test_job_reports_the_platforms_curves_in_output_metrics(sim: FireworksSim) -> None:
    """The simulator's per-step metrics pass the real client's type (outputMetrics: a string) and read back as
    curves: one point per step done, reward and loss every step, eval reward every other step and at the last."""
    from svgagent.core.rft.job_metrics import EVAL_REWARD, LOSS, REWARD, job_curves
    from svgagent.core.rft.monitor import JobView

    fw = client(sim)
    ready_dataset(fw)
    active_evaluator(fw)
    fw.reinforcement_fine_tuning_jobs.create(reinforcement_fine_tuning_job_id="curves", **job_body(epochs=2))
    job = fw.reinforcement_fine_tuning_jobs.get("curves")
    seen: list[int] = []
    while job.state != "JOB_STATE_COMPLETED":
        if job.state == "JOB_STATE_RUNNING" and not job.job_progress.total_input_requests:
            assert job.output_metrics is None  # provisioning: nothing trained yet
        if job.output_metrics is not None:
            assert isinstance(job.output_metrics, str)  # the type's field, as the client parsed it
            seen.append(len(job_curves(job.to_dict(mode="json")).series[REWARD]))
        job = fw.reinforcement_fine_tuning_jobs.get("curves")
    assert seen == sorted(seen) and seen[0] >= 1  # the curve grows step by step
    curves = JobView.from_job(job.to_dict(mode="json"), sim.base_url).curves
    steps = sim.config.job_running_steps
    assert [s for s, _ in curves.series[REWARD]] == list(range(1, steps + 1))
    assert [s for s, _ in curves.series[LOSS]] == list(range(1, steps + 1))
    assert [s for s, _ in curves.series[EVAL_REWARD]] == [s for s in range(1, steps + 1) if s % 2 == 0 or s == steps]
    assert all(0.0 <= v <= 1.0 for _, v in curves.series[REWARD])
    assert curves.series[REWARD][-1][1] > curves.series[REWARD][0][1]  # it learned
    assert curves.series[LOSS][-1][1] < curves.series[LOSS][0][1]
    assert curves.names() == [REWARD, LOSS, EVAL_REWARD]
