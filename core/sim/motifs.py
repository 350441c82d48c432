"""What the simulated policy draws for a prompt: a picture that plausibly relates to it (a login screen draws a phone
with two fields and a button, a flag draws stripes, a bar chart draws axes and bars), so the demo shows what the
product does. Pure and deterministic: the parts come from the prompt's words, their jitter and colours from the
caller's seeded ``random.Random``. A prompt no motif knows gets None (the caller draws abstract shapes).

Each motif returns ``(background, parts)``: a background colour and SVG elements in drawing order, roughly one per
requirement, so a "partial" answer can draw the first few.
"""

from __future__ import annotations

import functools
import math
import random
import re
from collections.abc import Callable, Sequence

Parts = tuple[str, list[str]]
Motif = Callable[[random.Random, Sequence[str], str], Parts]  # (rng, shuffled colours, the prompt's first line)


def _j(rng: random.Random, spread: int = 5) -> int:
    return rng.randint(-spread, spread)


def _rect(x: float, y: float, w: float, h: float, fill: str, rx: float = 0, extra: str = "") -> str:
    corner = f' rx="{rx:g}"' if rx else ""
    return f'<rect x="{x:g}" y="{y:g}" width="{w:g}" height="{h:g}"{corner} fill="{fill}"{extra}/>'


def _circle(cx: float, cy: float, r: float, fill: str, extra: str = "") -> str:
    return f'<circle cx="{cx:g}" cy="{cy:g}" r="{r:g}" fill="{fill}"{extra}/>'


def _line(x1: float, y1: float, x2: float, y2: float, stroke: str, width: float = 3, extra: str = "") -> str:
    return f'<line x1="{x1:g}" y1="{y1:g}" x2="{x2:g}" y2="{y2:g}" stroke="{stroke}" stroke-width="{width:g}"{extra}/>'


def _text(x: float, y: float, text: str, fill: str, size: int = 14, anchor: str = "middle") -> str:
    return (
        f'<text x="{x:g}" y="{y:g}" font-family="sans-serif" font-size="{size}" text-anchor="{anchor}" '
        f'fill="{fill}">{text}</text>'
    )


def _wedge(cx: float, cy: float, r: float, start: float, end: float, fill: str) -> str:
    """A pie slice from angle ``start`` to ``end`` (fractions of a turn, clockwise from 12 o'clock)."""

    def point(t: float) -> str:
        a = 2 * math.pi * t - math.pi / 2
        return f"{cx + r * math.cos(a):.1f} {cy + r * math.sin(a):.1f}"

    large = 1 if end - start > 0.5 else 0
    return f'<path d="M{cx:g} {cy:g} L{point(start)} A{r:g} {r:g} 0 {large} 1 {point(end)} Z" fill="{fill}"/>'


# --- the motifs ----------------------------------------------------------------------------------------------
def login_screen(rng: random.Random, colours: Sequence[str], asked: str) -> Parts:
    accent = colours[0]
    return "#e0e1dd", [
        _rect(72 + _j(rng, 2), 16, 112, 224, "#ffffff", rx=16, extra=' stroke="#264653" stroke-width="4"'),
        _circle(128, 62 + _j(rng, 2), 18, accent),
        _rect(88, 104, 80, 18, "#f1f1f1", rx=4, extra=' stroke="#8d99ae" stroke-width="2"'),
        _text(92, 117, "email", "#8d99ae", 10, "start"),
        _rect(88, 132, 80, 18, "#f1f1f1", rx=4, extra=' stroke="#8d99ae" stroke-width="2"'),
        _text(92, 145, "••••••", "#8d99ae", 10, "start"),
        _rect(88, 164, 80, 22, colours[1], rx=11),
        _text(128, 179, "Log in", "#ffffff", 11),
        _text(128, 206, "Forgot password?", colours[2], 8),
    ]


_FLAGS = {  # (vertical stripes, their colours) for a few flags a prompt may name
    "french": (True, ("#0055a4", "#ffffff", "#ef4135")),
    "france": (True, ("#0055a4", "#ffffff", "#ef4135")),
    "italian": (True, ("#009246", "#ffffff", "#ce2b37")),
    "irish": (True, ("#169b62", "#ffffff", "#ff883e")),
    "german": (False, ("#000000", "#dd0000", "#ffce00")),
}


def flag(rng: random.Random, colours: Sequence[str], asked: str) -> Parts:
    known = next((flag for name, flag in _FLAGS.items() if name in asked), None)
    vertical, stripes = known or (rng.random() < 0.5, tuple(colours[:3]))
    parts = [_rect(38, 30, 4, 210, "#5c4033")]  # the pole
    for i, colour in enumerate(stripes):
        if vertical:
            parts.append(_rect(42 + i * 60, 40, 60, 120, colour))
        else:
            parts.append(_rect(42, 40 + i * 40, 180, 40, colour))
    parts.append(_rect(42, 40, 180, 120, "none", extra=' stroke="#333333" stroke-width="2"'))
    return "#cde7f0", parts


def bar_chart(rng: random.Random, colours: Sequence[str], asked: str) -> Parts:
    parts = [_line(40, 20, 40, 220, "#222222"), _line(40, 220, 240, 220, "#222222")]
    for i in range(6):
        height = rng.randint(40, 180)
        parts.append(_rect(52 + i * 31, 220 - height, 22, height, colours[i % 3]))
    parts.append(_text(140, 244, "Jan … Jun", "#222222", 11))
    return "#ffffff", parts


def line_chart(rng: random.Random, colours: Sequence[str], asked: str) -> Parts:
    parts = [_line(40, 20, 40, 220, "#222222"), _line(40, 220, 240, 220, "#222222")]
    for k in range(2):
        points = " ".join(f"{60 + i * 55},{rng.randint(40, 200)}" for i in range(4))
        parts.append(f'<polyline points="{points}" fill="none" stroke="{colours[k]}" stroke-width="4"/>')
    parts += [_text(140, 244, "Quarter", "#222222", 11), _text(30, 120, "Units", "#222222", 11)]
    return "#ffffff", parts


def pie_chart(rng: random.Random, colours: Sequence[str], asked: str) -> Parts:
    cuts = sorted(rng.uniform(0.15, 0.95) for _ in range(3))
    bounds = [0.0, *cuts, 1.0]
    parts = [_wedge(128, 128, 96, a, b, colours[i]) for i, (a, b) in enumerate(zip(bounds, bounds[1:]))]
    parts.append(_circle(128, 128, 96, "none", extra=' stroke="#ffffff" stroke-width="3"'))
    return "#fdf0d5", parts


def snowman(rng: random.Random, colours: Sequence[str], asked: str) -> Parts:
    return "#caf0f8", [
        _rect(0, 196, 256, 60, "#ffffff"),
        _circle(128, 188, 44, "#ffffff", extra=' stroke="#adb5bd" stroke-width="2"'),
        _circle(128, 124 + _j(rng, 2), 32, "#ffffff", extra=' stroke="#adb5bd" stroke-width="2"'),
        _circle(128, 72, 22, "#ffffff", extra=' stroke="#adb5bd" stroke-width="2"'),
        _circle(120, 68, 3, "#000000") + _circle(136, 68, 3, "#000000"),
        '<polygon points="128,74 150,78 128,80" fill="#f77f00"/>',
        _rect(108, 36, 40, 16, "#222222") + _rect(100, 50, 56, 5, "#222222"),
        _line(96, 120, 60, 100, "#7f5539") + _line(160, 120, 196, 100, "#7f5539"),
    ]


def _clock_face(rng: random.Random, cx: float, cy: float, r: float, rim: str) -> str:
    hour = rng.uniform(0, 2 * math.pi)
    return (
        _circle(cx, cy, r, "#ffffff", extra=f' stroke="{rim}" stroke-width="5"')
        + _line(cx, cy, cx + 0.5 * r * math.sin(hour), cy - 0.5 * r * math.cos(hour), "#222222", 4)
        + _line(cx, cy, cx, cy - 0.8 * r, "#222222", 2)
    )


def clock(rng: random.Random, colours: Sequence[str], asked: str) -> Parts:
    ticks = "".join(
        _line(
            128 + 80 * math.sin(a * math.pi / 6),
            128 - 80 * math.cos(a * math.pi / 6),
            128 + 90 * math.sin(a * math.pi / 6),
            128 - 90 * math.cos(a * math.pi / 6),
            "#222222",
            3,
        )
        for a in range(12)
    )
    return "#fdf0d5", [_clock_face(rng, 128, 128, 96, colours[0]), ticks, _circle(128, 128, 5, colours[1])]


def clocks(rng: random.Random, colours: Sequence[str], asked: str) -> Parts:
    """A row of three clocks (time zones)."""
    faces = [_clock_face(rng, x, 128, 34, colours[k]) for k, x in enumerate((50, 128, 206))]
    labels = "".join(
        _text(x, 190, city, "#222222", 11) for x, city in ((50, "London"), (128, "New York"), (206, "Tokyo"))
    )
    return "#fdf0d5", [_rect(6, 80, 244, 124, "#e9c46a", rx=10), *faces, labels]


def skyline(rng: random.Random, colours: Sequence[str], asked: str) -> Parts:
    parts = [_circle(208, 44, 18, "#fff3b0")]
    x = 4
    while x < 250:
        width, height = rng.randint(22, 36), rng.randint(60, 170)
        windows = "".join(
            _rect(x + 5 + 9 * c, 256 - height + 10 + 14 * r, 4, 6, "#ffd166")
            for r in range(min(5, height // 20))
            for c in range(max(1, (width - 8) // 9))
        )
        parts.append(_rect(x, 256 - height, width, height, rng.choice(("#14213d", "#1b263b", "#000814"))) + windows)
        x += width + 4
    return "#0d1b2a", parts


def rocket(rng: random.Random, colours: Sequence[str], asked: str) -> Parts:
    return "#023047", [
        _rect(60, 228, 136, 20, "#6c757d"),
        _rect(108, 80 + _j(rng, 3), 40, 130, "#ffffff"),
        '<polygon points="108,82 128,30 148,82" fill="#e63946"/>',
        _circle(128, 120, 10, "#3a86ff", extra=' stroke="#adb5bd" stroke-width="3"'),
        '<polygon points="108,170 88,212 108,206" fill="#e63946"/>',
        '<polygon points="148,170 168,212 148,206" fill="#e63946"/>',
        '<polygon points="114,210 128,246 142,210" fill="#f77f00"/>',
    ]


def boxes_and_arrows(rng: random.Random, colours: Sequence[str], asked: str) -> Parts:
    """Flowcharts, org charts, circuits, subway maps: labelled boxes joined by lines."""
    top, level = (128, 40), [(48, 140), (128, 140), (208, 140)]
    parts = [_rect(top[0] - 34, top[1] - 16, 68, 32, colours[0], rx=8)]
    for k, (x, y) in enumerate(level):
        parts.append(
            _line(top[0], top[1] + 16, x, y - 16, "#333333", 2)
            + _rect(x - 34, y - 16, 68, 32, colours[1 + k % 3], rx=4)
        )
    parts.append(
        _line(128, 156, 128, 204, "#333333", 2) + '<polygon points="128,232 100,212 128,192 156,212" '
        f'fill="{colours[4]}"/>'
    )
    parts.append(_text(top[0], top[1] + 5, "CEO" if "org" in asked else "Start", "#ffffff", 13))
    return "#ffffff", parts


def board(rng: random.Random, colours: Sequence[str], asked: str) -> Parts:
    """Kanban boards, Gantt charts, tables: columns of cards or bars."""
    parts = []
    for k in range(3):
        x = 10 + k * 82
        cards = "".join(_rect(x + 6, 48 + 34 * i, 62, 26, colours[(k + i) % 5], rx=4) for i in range(rng.randint(1, 4)))
        parts.append(
            _rect(x, 10, 74, 236, "#e9ecef", rx=6)
            + _text(x + 37, 32, ("To do", "Doing", "Done")[k], "#222222", 11)
            + cards
        )
    return "#ffffff", parts


def app_screen(rng: random.Random, colours: Sequence[str], asked: str) -> Parts:
    """App screens, cards, dashboards, calculators, icons: a rounded panel with rows of controls."""
    parts = [
        _rect(28, 14, 200, 228, "#ffffff", rx=14, extra=' stroke="#adb5bd" stroke-width="3"'),
        _rect(44, 30, 168, 40, colours[0], rx=6),
    ]
    for row in range(4):
        for col in range(3):
            parts.append(_rect(44 + col * 58, 86 + row * 38, 50, 30, colours[1 + (row + col) % 4], rx=6))
    return "#e0e1dd", parts


def landscape(rng: random.Random, colours: Sequence[str], asked: str) -> Parts:
    """Landscapes, castles, windmills, balloons, animals: a sky, a sun, hills and a subject on them."""
    sun_x = rng.randint(40, 216)
    return "#bde0fe", [
        _circle(sun_x, 48, 22, "#ffb703"),
        '<ellipse cx="70" cy="236" rx="150" ry="70" fill="#52b788"/>',
        '<ellipse cx="210" cy="246" rx="130" ry="60" fill="#2d6a4f"/>',
        _rect(104, 120 + _j(rng, 4), 48, 70, colours[0]) + f'<polygon points="98,122 128,86 158,122" '
        f'fill="{colours[1]}"/>',
        _circle(60 + _j(rng, 8), 200, 8, colours[2]) + _circle(196 + _j(rng, 8), 206, 8, colours[3]),
    ]


def camera(rng: random.Random, colours: Sequence[str], asked: str) -> Parts:
    return "#fdf0d5", [
        _rect(40, 78, 176, 116, "#3d405b", rx=16),
        _rect(70, 62, 46, 20, "#3d405b", rx=4),
        _circle(128, 136, 44, "#222222"),
        _circle(128, 136, 30, colours[0]),
        _circle(118, 126, 8, "#ffffff"),
        _circle(190, 96, 7, "#e63946"),
    ]


def venn(rng: random.Random, colours: Sequence[str], asked: str) -> Parts:
    centres = ((100, 100), (156, 100), (128, 150))
    return "#ffffff", [
        _circle(x + _j(rng, 3), y, 62, colours[k], extra=' fill-opacity="0.5"') for k, (x, y) in enumerate(centres)
    ]


def bicycle(rng: random.Random, colours: Sequence[str], asked: str) -> Parts:
    spokes = "".join(
        _line(cx, 170, cx + 40 * math.cos(a * math.pi / 4), 170 + 40 * math.sin(a * math.pi / 4), "#888888", 1)
        for cx in (68, 188)
        for a in range(8)
    )
    return "#fdf0d5", [
        _circle(68, 170, 42, "none", extra=' stroke="#222222" stroke-width="6"'),
        _circle(188, 170, 42, "none", extra=' stroke="#222222" stroke-width="6"'),
        spokes,
        f'<polyline points="68,170 112,170 160,112 100,112 112,170" fill="none" stroke="{colours[0]}" '
        'stroke-width="6"/>',
        _line(160, 112, 188, 170, colours[0], 6) + _line(154, 98, 172, 98, "#222222", 5),
        _line(100, 112, 94, 96, colours[0], 5) + _rect(82, 90, 26, 7, "#222222", rx=3),
    ]


def fish_tank(rng: random.Random, colours: Sequence[str], asked: str) -> Parts:
    parts = [
        _rect(20, 40, 216, 180, "#90e0ef", extra=' stroke="#264653" stroke-width="5"'),
        _rect(22, 196, 212, 22, "#e9c46a"),
    ]
    for k in range(3):
        x, y = rng.randint(60, 190), rng.randint(70, 170)
        parts.append(
            f'<ellipse cx="{x}" cy="{y}" rx="22" ry="12" fill="{colours[k]}"/>'
            f'<polygon points="{x - 20},{y} {x - 36},{y - 12} {x - 36},{y + 12}" fill="{colours[k]}"/>'
            + _circle(x + 12, y - 3, 2, "#000000")
        )
    return "#ffffff", parts


# --- which motif a prompt gets ------------------------------------------------------------------------------
# The first entry with a word in the prompt's first line wins (more specific words first); a word matches at the
# start of a word ("app" in "app icons", not "house" in "lighthouse").
MOTIFS: tuple[tuple[tuple[str, ...], Motif], ...] = (
    (("login", "log in", "sign in", "sign-in"), login_screen),
    (("flag",), flag),
    (("bar chart", "histogram", "rainfall"), bar_chart),
    (("line chart", "sales over"), line_chart),
    (("pie chart", "budget", "donut"), pie_chart),
    (("snowman",), snowman),
    (("clocks", "time zone"), clocks),
    (("clock",), clock),
    (("skyline", "city at night"), skyline),
    (("rocket", "spaceship"), rocket),
    (("camera",), camera),
    (("venn",), venn),
    (("bicycle", "bike"), bicycle),
    (("aquarium", "fish"), fish_tank),
    (("treasure", "island"), landscape),
    (("kanban", "gantt", "timeline", "floor plan", "periodic"), board),
    (("flowchart", "org chart", "circuit", "diagram", "subway", "intersection", "map"), boxes_and_arrows),
    (
        ("screen", "app", "card", "dashboard", "gauge", "icon", "calculator", "watch", "smartwatch", "logo", "page"),
        app_screen,
    ),
    (
        (
            "castle",
            "windmill",
            "balloon",
            "hill",
            "valley",
            "garden",
            "field",
            "landscape",
            "robot",
            "hedgehog",
            "house",
            "tree",
            "sun",
            "island",
        ),
        landscape,
    ),
)


def asked_for(prompt: str) -> str:
    """What is asked for: the prompt's first line, in lower case."""
    return (prompt.strip().splitlines() or [""])[0].lower()


def motif_for(prompt: str) -> Motif | None:
    """The motif for what ``prompt`` asks for, or None."""
    return _motif_asked(asked_for(prompt))


@functools.lru_cache(maxsize=4096)  # a run asks each of its prompts many times (a few hundred regex searches each)
def _motif_asked(first: str) -> Motif | None:
    return next(
        (motif for words, motif in MOTIFS if any(re.search(rf"\b{re.escape(word)}", first) for word in words)), None
    )
