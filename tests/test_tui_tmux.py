"""A real terminal: tmux runs `svgagent tui --demo` at 80×24; keys start a run, the screen shows scored rows, the
half-block picture in 24-bit colour, the judge's rationale and the Footer; `f` draws the picture as tall as the
terminal and a key goes back; `q` exits 0 and leaves the alternate screen. Skipped only when tmux is missing (CI
installs it)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tmux_support import Tmux

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def launch(tmux: Tmux, tmp_path: Path, size: tuple[int, int] = (80, 24)) -> Path:
    """Start `svgagent tui --demo` in the working directory; returns the file its exit status goes to."""
    exit_file = tmp_path / "exit-status"
    script = Path(sys.executable).with_name("svgagent")
    command = shlex.quote(str(script)) if script.exists() else f"{shlex.quote(sys.executable)} -m svgagent.tui.cli.main"
    wrapper = tmp_path / "run.sh"
    wrapper.write_text(
        f"cd {shlex.quote(str(Path.cwd()))}\n"
        f"{command} tui --demo\n"
        f"echo $? > {shlex.quote(str(exit_file))}\n"
        "exec sleep 600\n"
    )
    tmux.run(
        "new-session", "-d", "-s", "app", "-x", str(size[0]), "-y", str(size[1]), f"sh {shlex.quote(str(wrapper))}"
    )
    return exit_file


def test_demo_run_in_a_real_terminal(tmux: Tmux, tmp_path: Path) -> None:
    exit_file = launch(tmux, tmp_path)
    first = tmux.wait_for("the first screen", lambda s: "press r to start a run" in s)
    assert "demo mode: simulated model and judge" in first
    assert "q Quit" in first
    assert "? Help" in first  # the Footer

    tmux.keys("r")
    scored = re.compile(r"✓ scored\s+\d\.\d\d\s+\d+/\d+")
    screen = tmux.wait_for("a finished run", lambda s: " r Run" in s and bool(scored.search(s)))
    assert len(scored.findall(screen)) >= 3
    tmux.wait_for("the summary (once the toast is gone)", lambda s: bool(re.search(r"(\d+)/\1 done", s)))

    # a scored row (the demo policy, which follows its settings, breaks some SVGs: those have no picture)
    tmux.keys("-l", "/status:scored\r")
    tmux.wait_for("the filter", lambda s: "filter status:scored" in s)
    tmux.keys("2")  # the Preview tab: picture, verdict, rationale
    tmux.wait_for("the preview", lambda s: "Judge's rationale" in s and "▀" in s)
    coloured = tmux.capture(escapes=True)
    assert re.search(r"\x1b\[[0-9;]*(38|48);2;\d+;\d+;\d+[0-9;]*m[▀▄]", coloured), "no 24-bit half blocks"
    plain = tmux.capture()
    assert "[simulated judge]" in plain
    assert "q Quit" in plain

    tmux.keys("f")  # full size: the whole terminal but the caption line, then any key goes back
    full = tmux.wait_for("the full-size picture", lambda s: "press any key to go back" in s)
    assert "press any key to go back" in full.splitlines()[23], full  # the caption on the last line
    drawn = tmux.capture(escapes=True).splitlines()[:23]
    coloured = [line for line in drawn if re.search(r"\x1b\[[0-9;]*48;2;", line)]
    assert len(coloured) >= 20, full  # a picture as tall as the terminal above it (the square fits by height)
    tmux.keys("Space")
    tmux.wait_for("the app again", lambda s: "Judge's rationale" in s and "press any key" not in s)

    tmux.keys("q")
    deadline = time.monotonic() + 30
    while not exit_file.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert exit_file.exists(), tmux.capture()
    assert exit_file.read_text().strip() == "0"
    assert tmux.run("display-message", "-p", "-t", "app", "#{alternate_on}").strip() == "0"
    shell = tmux.capture()
    assert "Rollouts" not in shell  # the app's screen is gone with the alternate screen
    assert "▀" not in shell and "▄" not in shell  # and no picture was left on the shell's


def test_a_burst_of_keys_lands_where_each_key_sent_the_focus(tmux: Tmux, tmp_path: Path) -> None:
    """`send-keys -l` writes the whole string at once, as a paste or an SSH connection delivers it."""
    launch(tmux, tmp_path, (120, 40))
    tmux.wait_for("the first screen", lambda s: "press r to start a run" in s)

    tmux.keys("-l", "/row:3")  # r would start a run, 3 would open Config
    screen = tmux.wait_for("the filter", lambda s: "filter row:3" in s)
    assert "no run open" in screen  # r and 3 went into the filter: no run was started
    tmux.keys("Escape", "Escape")  # back to the table, then clear the filter
    tmux.wait_for("the table", lambda s: "filter row:3" not in s)

    # Escape and a key in one write reach the app as ESC + key in one read, exactly what Alt+key sends: Textual
    # alone read ESC 1 as "¡" and ESC / as a bare "/", so the Preview kept the focus and r started a run
    tmux.keys("2")
    tmux.wait_for("the Preview's keys", lambda s: "esc Back" in s and "/ Filter" not in s)
    tmux.keys("Escape", "1", "/", "r", "o", "w", ":", "7")
    screen = tmux.wait_for("the filter", lambda s: "filter row:7" in s)
    assert "no run open" in screen
    tmux.keys("Escape", "Escape", "3", "Tab", "Tab", "Escape", "4")  # a config field, Escape, the Secrets pane
    tmux.wait_for("the Secrets pane's keys", lambda s: "e Edit v Reveal" in s)
    tmux.keys("3")
    screen = tmux.wait_for("the Config form's keys", lambda s: "Save config" in s)
    config_column = "\n".join(line[:40] for line in screen.splitlines())  # the grid's first column, 40 cells
    assert re.search(r"temperature\W+0\.8\W", config_column), screen  # no 4 (nor ¢) typed into it
    tmux.keys("Escape")
    tmux.wait_for("the table's keys", lambda s: "/ Filter" in s)

    secret = "fw3rxf4e5vta6dq7so8Ri9c0rxf3e4vtadqsoRic"  # 40 characters, most of them keys of the app
    tmux.keys("-l", "4e" + secret + "\r")  # Secrets pane, edit the first key, its value, enter
    tmux.wait_for("the saved key", lambda s: "Saved FIREWORKS_API_KEY" in s)
    env = (Path.cwd() / ".env").read_text()
    assert f"FIREWORKS_API_KEY={secret}" in env.replace("'", "").replace('"', "")
    screen = tmux.capture()
    assert "no run open" in screen  # still no run: none of the secret's letters was a command
    assert secret not in screen  # and the value is shown masked
    tmux.keys("q")


def test_sigterm_closes_the_app_and_keeps_the_run_interrupted(tmux: Tmux, tmp_path: Path) -> None:
    """issue 10 item 3: SIGTERM (kill, systemd, docker) is handled like quitting, not a crash with a `running` run."""
    import sqlite3

    exit_file = launch(tmux, tmp_path)
    tmux.wait_for("the first screen", lambda s: "press r to start a run" in s)
    tmux.keys("r")
    db = tmp_path / "svgagent-home" / "runs.db"

    def running() -> bool:
        try:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
                return con.execute("SELECT COUNT(*) FROM runs WHERE status = 'running'").fetchone()[0] > 0
        except sqlite3.Error:
            return False

    deadline = time.monotonic() + 60
    while not running() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert running(), tmux.capture()
    shell = tmux.run("display-message", "-p", "-t", "app", "#{pane_pid}").strip()
    children = subprocess.run(["ps", "--ppid", shell, "-o", "pid="], capture_output=True, text=True).stdout.split()
    assert len(children) == 1, children  # the svgagent process the wrapper started
    os.kill(int(children[0]), 15)
    deadline = time.monotonic() + 60
    while not exit_file.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert exit_file.exists(), tmux.capture()
    assert exit_file.read_text().strip() == "143"
    assert tmux.run("display-message", "-p", "-t", "app", "#{alternate_on}").strip() == "0"
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        assert con.execute("SELECT status FROM runs").fetchall() == [("interrupted",)]
