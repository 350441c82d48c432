"""Escape then a key in one read (a burst over SSH, one tmux ``send-keys``) is two keys, never an Alt chord; what
the terminal itself sends (arrows, mouse, paste, replies) reads as Textual reads it."""

from __future__ import annotations

import pytest
from textual import events

from svgagent.tui.escape_keys import EscapeThenKeyDriver, EscapeThenKeyParser


def keys(*chunks: str) -> list[str]:
    """What the parser delivers for ``chunks`` read one after the other, then the end of input."""
    parser = EscapeThenKeyParser()
    out: list[events.Message] = []
    for chunk in chunks:
        out.extend(parser.feed(chunk))
    out.extend(parser.feed(""))
    return [e.key if isinstance(e, events.Key) else type(e).__name__ for e in out]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ("\x1b1", ["escape", "1"]),  # Textual alone: "¡" (WezTerm's Option+1)
        ("\x1b4", ["escape", "4"]),  # "¢" typed into the temperature field
        ("\x1b/row", ["escape", "slash", "r", "o", "w"]),  # the Escape was lost
        ("\x1bx", ["escape", "x"]),  # alt+x
        ("\x1bf", ["escape", "f"]),  # ctrl+right
        ("\x1bR", ["escape", "R"]),
        ("\x1b\x1b1", ["escape", "escape", "1"]),
        ("j\x1b2k", ["j", "escape", "2", "k"]),
    ],
)
def test_escape_then_a_key_is_two_keys(data: str, expected: list[str]) -> None:
    assert keys(data) == expected


def test_escape_then_a_key_in_two_reads() -> None:
    assert keys("\x1b", "1") == ["escape", "1"]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ("\x1b[A", ["up"]),
        ("\x1bOB", ["down"]),  # SS3, application cursor mode
        ("\x1b[1;5C", ["ctrl+right"]),
        ("\x1b[Z", ["shift+tab"]),
        ("\x1b\x7f", ["ctrl+w"]),  # Alt+Backspace deletes a word, as in readline
        ("\x1b", ["escape"]),
        ("\x1b[<0;10;5M", ["MouseDown"]),
    ],
)
def test_what_the_terminal_sends_reads_as_before(data: str, expected: list[str]) -> None:
    assert keys(data) == expected


def test_a_bracketed_paste_is_one_paste() -> None:
    parser = EscapeThenKeyParser()
    got = list(parser.feed("\x1b[200~/row:3 fw3rxf\x1b[201~")) + list(parser.feed(""))
    assert [(type(e).__name__, getattr(e, "text", None)) for e in got] == [("Paste", "/row:3 fw3rxf")]


def test_the_app_reads_a_real_terminal_through_it() -> None:
    from svgagent.tui.app import SvgAgentApp

    assert SvgAgentApp.get_driver_class(object.__new__(SvgAgentApp)) is EscapeThenKeyDriver
