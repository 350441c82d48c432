"""Idle CPU of the terminal app: a real `svgagent tui` process on a pseudo-terminal with nothing to do.

    .venv/bin/python bench/tui_idle.py [--seconds 20] [--settle 5]

Each case spawns `svgagent tui --demo` (isolated HOME/XDG dirs, no keys: what a new user sees), waits for its first
frame and a case's settle time more, then reads the CPU time of the app and its processes from /proc over
`--seconds` while a thread drains the terminal; the figure is that CPU time as a share of one core — of the whole
process tree, as a user's `top` adds it up: the UI process, the engine process it starts, the render workers and
anything else it started (the demo's simulator process; :func:`_report.tree_cpu_seconds`). The
UI process's own share is printed beside it. Cases:

- 80x24: the Jobs pane is not on screen (nothing polls), no run open;
- 120x40 once the demo's simulated RFT job has finished (settle `--job-done` s): the Jobs pane shows it, nothing
  moves — the issue's "idle with nothing running";
- 120x40 while that job still moves through its states (reference: the pane has something new every second).

Noise: on a shared machine the CPU time is the process's own, but contention inflates it a little; read the
figures with the machine's load (printed).
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from pathlib import Path

from _report import cpu_seconds, process_tree, report, tree_cpu_seconds

from tui import ANSI, FIRST_PAINT_MARKER, clean_env, svgagent_command


def idle_cpu(
    args: list[str], size: tuple[int, int], root: Path, seconds: float, settle: float
) -> tuple[float, float, int]:
    """The share of one core `svgagent ARGS` and every process it started use over ``seconds`` once its first frame
    is on the terminal; the UI process's own share; how many processes the tree had at the end."""
    env = clean_env(root)
    env.update(COLUMNS=str(size[0]), LINES=str(size[1]))
    work = root / "work"
    work.mkdir(exist_ok=True)
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", size[1], size[0], 0, 0))
    proc = subprocess.Popen(
        [*svgagent_command(), *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        cwd=work,
        env=env,
        start_new_session=True,
        close_fds=True,
    )
    os.close(slave)
    painted = threading.Event()
    done = threading.Event()

    def drain() -> None:  # a terminal reads everything the app writes
        seen = b""
        while not done.is_set():
            if not select.select([master], [], [], 0.1)[0]:
                continue
            try:
                chunk = os.read(master, 1 << 16)
            except OSError:
                return
            if not painted.is_set():
                seen = (seen + chunk)[-200_000:]
                if FIRST_PAINT_MARKER in ANSI.sub(b"", seen):
                    painted.set()

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        if not painted.wait(60):
            raise SystemExit(f"`svgagent {' '.join(args)}`: no first frame within 60 s")
        time.sleep(settle)
        start_tree, start_ui, start = tree_cpu_seconds(proc.pid), cpu_seconds(proc.pid), time.perf_counter()
        time.sleep(seconds)
        end_tree, end_ui, elapsed = tree_cpu_seconds(proc.pid), cpu_seconds(proc.pid), time.perf_counter() - start
        return (end_tree - start_tree) / elapsed, (end_ui - start_ui) / elapsed, len(process_tree(proc.pid))
    finally:
        os.write(master, b"q")
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=5)
        done.set()
        reader.join(timeout=2)
        os.close(master)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=20.0, help="how long each case is measured")
    parser.add_argument("--settle", type=float, default=5.0, help="seconds after the first frame before measuring")
    parser.add_argument(
        "--job-done",
        type=float,
        default=50.0,
        help="seconds after the first frame by which the demo RFT job has finished",
    )
    args = parser.parse_args()
    cases = [
        ("tui idle CPU % of a core, 80x24", (80, 24), args.settle),
        ("tui idle CPU % of a core, 120x40 (Jobs pane, its job done)", (120, 40), args.job_done),
        ("tui CPU % of a core, 120x40 while the demo RFT job moves", (120, 40), args.settle),
    ]
    figures: dict[str, float] = {}
    for label, size, settle in cases:
        with tempfile.TemporaryDirectory() as tmp:
            share, ui_share, processes = idle_cpu(["tui", "--demo"], size, Path(tmp), args.seconds, settle)
        figures[label] = round(100 * share, 2)
        print(
            f"{label}: {100 * share:.2f} % over {args.seconds:g} s, {processes} processes"
            f" (the UI process alone {100 * ui_share:.2f} %; load average {os.getloadavg()[0]:.1f})"
        )
    report(figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
