"""The RFT job monitor's place on the dashboard. The monitor itself is its own piece of work; until it lands this
pane says what will appear here, so the layout (and the number key that reaches it) is already final."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

PLACEHOLDER = (
    "RFT jobs appear here: state, progress and the latest reward of the fine-tuning jobs you launch, "
    "polled from the Fireworks control plane."
)


class JobPanel(Static):
    DEFAULT_CSS = """
    JobPanel { height: 1fr; padding: 0 1; color: $text-muted; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(Text(PLACEHOLDER), id=id)
