"""The Config pane until it is first edited: the next run's settings, one per line, read-only.

The form (``ConfigForm``) is about 110 widgets — a row, a label, a control and a hint per setting, and a Select
is five widgets of its own — which is two thirds of the dashboard's. Mounting, styling and laying them out cost
as much CPU as the rest of the app's start-up, and every full layout afterwards (a cursor move onto a rollout of
another height, a resize) walks them again, on screen or not. Most sessions never edit a setting. So the pane
shows this one widget until the person goes there (its pane key, a click, Tab onto it): then the dashboard mounts
the form in its place and the focus moves into it, and the keys typed meanwhile wait for it (``InOrderInput``).

The values are the app's settings (what the next run uses), drawn in full: a long model name folds onto the next
line instead of being cut (in the 120×40 grid the pane is 34 columns wide).
"""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text
from textual.message import Message

from svgagent.core.config.form_fields import DATASET_FILE, FieldSpec, form_fields, input_text
from svgagent.core.config.settings import Settings
from svgagent.core.run.dataset import BUILTIN
from svgagent.core.terminal_text import visible
from svgagent.tui.widgets.text_box import TextBox


def shown_value(spec: FieldSpec, value: Any) -> str:
    """A setting's value as the form would show it: the choice's label, on/off, built-in, or the text typed."""
    if spec.kind == "switch":
        return "on" if value else "off"
    if spec.kind == "dataset":
        return "built-in" if str(value).strip() == BUILTIN else f"{DATASET_FILE}: {value}"
    if spec.kind == "select":
        return next((label for label, choice in spec.choices if choice == value), "(none)")
    return input_text(value) or ("(none)" if spec.optional else "")


def summary_table(settings: Settings) -> Table:
    table = Table.grid(padding=(0, 1))
    table.add_column(style="dim", no_wrap=True)
    table.add_column(overflow="fold")
    for spec in form_fields():
        table.add_row(
            spec.name, Text(visible(shown_value(spec, getattr(settings, spec.name))))
        )  # project files: outside
    return table


class ConfigSummary(TextBox, can_focus=True):
    """The settings as text; focusing it (or clicking it) asks for the form: ``EditRequested``."""

    DEFAULT_CSS = """
    ConfigSummary { height: 1fr; padding: 0 1; overflow: hidden; }
    ConfigSummary:focus { background: $block-cursor-background 20%; }
    """
    HELP = "press 3 (or click) to edit; ctrl+s in the form saves the fields you changed"

    class EditRequested(Message):
        """The person went to the pane: the form should replace the summary and take the focus."""

    def __init__(self, settings: Settings, *, id: str | None = None) -> None:  # noqa: A002 - Textual's name
        super().__init__(id=id)
        self.tooltip = self.HELP
        self.show_settings(settings)

    def show_settings(self, settings: Settings) -> None:
        self.show(summary_table(settings))

    def on_focus(self) -> None:
        self.post_message(self.EditRequested())
