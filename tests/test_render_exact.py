"""The renderer's second round of exact shortcuts against what cairosvg computes itself: each answers the same, or
makes the same cairo calls, on the bench corpus, the project's drawings and generated edge cases."""

from __future__ import annotations

import random

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
    cases = ["", " ", "-", "e-", "E-5", "1e-5-3", "1.5.5.5", ".5.-5.", "1..5", "M1-2E3,4 5.5.5", "a\x0bb", "\u2003x ",
             "1 ,, 2\t\n3", "5e -3", "--1", "e--1", "ee-e-", "1.2.3-4.5"]
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
