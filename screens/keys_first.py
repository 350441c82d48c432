"""Screens that list the app's own keys (quit, help) first, so a narrow Footer still shows them."""

from __future__ import annotations

from textual.binding import ActiveBinding
from textual.screen import Screen


class AppKeysFirst(Screen):  # type: ignore[type-arg]
    @property
    def active_bindings(self) -> dict[str, ActiveBinding]:
        bindings = super().active_bindings
        first = {key: b for key, b in bindings.items() if b.node is self.app}
        return {**first, **{key: b for key, b in bindings.items() if key not in first}}
