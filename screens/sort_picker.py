"""`S` on the rollout table: pick the column to sort by directly (not by cycling through them). Each column has
a letter; enter or the letter sorts by it, and picking the current sort column again reverses it. Dismissed with
``(column, reverse)`` or None."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.events import Key
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from svgagent.tui.widgets.keys_footer import KeysFooter

# sort field → (letter, what a person calls it); the order the columns have in the table
SORT_CHOICES: dict[str, tuple[str, str]] = {
    "prompt": ("p", "prompt (what it draws)"),
    "row": ("r", "row, then sample (the run's order)"),
    "sample": ("n", "sample number"),
    "status": ("t", "status"),
    "score": ("s", "score (yours where you overrode)"),
    "fulfilled": ("f", "requirements fulfilled"),
    "gen": ("g", "generation time"),
    "judge": ("j", "judging time"),
    "tokens": ("k", "tokens"),
}


class SortPicker(ModalScreen[tuple[str, bool] | None]):
    DEFAULT_CSS = """
    SortPicker { align: center middle; }
    SortPicker > #sort-box {
        width: 50; max-width: 95%; height: auto; border: round $accent; background: $surface; padding: 0 1;
    }
    SortPicker #sort-options { height: auto; max-height: 14; border: none; padding: 0; }
    SortPicker #sort-help { color: $text-muted; }
    """
    BINDINGS = [Binding("escape,q", "cancel", "Cancel", id="sort.cancel")]

    def __init__(self, current: str, reverse: bool) -> None:
        super().__init__()
        self.current, self.reverse = current, reverse

    def compose(self) -> ComposeResult:
        options = []
        for column, (letter, label) in SORT_CHOICES.items():
            text = Text.assemble((f" {letter} ", "bold reverse"), f" {label}")
            if column == self.current:  # one line per option: what picking it again does is said below the list
                text.append(f"  {'▼' if self.reverse else '▲'}", style="bold")
            options.append(Option(text, id=column))
        now = "▼ descending" if self.reverse else "▲ ascending"
        with Vertical(id="sort-box"):
            yield Static(Text("Sort rollouts by", style="bold"))
            yield OptionList(*options, id="sort-options")
            yield Static(
                f"letter or enter: sort · {now} now, its letter again: reverse · escape: leave as is", id="sort-help"
            )
        yield KeysFooter()

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        options.highlighted = list(SORT_CHOICES).index(self.current) if self.current in SORT_CHOICES else 0
        options.focus()

    def _choose(self, column: str) -> None:
        self.dismiss((column, not self.reverse if column == self.current else False))

    @on(OptionList.OptionSelected, "#sort-options")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            self._choose(event.option.id)

    def on_key(self, event: Key) -> None:
        for column, (letter, _) in SORT_CHOICES.items():
            if event.character == letter:
                event.stop()
                self._choose(column)
                return

    def action_cancel(self) -> None:
        self.dismiss(None)
