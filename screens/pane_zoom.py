"""Zoom (``+``, like lazygit's): the pane with the focus gets the whole screen — in the 120×40 grid the Config pane
is otherwise a 38-column box — and ``+`` again gives every pane its place back. A mixin of the dashboard; the
panes are ``#pane-<name>`` containers and ``tui/app.tcss`` lays out the ``-zoomed`` classes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from textual.screen import Screen
from textual.widget import Widget


class PaneZoom(Screen):  # type: ignore[type-arg]
    PANES: ClassVar[Sequence[str]] = ()
    active_pane: str

    @property
    def zoomed(self) -> str | None:
        """The pane that has the whole screen, or None."""
        return next((n for n in self.PANES if self.query_one(f"#pane-{n}").has_class("-zoomed")), None)

    def pane_of(self, widget: Widget | None) -> str:
        """The pane ``widget`` is in (the active pane when it is in none)."""
        for node in widget.ancestors_with_self if widget is not None else ():
            name = (node.id or "").removeprefix("pane-")
            if node.id and node.id.startswith("pane-") and name in self.PANES:
                return name
        return self.active_pane

    def action_zoom(self) -> None:
        self.zoom(None if self.zoomed else self.pane_of(self.focused))

    def zoom(self, name: str | None) -> None:
        """Give pane ``name`` the whole screen (None: every pane its place)."""
        for pane in self.PANES:
            self.query_one(f"#pane-{pane}").set_class(pane == name, "-zoomed")
        self.set_class(name is not None, "-zoomed")
