"""Cheap checks that refuse, in milliseconds, small SVGs whose render would hold a worker for the whole timeout.

Two shapes of SVG cost far more to draw than their size suggests:

- **absurd numbers**: a radius of ``inf`` (``1e400`` overflows to it) or ``1e20`` makes cairo flatten an arc into
  an astronomical number of segments; ``nan`` poisons every computation after it. No picture needs a coordinate,
  length or scale beyond :data:`MAX_ABS_NUMBER` user units, so any attribute or CSS value holding a non-finite or
  larger number is refused.
- **``<use>`` fan-out**: ten ``<use>`` of a group of ten ``<use>`` of ... expands exponentially (cairosvg re-parses
  the target for every reference); a ``<use>`` inside what it references never ends. The number of elements the
  document draws once every reference is expanded is counted up front, without drawing anything, and refused over
  :data:`MAX_DRAWN_ELEMENTS` (or when references form a cycle).

Both checks first look at the raw bytes with one regular expression or substring test, so an ordinary SVG pays
microseconds. Whatever passes is still bounded by the worker's timeout and memory limit: these checks only make the
common pathological cases fail fast. Standard library, plus defusedxml (cairosvg's own XML parser) for an SVG nested
in a ``data:`` URL; this module ships in the RFT bundle and runs on Python 3.10+.
"""

from __future__ import annotations

import math
import re

from svgagent.core.scoring.errors import RenderError

MAX_ABS_NUMBER = 1e9
MAX_DRAWN_ELEMENTS = 50_000

# The byte-level test for "may hold a number beyond the limit or not finite" (a positive exponent, ten or more digits
# in a row, nan/inf anywhere) runs on the document with digits folded to "0" by bytes.translate: C speed, where a
# regular expression over the whole document cost milliseconds. Hex colours (#1e9999) and fragment references
# (url(#g1e5)) look like numbers and are not: they are blanked first.
_HASHED_BYTES = re.compile(rb"#[\w-]*")
_FOLD = bytes(0x30 if 0x30 <= b <= 0x39 else b for b in range(256)).replace(b"E", b"e")
_SUSPECT_FOLDED = (b"0e0", b"0e+0", b".e0", b".e+0", b"0" * 10)
_HASHED = re.compile(r"#[\w-]*")
_NUMBER_TOKEN = re.compile(
    r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|(?<![A-Za-z])(?:nan|inf(?:inity)?)(?![A-Za-z])", re.IGNORECASE
)
# Attributes that hold names or references, never numbers cairosvg reads.
_TEXT_ATTRIBUTES = frozenset(
    (
        "id",
        "class",
        "href",
        "{http://www.w3.org/1999/xlink}href",
        "font-family",
        "lang",
        "{http://www.w3.org/XML/1998/namespace}lang",
        "{http://www.w3.org/XML/1998/namespace}space",
        "{http://www.w3.org/XML/1998/namespace}base",
        "type",
        "media",
        "title",
    )
)
_HREFS = ("href", "{http://www.w3.org/1999/xlink}href")


def check_render_cost(data: bytes, root=None) -> None:
    """Raise :class:`RenderError` if the SVG ``data`` holds an absurd number or expands beyond
    :data:`MAX_DRAWN_ELEMENTS` drawn elements through ``<use>``.

    ``root`` is the document's parsed ElementTree root element; without it (an SVG embedded as a ``data:`` URL) the
    bytes are parsed here, entities refused, only when the cheap byte checks find something to look at."""
    folded = _HASHED_BYTES.sub(b"#", data).translate(_FOLD)
    lowered = data.lower()
    suspect = any(token in folded for token in _SUSPECT_FOLDED) or b"nan" in lowered or b"inf" in lowered
    has_use = b"<use" in data or b":use" in data
    if root is None:
        if not (suspect or has_use):
            return
        root = _parse(data)
        if root is None:
            return  # not well-formed: cairosvg reports it
    if suspect:
        _check_numbers(root)
    _check_expansion(root, has_use=has_use)


def _parse(data: bytes):
    from xml.etree.ElementTree import ParseError

    from defusedxml import DefusedXmlException
    from defusedxml.ElementTree import fromstring

    try:
        return fromstring(data, forbid_dtd=False, forbid_entities=True, forbid_external=True)
    except (ParseError, DefusedXmlException, ValueError):
        return None


def _local(tag) -> str:
    return tag.rpartition("}")[2] if isinstance(tag, str) else ""


def _bad_number(text: str) -> str | None:
    for match in _NUMBER_TOKEN.finditer(_HASHED.sub("#", text)):
        value = float(match.group())
        if not math.isfinite(value) or abs(value) > MAX_ABS_NUMBER:
            return match.group()
    return None


def _check_numbers(root) -> None:
    for element in root.iter():
        values = [(name, value) for name, value in element.attrib.items() if name not in _TEXT_ATTRIBUTES]
        if _local(element.tag) == "style" and element.text:
            values.append(("<style>", element.text))
        for name, value in values:
            bad = _bad_number(value)
            if bad is not None:
                what = "not finite" if not math.isfinite(float(bad)) else f"beyond ±{MAX_ABS_NUMBER:g}"
                raise RenderError(
                    f"SVG {_local(name) or name} holds {bad[:20]}, {what}: refused up front "
                    "(such values hang the renderer)"
                )


def _check_expansion(root, *, has_use: bool) -> None:
    """Count the elements drawn with every ``<use>`` expanded, bottom-up with memoisation (iterative: documents may
    nest deeply); a reference back into an element being counted is a cycle."""
    if not has_use:
        count = sum(1 for _ in root.iter())
        if count > MAX_DRAWN_ELEMENTS:
            raise RenderError(f"SVG has {count} elements, more than the renderer draws ({MAX_DRAWN_ELEMENTS})")
        return
    by_id = {element.get("id"): element for element in root.iter() if element.get("id")}
    counted: dict[int, int] = {}
    in_progress: set[int] = set()
    stack = [(root, False)]
    while stack:
        element, children_done = stack.pop()
        key = id(element)
        if key in counted:
            continue
        target = _use_target(element, by_id)
        if not children_done:
            in_progress.add(key)
            stack.append((element, True))
            for child in (*element, *((target,) if target is not None else ())):
                if id(child) in in_progress:
                    raise RenderError("SVG <use> references form a cycle (an element uses itself): refused")
                if id(child) not in counted:
                    stack.append((child, False))
            continue
        in_progress.discard(key)
        total = 1 + sum(counted[id(child)] for child in element)
        if target is not None:
            total += counted[id(target)]
        if total > MAX_DRAWN_ELEMENTS:
            raise RenderError(f"SVG expands to more than {MAX_DRAWN_ELEMENTS} drawn elements through <use>: refused")
        counted[key] = total


def _use_target(element, by_id):
    if _local(element.tag) != "use":
        return None
    for name in _HREFS:
        href = element.get(name)
        if href:
            return by_id.get(href[1:]) if href.startswith("#") else None
    return None
