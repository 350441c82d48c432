"""Known fake keys go in; they must come out nowhere: store, exports, --json, logs, terminal output."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from svgagent.core.simulator import Simulator

FW_KEY = "FAKEFW-hygiene-0123456789-policy"
OA_KEY = "FAKEOA-hygiene-9876543210-judge"


def _leaks(blob: bytes) -> list[str]:
    found = []
    for key in (FW_KEY, OA_KEY):
        for form in (key, key[4:-4]):  # the whole key, or its unmasked middle
            if form.encode() in blob:
                found.append(form)
    return found


def test_eval_export_and_store_never_hold_keys(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {**os.environ, "SVGAGENT_HOME": str(home), "FIREWORKS_API_KEY": FW_KEY, "OPENAI_API_KEY": OA_KEY}
    outputs: list[bytes] = []
    with Simulator(judge_garbage_every=5, error_5xx_every=7) as sim:
        def cli(*args: str) -> subprocess.CompletedProcess[bytes]:
            done = subprocess.run([sys.executable, "-m", "svgagent.tui.cli", *args], env=env, capture_output=True,
                                  timeout=180)
            outputs.extend([done.stdout, done.stderr])
            return done

        ev = cli("eval", "--base-url", sim.base_url, "--judge-base-url", sim.base_url, "--rows", "4",
                 "--max-retries", "0", "--json")
        assert ev.returncode in (0, 1), ev.stderr
        import json

        run_id = json.loads(ev.stdout)["run_id"]
        cli("runs", "show", run_id, "--json")
        cli("runs", "list", "--json")
        for fmt in ("jsonl", "csv"):
            cli("export", run_id, "--format", fmt, "-o", str(tmp_path / f"out.{fmt}"))
    files = [p for p in home.rglob("*") if p.is_file()] + [tmp_path / "out.jsonl", tmp_path / "out.csv"]
    assert any(p.name == "runs.db" for p in files)
    for path in files:
        assert _leaks(path.read_bytes()) == [], path
    for blob in outputs:
        assert _leaks(blob) == []
