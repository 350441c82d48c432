"""Small SVGs that would hold a render worker until its timeout are refused up front (issue 10, item 20).

No clocks: a refusal must come from the up-front check (its reason, and no drawing at all), and through the worker
pool with a long timeout it must come back as that reason, not as "timed out".
"""

from __future__ import annotations

import asyncio
import base64

import pytest

from svgagent.core.scoring import render_guard
from svgagent.core.scoring.errors import RenderError
from svgagent.core.scoring.render import Renderer, render_svg_to_png

NS = 'xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink"'


def _svg(body: str) -> str:
    return f'<svg {NS} width="100" height="100">{body}</svg>'


def _fan_out(levels: int, width: int = 10) -> str:
    chain = "".join(f'<g id="l{i}">' + f'<use xlink:href="#l{i - 1}"/>' * width + "</g>" for i in range(1, levels + 1))
    return _svg(f'<defs><rect id="l0" width="1" height="1"/>{chain}</defs><use href="#l{levels}"/>')


ABSURD = {
    "infinite_radius": (_svg('<circle cx="50" cy="50" r="1e400" stroke="#000"/>'), "not finite"),
    "inf_radius_word": (_svg('<circle cx="50" cy="50" r="inf"/>'), "not finite"),
    "nan_coordinate": (_svg('<circle cx="NaN" cy="50" r="5"/>'), "not finite"),
    "nan_in_path": (_svg('<path d="M0 0 L nan 5 L 10 10 Z" stroke="#000"/>'), "not finite"),
    "nan_transform": (_svg('<g transform="rotate(nan)"><rect width="5" height="5"/></g>'), "not finite"),
    "inf_in_style_attribute": (_svg('<circle cx="50" cy="50" style="r: Infinity" r="5"/>'), "not finite"),
    "inf_in_stylesheet": (
        _svg('<style>rect { stroke-width: 1e999 }</style><rect width="9" height="9"/>'),
        "not finite",
    ),
    "huge_radius": (_svg('<circle cx="50" cy="50" r="1e20" stroke="#000"/>'), "beyond"),
    "huge_digits": (_svg('<circle cx="50" cy="50" r="' + "9" * 30 + '"/>'), "beyond"),
    "huge_stroke": (_svg('<rect width="9" height="9" stroke="#000" stroke-width="1e300"/>'), "beyond"),
}
EXPANDING = {
    "use_fan_out": (_fan_out(6), "drawn elements"),
    "use_cycle": (_svg('<g id="a"><rect width="5" height="5"/><use href="#a"/></g>'), "cycle"),
    "use_mutual_cycle": (_svg('<g id="a"><use href="#b"/></g><g id="b"><use xlink:href="#a"/></g>'), "cycle"),
}
NESTED_FAN_OUT = _svg(
    '<image width="50" height="50" href="data:image/svg+xml;base64,'
    + base64.b64encode(_fan_out(6).encode()).decode()
    + '"/>'
)
FINE = {
    "hex_colours_that_look_like_exponents": _svg('<rect width="50" height="50" fill="#1e9999" stroke="#5E1000"/>'),
    "fragment_ids_that_look_like_numbers": _svg(
        '<defs><linearGradient id="g1e500"><stop offset="0" stop-color="red"/></linearGradient></defs>'
        '<rect width="50" height="50" fill="url(#g1e500)"/>'
    ),
    "words_and_text_content": _svg(
        '<text x="5" y="20" font-family="Inf Sans">inf nan 1e999 Infinity</text>'
        '<rect width="5" height="5" class="info nancy indefinite"/>'
    ),
    "small_and_negative_exponents": _svg('<rect x="1e-400" y="2.5E-3" width="1e2" height="5e+1"/>'),
    "moderate_use_fan_out": _fan_out(3),
}


@pytest.fixture
def no_drawing(monkeypatch: pytest.MonkeyPatch):
    """Fail the test if anything reaches the drawing step."""

    def refuse(*args, **kwargs):
        raise AssertionError("the SVG reached the drawing step")

    monkeypatch.setattr("cairosvg.surface.PNGSurface", refuse)


@pytest.mark.parametrize("name", sorted({**ABSURD, **EXPANDING}))
def test_pathological_svg_is_refused_before_drawing(name: str, no_drawing) -> None:
    svg, reason = {**ABSURD, **EXPANDING}[name]
    with pytest.raises(RenderError, match=reason):
        render_svg_to_png(svg, 64)


@pytest.mark.parametrize("name", sorted(FINE))
def test_ordinary_svg_passes_the_checks(name: str) -> None:
    render_guard.check_render_cost(FINE[name].encode(), None)  # the byte checks and, if triggered, the tree
    assert render_svg_to_png(FINE[name], 64).startswith(b"\x89PNG")


def test_svg_nested_in_a_data_url_gets_the_same_checks() -> None:
    """cairosvg fetches an embedded SVG when it reaches the <image>: the fetcher checks it before it is parsed."""
    with pytest.raises(RenderError, match="drawn elements"):
        render_svg_to_png(NESTED_FAN_OUT, 64)


def test_many_plain_elements_are_refused() -> None:
    body = "<g/>" * (render_guard.MAX_DRAWN_ELEMENTS + 1)
    with pytest.raises(RenderError, match="elements"):
        render_svg_to_png(_svg(body), 16, max_bytes=1 << 20)


def test_through_the_pool_the_refusal_is_the_reason_not_a_timeout() -> None:
    """With a timeout far longer than any test, these come back with the check's reason: they never waited."""
    cases = [ABSURD["infinite_radius"], EXPANDING["use_fan_out"], EXPANDING["use_cycle"]]

    async def run() -> list[str]:
        async with Renderer(size=64, timeout_s=600, workers=1) as pool:
            outcomes = []
            for svg, _reason in cases:
                with pytest.raises(RenderError) as caught:
                    await pool.render(svg)
                outcomes.append(str(caught.value))
            return outcomes

    for (_svg_text, reason), message in zip(cases, asyncio.run(run())):
        assert reason in message
        assert "timed out" not in message
