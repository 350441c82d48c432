"""The form's one-line choice (tui/widgets/choice_field.py): one widget until opened, keys, blank, click."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Input, OptionList

from svgagent.tui.widgets.choice_field import ChoiceField

CHOICES = [("count", "count"), ("per requirement", "per-requirement"), ("strict", "strict")]


class ChoiceApp(App[None]):
    BINDINGS: ClassVar[list[Binding]] = [Binding("1", "pane_one", "Pane 1")]

    def __init__(self, **options: Any) -> None:
        super().__init__()
        self.options = options
        self.changes: list[Any] = []
        self.pane_keys = 0

    def compose(self) -> ComposeResult:
        yield ChoiceField(CHOICES, id="choice", **self.options)
        yield Input(id="after")

    def on_mount(self) -> None:
        self.query_one(ChoiceField).focus()

    def on_choice_field_changed(self, event: ChoiceField.Changed) -> None:
        self.changes.append(event.value)

    def action_pane_one(self) -> None:
        self.pane_keys += 1


def _field(app: ChoiceApp) -> ChoiceField:
    return app.query_one(ChoiceField)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_enter_opens_the_list_down_and_enter_pick(size: tuple[int, int]) -> None:
    app = ChoiceApp(value="count")
    async with app.run_test(size=size) as pilot:
        field = _field(app)
        assert not field.query(OptionList)  # one widget until it is opened
        await pilot.press("enter")
        assert field.is_open
        assert isinstance(app.focused, OptionList)
        assert app.focused.highlighted == 0  # at the current choice
        await pilot.press("down", "enter")
        await pilot.pause()
        assert field.value == "per-requirement"
        assert app.changes == ["per-requirement"]
        assert not field.is_open
        assert app.focused is field
        assert field.label == "per requirement"


async def test_escape_closes_the_list_unchanged_and_space_opens_it_at_the_choice() -> None:
    app = ChoiceApp(value="strict")
    async with app.run_test() as pilot:
        field = _field(app)
        await pilot.press("space")
        assert app.focused.highlighted == 2
        await pilot.press("up", "escape")
        await pilot.pause()
        assert not field.is_open
        assert field.value == "strict"
        assert app.changes == []
        assert app.focused is field


async def test_leaving_the_open_list_closes_it_unchanged() -> None:
    app = ChoiceApp(value="count")
    async with app.run_test() as pilot:
        field = _field(app)
        await pilot.press("enter", "down")
        app.query_one("#after", Input).focus()
        await pilot.pause()
        assert not field.is_open
        assert field.value == "count"


async def test_other_keys_are_the_apps_while_the_choice_has_the_focus() -> None:
    """A pane key on a choice switches pane (as from a text field not being edited); it chooses nothing."""
    app = ChoiceApp(value="count")
    async with app.run_test() as pilot:
        await pilot.press("1", "s")
        await pilot.pause()
        assert app.pane_keys == 1
        assert _field(app).value == "count"
        assert not _field(app).is_open


async def test_a_blank_choice_shows_the_prompt_and_can_be_chosen_again() -> None:
    app = ChoiceApp(value=None, allow_blank=True, prompt="(none)")
    async with app.run_test() as pilot:
        field = _field(app)
        assert field.label == "(none)"
        assert field.has_class("-blank")
        await pilot.press("enter", "down", "enter")  # the prompt is the first option: down is "count"
        await pilot.pause()
        assert field.value == "count"
        assert not field.has_class("-blank")
        await pilot.press("enter", "up", "enter")
        await pilot.pause()
        assert field.value is None
        assert app.changes == ["count", None]


async def test_a_value_that_is_not_a_choice_is_refused() -> None:
    app = ChoiceApp(value="count")
    async with app.run_test():
        field = _field(app)
        with pytest.raises(ValueError, match="not one of"):
            field.value = "loud"
        assert field.value == "count"
    with pytest.raises(ValueError, match="not one of"):
        ChoiceField(CHOICES, value="loud")
    assert ChoiceField(CHOICES).value == "count"  # no blank allowed: the first choice


async def test_a_click_opens_the_list_and_a_disabled_choice_stays_shut() -> None:
    app = ChoiceApp(value="count")
    async with app.run_test() as pilot:
        await pilot.click("#choice")
        await pilot.pause()
        assert _field(app).is_open
        await pilot.click(OptionList, offset=(3, 3))  # under its top border: count, per requirement, strict
        await pilot.pause()
        assert _field(app).value == "strict" and not _field(app).is_open
        assert app.changes == ["strict"]
    app = ChoiceApp(value="count", disabled=True)
    async with app.run_test() as pilot:
        await _field(app).action_open()
        assert not _field(app).is_open
