"""`svgagent rft …` against the simulated Fireworks control plane: in-process through `main()` for most cases,
and as a real `python -m svgagent.tui.cli.main` process for a few."""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from cli_process import svgagent_argv

from svgagent.core.sim.control_plane import FireworksSim
from svgagent.core.store.run_store import Store
from svgagent.tui.cli.main import main

FW_KEY = "fw-FAKE-cli-key-0123456789abcdef"
OPENAI_KEY = "FAKEOA-cli-judge-9876543210zyxw"
SECRETS = (FW_KEY, OPENAI_KEY)
STATUS_KEYS = {
    "curves",
    "name",
    "display_name",
    "state",
    "status",
    "percent",
    "epoch",
    "processed",
    "failed",
    "total",
    "created",
    "completed",
    "output_model",
    "links",
}
CREATE = ("rft", "create", "--base-model", "qwen3-0p6b", "--rows", "3", "--poll-interval", "0.001")


@pytest.fixture
def sim():
    with FireworksSim() as server:
        yield server


@pytest.fixture
def env(sim: FireworksSim, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("FIREWORKS_BASE_URL", sim.base_url)
    monkeypatch.setenv("FIREWORKS_API_KEY", FW_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("SVGAGENT_MAX_RETRIES", "0")
    monkeypatch.setenv("SVGAGENT_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # not a terminal
    return tmp_path / "home" / "runs.db"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    for secret in SECRETS:
        assert secret not in out
        assert secret not in err
    return code, out, err


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_create_json_remembers_the_job(sim: FireworksSim, env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, *CREATE, "--yes", "--json", "--epochs", "2", "--loss", "dapo")
    assert code == 0, err
    data = json.loads(out)
    assert set(data) == {"job", "evaluator", "dataset", "links"}
    assert set(data["links"]) == {"evaluator", "dataset", "job"}
    assert data["job"]["trainingConfig"]["epochs"] == 2
    assert data["job"]["lossConfig"] == {"method": "DAPO"}
    assert data["evaluator"]["state"] == "ACTIVE"
    assert data["dataset"]["state"] == "READY"
    assert data["links"]["job"].endswith("/dashboard/fine-tuning/reinforcement/" + data["job"]["name"].split("/")[-1])
    assert "[5/5] ✓ job:" in err
    assert "[3/5] ✓ evaluator:" in err
    assert f"svgagent: creating a new run store at {env}" in err  # the store remembers the job: said first
    logged = json.dumps([r.body for r in sim.requests], default=str) + json.dumps(sim.dump_state())
    assert not any(s in logged for s in SECRETS)
    assert sim.secret_value("openai-api-key") == OPENAI_KEY
    with Store(env) as store:
        (job,) = store.list_jobs()
    assert job["job_name"] == data["job"]["name"]
    assert job["base_url"] == sim.base_url

    # the same command again: everything reused, the existing job reported
    code, out, err = run(capsys, *CREATE, "--yes", "--epochs", "2", "--loss", "dapo")
    assert code == 0
    assert "already existed" in out
    assert "(reused)" in err
    assert "creating a new run store" not in err
    assert len(sim.dump_state()["jobs"]) == 1


def test_dry_run_sends_nothing(sim: FireworksSim, env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, *CREATE, "--dry-run")
    assert code == 0
    assert sim.requests == []
    assert "GET /verifyApiKey" in out
    assert "POST /v1/accounts/{account}/evaluatorsV2" in out
    assert '"value": "FAKE…zyxw"' in out
    assert "dry run: nothing was sent" in out
    code, out, err = run(capsys, *CREATE, "--dry-run", "--json")
    plan = json.loads(out)
    assert plan["dry_run"] is True
    assert plan["job"].startswith("svgagent-rft-")
    assert sim.requests == []
    assert [s["step"] for s in plan["plan"]][:3] == ["account", "secrets", "secrets"]


def test_confirmation(
    sim: FireworksSim, env: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = run(capsys, *CREATE)
    assert code == 2
    assert "stdin is not a terminal" in err
    assert "--yes" in err
    assert sim.requests == []
    assert "Plan: " in err  # the plan was shown first
    monkeypatch.setattr(sys, "stdin", _Tty("n\n"))
    code, out, err = run(capsys, *CREATE)
    assert code == 2
    assert "not confirmed" in err
    assert sim.requests == []
    monkeypatch.setattr(sys, "stdin", _Tty("y\n"))
    code, out, err = run(capsys, *CREATE)
    assert code == 0
    assert "Launch RFT job" in err
    assert "job link" in out


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (("--learning-rate", "0.5"), "--learning-rate 0.5: out of range: allowed a number from 1e-05 to 0.0005"),
        (("--lora-rank", "24"), "--lora-rank 24: must be a power of two"),
        (("--chunk-size", "0"), "--chunk-size 0: out of range: allowed an integer from 1 to 10000"),
        (("--loss", "ppo"), "--loss ppo: not a valid value: allowed one of: grpo, dapo"),
    ],
)
def test_invalid_hyperparameter(
    sim: FireworksSim, env: Path, capsys: pytest.CaptureFixture[str], flags: tuple[str, ...], words: str
) -> None:
    code, out, err = run(capsys, *CREATE, "--yes", *flags)
    assert code == 2
    assert words in err
    assert sim.requests == []


def test_base_model_is_required(sim: FireworksSim, env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "rft", "create", "--yes")
    assert code == 2
    assert "--base-model: is required" in err


@pytest.mark.parametrize("missing", ["FIREWORKS_API_KEY", "OPENAI_API_KEY"])
def test_missing_key(
    sim: FireworksSim, env: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, missing: str
) -> None:
    monkeypatch.delenv(missing)
    code, out, err = run(capsys, *CREATE, "--yes")
    assert code == 2
    assert f"{missing} is not set" in err
    assert ".env" in err
    assert sim.requests == []
    if missing == "FIREWORKS_API_KEY":
        code, out, err = run(capsys, "rft", "status", "some-job", "--json")
        assert code == 2
        assert "FIREWORKS_API_KEY is not set" in err
        assert out == ""
        assert sim.requests == []


def test_control_plane_errors(
    sim: FireworksSim, env: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FIREWORKS_API_KEY", "rejected-key")
    code, out, err = run(capsys, *CREATE, "--yes")
    assert code == 2
    assert "rejected the API key" in err
    assert "check FIREWORKS_API_KEY" in err
    monkeypatch.setenv("FIREWORKS_API_KEY", FW_KEY)
    sim.inject(429, route=r"/datasets$", method="POST")
    code, out, err = run(capsys, *CREATE, "--yes")
    assert code == 1
    assert "rate limit or quota reached" in err
    assert "Run the same command again" in err
    sim.config.admin = False  # evaluator creation needs the admin role: another judge means a new evaluator
    code, out, err = run(capsys, *CREATE, "--yes", "--judge-model", "another-judge")
    assert code == 1
    assert "admin role required (403)" in err
    assert "ask an admin" in err
    sim.config.admin = True
    sim.config.evaluator_build_failure = "pip: no matching distribution for eval-protocol"
    code, out, err = run(capsys, *CREATE, "--yes", "--force")
    assert code == 1
    assert "failed to build: pip: no matching distribution" in err
    assert f"Build log: {sim.base_url}/_logs/" in err
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("FIREWORKS_BASE_URL", f"http://127.0.0.1:{port}")
    code, out, err = run(capsys, *CREATE, "--yes")
    assert code == 1
    assert f"cannot reach 127.0.0.1:{port}" in err
    assert "check your network connection" in err
    code, out, err = run(capsys, "rft", "status", "some-job")
    assert code == 1
    assert "cannot reach" in err


def test_rerun_after_failed_job_create(sim: FireworksSim, env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sim.inject(500, route=r"/reinforcementFineTuningJobs$", method="POST")
    code, out, err = run(capsys, *CREATE, "--yes")
    assert code == 1
    assert "server error" in err
    assert "Run the same command again" in err
    code, out, err = run(capsys, *CREATE, "--yes", "--json")
    assert code == 0
    assert json.loads(out)["job"]["state"] == "JOB_STATE_CREATING"
    state = sim.dump_state()
    assert (len(state["evaluators"]), len(state["datasets"]), len(state["jobs"])) == (1, 1, 1)
    assert len(sim.uploads) == 1


def test_status_list_cancel_resume(
    sim: FireworksSim, env: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, _ = run(capsys, *CREATE, "--yes", "--json")
    name = json.loads(out)["job"]["name"]
    job_id = name.rsplit("/", 1)[-1]
    code, out, _ = run(capsys, "rft", "status", job_id, "--json")
    status = json.loads(out)
    assert code == 0
    assert set(status) == STATUS_KEYS
    assert status["name"] == name
    assert status["state"] == "PENDING"
    assert set(status["links"]) == {"job", "dataset", "evaluator"}
    code, out, _ = run(capsys, "rft", "status", name)
    assert code == 0
    assert out.startswith(job_id)
    assert "state     VALIDATING" in out
    code, out, _ = run(capsys, "rft", "list", "--json")
    listed = json.loads(out)
    assert code == 0
    assert [j["name"] for j in listed] == [name]
    assert set(listed[0]) == STATUS_KEYS
    code, out, err = run(capsys, "rft", "cancel", job_id)
    assert code == 2
    assert "--yes" in err  # non-interactive: refused
    monkeypatch.setattr(sys, "stdin", _Tty("y\n"))
    code, out, _ = run(capsys, "rft", "cancel", job_id)
    assert code == 0
    assert "cancel requested" in out
    sim.set_job_state(job_id, "JOB_STATE_CANCELLED")
    code, out, _ = run(capsys, "rft", "resume", job_id, "--json")
    assert code == 0
    assert json.loads(out)["state"] == "RUNNING"
    code, out, err = run(capsys, "rft", "cancel", job_id, "--yes", "--json")
    assert code == 0
    assert json.loads(out)["state"] in ("CANCELLING", "CANCELLED")
    code, out, err = run(capsys, "rft", "status", "no-such-job")
    assert code == 1
    assert "not found" in err
    with Store(env) as store:
        assert store.list_jobs()[0]["last_state"] in ("CANCELLING", "CANCELLED")


def test_watch_to_completion_through_failures(sim: FireworksSim, env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, *CREATE, "--yes", "--json")
    job_id = json.loads(out)["job"]["name"].rsplit("/", 1)[-1]
    polls_before = len(sim.requests)

    def fail_twice_after_the_first_poll() -> None:  # the network goes away once a state is known
        while not any(
            r.method == "GET" and "/reinforcementFineTuningJobs/" in r.path for r in sim.requests[polls_before:]
        ):
            time.sleep(0.001)
        sim.inject(503, route=r"/reinforcementFineTuningJobs/", method="GET", times=2)

    injector = threading.Thread(target=fail_twice_after_the_first_poll, daemon=True)
    injector.start()
    code, out, err = run(capsys, "rft", "status", job_id, "--watch", "--json", "--poll-interval", "0.05")
    injector.join(5)
    assert code == 0, err
    final = json.loads(out)
    assert final["state"] == "COMPLETED"
    assert final["percent"] == 100
    assert final["processed"] == final["total"] == 3
    steps = len(final["curves"]["reward"])  # the job's own curves, one point per step (the simulator's)
    assert steps >= 1 and [s for s, _ in final["curves"]["reward"]] == list(range(1, steps + 1))
    code, out, _ = run(capsys, "rft", "status", job_id)
    assert code == 0
    assert f"({steps} steps)" in next(line for line in out.splitlines() if line.startswith("  curves    reward "))
    assert "no state yet" not in err
    assert "last known state, 0 s old" in err
    assert "retrying in" in err
    assert err.count("service unavailable, 503") == 2
    assert "RUNNING · 50%" in err
    assert "retrying in 0.1 s" in err
    with Store(env) as store:
        assert store.list_jobs()[0]["last_state"] == "COMPLETED"
    sim.config.job_failure = "trainer crashed"
    code, out, err = run(capsys, *CREATE, "--yes", "--job-id", "doomed", "--watch", "--poll-interval", "0.001")
    assert code == 1
    assert "ended FAILED: trainer crashed" in err


def test_ctrl_c_while_watching_names_the_job_to_follow_again(
    sim: FireworksSim, env: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # it said "svgagent rft status JOB --watch": the placeholder of the usage line, for a job the command knew
    from svgagent.core.rft import monitor

    code, out, _ = run(capsys, *CREATE, "--yes", "--json")
    job_id = json.loads(out)["job"]["name"].rsplit("/", 1)[-1]

    def ctrl_c(*_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(monitor, "watch_job", ctrl_c)
    code, _, err = run(capsys, "rft", "status", job_id, "--watch")
    assert code == 130
    assert f"the job keeps running (svgagent rft status {job_id} --watch to follow it again)" in err
    code, _, err = run(capsys, *CREATE, "--yes", "--watch")  # the same settings: the same job, reported
    assert code == 130
    assert f"(svgagent rft status {job_id} --watch to follow it again)" in err


def test_poll_interval_says_its_unit_in_the_usage(capsys: pytest.CaptureFixture[str]) -> None:
    for action in ("status", "create"):
        with pytest.raises(SystemExit):
            main(["rft", action, "--help"])
        usage = " ".join(capsys.readouterr().out.split())
        assert "[--poll-interval SECONDS]" in usage and "POLL_INTERVAL" not in usage, action


# ---- as a real process ----------------------------------------------------------------------------------------
def svgagent(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        svgagent_argv(*args),
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
        stdin=subprocess.DEVNULL,
    )


def test_process_demo_create_is_labelled_simulated(tmp_path: Path) -> None:
    proc = svgagent("rft", "create", "--demo", "--rows", "2", "--yes", "--json", env={"SVGAGENT_HOME": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["simulated"] is True
    assert data["job"]["name"].startswith("accounts/simulated-account/")
    assert data["links"]["job"].startswith("http://127.0.0.1:")
    lines = proc.stderr.strip().splitlines()
    assert lines
    assert all(line.startswith("[simulated] ") for line in lines)
    assert not (tmp_path / "runs.db").exists()  # demo jobs are not remembered
    proc = svgagent("rft", "list", "--demo", "--json")
    assert proc.returncode == 0
    assert json.loads(proc.stdout)[0]["simulated"] is True


def test_process_dry_run_and_help(sim: FireworksSim, tmp_path: Path) -> None:
    env = {
        "FIREWORKS_BASE_URL": sim.base_url,
        "FIREWORKS_API_KEY": FW_KEY,
        "OPENAI_API_KEY": OPENAI_KEY,
        "SVGAGENT_HOME": str(tmp_path),
    }
    proc = svgagent("rft", "create", "--base-model", "qwen3-0p6b", "--rows", "2", "--dry-run", env=env)
    assert proc.returncode == 0
    assert sim.requests == []
    assert "dry run: nothing was sent" in proc.stdout
    assert not any(s in proc.stdout + proc.stderr for s in SECRETS)
    proc = svgagent("rft", "create", "--base-model", "qwen3-0p6b", "--rows", "2", env=env)
    assert proc.returncode == 2
    assert "pass --yes" in proc.stderr
    assert sim.requests == []
    help_text = " ".join(svgagent("rft", "create", "--help").stdout.split())
    assert "only those given are sent, Fireworks chooses the rest" in help_text
    for flag, default in (
        ("--epochs", "Fireworks' default (1)"),
        ("--learning-rate", "Fireworks' default (0.0001)"),
        ("--lora-rank", "Fireworks' default (8)"),
        ("--chunk-size", "Fireworks' default"),
        ("--n", "Fireworks' default (4)"),
        ("--loss", "Fireworks' default"),
        ("--max-output-tokens", "Fireworks' default (2048)"),
        ("--top-p", "Fireworks' default (1)"),
    ):
        assert flag in help_text and f"(default: {default})" in help_text, flag


def test_job_ids_are_validated_like_the_output_model(
    sim: FireworksSim, env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, *CREATE, "--yes", "--job-id", "../../etc")
    assert code == 2
    assert "--job-id '../../etc': must be a job id" in err
    assert sim.requests == []
    for action in ("status", "cancel", "resume"):
        code, out, err = run(capsys, "rft", action, "../../etc", "--yes" if action == "cancel" else "--json")
        assert code == 2 and "JOB '../../etc': must be a job id" in err, (action, err)
    assert sim.requests == []


def test_watch_stops_on_a_paused_job_and_says_why(sim: FireworksSim, tmp_path: Path) -> None:
    env = {
        "FIREWORKS_BASE_URL": sim.base_url,
        "FIREWORKS_API_KEY": FW_KEY,
        "OPENAI_API_KEY": OPENAI_KEY,
        "SVGAGENT_HOME": str(tmp_path),
        "SVGAGENT_MAX_RETRIES": "0",
    }
    proc = svgagent(*CREATE, "--yes", "--json", "--job-id", "pausing", env=env)
    assert proc.returncode == 0, proc.stderr
    sim.set_job_state("pausing", "JOB_STATE_PAUSED", "paused by the platform")
    # before: PAUSED is not terminal and the watch polled forever (the subprocess timeout would fail this test)
    proc = svgagent("rft", "status", "pausing", "--watch", "--json", "--poll-interval", "0.01", env=env)
    assert proc.returncode == 1, proc.stderr
    final = json.loads(proc.stdout)
    assert final["state"] == "PAUSED"
    assert "svgagent rft resume pausing" in final["stopped_because"]
    proc = svgagent("rft", "status", "pausing", "--watch", "--poll-interval", "0.01", env=env)
    assert proc.returncode == 1
    assert "stopped watching: pausing is PAUSED: it will not continue by itself" in proc.stderr
    assert "paused by the platform" in proc.stderr
