"""``L``: the session's messages — every notification and error, oldest first, the newest in view."""

from __future__ import annotations

import time

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from svgagent.core.terminal_text import visible_line
from svgagent.screens.text_page import TextPage, page_bindings
from svgagent.tui.message_log import LogEntry
from svgagent.tui.widgets.keys_footer import KeysFooter
from svgagent.tui.widgets.screen_text import shown

STYLES = {"information": "", "warning": "yellow", "error": "bold red"}
MARKS = {"information": "·", "warning": "!", "error": "✗"}


def log_table(entries: list[LogEntry]) -> Table:
    table = Table(box=None, show_header=False, pad_edge=False, expand=True)
    table.add_column("time", style="dim", no_wrap=True)
    table.add_column("mark", no_wrap=True)
    table.add_column("what", ratio=1)
    for entry in entries:
        style = STYLES.get(entry.severity, "")
        what = Text.assemble(
            (f"{visible_line(entry.title)}: ", f"bold {style}".strip()) if entry.title else "",
            shown(entry.message, style=style),
        )  # as data: a message may hold brackets and (escaped) controls
        table.add_row(
            time.strftime("%H:%M:%S", time.localtime(entry.at)), Text(MARKS.get(entry.severity, "·"), style=style), what
        )
    return table


class MessageLogScreen(TextPage):
    BINDINGS = page_bindings("log", "escape,q,L")
    BODY = "log-body"

    def __init__(self, entries: list[LogEntry]) -> None:
        super().__init__()
        self.entries = entries

    def compose(self) -> ComposeResult:
        title = Text(f"Messages of this session — {len(self.entries)}, oldest first", style="bold")
        with VerticalScroll(id="log-body"):
            yield Static(title)
            yield Static(log_table(self.entries) if self.entries else Text("Nothing yet.", style="dim"), id="log-text")
        yield KeysFooter()

    def on_mount(self) -> None:
        super().on_mount()
        self.call_after_refresh(lambda: self.body().scroll_end(animate=False))
