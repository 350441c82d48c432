"""cairosvg's path drawing for the lean walk, for less CPU on the path data models write most; and SVG's handling
of a closepath followed by data, on which cairosvg never ends.

cairosvg's ``path()`` reads each coordinate pair with a regular expression over the rest of the path string (which
it then slices: quadratic in the length of a long path) and records every vertex and tangent angle for markers.
:func:`draw_path` makes the very same cairo calls, with the same numbers, for paths made of ``M L H V C Q Z`` (either
case): the same tokens (cairosvg's own preprocessing and ``size``), the same current-point and sub-path logic, the
same point where a truncated command stops the path (``PointError``). It builds no vertices: the lean walk hands
every node with markers to cairosvg's walk. Any other path (arcs, smooth curves) is drawn by cairosvg's ``path()``.
:func:`draw_polyline` and :func:`draw_polygon` do the same for point lists (cairosvg's ``point()`` ran a regular
expression over the rest of the list for each pair).
tests/test_render_fast.py compares the cairo paths both make on the corpus, the project's drawings and malformed
data.

A closepath takes no numbers, and cairosvg's readers of path data (``path()`` and ``bounding_box_path``) put
whatever follows a ``Z`` before the next command back in their queue without consuming it: ``M0 0 Z 5 5`` (or
``Z x``, ``z.``: anything but separators) loops for ever, holding a render worker until its timeout. SVG renders a
path up to the command holding the first error in its data (SVG 1.1 F.2; SVG 2, path data error handling), which
here means up to and including that ``Z``. :func:`cut_at_closepath_error` cuts the data there; :func:`draw_path`
and the wrappers :func:`install` puts around cairosvg's two readers store the cut data in the node before reading
it (the ``d`` a node has, from its attribute, an ancestor's or a style rule), so every later reader sees it too.
Path data without that error is left as it is (so are the pixels), which is why the wrappers stay in place in
comparisons with cairosvg as it ships (``render_draw.cairosvg_as_shipped``): with the error, cairosvg's own would
never end. render_worker installs them before every render. tests/test_render_path_errors.py checks the cut against
cairosvg's own tokens and renders every way cairosvg reads path data.
"""

from __future__ import annotations

import functools
import re

_DELEGATED = frozenset("aAsStT")  # commands drawn by cairosvg's own path()


@functools.cache
def _parts():
    from cairosvg import helpers
    from cairosvg.path import path as cairosvg_path

    letters = helpers.PATH_LETTERS
    commands = re.compile(f"([{letters}])([^{letters}]*)")
    return helpers, cairosvg_path, letters, commands


@functools.cache
def _data_follows():
    """Matches, right after a ``Z``, when a character cairosvg keeps as data comes before the next command letter:
    one that is not ``,`` and not whitespace (cairosvg's ``normalize`` turns ASCII separators into spaces, then
    ``str.strip`` drops every ``str.isspace`` character at the ends; ``\\s`` matches exactly those)."""
    letters = _parts()[2]
    return re.compile(f"[\\s,]*[^\\s,{letters}]")


def cut_at_closepath_error(d: str) -> str:
    """Path data ``d`` up to and including its first closepath followed by data other than a command (which SVG
    treats as the first error, and cairosvg's readers loop on); ``d`` itself when it has none."""
    data_follows = _data_follows().match
    first = len(d)
    for letter in "zZ":  # (str.find, then one anchored match per closepath: a few microseconds on long data)
        position = d.find(letter, 0, first)
        while position != -1 and not data_follows(d, position + 1):
            position = d.find(letter, position + 1, first)
        if position != -1:
            first = position
    return d if first == len(d) else d[: first + 1]


def _path_data(node) -> str:
    """The node's ``d`` cut at a closepath error, stored back in the node when cut (for every later reader)."""
    string = node.get("d", "")
    cut = cut_at_closepath_error(string)
    if cut is not string:
        node["d"] = cut
    return cut


def _reading_cut_data(reader):
    def read(surface, node):
        _path_data(node)
        return reader(surface, node)

    read.cuts_closepath_errors = True
    return read


def install() -> None:
    """Wrap cairosvg's readers of path data (drawing a path in its own walk, and the bounding box of a path) so
    they read the data cut at a closepath error (idempotent; once per process, like render_shortcuts)."""
    from cairosvg import bounding_box, surface

    for table in (getattr(surface, "TAGS", None), getattr(bounding_box, "BOUNDING_BOX_METHODS", None)):
        reader = table.get("path") if isinstance(table, dict) else None  # (None: cairosvg's internals moved)
        if reader is not None and not getattr(reader, "cuts_closepath_errors", False):
            table["path"] = _reading_cut_data(reader)


def draw_path(surface, node) -> None:  # noqa: C901 - one command per branch, in cairosvg's order
    """Draw the path ``node`` on ``surface`` exactly as ``cairosvg.path.path`` does (raises its ``PointError``), up
    to a closepath error (see :func:`cut_at_closepath_error`)."""
    helpers, cairosvg_path, letters, commands = _parts()
    string = _path_data(node)
    for letter in letters:
        string = string.replace(letter, f" {letter} ")
    string = helpers.normalize(string)
    parsed = [(letter, args.strip()) for letter, args in commands.findall(string.strip())]
    if any(letter in _DELEGATED for letter, _ in parsed):
        return cairosvg_path(surface, node)  # (it reads the cut data from the node)
    size, point_error = helpers.size, helpers.PointError
    context = surface.context
    calls = {
        "M": context.move_to,
        "m": context.rel_move_to,
        "L": context.line_to,
        "l": context.rel_line_to,
        "C": context.curve_to,
        "c": context.rel_curve_to,
        "Q": context.curve_to,
        "q": context.rel_curve_to,
    }
    if context.has_current_point():
        current_x, current_y = context.get_current_point()
    else:
        context.move_to(0, 0)
        current_x = current_y = 0
    last_letter = first_point = None
    for letter, args in parsed:
        tokens = args.split(" ") if args else []
        index = 0
        while True:
            if last_letter in (None, "z", "Z") and letter not in "mM":
                first_point = (current_x, current_y)
            if last_letter in (None, "m", "M", "z", "Z"):
                first_point = None
            if letter not in "mMzZ" and first_point is None:
                first_point = (current_x, current_y)

            if letter in "HhVv":  # one number (an empty one counts as 0, as in cairosvg)
                value = tokens[index] if index < len(tokens) else ""
                index += 1
                if letter == "H":
                    current_x = size(surface, value, "x")
                    context.line_to(current_x, current_y)
                elif letter == "h":
                    dx = size(surface, value, "x")
                    context.rel_line_to(dx, 0)
                    current_x += dx
                elif letter == "V":
                    current_y = size(surface, value, "y")
                    context.line_to(current_x, current_y)
                else:
                    dy = size(surface, value, "y")
                    context.rel_line_to(0, dy)
                    current_y += dy
            elif letter in "zZ":
                if first_point:
                    context.close_path()
                    current_x, current_y = first_point
            else:
                pairs = 3 if letter in "Cc" else 2 if letter in "Qq" else 1
                values = []
                for _ in range(pairs):  # cairosvg's point(): a pair needs a space after its x, so two tokens
                    if len(tokens) - index < 2:
                        raise point_error
                    values.append(size(surface, tokens[index], "x"))
                    values.append(size(surface, tokens[index + 1], "y"))
                    index += 2
                if letter in "Qq":  # drawn as the cubic curve cairosvg makes of it
                    start = (current_x, current_y) if letter == "Q" else (0, 0)
                    values = helpers.quadratic_points(*start, *values)
                calls[letter](*values)
                if letter.islower():
                    current_x, current_y = current_x + values[-2], current_y + values[-1]
                else:
                    current_x, current_y = values[-2], values[-1]
            last_letter = letter
            if index >= len(tokens):
                break
            letter = {"m": "l", "M": "L"}.get(letter, letter)  # more numbers: the command again (M, m: line to)
    return None


def draw_polyline(surface, node) -> None:
    """Draw the polyline ``node`` as ``cairosvg.shapes.polyline`` does: the same ``move_to``/``line_to`` with the same
    numbers, ``PointError`` where cairosvg's ``point()`` finds no pair (an odd number), without the vertices (the lean
    walk hands nodes with markers to cairosvg's walk) and without ``point()``'s regular expression over the rest of the
    list for every pair."""
    helpers = _parts()[0]
    points = helpers.normalize(node.get("points", ""))
    if not points:
        return
    tokens = points.split(" ")  # normalize leaves single spaces between tokens: what point() splits on
    if len(tokens) < 2:
        raise helpers.PointError
    size, context = helpers.size, surface.context
    context.move_to(size(surface, tokens[0], "x"), size(surface, tokens[1], "y"))
    for index in range(2, len(tokens), 2):
        if index + 1 == len(tokens):
            raise helpers.PointError
        context.line_to(size(surface, tokens[index], "x"), size(surface, tokens[index + 1], "y"))


def draw_polygon(surface, node) -> None:
    """``cairosvg.shapes.polygon``: the polyline, then the close (not reached after a ``PointError``)."""
    draw_polyline(surface, node)
    surface.context.close_path()
