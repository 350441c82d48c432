"""A form's one-line choice: the chosen label and ``▼``; Enter (or space, a click) opens the list under it.

Textual's ``Select`` is five widgets (itself, the current value's box with a label and two arrows, and its list),
made, styled and laid out as each form mounts: 5 – 9 ms each, where a text field costs under 1 ms — the Config
form's five choices were a third of its first open. This is one widget until the person opens it; the list (an
``OptionList`` over the screen, as ``Select``'s is) is made on the first open and kept.

Keys: a choice takes Enter and space only (so ``1`` still goes back to Rollouts, as from a text field that is not
being edited); in the open list ↑/↓ move, Enter picks, Escape (or leaving it) closes it unchanged. ``value`` is the
chosen value (``None``: no choice, when the field allows it); setting it posts :class:`ChoiceField.Changed`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from rich.table import Table
from rich.text import Text
from textual import events, on
from textual.binding import Binding
from textual.message import Message
from textual.reactive import var
from textual.widget import Widget
from textual.widgets import OptionList

ARROW = "▼"
OPEN = "-open"


class _ChoiceList(OptionList):
    """The open list: Escape or leaving it closes it unchanged."""

    BINDINGS: ClassVar[list[Binding]] = [Binding("escape", "close", "Close", show=False)]

    def action_close(self) -> None:
        parent = self.parent
        if isinstance(parent, ChoiceField):
            parent.close(refocus=True)

    def _on_blur(self, event: events.Blur) -> None:
        parent = self.parent
        if isinstance(parent, ChoiceField) and parent.is_open:
            parent.close(refocus=False)


class ChoiceField(Widget, can_focus=True):
    """One of ``choices`` (label, value); ``value`` is the chosen one, or None when ``allow_blank`` and none is."""

    DEFAULT_CSS = """
    ChoiceField { height: 1; width: 1fr; padding: 0 1 0 0; color: $foreground; background: $surface; }
    ChoiceField.-blank { color: $foreground 50%; }
    ChoiceField > .choice-field--arrow { color: $foreground 50%; }
    ChoiceField:focus { background: $block-cursor-background; color: $block-cursor-foreground; }
    ChoiceField:disabled { opacity: 0.6; }
    ChoiceField > _ChoiceList {
        display: none; overlay: screen; constrain: none inside;
        width: 1fr; height: auto; max-height: 12;
        border: tall $border; background: $surface;
    }
    ChoiceField.-open > _ChoiceList { display: block; }
    """

    BINDINGS: ClassVar[list[Binding]] = [
        Binding(
            "enter,space",
            "open",
            "Choose",
            show=False,
            id="config.choose",
            tooltip="Open a choice's list: ↑/↓ and enter pick, esc closes it unchanged",
        )
    ]
    COMPONENT_CLASSES: ClassVar[set[str]] = {"choice-field--arrow"}

    value: var[Any] = var(None, init=False)

    class Changed(Message):
        """The chosen value changed (``value`` None: no choice)."""

        def __init__(self, field: ChoiceField, value: Any) -> None:
            super().__init__()
            self.field = field
            self.value = value

        @property
        def control(self) -> ChoiceField:
            return self.field

    def __init__(
        self,
        choices: Sequence[tuple[str, Any]],
        *,
        value: Any = None,
        allow_blank: bool = False,
        prompt: str = "(none)",
        id: str | None = None,  # noqa: A002 - Textual's name
        classes: str | None = None,
        disabled: bool = False,
    ) -> None:
        super().__init__(id=id, classes=classes, disabled=disabled)
        self.choices = list(choices)
        self.allow_blank = allow_blank
        self.prompt = prompt
        if value is None and not allow_blank:
            value = self.choices[0][1]
        self._check(value)
        self.set_reactive(ChoiceField.value, value)
        self.set_class(value is None, "-blank", update=False)

    # --- value ----------------------------------------------------------------------------------------------------
    def _check(self, value: Any) -> None:
        if value is None and self.allow_blank:
            return
        if all(choice != value for _, choice in self.choices):
            raise ValueError(f"{value!r} is not one of this field's choices")

    def validate_value(self, value: Any) -> Any:
        self._check(value)
        return value

    def watch_value(self, value: Any) -> None:
        self.set_class(value is None, "-blank")
        self.refresh()
        self.post_message(self.Changed(self, value))

    @property
    def label(self) -> str:
        """What the field shows: the chosen value's label, or the prompt."""
        return next((label for label, choice in self.choices if choice == self.value), self.prompt)

    def render(self) -> Table:
        row = Table.grid(expand=True)
        row.add_column(ratio=1, no_wrap=True, overflow="ellipsis")
        row.add_column(width=2, justify="right")
        row.add_row(Text(self.label), Text(ARROW, style=self.get_component_rich_style("choice-field--arrow")))
        return row

    # --- the list ---------------------------------------------------------------------------------------------------
    @property
    def is_open(self) -> bool:
        return self.has_class(OPEN)

    def _options(self) -> list[tuple[str, Any]]:
        return ([(self.prompt, None)] if self.allow_blank else []) + self.choices

    async def action_open(self) -> None:
        if self.is_open or self.disabled:
            return
        lists = self.query(_ChoiceList)
        if lists:
            choice_list = lists.first()
        else:
            choice_list = _ChoiceList(*(Text(label) for label, _ in self._options()))
            await self.mount(choice_list)
        values = [choice for _, choice in self._options()]
        choice_list.highlighted = values.index(self.value) if self.value in values else 0
        self.add_class(OPEN)
        choice_list.focus()

    def close(self, *, refocus: bool) -> None:
        self.remove_class(OPEN)
        if refocus:
            self.focus()

    @on(OptionList.OptionSelected)
    def _picked(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.value = self._options()[event.option_index][1]
        self.close(refocus=True)

    async def _on_click(self, event: events.Click) -> None:
        await self.action_open()  # nothing when it is open (a click on an option bubbles here too)
