"""``L``: the session's messages — every notification and error, oldest first, the newest in view. No toast covers
them here: a notification that arrives while the log is open is added to it (read twice a second) instead."""

from __future__ import annotations

import time
from collections.abc import Callable

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


def log_title(entries: list[LogEntry]) -> Text:
    return Text(f"Messages of this session — {len(entries)}, oldest first", style="bold")


class MessageLogScreen(TextPage):
    SHOWS_MESSAGES = True  # the app toasts nothing over it: a new message joins the log (see SvgAgentApp.notify)
    BINDINGS = page_bindings("log", "escape,q,L")
    BODY = "log-body"
    READ_S = 0.5  # how often the log is read for messages that arrived while it is open

    def __init__(self, entries: list[LogEntry], source: Callable[[], list[LogEntry]] | None = None) -> None:
        super().__init__()
        self.entries = entries
        self.source = source  # the session's log, read again for what arrived meanwhile

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="log-body"):
            yield Static(log_title(self.entries), id="log-title")
            yield Static(log_table(self.entries) if self.entries else Text("Nothing yet.", style="dim"), id="log-text")
        yield KeysFooter()

    def on_mount(self) -> None:
        super().on_mount()
        self.call_after_refresh(lambda: self.body().scroll_end(animate=False))
        if self.source is not None:
            self.set_interval(self.READ_S, self.read_new)

    def read_new(self) -> None:
        """Show the messages that arrived since the log was drawn (the newest stay in view when they were)."""
        assert self.source is not None
        entries = self.source()
        if len(entries) == len(self.entries) and entries[-1:] == self.entries[-1:]:
            return
        body = self.body()
        at_end = body.scroll_y >= body.max_scroll_y
        self.entries = entries
        self.query_one("#log-title", Static).update(log_title(entries))
        self.query_one("#log-text", Static).update(log_table(entries))
        if at_end:
            self.call_after_refresh(lambda: body.scroll_end(animate=False))
