"""cairosvg's path drawing for the lean walk, for less CPU on the path data models write most.

cairosvg's ``path()`` reads each coordinate pair with a regular expression over the rest of the path string (which
it then slices: quadratic in the length of a long path) and records every vertex and tangent angle for markers.
:func:`draw_path` makes the very same cairo calls, with the same numbers, for paths made of ``M L H V C Q Z`` (either
case): the same tokens (cairosvg's own preprocessing and ``size``), the same current-point and sub-path logic, the
same point where a truncated command stops the path (``PointError``). It builds no vertices: the lean walk hands
every node with markers to cairosvg's walk. Any other path (arcs, smooth curves, a ``Z`` with numbers after it) is
drawn by cairosvg's ``path()``. tests/test_render_fast.py compares the cairo paths both make on the corpus, the
project's drawings and malformed data.
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


def draw_path(surface, node) -> None:  # noqa: C901 - one command per branch, in cairosvg's order
    """Draw the path ``node`` on ``surface`` exactly as ``cairosvg.path.path`` does (raises its ``PointError``)."""
    helpers, cairosvg_path, letters, commands = _parts()
    string = node.get("d", "")
    for letter in letters:
        string = string.replace(letter, f" {letter} ")
    string = helpers.normalize(string)
    parsed = [(letter, args.strip()) for letter, args in commands.findall(string.strip())]
    if any(letter in _DELEGATED or (letter in "zZ" and args) for letter, args in parsed):
        return cairosvg_path(surface, node)
    size, point_error = helpers.size, helpers.PointError
    context = surface.context
    calls = {"M": context.move_to, "m": context.rel_move_to, "L": context.line_to, "l": context.rel_line_to,
             "C": context.curve_to, "c": context.rel_curve_to, "Q": context.curve_to, "q": context.rel_curve_to}
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
