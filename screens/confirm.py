"""A yes/no question over the current screen (e.g. before cancelling an RFT job). Dismissed with True or False."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from svgagent.core.terminal_text import visible
from svgagent.tui.widgets.keys_footer import KeysFooter


class Confirm(ModalScreen[bool]):
    DEFAULT_CSS = """
    Confirm { align: center middle; }
    Confirm > #confirm-box {
        width: 70%;
        max-width: 80;
        height: auto;
        border: round $warning;
        background: $surface;
        padding: 0 1;
    }
    Confirm #confirm-question { text-style: bold; }
    Confirm #confirm-detail { color: $text-muted; margin-top: 1; }
    Confirm #confirm-keys { margin-top: 1; }
    """
    BINDINGS = [
        Binding("y", "answer(True)", "Yes", id="confirm.yes", tooltip="Go ahead"),
        Binding("n,escape", "answer(False)", "No", id="confirm.no", tooltip="Leave things as they are"),
    ]

    def __init__(self, question: str, detail: str = "", *, yes: str = "yes", no: str = "no") -> None:
        super().__init__()
        self.question = question
        self.detail = detail
        self.yes, self.no = yes, no

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box"):
            yield Static(visible(self.question), id="confirm-question", markup=False)  # may name outside things
            if self.detail:
                yield Static(visible(self.detail), id="confirm-detail", markup=False)
            yield Static(f"y {self.yes} · n / esc {self.no}", id="confirm-keys", markup=False)
        yield KeysFooter()

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)
