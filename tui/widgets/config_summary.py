"""The Config pane until it is first edited: the next run's settings, one per line, read-only.

The form (``ConfigForm``) is about 100 widgets — a row, a label, a control and a hint per setting — more than the
rest of the dashboard. Mounting, styling and laying them out cost as much CPU as the rest of the app's start-up,
and every full layout afterwards (a cursor move onto a rollout of another height, a resize) walks them again, on
screen or not. Most sessions never edit a setting. So the pane shows this one widget until the person goes there
(its pane key, a click, Tab onto it): then the dashboard mounts the form in its place — the rows that fit first,
the rest once those are on screen — and the focus moves into it; the keys typed meanwhile wait for it
(``InOrderInput``).

The values are the app's settings (what the next run uses), drawn in full: a value too wide to go beside its name
(in the 120×40 grid the pane is 34 columns wide: a base URL, a model's path) goes on the line under it, where it
has the pane's whole width (an https:// URL there without its scheme, as a browser shows it; http:// stays said);
only one wider than that folds, after a ``/``.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console, ConsoleOptions, RenderResult
from rich.text import Text
from textual.message import Message

from svgagent.core.config.form_fields import DATASET_FILE, FieldSpec, form_fields, input_text
from svgagent.core.config.settings import Settings
from svgagent.core.run.dataset import BUILTIN
from svgagent.core.terminal_text import cells, folded, visible_line
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


class SettingLines:
    """``name  value`` per setting at whatever width it is drawn; a value too wide for beside its name goes under
    it, indented (never split where the pane's width happens to fall, as a two-column table did)."""

    INDENT = 2

    def __init__(self, rows: list[tuple[str, str]]) -> None:
        self.rows = rows
        self.label_width = max((cells(name) for name, _ in rows), default=0)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        for name, value in self.rows:
            if self.label_width + 1 + cells(value) <= width:
                yield Text.assemble((name.ljust(self.label_width), "dim"), " ", value, no_wrap=True)
            else:
                yield Text(name, style="dim", no_wrap=True, overflow="ellipsis")
                # an https:// URL as a browser shows it (the default endpoint then fits a line); http:// stays said
                value = value.removeprefix("https://")
                for line in folded(value, width - self.INDENT):
                    yield Text(" " * self.INDENT + line, no_wrap=True)


def summary_table(settings: Settings) -> SettingLines:
    """Every setting of the form and its value (values from project files: outside text, controls escaped)."""
    return SettingLines(
        [(spec.name, visible_line(shown_value(spec, getattr(settings, spec.name)))) for spec in form_fields()]
    )


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
