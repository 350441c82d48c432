"""Benchmark the SVG renderer on model-like SVGs: the sandbox's cost per SVG against plain in-process cairosvg.

    .venv/bin/python bench/render.py [--n 200] [--simple 1000] [--workers N] [--seed 7]

Generates (seeded) SVGs like those a model writes for a prompt: 50-300 elements mixing rects, circles, ellipses,
bezier paths, polygons, lines, gradients, groups with transforms, opacity and text. Prints, in one run:

- time per SVG (wall and CPU) two ways, each SVG rendered both ways back to back (in turn which goes first): plain
  ``cairosvg.svg2png`` in this process with the renderer's sizing and white background, and the sandboxed renderer
  (a ``Renderer`` of one worker process: input checks, guard, inline-only fetcher, cairosvg, the pipe round trip;
  CPU counted in this process and in the worker). Sandboxed / plain is the overhead of the sandbox. (This process
  never renders through ``render_svg_to_png``, so its cairosvg stays as it ships.)
- whether the pictures are the same (pixels decoded, PSNR; the renderer's PNG is cairosvg's own);
- the worker pool's throughput on the corpus and on simple SVGs, and its workers' CPU per SVG.

Runs on any svgagent checkout (it uses only ``Renderer``, ``intrinsic_size`` and ``fit_longest_side``), so the same script measures an older renderer side by side.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import math
import os
import random
import statistics
import sys
import time
import xml.etree.ElementTree as ET

from _report import cpu_seconds, report, warm_pool

from svgagent.core.scoring.errors import RenderError
from svgagent.core.scoring.render import Renderer, usable_cpus
from svgagent.core.scoring.render_worker import fit_longest_side, intrinsic_size

WORDS = ["sun", "tree", "house", "cat", "river", "moon", "boat", "hill", "bird", "cloud", "star", "road"]
SIZE = 512


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


def plain_cairosvg(svg: str, size: int = SIZE) -> bytes:
    """``cairosvg.svg2png`` with the renderer's sizing (the root's size, longest side ``size``) on white."""
    import cairosvg

    root = ET.fromstring(svg)
    width, height = intrinsic_size(root.get("width"), root.get("height"), root.get("viewBox"))
    out_w, out_h = fit_longest_side(width, height, size)
    return cairosvg.svg2png(
        bytestring=svg.encode(),
        parent_width=width,
        parent_height=height,
        output_width=out_w,
        output_height=out_h,
        background_color="white",
    )


def _pixels(png: bytes):
    from PIL import Image

    return Image.open(io.BytesIO(png)).convert("RGB")


def _squared_error(a: bytes, b: bytes) -> tuple[float, int]:
    """(sum of squared channel differences, channel values compared) of two PNGs of the same size."""
    from PIL import ImageChops

    histogram = ImageChops.difference(_pixels(a), _pixels(b)).histogram()
    total = sum(histogram)
    return sum((level % 256) ** 2 * count for level, count in enumerate(histogram)), total


class _Way:
    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu = 0.0

    def summary(self) -> str:
        return (
            f"wall p50 {percentile(self.wall, 0.5) * 1000:6.1f} ms  p95 {percentile(self.wall, 0.95) * 1000:6.1f} ms"
            f"  mean {statistics.fmean(self.wall) * 1000:6.1f} ms;  CPU {self.cpu / len(self.wall) * 1000:6.1f} ms"
        )


def bench_both_ways(svgs: list[str]) -> dict[str, object]:
    """Each SVG plain and sandboxed, back to back, in turn which goes first."""
    ways = {"plain": _Way(), "sandboxed": _Way()}
    with Renderer(workers=1, size=SIZE) as pool:
        pool.render_sync(svgs[0])  # the worker booted, its imports and font cache warm
        (worker,) = pool.worker_pids()
        plain_cairosvg(svgs[0])

        def sandboxed(svg: str) -> bytes:
            worker_cpu = cpu_seconds(worker)
            png = pool.render_sync(svg)
            ways["sandboxed"].cpu += cpu_seconds(worker) - worker_cpu  # (clock ticks: exact over many SVGs)
            return png

        calls = {"plain": plain_cairosvg, "sandboxed": sandboxed}
        order = list(calls)
        squared, compared, identical, failures = 0.0, 0, 0, 0
        for index, svg in enumerate(svgs):
            pngs: dict[str, bytes | None] = {}
            for name in order[index % 2 :] + order[: index % 2]:
                wall, cpu = time.perf_counter(), time.process_time()
                try:
                    pngs[name] = calls[name](svg)
                except RenderError:
                    pngs[name] = None
                ways[name].wall.append(time.perf_counter() - wall)
                ways[name].cpu += time.process_time() - cpu
            if pngs["sandboxed"] is None:
                failures += 1
                continue
            error, count = _squared_error(pngs["sandboxed"], pngs["plain"])
            squared, compared = squared + error, compared + count
            identical += error == 0
        if pool.worker_pids() != [worker]:
            print("warning: the worker was replaced during the run: its CPU figure is incomplete")
    mse = squared / max(1, compared)
    return {
        **ways,
        "identical": identical,
        "failures": failures,
        "psnr": 10 * math.log10(255 * 255 / mse) if mse else math.inf,
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200, help="model-like SVGs to render (default 200)")
    parser.add_argument("--simple", type=int, default=1000, help="simple SVGs for the pool throughput (default 1000)")
    parser.add_argument("--workers", type=int, default=None, help="pool size (default: the CPUs this process may use)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    rng = random.Random(args.seed)
    svgs = [model_like_svg(rng) for _ in range(args.n)]
    sizes = [len(svg) for svg in svgs]
    print(
        f"corpus: {args.n} model-like SVGs, {statistics.median(sizes) / 1000:.1f} kB median, "
        f"output {SIZE} px longest side; machine: {os.cpu_count()} CPUs, load average "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}; renderer from {sys.modules[Renderer.__module__].__file__}"
    )

    r = bench_both_ways(svgs)
    plain, sandboxed = r["plain"], r["sandboxed"]
    print(f"plain cairosvg.svg2png, in process:  {plain.summary()}")
    print(f"sandboxed renderer (1 worker):       {sandboxed.summary()} (this process + the worker)")
    wall_ratio = statistics.fmean(sandboxed.wall) / statistics.fmean(plain.wall)
    cpu_ratio = sandboxed.cpu / plain.cpu
    overhead_ms = (statistics.fmean(sandboxed.wall) - statistics.fmean(plain.wall)) * 1000
    print(
        f"sandboxed / plain: wall {wall_ratio:.3f} ({overhead_ms:+.1f} ms per SVG), CPU {cpu_ratio:.3f}; "
        f"pictures identical to plain cairosvg's: {r['identical']} of {args.n - r['failures']} "
        f"(PSNR {r['psnr']:.1f} dB; {r['failures']} refused)"
    )

    elapsed, failures, startup, worker_cpu = asyncio.run(bench_pool(svgs, args.workers))
    pooled = args.n / elapsed
    workers = args.workers or usable_cpus()  # what the pool sizes itself to (Renderer)
    print(
        f"pool ({workers} workers): {pooled:.0f} renders/s ({args.n} in {elapsed:.2f} s, {failures} failed; "
        f"start-up {startup:.2f} s); workers' CPU {worker_cpu / args.n * 1000:.1f} ms per SVG"
    )
    figures = {
        "render wall ms/SVG, plain cairosvg in process": round(statistics.fmean(plain.wall) * 1000, 1),
        "render wall ms/SVG, sandboxed renderer": round(statistics.fmean(sandboxed.wall) * 1000, 1),
        "render wall sandboxed / plain cairosvg": round(wall_ratio, 3),
        "render CPU sandboxed / plain cairosvg": round(cpu_ratio, 3),
        "render PSNR dB vs plain cairosvg": round(r["psnr"], 1) if math.isfinite(r["psnr"]) else "inf",
        "render p95 ms (model-like SVG), sandboxed": round(percentile(sandboxed.wall, 0.95) * 1000, 1),
        "render pool: workers' CPU ms/SVG": round(worker_cpu / args.n * 1000, 1),
    }
    if args.simple:
        simple = [simple_svg(i) for i in range(args.simple)]
        elapsed, failures, _, _ = asyncio.run(bench_pool(simple, args.workers))
        print(
            f"pool, simple SVGs: {args.simple} in {elapsed:.2f} s = {args.simple / elapsed:.0f} renders/s "
            f"({failures} failed)"
        )
        figures["render pool: simple SVGs/s"] = round(args.simple / elapsed)
    report(figures)


if __name__ == "__main__":
    main()
