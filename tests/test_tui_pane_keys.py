"""Pane keys switch panes from every pane a pane key reaches — the Config form too: a field takes typed keys only
after the person chose to edit it (Enter or `e`), as the Secrets pane's prompt does (issue 34, item 1)."""

from __future__ import annotations

import pytest
from factories import RUN_ID
from tui_support import burst, make_app, settle

from svgagent.core.store.run_store import Store
from svgagent.tui.widgets.field_input import FieldInput
from svgagent.tui.widgets.rollout_table import RolloutTable

SIZES = [(80, 24), (120, 40)]


def model_field(app) -> FieldInput:  # type: ignore[no-untyped-def]
    return app.dashboard.query_one("#field-model", FieldInput)


@pytest.mark.parametrize("size", SIZES)
async def test_3_then_1_goes_back_to_rollouts_and_the_model_is_unchanged(store: Store, size: tuple[int, int]) -> None:
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        model = app.settings.model
        await pilot.press("3")
        await settle(pilot)
        assert app.dashboard.active_pane == "config"
        assert app.focused is model_field(app)
        assert not model_field(app).editing
        assert model_field(app).selected_text == ""  # nothing selected that a key would replace
        await pilot.press("1")
        await settle(pilot)
        assert app.dashboard.active_pane == "rollouts"
        assert isinstance(app.focused, RolloutTable)
        assert model_field(app).value == model
        assert app.settings.model == model
        for key in "2345":  # and from each pane to the next, whatever has the focus there
            await pilot.press(key)
            await settle(pilot)
            assert app.dashboard.active_pane == ("preview", "config", "secrets", "jobs")["2345".index(key)]
        assert model_field(app).value == model


@pytest.mark.parametrize("size", SIZES)
async def test_keys_on_a_browsed_field_are_the_apps(store: Store, size: tuple[int, int]) -> None:
    """Backspace, ctrl+u and letters on a field that is not being edited change nothing in it; `?` opens help."""
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        model = app.settings.model
        await burst(pilot, "3", "backspace", "ctrl+u", "delete", "question_mark")
        from svgagent.screens.help import HelpScreen

        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await settle(pilot)
        assert model_field(app).value == model
        assert not app.control.running


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("edit_key", ["enter", "e"])
async def test_enter_or_e_edits_the_field_and_escape_ends_the_edit(
    store: Store, size: tuple[int, int], edit_key: str
) -> None:
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await burst(pilot, "3", edit_key, "ctrl+u", *"gpt-13")
        field = model_field(app)
        assert field.editing
        assert field.value == "gpt-13"  # typed, digits and all
        assert app.dashboard.active_pane == "config"
        assert app.settings.model == "gpt-13"
        await burst(pilot, "escape")
        assert not field.editing
        assert app.focused is field  # Escape ended the edit, not the visit to the pane
        assert app.dashboard.active_pane == "config"
        await burst(pilot, "1")
        assert app.dashboard.active_pane == "rollouts"
        assert field.value == "gpt-13"


@pytest.mark.parametrize("size", SIZES)
async def test_enter_ends_the_edit_on_the_next_field_which_is_browsed(store: Store, size: tuple[int, int]) -> None:
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await burst(pilot, "3", "enter", "ctrl+u", *"m-1", "enter", "2")
        assert app.settings.model == "m-1"
        assert not model_field(app).editing
        assert app.dashboard.active_pane == "preview"  # the 2 after it was a pane key again
