"""The whole loop headless, in demo mode with no keys: evaluate the base model, launch a job whose rollouts a real
rollout server makes, watch it train, evaluate the trained model on the held-out rows (deployed through the real
fireworks-ai client against the simulated control plane, then deleted), compare — and nothing left billing."""

from __future__ import annotations

import io
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from svgagent.core.config.settings import load_settings
from svgagent.core.demo import demo_overrides
from svgagent.core.serve.training_runs import TrainingStore
from svgagent.core.serve.wiring import ServeOptions, ServerThread
from svgagent.core.sim.simulator import SimConfig, Simulator
from svgagent.core.store.run_store import Store
from svgagent.tui.cli.main import main


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SVGAGENT_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # not a terminal: nothing can be asked
    return tmp_path / "home"


@pytest.fixture
def serve_url(home: Path) -> Iterator[str]:
    """`svgagent serve --demo` (its simulated judge scores each rollout), on a thread of its own."""
    with Simulator(SimConfig(seed=3)) as judge:
        settings = load_settings(**demo_overrides(str(judge.base_url)), store=home / "runs.db", render_size=64)
        server = ServerThread(settings, ServeOptions(port=0, judge=True))
        try:
            yield server.start()
        finally:
            server.stop()


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_whole_loop_headless(home: Path, serve_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "eval", "--demo", "--rows", "10", "--samples", "1", "--json")
    assert code in (0, 1), err  # the base model on the whole dataset: a verdict either way
    code, out, err = _run(
        capsys,
        *("rft", "create", "--demo", "--rows", "10", "--holdout", "0.3", "--yes", "--watch", "--job-id", "loop-job"),
        *("--rollouts", "remote", "--remote-url", serve_url, "--n", "2", "--chunk-size", "2", "--epochs", "2"),
    )
    assert code == 0, err
    assert "loop-job ended COMPLETED" in err, err  # its own name: the same trained model in every run
    job = "loop-job"
    with Store(home / "runs.db") as store:
        training = TrainingStore(store)
        (run,) = training.trainings(job)
        # 7 rows trained on (3 held out), 2 prompts a step × 2 samples, 2 epochs
        assert [s.rollouts for s in training.steps(run.training_id)] == [4, 4, 4, 2] * 2

    code, out, err = _run(capsys, "rft", "evaluate", job, "--demo")  # asks before billing: no terminal, no deploy
    assert code == 2 and "pass --yes" in err
    code, out, err = _run(capsys, "rft", "deployments", "--demo")
    assert "no deployment is up" in out

    code, out, err = _run(capsys, "rft", "evaluate", job, "--demo", "--yes", "--samples", "2", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["simulated"] is True and report["deployment"] == {
        "id": f"{job}-eval",
        "kept": False,
        "hourly_usd": 7.0,
    }
    assert "on 3 held-out rows" in err and "is READY" in err and "deleted: it no longer bills" in err
    comparison = report["comparison"]
    assert comparison["paired_rows"] == 3
    assert comparison["mean_b"] > comparison["mean_a"], comparison  # the trained model draws better
    with Store(home / "runs.db") as store:
        base, trained = store.get_run(report["base_run"]), store.get_run(report["trained_run"])
    assert base.settings["model"] == "accounts/fireworks/models/qwen3-0p6b"
    assert trained.settings["model"] == f"accounts/simulated-account/models/{job}"
    assert base.dataset == trained.dataset and base.dataset["rows"] == 3  # the same held-out rows
    assert base.settings["judge_model"] == trained.settings["judge_model"] == "simulated-judge"
    code, out, err = _run(capsys, "rft", "deployments", "--demo")
    assert "no deployment is up: nothing bills" in out

    # again, keeping the deployment: the base run is reused, and what stays up is said with its rate
    code, out, err = _run(capsys, "rft", "evaluate", job, "--demo", "--yes", "--samples", "2", "--keep-deployment")
    assert code == 0, err
    assert f"reusing run {report['base_run']}" in err
    assert "bills while it is up" in err and f"rft deployments --delete {job}-eval --demo" in err
    code, out, err = _run(capsys, "rft", "deployments", "--demo")
    assert f"{job}-eval" in out and "READY" in out and "$7.00 an hour" in out
    code, out, err = _run(capsys, "rft", "deployments", "--demo", "--delete", f"{job}-eval", "--yes")
    assert code == 0 and "no longer bills" in err
    code, out, err = _run(capsys, "rft", "deployments", "--demo", "--json")
    assert json.loads(out) == []


def test_a_job_without_held_out_rows_says_how_to_get_them(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "rft", "create", "--demo", "--rows", "3", "--yes", "--watch")
    assert code == 0, err
    job = re.search(r"(svgagent-rft-[0-9a-f]{12}) ended COMPLETED", err)
    assert job is not None
    code, out, err = _run(capsys, "rft", "evaluate", job.group(1), "--demo", "--yes")
    assert code == 2
    assert "no held-out rows" in err and "--holdout 0.2 --demo" in err and "svgagent eval --demo --model" in err
    code, out, err = _run(capsys, "rft", "evaluate", "no-such-job", "--demo", "--yes")
    assert code == 1 and "not found" in err
