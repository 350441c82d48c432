"""Key names and the characters they type, as Textual names them: the footer hides a binding whose key types into
the focused field (screens/keys_first ``typed_character``), and the burst tests post the events a terminal sends
(tests/tui_support ``key_name``). Both are read here against what Textual itself delivers for each character."""

from __future__ import annotations

import string

from textual import events
from textual.app import App
from tui_support import key_name

from svgagent.screens.keys_first import typed_character

PRINTABLE = string.ascii_letters + string.digits + string.punctuation + " "


class KeyRecorder(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.keys: list[tuple[str, str | None]] = []

    def on_key(self, event: events.Key) -> None:
        self.keys.append((event.key, event.character))


async def test_each_printable_character_has_the_key_name_textual_gives_it() -> None:
    app = KeyRecorder()
    async with app.run_test() as pilot:
        await pilot.press(*PRINTABLE)
    assert [key for key, _ in app.keys] == [key_name(c) for c in PRINTABLE]
    assert [character for _, character in app.keys] == list(PRINTABLE)


def test_the_character_a_key_name_types() -> None:
    assert [typed_character(key_name(c)) for c in PRINTABLE] == list(PRINTABLE)
    assert (typed_character("plus"), typed_character("slash"), typed_character("minus")) == ("+", "/", "-")
    assert typed_character("ctrl+t") is None
