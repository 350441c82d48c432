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
from svgagent.core.store import Store

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
    args = ["eval", "--base-url", sim.base_url, "--judge-base-url", sim.base_url, "--model", "simulated-policy",
            "--judge-model", "simulated-judge", "--concurrency", str(CONCURRENCY), "--judge-concurrency",
            str(CONCURRENCY), "--render-size", "128", *extra]
    return subprocess.Popen([sys.executable, "-m", "svgagent.tui.cli.main", *args], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


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
