"""The demo simulator's pictures relate to their prompt: a login screen draws a phone with fields and a button, a
flag draws stripes, a bar chart axes and bars, a snowman three stacked white circles, a pie chart wedges."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from importlib import resources

import pytest

from svgagent.core.sim.content import make_svg
from svgagent.core.sim.motifs import motif_for

NS = "{http://www.w3.org/2000/svg}"


def elements(prompt: str, quality: str = "good", seed: int = 7) -> list[ET.Element]:
    """The drawn elements (inside the req-N groups) of the simulated good answer to ``prompt``."""
    root = ET.fromstring(make_svg(seed, prompt, 0, quality, 8))  # type: ignore[arg-type]
    return [e for g in root.iter(f"{NS}g") for e in g]


def tags(found: list[ET.Element], tag: str) -> list[ET.Element]:
    return [e for e in found if e.tag == f"{NS}{tag}"]


def num(e: ET.Element, name: str) -> float:
    return float(e.get(name, "0"))


@pytest.mark.parametrize("seed", [1, 7, 99])
def test_a_login_screen_draws_a_phone_with_two_fields_and_a_button(seed: int) -> None:
    found = elements("Write `svg` code to draw a mobile app login screen mock-up.", seed=seed)
    rects = tags(found, "rect")
    phone = rects[0]
    assert num(phone, "height") > num(phone, "width")
    assert num(phone, "rx") > 0  # tall, rounded
    fields = [r for r in rects if r.get("fill") == "#f1f1f1"]
    assert len(fields) == 2
    assert all(num(f, "width") > 3 * num(f, "height") for f in fields)
    texts = [t.text for t in tags(found, "text")]
    assert "Log in" in texts
    assert "email" in texts
    assert tags(found, "circle")  # the logo


def test_a_flag_draws_equal_stripes_and_a_named_flag_its_colours() -> None:
    found = elements("Draw the French flag.")
    stripes = [r for r in tags(found, "rect") if num(r, "height") == 120 and num(r, "width") == 60]
    assert [r.get("fill") for r in stripes] == ["#0055a4", "#ffffff", "#ef4135"]  # blue, white, red, side by side
    assert [num(r, "x") for r in stripes] == [42, 102, 162]
    for seed in (1, 2, 3, 4):
        found = elements("A flag for a small sailing club", seed=seed)
        stripes = [
            r
            for r in tags(found, "rect")
            if num(r, "width") in (60, 180) and num(r, "height") in (40, 120) and r.get("fill") != "none"
        ]
        assert len(stripes) == 3
        assert len({r.get("fill") for r in stripes}) == 3
        assert len({(num(r, "width"), num(r, "height")) for r in stripes}) == 1  # equal stripes


def test_a_bar_chart_draws_two_axes_and_six_bars() -> None:
    found = elements("Write `svg` code to draw a bar chart of monthly rainfall.")
    axes = tags(found, "line")
    assert len(axes) == 2
    assert {(num(a, "x1") == num(a, "x2")) for a in axes} == {True, False}  # vertical+horizontal
    bars = tags(found, "rect")
    assert len(bars) == 6
    assert {num(b, "y") + num(b, "height") for b in bars} == {220}  # standing on the x axis


def test_a_snowman_is_three_stacked_white_circles_and_a_pie_chart_is_wedges() -> None:
    found = elements("Write `svg` code to draw a snowman in a snowy garden.")
    body = [c for c in tags(found, "circle") if c.get("fill") == "#ffffff"]
    assert len(body) == 3
    assert [num(c, "r") for c in body] == sorted((num(c, "r") for c in body), reverse=True)  # largest at the bottom
    assert [num(c, "cy") for c in body] == sorted((num(c, "cy") for c in body), reverse=True)
    found = elements("Write `svg` code to draw a pie chart of a household budget.")
    wedges = [p for p in tags(found, "path") if " A" in p.get("d", "")]
    assert len(wedges) == 4
    assert len({w.get("fill") for w in wedges}) == 4


def test_every_builtin_demo_prompt_draws_its_subject_and_partial_draws_less() -> None:
    rows = json.loads(resources.files("svgagent.core").joinpath("data/builtin.json").read_text(encoding="utf-8"))
    assert len(rows) > 20
    for row in rows:
        assert motif_for(row["prompt"]) is not None, row["prompt"]
        assert len(elements(row["prompt"], "partial")) < len(elements(row["prompt"], "good"))
        groups = ET.fromstring(make_svg(7, row["prompt"], 0, "good", len(row["requirements"]))).iter(f"{NS}g")
        assert len(list(groups)) == len(row["requirements"])  # one group per requirement, as without a motif


def test_a_prompt_no_motif_knows_gets_one_abstract_shape_per_requirement() -> None:
    assert motif_for("Something entirely unlike anything else") is None
    assert motif_for("A lighthouse at dusk") is None  # words match whole: not "house"
    root = ET.fromstring(make_svg(7, "Something entirely unlike anything else", 0, "good", 6))
    assert len(list(root.iter(f"{NS}g"))) == 6
