"""The renderer's lean tree walk (core/scoring/render_draw.py) against cairosvg's own walk.

Without fast antialiasing the lean walk must give the very same pixels as cairosvg's on everything it handles and
on everything it hands back; with the settings the renderer uses (fast antialiasing, 0.25 px curve tolerance) the
pictures differ only along edges, by a fraction of a pixel's coverage.
"""

from __future__ import annotations

import importlib.util
import io
import math
import random
import re
import sys
from pathlib import Path

import cairosvg
import cairosvg.css
import pytest
from cairo_probe import drawn_path
from PIL import Image, ImageChops

from svgagent.core.scoring import render_draw, render_worker
from svgagent.core.scoring.render import Renderer
from svgagent.core.scoring.render_worker import render_svg_to_png

NS = 'xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink"'
GRADIENTS = (
    '<defs><linearGradient id="lg" x2="1" y2="1"><stop offset="0" stop-color="#c03050"/>'
    '<stop offset="1" stop-color="#3050c0" stop-opacity="0.6"/></linearGradient>'
    '<radialGradient id="rg" r="40%"><stop offset="0" stop-color="yellow"/><stop offset="1" '
    'stop-color="teal"/></radialGradient><linearGradient id="inherits" href="#lg" x1="1" x2="0"/>'
    '<clipPath id="clip"><circle cx="50" cy="50" r="30"/></clipPath>'
    '<mask id="mask"><rect width="100" height="50" fill="white"/></mask>'
    '<marker id="dot" markerWidth="4" markerHeight="4" refX="2" refY="2"><circle cx="2" cy="2" r="2" '
    'fill="red"/></marker><symbol id="sym" viewBox="0 0 10 10"><rect width="10" height="10"/></symbol>'
    '<pattern id="pat" width="10" height="10" patternUnits="userSpaceOnUse"><rect width="5" height="5" '
    'fill="navy"/></pattern><filter id="blur"><feGaussianBlur stdDeviation="2"/></filter></defs>'
)
# Every branch of the lean walk, and every node it hands to cairosvg's walk (text, use, clip, mask, markers, …).
FEATURES = {
    "shapes": '<rect x="5" y="5" width="40" height="30" rx="4" fill="#ff8800" stroke="#000" stroke-width="2"/>'
    '<circle cx="70" cy="30" r="15" fill="none" stroke="blue" stroke-width="3"/>'
    '<ellipse cx="30" cy="70" rx="20" ry="10" fill="green" opacity="0.5"/>'
    '<line x1="0" y1="100" x2="100" y2="0" stroke="purple" stroke-linecap="round"/>'
    '<polygon points="60,60 90,70 70,95" fill="rgb(200,20,20)" fill-rule="evenodd" stroke="#000" '
    'stroke-linejoin="round"/><polyline points="5,95 20,80 35,95" fill="none" stroke="#333" '
    'stroke-linejoin="bevel" stroke-miterlimit="2"/>',
    "paths": '<path d="M10 10 C 40 0, 60 100, 90 10 S 50 50 10 90 Q 50 60 90 90 T 10 50 A 20 30 15 1 0 60 40 Z" '
    'fill="#123456" fill-opacity="0.7" stroke="#abcdef" stroke-opacity="0.5" stroke-width="1.5"/>'
    '<path d="M0 0 L" stroke="#000"/>',
    "gradients": '<rect width="100" height="50" fill="url(#lg)" stroke="url(#rg)" stroke-width="6"/>'
    '<circle cx="50" cy="75" r="20" fill="url(#rg)"/><rect y="60" width="30" height="30" '
    'fill="url(#inherits)"/><rect x="70" y="60" width="30" height="30" fill="url(#missing) orange"/>',
    "groups": '<g transform="translate(10,5) rotate(10)" fill="#c0c" stroke="#000"><rect width="30" height="30"/>'
    '<g transform="scale(0.5)" stroke-width="4"><circle cx="60" cy="60" r="30"/></g></g>'
    '<g opacity="0.5"><rect x="50" y="50" width="40" height="40" fill="red"/></g>'
    '<g shape-rendering="crispEdges"><rect x="60" y="10" width="30.5" height="20.3" fill="#0a0"/></g>'
    '<g font-size="2em"><rect width="1em" height="5" fill="#333"/></g><rect width="0" height="9"/>',
    "text": '<text x="10" y="30" font-size="16" fill="#222">Hello <tspan fill="red" dy="5">world</tspan></text>'
    '<text x="10" y="60" font-family="serif" font-weight="bold" text-anchor="start" stroke="#f00" '
    'stroke-width="0.5">stroked</text><text x="90" y="90" text-anchor="end" fill="url(#lg)">grad</text>'
    '<g text-rendering="optimizeLegibility"><text x="5" y="80" fill="none">none</text>'
    '<text x="40" y="80" fill-opacity="0.5">half</text></g>'
    '<text x="5" y="95" letter-spacing="2" opacity="0.6">op<tspan>acity</tspan></text>',
    "fallbacks": '<use href="#sym" x="5" y="5" width="20" height="20" fill="#07f"/>'
    '<rect width="100" height="100" fill="#fe0" clip-path="url(#clip)"/>'
    '<rect width="100" height="100" fill="#0ef" mask="url(#mask)" opacity="0.5"/>'
    '<path d="M10 90 L50 60 L90 90" fill="none" stroke="#000" marker-mid="url(#dot)" '
    'marker-end="url(#dot)"/><line x1="0" y1="50" x2="100" y2="50" stroke="#000" '
    'stroke-dasharray="4 2"/><rect x="20" y="20" width="20" height="20" fill="url(#pat)"/>'
    '<rect x="60" y="20" width="20" height="20" filter="url(#blur)"/><rect display="none" '
    'width="99" height="99"/><rect visibility="hidden" width="99" height="99"/>'
    '<text font="italic 12px serif" x="5" y="15">font</text><svg x="50" y="50" width="40" '
    'height="40" viewBox="0 0 10 10"><circle cx="5" cy="5" r="5" fill="#f0f"/></svg>',
    "styles": "<style>rect { fill: #393; stroke: #000 } .hot { fill: red !important }</style>"
    '<rect width="40" height="40"/><rect x="50" class="hot" width="40" height="40" style="stroke:blue"/>',
}


def _svg(body: str) -> str:
    return f'<svg {NS} width="100" height="100">{GRADIENTS}{body}</svg>'


@pytest.fixture(scope="module")
def corpus() -> list[str]:
    """Seeded model-like SVGs from bench/render.py (the corpus the speed target is measured on)."""
    bench = Path(__file__).resolve().parents[1] / "bench"
    sys.path.insert(0, str(bench))
    try:
        spec = importlib.util.spec_from_file_location("bench_render_corpus", bench / "render.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(bench))
    rng = random.Random(11)
    return [module.model_like_svg(rng) for _ in range(6)]


def _pixels(svg: str, surface_class, size: int = 200) -> Image.Image:
    return Image.open(io.BytesIO(render_svg_to_png(svg, size, surface=surface_class))).convert("RGB")


def _cairosvg_walk(svg: str, size: int = 200) -> Image.Image:
    with render_draw.cairosvg_as_shipped():
        return _pixels(svg, render_draw.opaque_surface_class(), size)


@pytest.mark.parametrize("name", sorted(FEATURES))
def test_lean_walk_gives_cairosvg_pixels_on_every_feature(name: str) -> None:
    svg = _svg(FEATURES[name])
    lean = render_draw.lean_surface_class(render_draw.opaque_surface_class())
    assert ImageChops.difference(_pixels(svg, lean), _cairosvg_walk(svg)).getbbox() is None


def test_lean_walk_gives_cairosvg_pixels_on_the_bench_corpus(corpus: list[str]) -> None:
    lean = render_draw.lean_surface_class(render_draw.opaque_surface_class())
    for svg in corpus:
        assert ImageChops.difference(_pixels(svg, lean, 512), _cairosvg_walk(svg, 512)).getbbox() is None


def _difference_stats(a: Image.Image, b: Image.Image) -> tuple[float, float]:
    """(PSNR in dB, share of channel values more than 64 levels apart)."""
    histogram = ImageChops.difference(a, b).histogram()
    counts = [sum(histogram[band * 256 + level] for band in range(3)) for level in range(256)]
    total = sum(counts)
    mse = sum(level * level * count for level, count in enumerate(counts)) / total
    psnr = float("inf") if mse == 0 else 10 * math.log10(255 * 255 / mse)
    return psnr, sum(counts[65:]) / total


def test_renderer_surface_differs_only_along_edges(corpus: list[str]) -> None:
    """What the renderer uses (fast antialiasing, coarser curve tolerance) against cairosvg's walk."""
    production = render_draw.surface_class()
    assert production is not render_draw.opaque_surface_class()  # the lean walk is in use on this cairosvg
    for svg in [*corpus, *(_svg(body) for body in FEATURES.values())]:
        ours, reference = _pixels(svg, production, 512), _cairosvg_walk(svg, 512)
        assert ours.size == reference.size
        psnr, far_apart = _difference_stats(ours, reference)
        assert psnr > 30, psnr
        assert far_apart < 0.002, far_apart


def test_worker_pool_draws_what_the_in_process_core_draws() -> None:
    # (no text: glyphs may differ between a worker and this process, whose font set-up is not the worker's)
    svg = _svg(FEATURES["shapes"] + FEATURES["paths"] + FEATURES["gradients"] + FEATURES["groups"])
    with Renderer(size=128, workers=1) as pool:
        assert pool.render_sync(svg) == render_svg_to_png(svg, 128)


def test_unchecked_cairosvg_version_draws_with_cairosvg_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    render_draw.surface_class.cache_clear()
    try:
        with monkeypatch.context() as patch:
            patch.setattr(cairosvg, "__version__", "3.0.0")
            assert render_draw.surface_class() is render_draw.opaque_surface_class()
    finally:
        render_draw.surface_class.cache_clear()
    assert render_draw.surface_class() is not render_draw.opaque_surface_class()


def test_a_cairo_error_during_the_lean_walk_is_still_raised() -> None:
    """The lean walk skips cairo's per-call status check (errors are sticky); the PNG step raises them."""
    from cairocffi import CairoError, cairo

    data = _svg(FEATURES["shapes"]).encode()
    tree = render_worker._parse_tree(data, render_worker._make_fetcher(len(data) + 1))
    surface = render_draw.surface_class()(tree, None, 96, output_width=50, output_height=50)
    cairo.cairo_restore(surface.context._pointer)  # a restore without a save: the context is now in error
    with pytest.raises(CairoError, match="INVALID_RESTORE"):
        render_draw.surface_to_png(surface)


def test_stylesheet_shortcut_only_skips_documents_without_rules() -> None:
    render_draw.surface_class()  # installs the shortcut
    styled = _svg(FEATURES["styles"])
    assert (
        ImageChops.difference(_pixels(styled, render_draw.opaque_surface_class()), _cairosvg_walk(styled)).getbbox()
        is None
    )
    normal, important = cairosvg.css.parse_stylesheets(cairosvg.parser.Tree(bytestring=_svg("").encode()), None)
    assert normal.match(None) == []
    assert important.match(None) == []


# --- the fast tree (render_tree.py) and the helper shortcuts (render_shortcuts.py) ---------------------------------

TREE_CASES = {
    "cascade": '<g fill="red" stroke="currentColor" color="#0a0" opacity="0.5" transform="scale(2)" id="outer">'
    '<rect width="10" height="10" style="fill: blue; stroke-width: 3 !important" stroke-width="1"/>'
    '<circle r="5" fill="inherit" stroke="inherit" font-size="inherit" style="opacity:.3"/>'
    '<g fill="currentColor"><ellipse rx="3" ry="2"/></g></g>',
    "conditional": '<switch><rect requiredExtensions="x" width="5" height="5"/><rect systemLanguage="zz-nowhere" '
    'width="6" height="6"/><circle r="4"/><rect width="7" height="7"/></switch>'
    '<rect requiredFeatures="http://www.w3.org/TR/SVG11/feature#Shape" width="8" height="8"/>'
    '<rect requiredFeatures="http://example.com/unknown" width="9" height="9"/>',
    "foreign": '<foreignObject><p xmlns="http://www.w3.org/1999/xhtml">html</p></foreignObject>'
    '<svg:rect xmlns:svg="http://www.w3.org/2000/svg" width="3" height="3"/><!-- a comment --><?pi x?>',
}


def _project_svgs() -> list[str]:
    """SVGs the project itself makes (the simulator's drawings for the built-in prompts' kinds of picture)."""
    from svgagent.core.sim.content import make_svg

    prompts = [
        "Draw a login screen with a blue button",
        "Draw a flag with three stripes",
        "Draw a bar chart",
        "Draw a pie chart with four slices",
        "Draw a snowman",
        "Draw a clock showing 3 o'clock",
        "Draw a city skyline at night",
        "Draw a rocket",
        "Draw two boxes and an arrow",
        "Draw a chess board",
    ]
    return [make_svg(7, prompt, 0, "good", 4) for prompt in prompts]


def _same_tree(fast, reference, where: str = "root") -> None:
    assert dict(fast) == dict(reference), where
    for name in ("tag", "text", "root", "url", "unsafe"):
        assert getattr(fast, name) == getattr(reference, name), f"{where}.{name}"
    assert fast.xml_tree.tag == reference.xml_tree.tag, where
    assert len(fast.children) == len(reference.children), where
    for i, (a, b) in enumerate(zip(fast.children, reference.children)):
        _same_tree(a, b, f"{where}/{i}:{b.tag}")


def _documents(corpus: list[str]) -> list[str]:
    bodies = {**FEATURES, **TREE_CASES}
    bodies.pop("styles")  # has stylesheet rules: cairosvg builds it (test below)
    return [*(_svg(body) for body in bodies.values()), *corpus, *_project_svgs()]


def test_fast_tree_is_cairosvg_tree_node_by_node(corpus: list[str]) -> None:
    from svgagent.core.scoring.render_tree import build_tree

    fetcher = render_worker._make_fetcher(10**6)
    for svg in _documents(corpus):
        data = svg.encode()
        fast = build_tree(data, fetcher)
        assert type(fast).__name__ == "AttributeTree"
        _same_tree(fast, render_worker._parse_tree(data, fetcher, fast=False))


def test_document_with_stylesheet_rules_is_built_by_cairosvg() -> None:
    from svgagent.core.scoring.render_tree import build_tree

    data = _svg(FEATURES["styles"]).encode()
    fetcher = render_worker._make_fetcher(10**6)
    tree = build_tree(data, fetcher)
    assert type(tree) is cairosvg.parser.Tree
    _same_tree(tree, render_worker._parse_tree(data, fetcher, fast=False))


def test_fast_path_gives_cairosvg_pixels_on_project_svgs() -> None:
    """Fast tree, helper shortcuts and lean walk (without fast antialiasing) against cairosvg as it ships."""
    render_draw.surface_class()  # installs the shortcuts
    lean = render_draw.lean_surface_class(render_draw.opaque_surface_class())
    for svg in [*_project_svgs(), _svg(TREE_CASES["cascade"])]:
        assert ImageChops.difference(_pixels(svg, lean, 256), _cairosvg_walk(svg, 256)).getbbox() is None


class _Viewport:
    """What cairosvg's size() reads of a surface."""

    def __init__(self, width: float, height: float) -> None:
        self.context_width, self.context_height = width, height
        self.font_size, self.dpi = 16.0, 96


SIZE_INPUTS = [
    "",
    "0",
    "12",
    "-3.5",
    "1e3",
    "1E-2",
    "35%",
    "-5%",
    "+7.5%",
    ".5%",
    "5.%",
    "1e2%",
    "1E-1%",
    "1.5e+1%",
    "35 %",
    " 35%",
    "35% ",
    "1,5%",
    "1.2.3%",
    "--5%",
    "5%%",
    "%",
    "e%",
    "12px",
    "3pt",
    "2em",
    "1.5ex",
    "2ch",
    "1in",
    "4mm",
    "1cm",
    "2pc",
    "10 20",
    "3,4",
    "inherit",
    "auto",
    "1_0%",
    "٣٥%",
    None,
    0,
    2.5,
]


def _outcome(function, *args):
    """What a call gives: its result, or the type of what it raised (cairosvg raises on some inputs: so must we)."""
    try:
        return function(*args)
    except Exception as err:  # noqa: BLE001 - the exception's type is the outcome compared
        return type(err)


def test_size_shortcut_answers_what_cairosvg_answers(corpus: list[str]) -> None:
    from cairosvg import helpers

    from svgagent.core.scoring.render_shortcuts import shortcuts

    render_draw.surface_class()  # installs the shortcuts (checked at the end)
    own, fast = shortcuts()["size"]
    seen = set(SIZE_INPUTS)
    for svg in corpus:  # every attribute value of the corpus that looks like a length
        seen.update(re.findall(r'="([^"#]{1,12})"', svg))
    for surface in (_Viewport(512, 384), _Viewport(0, 0), None):
        for value in seen:
            for reference in ("x", "y", "xy", 1, 0.5):
                assert _outcome(fast, surface, value, reference) == _outcome(own, surface, value, reference), (
                    value,
                    reference,
                )
    assert helpers.size is not own or not render_draw.cairosvg_checked()  # installed by the renderer


def test_point_normalize_paint_and_color_shortcuts_answer_what_cairosvg_answers(corpus: list[str]) -> None:
    from svgagent.core.scoring.render_shortcuts import shortcuts

    table = shortcuts()
    surface = _Viewport(300, 200)
    for text in ["10 20", "10 20 30 40", "1.5 -2 ", "5%  7", "10", "", "a b c"]:
        own, fast = table["point"]
        assert _outcome(fast, surface, text) == _outcome(own, surface, text), text
    strings = [
        *re.findall(r'(?:d|points|fill|stroke|stop-color)="([^"]*)"', "".join(corpus)),
        "M1-2E3,4 5.5.5",
        "  a  b ",
        "1e-5-3",
        "x" * 100,
        "url(#g1)",
        "url(#g1) red",
        " url( '#a' ) none",
        "none",
        "",
        "#ABC",
        "#abcdef",
        "#abcdeg",
        "#12",
        " #123456",
        "#1234567",
        "rgb(10, 20, 30)",
        "rgba(10,20,30,0.5)",
        "RED",
        "currentColor",
        "#ffffff80",
        "#fff ",
    ]
    for name in ("normalize", "paint"):
        own, fast = table[name]
        for text in strings:
            assert _outcome(fast, text) == _outcome(own, text), (name, text)
    own, fast = table["color"]
    for text in [*strings, None]:
        for opacity in (1, 0.5, 0):
            assert _outcome(fast, text, opacity) == _outcome(own, text, opacity), text


def test_parse_all_defs_shortcut_stores_what_cairosvg_stores(corpus: list[str]) -> None:
    from svgagent.core.scoring.render_shortcuts import shortcuts

    fetcher = render_worker._make_fetcher(10**6)
    kinds = ("markers", "gradients", "patterns", "paths", "masks", "filters", "images")

    class Definitions:
        def __init__(self) -> None:
            for kind in kinds:
                setattr(self, kind, {})

    stored = 0
    for svg in [_svg(FEATURES["fallbacks"]), _svg(FEATURES["gradients"]), *corpus[:3]]:
        tree = render_worker._parse_tree(svg.encode(), fetcher)
        own, fast = Definitions(), Definitions()
        shortcuts()["parse_all_defs"][0](own, tree)
        shortcuts()["parse_all_defs"][1](fast, tree)
        for kind in kinds:
            assert getattr(fast, kind) == getattr(own, kind), kind
            stored += len(getattr(fast, kind))
    assert stored > 10  # the documents define gradients, markers, masks, patterns, clips and filters


def test_comparisons_see_cairosvg_as_it_ships() -> None:
    from cairosvg import colors, helpers, shapes, surface

    from svgagent.core.scoring.render_shortcuts import shortcuts

    render_draw.surface_class()
    table = shortcuts()
    assert shapes.size is table["size"][1]
    with render_draw.cairosvg_as_shipped():
        assert (helpers.size, shapes.size, helpers.point, shapes.point) == (
            table["size"][0],
            table["size"][0],
            table["point"][0],
            table["point"][0],
        )
        assert (surface.color, colors.color, surface.paint) == (table["color"][0], table["color"][0], table["paint"][0])
    assert (shapes.size, surface.color, surface.paint) == (table["size"][1], table["color"][1], table["paint"][1])


PATH_CASES = [
    "M10 10 L20 20 30 30 Z",
    "m10 10 l5 5 5 5 z m 3 3 h 4 v 4 H 1 V 2 z",
    "M1-2-3-4",
    "M.5.5.5.5L1e1-1E1",
    "M10 10 L20",
    "M10 10 C1 2 3 4 5",
    "M10",
    "",
    "L5 5",
    "H",
    "h",
    "V",
    "M1 1 H",
    "M1,1Q2,2,3,3q1 1 2 2",
    "M 0 0 Z Z L 4 4",
    "Z",
    "M10 10 z l 5 5",
    "M1 1 L 2 2 3",
    "C1 2 3 4 5 6 7 8 9 10 11 12",
    "M1 1 2 2 3 3",
    "m1 1 2 2 3 3z",
    "M 5px 5 L 10% 20 l 1em 2",
    "M1 1 L a b",
    "M1e 1 L2 2",
    "  M 1 1  ",
    "x M1 1 L2 2",
    "M0 0 A 5 5 0 0 1 10 10 L 3 3",
    "M0 0 S 1 1 2 2 T 3 3",
    "M1\t2\n,3 4",
]


def _cairo_path_of(draw, d: str, start: bool):
    """(the cairo path ``draw`` makes for path data ``d``, PointError or None) on a fresh 300x200 context."""
    from cairosvg.helpers import PointError

    return drawn_path(draw, {"d": d}, start=start, catch=PointError)


def test_lean_path_makes_cairosvg_cairo_calls(corpus: list[str]) -> None:
    from cairosvg.path import path as cairosvg_path

    from svgagent.core.scoring.render_path import draw_path

    render_draw.surface_class()  # the renderer's shortcuts in place, as in the workers
    paths = [d for svg in [*corpus, *_project_svgs()] for d in re.findall(r' d="([^"]*)"', svg)]
    assert len(paths) > 20
    for d in [*paths, *PATH_CASES]:
        for start in (True, False):
            assert _cairo_path_of(draw_path, d, start) == _cairo_path_of(cairosvg_path, d, start), (d, start)
