"""Path data with a closepath followed by something other than a command (``M0 0 Z 5 5``).

cairosvg's ``path()`` and its bounding box of a path (``bounding_box_path``) never consume what follows a ``Z``:
they requeue it and loop for ever, so a 70-byte answer held a render worker until its timeout. SVG's path error
handling (SVG 1.1 F.2, SVG 2 "Error handling in path data") renders a path up to the command holding the first
error: the data up to and including that ``Z``. These tests pin that behaviour: the cut itself against cairosvg's own
reading of path data, and whole renders through the worker pool for every way path data reaches cairosvg (before the
fix, each answered with a timeout error). docs/cairosvg-closepath-hang.md is the upstream report.
"""

from __future__ import annotations

import random
import re
import subprocess
import sys

import pytest

from svgagent.core.scoring.render import Renderer

NS = 'xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink"'
# (path data with the error, the same data cut where SVG stops reading it)
CUTS = [
    ("M0 0 Z 5 5", "M0 0 Z"),
    ("M0 0 L9 9z5 5", "M0 0 L9 9z"),
    ("M0 0 L9 9 Z x", "M0 0 L9 9 Z"),
    ("M0 0 L9 9 Z 5 5 L1 1 Z", "M0 0 L9 9 Z"),
    ("M1 1 Z M2 2 L3 3 z .", "M1 1 Z M2 2 L3 3 z"),
    ("M0 0 L9 9 Z , 5", "M0 0 L9 9 Z"),
    ("M0 0 L9 9 Z\u00a05", "M0 0 L9 9 Z"),  # no-break space: a separator to cairosvg, then a number
    ("M0 0 L9 9 Z\u200b", "M0 0 L9 9 Z"),  # zero-width space: not whitespace, so data
    ("M0 0 L9 9 Z-1", "M0 0 L9 9 Z"),
    ("M0 0 L9 9 ZE", "M0 0 L9 9 Z"),
    ("M0 0 A 5 5 0 0 1 10 10 Z 1 L 3 3", "M0 0 A 5 5 0 0 1 10 10 Z"),  # arcs: drawn by cairosvg's path()
    ("M0 0 S 1 1 2 2 Z,,x,", "M0 0 S 1 1 2 2 Z"),
]
UNCHANGED = [
    "M0 0 Z",
    "M0 0 Z,",
    "M0 0 Z \t\n, ",
    "M0 0 Z\u00a0",
    "M0 0 ZL5 5",
    "M0 0 Z M1 1 z m 2 2 z",
    "",
    "Z",
    "M1 1 L2 2 3",
    "M 0 0 Z Z L 4 4",
    "M0 0 A 5 5 0 0 1 10 10 Z",
    "zzz",
    "x M1 1 z",
]


def _tokens(d: str) -> list[tuple[str, str]]:
    """(command letter, its argument text) as cairosvg's ``path()`` reads path data."""
    from cairosvg.helpers import PATH_LETTERS, normalize

    for letter in PATH_LETTERS:
        d = d.replace(letter, f" {letter} ")
    return [
        (letter, args.strip())
        for letter, args in re.findall(f"([{PATH_LETTERS}])([^{PATH_LETTERS}]*)", normalize(d).strip())
    ]


def _closepath_with_data(tokens: list[tuple[str, str]]) -> int | None:
    return next((index for index, (letter, args) in enumerate(tokens) if letter in "zZ" and args), None)


@pytest.mark.parametrize(("d", "cut"), CUTS)
def test_path_data_is_cut_after_a_closepath_followed_by_data(d: str, cut: str) -> None:
    from svgagent.core.scoring.render_path import cut_at_closepath_error

    assert _closepath_with_data(_tokens(d)) is not None  # cairosvg's path() would loop on it
    assert cut_at_closepath_error(d) == cut


def test_path_data_without_that_error_is_left_as_it_is() -> None:
    from svgagent.core.scoring.render_path import cut_at_closepath_error

    for d in UNCHANGED:
        assert _closepath_with_data(_tokens(d)) is None, d
        assert cut_at_closepath_error(d) is d


def test_cut_finds_exactly_the_closepaths_cairosvg_reads_data_after() -> None:
    """Random path data over the characters that matter to cairosvg's reading: the cut happens exactly when
    cairosvg's tokens hold a closepath with data, and leaves cairosvg the same tokens up to that closepath."""
    from svgagent.core.scoring.render_path import cut_at_closepath_error

    rng = random.Random(5)
    alphabet = [
        "z",
        "Z",
        "M",
        "l",
        "h",
        "a",
        "0",
        "5",
        ".",
        "-",
        "+",
        "e",
        "E",
        "%",
        "x",
        " ",
        ",",
        "\t",
        "\n",
        "\u00a0",
        "\u2003",
        "\u200b",
        "'",
        "(",
    ]
    errors = 0
    for _ in range(3000):
        d = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))
        tokens, cut = _tokens(d), cut_at_closepath_error(d)
        first = _closepath_with_data(tokens)
        if first is None:
            assert cut is d, repr(d)
        else:
            errors += 1
            assert _tokens(cut) == [*tokens[:first], (tokens[first][0], "")], repr(d)
    assert errors > 300


TRIANGLE = "M10 10 L90 10 L90 90 Z"
# (SVG body whose path data holds the error, the same body with the data cut), one per way cairosvg reads it
RENDER_CASES = {
    "lean_walk": (f'<path d="{TRIANGLE} 5 5"/>', f'<path d="{TRIANGLE}"/>'),
    "lean_walk_later_commands": (
        '<path d="M10 10 L90 10 L90 90z5 5 L10 90" stroke="#c00" stroke-width="4"/>',
        '<path d="M10 10 L90 10 L90 90z" stroke="#c00" stroke-width="4"/>',
    ),
    "arc_through_cairosvg_path": (
        '<path d="M10 50 A 40 40 0 0 1 90 50 Z 1 1 L 0 0"/>',
        '<path d="M10 50 A 40 40 0 0 1 90 50 Z"/>',
    ),
    "inherited_from_a_group": (f'<g d="{TRIANGLE} 5"><path/></g>', f'<g d="{TRIANGLE}"><path/></g>'),
    "style_declaration": (f'<path style="d: {TRIANGLE} x"/>', f'<path style="d: {TRIANGLE}"/>'),
    "stylesheet": (
        f"<style>path {{ d: {TRIANGLE} . }}</style><path/>",
        f"<style>path {{ d: {TRIANGLE} }}</style><path/>",
    ),
    "use_target": (
        f'<defs><path id="p" d="{TRIANGLE} 5 5"/></defs><use href="#p" x="-5"/>',
        f'<defs><path id="p" d="{TRIANGLE}"/></defs><use href="#p" x="-5"/>',
    ),
    "markers_through_cairosvg_walk": (
        f'<path d="{TRIANGLE} 5 5" marker-start="url(#m)" fill="#39c"/>',
        f'<path d="{TRIANGLE}" marker-start="url(#m)" fill="#39c"/>',
    ),
    # no viewBox: the marker's size comes from cairosvg's bounding box of its content, before it is drawn
    "marker_content_bounding_box": (
        '<path d="M20 50 L80 50" stroke="#000" marker-end="url(#bad)"/>',
        '<path d="M20 50 L80 50" stroke="#000" marker-end="url(#cut)"/>',
    ),
    "gradient_bounding_box": (f'<path d="{TRIANGLE} 5 5" fill="url(#g)"/>', f'<path d="{TRIANGLE}" fill="url(#g)"/>'),
}
DEFS = (
    '<defs><marker id="m" markerWidth="6" markerHeight="6" viewBox="0 0 6 6"><circle cx="3" cy="3" r="3" '
    'fill="#c00"/></marker><marker id="bad" markerWidth="10" markerHeight="10"><path d="M0 0 L10 5 L0 10 Z 5" '
    'fill="#c00"/></marker><marker id="cut" markerWidth="10" markerHeight="10"><path d="M0 0 L10 5 L0 10 Z" '
    'fill="#c00"/></marker><linearGradient id="g"><stop offset="0" stop-color="#c03050"/><stop offset="1" '
    'stop-color="#3050c0"/></linearGradient></defs>'
)


def _svg(body: str) -> str:
    return f'<svg {NS} width="100" height="100">{DEFS}{body}</svg>'


@pytest.fixture(scope="module")
def pool():
    # Before the fix each erroneous case ended as "timed out" after timeout_s; now each renders at once.
    with Renderer(size=64, timeout_s=10, workers=1) as renderer:
        yield renderer


@pytest.mark.parametrize("name", sorted(RENDER_CASES))
def test_render_draws_the_path_up_to_the_closepath_error(name: str, pool: Renderer) -> None:
    with_error, cut = RENDER_CASES[name]
    expected = pool.render_sync(_svg(cut))
    assert expected != pool.render_sync(_svg(""))  # the cut data draws something
    assert pool.render_sync(_svg(with_error)) == expected  # a PNG (not a timeout error), the very same pixels


def test_the_wrappers_are_installed_once_and_leave_good_data_alone() -> None:
    from cairosvg.bounding_box import BOUNDING_BOX_METHODS
    from cairosvg.surface import TAGS

    from svgagent.core.scoring.render_path import _reading_cut_data, install

    install()
    wrappers = TAGS["path"], BOUNDING_BOX_METHODS["path"]
    install()
    assert (TAGS["path"], BOUNDING_BOX_METHODS["path"]) == wrappers
    assert all(getattr(reader, "cuts_closepath_errors", False) for reader in wrappers)

    class Node(dict):
        pass

    seen = []
    reader = _reading_cut_data(lambda surface, node: seen.append(node["d"]))
    good, bad = Node(d="M0 0 L5 5 Z"), Node(d="M0 0 L5 5 Z 5 5")
    reader(None, good)
    reader(None, bad)
    assert seen == ["M0 0 L5 5 Z", "M0 0 L5 5 Z"]
    assert bad["d"] == "M0 0 L5 5 Z"  # stored back: every later reader sees the cut data


_PLAIN_CAIROSVG = """
import sys, cairosvg
print("ready", flush=True)
cairosvg.svg2png(bytestring=b'<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><path d="M0 0 L5 5 Z 5 5"/></svg>')
print("finished", flush=True)
"""


def test_plain_cairosvg_still_loops_on_it() -> None:
    """The upstream bug is still there (so is the reason for render_path): plain cairosvg, in a child process, has
    not finished a 10 px render a second after its import. Should this fail, cairosvg fixed it: render_path can go."""
    child = subprocess.Popen([sys.executable, "-c", _PLAIN_CAIROSVG], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        with pytest.raises(subprocess.TimeoutExpired):
            child.wait(timeout=1.0)
    finally:
        child.kill()
        child.wait()
