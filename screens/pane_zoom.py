"""Zoom (``+``, like lazygit's): the pane with the focus gets the whole screen — in the 120×40 grid the Config pane
is otherwise a 38-column box — and ``+`` again gives every pane its place back. A mixin of the dashboard; the
panes are ``#pane-<name>`` containers and ``tui/app.tcss`` lays out the zoom classes, which restyle only the
containers (``tui/own_class``): a zoom used to restyle all ~600 widgets of the dashboard twice."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from textual.screen import Screen
from textual.widget import Widget

from svgagent.tui.own_class import PANE_ZOOMED, ZOOMED, set_own_class


class PaneZoom(Screen):  # type: ignore[type-arg]
    PANES: ClassVar[Sequence[str]] = ()
    active_pane: str

    def pane_containers(self) -> dict[str, Widget]:
        """Each pane's ``#pane-<name>`` container, in the order of :attr:`PANES`."""
        return {name: self.query_one(f"#pane-{name}") for name in self.PANES}

    def mark_pane(self, name: str | None, own_class: str) -> None:
        """``own_class`` on pane ``name``'s container and on no other (``tui/own_class``: only they restyle)."""
        for pane, container in self.pane_containers().items():
            set_own_class(container, pane == name, own_class)

    @property
    def zoomed(self) -> str | None:
        """The pane that has the whole screen, or None."""
        return next((n for n, pane in self.pane_containers().items() if pane.has_class(PANE_ZOOMED)), None)

    def pane_containing(self, widget: Widget | None) -> str | None:
        """The pane ``widget`` is in, or None."""
        for node in widget.ancestors_with_self if widget is not None else ():
            name = (node.id or "").removeprefix("pane-")
            if node.id and node.id.startswith("pane-") and name in self.PANES:
                return name
        return None

    def pane_of(self, widget: Widget | None) -> str:
        """The pane ``widget`` is in (the active pane when it is in none)."""
        return self.pane_containing(widget) or self.active_pane

    def action_zoom(self) -> None:
        self.zoom(None if self.zoomed else self.pane_of(self.focused))

    def zoom(self, name: str | None) -> None:
        """Give pane ``name`` the whole screen (None: every pane its place)."""
        self.mark_pane(name, PANE_ZOOMED)
        set_own_class(
            self,
            name is not None,
            ZOOMED,
            restyle=[self.query_one("#panes"), *self.pane_containers().values(), self.query_one("#pane-tabs")],
        )
