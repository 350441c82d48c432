"""What a person may take away from one rollout: ``y`` copies its SVG, the judge's rationale, its prompt or its id
to the clipboard (OSC 52: it works over SSH), ``w`` writes its PNG and SVG into the exports directory."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from svgagent.core.exchange.export import AssetWriter
from svgagent.core.store.typed_rows import RolloutRecord
from svgagent.tui.widgets.keys_footer import KeysFooter


def copy_choices(rec: RolloutRecord) -> list[tuple[str, str, str]]:
    """(key, what, text) for each thing of ``rec`` that can be copied."""
    found = [
        ("s", "SVG source", rec.svg),
        ("r", "judge's rationale", rec.rationale),
        ("p", "prompt", rec.prompt),
        ("i", "rollout id", rec.rollout_id),
    ]
    return [(key, what, text) for key, what, text in found if text]


def save_picture(rec: RolloutRecord, directory: Path) -> list[Path]:
    """Write the PNG the judge saw and the SVG of ``rec`` into ``directory`` (named by the rollout id)."""
    return AssetWriter(directory).write(rec)


class CopyMenu(ModalScreen[None]):
    """Pick what to copy: its letter, or enter on the highlighted line."""

    DEFAULT_CSS = """
    CopyMenu { align: center middle; }
    CopyMenu > #copy-box { width: 60; height: auto; border: round $accent; background: $surface; padding: 0 1; }
    CopyMenu #copy-options { height: auto; border: none; }
    """
    BINDINGS = [
        Binding("escape,q", "cancel", "Cancel", id="copy.cancel"),
        *(
            Binding(key, f"copy('{key}')", what, show=False, id=f"copy.{key}")
            for key, what in (("s", "SVG"), ("r", "Rationale"), ("p", "Prompt"), ("i", "Id"))
        ),
    ]

    def __init__(self, rec: RolloutRecord) -> None:
        super().__init__()
        self.record = rec
        self.choices = copy_choices(rec)

    def compose(self) -> ComposeResult:
        with Vertical(id="copy-box"):
            yield Static(Text(f"Copy from {self.record.rollout_id}", style="bold"))
            yield OptionList(
                *(
                    Option(
                        Text.assemble(
                            (f" {key} ", "bold reverse"), f"  {what}", (f"  {len(text):,} characters", "dim")
                        ),
                        id=key,
                    )
                    for key, what, text in self.choices
                ),
                id="copy-options",
            )
        yield KeysFooter()

    def on_mount(self) -> None:
        self.set_focus(self.query_one(OptionList))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.action_copy(event.option.id or "")

    def action_copy(self, key: str) -> None:
        chosen = next(((what, text) for k, what, text in self.choices if k == key), None)
        if chosen is None:
            self.notify("this rollout has none", severity="warning")
            return
        what, text = chosen
        self.app.copy_to_clipboard(text)
        self.app.notify(
            f"the {what} of {self.record.rollout_id} ({len(text):,} characters), through the terminal (OSC 52)",
            title="Copied",
        )
        self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)
