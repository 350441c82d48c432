"""Screens whose Footer fits the terminal: the app's own keys (quit, help) first, then the screen's, and when they
do not fit in one line, the least important ones leave the footer (they still work, and ``?`` lists them) instead
of the line being cut in the middle of a key — at 80 columns the dashboard's footer used to lose Export."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import ClassVar

from rich.cells import cell_len
from textual.binding import ActiveBinding, Binding
from textual.keys import REPLACED_KEYS, key_to_character
from textual.screen import Screen

from svgagent.tui.widgets.keys_footer import KeysFooter

PALETTE_WIDTH = 12  # "▏^p palette " on the right of a footer that shows it


def typed_character(key: str) -> str | None:
    """The character pressing ``key`` types (None: a key such as ``ctrl+t`` that types nothing).
    Textual's ``key_to_character`` misses the names it shortens ("plus", "slash", "minus"): their Unicode names
    are in ``REPLACED_KEYS``."""
    return key_to_character(key) or key_to_character(REPLACED_KEYS.get(key, key))


def footer_width(bindings: Iterable[Binding], key_display: dict[str, str]) -> int:
    """Cells the footer (``KeysFooter``) needs for ``bindings``: one key per action, ``key label `` each."""
    width, actions, groups = 0, set(), set()
    for binding in bindings:
        if not binding.show or binding.action in actions:
            continue
        actions.add(binding.action)
        label = binding.description
        if binding.group is not None:  # its keys side by side, its description once
            label = "" if binding.group.description in groups else binding.group.description
            groups.add(binding.group.description)
        width += cell_len(key_display[binding.key]) + (1 + cell_len(label) if label else 0) + 1
    return width


class AppKeysFirst(Screen):  # type: ignore[type-arg]
    FOOTER_DROP: ClassVar[tuple[str, ...]] = ()  # binding ids to leave out of the footer first, least important first

    @property
    def active_bindings(self) -> dict[str, ActiveBinding]:
        bindings = self._without_typed_keys(super().active_bindings)
        first = {key: b for key, b in bindings.items() if b.node is self.app}
        ordered = {**first, **{key: b for key, b in bindings.items() if key not in first}}
        return self._fit_footer(ordered)

    def _without_typed_keys(self, bindings: dict[str, ActiveBinding]) -> dict[str, ActiveBinding]:
        """In a text field, a key it types is no binding (Textual drops most of them, not "plus" or "slash"): the
        footer must not offer ``+ Zoom`` where + types a plus."""
        focused = self.focused
        if focused is None:
            return bindings
        return {
            key: b
            for key, b in bindings.items()
            if b.node is focused or not focused.check_consume_key(key, typed_character(key))
        }

    def _fit_footer(self, bindings: dict[str, ActiveBinding]) -> dict[str, ActiveBinding]:
        footers = list(self.query(KeysFooter))
        room = self.app.size.width
        if footers and footers[0].show_command_palette and self.app.ENABLE_COMMAND_PALETTE:
            room -= PALETTE_WIDTH
        displays = {b.binding.key: self.app.get_key_display(b.binding) for b in bindings.values()}

        def width() -> int:
            return footer_width((b.binding for b in bindings.values()), displays)

        if width() <= room:
            return bindings
        shown = [key for key, b in bindings.items() if b.binding.show]
        order = [key for wanted in self.FOOTER_DROP for key in shown if bindings[key].binding.id == wanted]
        order += [key for key in reversed(shown) if key not in order]  # then from the end of the line
        bindings = dict(bindings)
        for key in order:
            if width() <= room:
                break
            active = bindings[key]
            bindings[key] = active._replace(binding=replace(active.binding, show=False))
        return bindings
