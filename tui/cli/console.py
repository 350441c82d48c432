"""How the headless commands print: rich consoles that leave a reader that went away to the command."""

from __future__ import annotations

import os
import sys

from rich.console import Console


def stdout_gone() -> None:
    """The reader of standard output left (``| head``): later writes, and the interpreter's last flush, go to
    /dev/null instead of raising again."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


class CliConsole(Console):
    """A rich console whose broken pipe is a ``BrokenPipeError`` for the command to handle (rich's own handling
    exits with status 1, which for `eval` means "below the threshold")."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


def cli_console(*, stderr: bool = False) -> CliConsole:
    """The console a command prints its tables with."""
    return CliConsole(stderr=stderr)
