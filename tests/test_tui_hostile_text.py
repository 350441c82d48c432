"""issue 31 item 1, in a real terminal: text from outside never drives the terminal the app draws on.

Rows imported with `svgagent import` carry, in every field (prompt, requirements, answer and its SVG, rationale,
reason, per-requirement reasons, error, row id, run name), OSC 52 (writes the clipboard), OSC 0 (retitles the
window), CSI 2J (clears the screen), SGR, bidi overrides and isolates, and Rich markup; a training run stored as
`svgagent serve` stores one carries them in its label, model and rollouts. tmux runs the app with
``set-clipboard on`` (an application's OSC 52 lands in tmux's paste buffers) and every view that shows them is
opened — rollout table and preview, rollout screen, stats, run picker, compare, message log, training view. After
each: no paste buffer, the pane title unchanged, the app's frame on screen, and the escapes shown as text.
Skipped only when tmux is missing (CI installs it).
"""

from __future__ import annotations

import base64
import json
import shlex
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest
from tmux_support import Tmux

from svgagent.core.exchange.ep_status import StatusCode
from svgagent.core.scoring.models import RolloutStatus
from svgagent.core.serve.training_runs import StepHint, TrainingStore
from svgagent.core.store.run_store import Store

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

ESC, BEL = "\x1b", "\x07"
SIZE = (120, 40)


def hostile(tag: str) -> str:
    """``tag`` wrapped in what a hostile field holds: clipboard write, retitle, clear screen, colour, bidi, markup."""
    clip = base64.b64encode(f"PWNED-{tag}".encode()).decode()
    return (
        f"{tag}{ESC}]52;c;{clip}{BEL}{ESC}]0;TITLE-{tag}{BEL}{ESC}[2J{ESC}[31m\u202e[red]{tag}[/red]"
        f"[link=http://x]L[/link]\u2066x"
    )


def evaluated_row(index: int) -> dict[str, object]:
    """One Eval Protocol row, scored with per-requirement verdicts but failed by its rollout status (so the
    error, the reason and the rationale are all shown)."""
    svg = '<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><rect width="8" height="8" fill="red"/></svg>'
    answer = hostile("answer") + "\n" + svg.replace("<rect", f"<desc>{hostile('svgsrc')}</desc><rect")
    return {
        "messages": [{"role": "user", "content": "draw"}, {"role": "assistant", "content": answer}],
        "input_metadata": {
            "row_id": f"r{index}-" + hostile("rowid"),
            "dataset_info": {"original_prompt": hostile("prompt"), "requirements": [hostile("req1"), hostile("req2")]},
        },
        "evaluation_result": {
            "score": 0.5,
            "is_score_valid": True,
            "reason": hostile("rationale") + "\nsecond line",
            "metrics": {
                "requirement_1": {"score": 1, "reason": hostile("verdict1")},
                "requirement_2": {"score": 0, "reason": hostile("verdict2")},
            },
        },
        "rollout_status": {"code": 13, "message": hostile("error")},
        "execution_metadata": {"finish_reason": hostile("finish")},
    }


def store_training(path: Path) -> None:
    """Two steps of a training run as `svgagent serve --job` stores them, its label and model names hostile."""
    with Store(path) as store:
        training = TrainingStore(store, job_name=hostile("job"))
        for step in (1, 2):
            model = f"accounts/a/models/job-step-{step}" + hostile("model")
            ids = SimpleNamespace(
                invocation_id="inv",
                experiment_id="exp-hostile",
                rollout_id=f"ep-{step}",
                run_id=f"run-{step}",
                row_id="row_0",
            )
            place = training.place(ids=ids, model=model, hint=StepHint(step, None, "model"), judged=True)
            text = hostile(f"served{step}")
            training.record(
                place,
                ids=ids,
                model=model,
                prompt=text,
                requirements=(text, "b"),
                judged=True,
                columns={
                    "status": RolloutStatus.SCORED,
                    "score": 0.5,
                    "fulfilled": 1,
                    "is_score_valid": True,
                    "rationale": text,
                    "reason": text,
                },
                code=StatusCode.FINISHED,
                message="Rollout finished",
            )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Terminal:
    """The app in a tmux pane that takes OSC 52 into its paste buffers; ``check`` after each view."""

    def __init__(self, tmux: Tmux, tmp_path: Path) -> None:
        self.tmux, self.tmp_path = tmux, tmp_path
        self.title = ""

    def start(self, *args: str) -> None:
        script = Path(sys.executable).with_name("svgagent")
        command = (
            shlex.quote(str(script)) if script.exists() else f"{shlex.quote(sys.executable)} -m svgagent.tui.cli.main"
        )
        go = self.tmp_path / f"go-{uuid.uuid4().hex[:6]}"
        wrapper = self.tmp_path / "run.sh"
        wrapper.write_text(  # the app starts once the pane is set up: nothing it writes comes before that
            f"cd {shlex.quote(str(self.tmp_path))}\n"
            f"while [ ! -e {shlex.quote(str(go))} ]; do sleep 0.05; done\n"
            f"{command} tui --demo {' '.join(shlex.quote(a) for a in args)}\n"
            "exec sleep 600\n"
        )
        self.tmux.run("new-session", "-d", "-s", "app", "-x", str(SIZE[0]), "-y", str(SIZE[1]), f"sh {wrapper}")
        self.tmux.run("set-option", "-g", "set-clipboard", "on")  # what a terminal that honours OSC 52 does
        self.tmux.run("set-option", "-g", "allow-rename", "on")
        self.title = self.pane("#{pane_title}")
        go.touch()

    def pane(self, fmt: str) -> str:
        return self.tmux.run("display-message", "-p", "-t", "app", fmt).strip()

    def wait_for(self, what: str, check: Callable[[str], bool]) -> str:
        return self.tmux.wait_for(what, check, timeout=60)

    def settle(self, check: Callable[[str], bool], timeout: float = 20.0) -> None:
        """Wait until ``check`` holds, at most ``timeout`` seconds, without failing: a view whose screen a control
        sequence blanked never shows what it should, and :meth:`check` then says what reached the terminal."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not check(self.tmux.capture()):
            time.sleep(0.2)

    def check(self, view: str, *, shows: tuple[str, ...], escapes: bool = True) -> str:
        """Nothing reached the terminal; the view shows ``shows`` and (``escapes``) at least one escape as text.
        Every problem found is reported at once."""
        time.sleep(0.5)  # whatever a view writes when it opens has been written and read by tmux
        screen = self.tmux.capture()
        problems = []
        buffers = self.tmux.run("list-buffers", "-F", "#{buffer_name}: #{buffer_sample}")
        if buffers.strip():
            problems.append(f"the clipboard (tmux's paste buffers) was written: {buffers.splitlines()}")
        title = self.pane("#{pane_title}")
        if title != self.title:
            problems.append(f"the window title changed from {self.title!r} to {title!r}")
        if any(c in screen for c in (ESC, "\u202e", "\u2066")):
            problems.append("a control character is on screen")
        lines = screen.splitlines()
        if not lines or not lines[0].strip():
            problems.append("the top line is blank")
        problems += [f"{needle!r} is not on screen" for needle in shows if needle not in screen]
        if escapes and "\\x1b]52;c;" not in screen and "\\x1b]0;" not in screen:
            problems.append("no escape is shown as text")
        assert not problems, f"{view}: " + "; ".join(problems) + f"\n{screen}"
        return screen


def svgagent(env: dict[str, str], *args: str) -> str:
    script = Path(sys.executable).with_name("svgagent")
    argv = [str(script)] if script.exists() else [sys.executable, "-m", "svgagent.tui.cli.main"]
    out = subprocess.run([*argv, *args], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def import_runs(tmux: Tmux, tmp_path: Path) -> tuple[str, str]:
    rows = tmp_path / "hostile.jsonl"
    rows.write_text("".join(json.dumps(evaluated_row(i)) + "\n" for i in range(2)))
    runs = []
    for side in ("A", "B"):
        out = svgagent(tmux.env, "import", str(rows), "--name", f"run {side} " + hostile(f"name{side}"), "--json")
        runs.append(json.loads(out)["run_id"])
    return runs[0], runs[1]


def test_hostile_imported_rows_never_reach_the_terminal(tmux: Tmux, tmp_path: Path) -> None:
    run_a, run_b = import_runs(tmux, tmp_path)
    term = Terminal(tmux, tmp_path)
    term.start("--run", run_b)

    term.wait_for("the app", lambda s: "q Quit" in s)
    term.settle(lambda s: "r0-row" in s and "Judge's rationale" in s)
    screen = term.check("rollout table and preview", shows=("1 Rollouts", "2 Preview", "3 Config", "q Quit"))
    assert "[red]" in screen and "[/link]" in screen  # markup shown as it is
    assert "\\u202e" in screen  # the bidi override as an escape
    table = [line for line in screen.splitlines()[1:24]]
    assert all(line[0] == "│" and line[79:81] == "││" and line[119] == "│" for line in table[1:-1]), screen

    tmux.keys("Enter")  # the rollout screen: requirements, verdict reasons, error, rationale, prompt, SVG source
    term.wait_for("the rollout screen", lambda s: "Requirements — space" in s)
    screen = term.check("rollout screen", shows=("esc Back", "req1", "Attempts"))
    tmux.keys("End")
    term.wait_for("the SVG source", lambda s: "SVG source" in s)
    term.check("rollout screen, SVG source", shows=("svgsrc",))
    tmux.keys("Escape")
    term.wait_for("the dashboard", lambda s: "1 Rollouts" in s)

    tmux.keys("i")  # stats: the run's name, requirements most often failed (row ids, requirement text)
    term.wait_for("the stats", lambda s: "Requirements most often failed" in s)
    term.check("stats", shows=("nameB", "Failures by reason"))
    tmux.keys("Escape")
    term.wait_for("the dashboard", lambda s: "1 Rollouts" in s)

    tmux.keys("o")  # the run picker: names; then A and B marked and compared
    term.wait_for("the run picker", lambda s: "Open a run" in s)
    term.check("run picker", shows=("nameA", "nameB"))
    tmux.keys("j", "a", "k", "b", "c")  # newest first: B on top, A below it
    term.wait_for("the comparison", lambda s: "paired rows" in s)
    term.check("compare", shows=("nameA", "nameB", "rationale"))
    tmux.keys("Escape")
    term.wait_for("the dashboard", lambda s: "1 Rollouts" in s)

    tmux.keys("/")  # a filter error quotes what was typed: its toast and the message log show it as text
    tmux.keys("-l", "nosuch:[red]typed[/red]")
    tmux.keys("Enter")
    term.wait_for("the filter's error", lambda s: "unknown field" in s)
    term.check("toast", shows=("[red]typed[/red]",), escapes=False)  # not read as markup
    tmux.keys("Escape", "Escape", "L")
    term.wait_for("the message log", lambda s: "Messages of this session" in s)
    term.check("message log", shows=("[red]typed[/red]",), escapes=False)
    tmux.keys("Escape")

    tmux.keys("q")


def test_a_hostile_training_run_never_reaches_the_terminal(tmux: Tmux, tmp_path: Path) -> None:
    home = tmp_path / "svgagent-home"
    home.mkdir()
    store_training(home / "runs.db")
    term = Terminal(tmux, tmp_path)
    term.start("--serve", "--serve-port", str(free_port()))

    term.settle(lambda s: "Training view" in s and "local mean" in s)
    term.check("training view", shows=("job", "model", "esc Back"))
    tmux.keys("f")  # the first step compared with the last, with their rollouts' text
    term.wait_for("the comparison", lambda s: "showing 2 of 2 rows" in s)
    term.check("compare of two steps", shows=("served1", "served2"))
    tmux.keys("Escape")
    term.wait_for("the training view", lambda s: "Training view" in s)
    tmux.keys("q")
