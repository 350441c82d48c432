"""Exact shortcuts for the helpers cairosvg calls hundreds of times per render, installed in its modules.

cairosvg turns every length, point and colour of a document into numbers with small helpers that run regular
expressions through ``re``'s module functions (a pattern-cache lookup per call) even where the answer is plain:
``size("35%")`` normalises the string with three substitutions before reading the number, ``point`` looks its
pattern up for every coordinate pair, ``color("#a1b2c3")`` tries named colours, ``rgba()`` and ``rgb()`` before
the hex forms, ``paint`` searches every fill and stroke for ``url(…)``. On bench/render.py's corpus (gradients
with percentage stops, random hex colours, bezier paths) that was about a tenth of a render's CPU.

Each shortcut answers exactly what cairosvg's function answers, and hands every input it does not recognise to
the function itself:

- ``size``: numbers (cairosvg's own first test) and a plain ``<number>%`` (no space, comma or second dot, so
  cairosvg's normalisation leaves it as it is) are computed the way cairosvg computes them;
- ``normalize``: cairosvg's three substitutions (a space before each ``-`` not after an ``e``, runs of separators to
  one space, a space after ``.<digits>`` followed by a ``.``) done with string methods, for ASCII text without the
  rarer whitespace characters (``str.strip`` counts them, the substitutions do not); remembered for short strings;
  on long path data and point lists the regular expressions were ~5 % of a render;
- ``paint``: cairosvg's own function (pure), remembered for short strings (the same paints recur);
- ``point``: cairosvg's own code with its pattern compiled once;
- ``color``: ``#rrggbb`` and ``#rgb`` (which no named colour, ``rgb()`` or ``rgba()`` can be) read directly;
- ``parse_all_defs`` (the walk over every node for definitions, before drawing): ``parse_def`` only for nodes with
  an ``id``, the only ones it stores.

:func:`install` puts them into every cairosvg module that imported the originals (once per process: the render
workers, or a process rendering in-process); :func:`removed` takes them out for a block, so comparisons with
cairosvg's own behaviour (tests, bench/render.py) see cairosvg as it ships. tests/test_render_fast.py checks each
shortcut against the original on the inputs of the bench corpus and on edge cases.
"""

from __future__ import annotations

import contextlib
import functools
import math
import re
from collections.abc import Iterator

_PERCENT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?%")
_POINT = re.compile("(.*?) (.*?)(?: |$)")  # cairosvg's pattern (helpers.point)
_HEX_DIGITS = frozenset("0123456789abcdef")
_RARE_SPACES = re.compile("[\x0b\x0c\x1c-\x1f]")  # whitespace to str.split/strip, not to cairosvg's patterns
_DOTTED_RUN_END = re.compile(r"(\.[0-9-]+)(?=\.)")  # cairosvg's (helpers.normalize)
_DOTTED_RUN = re.compile(r"\.[0-9-]+\.")  # where it matches
_CACHED_CHARS = 64  # longer strings (path data, long point lists) are rarely seen twice
_MODULES = ("helpers", "bounding_box", "defs", "image", "shapes", "text", "surface", "path", "svg", "colors")


@functools.cache
def shortcuts() -> dict[str, tuple]:
    """``{name: (cairosvg's function, its shortcut)}``, built from the functions cairosvg ships."""
    from cairosvg import colors, defs, helpers

    own_size, own_normalize, own_color, point_error = helpers.size, helpers.normalize, colors.color, helpers.PointError
    own_paint = helpers.paint
    remembered_paint = functools.lru_cache(maxsize=4096)(own_paint)

    def direct_normalize(string):
        if not string.isascii() or _RARE_SPACES.search(string):
            return own_normalize(string)
        string = string.replace("E", "e")
        if "-" in string:  # (?<!e)- -> " -": every "-", then back where an "e" came before it
            string = string.replace("-", " -").replace("e -", "e-")
        string = " ".join(string.replace(",", " ").split())  # [ \n\r\t,]+ -> " ", and the final strip
        if _DOTTED_RUN.search(string):  # (rare: "1.5.5"; the search alone is quicker than the substitution)
            string = _DOTTED_RUN_END.sub(r"\1 ", string)
        return string

    remembered = functools.lru_cache(maxsize=4096)(direct_normalize)

    def normalize(string):
        if type(string) is not str:
            return own_normalize(string)
        return remembered(string) if len(string) <= _CACHED_CHARS else direct_normalize(string)

    def paint(value):
        return remembered_paint(value) if type(value) is str and len(value) <= _CACHED_CHARS else own_paint(value)

    def size(surface, string, reference="xy"):
        if not string:
            return 0
        try:
            return float(string)
        except ValueError:
            pass
        if surface is None or type(string) is not str or not _PERCENT.fullmatch(string):
            return own_size(surface, string, reference)
        if reference == "x":
            reference = surface.context_width or 0
        elif reference == "y":
            reference = surface.context_height or 0
        elif reference == "xy":
            reference = math.hypot(surface.context_width, surface.context_height) / 2**0.5
        return float(string[:-1]) * reference / 100

    def point(surface, string):
        match = _POINT.match(string)
        if match:
            x, y = match.group(1, 2)
            return size(surface, x, "x"), size(surface, y, "y"), string[match.end() :]
        raise point_error

    def color(string, opacity=1):
        if type(string) is str and string[:1] == "#" and len(string) in (4, 7):
            digits = string[1:].lower()
            if _HEX_DIGITS.issuperset(digits):
                if len(digits) == 6:
                    return int(digits[0:2], 16) / 255, int(digits[2:4], 16) / 255, int(digits[4:6], 16) / 255, opacity
                return int(digits[0], 16) / 15, int(digits[1], 16) / 15, int(digits[2], 16) / 15, opacity
        return own_color(string, opacity)

    own_parse_def = defs.parse_def

    def parse_all_defs(surface, node):
        if "id" in node:  # parse_def stores only nodes with an id (its test, per definition type)
            own_parse_def(surface, node)
        if node.children:
            for child in node.children:
                parse_all_defs(surface, child)

    return {
        "parse_all_defs": (defs.parse_all_defs, parse_all_defs),
        "size": (own_size, size),
        "normalize": (own_normalize, normalize),
        "point": (helpers.point, point),
        "color": (own_color, color),
        "paint": (own_paint, paint),
    }


def _swap(to_shortcut: bool) -> None:
    import importlib

    for module_name in _MODULES:
        module = importlib.import_module(f"cairosvg.{module_name}")
        for name, (own, fast) in shortcuts().items():
            current = getattr(module, name, None)
            if current is own or current is fast:
                setattr(module, name, fast if to_shortcut else own)


def install() -> None:
    """Put the shortcuts into cairosvg's modules (idempotent)."""
    _swap(True)


@contextlib.contextmanager
def removed() -> Iterator[None]:
    """Within the block, cairosvg's modules hold their own functions (for comparisons: tests, bench/render.py)."""
    installed = shortcuts()["size"][1] is __import__("cairosvg.helpers").helpers.size
    _swap(False)
    try:
        yield
    finally:
        if installed:
            _swap(True)
