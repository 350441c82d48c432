"""Benchmark the evaluation engine against the simulator: wall time vs the ideal, CPU per rollout, peak RSS.

    .venv/bin/python bench/engine.py [--n 1000] [--concurrency 64 256] [--latency 0.2]

The simulator runs in its own process (so it does not share this process's GIL) with a fixed policy and judge
latency. With C rollouts in flight and each needing one policy and one judge call, no engine can beat
ceil(N / C) * (policy latency + judge latency); the ratio wall / ideal shows the engine's overhead (target <= 1.10).

Columns: `unavoid.` is issue 13's unavoidable wall, the larger of that ideal and the renders' CPU over the cores
(`render ms/r`: the run's SVGs rendered again in the idle pool after the run). `bound` is what this machine allows
a run, however good its engine: the largest of the latency bound with the policy and judge limits apart (ceil(N/C)
policy latencies and one judge latency: up to 2C calls are in flight, so the wall can beat the ideal above), the
renders' CPU over the cores plus one policy and one judge latency (no SVG exists before the first answer, and the
last verdict comes one judge call after the last render), and all the CPU of the run — engine, renders as they ran
and the simulator, which shares these cores — over the cores. wall / bound near 1 says the run used the cores it
had; wall / unavoid. far above it says the simulator's and the engine's CPU on the same cores is what it waited for.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _report import cpu_seconds, report, warm_pool

from svgagent.core.config.settings import load_settings
from svgagent.core.demo import demo_overrides
from svgagent.core.event_loop import loop_factory, run
from svgagent.core.run.dataset import load_dataset
from svgagent.core.run.engine import Engine
from svgagent.core.scoring.models import RolloutStatus
from svgagent.core.scoring.render import usable_cpus
from svgagent.core.startup_gc import long_run_heap
from svgagent.core.store.run_store import Store


def start_simulator(latency: float, nice: int = 0, svg_file: str = "") -> tuple[subprocess.Popen[str], str]:
    """``nice``: as `tui --demo` starts its simulator (the engine process's priority), for the app's benchmarks;
    ``svg_file``: the policy answers these SVGs in turn (SimConfig.policy_svg_file)."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "svgagent.core.sim.simulator",
            "--port",
            "0",
            "--policy-latency",
            str(latency),
            "--judge-latency",
            str(latency),
            "--judge-pixel-analysis",
            "false",
            "--nice",
            str(nice),
            "--policy-svg-file",
            svg_file,
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    url = line.strip().rsplit(" ", 1)[-1]
    if not url.startswith("http"):
        proc.kill()
        raise SystemExit(f"simulator did not start: {line!r}")
    return proc, url


async def forward_events(events: Any) -> None:
    """What the app's engine process does with the engine's events (core/run/engine_process.py): every 20 ms, the
    changes since as one JSON line. With nobody subscribed the engine builds no events at all."""
    import json

    from svgagent.core.run.engine_process import FORWARD_EVERY_S, event_batch

    while True:
        await asyncio.sleep(FORWARD_EVERY_S)
        batch = event_batch(events)
        if batch:
            json.dumps({"events": batch})


async def one_run(
    url: str, n: int, concurrency: int, store_dir: Path, sim_pid: int, workers: int = 1, max_tokens: int = 4096
) -> dict[str, float]:
    dataset = load_dataset("builtin")
    rows = min(len(dataset.rows), 25)
    runs = math.ceil(n / rows)
    settings = load_settings(
        **demo_overrides(url),
        store=store_dir / f"bench-{concurrency}-{workers}.db",
        rows=rows,
        samples=runs,
        concurrency=concurrency,
        judge_concurrency=concurrency,
        cache=False,
        max_retries=0,
        request_timeout_s=60,
        workers=workers,
        max_tokens=max_tokens,
    )
    with Store(settings.store_path()) as store:
        async with Engine(settings, store) as engine:
            run_id = engine.create_run(dataset)
            if workers == 1:
                await warm_pool(engine._renderer)
            renderers = engine._renderer.worker_pids()
            events = engine.bus.subscribe()  # someone listens, as in `svgagent eval` and the app's engine process
            forwarding = asyncio.create_task(forward_events(events))
            children0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            loop0 = time.thread_time()
            cpu0 = time.process_time()
            render0 = {pid: cpu_seconds(pid) for pid in renderers}
            sim0 = cpu_seconds(sim_pid)
            t0 = time.perf_counter()
            with long_run_heap():  # as `svgagent eval` and the engine's process run it (core/startup_gc.py)
                summary = await engine.run(run_id)
            wall = time.perf_counter() - t0
            forwarding.cancel()
            cpu = time.process_time() - cpu0
            loop = time.thread_time() - loop0
            children1 = resource.getrusage(resource.RUSAGE_CHILDREN)  # worker engines (and their renderers), waited
            workers_cpu = (children1.ru_utime + children1.ru_stime) - (children0.ru_utime + children0.ru_stime)
            # the pool grows on demand (a worker started during the run counts from 0, its boot included: ≈0.45 s)
            render = sum(cpu_seconds(pid) - render0.get(pid, 0.0) for pid in engine._renderer.worker_pids())
            sim = cpu_seconds(sim_pid) - sim0
            # the render CPU of those SVGs again, in the idle pool once the run is over: during the run it shared
            # the cores with the engine and the simulator (caches, frequency), which makes it read higher
            # (the SVG column alone, a few hundred at a time: the peak RSS below is the run's, not this check's)
            peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            ids = [
                row[0]
                for row in store.query(
                    "SELECT rollout_id FROM rollouts WHERE run_id = ? AND is_current = 1 AND png IS NOT NULL", (run_id,)
                )
            ]
            idle0 = {pid: cpu_seconds(pid) for pid in engine._renderer.worker_pids()}
            for start in range(0, len(ids), 256):
                chunk = ids[start : start + 256]
                svgs = [
                    row[0]
                    for row in store.query(
                        f"SELECT svg FROM rollouts WHERE rollout_id IN ({','.join('?' * len(chunk))})", chunk
                    )
                ]
                await asyncio.gather(*(engine._renderer.render(svg) for svg in svgs))
            render_idle = sum(cpu_seconds(pid) - idle0.get(pid, 0.0) for pid in engine._renderer.worker_pids())
            failures = collections.Counter(
                (r.error or "?").split(":")[0].split("(")[0].strip()[:40]
                for r in store.list_rollouts(run_id)
                if r.status is RolloutStatus.FAILED
            )
    total = summary.rollouts
    if summary.done != total:
        raise SystemExit(f"only {summary.done} of {total} rollouts finished")
    if sum(failures.values()) > total // 2:  # the simulator's bad answers are ≈1 in 4: more is the bench's fault
        raise SystemExit(f"{sum(failures.values())} of {total} rollouts failed: {dict(failures.most_common(5))}")
    return {
        "n": total,
        "wall": wall,
        "cpu": cpu,
        "done": summary.done,
        "render": render,
        "sim": sim,
        "loop": loop,
        "workers_cpu": workers_cpu,
        "failures": failures,
        "render_idle": render_idle,
        "peak_kb": peak_kb,
    }


def write_model_like_svgs(path: Path, count: int) -> str:
    """``count`` SVGs of bench/render.py's corpus (its seed) in ``path``, one JSON string a line."""
    import json
    import random

    from render import model_like_svg

    rng = random.Random(7)
    path.write_text("".join(json.dumps(model_like_svg(rng)) + "\n" for _ in range(count)), encoding="utf-8")
    return str(path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1000, help="rollouts per measurement")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--latency", type=float, default=0.2, help="simulated policy and judge latency (s)")
    parser.add_argument(
        "--workers",
        type=int,
        nargs="+",
        default=[1],
        help="engine processes per run to measure (1: the engine in this process)",
    )
    parser.add_argument(
        "--simulator-cores",
        type=int,
        default=0,
        metavar="K",
        help="give the simulator K cores of its own and the engine (its renders, its workers) the "
        "others, as when the model and the judge run elsewhere; the unavoidable and the bound then "
        "count the engine's cores only (default 0: everything shares every core)",
    )
    parser.add_argument(
        "--svgs",
        choices=("simulator", "model-like"),
        default="simulator",
        help="what the policy draws: the simulator's small SVGs (≈0.9 kB, 2 – 3 ms of render CPU) "
        "or bench/render.py's model-like corpus (50 – 300 elements, ≈40 ms each), as a model's "
        "drawings cost in real use (default simulator)",
    )
    args = parser.parse_args()
    tmp_dir = tempfile.TemporaryDirectory()
    svg_file = ""
    if args.svgs == "model-like":
        svg_file = write_model_like_svgs(Path(tmp_dir.name) / "svgs.jsonl", min(args.n, 200))
    proc, url = start_simulator(args.latency, svg_file=svg_file)
    try:
        with tmp_dir as tmp:
            cores = usable_cpus()  # what the render pool sizes itself to
            if args.simulator_cores:
                every = sorted(os.sched_getaffinity(0))
                if not 0 < args.simulator_cores < len(every):
                    raise SystemExit(f"--simulator-cores: 1 to {len(every) - 1} on this machine")
                os.sched_setaffinity(proc.pid, every[: args.simulator_cores])
                os.sched_setaffinity(0, every[args.simulator_cores :])  # render workers and engine workers inherit it
                cores = len(every) - args.simulator_cores
                print(
                    f"the simulator on core(s) {every[: args.simulator_cores]}, the engine on "
                    f"{every[args.simulator_cores :]}"
                )
            factory = loop_factory()
            print(
                f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}, {cores} CPUs, event loop "
                f"{factory.__module__.partition('.')[0] if factory else 'asyncio'} (svgagent eval's)"
            )
            print(
                f"{'rollouts':>8} {'conc':>5} {'wall s':>8} {'ideal s':>8} {'ratio':>6} {'unavoid. s':>10} "
                f"{'ratio':>6} {'bound s':>8} {'ratio':>6} {'engine ms/r':>11} {'render ms/r':>11} {'sim ms/r':>9}"
            )
            figures: dict[str, float] = {}
            render_per_rollout: dict[int, float] = {}
            peak_kb_of_runs = 0
            for c in args.concurrency:
                for w in args.workers:
                    # (the corpus's SVGs are up to ≈45 kB: a token limit that lets every one of them through)
                    r = run(one_run(url, args.n, c, Path(tmp), proc.pid, w, 16384 if svg_file else 4096))
                    peak_kb_of_runs = max(peak_kb_of_runs, r["peak_kb"])
                    n = r["n"]
                    ideal = math.ceil(n / c) * 2 * args.latency
                    if w == 1:
                        render_per_rollout[c] = r["render_idle"] / n
                    # what no engine can beat: the latency ideal, or rendering those SVGs on every core (their render
                    # CPU in an idle pool after the run)
                    render = render_per_rollout.get(c, math.nan) * n
                    unavoidable = max(ideal, render / cores)
                    # the targets are for 1,000 rollouts: a longer run's figures carry their size
                    tag = (
                        f"C={c}"
                        + (f", {w} workers" if w > 1 else "")
                        + (f", {n} rollouts" if n != 1000 else "")
                        + (", model-like SVGs" if svg_file else "")
                        + (f", simulator on {args.simulator_cores} core(s) of its own" if args.simulator_cores else "")
                    )
                    engine_ms = 1000 * (r["cpu"] + r["workers_cpu"]) / n
                    # all of the run's CPU: workers' figures include their renders, the one engine's do not
                    everything = r["cpu"] + r["workers_cpu"] + (r["render"] if w == 1 else 0.0)
                    everything += 0.0 if args.simulator_cores else r["sim"]  # on the engine's cores, or its own
                    # policy and judge have limits of their own (up to 2C calls in flight): the latency bound is
                    # ceil(N/C) policy latencies and one judge latency, which the ideal is above
                    pipelined = math.ceil(n / c) * args.latency + args.latency
                    bound = max(pipelined, 2 * args.latency + render / cores, everything / cores)
                    if w == 1:
                        note = (
                            f"; loop busy {r['loop'] / r['wall']:.0%}; "
                            f"renders {1000 * r['render'] / n:.2f} ms/r during the run"
                        )
                    else:
                        note = " (engine ms/r: all workers, renders included)"
                    print(
                        f"{n:>8} {c:>5} {r['wall']:>8.2f} {ideal:>8.2f} {r['wall'] / ideal:>6.2f} "
                        f"{unavoidable:>10.2f} {r['wall'] / unavoidable:>6.2f} {bound:>8.2f} "
                        f"{r['wall'] / bound:>6.2f} "
                        f"{engine_ms:>11.2f} {1000 * render / n:>11.2f} {1000 * r['sim'] / n:>9.2f}  {tag}{note}"
                    )
                    figures[f"engine wall/ideal, {tag}"] = round(r["wall"] / ideal, 2)
                    figures[f"engine wall/unavoidable, {tag}"] = round(r["wall"] / unavoidable, 2)
                    figures[f"engine wall/this machine's bound, {tag}"] = round(r["wall"] / bound, 2)
                    if w == 1:
                        figures[f"engine CPU ms/rollout, {tag}"] = round(1000 * r["cpu"] / n, 2)
                        figures[f"render CPU ms/rollout, {tag}"] = round(1000 * render / n, 2)
                        figures[f"engine loop busy share, {tag}"] = round(r["loop"] / r["wall"], 2)
            print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        peak_mb = peak_kb_of_runs / 1024  # the highest at the end of a run, before its SVGs were rendered again
        print(f"peak RSS of the engine process: {peak_mb:.0f} MB")
        figures[f"engine peak RSS MB, {args.n} rollouts"] = round(peak_mb)
        report(figures)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
