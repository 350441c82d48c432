"""Keys that arrive in one burst (SSH, a paste) land where the key before them sent the focus.

Each test queues a whole sequence on the app before it handles the first key (``burst``), as one read from a
terminal delivers it, then checks where every key went: the filter, every text field, the Secrets prompt,
Escape-then-number, the run picker, the export dialog, the RFT launch form, the command palette.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from factories import RUN_ID, build_run
from textual.command import CommandPalette
from textual.widgets import DataTable, Input
from tui_support import burst, key_event, make_app, notifications, settle, table_of

from svgagent.core.config.secrets import read_env_file
from svgagent.core.store.run_store import Store
from svgagent.screens.dashboard import Dashboard
from svgagent.screens.export_dialog import ExportDialog
from svgagent.screens.rft_launch import RftLaunchScreen
from svgagent.tui.widgets.rollout_table import RolloutTable

# 40 characters; digits and letters that are keys of the dashboard (r run, x export, f image, 3 config, e edit,
# v reveal, t test, a add, d delete, q quit, s stop, o runs, R rerun, i stats, c resume)
SECRET = "fw3rxf4e5vta6dq7so8Ri9c0rxf3e4vtadqsoRic"
assert len(SECRET) == 40


def ids(app) -> list[str]:  # type: ignore[no-untyped-def]
    return [rid.removeprefix(RUN_ID + ".") for rid in table_of(app).visible_ids]


def filter_box(app) -> Input:  # type: ignore[no-untyped-def]
    return app.dashboard.query_one("#filter", Input)


def field(app, name: str) -> Input:  # type: ignore[no-untyped-def]
    return app.dashboard.query_one(f"#field-{name}", Input)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_slash_then_text_filters_instead_of_running_commands(store: Store, size: tuple[int, int]) -> None:
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await burst(pilot, *"/xyz")
        assert isinstance(app.screen, Dashboard)  # not the Export dialog (x)
        assert filter_box(app).value == "xyz"
        assert filter_box(app).has_focus
        await burst(pilot, "escape", "escape", *"/row:3", "enter", "j")
        assert ids(app) == ["3.0"]
        assert isinstance(app.focused, RolloutTable)  # enter handed the focus back; j moved on the table
        assert not app.control.running  # r was typed, not a new run
        assert app.dashboard.active_pane == "rollouts"  # 3 was typed, not the Config pane
        assert len(store.list_runs()) == 1


async def test_a_paste_into_the_filter_stays_there(store: Store) -> None:
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await burst(pilot, "slash", paste="status:failed", then=("enter",))
        assert ids(app) == ["3.0"]
        assert isinstance(app.focused, RolloutTable)
        assert isinstance(app.screen, Dashboard)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_a_secret_typed_into_the_prompt_is_never_a_command(store: Store, size: tuple[int, int]) -> None:
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        model_before = app.settings.model
        await burst(pilot, "4", "e", *SECRET, "enter")
        assert read_env_file(Path.cwd() / ".env") == {"FIREWORKS_API_KEY": SECRET}
        assert isinstance(app.screen, Dashboard)  # no Export dialog, no help, not quit
        assert app.is_running
        assert not app.control.running
        assert app.dashboard.active_pane == "secrets"
        assert isinstance(app.focused, DataTable)  # back on the key table once saved
        assert app.settings.model == model_before  # nothing leaked into another field:
        for box in app.dashboard.query("#field-model").results(Input):  # (in tabs the Config form is not mounted
            assert box.value == model_before  # until it is first shown)
        assert app.dashboard.query_one("#secrets-input", Input).value == ""
        assert not any(SECRET in n for n in notifications(app))
        assert not any("real terminal" in n for n in notifications(app))  # f (full image) never ran


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_j_in_the_secrets_pane_picks_the_key_the_e_after_it_edits(store: Store, size: tuple[int, int]) -> None:
    """j/k move the key table's cursor as in every list of the app: `4je…` edits the second key, not the first
    (it overwrote FIREWORKS_API_KEY, and OPENAI_API_KEY stayed unset)."""
    env = Path.cwd() / ".env"
    env.write_text("FIREWORKS_API_KEY=FAKEFW-saved-earlier-0123456789\n")
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await burst(pilot, "4", "j", "e", *SECRET, "enter")
        assert read_env_file(env) == {"FIREWORKS_API_KEY": "FAKEFW-saved-earlier-0123456789", "OPENAI_API_KEY": SECRET}
        assert isinstance(app.focused, DataTable)
        await burst(pilot, "k", "e", *"FAKEFW-typed-after-k-9876543210", "enter")
        assert read_env_file(env) == {"FIREWORKS_API_KEY": "FAKEFW-typed-after-k-9876543210", "OPENAI_API_KEY": SECRET}
        assert not app.control.running


async def test_a_pasted_secret_goes_into_the_prompt(store: Store) -> None:
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await burst(pilot, "4", "e", paste=SECRET, then=("enter",))
        assert read_env_file(Path.cwd() / ".env") == {"FIREWORKS_API_KEY": SECRET}
        assert isinstance(app.screen, Dashboard)
        assert not app.control.running


async def test_a_new_variable_name_then_its_value(store: Store) -> None:
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await burst(pilot, "4", "a", *"MY_TOKEN", "enter", *SECRET, "enter", "escape", "j")
        assert read_env_file(Path.cwd() / ".env") == {"MY_TOKEN": SECRET}
        assert isinstance(app.focused, RolloutTable)  # escape left the pane, j went to the table
        assert table_of(app).cursor_id == f"{RUN_ID}.1.0"


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_escape_from_a_config_field_then_a_number(store: Store, size: tuple[int, int]) -> None:
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await burst(pilot, "3", "tab", "tab", "escape", "4")  # tab, tab: model → base_url → temperature
        assert field(app, "temperature").value == "0.8"  # the 4 did not land in temperature
        assert app.dashboard.active_pane == "secrets"
        assert isinstance(app.focused, DataTable)


async def test_typing_into_config_fields_in_one_burst(store: Store) -> None:
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await burst(
            pilot, "3", "tab", "tab", "enter", "ctrl+u", *"1.5", "tab", "e", "ctrl+u", *"900", "escape", "escape", "j"
        )
        assert field(app, "temperature").value == "1.5"
        assert field(app, "max_tokens").value == "900"
        assert app.settings.temperature == 1.5
        assert app.settings.max_tokens == 900
        assert isinstance(app.focused, RolloutTable)
        assert table_of(app).cursor_id == f"{RUN_ID}.1.0"


async def test_a_pane_key_at_start_up_waits_for_the_pane(store: Store) -> None:
    """Keys queued while the app starts up still find the Config pane's fields."""
    app = make_app(store, run_id=RUN_ID)
    keys = ("3", "tab", "tab", "enter", "ctrl+u", *"1.5", "escape", "escape", "j")
    app.call_later(lambda: [app.post_message(key_event(k)) for k in keys])  # queued as the app starts
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert field(app, "temperature").value == "1.5"
        assert table_of(app).cursor_id == f"{RUN_ID}.1.0"


async def test_run_picker_takes_the_keys_after_o(store: Store) -> None:
    build_run(store, run_id="20250101-000000-old0", name="older run")
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        second = store.list_runs()[1].run_id  # the picker lists the runs in this order
        await burst(pilot, "o", "j", "enter")
        assert isinstance(app.screen, Dashboard)
        assert app.dashboard.run_id == second  # j moved in the picker, enter opened that run
        assert table_of(app).cursor_id == f"{second}.0.0"  # and the table's cursor did not move


async def test_export_dialog_takes_the_typed_path(store: Store) -> None:
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await burst(pilot, "x", "ctrl+u", *"burst.jsonl", "enter")
        await settle(pilot)
        assert (Path.cwd() / "burst.jsonl").is_file()
        assert not isinstance(app.screen, ExportDialog)


async def test_export_dialog_takes_a_burst_into_both_of_its_fields(store: Store) -> None:
    """The file name typed, tab, then the assets directory pasted, enter: all in one burst."""
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await burst(pilot, "x", "ctrl+u", *"two.jsonl", "tab", paste="pics", then=("enter",))
        await settle(pilot)
        assert (Path.cwd() / "two.jsonl").is_file()
        assert sorted(p.suffix for p in (Path.cwd() / "pics").iterdir()) == [
            ".png",
            ".png",
            ".png",
            ".png",
            ".svg",
            ".svg",
            ".svg",
            ".svg",
        ]
        assert not isinstance(app.screen, ExportDialog)


async def test_rft_launch_form_takes_the_keys_after_n(store: Store) -> None:
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await burst(pilot, "5")
        await settle(pilot)  # the Jobs pane connects to its (fake) account
        await burst(pilot, "n", "ctrl+u", *"qwen-burst", "tab", "ctrl+u", *"7")
        screen = app.screen
        assert isinstance(screen, RftLaunchScreen)
        assert screen.values()["base_model"] == "qwen-burst"
        assert screen.values()["chunk_size"] == "7"


async def test_command_palette_takes_the_keys_after_ctrl_p(store: Store) -> None:
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await burst(pilot, "ctrl+p", *"rerun")
        palette = app.screen
        assert isinstance(palette, CommandPalette)
        assert palette.query_one(Input).value == "rerun"
        assert not app.control.running  # the r of "rerun" went into the palette's search


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_from_the_preview_escape_then_a_pane_then_the_filter(store: Store, size: tuple[int, int]) -> None:
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await burst(pilot, "2")
        assert app.dashboard.active_pane == "preview"
        await burst(pilot, "escape", "1")
        await burst(pilot, *"/row:3")
        assert isinstance(app.screen, Dashboard)
        assert filter_box(app).value == "row:3"
        assert not app.control.running  # r was typed, not a new run
        assert len(store.list_runs()) == 1
