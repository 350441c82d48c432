"""The rollout table's filter bar: one line under the table, mounted with it (hidden) and focused at once.

``/`` on the table opens it: the bar is already there, so it shows and takes the focus in the same call, and the
keys typed after ``/`` land in it. The text is applied as you type (on big runs once typing pauses), enter keeps it
and hands the focus back to the table, escape leaves it. A text the filter language rejects is marked and keeps the
last valid filter; free text that matches no rollout says so, with the term it was most likely meant to be.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Input, Label, Static

from svgagent.core.store.filter_language import QueryError, unmatched_terms
from svgagent.core.terminal_text import visible_line
from svgagent.tui.widgets.rollout_table import RolloutTable

LIVE_FILTER_ROWS = 2_000  # up to this many rows the filter applies on every key
TYPING_PAUSE_S = 0.2  # above it, once typing pauses this long
PLACEHOLDER = "score<0.5 status:failed invalid overridden row:3 text"


class FilterBar(Vertical):
    """Filters ``table``. Posts ``Applied`` whenever the table's filter changed (the screen's summary follows)."""

    DEFAULT_CSS = """
    FilterBar { height: auto; }
    FilterBar > #filter-row { height: 1; }
    FilterBar #filter-label { color: $accent; text-style: bold; }
    FilterBar #filter { width: 1fr; }
    FilterBar #filter-hint { width: auto; color: $text-muted; }
    FilterBar #filter.-error { color: $error; }
    FilterBar > #filter-note { height: auto; color: $warning; }
    FilterBar.-hidden, FilterBar > .-hidden { display: none; }
    """

    class Applied(Message):
        """The table shows what ``text`` selects."""

        def __init__(self, bar: FilterBar, text: str) -> None:
            super().__init__()
            self.bar, self.text = bar, text

    def __init__(self, table: RolloutTable, *, id: str | None = None) -> None:  # noqa: A002 - Textual's name
        super().__init__(id=id, classes="-hidden")
        self.table = table
        self._timer: Timer | None = None
        self.note = ""  # what the bar says about the filter (an unmatched term), "" when nothing

    def compose(self) -> ComposeResult:
        with Horizontal(id="filter-row"):
            yield Label("filter ", id="filter-label")
            yield Input(placeholder=PLACEHOLDER, id="filter", compact=True)
            # said here, so a narrow footer can leave "esc Back" out for the keys that act on what the filter shows
            yield Label(" esc: clear", id="filter-hint", classes="-hidden")
        yield Static("", id="filter-note", classes="-hidden", markup=False)

    @property
    def input(self) -> Input:
        return self.query_one("#filter", Input)

    @property
    def editing(self) -> bool:
        return self.input.has_focus

    # --- opening and closing --------------------------------------------------------------------------------
    def open(self) -> None:
        """Show the bar with the table's filter and give it the focus now (not after a refresh)."""
        self.remove_class("-hidden")
        self.query_one("#filter-hint").add_class("-hidden")  # while typing, escape leaves the bar
        self.input.value = self.table.query_filter.text
        self.input.cursor_position = len(self.input.value)
        self.screen.set_focus(self.input)

    def close(self) -> None:
        """Stop editing: the text shows what is applied; the bar stays only while a filter is applied."""
        self._stop_timer()
        self.input.value = self.table.query_filter.text
        self.input.remove_class("-error")
        self.set_class(self.table.query_filter.empty, "-hidden")
        self.query_one("#filter-hint").remove_class("-hidden")

    def clear(self) -> None:
        self.apply("", quiet=True)
        self.close()

    # --- applying -------------------------------------------------------------------------------------------
    def apply(self, text: str, *, quiet: bool) -> bool:
        """Filter the table by ``text``. An invalid text keeps the last valid filter, marks the field and (unless
        ``quiet``) says why in a notification; returns whether ``text`` is applied."""
        try:
            self.table.set_filter(text)
        except QueryError as err:
            self.input.add_class("-error")
            self._show_note(str(err))  # what is wrong with the text as typed, not the note of an earlier text
            if not quiet:
                self.notify(str(err), title="Filter", severity="error")
            return False
        self.input.remove_class("-error")
        self._show_note(" · ".join(unmatched_terms(self.table.query_filter, self.table.records.values())))
        self.post_message(self.Applied(self, text))
        return True

    def _show_note(self, note: str) -> None:
        self.note = note
        label = self.query_one("#filter-note", Static)
        label.update(visible_line(note))
        label.set_class(not note, "-hidden")

    def _stop_timer(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None

    @on(Input.Changed, "#filter")
    def _typed(self, event: Input.Changed) -> None:
        """Applied as you type; on big runs once typing pauses, so each key stays instant."""
        event.stop()
        self._stop_timer()
        if len(self.table.records) < LIVE_FILTER_ROWS:
            self.apply(event.value, quiet=True)
        else:
            self._timer = self.set_timer(TYPING_PAUSE_S, lambda: self.apply(event.value, quiet=True))

    @on(Input.Submitted, "#filter")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._stop_timer()
        if self.apply(event.value, quiet=False):
            self.close()
            self.screen.set_focus(self.table)
