"""The one change to how cairosvg reads an SVG: path data is cut at a closepath followed by data, where cairosvg
would loop for ever (docs/cairosvg-closepath-hang.md is the upstream report).

A closepath (``Z``/``z``) takes no numbers. cairosvg's two readers of path data -- ``path()``, which draws a path,
and ``bounding_box_path``, which measures one for gradients, patterns and markers -- put whatever follows a ``Z``
before the next command letter back in their queue without consuming it, so ``M0 0 Z 5 5`` never ends. SVG renders
a path up to the command holding the first error in its data (SVG 1.1 F.2; SVG 2, "Error handling in path data"):
here, up to and including that ``Z``.

Path data reaches those readers from an attribute, an ancestor (cairosvg inherits ``d``), a ``style`` attribute, a
stylesheet, a ``<use>`` target (rebuilt with the cascade at every use) and nested SVG documents, so no
pre-processing of the document sees all of it: :func:`install` wraps the two readers instead, each wrapper storing
the cut data in the node and calling cairosvg's own reader. Data without that error reaches cairosvg unchanged.
"""

from __future__ import annotations

import functools
import re


@functools.cache
def _closepath_then_data() -> re.Pattern[str]:
    """A closepath followed, after separators, by a character cairosvg keeps as data: not ``,``, not whitespace (its
    ``normalize`` turns separators into spaces and ``str.strip`` drops every ``str.isspace`` character, exactly
    what ``\\s`` matches) and not a command letter."""
    from cairosvg.helpers import PATH_LETTERS

    return re.compile(f"[zZ](?=[\\s,]*[^\\s,{PATH_LETTERS}])")


def cut_at_closepath_error(d: str) -> str:
    """``d`` up to and including its first closepath followed by data; ``d`` itself when it has none."""
    error = _closepath_then_data().search(d)
    return d if error is None else d[: error.end()]


def _reading_cut_data(reader):
    def read(surface, node):
        data = node.get("d", "")
        cut = cut_at_closepath_error(data)
        if cut is not data:
            node["d"] = cut
        return reader(surface, node)

    read.cuts_closepath_errors = True
    return read


def install() -> None:
    """Wrap cairosvg's two readers of path data so they read it cut at a closepath error (idempotent)."""
    from cairosvg.bounding_box import BOUNDING_BOX_METHODS
    from cairosvg.surface import TAGS

    for table in (TAGS, BOUNDING_BOX_METHODS):
        if not getattr(table["path"], "cuts_closepath_errors", False):
            table["path"] = _reading_cut_data(table["path"])
