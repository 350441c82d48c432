"""What a demanding user expects: mark all / unmark all / mark a range, copy (OSC 52) and save one rollout, and a
log of every notification of the session."""

from __future__ import annotations

from pathlib import Path

from factories import RUN_ID
from tui_support import burst, make_app, notifications, plain, settings_for, settle, table_of

from svgagent.core.store.run_store import Store


def short(ids: frozenset[str] | list[str]) -> list[str]:
    return sorted(rid.removeprefix(RUN_ID + ".") for rid in ids)


async def test_mark_all_unmark_all_and_a_range(store: Store) -> None:
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        table = table_of(app)
        await pilot.press("a")
        assert short(table.marked) == short(table.visible_ids)
        assert len(table.marked) == 6
        await pilot.press("A")
        assert table.marked == frozenset()
        await pilot.press("j", "space", "j", "j", "v")  # row 1 marked, cursor moves to 2, then 4: v marks 1..4
        assert short(table.marked) == ["1.0", "2.0", "3.0", "4.0"]
        await pilot.press("A", "slash", *"status:failed", "enter", "a", "escape")  # all the filter keeps
        assert short(table.marked) == ["3.0"]
        await pilot.press("A", "v")
        assert any("mark a first row with space" in n for n in notifications(app))


async def test_y_copies_the_svg_rationale_prompt_or_id(store: Store) -> None:
    from svgagent.screens.rollout_actions import CopyMenu

    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await burst(pilot, "y", "s")
        rec = store.get_rollout(f"{RUN_ID}.0.0")
        assert app.clipboard == rec.svg
        assert any(n.startswith(f"the SVG source of {RUN_ID}.0.0") for n in notifications(app))
        await burst(pilot, "y", "r")
        assert app.clipboard == rec.rationale
        await burst(pilot, "j", "enter")  # the rollout screen copies the rollout it shows
        await burst(pilot, "y", "i")
        assert app.clipboard == f"{RUN_ID}.1.0"
        await burst(pilot, "escape", "j", "y")  # row 2: no SVG in its answer
        menu = app.screen
        assert isinstance(menu, CopyMenu)
        assert [key for key, _, _ in menu.choices] == ["p", "i"]
        await burst(pilot, "s")
        assert any("this rollout has none" in n for n in notifications(app))


async def test_w_saves_the_png_and_svg_of_one_rollout(store: Store, tmp_path) -> None:  # type: ignore[no-untyped-def]
    settings = settings_for(store.path, home=tmp_path / "data")
    app = make_app(store, run_id=RUN_ID, settings=settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await burst(pilot, "w")
        exports = tmp_path / "data" / "exports"
        rec = store.get_rollout(f"{RUN_ID}.0.0")
        assert (exports / f"{RUN_ID}.0.0.png").read_bytes() == rec.png
        assert (exports / f"{RUN_ID}.0.0.svg").read_text() == rec.svg
        assert not (Path.cwd() / f"{RUN_ID}.0.0.png").exists()  # not the working directory
        await burst(pilot, "j", "j", "w")
        assert any("has no picture" in n for n in notifications(app))


async def test_the_message_log_keeps_every_notification(store: Store) -> None:
    from svgagent.screens.message_log import MessageLogScreen

    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await burst(pilot, "slash", *"scor<1", "enter", "escape", "escape")  # an error notification
        app.notify("first", timeout=0.01)
        await burst(pilot, "L")
        screen = app.screen
        assert isinstance(screen, MessageLogScreen)
        text = plain(screen.query_one("#log-text"), width=200)
        assert "Filter: unknown field 'scor'" in text
        assert "first" in text
        assert [e.severity for e in app.message_log.entries][:1] == ["error"]
        await burst(pilot, "L")
        assert not isinstance(app.screen, MessageLogScreen)


async def test_the_command_palette_has_one_provider_and_each_command_once(store: Store) -> None:
    from textual.command import CommandPalette
    from textual.widgets import OptionList

    from svgagent.tui.palette_commands import ScreenCommands

    app = make_app(store, run_id=RUN_ID)
    assert set(app.COMMANDS) == {ScreenCommands}  # Textual's system commands are folded into it
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await burst(pilot, "ctrl+p", *"quit")
        await settle(pilot)
        palette = app.screen
        assert isinstance(palette, CommandPalette)
        options = palette.query_one(OptionList)
        prompts = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        assert [p for p in prompts if p.split("\n")[0] == "Quit"] == [
            "Quit\nkey q — Quit (a run in progress is stopped, finished work kept)"
        ]  # once: ctrl+q and q reach it
        await burst(pilot, "ctrl+u", *"theme")
        await settle(pilot)
        prompts = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        assert any(p.startswith("Theme") for p in prompts), prompts  # what Textual offers and no key does stays
