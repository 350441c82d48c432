"""What the evaluator-health checks (:mod:`~svgagent.core.analysis.health`) read off one rollout's SVG and PNG:
how much of the picture is text and how much of that text repeats the requirements' words, a key that is the same
for the same SVG, and a small grey thumbnail to tell two pictures alike.

Heuristics, kept simple and documented:

- **text**: the characters of every ``<text>`` element (its ``<tspan>``s included) and the area they cover, each
  character taken as ``0.55 × font-size`` wide and ``font-size`` tall (font-size read from the attribute or the
  ``style``, in px or em; 16 px otherwise), over the page the SVG gives itself (its width × height, else its
  viewBox: :func:`~svgagent.core.scoring.picture_size.own_size`);
- **echo**: the requirements' words (letters only, 4 or more of them, common words left out) that the text holds,
  as a count and as a share of those words;
- **svg key**: a hash of the SVG with its whitespace collapsed (the same drawing, however it is indented);
- **thumbnail**: the PNG on white, grey, shrunk to :data:`THUMB` × :data:`THUMB`; two thumbnails' similarity is
  1 − their mean absolute difference / 255 (1: the same picture).

An SVG the XML parser refuses (not well-formed, entities) has its text read by a pattern instead; one nested too
deeply has none.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from xml.etree.ElementTree import Element, ParseError

from svgagent.core.analysis.stored_picture import on_background, open_picture
from svgagent.core.scoring.errors import RenderError
from svgagent.core.scoring.picture_size import own_size, parse_xml

THUMB = 16
CHAR_WIDTH = 0.55  # a character's width, in font sizes (sans-serif's average)
DEFAULT_FONT_PX = 16.0
_WORD = re.compile(r"[a-z]{4,}")
_FONT_SIZE = re.compile(r"font-size\s*:\s*([0-9.]+)\s*(px|em|pt)?", re.IGNORECASE)
_SIZE = re.compile(r"^\s*([0-9.]+)\s*(px|em|pt)?", re.IGNORECASE)
_TEXT_PATTERN = re.compile(r"<text\b[^>]*>(.*?)</text\s*>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^>]*>")
_SPACE = re.compile(r"\s+")
STOP_WORDS = frozenset(
    "that this with from have into over under above below there their them they each every which where while about"
    " along around between behind should would could than then some like also more most much many only other such"
    " very been being what when your the and are has its one two three four five".split()
)


@dataclass(frozen=True, slots=True)
class TextTraits:
    chars: int  # characters of text drawn (whitespace not counted)
    area_share: float  # the share of the page the text covers (estimated), 0..1
    echoed: int  # requirement words the text repeats
    echo_share: float  # of the requirements' words, 0..1


NO_TEXT = TextTraits(0, 0.0, 0, 0.0)


def svg_key(svg: str) -> str:
    """The same key for the same SVG whatever its whitespace."""
    return hashlib.sha256(_SPACE.sub(" ", svg).strip().encode("utf-8", "replace")).hexdigest()[:32]


def requirement_words(requirements: list[str] | tuple[str, ...]) -> frozenset[str]:
    return frozenset(w for r in requirements for w in _WORD.findall(r.lower()) if w not in STOP_WORDS)


def _font_px(value: str | None, inherited: float) -> float:
    if not value:
        return inherited
    found = _SIZE.match(value)
    if not found:
        return inherited
    try:
        number = float(found.group(1))
    except ValueError:
        return inherited
    unit = (found.group(2) or "px").lower()
    return number * (inherited if unit == "em" else 1.333 if unit == "pt" else 1.0)


def _element_font(elem: Element, inherited: float) -> float:
    size = _font_px(elem.get("font-size"), inherited)
    style = elem.get("style") or ""
    found = _FONT_SIZE.search(style)
    if found:
        size = _font_px(found.group(1) + (found.group(2) or ""), inherited)
    return min(max(size, 0.0), 10_000.0)


def _texts(root: Element) -> list[tuple[str, float]]:
    """(text, font size in px) of every ``<text>`` element, its font size inherited from its ancestors."""
    found: list[tuple[str, float]] = []
    stack: list[tuple[Element, float]] = [(root, _element_font(root, DEFAULT_FONT_PX))]
    while stack:
        elem, size = stack.pop()
        if elem.tag.rsplit("}", 1)[-1] == "text":
            found.append(("".join(elem.itertext()), size))
            continue
        stack.extend((child, _element_font(child, size)) for child in elem)
    return found


def text_traits(svg: str, requirements: list[str] | tuple[str, ...]) -> TextTraits:
    """How much text ``svg`` draws and how much of it repeats ``requirements`` (see the module docstring)."""
    if "<text" not in svg and "<TEXT" not in svg.upper():
        return NO_TEXT
    try:
        texts = _texts(parse_xml(svg.strip()))
    except (ParseError, RenderError, ValueError):
        texts = [(_TAG.sub("", m.group(1)), DEFAULT_FONT_PX) for m in _TEXT_PATTERN.finditer(svg[:1_000_000])]
    except RecursionError:
        return NO_TEXT
    if not texts:
        return NO_TEXT
    try:
        width, height = own_size(svg)
    except (RenderError, RecursionError):
        width, height = 512, 512
    chars = area = 0.0
    words: set[str] = set()
    for text, size in texts:
        count = sum(1 for c in text if not c.isspace())
        chars += count
        area += count * CHAR_WIDTH * size * size
        words.update(_WORD.findall(text.lower()))
    wanted = requirement_words(requirements)
    echoed = len(wanted & words)
    return TextTraits(
        int(chars),
        min(1.0, area / max(1, width * height)),
        echoed,
        echoed / len(wanted) if wanted else 0.0,
    )


def thumbnail(png: bytes | None) -> bytes | None:
    """The picture on white, grey, :data:`THUMB` × :data:`THUMB` (None when there is no readable picture)."""
    picture = open_picture(png)
    if picture is None:
        return None
    from PIL import Image

    factor = max(1, min(picture.size) // (THUMB * 4))
    shrunk = picture.reduce(factor) if factor > 1 else picture  # shrunk before the rest
    return on_background(shrunk, (255, 255, 255)).convert("L").resize((THUMB, THUMB), Image.Resampling.BOX).tobytes()


def similarity(a: bytes, b: bytes) -> float:
    """1 − the mean absolute difference of two thumbnails / 255: 1.0 for the same picture."""
    if len(a) != len(b) or not a:
        return 0.0
    return 1.0 - sum(abs(x - y) for x, y in zip(a, b)) / (255 * len(a))
