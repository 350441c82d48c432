"""A full screen of text to read (``?`` help, ``L`` messages): j/k or the arrows scroll it, g/G or Home/End jump to
its start or end, the close keys dismiss it."""

from __future__ import annotations

from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen

from svgagent.screens.keys_first import AppKeysFirst


def page_bindings(prefix: str, close: str) -> list[Binding]:
    """The keys of a text page, with ids under ``prefix`` (``help.down``…) so a keymap can remap them."""
    return [
        Binding(close, "close", "Close", id=f"{prefix}.close"),
        Binding("j,down", "scroll(1)", "Down", show=False, id=f"{prefix}.down"),
        Binding("k,up", "scroll(-1)", "Up", show=False, id=f"{prefix}.up"),
        Binding("g,home", "edge(0)", "First", show=False, id=f"{prefix}.first"),
        Binding("G,end", "edge(1)", "Last", show=False, id=f"{prefix}.last"),
    ]


class TextPage(AppKeysFirst, Screen[None]):
    """Subclasses compose a ``VerticalScroll`` with the id ``BODY``."""

    BODY = "page-body"

    def body(self) -> VerticalScroll:
        return self.query_one(f"#{self.BODY}", VerticalScroll)

    def on_mount(self) -> None:
        self.body().focus()

    def action_scroll(self, step: int) -> None:
        self.body().scroll_relative(y=step, animate=False)

    def action_edge(self, end: int) -> None:
        body = self.body()
        body.scroll_end(animate=False) if end else body.scroll_home(animate=False)

    def action_close(self) -> None:
        self.dismiss(None)
