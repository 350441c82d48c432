"""Benchmark against Eval Protocol's SVG-agent quickstart pipeline: a whole `svgagent eval` process on SVGBench rows,
and Eval Protocol's own quickstart evaluator on the same rows.

    .venv/bin/python bench/quickstart.py [--dataset /work/shared/data/svgbench/questions.json] [--rows 50]
        [--latency 0.5] [--concurrency 16] [--repeat 3] [--ep-repeat 1] [--no-ep] [--no-chromium]

The quickstart's setting: SVGBench rows, a policy and a judge that each take ``--latency`` seconds (the simulator in
its own process stands in for both), ``--concurrency`` rollouts in flight. The ideal is ceil(rows / C) x 2 x latency;
the figure is the wall time of the whole process (spawn to exit: start-up, store, render pool, the run, the summary)
over it, median of ``--repeat`` runs, with the process tree's CPU.

Then Eval Protocol's pipeline on the same rows, simulator and concurrency (bench/ep_pipeline.py: its shipped
evaluator under pytest, Selenium + headless Chromium, litellm judge, `svgagent serve` as the rollout server): the wall
of its pytest process, median of ``--ep-repeat`` runs, and "EP pipeline wall / svgagent wall". It needs Debian's
``chromium`` and ``chromium-driver`` (without them: one line saying so, exit 1; ``--no-ep`` skips it).

As context, the render time per SVG of the SVGs that run produced: cairosvg in svgagent's sandboxed worker pool,
and — when Debian's ``chromium`` is installed — a fresh headless Chromium per SVG as the quickstart does it (there
through Selenium; here its command line with the same flags, page and window size), p50 and p95 of each.
The dataset is read where it lies; nothing of it is copied into the repository.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _report import compile_sources, report
from engine import start_simulator
from ep_pipeline import eval_protocol_venv, missing_browser, run_ep_pipeline, selenium_python
from render import percentile

from svgagent.core.scoring.render import Renderer
from svgagent.core.store.run_store import Store

DEFAULT_DATASET = "/work/shared/data/svgbench/questions.json"
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--disable-web-security",
    "--force-device-scale-factor=1",
    "--no-first-run",
    "--disable-extensions",
)


def svgagent() -> list[str]:
    script = Path(sys.executable).with_name("svgagent")
    return [str(script)] if script.exists() else [sys.executable, "-m", "svgagent.tui.cli.main"]


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def eval_once(url: str, args: argparse.Namespace, root: Path, index: int) -> tuple[float, float, Path, float]:
    """(wall seconds, CPU seconds of the process and its render workers, store path, seconds the run itself took
    by its own clock) of one `svgagent eval`."""
    home = root / f"home-{index}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SVGAGENT_", "FIREWORKS_", "OPENAI_"))}
    env.update(
        FIREWORKS_API_KEY="fw-bench-not-a-key",
        OPENAI_API_KEY="oa-bench-not-a-key",
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_DATA_HOME=str(home / "data"),
    )
    store = root / f"quickstart-{index}.db"
    command = [
        *svgagent(),
        "eval",
        "--dataset",
        args.dataset,
        "--rows",
        str(args.rows),
        "--base-url",
        url,
        "--judge-base-url",
        url,
        "--model",
        "simulated-policy",
        "--judge-model",
        "simulated-judge",
        "--concurrency",
        str(args.concurrency),
        "--judge-concurrency",
        str(args.concurrency),
        "--store",
        str(store),
        "--json",
    ]
    cpu0 = children_cpu()
    t0 = time.perf_counter()
    proc = subprocess.run(command, env=env, cwd=root, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        raise SystemExit(f"svgagent eval exited {proc.returncode}: {proc.stderr[-1500:]}")
    duration = json.loads(proc.stdout.strip().splitlines()[-1])["duration_s"]
    return wall, children_cpu() - cpu0, store, duration


def stored_svgs(store_path: Path) -> list[str]:
    with Store(store_path, readonly=True) as store:
        (run,) = store.list_runs()
        return [r.svg for r in store.list_rollouts(run.run_id, heavy=True) if r.svg]


async def cairosvg_times(svgs: list[str]) -> list[float]:
    """Seconds per render through the worker pool, one render at a time (latency, not throughput)."""
    times = []
    async with Renderer() as pool:
        await pool.render(svgs[0])  # workers started and warm
        for svg in svgs:
            t0 = time.perf_counter()
            try:
                await pool.render(svg)
            except Exception:  # noqa: BLE001 - a refused SVG still took its time
                pass
            times.append(time.perf_counter() - t0)
    return times


def _svg_size(svg: str) -> tuple[int, int]:
    """The page size the quickstart gives an SVG: its width/height, else its viewBox, else 512 x 512."""

    def number(name: str) -> float | None:
        match = re.search(rf'\b{name}\s*=\s*["\']\s*([\d.]+)\s*(px)?\s*["\']', svg[:2000])
        return float(match.group(1)) if match else None

    width, height = number("width"), number("height")
    if not (width and height):
        box = re.search(r'viewBox\s*=\s*["\']\s*[-\d.]+[\s,]+[-\d.]+[\s,]+([\d.]+)[\s,]+([\d.]+)', svg[:2000])
        width, height = (float(box.group(1)), float(box.group(2))) if box else (512.0, 512.0)
    return max(1, min(4096, round(width))), max(1, min(4096, round(height)))


def chromium_times(binary: str, svgs: list[str], root: Path) -> tuple[list[float], float]:
    """Seconds per SVG for a fresh headless Chromium screenshot of a page holding it, and their CPU in total."""
    times = []
    cpu0 = children_cpu()
    profile = root / "chromium-profile"
    for index, svg in enumerate(svgs):
        width, height = _svg_size(svg)
        page = root / f"page-{index}.html"
        page.write_text(
            f"<!DOCTYPE html><html><head><style>*{{margin:0;padding:0}}body{{background:white;"
            f"width:{width}px;height:{height}px;overflow:hidden}}svg{{display:block;width:{width}px "
            f"!important;height:{height}px !important}}</style></head><body>{svg}</body></html>"
        )
        shot = root / f"shot-{index}.png"
        t0 = time.perf_counter()
        subprocess.run(
            [
                binary,
                *CHROMIUM_FLAGS,
                f"--user-data-dir={profile}",
                f"--window-size={width},{height}",
                f"--screenshot={shot}",
                page.as_uri(),
            ],
            capture_output=True,
            timeout=120,
        )
        times.append(time.perf_counter() - t0)
    return times, children_cpu() - cpu0


def ep_figures(
    python: str, url: str, args: argparse.Namespace, root: Path, runs: list[tuple[float, float, Path, float]]
) -> dict[str, float]:
    """Eval Protocol's quickstart pipeline on the rows `svgagent eval` ran (``runs``), and the two side by side."""
    load0 = os.getloadavg()[0]
    eps = [
        run_ep_pipeline(python, url, args.dataset, args.rows, args.concurrency, root, i) for i in range(args.ep_repeat)
    ]
    wall = statistics.median(ep.wall for ep in eps)
    ours = statistics.median(run[0] for run in runs)
    alone = statistics.median(ep.alone for ep in eps)
    ours_alone = statistics.median(run[3] for run in runs)
    print(
        f"Eval Protocol's quickstart pipeline, the same {args.rows} rows, C={args.concurrency}: wall "
        f"{', '.join(f'{ep.wall:.2f}' for ep in eps)} s: start-up (imports, collection) "
        f"{', '.join(f'{ep.startup:.2f}' for ep in eps)} s, its evaluation_test alone "
        f"{', '.join(f'{ep.alone:.2f}' for ep in eps)} s, the rest is exit; CPU (pytest, Chromium, rollout "
        f"server, gateway) {', '.join(f'{ep.cpu:.1f}' for ep in eps)} s; rows back {eps[-1].rows}, policy calls {eps[-1].policy}, "
        f"judge calls {eps[-1].judged} (load average {load0:.2f} at its start, {os.getloadavg()[0]:.2f} at its end)"
    )
    print(
        f"EP pipeline wall / svgagent wall = {wall:.2f} / {ours:.2f} = {wall / ours:.1f}; "
        f"the runs alone {alone:.2f} / {ours_alone:.2f} = {alone / ours_alone:.1f}"
    )
    return {
        "quickstart EP pipeline wall s": round(wall, 2),
        "quickstart EP pipeline run alone s": round(alone, 2),
        "quickstart EP pipeline CPU s": round(statistics.median(ep.cpu for ep in eps), 1),
        "quickstart EP pipeline wall/svgagent wall": round(wall / ours, 1),
        "quickstart EP pipeline run alone/svgagent run alone": round(alone / ours_alone, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default=DEFAULT_DATASET, help="an SVGBench questions.json (read in place)")
    parser.add_argument("--rows", type=int, default=50)
    parser.add_argument("--latency", type=float, default=0.5, help="policy and judge latency, seconds each")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=3, help="`svgagent eval` runs (median)")
    parser.add_argument("--ep-repeat", type=int, default=1, help="Eval Protocol pipeline runs (median)")
    parser.add_argument("--no-ep", action="store_true", help="skip Eval Protocol's own pipeline")
    parser.add_argument("--no-chromium", action="store_true", help="skip the headless Chromium comparison")
    args = parser.parse_args()
    ep_python = ""
    if not args.no_ep:
        if missing := missing_browser():
            print(f"Eval Protocol's quickstart pipeline: {missing} (or pass --no-ep)")
            return 1
        ep_python = selenium_python(eval_protocol_venv())
    print(f"bytecode: {compile_sources()} stale svgagent modules compiled first (an installed svgagent has them)")
    if not Path(args.dataset).is_file():
        raise SystemExit(f"no SVGBench dataset at {args.dataset} (pass --dataset)")
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs")
    ideal = math.ceil(args.rows / args.concurrency) * 2 * args.latency
    proc, url = start_simulator(args.latency)
    figures: dict[str, float] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            runs = [eval_once(url, args, root, i) for i in range(args.repeat)]
            walls = [run[0] for run in runs]
            wall = statistics.median(walls)
            print(
                f"svgagent eval, {args.rows} SVGBench rows, {args.latency:g} s + {args.latency:g} s latency, "
                f"C={args.concurrency}: wall {', '.join(f'{w:.2f}' for w in walls)} s (ideal {ideal:.2f} s) -> "
                f"median / ideal = {wall / ideal:.2f}; CPU (process + render workers) "
                f"{', '.join(f'{run[1]:.2f}' for run in runs)} s; the run itself (its own clock) "
                f"{', '.join(f'{run[3]:.2f}' for run in runs)} s, the rest is start-up and exit"
            )
            figures.update(
                {
                    "quickstart eval wall s": round(wall, 2),
                    "quickstart ideal s": round(ideal, 2),
                    "quickstart wall/ideal": round(wall / ideal, 2),
                    "quickstart eval CPU s": round(statistics.median(run[1] for run in runs), 2),
                    "quickstart run alone s": round(statistics.median(run[3] for run in runs), 2),
                }
            )
            if ep_python:
                figures.update(ep_figures(ep_python, url, args, root, runs))
            svgs = stored_svgs(runs[-1][2])
            pool = asyncio.run(cairosvg_times(svgs))
            print(
                f"render, the run's {len(svgs)} SVGs: cairosvg in the worker pool p50 "
                f"{percentile(pool, 0.5) * 1000:.0f} ms, p95 {percentile(pool, 0.95) * 1000:.0f} ms"
            )
            figures["render p50 ms, cairosvg pool"] = round(percentile(pool, 0.5) * 1000, 1)
            binary = shutil.which("chromium") or shutil.which("chromium-browser")
            if binary and not args.no_chromium:
                chrome, cpu = chromium_times(binary, svgs, root)
                print(
                    f"render, the same SVGs: a fresh headless Chromium per SVG p50 "
                    f"{percentile(chrome, 0.5) * 1000:.0f} ms, p95 {percentile(chrome, 0.95) * 1000:.0f} ms "
                    f"(CPU {cpu / len(svgs) * 1000:.0f} ms per SVG)"
                )
                figures["render p50 ms, headless chromium"] = round(percentile(chrome, 0.5) * 1000, 1)
            elif not args.no_chromium:
                print("render: no chromium on PATH (apt-get install chromium) - the comparison is skipped")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    report(figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
