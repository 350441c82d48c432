"""Run every benchmark (each in its own process) and print one table of headline figures with their targets.

    .venv/bin/python bench/run_all.py [--quick]

Ratios are measured within one run, so they mean something on a shared, noisy machine; absolute times are context.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from _report import PREFIX

HERE = Path(__file__).parent
TARGETS = {
    "engine wall/ideal, C=64": ("<=", 1.10),
    "engine CPU ms/rollout, C=256": ("<=", 1.5),
    "engine wall/unavoidable, C=256": ("<=", 1.15),
    "engine wall/unavoidable, C=256, 2 workers": ("<=", 1.15),
    # the same target as a model's drawings cost with the model and the judge elsewhere (their stand-in on a core
    # of its own): what a user's run waits for
    "engine wall/unavoidable, C=256, model-like SVGs, simulator on 1 core(s) of its own": ("<=", 1.15),
    "engine peak RSS MB, 10000 rollouts": ("<", 300),
    "render CPU now / before": ("<=", 0.60),
    "render CPU now / before, in a worker's environment": ("<=", 0.60),
    "startup --help wall s": ("<=", 0.3),
    "startup eval to first request wall s": ("<=", 0.5),
    "startup tui first paint wall s": ("<=", 0.8),
    "quickstart wall/ideal": ("<=", 1.2),
    "tui longest event-loop stall ms": ("<", 100),
    "tui stall ms, real engine: first second": ("<", 50),
    "tui stall ms, real engine: after it": ("<", 50),
    "tui key-to-screen ms p95, real engine": ("<", 50),
    "tui open finished 10k run s": ("<", 1.0),
    "tui first paint s": ("<", 1.5),
    "tui RSS MB": ("<", 200),
    "tui idle CPU % of a core, 120x40 (Jobs pane, its job done)": ("<", 1.0),
    "serve CPU ms/rollout, C=16": ("<", 2.0),
    "serve CPU ms/rollout, C=64": ("<", 2.0),
}


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def run(script: str, args: list[str]) -> dict[str, float]:
    print(f"\n=== {script} {' '.join(args)}  (load average {_load()})", flush=True)
    proc = subprocess.run([sys.executable, str(HERE / script), *args], capture_output=True, text=True, timeout=900)
    figures: dict[str, float] = {}
    for line in proc.stdout.splitlines():
        if line.startswith(PREFIX):
            figures.update(json.loads(line[len(PREFIX) :]))
        else:
            print(line)
    print(f"(load average {_load()} at the end of {script})")
    if proc.returncode != 0:
        print(proc.stderr[-2000:])
        print(f"{script} exited {proc.returncode}")
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller workloads (a smoke run, not the targets)")
    args = parser.parse_args()
    plan = [
        ("engine.py", ["--n", "300", "--workers", "1", "2"] if args.quick else ["--workers", "1", "2"]),
        (
            "engine.py",
            ["--n", "2000", "--concurrency", "256"] if args.quick else ["--n", "10000", "--concurrency", "256"],
        ),
        (
            "engine.py",
            [
                "--n",
                "300" if args.quick else "1000",
                "--concurrency",
                "256",
                "--svgs",
                "model-like",
                "--simulator-cores",
                "1",
            ],
        ),
        ("startup.py", ["--repeat", "3"] if args.quick else []),
        ("quickstart.py", ["--repeat", "1", "--rows", "16"] if args.quick else []),
        ("client.py", ["--n", "100"] if args.quick else []),
        ("render.py", ["--n", "40", "--simple", "200"] if args.quick else []),
        ("store.py", ["--rollouts", "2000", "--seconds", "2"] if args.quick else []),
        ("serve.py", ["--n", "200"] if args.quick else []),
    ]
    if (HERE / "tui.py").exists():
        plan.append(("tui.py", ["--rollouts", "2000"] if args.quick else []))
        plan.append(("tui_idle.py", ["--seconds", "10"] if args.quick else []))
    figures: dict[str, float] = {}
    for script, extra in plan:
        figures.update(run(script, extra))
    print(f"\n{'figure':<58} {'value':>10}  target")
    failed = 0
    for name, value in figures.items():
        target = TARGETS.get(name)
        verdict = ""
        if target:
            op, limit = target
            ok = value <= limit if op == "<=" else value < limit
            failed += not ok
            verdict = f"{op} {limit}  {'met' if ok else 'MISSED'}"
        print(f"{name:<58} {value:>10}  {verdict}")
    if not args.quick:  # a benchmark that crashed or was renamed must not pass by leaving its figure out
        for name, (op, limit) in TARGETS.items():
            if name not in figures:
                failed += 1
                print(f"{name:<58} {'(none)':>10}  {op} {limit}  MISSED: not measured")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
