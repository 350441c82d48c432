"""Benchmark the SVG renderer on model-like SVGs: CPU per SVG against cairosvg's own walk, pixels, pool throughput.

    .venv/bin/python bench/render.py [--n 200] [--simple 1000] [--workers N] [--seed 7] [--callgrind N]

Generates (seeded) SVGs like those a model writes for a prompt: 50-300 elements mixing rects, circles, ellipses,
bezier paths, polygons, lines, gradients, groups with transforms, opacity and text. Prints:

- CPU per SVG (``time.process_time``) of the renderer's in-process core, and of the same pipeline drawn the way it
  was before the lean walk (cairosvg's own ``Surface.draw``, cairo's default antialiasing and curve tolerance,
  cairosvg's stylesheet matching, no up-front cost checks): each SVG is rendered both ways back to back, so the
  ratio is measured in one run under the same load;
- how far the pictures are apart (PSNR, share of channel values more than 8 / 64 levels apart);
- p50/p95 wall time per SVG in this process, the worker pool's throughput and its workers' CPU per SVG;
- with ``--callgrind N``: instructions per SVG (valgrind) both ways on the first N SVGs, immune to load.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import math
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time

from _report import cpu_seconds, report, warm_pool

from svgagent.core.scoring import render_draw
from svgagent.core.scoring.errors import RenderError
from svgagent.core.scoring.render import Renderer, render_svg_to_png, usable_cpus

WORDS = ["sun", "tree", "house", "cat", "river", "moon", "boat", "hill", "bird", "cloud", "star", "road"]


def _colour(rng: random.Random) -> str:
    return "#%02x%02x%02x" % (rng.randrange(256), rng.randrange(256), rng.randrange(256))


def _gradients(rng: random.Random, count: int) -> str:
    parts = []
    for i in range(count):
        stops = "".join(
            f'<stop offset="{offset}%" stop-color="{_colour(rng)}" stop-opacity="{rng.uniform(0.5, 1):.2f}"/>'
            for offset in sorted(rng.sample(range(0, 101), rng.randint(2, 4)))
        )
        if rng.random() < 0.5:
            parts.append(
                f'<linearGradient id="g{i}" x1="0" y1="0" x2="{rng.random():.2f}" y2="1">{stops}</linearGradient>'
            )
        else:
            parts.append(
                f'<radialGradient id="g{i}" cx="50%" cy="50%" r="{rng.randint(30, 70)}%">{stops}</radialGradient>'
            )
    return "<defs>" + "".join(parts) + "</defs>"


def _paint(rng: random.Random, gradients: int) -> str:
    fill = f"url(#g{rng.randrange(gradients)})" if gradients and rng.random() < 0.25 else _colour(rng)
    stroke = f' stroke="{_colour(rng)}" stroke-width="{rng.uniform(0.5, 4):.1f}"' if rng.random() < 0.4 else ""
    opacity = f' opacity="{rng.uniform(0.4, 1):.2f}"' if rng.random() < 0.2 else ""
    return f'fill="{fill}"{stroke}{opacity}'


def _element(rng: random.Random, width: int, height: int, gradients: int) -> str:
    x, y = rng.uniform(0, width), rng.uniform(0, height)
    paint = _paint(rng, gradients)
    kind = rng.choices(["rect", "circle", "ellipse", "path", "polygon", "line", "text"], [5, 5, 2, 5, 2, 2, 1])[0]
    if kind == "rect":
        return (
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{rng.uniform(2, width / 3):.1f}" '
            f'height="{rng.uniform(2, height / 3):.1f}" rx="{rng.choice([0, 0, 3, 8])}" {paint}/>'
        )
    if kind == "circle":
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{rng.uniform(1, width / 8):.1f}" {paint}/>'
    if kind == "ellipse":
        return (
            f'<ellipse cx="{x:.1f}" cy="{y:.1f}" rx="{rng.uniform(2, width / 6):.1f}" '
            f'ry="{rng.uniform(2, height / 6):.1f}" {paint}/>'
        )
    if kind == "path":
        points = " ".join(
            f"C{rng.uniform(0, width):.1f},{rng.uniform(0, height):.1f} {rng.uniform(0, width):.1f},"
            f"{rng.uniform(0, height):.1f} {rng.uniform(0, width):.1f},{rng.uniform(0, height):.1f}"
            for _ in range(rng.randint(1, 5))
        )
        return f'<path d="M{x:.1f},{y:.1f} {points} Z" {paint}/>'
    if kind == "polygon":
        points = " ".join(f"{rng.uniform(0, width):.1f},{rng.uniform(0, height):.1f}" for _ in range(rng.randint(3, 7)))
        return f'<polygon points="{points}" {paint}/>'
    if kind == "line":
        return (
            f'<line x1="{x:.1f}" y1="{y:.1f}" x2="{rng.uniform(0, width):.1f}" y2="{rng.uniform(0, height):.1f}" '
            f'stroke="{_colour(rng)}" stroke-width="{rng.uniform(1, 5):.1f}" stroke-linecap="round"/>'
        )
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-family="sans-serif" font-size="{rng.randint(8, 28)}" '
        f'fill="{_colour(rng)}">{" ".join(rng.sample(WORDS, rng.randint(1, 3)))}</text>'
    )


def model_like_svg(rng: random.Random) -> str:
    width, height = rng.choice([(512, 512), (800, 600), (400, 300), (1024, 768), (300, 500)])
    gradients = rng.randint(0, 4)
    elements = [_element(rng, width, height, gradients) for _ in range(rng.randint(50, 300))]
    groups, start = [], 0
    while start < len(elements):
        size = rng.randint(5, 40)
        transform = (
            (
                f' transform="translate({rng.uniform(-20, 20):.1f},{rng.uniform(-20, 20):.1f}) '
                f'rotate({rng.uniform(-10, 10):.1f})"'
            )
            if rng.random() < 0.5
            else ""
        )
        groups.append(f"<g{transform}>" + "".join(elements[start : start + size]) + "</g>")
        start += size
    size_attrs = f'width="{width}" height="{height}"' if rng.random() < 0.7 else ""
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" {size_attrs} viewBox="0 0 {width} {height}">'
        f'<rect width="100%" height="100%" fill="{_colour(rng)}"/>{_gradients(rng, gradients)}'
        + "".join(groups)
        + "</svg>"
    )


def simple_svg(i: int) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100"><rect x="10" y="10" width="60" '
        f'height="40" fill="#{i * 2654435761 % 0xFFFFFF:06x}"/><circle cx="70" cy="70" r="20"/></svg>'
    )


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def render_as_before(svg: str | bytes, size: int = 512) -> bytes:
    """The renderer's core as it was before the lean walk: cairosvg's tree and walk on the opaque surface, no cost
    checks, the PNG encoded as it was (rows joined one by one, zlib's level 1)."""
    with render_draw.cairosvg_as_shipped():
        return render_svg_to_png(
            svg,
            size,
            surface=render_draw.opaque_surface_class(),
            check_cost=False,
            fast_tree=False,
            encode=render_draw.surface_to_png_as_before,
        )


def _difference(a: bytes, b: bytes, counts: list[int]) -> None:
    from PIL import Image, ImageChops

    histogram = ImageChops.difference(
        Image.open(io.BytesIO(a)).convert("RGB"), Image.open(io.BytesIO(b)).convert("RGB")
    ).histogram()
    for level in range(256):
        counts[level] += histogram[level] + histogram[256 + level] + histogram[512 + level]


def bench_in_process(svgs: list[str]) -> dict[str, float]:
    """Each SVG rendered now and as before, back to back (in turn which goes first): CPU, wall times, pixel
    differences."""
    render_svg_to_png(svgs[0])  # imports and font cache
    render_as_before(svgs[0])
    cpu_now = cpu_before = 0.0
    times, png_bytes, failures = [], 0, 0
    counts = [0] * 256
    for index, svg in enumerate(svgs):
        if index % 2:  # every other SVG "before" first: the second of two renders finds the caches warm
            c0 = time.process_time()
            before = render_as_before(svg)
            cpu_before += time.process_time() - c0
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            png = render_svg_to_png(svg)
        except RenderError:
            failures += 1
            png = None
        times.append(time.perf_counter() - t0)
        cpu_now += time.process_time() - c0
        if not index % 2:
            c0 = time.process_time()
            before = render_as_before(svg)
            cpu_before += time.process_time() - c0
        if png is not None:
            png_bytes += len(png)
            _difference(png, before, counts)
    total = sum(counts)
    mse = sum(level * level * count for level, count in enumerate(counts)) / total
    return {
        "times": times,
        "png_bytes": png_bytes,
        "failures": failures,
        "cpu_now": cpu_now / len(svgs),
        "cpu_before": cpu_before / len(svgs),
        "psnr": 10 * math.log10(255 * 255 / mse) if mse else math.inf,
        "over8": sum(counts[9:]) / total,
        "over64": sum(counts[65:]) / total,
    }


async def bench_pool(svgs: list[str], workers: int | None) -> tuple[float, int, float, float]:
    """(wall, failures, start-up, CPU seconds the workers used) for rendering ``svgs`` through the pool."""
    started = time.perf_counter()
    async with Renderer(workers=workers) as pool:
        await warm_pool(pool)  # every worker booted (the pool grows only while renders queue)
        startup = time.perf_counter() - started
        pids = pool.worker_pids()
        cpu0 = sum(cpu_seconds(pid) for pid in pids)
        started = time.perf_counter()
        results = await asyncio.gather(*(pool.render(svg) for svg in svgs), return_exceptions=True)
        elapsed = time.perf_counter() - started
        same = pool.worker_pids() == pids  # no worker was replaced, so the counters cover every render
        worker_cpu = sum(cpu_seconds(pid) for pid in pids) - cpu0 if same else math.nan
    failures = sum(isinstance(result, BaseException) for result in results)
    return elapsed, failures, startup, worker_cpu


# a child process that renders the corpus one way (argv[1]: now / before), after one render to warm up
_CHILD_PREAMBLE = """
import sys, time
sys.path.insert(0, {bench!r})
import random
from render import model_like_svg, render_as_before
from svgagent.core.scoring.render import render_svg_to_png
rng = random.Random({seed})
svgs = [model_like_svg(rng) for _ in range({n})]
render = render_svg_to_png if sys.argv[1] == "now" else render_as_before
render(svgs[0])
"""
_CALLGRIND_SCRIPT = (
    _CHILD_PREAMBLE
    + """
for svg in svgs[: int(sys.argv[2])]:
    render(svg)
"""
)
_CHILD_SCRIPT = (
    _CHILD_PREAMBLE
    + """
cpu = time.process_time()
for svg in svgs:
    render(svg)
print((time.process_time() - cpu) / len(svgs))
"""
)


def cpu_per_svg_in_workers(n: int, seed: int, rounds: int = 2) -> dict[str, float]:
    """CPU per SVG of each way in a fresh process with a render worker's environment as it was for that way: the
    old walk with the old environment (no WORKER_MALLOC), the renderer with today's. Rounds alternate the two;
    the median of each. The in-process figure compares the walks under one allocator; this one, the two renders
    as the pool ran them."""
    from svgagent.core.scoring.render import WORKER_MALLOC, worker_environment

    script = _CHILD_SCRIPT.format(bench=os.path.dirname(os.path.abspath(__file__)), seed=seed, n=max(n, 1))
    now_env = {**worker_environment(), "PYTHONPATH": os.pathsep.join(sys.path)}
    before_env = {k: v for k, v in now_env.items() if k not in WORKER_MALLOC}
    seconds: dict[str, list[float]] = {"before": [], "now": []}
    for _ in range(rounds):
        for way, env in (("before", before_env), ("now", now_env)):
            out = subprocess.run(
                [sys.executable, "-c", script, way], env=env, capture_output=True, text=True, check=True
            )
            seconds[way].append(float(out.stdout.strip().splitlines()[-1]))
    return {way: statistics.median(values) for way, values in seconds.items()}


def instructions_per_svg(n: int, seed: int) -> dict[str, float]:
    """Instructions per SVG both ways under valgrind's callgrind: (run with n renders) - (run with none), / n."""
    script = _CALLGRIND_SCRIPT.format(bench=os.path.dirname(os.path.abspath(__file__)), seed=seed, n=max(n, 1))
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for way in ("before", "now"):
            counts = []
            for renders in (0, n):
                proc = subprocess.run(
                    [
                        "valgrind",
                        "--tool=callgrind",
                        f"--callgrind-out-file={tmp}/cg.out",
                        sys.executable,
                        "-c",
                        script,
                        way,
                        str(renders),
                    ],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                counts.append(int(re.search(r"Collected : (\d+)", proc.stderr).group(1)))
            out[way] = (counts[1] - counts[0]) / n
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200, help="model-like SVGs to render (default 200)")
    parser.add_argument("--simple", type=int, default=1000, help="simple SVGs for the pool throughput (default 1000)")
    parser.add_argument("--workers", type=int, default=None, help="pool size (default: CPU count)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--callgrind",
        type=int,
        default=0,
        metavar="N",
        help="also count instructions per SVG under valgrind on N SVGs (slow: minutes)",
    )
    args = parser.parse_args()

    rng = random.Random(args.seed)
    svgs = [model_like_svg(rng) for _ in range(args.n)]
    sizes = [len(svg) for svg in svgs]
    print(
        f"corpus: {args.n} model-like SVGs, {statistics.median(sizes) / 1000:.1f} kB median, "
        f"output 512 px longest side; machine: {os.cpu_count()} CPUs, load average "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )

    r = bench_in_process(svgs)
    times = r["times"]
    single = 1 / statistics.fmean(times)
    ratio = r["cpu_now"] / r["cpu_before"]
    print(
        f"in-process CPU per SVG: {r['cpu_now'] * 1000:.1f} ms now, {r['cpu_before'] * 1000:.1f} ms drawn as "
        f"before (cairosvg's walk)  ->  now / before = {ratio:.3f}"
    )
    print(
        f"pixels now vs before: PSNR {r['psnr']:.1f} dB, channel values > 8 apart {r['over8'] * 100:.2f} %, "
        f"> 64 apart {r['over64'] * 100:.3f} % (edges only: fast antialiasing, 0.25 px curve tolerance)"
    )
    print(
        f"in-process wall: p50 {percentile(times, 0.5) * 1000:.1f} ms  p95 {percentile(times, 0.95) * 1000:.1f} ms"
        f"  mean {statistics.fmean(times) * 1000:.1f} ms  -> {single:.0f} renders/s "
        f"(avg PNG {r['png_bytes'] / max(1, args.n - r['failures']) / 1000:.1f} kB, {r['failures']} failed)"
    )

    workers_way = cpu_per_svg_in_workers(args.n, args.seed)
    worker_ratio = workers_way["now"] / workers_way["before"]
    print(
        f"CPU per SVG, each way in a fresh process with a render worker's environment of its time (median of 2 "
        f"alternating rounds): {workers_way['now'] * 1000:.1f} ms now, {workers_way['before'] * 1000:.1f} ms "
        f"before  ->  now / before = {worker_ratio:.3f}"
    )

    elapsed, failures, startup, worker_cpu = asyncio.run(bench_pool(svgs, args.workers))
    pooled = args.n / elapsed
    workers = args.workers or usable_cpus()  # what the pool sizes itself to (Renderer)
    print(
        f"pool ({workers} workers): {pooled:.0f} renders/s ({args.n} in {elapsed:.2f} s, {failures} failed; "
        f"start-up {startup:.2f} s)  ratio pool/single = {pooled / single:.2f}; workers' CPU "
        f"{worker_cpu / args.n * 1000:.1f} ms per SVG"
    )
    figures = {
        "render CPU ms/SVG now (in process)": round(r["cpu_now"] * 1000, 1),
        "render CPU ms/SVG before (cairosvg walk)": round(r["cpu_before"] * 1000, 1),
        "render CPU now / before": round(ratio, 3),
        "render CPU now / before, in a worker's environment": round(worker_ratio, 3),
        "render PSNR dB now vs before": round(r["psnr"], 1),
        "render p50 ms (model-like SVG)": round(percentile(times, 0.5) * 1000, 1),
        "render p95 ms (model-like SVG)": round(percentile(times, 0.95) * 1000, 1),
        "render pool throughput / single process": round(pooled / single, 2),
        "render pool: workers' CPU ms/SVG": round(worker_cpu / args.n * 1000, 1),
    }

    if args.simple:
        simple = [simple_svg(i) for i in range(args.simple)]
        elapsed, failures, _, _ = asyncio.run(bench_pool(simple, args.workers))
        print(
            f"pool, simple SVGs: {args.simple} in {elapsed:.2f} s = {args.simple / elapsed:.0f} renders/s "
            f"({failures} failed)"
        )
    if args.callgrind:
        counts = instructions_per_svg(args.callgrind, args.seed)
        print(
            f"instructions per SVG (callgrind, {args.callgrind} SVGs): {counts['now'] / 1e6:.0f} M now, "
            f"{counts['before'] / 1e6:.0f} M before -> now / before = {counts['now'] / counts['before']:.3f}"
        )
        figures["render instructions now / before"] = round(counts["now"] / counts["before"], 3)
    report(figures)


if __name__ == "__main__":
    main()
