"""How the headless commands print: rich consoles that leave a reader that went away to the command, and show
text from outside (imported files, a judge's rationale, an endpoint's error) without letting it drive the
terminal."""

from __future__ import annotations

import os
import sys
from typing import Any

from rich.console import Console
from rich.text import Text

from svgagent.core.terminal_text import visible


def stdout_gone() -> None:
    """The reader of standard output left (``| head``): later writes, and the interpreter's last flush, go to
    /dev/null instead of raising again."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


class CliConsole(Console):
    """A rich console whose broken pipe is a ``BrokenPipeError`` for the command to handle (rich's own handling
    exits with status 1, which for `eval` means "below the threshold"), and whose strings (lines, table cells)
    are shown with :func:`visible` (rich keeps ESC: an imported row id could clear the screen)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError

    def render_str(self, text: str, *args: Any, **kwargs: Any) -> Text:
        return super().render_str(visible(text), *args, **kwargs)


WIDE = 10_000  # "no width": a table written to a pipe or a file keeps every column whole


def cli_console(*, stderr: bool = False) -> CliConsole:
    """The console a command prints its tables with: the terminal's width on a terminal; written to a pipe or a
    file (unless ``COLUMNS`` gives a width), no width limit, so no column is cut to rich's default of 80."""
    stream = sys.stderr if stderr else sys.stdout
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError):
        terminal = False
    wide = not terminal and not os.environ.get("COLUMNS")
    return CliConsole(stderr=stderr, width=WIDE if wide else None)
