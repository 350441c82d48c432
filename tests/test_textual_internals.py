"""The Textual internals the app still relies on (docs/architecture.md, "Textual internals we rely on"), checked as
the app uses them: a Textual upgrade that changes one fails here, by name, instead of silently changing what a user
sees. Everything else in tui/ and screens/ goes through Textual's public API."""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Iterable

from textual import events
from textual.drivers.linux_driver import LinuxDriver

from svgagent.tui.escape_keys import EscapeThenKeyDriver, EscapeThenKeyParser

# sha256 (first 16 hex digits) of the source of LinuxDriver.run_input_thread in the Textual releases whose input
# thread EscapeThenKeyDriver.run_input_thread was compared with: 8.0.0 – 8.2.8
REVIEWED_INPUT_THREADS = {"d796af6d69db337d"}


def test_textuals_parser_reads_keys_through_the_method_escape_keys_overrides() -> None:
    from textual._parser import ParseError
    from textual._xterm_parser import XTermParser

    assert issubclass(EscapeThenKeyParser, XTermParser)
    assert issubclass(ParseError, Exception)
    assert list(inspect.signature(XTermParser).parameters) == ["debug"]
    hook = inspect.signature(XTermParser._sequence_to_key_events)
    assert list(hook.parameters) == ["self", "sequence", "alt"]
    assert hook.parameters["alt"].default is False

    calls: list[tuple[str, bool]] = []

    class Spy(XTermParser):
        def _sequence_to_key_events(self, sequence: str, alt: bool = False) -> Iterable[events.Key]:
            calls.append((sequence, alt))
            yield from super()._sequence_to_key_events(sequence, alt)

    for data in ("\x1bx", "\x1b1", "\x1b/"):
        parser = Spy()
        keys = [*parser.feed(data), *parser.feed("")]
        assert keys, data
        # ESC and a character reach the hook in one of the two shapes EscapeThenKeyParser splits into two keys
        assert (data[1], True) in calls or (data, False) in calls, (data, calls)
        calls.clear()


def test_the_linux_drivers_input_thread_is_the_one_escape_keys_reproduces() -> None:
    """EscapeThenKeyDriver.run_input_thread is Textual's with the parser swapped (Textual builds its parser inside
    that method). When Textual changes it, compare the two, carry the change over, then add the new digest."""
    source = inspect.getsource(LinuxDriver.run_input_thread)
    assert "XTermParser(" in source
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    assert digest in REVIEWED_INPUT_THREADS, f"Textual's LinuxDriver.run_input_thread changed ({digest})"
    assert "debug" in inspect.signature(LinuxDriver.__init__).parameters
    assert issubclass(EscapeThenKeyDriver, LinuxDriver)
