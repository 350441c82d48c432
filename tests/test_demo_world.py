"""One demo world: the simulated control plane's state kept in the data directory, shared by every process that
serves it (each with its own simulator, driven here through the real fireworks-ai client), so the demo commands
chain and every hint they print works when pasted; `svgagent demo reset` clears it."""

from __future__ import annotations

import io
import json
import re
import shlex
import sys
from pathlib import Path

import pytest

from svgagent.core.demo import demo_control_plane, reset_world
from svgagent.core.rft.demo_identity import DEMO_FIREWORKS_KEY, DEMO_JOB_ID, DEMO_OPENAI_KEY
from svgagent.core.rft.launch import demo_request, launch, prepare_launch
from svgagent.core.rft.params import RftParams
from svgagent.core.store.run_store import Store
from svgagent.tui.cli.main import main

PARAMS = RftParams(base_model="accounts/fireworks/models/qwen3-0p6b")


def _launch(cp, rows: int = 2) -> str:  # type: ignore[no-untyped-def]
    prepared = prepare_launch(
        demo_request(PARAMS, rows=rows, base_url=cp.base_url, evaluator_poll_s=0.01, dataset_poll_s=0.01)
    )
    return launch(prepared, cp).job_name


def test_two_simulators_on_one_world_see_the_same_account(tmp_path: Path) -> None:
    world = tmp_path / "demo"
    with (
        demo_control_plane(world_dir=world) as (sim_a, cp_a),
        demo_control_plane(world_dir=world) as (sim_b, cp_b),
    ):
        assert sim_a.base_url != sim_b.base_url
        job = _launch(cp_a)
        assert job in [j["name"] for j in cp_b.list_jobs().jobs]  # made through A, listed through B
        cp_b.cancel_job(job)
        assert cp_a.get_job(job)["state"] in ("JOB_STATE_CANCELLING", "JOB_STATE_CANCELLED")
        assert sim_a.requests and not any(r.path.endswith(":cancel") for r in sim_a.requests)  # B served it
    text = (world / "control-plane.json").read_text()
    assert DEMO_OPENAI_KEY not in text and DEMO_FIREWORKS_KEY not in text  # secret values are never written
    assert oct((world / "control-plane.json").stat().st_mode & 0o777) == "0o600"
    with demo_control_plane(world_dir=world) as (sim, cp):  # a later process: the job is still there, cancelled
        with sim.world_session():  # cancelled a while ago (the wall clock, not this test's speed, finishes it)
            sim.state.jobs[job.rsplit("/", 1)[-1]].clock.anchor -= 60
        assert cp.get_job(job)["state"] == "JOB_STATE_CANCELLED"
        assert reset_world(world)
        assert cp.list_jobs().jobs == []  # reset under a running simulator: it starts from an empty account
    assert not reset_world(tmp_path / "nothing")


def test_lifecycles_keep_their_age_from_one_process_to_the_next(tmp_path: Path) -> None:
    world = tmp_path / "demo"
    with demo_control_plane(world_dir=world) as (_, cp):
        job = _launch(cp)
    with demo_control_plane(world_dir=world) as (sim, cp):
        with sim.world_session():  # a job created long ago has long finished: the wall clock moves it
            j = sim.state.jobs[job.rsplit("/", 1)[-1]]
            j.clock.anchor -= 3600
        assert cp.get_job(job)["state"] == "JOB_STATE_COMPLETED"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SVGAGENT_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # not a terminal
    return tmp_path / "home"


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_demo_commands_chain_and_their_hints_work_when_pasted(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "rft", "create", "--demo", "--rows", "3", "--holdout", "0.34", "--yes")
    assert code == 0, err
    hint = re.search(r"follow it: (svgagent rft status \S+ --watch --demo)", out)
    assert hint is not None, out
    evaluate = re.search(r"once it completes, (svgagent rft evaluate \S+ --demo)", out)
    assert evaluate is not None, out
    job_id = shlex.split(hint.group(1))[3]
    code, out, err = _run(capsys, *shlex.split(hint.group(1))[1:])  # pasted: the same job, not a 404
    assert code == 0, err
    assert f"{job_id} ended COMPLETED" in err
    code, out, _ = _run(capsys, "rft", "list", "--demo", "--json")
    listed = {j["name"].rsplit("/", 1)[-1]: j["state"] for j in json.loads(out)}
    assert listed[job_id] == "COMPLETED" and DEMO_JOB_ID in listed
    with Store(home / "runs.db") as store:  # the split is kept with the job, for `rft evaluate`
        held = store.query("SELECT job_name, rows_json FROM rft_holdouts")
    assert len(held) == 1 and held[0][0].endswith(job_id) and len(json.loads(held[0][1])) == 1
    code, _, err = _run(capsys, "demo", "reset")
    assert code == 0 and "is gone" in err
    code, out, _ = _run(capsys, "rft", "list", "--demo", "--json")
    assert [j["name"].rsplit("/", 1)[-1] for j in json.loads(out)] == [DEMO_JOB_ID]  # a fresh world
    code, out, _ = _run(capsys, "demo", "path")
    assert out.strip() == str(home / "demo")


def test_resume_without_a_job_pauses_the_demo_job_first(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "rft", "resume", "--demo")
    assert code == 0, err
    assert f"resumed: {DEMO_JOB_ID}" in out
