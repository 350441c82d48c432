"""Peak RSS of `svgagent eval` against a loopback policy endpoint serving each red-team answer: a gzip bomb, a valid
completion padded to 63 MB (gzip'd), an endless chunked body, an endless trailer, huge headers, a slow drip — and a
plain answer for comparison. The judge is the simulator; each run is one rollout with no retries.

    .venv/bin/python bench/hostile_rss.py [--timeout 10] [--python PATH]

The endpoint is tests/loopback_servers.ScriptedEndpoint (raw sockets, every endless answer bounded in bytes and
time). Peak RSS is the eval process's own (os.wait4), wall is the whole command, and the reason is what the run
stored. ``--python``: another interpreter with svgagent installed (e.g. an older checkout's venv) to compare.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _report import report

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from loopback_servers import ScriptedEndpoint  # noqa: E402 - test support, found through the path above

from svgagent.core.sim.simulator import Simulator  # noqa: E402
from svgagent.core.store.run_store import Store  # noqa: E402

CASES = ("ok", "gzip-bomb", "padded", "endless-chunked", "endless-trailer", "huge-headers", "slow-drip")


def one_eval(python: str, policy_url: str, judge_url: str, store: Path, timeout_s: float) -> tuple[float, float, int]:
    """(peak RSS in MB, wall seconds, exit status) of one `svgagent eval` of one rollout."""
    argv = [
        *(python, "-m", "svgagent.tui.cli.main", "eval", "--base-url", policy_url, "--judge-base-url", judge_url),
        *("--model", "simulated-policy", "--judge-model", "simulated-judge", "--rows", "1", "--max-retries", "0"),
        *("--request-timeout", f"{timeout_s:g}", "--render-size", "128", "--store", str(store)),
    ]
    env = {**os.environ, "FIREWORKS_API_KEY": "bench", "OPENAI_API_KEY": "bench"}
    started = time.monotonic()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_maxrss / 1024, time.monotonic() - started, proc.returncode


def stored_reason(store: Path) -> str:
    with Store(store) as s:
        (run,) = s.list_runs()
        (rec,) = s.list_rollouts(run.run_id)
        return f"{rec.status.value}: {rec.reason or ''}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timeout", type=float, default=10.0, help="the eval's --request-timeout (s)")
    parser.add_argument("--python", default=sys.executable, help="the interpreter that runs svgagent eval")
    args = parser.parse_args()
    figures: dict[str, float] = {}
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; svgagent eval run by {args.python}")
    print(f"{'case':<16} {'peak RSS MB':>11} {'wall s':>7} {'exit':>4}  stored")
    with Simulator() as judge, ScriptedEndpoint() as endpoint, tempfile.TemporaryDirectory() as tmp:
        assert judge.base_url is not None
        for case in CASES:
            store = Path(tmp) / f"{case}.db"
            rss, wall, code = one_eval(args.python, endpoint.url(case), judge.base_url, store, args.timeout)
            try:
                reason = stored_reason(store)
            except Exception as err:  # noqa: BLE001 - an older build's store, or none: the figure still stands
                reason = f"({type(err).__name__})"
            print(f"{case:<16} {rss:>11.0f} {wall:>7.1f} {code:>4}  {reason[:110]}")
            figures[f"eval peak RSS MB, {case}"] = round(rss, 1)
            figures[f"eval wall s, {case}"] = round(wall, 1)
    report(figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
