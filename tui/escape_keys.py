"""Escape then a key, pressed fast or pasted, is Escape and then that key — not an Alt chord.

A terminal sends Alt+x as ESC followed by ``x``. Escape pressed just before ``1`` over SSH (or in one tmux
``send-keys``) arrives as exactly the same two bytes in one read, and Textual's parser reads them as the Alt chord:
ESC ``1`` became "¡", ESC ``/`` lost the Escape, ESC ``x`` became ``alt+x``. The Preview's Escape-then-``1`` then
stayed on the Preview and the ``/row:3`` after it ran ``r`` (a new run).

The app binds no Alt key, so here ESC followed by a printable character is always Escape, then the character; the
Escape is never lost. Sequences the terminal itself sends are read as before: ESC ``[`` (CSI: arrows, function
keys, mouse, bracketed paste, replies), ESC ``O`` (SS3), ESC ``P`` / ``]`` / ``_`` / ``^`` (DCS, OSC, APC, PM
replies), and the two editing chords readline users type (Alt+Backspace deletes a word, ESC Tab is Shift+Tab on
some terminals). A terminal with the kitty keyboard protocol sends Escape unambiguously and never reaches this.

``EscapeThenKeyParser`` is Textual's xterm parser with that one rule; ``EscapeThenKeyDriver`` is Textual's Linux
driver reading stdin through it (the App picks it in ``get_driver_class``).
"""

from __future__ import annotations

import os
import selectors
from codecs import getincrementaldecoder
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from textual import events
from textual._parser import ParseError
from textual._xterm_parser import XTermParser
from textual.drivers.linux_driver import LinuxDriver

if TYPE_CHECKING:
    from textual.app import App

ESC = "\x1b"
# what may follow ESC at the start of a sequence the terminal sends (kept for Textual's parser to read)
INTRODUCERS = frozenset("[OP]_^")
READ_SIZE = 4096


def _escape() -> events.Key:
    return events.Key("escape", ESC)


class EscapeThenKeyParser(XTermParser):
    """Textual's parser, except that ESC and a printable character it would read as an Alt chord are two keys."""

    def _sequence_to_key_events(self, sequence: str, alt: bool = False) -> Iterable[events.Key]:
        if alt and len(sequence) == 1:
            # ESC then a character that began no known sequence (Textual re-reads them with ``alt``)
            yield _escape()
            yield from super()._sequence_to_key_events(sequence)
            return
        if len(sequence) == 2 and sequence[0] == ESC and sequence[1].isprintable() and sequence[1] not in INTRODUCERS:
            # ESC then a character Textual would map at once (ESC 1 → "¡", ESC f → ctrl+right)
            yield _escape()
            yield from super()._sequence_to_key_events(sequence[1])
            return
        yield from super()._sequence_to_key_events(sequence, alt)


class EscapeThenKeyDriver(LinuxDriver):
    """Textual's Linux driver with stdin read through ``EscapeThenKeyParser``. Its input thread is Textual's
    (``LinuxDriver.run_input_thread``: read stdin, feed the parser, deliver its events, tick it for a lone ESC)
    with the parser swapped: tests/test_textual_internals.py fails when Textual's changes."""

    def __init__(self, app: App[Any], *, debug: bool = False, **kwargs: Any) -> None:
        super().__init__(app, debug=debug, **kwargs)
        self.parser_debug = debug

    def run_input_thread(self) -> None:
        parser = EscapeThenKeyParser(self.parser_debug)
        decode = getincrementaldecoder("utf-8")().decode
        with selectors.SelectSelector() as selector:
            selector.register(self.fileno, selectors.EVENT_READ)

            def pump(timeout: float, final: bool = False) -> None:
                for _key, mask in selector.select(timeout):
                    if mask & selectors.EVENT_READ:
                        text = decode(os.read(self.fileno, READ_SIZE), final=final)
                        if not text:  # stdin is a pipe that closed
                            break
                        for event in parser.feed(text):
                            self.process_message(event)
                for event in parser.tick():  # an ESC alone long enough is the Escape key
                    self.process_message(event)

            while not self.exit_event.is_set():
                pump(0.1)
            selector.unregister(self.fileno)
            pump(0.1, final=True)
        try:
            for _event in parser.feed(""):
                pass
        except (EOFError, ParseError):  # the input ended inside a sequence: nothing left to deliver
            pass
