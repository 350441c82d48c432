"""Which kind of thing a requirement asks for — colour, position, count, text, shape — from its words.

A small keyword table, read on whole words (case-insensitive): "a red circle in the top-left corner" is colour,
position and shape; a requirement no word of the table matches is ``other``. It is a rough guide to what a model
misses most (the leaderboard's failure themes), not a parser: "orange" the fruit is a colour here.
"""

from __future__ import annotations

import re
from functools import cache

THEMES = ("colour", "position", "count", "text", "shape")
OTHER = "other"

_WORDS: dict[str, tuple[str, ...]] = {
    "colour": (
        "colour", "color", "colours", "colors", "coloured", "colored", "red", "green", "blue", "yellow", "orange",
        "purple", "violet", "pink", "brown", "black", "white", "gray", "grey", "golden", "gold", "silver", "cyan",
        "magenta", "teal", "navy", "beige", "turquoise", "crimson", "maroon", "tan", "dark", "light", "pale",
        "bright", "gradient", "striped", "stripes", "transparent", "shade", "hue",
    ),
    "position": (
        "left", "right", "top", "bottom", "above", "below", "under", "underneath", "beneath", "over", "center",
        "centre", "centered", "centred", "middle", "corner", "beside", "next", "behind", "front", "inside", "within",
        "around", "between", "near", "edge", "upper", "lower", "background", "foreground", "atop", "overlapping",
        "aligned", "side", "horizon", "horizontal", "vertical", "diagonal", "facing", "pointing",
    ),
    "count": (
        "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve", "dozen",
        "single", "pair", "couple", "several", "multiple", "many", "both", "each", "exactly", "at least",
        "number", "count", "twin", "double", "triple", "once", "twice",
    ),
    "text": (
        "text", "label", "labelled", "labeled", "word", "words", "letter", "letters", "says", "saying", "reads",
        "reading", "written", "writing", "title", "caption", "sign", "font", "typography", "spelled", "spelling",
        "inscription", "banner", "name", "digits",
    ),
    "shape": (
        "circle", "circles", "circular", "square", "squares", "triangle", "triangles", "triangular", "rectangle",
        "rectangles", "rectangular", "star", "stars", "oval", "ellipse", "polygon", "hexagon", "pentagon",
        "diamond", "heart", "line", "lines", "curve", "curved", "arc", "round", "rounded", "shape", "shaped",
        "outline", "spiral", "wave", "wavy", "zigzag", "dot", "dots", "ring", "cone", "cube", "sphere", "cylinder",
        "arrow", "cross", "crescent", "pointed", "jagged", "symmetrical", "symmetric",
    ),
}  # fmt: skip

_DIGITS = re.compile(r"\b\d+\b")
_QUOTED = re.compile(r"[\"“”'‘’«][^\"“”'‘’«»]{1,60}[\"“”'‘’»]")  # a quoted word or phrase: text to be drawn


@cache
def _patterns() -> dict[str, re.Pattern[str]]:
    return {
        theme: re.compile(r"\b(?:" + "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)) + r")\b")
        for theme, words in _WORDS.items()
    }


@cache
def themes_of(requirement: str) -> tuple[str, ...]:
    """The themes of one requirement, in :data:`THEMES` order; ``("other",)`` when none matches."""
    text = requirement.lower()
    found = {theme for theme, pattern in _patterns().items() if pattern.search(text)}
    if _DIGITS.search(text):
        found.add("count")
    if _QUOTED.search(requirement):
        found.add("text")
    return tuple(t for t in THEMES if t in found) or (OTHER,)
