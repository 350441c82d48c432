"""Benchmark start-up: `svgagent --help`, `svgagent eval` to its first request, `svgagent tui` to its first paint.

    .venv/bin/python bench/startup.py [--repeat 5] [--no-tui]

Each figure is the median of ``--repeat`` fresh processes; next to the wall time (what a person waits for, which the
load of a shared machine stretches) it gives the process's CPU time (user + system, which load distorts far less)
and, for `--help`, the import time `python -X importtime` reports and the slowest top-level imports.

- `--help`: spawn to exit.
- `eval`: spawn to the first byte of its first HTTPS request (the TLS ClientHello: the TLS context is made by
  then), received by a socket this script listens on (a policy endpoint that never answers: the process is stopped as soon as the request arrives, and so are the render
  workers it started, so that their start-up does not run into the next measurement). Fake keys, a throw-away
  store, one row of the built-in dataset.
- `tui`: spawn `svgagent tui --demo` on a 120x40 pseudo-terminal until the dashboard's text is on it (bench/tui.py's
  measurement).
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from _report import children_of, compile_sources, cpu_seconds, report


def svgagent() -> list[str]:
    script = Path(sys.executable).with_name("svgagent")
    return [str(script)] if script.exists() else [sys.executable, "-m", "svgagent.tui.cli.main"]


def clean_env(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SVGAGENT_", "FIREWORKS_", "OPENAI_"))}
    home = root / "home"
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_DATA_HOME=str(home / "data"),
        XDG_CACHE_HOME=str(home / "cache"),
        XDG_STATE_HOME=str(home / "state"),
        SVGAGENT_HOME=str(root / "svgagent-home"),
    )
    return env


def _child_cpu(before: os.times_result) -> float:
    after = os.times()
    return (after.children_user - before.children_user) + (after.children_system - before.children_system)


def help_once(env: dict[str, str], cwd: Path) -> tuple[float, float]:
    before = os.times()
    t0 = time.perf_counter()
    subprocess.run([*svgagent(), "--help"], env=env, cwd=cwd, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0, _child_cpu(before)


def import_profile(env: dict[str, str], cwd: Path) -> tuple[float, list[tuple[float, str]]]:
    """Total import time of the `svgagent` entry module and its slowest direct imports (seconds, name)."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import svgagent.tui.cli.main"],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    rows = []
    for line in proc.stderr.splitlines():
        match = re.match(r"import time:\s+\d+ \|\s+(\d+) \|( *)(\S+)", line)
        if match:
            rows.append((int(match.group(1)) / 1e6, len(match.group(2)), match.group(3)))
    total = sum(seconds for seconds, depth, _ in rows if depth == 1)
    top = sorted(((seconds, name) for seconds, depth, name in rows if depth <= 3), reverse=True)[:8]
    return total, top


class FirstRequest:
    """A TCP listener that notes when the first bytes of a request arrive, then hangs up."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.arrived = threading.Event()
        self.at = 0.0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                if conn.recv(1) and not self.arrived.is_set():
                    self.at = time.perf_counter()
                    self.arrived.set()

    def close(self) -> None:
        self.sock.close()


def _kill_and_reap(pids: list[int]) -> None:
    """SIGKILL ``pids`` (not our children: their parent is gone) and wait until they have left /proc."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in pids):
        time.sleep(0.01)


def eval_once(env: dict[str, str], cwd: Path, store: Path) -> tuple[float, float]:
    listener = FirstRequest()
    # https, as the real endpoints are: the first bytes are the TLS ClientHello, so the TLS context (the CA
    # certificates loaded) is made by then, as for a real first request; the handshake itself is not counted
    url = f"https://127.0.0.1:{listener.port}/v1"
    env = {**env, "FIREWORKS_API_KEY": "fw-bench-not-a-key", "OPENAI_API_KEY": "oa-bench-not-a-key"}
    command = [
        *svgagent(),
        "eval",
        "--base-url",
        url,
        "--judge-base-url",
        url,
        "--rows",
        "1",
        "--store",
        str(store),
        "--max-retries",
        "0",
    ]
    t0 = time.perf_counter()
    proc = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        if not listener.arrived.wait(60):
            raise SystemExit(f"`svgagent eval` sent no request within 60 s: {proc.stderr.read()[-800:]!r}")
        seconds = listener.at - t0
        cpu = cpu_seconds(proc.pid)
    finally:
        # its render workers too: they boot for a few tenths of a second of CPU, which would otherwise land on the
        # next measurement (they only notice the parent is gone once booted)
        workers = children_of(proc.pid)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        _kill_and_reap(workers)
        listener.close()
    return seconds, cpu


def tui_once(root: Path) -> tuple[float, float]:
    from tui import FIRST_PAINT_MARKER, spawn_until
    from tui import clean_env as tui_env

    work = root / "tui-work"
    work.mkdir(parents=True, exist_ok=True)
    seen = spawn_until(["tui", "--demo"], FIRST_PAINT_MARKER, work, tui_env(root))
    return seen["seconds"], seen["cpu"]


def _median(values: list[float]) -> float:
    return statistics.median(values)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5, help="fresh processes per figure (median)")
    parser.add_argument("--no-tui", action="store_true", help="skip the TUI's first paint")
    args = parser.parse_args()
    print(f"bytecode: {compile_sources()} stale svgagent modules compiled first (an installed svgagent has them)")
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs")
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        env = clean_env(root)
        cwd = root / "work"
        cwd.mkdir()
        helps = [help_once(env, cwd) for _ in range(args.repeat)]
        total, top = import_profile(env, cwd)
        print(
            f"svgagent --help: wall {', '.join(f'{w:.2f}' for w, _ in helps)} s; CPU "
            f"{', '.join(f'{c:.2f}' for _, c in helps)} s; imports of the entry module {total:.3f} s "
            f"(slowest: {', '.join(f'{name} {seconds:.3f}' for seconds, name in top[:5])})"
        )
        figures["startup --help wall s"] = round(_median([w for w, _ in helps]), 3)
        figures["startup --help CPU s"] = round(_median([c for _, c in helps]), 3)
        figures["startup --help imports s"] = round(total, 3)
        # each start in a home of its own: nothing a start wrote (config and data directories) helps the next
        evals = [eval_once(clean_env(root / f"eval-home-{i}"), cwd, root / f"eval-{i}.db") for i in range(args.repeat)]
        print(
            f"svgagent eval, spawn to first request: wall {', '.join(f'{w:.2f}' for w, _ in evals)} s; CPU by "
            f"then {', '.join(f'{c:.2f}' for _, c in evals)} s"
        )
        figures["startup eval to first request wall s"] = round(_median([w for w, _ in evals]), 3)
        figures["startup eval to first request CPU s"] = round(_median([c for _, c in evals]), 3)
        if not args.no_tui:
            paints = [tui_once(root / f"tui-home-{i}") for i in range(args.repeat)]
            print(
                f"svgagent tui --demo, spawn to first paint: wall {', '.join(f'{w:.2f}' for w, _ in paints)} s; "
                f"CPU by then {', '.join(f'{c:.2f}' for _, c in paints)} s"
            )
            figures["startup tui first paint wall s"] = round(_median([w for w, _ in paints]), 3)
            figures["startup tui first paint CPU s"] = round(_median([c for _, c in paints]), 3)
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    report(figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
