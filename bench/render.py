"""Benchmark the SVG renderer on model-like SVGs: in-process latency and pool throughput.

    .venv/bin/python bench/render.py [--n 200] [--simple 1000] [--workers N] [--seed 7]

Generates (seeded) SVGs like those a model writes for a prompt: 50-300 elements mixing rects, circles, ellipses,
bezier paths, polygons, lines, gradients, groups with transforms, opacity and text. Prints p50/p95 render time per
SVG in this process, throughput through :class:`Renderer` (worker processes), and the pool / single-process ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import time

from _report import report
from svgagent.core.scoring.errors import RenderError
from svgagent.core.scoring.render import Renderer, render_svg_to_png

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
            parts.append(f'<linearGradient id="g{i}" x1="0" y1="0" x2="{rng.random():.2f}" y2="1">{stops}'
                         "</linearGradient>")
        else:
            parts.append(f'<radialGradient id="g{i}" cx="50%" cy="50%" r="{rng.randint(30, 70)}%">{stops}'
                         "</radialGradient>")
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
        return (f'<rect x="{x:.1f}" y="{y:.1f}" width="{rng.uniform(2, width / 3):.1f}" '
                f'height="{rng.uniform(2, height / 3):.1f}" rx="{rng.choice([0, 0, 3, 8])}" {paint}/>')
    if kind == "circle":
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{rng.uniform(1, width / 8):.1f}" {paint}/>'
    if kind == "ellipse":
        return (f'<ellipse cx="{x:.1f}" cy="{y:.1f}" rx="{rng.uniform(2, width / 6):.1f}" '
                f'ry="{rng.uniform(2, height / 6):.1f}" {paint}/>')
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
        return (f'<line x1="{x:.1f}" y1="{y:.1f}" x2="{rng.uniform(0, width):.1f}" y2="{rng.uniform(0, height):.1f}" '
                f'stroke="{_colour(rng)}" stroke-width="{rng.uniform(1, 5):.1f}" stroke-linecap="round"/>')
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-family="sans-serif" font-size="{rng.randint(8, 28)}" '
            f'fill="{_colour(rng)}">{" ".join(rng.sample(WORDS, rng.randint(1, 3)))}</text>')


def model_like_svg(rng: random.Random) -> str:
    width, height = rng.choice([(512, 512), (800, 600), (400, 300), (1024, 768), (300, 500)])
    gradients = rng.randint(0, 4)
    elements = [_element(rng, width, height, gradients) for _ in range(rng.randint(50, 300))]
    groups, start = [], 0
    while start < len(elements):
        size = rng.randint(5, 40)
        transform = (f' transform="translate({rng.uniform(-20, 20):.1f},{rng.uniform(-20, 20):.1f}) '
                     f'rotate({rng.uniform(-10, 10):.1f})"') if rng.random() < 0.5 else ""
        groups.append(f"<g{transform}>" + "".join(elements[start : start + size]) + "</g>")
        start += size
    size_attrs = f'width="{width}" height="{height}"' if rng.random() < 0.7 else ""
    return (f'<svg xmlns="http://www.w3.org/2000/svg" {size_attrs} viewBox="0 0 {width} {height}">'
            f'<rect width="100%" height="100%" fill="{_colour(rng)}"/>{_gradients(rng, gradients)}'
            + "".join(groups) + "</svg>")


def simple_svg(i: int) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100"><rect x="10" y="10" width="60" '
            f'height="40" fill="#{i * 2654435761 % 0xFFFFFF:06x}"/><circle cx="70" cy="70" r="20"/></svg>')


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def bench_in_process(svgs: list[str]) -> tuple[list[float], float, int, int]:
    render_svg_to_png(svgs[0])  # imports and font cache
    times, png_bytes, failures = [], 0, 0
    started = time.perf_counter()
    for svg in svgs:
        t0 = time.perf_counter()
        try:
            png_bytes += len(render_svg_to_png(svg))
        except RenderError:
            failures += 1
        times.append(time.perf_counter() - t0)
    return times, time.perf_counter() - started, png_bytes, failures


async def bench_pool(svgs: list[str], workers: int | None) -> tuple[float, int, float]:
    started = time.perf_counter()
    async with Renderer(workers=workers) as pool:
        await asyncio.gather(*(pool.render(svg, size=16) for svg in svgs[: pool.workers * 2]))
        startup = time.perf_counter() - started
        started = time.perf_counter()
        results = await asyncio.gather(*(pool.render(svg) for svg in svgs), return_exceptions=True)
        elapsed = time.perf_counter() - started
    failures = sum(isinstance(result, BaseException) for result in results)
    return elapsed, failures, startup


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200, help="model-like SVGs to render (default 200)")
    parser.add_argument("--simple", type=int, default=1000, help="simple SVGs for the pool throughput (default 1000)")
    parser.add_argument("--workers", type=int, default=None, help="pool size (default: CPU count)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    rng = random.Random(args.seed)
    svgs = [model_like_svg(rng) for _ in range(args.n)]
    sizes = [len(svg) for svg in svgs]
    print(f"corpus: {args.n} model-like SVGs, {statistics.median(sizes) / 1000:.1f} kB median, "
          f"output 512 px longest side; machine: {os.cpu_count()} CPUs")

    times, total, png_bytes, failures = bench_in_process(svgs)
    single = args.n / total
    print(f"in-process : p50 {percentile(times, 0.5) * 1000:.1f} ms  p95 {percentile(times, 0.95) * 1000:.1f} ms  "
          f"mean {statistics.fmean(times) * 1000:.1f} ms  -> {single:.0f} renders/s "
          f"(avg PNG {png_bytes / max(1, args.n - failures) / 1000:.1f} kB, {failures} failed)")

    elapsed, failures, startup = asyncio.run(bench_pool(svgs, args.workers))
    pooled = args.n / elapsed
    workers = args.workers or os.cpu_count() or 1
    print(f"pool ({workers} workers): {pooled:.0f} renders/s ({args.n} in {elapsed:.2f} s, {failures} failed; "
          f"start-up {startup:.2f} s)  ratio pool/single = {pooled / single:.2f}")

    if args.simple:
        simple = [simple_svg(i) for i in range(args.simple)]
        elapsed, failures, _ = asyncio.run(bench_pool(simple, args.workers))
        print(f"pool, simple SVGs: {args.simple} in {elapsed:.2f} s = {args.simple / elapsed:.0f} renders/s "
              f"({failures} failed)")
    report({"render p50 ms (model-like SVG)": round(percentile(times, 0.5) * 1000, 1),
            "render p95 ms (model-like SVG)": round(percentile(times, 0.95) * 1000, 1),
            "render pool throughput / single process": round(pooled / single, 2)})


if __name__ == "__main__":
    main()
