"""A CSS class that styles only the nodes it is meant for, set without restyling everything below them.

Textual restyles a node *and its whole subtree* whenever one of its classes changes (it cannot know which rules the
class feeds), and a focus move restyles the whole subtree of the outermost ancestor with a ``:focus-within`` rule.
With the Config form mounted, switching pane (``-active``), zooming (``-zoomed``) and the grid's highlighted border
(``:focus-within``) restyled the whole dashboard: 410 – 660 style applications per key, ≈0.3 s of the 0.5 s of CPU
Escape cost there (in a Pilot test at load 7). The pane classes below feed only rules about the pane containers
themselves, so only those are restyled (22 – 50 applications for the same keys; the form's own ``-stacked``
restyles just the rows it lays out).

Rules that use one of these classes must keep it on the nodes listed here (tests/test_tui_restyle.py reads the
app's stylesheet and fails otherwise).
"""

from __future__ import annotations

from collections.abc import Iterable

from textual.dom import DOMNode

PANE_SHOWN = "-pane-shown"  # narrow layout: the pane on screen
PANE_FOCUSED = "-pane-focused"  # grid layout: the pane with the focus (its border is highlighted)
PANE_ZOOMED = "-pane-zoomed"  # the pane with the whole screen
ZOOMED = "-zoomed"  # on the dashboard while a pane is zoomed: rules about #panes, the panes and #pane-tabs only

OWN_CLASSES = (PANE_SHOWN, PANE_FOCUSED, PANE_ZOOMED)  # style only the node that has them


def set_own_class(node: DOMNode, add: bool, name: str, restyle: Iterable[DOMNode] = ()) -> bool:
    """Add or remove class ``name`` on ``node`` and restyle ``node`` and ``restyle`` only (not their children).
    False: nothing changed."""
    if node.has_class(name) == add:
        return False
    node.set_class(add, name, update=False)
    if node.is_attached:
        node.app.stylesheet.update_nodes([node, *restyle], animate=False)
    return True
