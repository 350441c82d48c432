"""The report's charts as inline SVG markup: the score histogram and a line of means (per training step, or per
run). Pure functions, strings out; every label that comes from outside is escaped (:func:`text`)."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass

from svgagent.core.terminal_text import visible_line

FONT = 'font-family="sans-serif" font-size="11"'


def text(value: object) -> str:
    """Outside text (a name, a label) as SVG/HTML character data: control characters shown, markup escaped."""
    return html.escape(visible_line(str(value)), quote=True)


def _num(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def histogram_svg(counts: Sequence[int], edges: Sequence[float], *, width: int = 480, height: int = 180) -> str:
    """Bars of ``counts`` over the bins ``edges`` (one more edge than counts), each with a tooltip of its count."""
    left, right, top, bottom = 34, 8, 14, 22
    plot_w, plot_h = width - left - right, height - top - bottom
    biggest = max(counts, default=0) or 1
    bins = max(len(counts), 1)
    step = plot_w / bins
    total = sum(counts)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart histogram" role="img" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}"><title>score histogram</title>',
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="#888"/>',
        f'<text x="{left - 4}" y="{top + 4}" text-anchor="end" {FONT}>{biggest}</text>',
        f'<text x="{left - 4}" y="{top + plot_h}" text-anchor="end" {FONT}>0</text>',
    ]
    for i, count in enumerate(counts):
        bar_h = plot_h * count / biggest
        x = left + i * step
        share = f"{100 * count / total:.1f}%" if total else "–"
        label = f"{edges[i]:g}–{edges[i + 1]:g}: {count} ({share})"
        parts.append(
            f'<rect class="bar" x="{_num(x + 1)}" y="{_num(top + plot_h - bar_h)}" width="{_num(max(step - 2, 1))}" '
            f'height="{_num(bar_h)}" fill="#4a7fd4"><title>{text(label)}</title></rect>'
        )
        if count:
            parts.append(
                f'<text x="{_num(x + step / 2)}" y="{_num(top + plot_h - bar_h - 2)}" text-anchor="middle" '
                f"{FONT}>{count}</text>"
            )
    ticks = range(0, len(edges), max(1, len(counts) // 5))
    for i in ticks:
        parts.append(
            f'<text x="{_num(left + i * step)}" y="{height - 6}" text-anchor="middle" {FONT}>{edges[i]:g}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


@dataclass(frozen=True, slots=True)
class Point:
    label: str  # outside text allowed: escaped when drawn
    value: float | None  # None: nothing to draw at this point
    stderr: float | None = None


def line_chart_svg(
    points: Sequence[Point], *, title: str, lo: float = 0.0, hi: float | None = 1.0, width: int = 640, height: int = 220
) -> str:
    """A line through ``points`` left to right with ± stderr whiskers; the y axis from ``lo`` to ``hi`` (None: the
    largest value)."""
    left, right, top, bottom = 40, 12, 14, 34
    plot_w, plot_h = width - left - right, height - top - bottom
    values = [p.value for p in points if p.value is not None]
    top_value = hi if hi is not None else max(values, default=1.0) or 1.0
    span = (top_value - lo) or 1.0

    def y_of(value: float) -> float:
        return top + plot_h - plot_h * (min(max(value, lo), top_value) - lo) / span

    step = plot_w / max(len(points) - 1, 1)

    def x_of(i: int) -> float:
        return left + (i * step if len(points) > 1 else plot_w / 2)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart line" role="img" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}"><title>{text(title)}</title>',
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="#888"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="#888"/>',
    ]
    for fraction in (0.0, 0.5, 1.0):
        value = lo + span * fraction
        parts.append(f'<text x="{left - 4}" y="{_num(y_of(value) + 4)}" text-anchor="end" {FONT}>{value:g}</text>')
    line = [f"{_num(x_of(i))},{_num(y_of(p.value))}" for i, p in enumerate(points) if p.value is not None]
    if len(line) > 1:
        parts.append(f'<polyline points="{" ".join(line)}" fill="none" stroke="#4a7fd4" stroke-width="2"/>')
    every = max(1, len(points) // 12)
    for i, p in enumerate(points):
        x = _num(x_of(i))
        if p.value is not None:
            if p.stderr:
                parts.append(
                    f'<line x1="{x}" y1="{_num(y_of(p.value - p.stderr))}" x2="{x}" '
                    f'y2="{_num(y_of(p.value + p.stderr))}" stroke="#4a7fd4"/>'
                )
            spread = f" ± {p.stderr:.3f}" if p.stderr else ""
            parts.append(
                f'<circle class="point" cx="{x}" cy="{_num(y_of(p.value))}" r="3" fill="#4a7fd4">'
                f"<title>{text(p.label)}: {p.value:.3f}{spread}</title></circle>"
            )
        if i % every == 0:
            label = text(p.label[:14])
            parts.append(f'<text x="{x}" y="{height - 18}" text-anchor="middle" {FONT}>{label}</text>')
    parts.append("</svg>")
    return "".join(parts)
