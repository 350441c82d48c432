"""The whole loop in a real terminal at 80×24, on a fresh home with no keys (demo mode): `svgagent tui --serve`;
the base model's run; a job launched from the Jobs pane whose rollouts the app's own server makes, filling the
training view step by step with pictures; the job completes; `v` deploys the trained model (its rate asked first),
runs it and the base model on the held-out rows and opens the before/after comparison with pictures; the deployment
is deleted; `q` exits 0. Skipped only when tmux is missing (CI installs it)."""

from __future__ import annotations

import re
import shlex
import sys
import time
from pathlib import Path

import pytest
from tmux_support import Tmux

from svgagent.core.store.run_store import Store

pytestmark = pytest.mark.skipif(__import__("shutil").which("tmux") is None, reason="tmux is not installed")
STEP_ROW = re.compile(r"^ (\d+)\s+\d+\s+\d+\s+\d+\s+\d\.\d{3}", re.MULTILINE)


def start(term: Tmux, tmp_path: Path) -> Path:
    """`svgagent tui --serve` in a working directory whose svgagent.toml asks for small runs; the exit-status file."""
    exit_file = tmp_path / "exit-status"
    (Path.cwd() / "svgagent.toml").write_text("rows = 8\nsamples = 2\n")
    script = Path(sys.executable).with_name("svgagent")
    command = shlex.quote(str(script)) if script.exists() else f"{shlex.quote(sys.executable)} -m svgagent.tui.cli.main"
    wrapper = tmp_path / "run.sh"
    wrapper.write_text(
        f"cd {shlex.quote(str(Path.cwd()))}\n"
        "export SVGAGENT_DEMO_PACE=0.3\n"  # the demo world's trainer a little faster than a person watches it
        f"{command} tui --serve --serve-port 0\n"
        f"echo $? > {shlex.quote(str(exit_file))}\n"
        "exec sleep 600\n"
    )
    term.run("new-session", "-d", "-s", "app", "-x", "80", "-y", "24", f"sh {shlex.quote(str(wrapper))}")
    return exit_file


def steps_shown(screen: str) -> list[int]:
    return [int(n) for n in STEP_ROW.findall(screen)]


def test_the_whole_loop_in_a_real_terminal(tmux: Tmux, tmp_path: Path) -> None:
    exit_file = start(tmux, tmp_path)
    tmux.wait_for("the training view of the app's server", lambda s: "serving on http://127.0.0.1:" in s)
    tmux.keys("Escape")
    tmux.wait_for("the dashboard", lambda s: "press r to start a run" in s and "demo mode" in s)

    tmux.keys("r")  # 1. the base model, on the Config's rows
    tmux.wait_for("the base model's run", lambda s: bool(re.search(r"(\d+)/\1 done", s)), timeout=90)

    tmux.keys("5")  # 2. a job from the Jobs pane, its rollouts made by the app's own server
    tmux.wait_for("the Jobs pane", lambda s: "svgagent-demo-job" in s or "jobs ·" in s)
    tmux.keys("n")
    form = tmux.wait_for("the launch form", lambda s: "New RFT job" in s and "base-model" in s)
    assert "New RFT job → http://127.0.0.1:" in form
    tmux.keys("Tab", "2", "Tab", "3", "Enter")  # chunk-size 2, epochs 3; enter: the dry run
    tmux.wait_for("the dry run", lambda s: "Dry run: nothing has been sent" in s and "2 held out" not in s)
    tmux.keys("y")
    launched = tmux.wait_for("the launch", lambda s: "✓ RFT job" in s, timeout=60)
    job = re.search(r"RFT job (svgagent-rft-[0-9a-f]{12})", launched)
    assert job is not None, launched
    tmux.keys("Escape")

    tmux.keys("t")  # 3. the training view fills step by step, with the step's picture
    first = tmux.wait_for("the first steps", lambda s: len(steps_shown(s)) >= 1 and "step " in s, timeout=90)
    tmux.wait_for("more steps", lambda s: len(steps_shown(s)) > len(steps_shown(first)) and "· score" in s, timeout=90)
    # the highlighted step's picture, in half blocks of 24-bit colour (drawn in a worker: it may follow its caption)
    picture = re.compile(r"\x1b\[[0-9;]*(38|48);2;\d+;\d+;\d+[0-9;]*m[▀▄]")
    tmux.wait_for("the step's picture", lambda s: bool(picture.search(s)), timeout=30, escapes=True)
    # 6 rows, 2 a step, 3 epochs: the header counts them (at 80x24 the chart leaves the table room for 8 rows)
    tmux.wait_for("every step", lambda s: int((re.search(r"(\d+) steps ·", s) or [0, 0])[1]) >= 9, timeout=120)
    tmux.keys("Escape")
    done = re.compile(r"^ COMPLETED ━+ 100%", re.MULTILINE)  # the selected job's progress line
    tmux.wait_for("the job completed", lambda s: bool(done.search(s)), timeout=60)

    tmux.keys("v")  # 4. before/after: the base model on the held-out rows, then the deployment, asked for first
    asked = tmux.wait_for("the deployment's rate", lambda s: "y deploys" in s, timeout=90)
    assert "held-out rows" in asked and "an hour" in asked
    tmux.keys("y")
    compare = tmux.wait_for("the comparison", lambda s: "paired rows" in s and "─ A ─" in s, timeout=120)
    assert "wins" in compare and "─ B ─" in compare

    def pictured(screen: str) -> bool:  # both sides drawn in half blocks (the box's middle column splits them)
        boxes = [line.split("││") for line in screen.splitlines() if "││" in line]
        return (
            sum("▀" in b[0] or "▄" in b[0] for b in boxes) > 3 and sum("▀" in b[-1] or "▄" in b[-1] for b in boxes) > 3
        )

    for _ in range(6):  # a row whose samples both failed has no picture: the next one
        try:
            tmux.wait_for("pictures side by side", pictured, timeout=5)
            break
        except AssertionError:
            tmux.keys("n")  # another sample of the row, then another row
            tmux.keys("Down")
    assert pictured(tmux.capture()), tmux.capture()
    tmux.keys("Escape")  # 5. back from the comparison: delete the deployment
    tmux.wait_for("the question", lambda s: "Delete deployment" in s)
    tmux.keys("y")
    tmux.wait_for("the deployment deleted", lambda s: "deleted: it no longer bills" in s, timeout=60)
    tmux.keys("Escape")
    tmux.wait_for("the Jobs pane", lambda s: "Before/after" in s or "v " in s)
    tmux.keys("q")
    deadline = time.monotonic() + 30
    while not exit_file.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert exit_file.exists(), tmux.capture()
    assert exit_file.read_text().strip() == "0", tmux.capture()
    with Store(tmp_path / "svgagent-home" / "runs.db") as store:
        names = [run.name for run in store.list_runs()]
    assert any(f"{job.group(1)} · base" in n for n in names) and any(f"{job.group(1)} · trained" in n for n in names)
