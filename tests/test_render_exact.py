"""The renderer's second round of exact shortcuts against what cairosvg computes itself: each answers the same, or
makes the same cairo calls, on the bench corpus, the project's drawings and generated edge cases."""

from __future__ import annotations

import random

from cairo_probe import drawn_path

from svgagent.core.scoring import render_draw
from svgagent.core.scoring.render_shortcuts import shortcuts

# Characters that change what cairosvg's normalize does: signs after "e" or not, "E", separators of every kind,
# dots between digit runs, and whitespace that str.split counts but cairosvg's patterns do not (or only some).
_NORMALIZE_ALPHABET = "0123456789.-eE ,\t\n\rMLCZz+\x0b\x0c\x1c\x1f\x85\xa0\u2003a"


def _outcome(function, *args):
    try:
        return function(*args)
    except Exception as err:  # noqa: BLE001 - the exception's type is the outcome compared
        return type(err)


def test_normalize_answers_what_cairosvg_answers_on_generated_strings() -> None:
    own, fast = shortcuts()["normalize"]
    rng = random.Random(5)
    cases = [
        "",
        " ",
        "-",
        "e-",
        "E-5",
        "1e-5-3",
        "1.5.5.5",
        ".5.-5.",
        "1..5",
        "M1-2E3,4 5.5.5",
        "a\x0bb",
        "\u2003x ",
        "1 ,, 2\t\n3",
        "5e -3",
        "--1",
        "e--1",
        "ee-e-",
        "1.2.3-4.5",
    ]
    for length in (8, 30, 200):  # short ones go through the cache, long ones not
        cases += ["".join(rng.choice(_NORMALIZE_ALPHABET) for _ in range(rng.randint(0, length))) for _ in range(3000)]
        cases += ["".join(rng.choice("0123456789.-e ,") for _ in range(length)) for _ in range(1000)]
    for text in cases:
        assert _outcome(fast, text) == _outcome(own, text), repr(text)
    for value in (None, 5, b"1 2"):
        assert _outcome(fast, value) == _outcome(own, value)


def test_normalize_shortcut_is_what_the_renderer_installs() -> None:
    from cairosvg import helpers, path, shapes

    render_draw.surface_class()
    fast = shortcuts()["normalize"][1]
    assert helpers.normalize is fast and shapes.normalize is fast and path.normalize is fast
    with render_draw.cairosvg_as_shipped():
        assert helpers.normalize is shortcuts()["normalize"][0]


def test_unchecked_context_answers_and_draws_what_cairocffi_does() -> None:
    """Each unchecked call against cairocffi's own on two identical contexts: same answers, same pixels."""
    import cairocffi

    from svgagent.core.scoring.render_context import unchecked_context_class

    unchecked_class = unchecked_context_class()
    surfaces = [cairocffi.ImageSurface(cairocffi.FORMAT_RGB24, 120, 60) for _ in range(2)]
    checked = cairocffi.Context(surfaces[0])
    unchecked = unchecked_class._from_pointer(cairocffi.Context(surfaces[1])._pointer, incref=True)
    answers = []
    for context in (checked, unchecked):
        seen = [context.has_current_point(), context.get_current_point()]
        context.set_source_rgb(1, 1, 1)
        for family, slant, weight, size in (("sans-serif", 0, 0, 14), ("serif", 1, 1, 9.5), ("", 0, 1, 20)):
            context.select_font_face(family, slant, weight)
            context.set_font_size(size)
            seen.append(context.font_extents())
            for text in ("Hello", "é→ü 漢", "", "a\x00b", b"bytes"):
                seen.append(context.text_extents(text))
                context.move_to(3, 40)
                context.show_text(text)
                seen += [context.has_current_point(), context.get_current_point()]
        answers.append(seen)
    assert answers[0] == answers[1]
    surfaces[0].flush()
    surfaces[1].flush()
    assert bytes(surfaces[0].get_data()) == bytes(surfaces[1].get_data())
    assert any(bytes(surfaces[0].get_data()))  # text was drawn


def test_unchecked_context_is_the_lean_walk_context() -> None:
    from svgagent.core.scoring import render_worker
    from svgagent.core.scoring.render_context import unchecked_context_class

    data = b'<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><text y="8">a</text></svg>'
    tree = render_worker._parse_tree(data, render_worker._make_fetcher(len(data) + 1))
    surface = render_draw.surface_class()(tree, None, 96, output_width=10, output_height=10)
    assert type(surface.context) is unchecked_context_class()


def _gradient_document(rng: random.Random) -> str:
    """A document whose shapes share a few gradients of every kind the lean paint handles (and some it hands on)."""

    def number() -> str:
        return rng.choice(["0", "1", "0.3", "25%", "80%", "-10%", "1.5em", "2ex", "12", "150%", ""])

    gradients = []
    for i in range(5):
        kind = rng.choice(["linearGradient", "radialGradient"])
        attributes = [f'id="g{i}"']
        names = ["x1", "y1", "x2", "y2"] if kind == "linearGradient" else ["cx", "cy", "r", "fx", "fy"]
        attributes += [f'{name}="{number()}"' for name in names if rng.random() < 0.6 and number()]
        if rng.random() < 0.4:
            attributes.append('gradientUnits="userSpaceOnUse"')
        if rng.random() < 0.3:
            attributes.append(f'spreadMethod="{rng.choice(["pad", "reflect", "repeat", "bogus"])}"')
        if rng.random() < 0.15:
            attributes.append('gradientTransform="rotate(30) scale(0.8)"')
        if rng.random() < 0.15 and i:
            attributes.append(f'href="#g{i - 1}"')
        stops = "".join(
            f'<stop offset="{rng.choice(["0", "0.2", "50%", "0.9", "1", "120%", "0.1", "1em"])}" stop-color="'
            f'{rng.choice(["red", "#0af", "#123456", "rgb(10,200,30)", "currentColor", "nonsense"])}"'
            + (f' stop-opacity="{rng.choice(["0", "0.4", "1"])}"' if rng.random() < 0.5 else "")
            + "/>"
            for _ in range(rng.randint(0, 4))
        )
        gradients.append(f"<{kind} {' '.join(attributes)}>{stops}<desc>not a stop</desc></{kind}>")
    shapes = []
    for _ in range(14):
        paint = f"url(#g{rng.randrange(6)})" + rng.choice(["", " orange"])
        extra = rng.choice(["", ' fill-opacity="0.5"', ' opacity="0.7"', ' stroke-width="6"', ' font-size="20"'])
        target = rng.choice(["fill", "stroke"])
        shape = rng.choice(
            [
                f'<rect x="{rng.randint(0, 80)}" y="{rng.randint(0, 80)}" width="{rng.randint(0, 60)}" '
                f'height="{rng.randint(1, 60)}"',
                f'<circle cx="{rng.randint(0, 99)}" cy="50" r="20"',
                '<line x1="0" y1="10" x2="90" y2="10"',
                '<path d="M10 10 C 40 90 70 0 95 60 Z"',
            ]
        )
        shapes.append(f'{shape} {target}="{paint}"{extra}/>')
    nested = f'<svg x="10" y="10" width="50" height="40" viewBox="0 0 200 100">{"".join(shapes[:4])}</svg>'
    return (
        f'<svg {NS} width="100" height="100" font-size="10"><defs>{"".join(gradients)}</defs>'
        f'<g font-size="30">{"".join(shapes[4:9])}</g>{"".join(shapes[9:])}{nested}</svg>'
    )


NS = 'xmlns="http://www.w3.org/2000/svg"'


def _pixels_both_ways(svg: str, size: int = 160) -> tuple[bytes, bytes]:
    from svgagent.core.scoring.render_worker import render_svg_to_png

    lean = render_draw.lean_surface_class(render_draw.opaque_surface_class())  # without fast antialiasing
    ours = render_svg_to_png(svg, size, surface=lean)
    with render_draw.cairosvg_as_shipped():
        reference = render_svg_to_png(svg, size, surface=render_draw.opaque_surface_class(), fast_tree=False)
    return ours, reference


def test_lean_gradient_paint_gives_cairosvg_pixels_on_generated_documents() -> None:
    render_draw.surface_class()  # the renderer's shortcuts in place, as in the workers
    rng = random.Random(3)
    for _ in range(40):
        svg = _gradient_document(rng)
        ours, reference = _pixels_both_ways(svg)
        assert ours == reference, svg


def test_lean_gradient_paint_remembers_numbers_only_for_what_they_were_resolved_against() -> None:
    """One gradient used by shapes of different font sizes and viewports, opacities, in both orders."""
    stops = '<stop offset="1em" stop-color="red"/><stop offset="2em" stop-color="blue"/>'
    defs = (
        f'<defs><linearGradient id="em" x2="2em">{stops}</linearGradient><radialGradient id="user" '
        f'gradientUnits="userSpaceOnUse" r="30%" cx="40%">{stops}</radialGradient></defs>'
    )
    uses = [
        '<rect width="100" height="40" fill="url(#em)" font-size="0.02"/>',
        '<rect y="40" width="100" height="40" fill="url(#em)" font-size="0.05" opacity="0.5"/>',
        '<rect width="100" height="100" fill="url(#user)" fill-opacity="0.4"/>',
        '<svg width="50" height="50" viewBox="0 0 300 300"><rect width="300" height="300" fill="url(#user)"/></svg>',
    ]
    for order in (uses, uses[::-1]):
        ours, reference = _pixels_both_ways(f'<svg {NS} width="100" height="100">{defs}{"".join(order)}</svg>')
        assert ours == reference


POINT_LISTS = [
    "",
    " ",
    ",",
    "10",
    "10 20",
    "10,20 30,40",
    "10 20 30",
    "1-2-3-4",
    "1e1,2E1 .5.5",
    "5% 10% 20px 3em",
    " 1 , 2 ,, 3\t4\n5 6 ",
    "1 2 3 4 5",
    "a b c d",
    "1\x0b2 3 4",
    "١ 2 3 4",
    "0,0 100,0 50,80 0,0",
]


def _cairo_path_of(draw, points: str):
    """(the cairo path ``draw`` makes for a node with ``points``, the type of what it raised or None): cairosvg raises
    PointError for a lone number, ValueError for some tokens, so must the lean one."""
    return drawn_path(draw, {"points": points})


def test_lean_polyline_and_polygon_make_cairosvg_cairo_calls() -> None:
    import re
    import sys
    from pathlib import Path

    from cairosvg import shapes

    from svgagent.core.scoring.render_path import draw_polygon, draw_polyline

    render_draw.surface_class()  # the renderer's shortcuts in place, as in the workers
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    try:
        from render import model_like_svg
    finally:
        sys.path.pop(0)
    rng = random.Random(2)
    corpus = re.findall(r'points="([^"]*)"', "".join(model_like_svg(rng) for _ in range(4)))
    assert len(corpus) > 10
    generated = ["".join(rng.choice("0123456789.-e ,%") for _ in range(rng.randint(1, 40))) for _ in range(400)]
    for points in [*POINT_LISTS, *corpus, *generated]:
        assert _cairo_path_of(draw_polyline, points) == _cairo_path_of(shapes.polyline, points), points
        assert _cairo_path_of(draw_polygon, points) == _cairo_path_of(shapes.polygon, points), points
