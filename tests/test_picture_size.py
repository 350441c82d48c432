"""The own-size picture rule: svgagent's implementation gives the page size Eval Protocol's quickstart evaluator
computes (its ``utils.calculate_svg_bounds``, loaded from eval-protocol's venv), quirks included; then the sandbox's
limits; and both renderers draw a picture of exactly that size."""

from __future__ import annotations

import importlib.util
import io
from types import ModuleType

import pytest
from ep_venv import ep_venv
from PIL import Image

from svgagent.core.scoring.errors import RenderError
from svgagent.core.scoring.picture_size import MAX_OWN_SIDE, OWN_SIZE, own_size, page_length
from svgagent.core.scoring.render_worker import render_svg_to_png

NS = 'xmlns="http://www.w3.org/2000/svg"'
CASES = [
    f'<svg {NS} width="300" height="150"><rect width="10" height="10"/></svg>',
    f'<svg {NS} width="300px" height="2in"/>',
    f'<svg {NS} width="100pt" height="50mm"/>',
    f'<svg {NS} width="2cm" height="3pc"/>',
    f'<svg {NS} width="100%" height="50%"/>',
    f'<svg {NS} width="12em" height="7ex"/>',  # another unit counts as px
    f'<svg {NS} width="1e2" height="80"/>',
    f'<svg {NS} width="0" height="80" viewBox="0 0 64 32"/>',  # a zero width: the viewBox decides
    f'<svg {NS} width="300"><circle cx="10" cy="10" r="5"/></svg>',  # only a width: the drawing decides
    f'<svg {NS} viewBox="0 0 50 50"><circle cx="25" cy="25" r="20"/></svg>',
    f'<svg {NS} viewBox="0 0 100 100"><rect x="-40" y="10" width="300" height="20"/></svg>',  # content beyond it
    f'<svg {NS} viewBox="0,0,100,100"><rect width="30" height="30"/></svg>',  # commas: not four parts
    f'<svg {NS} viewBox="0 0 400 300"/>',
    f'<svg {NS} viewBox="0 0 abc 300"><rect width="30" height="30"/></svg>',
    f'<svg {NS}><circle cx="100" cy="100" r="50"/><ellipse cx="300" cy="50" rx="10" ry="40"/></svg>',
    f'<svg {NS}><line x1="0" y1="0" x2="500" y2="20"/></svg>',
    f'<svg {NS}><polyline points="0,0 600,30 10,400"/></svg>',  # read as a line (x1.. absent): 0 0 0 0
    f'<svg {NS}><polygon points="0,0 600,30 10,400"/></svg>',
    f'<svg {NS}><path d="M10 10 L 300.5 20 C 40 50, 60 700, 90 80 Z"/></svg>',
    f'<svg {NS}><defs><clipPath id="c"><rect width="9" height="9"/></clipPath></defs><rect width="250" height="5"/></svg>',
    f'<svg {NS}><text x="10" y="40" font-size="32px">Hello, world</text></svg>',
    f'<svg {NS}><text x="10" y="40">Twelve point default</text><rect x="bad" width="5" height="5"/></svg>',
    f'<svg {NS}><g><rect x="5" y="5" width="1000" height="700"/></g></svg>',
    f"<svg {NS}><g/></svg>",  # nothing measurable: the default page
    '<svg width="320" height="240"><rect width="10" height="10"></svg>',  # not XML: numbers found in its text
    '<svg viewBox="0 0 90 70"><rect stroke-width="3"></svg>',  # not XML: "stroke-width=" is a width
    '<svg viewBox="0 0 90 70"><rect></svg>',
    "<svg><rect></svg>",
    f'<svg {NS} width="5000" height="300"/>',  # larger than the cap: scaled down by svgagent
]
FAILING = [  # where the evaluator's own computation fails (its render fails): a RenderError here
    f'<svg {NS}><rect width="inf" height="5"/></svg>',
    f'<svg {NS}><rect width="nan" height="5"/></svg>',
    f'<svg {NS} width="inf" height="5"/>',
]


@pytest.fixture(scope="module")
def quickstart_utils() -> ModuleType:
    found = list(
        (ep_venv() / "lib").glob("python3*/site-packages/eval_protocol/quickstart/svg_agent/evaluator/utils.py")
    )
    assert found, "eval-protocol's quickstart evaluator is not in its venv"
    spec = importlib.util.spec_from_file_location("ep_quickstart_utils", found[0])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # the standard library only
    return module


def capped(size: tuple[int, int]) -> tuple[int, int]:
    width, height = max(1, size[0]), max(1, size[1])
    if max(width, height) <= MAX_OWN_SIDE:
        return width, height
    scale = MAX_OWN_SIDE / max(width, height)
    return max(1, int(width * scale)), max(1, int(height * scale))


@pytest.mark.parametrize("svg", CASES)
def test_own_size_is_the_quickstarts_page_size(svg: str, quickstart_utils: ModuleType) -> None:
    theirs = quickstart_utils.calculate_svg_bounds(svg)
    assert own_size(svg) == capped(theirs)
    assert own_size(svg.encode()) == own_size(svg)


@pytest.mark.parametrize("svg", FAILING)
def test_where_their_size_fails_ours_is_a_render_error(svg: str, quickstart_utils: ModuleType) -> None:
    with pytest.raises((OverflowError, ValueError)):
        quickstart_utils.calculate_svg_bounds(svg)
    with pytest.raises(RenderError, match="cannot be computed"):
        own_size(svg)


@pytest.mark.parametrize("text", ["100", "100px", " 2in ", "3.5pt", "10%", "12em", "-5", "1e3", "abc", "nan", "%"])
def test_lengths_read_as_theirs(text: str, quickstart_utils: ModuleType) -> None:
    assert page_length(text) == quickstart_utils.parse_dimension(text)


def test_the_sandbox_limits_hold() -> None:
    assert own_size(f'<svg {NS} width="-5" height="80"/>') == (1, 80)  # theirs: -5, a page no browser draws
    assert own_size(f'<svg {NS} width="9000" height="4500"/>') == (MAX_OWN_SIDE, MAX_OWN_SIDE // 2)
    with pytest.raises(RenderError, match="entities"):
        own_size('<!DOCTYPE svg [<!ENTITY a "aaaa">]><svg xmlns="http://www.w3.org/2000/svg">&a;</svg>')


@pytest.mark.parametrize("svg", [CASES[0], CASES[2], CASES[9], CASES[14], CASES[20]])
def test_cairosvg_draws_the_own_size_page(svg: str) -> None:
    png = render_svg_to_png(svg, OWN_SIZE)
    with Image.open(io.BytesIO(png)) as image:
        assert image.size == own_size(svg)
