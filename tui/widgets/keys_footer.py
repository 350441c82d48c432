"""The Footer every screen shows, redrawn only when the keys it shows change.

Textual's Footer rebuilds all of its key widgets whenever the screen's bindings may have changed — every focus
move and every ``refresh_bindings`` — although most of those moves leave the same keys on the line. Each rebuild
mounts, styles and lays out a dozen widgets (at start-up four rebuilds: ~10 % of the app's start-up CPU and of a
UI test's). This one compares what it would show with what it shows and rebuilds only on a difference."""

from __future__ import annotations

from typing import Any

from textual.screen import Screen
from textual.widgets import Footer


class KeysFooter(Footer):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._shown: tuple[object, ...] | None = None  # what the last compose drew

    def _wanted(self) -> tuple[object, ...]:
        """Everything of the screen's bindings that the Footer's compose reads (the room it has is in there: the
        screen hides the keys that do not fit, ``AppKeysFirst``), plus the Footer's own settings."""
        bindings = tuple(
            (b.key, b.action, b.description, b.key_display, b.group, b.tooltip, enabled, tooltip,
             self.app.get_key_display(b))
            for (_, b, enabled, tooltip) in self.screen.active_bindings.values() if b.show
        )
        return bindings, self.compact, self.show_command_palette, self.app.ENABLE_COMMAND_PALETTE

    def compose(self):  # type: ignore[no-untyped-def]
        if self._bindings_ready:
            self._shown = self._wanted()
        yield from super().compose()

    def bindings_changed(self, screen: Screen) -> None:  # type: ignore[type-arg]
        if self._bindings_ready and self.is_attached and screen is self.screen and self._wanted() == self._shown:
            return
        super().bindings_changed(screen)
