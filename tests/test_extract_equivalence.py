"""The svg-tag scan extraction uses (core/scoring/extract.py ``_svg_tags``: one regex match per svg tag, the other
tags skipped inside the regex engine) finds exactly the svg tags of the full token scan (``_tokens``, one match per
token, as before): on hostile and odd texts, and on random texts built from the pieces that matter (tags, quotes,
comments, CDATA, processing instructions, declarations, stray '<' and '>')."""

from __future__ import annotations

import random

import pytest

from svgagent.core.scoring import extract
from svgagent.core.scoring.extract import extract_svg

ODD = [
    '<svg width="1"><rect/></svg>',
    "<SVG><Svg></sVg></SVG>",
    '<svg><!-- <svg> --></svg><svg a="1"></svg>',
    "<svg><!-- never closed </svg>",
    "<svg><![CDATA[ </svg> ]]></svg>",
    "<svg><![cdata[ </svg> ]]></svg>",  # CDATA is case-sensitive: this one is a stray '<'
    "<?xml version='1.0'?><svg></svg>",
    "<? unterminated <svg></svg>",
    '<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "x.dtd"><svg></svg>',
    '<!DOCTYPE x [<!ENTITY a "<svg>">]><svg></svg>',
    '<text title="<svg>">x</text><svg></svg>',
    "<text title='</svg>'>x</text><svg></svg>",
    '<a title="x> <svg xmlns="ns"><rect/></svg>',  # an unclosed quote that another attribute closes
    '<a title="x> <svg>"><svg></svg>',
    '<svg/><svg /><svg a="1"/><svg a="/"></svg>',
    "<svgx></svgx><svg:g></svg:g><svg\t\n></svg\n>",
    "</svg ><svg>< svg></svg>",
    "<svg",
    "</svg",
    "<svg a='1",
    "<<svg>>",
    "<svg>></svg>>",
    "a < b > c <svg>d</svg> e <",
    "<svg><style>a > b { }</style><script>if (a<b) {}</script></svg>",
    "<svg a=\">\"><rect b='>'/></svg>",
    '<svg a="1" b=\'2"\'></svg>',
    "<!----><svg></svg><!-->x--><svg></svg>",
    "<!--><svg></svg>",
    "<!x <svg></svg>",
    "<?><svg></svg>?>",
    "<svg>" * 50 + "</svg>" * 49,
    "Here's the \"drawing\": <svg viewBox='0 0 1 1'><path d=\"M0 0\"/></svg> isn't it",
]

PIECES = [
    "<svg>",
    "</svg>",
    "<SVG ",
    "<svg/>",
    "<svg",
    "</svg",
    "<g>",
    "</g>",
    "<a ",
    "<!-- ",
    " -->",
    "<![CDATA[",
    "]]>",
    "<?",
    "?>",
    "<!",
    "<!DOCTYPE ",
    '"',
    "'",
    "<",
    ">",
    "/",
    " ",
    "\n",
    "x",
    "=",
    "title=",
    "svg",
    "<svg:g>",
    "<text>",
    "```svg\n",
    "```",
    "<think>",
    "</think>",
]


def _full_scan(text: str) -> list[tuple[bool, int, int]]:
    return [
        (t.kind == "open", t.start, t.end)
        for t in extract._tokens(text)
        if t.name == "svg" and not (t.kind == "open" and t.self_closing)
    ]


@pytest.mark.parametrize("text", ODD)
def test_the_svg_tags_are_the_full_scans(text: str) -> None:
    assert list(extract._svg_tags(text)) == _full_scan(text)


def test_quoted_lt_hides_a_tag_in_both() -> None:
    text = '<text title="<svg>">x</text><svg></svg>'
    assert list(extract._svg_tags(text)) == _full_scan(text) == [(True, 28, 33), (False, 33, 39)]


def test_random_texts_agree() -> None:
    rng = random.Random(1301)
    found = 0
    for _ in range(4000):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 30)))
        tags = list(extract._svg_tags(text))
        assert tags == _full_scan(text), text
        found += bool(tags)
    assert found > 1000  # texts with svg tags were exercised, not only texts without


def test_a_realistic_answer_extracts_the_same() -> None:
    svg = (
        '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 256 256">\n  <!-- a comment -->\n'
        + "".join(f'  <g id="r{i}"><rect x="{i}" y="2" width="3" height="4" fill="#123456"/></g>\n' for i in range(40))
        + "</svg>"
    )
    answer = f"Here's the drawing you asked for.\n\n```svg\n{svg}\n```\n"
    assert list(extract._svg_tags(svg)) == _full_scan(svg)
    assert extract_svg(answer).svg == svg


# The attribute pattern as it was, one alternative tried per character: the possessive runs must match the same.
_PER_CHARACTER = r"""(?:"[^"]*"|'[^']*'|[^'"<>])*"""


def test_the_possessive_attribute_runs_match_what_the_per_character_form_matched() -> None:
    import re

    pairs = [
        (re.compile(r"<([A-Za-z_][\w:.-]*)(?=[\s/>])(" + _PER_CHARACTER + ")>"), extract._OPEN_TAG),
        (re.compile(r"<!" + _PER_CHARACTER + ">"), extract._DECLARATION),
        (re.compile(r"<svg(?=[\s/>])" + _PER_CHARACTER + ">", re.IGNORECASE), extract._SVG_OPEN),
    ]
    assert all(new.pattern != old.pattern for old, new in pairs)
    rng = random.Random(1302)
    texts = ODD + ["".join(rng.choice(PIECES) for _ in range(rng.randint(1, 30))) for _ in range(3000)]
    matched = 0
    for text in texts:
        for old, new in pairs:
            for at in range(len(text)):
                was, now = old.match(text, at), new.match(text, at)
                assert (was and (was.span(), was.groups())) == (now and (now.span(), now.groups())), (text, at)
                matched += was is not None
    assert matched > 3000
