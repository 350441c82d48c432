"""A form's text field that takes typed keys only once the person chose to edit it.

A field reached by a pane key, Tab or the arrows is *browsed*: its value shows, and every key is still the app's —
`1` goes back to Rollouts, `r` runs, `?` helps — as in the Secrets pane, where `e` opens the prompt. Enter (or the
form's `e`, or a click) starts the *edit*: the cursor shows at the end and keys type; Escape ends it where it is,
Enter ends it and moves on, and so does leaving the field. (``3`` then ``1`` used to replace the model with "1": the
Config form's first field had the focus and its text selected.)
"""

from __future__ import annotations

from typing import Any

from textual import events
from textual.widgets import Input

EDITING = "-editing"
# Input's own actions: while the field is browsed, its keys (backspace, ←, ctrl+u, …) are not the field's
_INPUT_ACTIONS = frozenset(binding.action.split("(")[0] for binding in Input.BINDINGS if hasattr(binding, "action"))


class FieldInput(Input):
    """An ``Input`` that is browsed until ``start_edit()`` (Enter, a click); Escape or blur ends the edit."""

    # browsed with the focus: highlighted as a list's cursor row, no text cursor; edited: a text field's cursor
    DEFAULT_CSS = """
    FieldInput:focus { background: $block-cursor-background; color: $block-cursor-foreground; }
    FieldInput:focus > .input--cursor { background: transparent; color: $block-cursor-foreground; text-style: none; }
    FieldInput.-editing:focus { background: $surface; color: $foreground; background-tint: $foreground 5%; }
    FieldInput.-editing:focus > .input--cursor {
        background: $input-cursor-background;
        color: $input-cursor-foreground;
        text-style: $input-cursor-text-style;
    }
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("select_on_focus", False)
        super().__init__(*args, **kwargs)
        self.editing = False

    def update_node_styles(self, animate: bool = True) -> None:
        """Not while the field is outside the screen's DOM: it is styled as it mounts. Input's reactives set their
        classes one by one as the field is made (``compact``, ``-valid``), and Textual restyles a node each time,
        attached or not — a form of 19 fields spent ~170 of its ~620 style applications on that."""
        if self.is_attached:
            super().update_node_styles(animate)

    def start_edit(self) -> None:
        """Keys type into the field from now on, the cursor at the end of its value."""
        if self.editing:
            return
        self.editing = True
        self.set_class(True, EDITING)
        self.cursor_position = len(self.value)
        if not self.has_focus:
            self.focus()
        self.app.refresh_bindings()

    def end_edit(self) -> None:
        if not self.editing:
            return
        self.editing = False
        self.set_class(False, EDITING)
        self.app.refresh_bindings()

    # --- keys: typed only while editing ---------------------------------------------------------------------------
    def check_consume_key(self, key: str, character: str | None) -> bool:
        return self.editing and super().check_consume_key(key, character)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in _INPUT_ACTIONS and not self.editing:
            return False  # browsed: backspace, arrows, ctrl+u … go on to the form and the app
        return super().check_action(action, parameters)

    # Textual calls each class's handler in turn (this one, then Input's) unless one prevents the default
    async def _on_key(self, event: events.Key) -> None:
        if not self.editing:
            event.prevent_default()  # Input's handler would type it; the key still bubbles to the bindings
            if event.key == "enter":
                event.stop()
                self.start_edit()
        elif event.key == "escape":
            event.stop()
            event.prevent_default()
            self.end_edit()

    def _on_paste(self, event: events.Paste) -> None:
        if not self.editing:
            event.prevent_default()  # browsed: a paste is not the field's either (Enter first)

    def _on_mouse_down(self, event: events.MouseDown) -> None:
        self.start_edit()  # a click into the field is a choice to edit it

    def _on_blur(self, event: events.Blur) -> None:
        self.end_edit()

    def action_submit(self) -> Any:
        self.end_edit()
        return super().action_submit()
