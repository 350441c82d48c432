"""What the simulated models say: deterministic policy answers (SVGs of varied quality) and judge verdicts.

Everything here is pure and deterministic: answers depend only on the seed and the inputs (prompt text, the
n-th request for that prompt, the PNG bytes). The server around it lives in :mod:`svgagent.core.sim.simulator`.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import math
import random
import re
import struct
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from svgagent.core.scoring.judge_forms import JudgeForm
from svgagent.core.scoring.models import COUNT_KEY
from svgagent.core.sim.motifs import asked_for, motif_for
from svgagent.core.terminal_text import clipped, one_line

Quality = Literal["good", "partial", "broken", "no_svg", "truncated"]
# "unreadable" (JSON nested deeper, or a number longer, than a JSON reader takes) is asked for by name only: the
# default cycle below stays as it was.
GarbageKind = Literal["non_json", "truncated_json", "schema", "out_of_range", "non_integer", "unreadable"]

QUALITIES: tuple[Quality, ...] = ("good", "partial", "broken", "no_svg", "truncated")
GARBAGE_KINDS: tuple[GarbageKind, ...] = ("non_json", "truncated_json", "schema", "out_of_range", "non_integer")
# Cumulative percentages of the policy's answer mix: 50% good, 25% partial, 10% broken, 8% no SVG, 7% truncated.
_QUALITY_MIX: tuple[tuple[int, Quality], ...] = (
    (50, "good"),
    (75, "partial"),
    (85, "broken"),
    (93, "no_svg"),
    (100, "truncated"),
)
DEFAULT_REQUIREMENTS = 5  # used when a policy prompt has no numbered list
JUDGE_PREFIX = "[simulated judge]"

_PALETTE = (
    "#e63946", "#f4a261", "#2a9d8f", "#264653", "#e9c46a", "#8338ec", "#3a86ff", "#ff006e",
    "#06d6a0", "#118ab2", "#ef476f", "#7f5539", "#52b788", "#9d4edd", "#ffb703", "#023047",
)  # fmt: skip
_BACKGROUNDS = ("#cde7f0", "#fdf0d5", "#d8f3dc", "#e0e1dd", "#ffe5ec", "#caf0f8")


def digest(*parts: object) -> bytes:
    """sha256 over the parts (bytes as they are, anything else via ``str``), separated unambiguously."""
    h = hashlib.sha256()
    for part in parts:
        data = part if isinstance(part, bytes) else str(part).encode("utf-8")
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)
    return h.digest()


def prompt_key(text: str) -> str:
    """The short hash the simulator's stats use to count requests per prompt."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def _rng(*parts: object) -> random.Random:
    return random.Random(int.from_bytes(digest(*parts)[:16], "big"))


_HEADER_RE = re.compile(r"^\W*requirements\W*$", re.IGNORECASE)
_NUMBERED_RE = re.compile(r"^\s*(\d{1,3})[.)]\s+(.*\S)\s*$")


def parse_requirements(text: str) -> list[str]:
    """The numbered list ``1. … 2. …`` after the last "Requirements:" line (or the first such list at all)."""
    return list(_requirements_of(text))


@functools.lru_cache(maxsize=256)  # every policy and judge request of a prompt reads it again
def _requirements_of(text: str) -> tuple[str, ...]:
    lines = text.splitlines()
    start = 0
    for i, line in enumerate(lines):
        if _HEADER_RE.match(line.strip()):
            start = i + 1
    found: list[str] = []
    for line in lines[start:]:
        match = _NUMBERED_RE.match(line)
        if match and int(match.group(1)) == len(found) + 1:
            found.append(match.group(2))
        elif found and line.strip():
            break
    return tuple(found)


def _subject(prompt: str) -> str:
    """A short description of what is asked for: the first sentence of the prompt, shortened."""
    first = " ".join(prompt.strip().split("\n", 1)[0].split())
    first = re.split(r"(?<=[.!?])\s", first, maxsplit=1)[0].rstrip(".!?")
    return clipped(first, 78, words=True) or "your drawing"


# ------------------------------------------------------------------------------------------------------ policy


def choose_quality(seed: int, prompt: str, nth: int) -> Quality:
    """The quality class of the policy's ``nth`` (0-based) answer to ``prompt``."""
    bucket = int.from_bytes(digest("quality", seed, prompt, nth)[:8], "big") % 100
    for limit, quality in _QUALITY_MIX:
        if bucket < limit:
            return quality
    return "good"  # pragma: no cover - the mix ends at 100


def _shape(rng: random.Random, kind: int, colour: str, scale: float) -> str:
    x, y = rng.randint(24, 232), rng.randint(24, 232)
    size = max(4, int(rng.randint(14, 40) * scale))
    if kind == 0:
        return f'<circle cx="{x}" cy="{y}" r="{size}" fill="{colour}"/>'
    if kind == 1:
        return f'<rect x="{x - size}" y="{y - size}" width="{2 * size}" height="{size + 6}" rx="3" fill="{colour}"/>'
    if kind == 2:
        return f'<ellipse cx="{x}" cy="{y}" rx="{size + 8}" ry="{max(3, size // 2)}" fill="{colour}"/>'
    if kind == 3:
        return f'<polygon points="{x},{y - size} {x + size},{y + size} {x - size},{y + size}" fill="{colour}"/>'
    return (
        f'<path d="M{x - size} {y} Q{x} {y - 2 * size} {x + size} {y}" fill="none" stroke="{colour}" '
        f'stroke-width="{max(3, size // 4)}" stroke-linecap="round"/>'
    )


def make_svg(seed: int, prompt: str, nth: int, quality: Quality, n: int, pad_to: int = 0) -> str:
    """A simulated SVG document: ``good`` draws what the prompt asks for (:mod:`~svgagent.core.sim.motifs`; abstract
    shapes, one per requirement, when no motif knows it) on a background, ``partial`` about half of it without the
    background. ``pad_to`` adds small shapes until the text is that long."""
    rng = _rng("svg", seed, prompt, nth)
    colours = list(_PALETTE)
    rng.shuffle(colours)
    motif = motif_for(prompt)
    if motif is not None:  # what the prompt asks for (a login screen, a flag, a bar chart …)
        background, shapes = motif(rng, colours, asked_for(prompt))
    else:  # abstract shapes, one per requirement
        background = rng.choice(_BACKGROUNDS)
        scale, palette = (0.8, colours[:3]) if quality == "partial" else (1.0, colours)
        shapes = [_shape(rng, i % 5, palette[i % len(palette)], scale) for i in range(max(1, n))]
    n = max(1, n)  # one group per requirement: the drawing's parts spread over them
    groups = ["".join(shapes[i * len(shapes) // n : (i + 1) * len(shapes) // n]) for i in range(n)]
    count = n if quality != "partial" else max(1, n // 2 - rng.randint(0, 1))
    parts = [
        '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 256 256" width="256" height="256">',
        f"  <!-- simulated: {quality} -->",
        "  <title>simulated drawing</title>",
    ]
    if quality != "partial":
        parts.append(f'  <rect width="256" height="256" fill="{background}"/>')
    for i, group in enumerate(groups[:count]):
        parts.append(f'  <g id="req-{i + 1}">{group}</g>')
    if pad_to:
        size = sum(len(p) + 1 for p in parts)
        i = 0
        while size < pad_to:
            dot = f'  <circle cx="{i * 7 % 256}" cy="{i * 13 % 256}" r="1" fill="{colours[i % len(colours)]}"/>'
            parts.append(dot)
            size += len(dot) + 1
            i += 1
    parts.append("</svg>")
    return "\n".join(parts)


def _break_xml(svg: str, rng: random.Random) -> str:
    """Make the SVG invalid XML in one of a few ways real models manage."""
    how = rng.randint(0, 2)
    if how == 0:  # a mismatched closing tag
        return svg.replace("</g>", "</group>", 1)
    if how == 1:  # an unquoted attribute value
        return re.sub(r'fill="(#[0-9a-f]{6})"', r"fill=\1", svg, count=1)
    return svg.replace("<title>simulated drawing</title>", "<title>simulated drawing & friends</title>", 1)


SVG_FILE_CAP = 256 << 20


def svgs_of_file(path: str) -> list[str]:
    """The SVGs of a file with one JSON string a line (SimConfig.policy_svg_file): at least one, the file at most
    :data:`SVG_FILE_CAP` bytes."""
    with open(path, "rb") as file:
        data = file.read(SVG_FILE_CAP + 1)
    if len(data) > SVG_FILE_CAP:
        raise ValueError(f"{path}: over {SVG_FILE_CAP >> 20} MB")
    try:
        svgs = [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]
    except ValueError:  # not UTF-8, or a line that is not JSON
        svgs = []
    if not svgs or not all(isinstance(svg, str) for svg in svgs):
        raise ValueError(f"{path}: not one JSON string a line")
    return svgs


def policy_answer(
    seed: int, prompt: str, nth: int, huge_bytes: int = 0, quality: Quality | None = None
) -> tuple[Quality, str, bool]:
    """(quality, answer text, cut short) for the policy's ``nth`` answer to ``prompt``.

    ``huge_bytes`` > 0 forces a good answer whose SVG is padded to at least that many characters. ``cut short``
    is True for the truncated class (the server reports ``finish_reason="length"``). ``quality``: the class to
    draw (None: the default mix picks it).
    """
    requirements = parse_requirements(prompt)
    n = len(requirements) or DEFAULT_REQUIREMENTS
    if huge_bytes:
        quality = "good"
    elif quality is None:
        quality = choose_quality(seed, prompt, nth)
    rng = _rng("answer", seed, prompt, nth)
    subject = _subject(prompt)
    if quality == "no_svg":
        text = (
            f"(simulated) I would draw {subject.lower()} as a simple flat illustration: a soft background, "
            f"the main subject in the centre and the {n} requested details arranged around it. "
            "I can describe it in words, but I won't write the markup this time."
        )
        return quality, text, False
    svg = make_svg(seed, prompt, nth, quality, n, pad_to=huge_bytes)
    intro = rng.choice(("Here is the SVG", "Here's an SVG", "Below is the SVG", "This SVG should work"))
    if quality == "broken":
        svg = _break_xml(svg, rng)
    if quality == "truncated":
        cut = int(len(svg) * rng.uniform(0.4, 0.9))
        while cut > 1 and svg[cut - 1] in ">\n":
            cut -= 1
        return quality, f"{intro} (simulated) for “{subject}”.\n\n```svg\n{svg[:cut]}", True
    return quality, f"{intro} (simulated) for “{subject}”.\n\n```svg\n{svg}\n```\n", False


# ------------------------------------------------------------------------------------------------------- judge


@dataclass(frozen=True, slots=True)
class ImageStats:
    cover: float  # fraction of pixels that are not (near) white
    colours: int  # distinct non-white colours (3 bits per channel) covering a visible share of the image


def analyse_png(png: bytes) -> ImageStats | None:
    """Coverage and colour variety of a PNG, or None when the bytes are not a readable image."""
    from PIL import Image  # imported here: the policy side of the simulator never needs Pillow

    try:
        with Image.open(io.BytesIO(png)) as img:
            img.load()
            if img.mode in ("RGBA", "LA", "P", "PA"):
                rgba = img.convert("RGBA")
                base = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
                small_src = Image.alpha_composite(base, rgba).convert("RGB")
            else:
                small_src = img.convert("RGB")
            small = small_src.resize((64, 64), Image.Resampling.NEAREST)
    except Exception:  # noqa: BLE001 - any decoding failure means "not an image we can judge"
        return None
    quantised = small.point(lambda v: v & 0xE0)
    counts = quantised.getcolors(64 * 64) or []
    total = 64 * 64
    white = (0xE0, 0xE0, 0xE0)
    covered = sum(c for c, colour in counts if colour != white)
    visible = sum(1 for c, colour in counts if colour != white and c >= 8)
    return ImageStats(cover=covered / total, colours=visible)


def estimate_png(png: bytes) -> ImageStats | None:
    """A cheap stand-in for :func:`analyse_png` that decodes nothing: flat drawings compress well, so the
    compressed bytes per pixel say roughly how much is drawn. None when the bytes are not a PNG."""
    if len(png) < 33 or not png.startswith(b"\x89PNG\r\n\x1a\n") or png[12:16] != b"IHDR":
        return None
    width, height = struct.unpack(">II", png[16:24])
    if width == 0 or height == 0:
        return None
    # Flat shapes cost compressed bytes along their edges, so size / side length is roughly independent of the
    # resolution: ~4 for a blank page, ~10 for a sparse drawing, ~25 for a busy one.
    density = len(png) / math.sqrt(width * height)
    content = min(1.0, max(0.0, (density - 4.0) / 25.0))
    return ImageStats(cover=content, colours=round(8 * content))


_CACHE_SIZE = 2048
_analysis_cache: OrderedDict[bytes, ImageStats | None] = OrderedDict()
_cache_lock = threading.Lock()


def _cached_analysis(png: bytes, key: bytes) -> ImageStats | None:
    with _cache_lock:
        if key in _analysis_cache:
            _analysis_cache.move_to_end(key)
            return _analysis_cache[key]
    stats = analyse_png(png)
    with _cache_lock:
        _analysis_cache[key] = stats
        while len(_analysis_cache) > _CACHE_SIZE:
            _analysis_cache.popitem(last=False)
    return stats


def judge_decisions(seed: int, png: bytes, n: int, inspect_pixels: bool = True) -> tuple[list[bool], ImageStats | None]:
    """Which of the ``n`` requirements the simulated judge calls fulfilled, from the image's look and hash.

    ``inspect_pixels=False`` uses :func:`estimate_png` instead of decoding (a few ms of CPU saved per image).
    """
    key = hashlib.sha256(png).digest()
    stats = _cached_analysis(png, key) if inspect_pixels else estimate_png(png)
    if stats is None or n < 1:
        return [False] * max(n, 0), stats
    quality = 0.4 * min(1.0, stats.cover / 0.3) + 0.6 * min(1.0, stats.colours / 8)
    rng = _rng("judge", seed, key)
    fulfilled = min(n, max(0, round(n * quality * rng.uniform(0.75, 1.0))))
    order = sorted(range(n), key=lambda i: digest("rank", seed, key, i))
    chosen = set(order[:fulfilled])
    return [i in chosen for i in range(n)], stats


def _req_label(requirement: str, limit: int = 48) -> str:
    return clipped(one_line(requirement), limit, words=True)


def judge_answer(
    seed: int,
    png: bytes,
    requirements: Sequence[str],
    form: JudgeForm,
    garbage: GarbageKind | None = None,
    inspect_pixels: bool = True,
) -> str:
    """The simulated judge's answer text in ``form``'s schema, or a deliberately bad one of kind ``garbage``."""
    n = len(requirements)
    decisions, stats = judge_decisions(seed, png, n, inspect_pixels)
    count = sum(decisions)
    if stats is None:
        look = "the image could not be decoded, so nothing is visible"
    else:
        look = f"the image covers {stats.cover:.0%} of the canvas with {stats.colours} distinct colours"
    met = [f"{i + 1} ({_req_label(r)})" for i, r in enumerate(requirements) if decisions[i]]
    unmet = [f"{i + 1} ({_req_label(r)})" for i, r in enumerate(requirements) if not decisions[i]]
    reasoning = (
        f"{JUDGE_PREFIX} Judged strictly: {look}. "
        f"Fulfilled: {', '.join(met) or 'none'}. Not fulfilled: {', '.join(unmet) or 'none'}."
    )
    per_requirement = form.kind == "verdicts"
    reasons = [
        f"{JUDGE_PREFIX} {'clearly shown' if ok else 'not recognisable'}: {_req_label(requirements[i])}"
        for i, ok in enumerate(decisions)
    ]
    answer = form.answer(decisions, reasoning, reasons)
    verdicts = answer.get("verdicts", [])
    if garbage is None:
        return json.dumps(answer, ensure_ascii=False)
    flip = digest("garbage", seed, png)[0] % 2 == 0  # which variant of a garbage kind
    if garbage == "non_json":
        return f"{JUDGE_PREFIX} Looking at the picture, I would say about {count} of the {n} requirements are met."
    if garbage == "truncated_json":
        text = json.dumps(answer, ensure_ascii=False)
        return text[: max(1, len(text) // 2)]
    if garbage == "schema":
        if per_requirement:
            return json.dumps({"verdicts": verdicts[:-1], "reasoning": reasoning}, ensure_ascii=False)
        return json.dumps({"reasoning": reasoning, "fulfilled": count}, ensure_ascii=False)  # the count's key missing
    if garbage == "out_of_range":
        if per_requirement:
            extra = {"index": n + 1, "reason": f"{JUDGE_PREFIX} an extra verdict", "fulfilled": True}
            return json.dumps({"verdicts": [*verdicts, extra], "reasoning": reasoning}, ensure_ascii=False)
        return json.dumps({"reasoning": reasoning, COUNT_KEY: n + 2 if flip else -1}, ensure_ascii=False)
    if garbage == "unreadable":  # per requirement: nested 100,000 deep; a count: 5,000 digits long
        if per_requirement:
            return "[" * 100_000 + "]" * 100_000
        return json.dumps({"reasoning": reasoning, COUNT_KEY: 0}).replace(
            f'"{COUNT_KEY}": 0', f'"{COUNT_KEY}": {"9" * 5000}'
        )
    # non_integer
    if per_requirement:
        bad = [dict(v, fulfilled="yes" if v["fulfilled"] else "no") for v in verdicts]
        return json.dumps({"verdicts": bad, "reasoning": reasoning}, ensure_ascii=False)
    return json.dumps({"reasoning": reasoning, COUNT_KEY: count + 0.5 if flip else "several"}, ensure_ascii=False)
