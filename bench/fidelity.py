"""How faithfully each renderer draws what a browser shows: cairosvg (svgagent's default) and resvg against headless
Chromium (what Eval Protocol's quickstart evaluator and SVGBench screenshot), per SVG feature.

    .venv/bin/pip install resvg-py          # the benchmark's own extra (not a svgagent dependency)
    .venv/bin/python bench/fidelity.py [--corpus DIR] [--size own|N] [--threshold 0.02] [--tolerance 48] [--out DIR]

Without ``--corpus`` it renders the project's own corpus (bench/fidelity_corpus.py: gradients, text in several
fonts, transforms, clip paths, masks, filters, ``<style>`` rules, patterns, markers, ``use``, viewBox and aspect
cases, units and percentages, paint), each SVG under its feature. With ``--corpus DIR`` it renders every ``*.svg``
under DIR, each counted under every feature it uses (found by its tags and attributes: a folder of answers exported
with ``svgagent export --assets`` works). resvg runs in this process: point ``--corpus`` at files you trust.

Each SVG is drawn on the page the profiles ep-quickstart and svgbench use (``--size own``, the default: the size the
SVG gives itself) or with its longest side N px, by

- chromium: svgagent's ``--renderer chromium`` (the reference);
- cairosvg: svgagent's sandboxed cairosvg workers, as ``svgagent eval`` renders;
- resvg: ``resvg_py.svg_to_bytes`` on white, the root's width/height set to the page's (as the page's CSS does).

Two pictures differ when more than ``--threshold`` of their pixels differ by more than ``--tolerance`` (0-255) in a
channel (anti-aliasing and font hinting alone stay under it). Per feature it prints how many SVGs there are, and for
each renderer the share that differs from Chromium's picture, the mean absolute difference (0-100 %) and how many
it could not draw; then the SVGs that differ, and one ``RESULT`` line. ``--out DIR`` writes each SVG's pictures side
by side (chromium | cairosvg | resvg) for a look.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import re
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from _report import report
from fidelity_corpus import corpus
from PIL import Image, ImageChops

from svgagent.core.scoring.chromium import ChromiumRenderer
from svgagent.core.scoring.chromium_page import page_geometry
from svgagent.core.scoring.errors import ConfigError, RenderError
from svgagent.core.scoring.picture_size import OWN_SIZE
from svgagent.core.scoring.render import Renderer, usable_cpus

RENDERERS = ("cairosvg", "resvg")
FEATURE_PATTERNS = {
    "gradients": r"<(linear|radial)Gradient\b",
    "text": r"<text\b",
    "transforms": r"\btransform\s*[=:]",
    "clip paths": r"<clipPath\b|\bclip-path\s*[=:]",
    "masks": r"<mask\b|\bmask\s*[=:]",
    "filters": r"<filter\b|\bfilter\s*[=:]",
    "<style> rules": r"<style\b",
    "patterns": r"<pattern\b",
    "markers": r"<marker\b",
    "use": r"<use\b",
    "viewBox/aspect": r"\bpreserveAspectRatio\s*=|<svg\b(?![^>]*\bwidth\s*=)[^>]*\bviewBox\s*=",
    "units and %": r"=\s*[\"']-?[\d.]+\s*(%|mm|cm|in|pt|pc|em|ex)[\"']",
    "paint": r"rgba?\(|hsla?\(|currentColor|paint-order|mix-blend-mode|<foreignObject\b|\bopacity\s*[=:]",
}
_ROOT_TAG = re.compile(r"<svg\b[^>]*>", re.IGNORECASE)
_ROOT_SIZE = re.compile(r"""(?<![-\w:])(width|height)\s*=\s*("[^"]*"|'[^']*')""")


def detect_features(text: str) -> list[str]:
    found = [name for name, pattern in FEATURE_PATTERNS.items() if re.search(pattern, text)]
    return found or ["plain shapes"]


def with_page_size(text: str, width: int, height: int) -> str:
    """``text`` with its root's width/height set to the page's (what the page's CSS does to the <svg> element)."""
    match = _ROOT_TAG.search(text)
    if match is None:
        return text
    tag = _ROOT_SIZE.sub("", match.group(0))
    tag = tag[:4] + f' width="{width}" height="{height}"' + tag[4:]
    return text[: match.start()] + tag + text[match.end() :]


def render_resvg(text: str, size: int) -> bytes:
    import resvg_py

    geometry = page_geometry(text.encode(), size)
    width, height = round(geometry.width * geometry.scale), round(geometry.height * geometry.scale)
    if size == OWN_SIZE:
        return bytes(resvg_py.svg_to_bytes(svg_string=with_page_size(text, width, height), background="#ffffff"))
    return bytes(resvg_py.svg_to_bytes(svg_string=text, background="#ffffff", width=width, height=height))


@dataclass
class Compared:
    differs: bool
    share: float  # of pixels beyond the tolerance
    mean: float  # mean absolute difference, 0..1
    resized: bool


def compare(reference: Image.Image, other: Image.Image, tolerance: int, threshold: float) -> Compared:
    resized = other.size != reference.size
    if resized:
        other = other.resize(reference.size, Image.Resampling.LANCZOS)
    diff = ImageChops.difference(reference, other)
    r, g, b = diff.split()
    peak = ImageChops.lighter(ImageChops.lighter(r, g), b)
    over = sum(peak.point(lambda v: 255 if v > tolerance else 0).histogram()[255:])
    pixels = reference.size[0] * reference.size[1]
    channels = diff.histogram()
    total = sum(
        value * count for band in range(3) for value, count in enumerate(channels[band * 256 : band * 256 + 256])
    )
    share = over / pixels
    return Compared(share > threshold, share, total / (pixels * 3 * 255), resized)


def decoded(png: bytes) -> Image.Image:
    with Image.open(io.BytesIO(png)) as image:
        image.load()
        if image.mode in ("RGBA", "LA", "P"):
            canvas = Image.new("RGB", image.size, (255, 255, 255))
            canvas.paste(image.convert("RGBA"), mask=image.convert("RGBA").split()[3])
            return canvas
        return image.convert("RGB")


@dataclass
class Row:
    name: str
    features: list[str]
    reference: Image.Image | None = None
    error: str = ""
    results: dict[str, Compared | str] = field(default_factory=dict)  # renderer -> comparison or its error
    pictures: dict[str, Image.Image] = field(default_factory=dict)


def load_corpus(directory: Path | None) -> list[tuple[list[str], str, str]]:
    if directory is None:
        return [([feature], name, text) for feature, name, text in corpus()]
    files = sorted(directory.rglob("*.svg"))
    if not files:
        raise SystemExit(f"fidelity: no *.svg under {directory}")
    out = []
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        out.append((detect_features(text), str(path.relative_to(directory)), text))
    return out


async def render_all(items, size: int, timings: dict[str, list[float]]) -> list[Row]:
    workers = max(1, min(2, usable_cpus()))
    chromium = ChromiumRenderer(workers=workers, timeout_s=60, memory_mb=4096)
    cairo = Renderer(workers=workers, timeout_s=60)
    rows = [Row(name, features) for features, name, _ in items]
    slots = {name: asyncio.Semaphore(workers) for name in ("chromium", "cairosvg", "resvg")}  # timed: no queueing

    async def timed(name: str, job) -> bytes:
        async with slots[name]:
            started = time.perf_counter()
            png = await job()
            timings[name].append(time.perf_counter() - started)
            return png

    async def one(row: Row, text: str) -> None:
        try:
            row.reference = decoded(await timed("chromium", lambda: chromium.render(text, size)))
        except RenderError as err:
            row.error = f"chromium: {err}"
            return
        try:
            row.pictures["cairosvg"] = decoded(await timed("cairosvg", lambda: cairo.render(text, size)))
        except RenderError as err:
            row.results["cairosvg"] = str(err)
        try:
            row.pictures["resvg"] = decoded(await timed("resvg", lambda: asyncio.to_thread(render_resvg, text, size)))
        except (ValueError, RenderError) as err:
            row.results["resvg"] = str(err) or type(err).__name__

    try:
        await asyncio.gather(*(one(row, text) for row, (_, _, text) in zip(rows, items)))
    finally:
        chromium.close()
        cairo.close()
    return rows


def workers_note() -> str:
    return f"{max(1, min(2, usable_cpus()))} renders of each renderer at a time"


def percent(value: float) -> str:
    return f"{100 * value:.0f}%"


def table(rows: list[Row]) -> tuple[list[list[str]], dict[str, float]]:
    features = sorted({f for row in rows for f in row.features}, key=lambda f: (list(FEATURE_PATTERNS) + [f]).index(f))
    lines = []
    overall: dict[str, float] = {}
    for feature in [*features, "all"]:
        members = [r for r in rows if r.reference is not None and (feature == "all" or feature in r.features)]
        cells = [feature, str(len(members))]
        for renderer in RENDERERS:
            compared = [r.results.get(renderer) for r in members]
            failed = sum(isinstance(c, str) for c in compared)
            drawn = [c for c in compared if isinstance(c, Compared)]
            differs = (sum(c.differs for c in drawn) + failed) / len(members) if members else 0.0
            mean = statistics.fmean(c.mean for c in drawn) if drawn else 0.0
            cells += [percent(differs), f"{100 * mean:.1f}%", str(failed)]
            if feature == "all":
                overall[f"{renderer}_differs"] = round(differs, 3)
                overall[f"{renderer}_mean_diff"] = round(mean, 4)
                overall[f"{renderer}_failed"] = failed
        lines.append(cells)
    return lines, overall


def print_table(lines: list[list[str]]) -> None:
    header = ["feature", "SVGs"]
    for renderer in RENDERERS:
        header += [f"{renderer} differs", "mean diff", "failed"]
    widths = [max(len(row[i]) for row in [header, *lines]) for i in range(len(header))]
    for row in [header, *lines]:
        print(
            "  ".join(
                cell.ljust(width) if i == 0 else cell.rjust(width) for i, (cell, width) in enumerate(zip(row, widths))
            )
        )


def write_pictures(rows: list[Row], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for row in rows:
        if row.reference is None:
            continue
        panels = [row.reference, *(row.pictures.get(r) for r in RENDERERS)]
        width, height = row.reference.size
        sheet = Image.new("RGB", (width * 3 + 8, height), (255, 0, 255))
        for i, panel in enumerate(panels):
            if panel is not None:
                sheet.paste(panel.resize((width, height)), (i * (width + 4), 0))
        sheet.save(out / (re.sub(r"[^\w.-]+", "_", row.name) + ".png"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, help="render every *.svg under this folder instead of the own corpus")
    parser.add_argument("--size", default="own", help="'own' (the page size the SVG gives itself) or a longest side")
    parser.add_argument(
        "--threshold", type=float, default=0.02, help="share of differing pixels that makes a difference"
    )
    parser.add_argument("--tolerance", type=int, default=48, help="a pixel differs past this channel difference")
    parser.add_argument("--out", type=Path, help="write each SVG's pictures side by side into this folder")
    args = parser.parse_args()
    size = OWN_SIZE if args.size == "own" else int(args.size)
    try:
        import resvg_py  # noqa: F401
    except ImportError:
        print("fidelity: needs the resvg-py package (.venv/bin/pip install resvg-py)", file=sys.stderr)
        return 2
    items = load_corpus(args.corpus)
    timings: dict[str, list[float]] = {"chromium": [], "cairosvg": [], "resvg": []}
    try:
        rows = asyncio.run(render_all(items, size, timings))
    except ConfigError as err:  # no Chromium
        print(f"fidelity: {err}", file=sys.stderr)
        return 2
    for row in rows:
        for renderer in RENDERERS:
            if renderer in row.pictures and row.reference is not None:
                row.results[renderer] = compare(row.reference, row.pictures[renderer], args.tolerance, args.threshold)
    lines, overall = table(rows)
    print(f"{len(rows)} SVGs, {'own page size' if size == OWN_SIZE else f'longest side {size} px'}; differs: more than "
          f"{percent(args.threshold)} of pixels off by more than {args.tolerance}/255 from Chromium's picture\n")  # fmt: skip
    print_table(lines)
    print()
    for row in rows:
        if row.error:
            print(f"  {row.name}: {row.error}")
            continue
        notes = []
        for renderer in RENDERERS:
            result = row.results.get(renderer)
            if isinstance(result, str):
                notes.append(f"{renderer} failed ({result[:60]})")
            elif result is not None and result.differs:
                notes.append(
                    f"{renderer} {percent(result.share)} of pixels" + (" (size differs)" if result.resized else "")
                )
        if notes:
            print(f"  {'/'.join(row.features)} {row.name}: {'; '.join(notes)}")
    speed = {name: round(1000 * statistics.fmean(values), 1) for name, values in timings.items() if values}
    print(f"\nmean ms per render (wall, {workers_note()}; this machine's load included): {speed}")
    if args.out:
        write_pictures(rows, args.out)
        print(f"pictures: {args.out}")
    report({"svgs": len(rows), **overall, **{f"{k}_ms": v for k, v in speed.items()}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
