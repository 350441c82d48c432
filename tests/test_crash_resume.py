"""Crash suite: SIGKILL a 300-rollout run at random points, resume each time, and check nothing is lost or redone."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from svgagent.core.sim.simulator import Simulator
from svgagent.core.store.run_store import Store

ROWS, RUNS, CONCURRENCY = 30, 10, 8  # 300 rollouts


def _terminal(db: Path) -> int:
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            return con.execute("SELECT COUNT(*) FROM rollouts WHERE status IN ('scored','failed')").fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:
        return 0


def _spawn(sim: Simulator, home: Path, *extra: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "SVGAGENT_HOME": str(home), "FIREWORKS_API_KEY": "fw-crash", "OPENAI_API_KEY": "sk-crash"}
    args = [
        "eval",
        "--base-url",
        sim.base_url,
        "--judge-base-url",
        sim.base_url,
        "--model",
        "simulated-policy",
        "--judge-model",
        "simulated-judge",
        "--concurrency",
        str(CONCURRENCY),
        "--judge-concurrency",
        str(CONCURRENCY),
        "--render-size",
        "128",
        *extra,
    ]
    return subprocess.Popen(
        [sys.executable, "-m", "svgagent.tui.cli.main", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


@pytest.mark.parametrize(("seed", "workers"), [(1, 1), (2, 1), (3, 1), (4, 2)])
def test_sigkill_at_random_points_then_resume(tmp_path: Path, seed: int, workers: int) -> None:
    """With ``workers`` > 1 the run is shared between engine processes; a kill takes the parent, and its workers
    stop when their stdin closes."""
    rng = random.Random(seed)
    home = tmp_path / "home"
    db = home / "runs.db"
    total = ROWS * RUNS
    kills = 0
    with Simulator(policy_latency_s=0.01, judge_latency_s=0.01, seed=seed) as sim:
        proc = _spawn(sim, home, "--rows", str(ROWS), "--runs", str(RUNS), "--workers", str(workers))
        run_id = None
        while True:
            target = rng.randint(1, total - 1)
            deadline = time.monotonic() + 90
            while proc.poll() is None and _terminal(db) < target and time.monotonic() < deadline:
                time.sleep(rng.uniform(0.0, 0.03))
            if proc.poll() is None and kills < 3:
                proc.send_signal(signal.SIGKILL)
                proc.wait(timeout=30)
                kills += 1
            else:
                assert proc.wait(timeout=120) in (0, 1)
                break
            with Store(db) as store:
                runs = store.list_runs()
                if not runs:  # killed before the run was created: start again
                    proc = _spawn(sim, home, "--rows", str(ROWS), "--runs", str(RUNS), "--workers", str(workers))
                    continue
                run_id = runs[0].run_id
            proc = _spawn(sim, home, "--resume", run_id)
        stats = sim.stats()
    with Store(db) as store:
        (run,) = store.list_runs()
        rollouts = store.list_rollouts(run.run_id, current_only=False)
        assert store.integrity_ok()
        assert run.status == "completed"
        assert len(rollouts) == total
        assert len({(r.row_index, r.sample_index) for r in rollouts}) == total  # no duplicates
        assert all(r.status.terminal for r in rollouts)
        assert all(r.reason for r in rollouts if r.status.value == "failed")
        summary = store.summarize(run.run_id, 0.5)
        assert summary.done == total
    assert kills >= 2, "the run should have been killed at least twice"
    # every rollout was generated once, except those cut off in flight by a kill (at most CONCURRENCY per kill)
    assert total <= stats["requests"]["policy"] <= total + kills * CONCURRENCY


# --- the writer's guarantee: an acknowledged paid answer survives SIGKILL, however long the batch window -----------

# In the eval process (and its engine workers): a batch window that never closes by itself, so only changes the
# engine waits for (paid answers, committed "urgent") can reach the store before the kill.
_LONG_WINDOW = """\
from svgagent.core.store.batch_writer import RolloutWriter
RolloutWriter.__init__.__kwdefaults__["window_s"] = 600.0
"""


def _descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            try:
                children = [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
            found += children
            todo += children
    return found


def _stored(db: Path) -> tuple[int, int]:
    """(rollouts with a stored policy answer, rollouts with a stored judge verdict)."""
    with sqlite3.connect(db) as con:
        return con.execute("SELECT COUNT(raw_answer), COUNT(judge_raw) FROM rollouts").fetchone()


@pytest.mark.parametrize("workers", [1, 2])
def test_an_acknowledged_paid_answer_survives_sigkill_inside_the_batch_window(tmp_path: Path, workers: int) -> None:
    """One call in flight per engine process (``workers`` processes): the engine sends a policy (judge) request
    only once the previous answer of that process was acknowledged, i.e. committed. So when the simulator has
    received P policy and J judge requests, SIGKILL of every process of the run must leave at least P - workers
    answers and J - workers verdicts in the store, though no batch window ever closed; a resume pays for none of
    them again."""
    home = tmp_path / "home"
    db = home / "runs.db"
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(_LONG_WINDOW)
    env = {
        **os.environ,
        "SVGAGENT_HOME": str(home),
        "FIREWORKS_API_KEY": "fw-crash",
        "OPENAI_API_KEY": "sk-crash",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])),
    }
    args = [
        "eval",
        "--model",
        "simulated-policy",
        "--judge-model",
        "simulated-judge",
        "--render-size",
        "64",
        "--concurrency",
        str(workers),
        "--judge-concurrency",
        str(workers),
        "--runs",
        "3",
    ]
    with Simulator(policy_latency_s=0.05, judge_latency_s=0.3, seed=5) as sim:
        urls = ["--base-url", sim.base_url, "--judge-base-url", sim.base_url]
        errors = (tmp_path / "stderr").open("w+b")
        proc = subprocess.Popen(
            [sys.executable, "-m", "svgagent.tui.cli.main", *args, *urls, "--workers", str(workers)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=errors,
        )
        deadline = time.monotonic() + 60

        def until(kind: str, count: int) -> int:
            while (
                (seen := sim.stats()["requests"][kind]) < count and proc.poll() is None and time.monotonic() < deadline
            ):
                time.sleep(0.005)
            return seen

        until("judge", 3)  # verdicts are being paid for; then a few answers more, away from a verdict's commit
        until("policy", until("policy", 0) + 3)
        assert proc.poll() is None, (tmp_path / "stderr").read_text()[-2000:]
        victims = [proc.pid, *_descendants(proc.pid)]
        for pid in victims:
            os.kill(pid, signal.SIGSTOP)  # freeze them all first: no process goes on while another dies
        for pid in victims:
            os.kill(pid, signal.SIGKILL)
        proc.wait(timeout=30)
        errors.close()
        until_idle = time.monotonic() + 10  # requests already on the wire are counted before they are dropped
        while any(sim.stats()["in_flight"].values()) and time.monotonic() < until_idle:
            time.sleep(0.005)
        requests = sim.stats()["requests"]
        answers, verdicts = _stored(db)
        why = f"{requests}; {(tmp_path / 'stderr').read_text()[-2000:]}"
        assert answers >= requests["policy"] - workers, why
        assert verdicts >= requests["judge"] - workers, why
        with Store(db) as store:
            (run,) = store.list_runs()
            total = len(store.list_rollouts(run.run_id))
        assert requests["policy"] < total  # killed mid-run
        sim.configure(policy_latency_s=0.0, judge_latency_s=0.0)
        resume = subprocess.run(
            [
                sys.executable,
                "-m",
                "svgagent.tui.cli.main",
                "eval",
                "--resume",
                run.run_id,
                "--concurrency",
                "8",
                "--judge-concurrency",
                "8",
                *urls,
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=120,
        )
        assert resume.returncode in (0, 1), resume.stderr.decode()[-2000:]
        after = sim.stats()["requests"]
    with Store(db) as store:
        (run,) = store.list_runs()
        assert run.status == "completed"
        assert all(r.status.terminal for r in store.list_rollouts(run.run_id))
    # every answer stored before the kill was reused: only the rollouts without one were generated again (give or
    # take a request that was still on the wire, unseen, when the processes died)
    assert 0 <= after["policy"] - requests["policy"] - (total - answers) <= workers
