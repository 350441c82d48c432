"""The picture size of the browser page Eval Protocol's quickstart evaluator and SVGBench render an SVG on.

Their page is sized by the SVG itself (:func:`own_size`), in this order:

1. the root's ``width`` and ``height``, both given and both readable (:func:`page_length`: ``px`` as is, ``pt`` ×
   1.33, ``pc`` × 16, ``mm`` × 3.78, ``cm`` × 37.8, ``in`` × 96, another unit × 1, ``%`` of 1000; whole pixels,
   rounded down);
2. else a ``viewBox`` of four whitespace-separated numbers: its width and height, grown to the drawing's rough
   extent when that is larger (extent + twice the distance of its top-left corner from the origin);
3. else the drawing's rough extent plus a 20 px margin on each side, at least 200 × 200;
4. else 800 × 600.

The extent is estimated from the attributes of ``rect``, ``circle``, ``ellipse``, ``line``, ``polygon``, ``path``
(every number in its data, read as x, y pairs) and ``text`` (0.6 em per character) elements, matched by the end of
their tag names as those evaluators match them (so ``polyline`` is read as a ``line`` and ``clipPath`` as a
``path``). A document that is not well-formed XML falls back to the first ``width=``/``height=`` numbers in its
text, then a ``viewBox``. These are the evaluators' rules, quirks included, re-implemented here: the same SVG gets
the same page size.

svgagent adds its sandbox's limits: a side is at least 1 px, and a picture whose longest side exceeds
:data:`MAX_OWN_SIDE` is scaled down to it, keeping its aspect. XML entities are refused, as everywhere else.
A size that cannot be computed (an infinite or NaN extent, where those evaluators fail their render) raises
:class:`RenderError`.
"""

from __future__ import annotations

import math
import re
from xml.etree.ElementTree import Element, ParseError

from svgagent.core.scoring.errors import RenderError

__all__ = ["MAX_OWN_SIDE", "OWN_SIZE", "own_size", "page_length", "parse_xml"]

OWN_SIZE = 0  # the render size that asks for the SVG's own size (this module's rule) instead of a longest side
MAX_OWN_SIDE = 4096
DEFAULT_PAGE = (800, 600)
_MARGIN = 20
_MIN_SIDE = 200
_UNIT = {"px": 1.0, "pt": 1.33, "pc": 16.0, "mm": 3.78, "cm": 37.8, "in": 96.0}
_LENGTH = re.compile(r"(\d+(?:\.\d+)?)\s*([a-z%]*)")
_PATH_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_FONT_DIGITS = re.compile(r"\d+")
_TEXT_WIDTH = re.compile(r"""width\s*=\s*["']?(\d+(?:\.\d+)?)["']?""", re.IGNORECASE)
_TEXT_HEIGHT = re.compile(r"""height\s*=\s*["']?(\d+(?:\.\d+)?)["']?""", re.IGNORECASE)
_TEXT_VIEWBOX = re.compile(r"""viewBox\s*=\s*["']([^"']+)["']""", re.IGNORECASE)

Box = tuple[float, float, float, float]


class _Unsized(Exception):
    """The evaluators' own computation would fail here (their render fails)."""


def page_length(text: str) -> int | None:
    """A root ``width``/``height`` in whole page pixels by the evaluators' table, or None when unreadable."""
    text = text.strip()
    if text.endswith("%"):
        try:
            return int(1000 * float(text[:-1]) / 100)
        except ValueError:
            return None
        except OverflowError:
            raise _Unsized from None
    match = _LENGTH.fullmatch(text.lower())
    try:
        if match:
            return int(float(match.group(1)) * _UNIT.get(match.group(2) or "px", 1.0))
        return int(float(text))
    except ValueError:
        return None
    except OverflowError:
        raise _Unsized from None


def _numbers(elem: Element, *names: str) -> list[float]:
    return [float(elem.get(name, 0)) for name in names]


def _element_box(elem: Element) -> Box | None:
    tag = elem.tag.lower() if isinstance(elem.tag, str) else ""
    try:
        if tag.endswith("rect"):
            x, y, w, h = _numbers(elem, "x", "y", "width", "height")
            return x, y, x + w, y + h
        if tag.endswith("circle"):
            cx, cy, r = _numbers(elem, "cx", "cy", "r")
            return cx - r, cy - r, cx + r, cy + r
        if tag.endswith("ellipse"):
            cx, cy, rx, ry = _numbers(elem, "cx", "cy", "rx", "ry")
            return cx - rx, cy - ry, cx + rx, cy + ry
        if tag.endswith("line"):  # polyline too, as in the evaluators
            x1, y1, x2, y2 = _numbers(elem, "x1", "y1", "x2", "y2")
            return min(x1, x2), min(y1, y2), max(x1, x2), max(y1, y2)
        if tag.endswith("polygon"):
            coords = []
            for part in (elem.get("points") or "").replace(",", " ").split():
                try:
                    coords.append(float(part))
                except ValueError:
                    continue
            return _pairs_box(coords, 4)
        if tag.endswith("path"):  # clipPath and textPath too
            return _pairs_box([float(n) for n in _PATH_NUMBER.findall(elem.get("d") or "")], 2)
        if tag.endswith("text"):
            x, y = _numbers(elem, "x", "y")
            digits = _FONT_DIGITS.search(str(elem.get("font-size", "12")))
            size = float(digits.group()) if digits else 12.0
            return x, y - size, x + len(elem.text or "") * 0.6 * size, y
    except (ValueError, TypeError):
        return None
    return None


def _pairs_box(coords: list[float], least: int) -> Box | None:
    if len(coords) < least:
        return None
    xs, ys = coords[0::2], coords[1::2]
    return min(xs), min(ys), max(xs), max(ys)


def _extent(root: Element) -> Box | None:
    boxes = [box for box in map(_element_box, root.iter()) if box]
    if not boxes:
        return None
    return (
        min(b[0] for b in boxes),
        min(b[1] for b in boxes),
        max(b[2] for b in boxes),
        max(b[3] for b in boxes),
    )


def _whole(value: float) -> int:
    try:
        return int(value)
    except (OverflowError, ValueError):
        raise _Unsized from None


def _parsed_size(root: Element) -> tuple[int, int] | None:
    width, height, viewbox = root.get("width"), root.get("height"), root.get("viewBox")
    if width and height:
        w, h = page_length(width), page_length(height)
        if w and h:
            return w, h
    extent: Box | None = None
    if viewbox:
        parts = viewbox.split()
        if len(parts) >= 4:
            try:
                _, _, vw, vh = (float(p) for p in parts[:4])
                extent = _extent(root)
                if extent is None:
                    return int(vw), int(vh)
                min_x, min_y, max_x, max_y = extent
                return (
                    int(max(vw, max_x - min_x + abs(min_x) * 2)),
                    int(max(vh, max_y - min_y + abs(min_y) * 2)),
                )
            except ValueError:  # unreadable numbers, or a NaN size: the extent decides, as below
                pass
            except OverflowError:
                raise _Unsized from None
    extent = _extent(root)
    if extent is None:
        return None
    min_x, min_y, max_x, max_y = extent
    return (
        max(_whole(max_x - min_x + 2 * _MARGIN), _MIN_SIDE),
        max(_whole(max_y - min_y + 2 * _MARGIN), _MIN_SIDE),
    )


def _text_size(text: str) -> tuple[int, int] | None:
    """The fallback for text that is not well-formed XML: numbers found in it by pattern."""
    try:
        width, height = _TEXT_WIDTH.search(text), _TEXT_HEIGHT.search(text)
        if width and height:
            return int(float(width.group(1))), int(float(height.group(1)))
        viewbox = _TEXT_VIEWBOX.search(text)
        if viewbox:
            parts = viewbox.group(1).split()
            if len(parts) >= 4:
                return int(float(parts[2])), int(float(parts[3]))
    except (ValueError, OverflowError, IndexError):
        pass
    return None


def parse_xml(text: str) -> Element:
    """The XML tree of ``text`` with entities refused (RenderError); ParseError when it is not well-formed."""
    from defusedxml import EntitiesForbidden, ExternalReferenceForbidden, NotSupportedError
    from defusedxml.ElementTree import fromstring

    try:
        return fromstring(text, forbid_dtd=False, forbid_entities=True, forbid_external=True)
    except EntitiesForbidden:
        raise RenderError("SVG declares XML entities, which are refused (entity expansion attack?)") from None
    except (ExternalReferenceForbidden, NotSupportedError):
        raise RenderError("SVG references an external DTD or entity, which is refused") from None


def own_size(svg: str | bytes) -> tuple[int, int]:
    """(width, height) in px of the page the SVG is drawn on (the module docstring's rule and limits)."""
    text = svg.decode("utf-8", "replace") if isinstance(svg, bytes) else svg
    try:
        try:
            size = _parsed_size(parse_xml(text.strip()))
        except ParseError:
            size = _text_size(text)
    except _Unsized:
        raise RenderError("the SVG's own picture size cannot be computed (an infinite or undefined extent)") from None
    except RecursionError:
        raise RenderError("SVG is nested too deeply to render") from None
    width, height = size or DEFAULT_PAGE
    width, height = max(1, width), max(1, height)
    longest = max(width, height)
    if longest > MAX_OWN_SIDE:
        scale = MAX_OWN_SIDE / longest
        width, height = max(1, math.floor(width * scale)), max(1, math.floor(height * scale))
    return width, height
