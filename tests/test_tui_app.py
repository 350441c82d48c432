"""Pilot tests of the app over a store with fixed data: keys, panes, filter, sort, override, help, run picker."""

from __future__ import annotations

from pathlib import Path

import pytest
from factories import RUN_ID, Spec, build_run
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import Input, OptionList, Tabs
from tui_support import (
    burst,
    make_app,
    notifications,
    picture_colours,
    plain,
    preview_of,
    rows,
    settings_for,
    settle,
    summary_lines,
    table_of,
    terminal_driver,
    wait_until,
)

from svgagent.core.store.run_store import Store
from svgagent.screens.help import HelpScreen
from svgagent.screens.rollout_detail import RolloutDetail, option_lines
from svgagent.screens.run_picker import RunPicker
from svgagent.tui.widgets.filter_bar import FilterBar
from svgagent.tui.widgets.rollout_table import RolloutTable
from svgagent.tui.widgets.summary_bar import SummaryBar


def ids(app) -> list[str]:  # type: ignore[no-untyped-def]
    return [rid.removeprefix(RUN_ID + ".") for rid in table_of(app).visible_ids]


async def test_opens_a_stored_run_with_focus_on_the_table(store: Store) -> None:
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert isinstance(app.focused, RolloutTable)
        assert ids(app) == ["0.0", "1.0", "2.0", "3.0", "4.0", "5.0"]
        assert rows(app)[0] == (
            "",
            "landscape with a sun",
            "row_0",
            "0",
            "✓ scored",
            "0.75",
            "3/4",
            "1.5",
            "0.8",
            "460",
        )
        assert rows(app)[2][4:6] == ("✓ scored", "0.00")  # no SVG: the model's valid 0, not "✗ failed"
        assert rows(app)[3][4:7] == ("✗ failed", "–", "–/4")  # a judge outage
        assert rows(app)[4][5] == "0.75*"  # the human override, marked
        assert rows(app)[5][4] == "· queued"
        summary = app.dashboard.query_one(SummaryBar).plain
        for part in (
            "fixture run",
            "5/6 done",
            "mean 0.625 ± 0.217",
            "PASS",
            "4 scored · 1 failed",  # scored · invalid · failed (core/store/outcomes.py)
            "2,300 tokens",
            "1 overridden",
            "elapsed –",
        ):
            assert part in summary


async def test_empty_state_tells_a_newcomer_what_to_press(store: Store) -> None:
    app = make_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        table = table_of(app)
        assert table.visible_ids == []
        assert "press r to start a run on the built-in dataset (33 prompts)" in " ".join(table.empty_message)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)


async def test_work_for_after_the_first_frame_runs_once_the_dashboard_is_composed(store: Store) -> None:
    """`tui --demo` starts its simulator's process from this hook: once, with the dashboard's table already there."""
    seen: list[tuple[str, int]] = []
    app = make_app(
        store, after_first_frame=lambda: seen.append((type(app.screen).__name__, len(app.screen.query(RolloutTable))))
    )
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
    assert seen == [("Dashboard", 1)]


async def test_the_first_frame_is_written_before_the_later_panes_and_the_work_after_it(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Textual composes the first frame inside its start-up batch, where anything scheduled after a refresh runs at
    once: the Secrets and Jobs panes mounted (≈0.1 s of CPU) and the simulator started before a byte of the frame
    reached the terminal. The dashboard's first frame written to the terminal comes first, without those panes;
    then the hook and the panes."""
    from svgagent.screens.dashboard import Dashboard

    events: list[object] = []
    mount_panes = Dashboard.mount_panes

    async def recording_mount_panes(self: Dashboard) -> None:
        events.append("mount_panes")
        await mount_panes(self)

    monkeypatch.setattr(Dashboard, "mount_panes", recording_mount_panes)
    app = make_app(store, after_first_frame=lambda: events.append("after_first_frame"))

    def written(frame: str) -> None:
        if "No run open yet." in frame and not any(isinstance(e, tuple) for e in events):  # the dashboard's first
            events.append(("frame", len(app.screen.query("SecretsPane")), len(app.screen.query("JobPanel"))))

    app.driver_class = terminal_driver(written)
    async with app.run_test(headless=False, size=(120, 40)) as pilot:
        await settle(pilot)
        assert len(app.screen.query("SecretsPane")) == 1 and len(app.screen.query("JobPanel")) == 1  # mounted since
    assert events[0] == ("frame", 0, 0)
    assert events.index("after_first_frame") < events.index("mount_panes")
    assert events.count("mount_panes") == events.count("after_first_frame") == 1


async def test_preview_shows_half_block_picture_and_rationale(store: Store) -> None:
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        preview = preview_of(app)
        assert preview.picture.record is not None
        assert preview.picture.record.rollout_id == f"{RUN_ID}.0.0"
        image = preview.picture.image
        assert image is not None
        assert "▀" in image.plain
        assert (135, 206, 235) in picture_colours(image)  # the sky of the fixed SVG, in 24-bit colour
        assert "triangle is too small to count" in plain(preview.picture)
        assert "The sky is light blue." in plain(preview.picture)
        await pilot.press("j", "j")
        await settle(pilot)
        assert preview.picture.record.rollout_id == f"{RUN_ID}.2.0"
        assert preview.picture.image is None
        assert "no <svg> element" in (preview.picture.record.reason or "")


async def test_a_picture_that_arrives_while_the_preview_is_taken_down_is_dropped(store: Store) -> None:
    """Quitting while a picture loads: Textual removes the preview's title before the picture's own queue is done,
    and the loaded picture's handler then met no title (NoMatches, the app's traceback at exit; seen in CI)."""
    from svgagent.tui.widgets.picture import PictureLoaded
    from svgagent.tui.widgets.text_box import TextBox

    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        preview = preview_of(app)
        picture = preview.picture
        request, record, image = picture._pending, picture.record, picture.image
        assert request is not None and record is not None and image is not None
        await preview.query_one("#preview-title", TextBox).remove()
        picture.on_picture_loaded(PictureLoaded(request, record, image, ""))
        assert picture.record is record  # the picture itself still took it; only the title is gone


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=lambda s: f"{s[0]}x{s[1]}")
async def test_preview_picture_uses_the_space_it_has(store: Store, size: tuple[int, int]) -> None:
    """The picture fills the pane's height (80×24, rationale beside it) or its width (the 120×40 grid's narrow
    pane, text below): not 13–24 columns with most of the pane empty."""
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        if size == (80, 24):
            await pilot.press("2")
        await settle(pilot)
        preview = preview_of(app)
        image = preview.picture.image
        assert image is not None
        rows = image.plain.split("\n")
        body = preview.picture
        text_width = body.scrollable_content_region.width - body.text_x
        lines = plain(body).split("\n")
        if size == (80, 24):
            assert preview.beside
            assert len(rows) == body.size.height  # the whole height of the pane
            assert len(rows[0]) == 2 * len(rows)  # the fixture's picture is square
            assert body.text_x >= len(rows[0])
            assert text_width >= 34  # the rationale beside it
            assert "triangle is too small" in plain(body)
            assert max(len(line) for line in lines[len(rows) + 1 :]) <= text_width  # wrapped at its column
        else:
            assert not preview.beside
            assert len(rows[0]) == body.size.width  # the whole width of the pane
            assert body.text_x == 0  # the text below the picture


async def test_the_preview_scrolls_its_text_beside_a_still_picture(store: Store) -> None:
    """The 80×24 Preview pane: PgDn/End/Home scroll the text (drawn by line, not laid out), the picture beside it
    stays where it is, and what is drawn at the top is the text's line at the scroll offset."""
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        body = preview_of(app).picture
        assert app.focused is body
        assert body.beside and body.max_scroll_y > 10  # the SVG source is long
        picture_row = body.image.plain.split("\n")[0]
        text = body.text.split("\n")
        for keys, offset in (
            (("pagedown",), body.scrollable_content_region.height),
            (("end",), body.max_scroll_y),
            (("home",), 0),
        ):
            await pilot.press(*keys)
            await settle(pilot)
            assert body.scroll_y == min(offset, body.max_scroll_y)
            top = body.render_line(0).text
            assert top.startswith(picture_row)  # the picture does not scroll
            assert top[body.text_x :].rstrip() == text[int(body.scroll_y)]
        assert len(text) == body.virtual_size.height


async def test_the_preview_scroll_range_follows_a_shorter_text(store: Store) -> None:
    """Scrolled to the end of a long SVG, the cursor moves to a rollout without one: the text is shorter, the
    scroll offset comes back within it and the scrollbar measures the new text (set without a layout)."""
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("2", "end")
        await settle(pilot)
        body = preview_of(app).picture
        long_end = body.scroll_y
        assert long_end == body.max_scroll_y > 10
        assert table_of(app).move_to(f"{RUN_ID}.2.0")  # no <svg> element
        await settle(pilot)
        assert body.rollout_id == f"{RUN_ID}.2.0"
        assert body.scroll_y == body.max_scroll_y < long_end
        assert body.vertical_scrollbar.window_virtual_size == body.virtual_size.height == len(body.text.split("\n"))


async def test_filter_language_and_escape(store: Store) -> None:
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        cases = {
            "score<0.5": ["2.0"],
            "status:failed": ["3.0"],  # row 2's no-SVG 0 shows and filters as scored (core/store/outcomes.py)
            "status:scored": ["0.0", "1.0", "2.0", "4.0"],
            "invalid": [],
            "overridden": ["4.0"],
            "row:3": ["3.0"],
            "flag": ["1.0"],
            "score>=0.75 -overridden": ["0.0", "1.0"],
        }
        for text, expected in cases.items():
            await pilot.press("slash")
            box = app.dashboard.query_one("#filter", Input)
            assert box.has_focus
            box.value = text
            await pilot.press("enter")
            await pilot.pause()
            assert ids(app) == expected, text
            assert isinstance(app.focused, RolloutTable)
            assert f"showing {len(expected)}" in app.dashboard.query_one(SummaryBar).plain
        await pilot.press("slash", *"scor", "less_than_sign", "1")  # typed: "scor" is an unknown field
        assert box.value == "scor<1"
        assert box.has_class("-error")
        assert ids(app) == []  # the last valid text, "scor" (free text), stays applied
        box.value = "score<0.5"
        await pilot.pause()
        assert ids(app) == ["2.0"]
        assert not box.has_class("-error")  # applied as you type
        box.value = "scor<1"
        await pilot.pause()
        assert box.has_class("-error")
        assert ids(app) == ["2.0"]  # the last valid filter stays
        await pilot.press("enter")
        assert any("unknown field 'scor'" in n for n in notifications(app))
        assert box.has_focus
        await pilot.press("escape")
        assert isinstance(app.focused, RolloutTable)
        await pilot.press("escape")  # on the table: clears the filter
        assert len(ids(app)) == 6
        assert app.dashboard.query_one("#filter-bar").has_class("-hidden")


async def test_filter_says_when_a_word_matches_nothing(store: Store) -> None:
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"failed")
        bar = app.dashboard.query_one(FilterBar)
        assert ids(app) == []
        assert "'failed' is not a filter term" in bar.note
        assert "did you mean status:failed?" in plain(bar.query_one("#filter-note"))
        await pilot.press("ctrl+u", *"status:failed", "enter")
        assert ids(app) == ["3.0"]
        assert bar.note == ""
        assert bar.query_one("#filter-note").has_class("-hidden")


@pytest.mark.parametrize(
    ("typed", "said"),
    [
        ("score<abc", "'score<abc': 'abc' is not a number"),
        ("status:bogus", "'status:bogus': no status starts with 'bogus'"),
        ("bogus:xyz", "unknown field 'bogus' in 'bogus:xyz'"),
        ("score<", "'score<' needs a number after it, e.g. score<0.5"),
        ("status:", "'status:' needs a status: queued, generating"),
    ],
)
async def test_the_filter_says_what_is_wrong_with_the_text_as_typed(store: Store, typed: str, said: str) -> None:
    """As you type `score<abc`, the line under the filter said "'score<' is not a filter term … did you mean
    score<?" (the note of the text before the value, kept once the text became invalid)."""
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await burst(pilot, "slash", *typed)
        bar = app.dashboard.query_one(FilterBar)
        assert bar.input.value == typed
        assert said in bar.note, bar.note
        assert "did you mean" not in bar.note


async def test_rollout_screen_opens_at_the_verdict_and_follows_the_highlighted_requirement(tmp_path: Path) -> None:
    """At 80×24 with nine long requirements the rollout screen opened scrolled past the verdict (focusing the list
    scrolled all of it into view); the text column now starts at the top and follows the highlight."""
    from apps.settings_panes import screen_text

    from svgagent.core.store.run_store import Store as RunStore

    requirements = tuple(f"Requirement number {i} is a fairly long sentence about the picture." for i in range(1, 10))
    with RunStore(tmp_path / "runs.db") as store:
        build_run(store, [Spec(0, fulfilled=7, requirements=requirements)])
        app = make_app(store, run_id=RUN_ID)
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            await burst(pilot, "enter")
            assert "✓ scored  judge 7/9 = 0.78" in screen_text(app)
            await burst(pilot, *"jjjjjjjj")
            assert "9. Requirement number 9" in screen_text(app)
            options = app.screen.query_one("#requirements", OptionList)
            lines = [option_lines(options, i) for i in range(options.option_count)]
            assert lines[0] == (0, 2) and all(b == (a[0] + a[1], 2) for a, b in zip(lines, lines[1:]))
            assert sum(height for _, height in lines) == options.virtual_size.height  # as the list laid them out


async def test_sort_column_is_picked_directly_and_reverses(store: Store) -> None:
    from svgagent.screens.sort_picker import SortPicker

    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        table = table_of(app)
        assert table.sort_column == "row"
        await pilot.press("S", "s")  # S: the column picker; s: score
        assert table.sort_column == "score"
        assert not table.sort_reverse
        assert ids(app) == ["2.0", "0.0", "4.0", "1.0", "3.0", "5.0"]
        await pilot.press("minus")
        assert table.sort_reverse
        assert ids(app) == ["1.0", "0.0", "4.0", "2.0", "3.0", "5.0"]
        await pilot.press("S", "s")  # the current column again: the other way round
        assert table.sort_column == "score"
        assert not table.sort_reverse
        await pilot.press("S")
        assert isinstance(app.screen, SortPicker)
        await pilot.press("down", "enter")  # from score down to fulfilled
        assert table.sort_column == "fulfilled"
        assert isinstance(app.focused, RolloutTable)
        await pilot.press("S", "escape")
        assert table.sort_column == "fulfilled"


async def open_rollout_screen(pilot) -> RolloutDetail:  # type: ignore[no-untyped-def]
    """From a freshly opened dashboard: enter on the first row."""
    await settle(pilot)
    await pilot.press("enter")
    await settle(pilot)
    detail = pilot.app.screen
    assert isinstance(detail, RolloutDetail)
    return detail


async def test_override_per_requirement_and_count(store: Store) -> None:
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(120, 40)) as pilot:
        detail = await open_rollout_screen(pilot)
        assert detail.rollout_id == f"{RUN_ID}.0.0"
        options = detail.query_one("#requirements", OptionList)
        assert options.option_count == 4
        assert "judge ✓" in str(options.get_option_at_index(0).prompt)
        await pilot.press("space")  # requirement 1: the judge said ✓, you say ✗
        rec = store.get_rollout(f"{RUN_ID}.0.0")
        assert rec.override_verdicts == [False, True, True, False]
        assert rec.override_fulfilled == 2
        assert rec.score == 0.75
        assert rec.fulfilled == 3  # the judge's verdict is kept
        await pilot.press("j", "j", "j", "x")
        assert store.get_rollout(f"{RUN_ID}.0.0").override_verdicts == [False, True, True, True]
        await pilot.press("escape")
        await settle(pilot)
        assert rows(app)[0][5:7] == ("0.75*", "3/4")
        await pilot.press("j", "enter")  # row 1, count mode: +/- set your count
        await pilot.press("minus")
        assert store.get_rollout(f"{RUN_ID}.1.0").override_fulfilled == 3
        await pilot.press("escape")
        await settle(pilot)
        assert rows(app)[1][5] == "0.75*"
        assert "3 overridden" in app.dashboard.query_one(SummaryBar).plain
        await pilot.press("enter", "u", "escape")
        await settle(pilot)
        assert rows(app)[1][5] == "1.00"
        assert not store.get_rollout(f"{RUN_ID}.1.0").overridden
        assert "2 overridden" in app.dashboard.query_one(SummaryBar).plain


async def test_count_mode_toggle_starts_from_the_judges_count(tmp_path) -> None:  # type: ignore[no-untyped-def]
    eight = tuple(f"requirement {i}" for i in range(1, 9))
    with Store(tmp_path / "count.db") as store:
        build_run(store, [Spec(0, fulfilled=6, requirements=eight, verdicts=None)])
        app = make_app(store, run_id=RUN_ID)
        async with app.run_test(size=(120, 40)) as pilot:
            detail = await open_rollout_screen(pilot)
            options = detail.query_one("#requirements", OptionList)
            prompts = lambda: [str(options.get_option_at_index(i).prompt) for i in range(8)]  # noqa: E731
            assert prompts()[2] == "3. requirement 3"  # unmarked until you decide
            assert "judge 6/8: a count, not which ones" in plain(detail.query_one("#detail-verdict"), width=200)
            await pilot.press("j", "j", "space")  # requirement 3: not fulfilled
            rec = store.get_rollout(f"{RUN_ID}.0.0")
            assert rec.override_verdicts == [None, None, False, None, None, None, None, None]
            assert rec.override_fulfilled == 6  # one mark changed, and the count still allows the judge's six
            assert prompts()[2] == "you ✗  3. requirement 3"
            assert prompts()[0] == "you ·  1. requirement 1"
            assert "you 6/8 = 0.75*" in plain(detail.query_one("#detail-verdict"), width=200)
            await pilot.press("j", "space", "j", "space")  # two more ✗: five undecided left
            assert store.get_rollout(f"{RUN_ID}.0.0").override_fulfilled == 5
            await pilot.press("minus")  # your count, one less; your marks stay
            rec = store.get_rollout(f"{RUN_ID}.0.0")
            assert rec.override_fulfilled == 4
            assert rec.override_verdicts == [None, None, False, False, False, None, None, None]


async def test_rollout_screen_text_scrolls_without_moving_the_focus(store: Store) -> None:
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        detail = app.screen
        assert isinstance(detail, RolloutDetail)
        text = detail.query_one("#detail-right")
        requirements = detail.query_one("#requirements", OptionList)
        assert app.focused is requirements
        assert text.max_scroll_y > 10
        page = text.scrollable_content_region.height
        await pilot.press("pagedown")
        assert text.scroll_y == min(page, text.max_scroll_y)
        await pilot.press("pageup", "ctrl+d")
        assert text.scroll_y == page // 2
        await pilot.press("G")
        assert text.scroll_y == text.max_scroll_y
        await pilot.press("home")
        assert text.scroll_y == 0
        await pilot.press("end", "g", "ctrl+d", "ctrl+u")
        assert text.scroll_y == 0
        assert app.focused is requirements
        assert requirements.highlighted == 0  # the keys scrolled the text, not the list


async def test_detail_shows_attempt_history_and_errors(store: Store) -> None:
    store.new_attempts(RUN_ID, [f"{RUN_ID}.3.0"])
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert ids(app)[3] == "3.0.a2"
        await pilot.press("j", "j", "j", "enter")
        await settle(pilot)
        detail = app.screen
        assert isinstance(detail, RolloutDetail)
        assert detail.has_class("-narrow")
        attempts = [a.rollout_id for a in store.attempts_of(detail.rollout_id)]
        assert attempts == [f"{RUN_ID}.3.0", f"{RUN_ID}.3.0.a2"]
        history = plain(detail.query_one("#detail-attempts"))
        assert "✗ failed" in history
        assert "2 ◀    · queued" in history
        assert "judge unreachable" in history
        await pilot.press("escape")
        await pilot.press("k", "enter")
        await settle(pilot)
        assert app.screen.rollout_id == f"{RUN_ID}.2.0"  # type: ignore[attr-defined]
        error = app.screen.query_one("#info-error")
        assert not error.has_class("-hidden")


async def test_help_lists_every_binding_id(store: Store) -> None:
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        from svgagent.screens.help import binding_sections

        every = [b.id for _, bindings in binding_sections(app) for b in bindings]
        assert None not in every
        assert len(every) == len(set(every)) >= 30
        for ident in (
            "app.run",
            "app.stop",
            "app.resume",
            "app.rerun",
            "app.open_run",
            "table.filter",
            "table.sort",
            "table.mark",
            "detail.toggle",
            "preview.full",
            "pane.secrets",
            "secrets.down",
            "secrets.up",
        ):
            assert ident in every
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_run_picker_opens_another_run(store: Store) -> None:
    build_run(store, run_id="20250101-000000-old0", name="older run")
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("o")
        picker = app.screen
        assert isinstance(picker, RunPicker)
        assert [r.run_id for r in picker.runs] == [RUN_ID, "20250101-000000-old0"] or len(picker.runs) == 2
        options = picker.query_one(OptionList)
        target = next(i for i in range(options.option_count) if options.get_option_at_index(i).id.endswith("old0"))
        options.highlighted = target
        await pilot.press("enter")
        await settle(pilot)
        assert app.dashboard.run_id == "20250101-000000-old0"
        assert table_of(app).visible_ids[0].startswith("20250101-000000-old0.")
        assert "older run" in app.dashboard.query_one(SummaryBar).plain
        await pilot.press("o", "escape")
        assert app.dashboard.run_id == "20250101-000000-old0"


async def test_panes_are_tabs_at_80x24_and_side_by_side_at_120x40(store: Store) -> None:
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        dash = app.dashboard
        assert dash.has_class("-narrow")

        def shown():
            panes = ("rollouts", "preview", "config", "secrets", "jobs")
            return [n for n in panes if dash.query_one(f"#pane-{n}").region.area > 0]

        assert shown() == ["rollouts"]
        for key, name in (("2", "preview"), ("3", "config"), ("4", "secrets"), ("5", "jobs"), ("1", "rollouts")):
            await pilot.press("escape", key)
            await pilot.pause()
            assert shown() == [name], name
            assert dash.query_one(Tabs).active == f"tab-{name}"
        await settle(pilot)  # the Jobs pane connected when it was first shown (here: an empty fake account)
        assert "No RFT jobs in this account yet" in plain(dash.query_one("#jobs-detail"))
        assert isinstance(app.focused, RolloutTable)
        await pilot.resize_terminal(120, 40)
        # Textual hands a resize to the screens from a 1/120 s timer: one pause may end before it fires (under load)
        await wait_until(pilot, lambda: dash.has_class("-wide"))
        await pilot.pause()  # the layout the new classes call for
        assert shown() == ["rollouts", "preview", "config", "secrets", "jobs"]


async def test_escape_in_a_text_field_hands_focus_back(store: Store) -> None:
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("3")
        assert app.focused is not None
        assert app.focused.id
        assert app.focused.id.startswith("field-")
        await pilot.press("enter", "r")  # typed into the field being edited, not a run
        assert not app.control.running
        await pilot.press("escape")  # ends the edit
        await pilot.pause()
        assert app.focused.id == "field-model"
        await pilot.press("escape")  # leaves the form
        await pilot.pause()
        assert isinstance(app.focused, RolloutTable)


async def test_missing_keys_say_which_and_jump_to_secrets(store: Store) -> None:
    settings = settings_for(store.path, fireworks_api_key=None, openai_api_key="sk-test-key")
    app = make_app(store, settings=settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("r")
        await pilot.pause()
        assert app.dashboard.active_pane == "secrets"
        assert any("FIREWORKS_API_KEY is not set" in n for n in notifications(app))
        assert not app.control.running
        assert len(store.list_runs()) == 1


async def test_demo_banner_and_full_image_needs_a_terminal(store: Store) -> None:
    app = make_app(store, run_id=RUN_ID, demo=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        banner = app.dashboard.query_one("#banner")
        assert not banner.has_class("-hidden")
        assert "demo mode: simulated model and judge — start without --demo to use your keys" in plain(banner)
        await pilot.press("f")
        assert any("needs a real terminal" in n for n in notifications(app))
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert app.dashboard.query_one("#banner").has_class("-hidden")


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_demo_banner_names_the_keys_still_missing(store: Store, size: tuple[int, int]) -> None:
    """Demo mode chosen because keys are missing: the banner names them, and after one is saved, the one left."""
    from tui_support import burst

    from svgagent.core.config.settings import load_settings
    from svgagent.core.demo import demo_overrides

    overrides = demo_overrides("http://127.0.0.1:9/v1")
    app = make_app(
        store,
        run_id=RUN_ID,
        demo=True,
        settings=settings_for(store.path, **overrides),
        demo_overrides=overrides,
        settings_loader=lambda: load_settings(store=str(store.path)),
        missing_keys=["FIREWORKS_API_KEY", "OPENAI_API_KEY"],
    )
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        banner = app.dashboard.query_one("#banner")
        shown = lambda: plain(banner, width=size[0]).strip()  # noqa: E731 - one line, nothing cut
        assert shown() == "demo mode: FIREWORKS_API_KEY, OPENAI_API_KEY missing — Secrets pane (4)"
        await burst(pilot, "4", "e", *"FAKEFW-saved-in-the-pane-0123456789", "enter")
        assert app.demo
        assert shown() == "demo mode: OPENAI_API_KEY missing — add it in the Secrets pane (4)"
        assert banner.region.height == 1 and len(shown()) <= 80 - 2  # the banner's padding
        await burst(pilot, "j", "e", *"FAKEOA-saved-in-the-pane-0123456789", "enter")
        assert not app.demo
        assert banner.has_class("-hidden")


async def test_keymap_from_config_remaps_by_id(store: Store) -> None:
    settings = settings_for(store.path, keymap={"app.help": "f1", "table.sort": "f6"})
    app = make_app(store, run_id=RUN_ID, settings=settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("f6", "s")  # the remapped key opens the sort picker; s: by score
        assert table_of(app).sort_column == "score"
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        text = plain(app.screen.query_one("#help-text"), width=160)
        assert "f1" in text
        assert "f6" in text
        assert "app.help" in text


async def test_unknown_keymap_ids_are_reported(store: Store) -> None:
    settings = settings_for(store.path, keymap={"app.hlep": "f1", "table.sort": "f6", "nope": "f7"})
    app = make_app(store, run_id=RUN_ID, settings=settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        warnings = [n for n in notifications(app) if "no key has the id" in n]
        assert warnings == ["no key has the id app.hlep, nope: ? lists every id (check the spelling)"]
        await pilot.press("f6", "s")
        assert table_of(app).sort_column == "score"  # the known id is remapped all the same


def _every_binding_id() -> set[str]:
    """The ids of every Binding any class of the app's modules declares (screens, widgets, the app)."""
    import importlib
    import inspect
    import pkgutil

    from textual.binding import Binding

    import svgagent.screens
    import svgagent.tui.widgets

    names = ["svgagent.tui.app"] + [
        f"{package.__name__}.{info.name}"
        for package in (svgagent.screens, svgagent.tui.widgets)
        for info in pkgutil.iter_modules(package.__path__)
    ]
    ids: set[str] = set()
    for name in names:
        module = importlib.import_module(name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == name and "BINDINGS" in vars(cls):
                ids |= {b.id for b in vars(cls)["BINDINGS"] if isinstance(b, Binding) and b.id}
    return ids


async def test_help_and_the_keymap_know_every_key_of_every_screen(store: Store) -> None:
    """`?` lists every key id of the app (the training screen's, the copy menu's, the message log's…), and a keymap
    naming any of them is not reported as unknown."""
    from svgagent.screens.help import binding_sections, unknown_binding_ids

    every = _every_binding_id()
    assert {"training.refresh", "copy.s", "log.close", "sort.cancel", "help.down", "table.filter"} <= every
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        listed = {b.id for _, bindings in binding_sections(app) for b in bindings}
        assert every - listed == set()
        assert unknown_binding_ids(app, dict.fromkeys(every, "f12")) == []
        assert unknown_binding_ids(app, {"training.refersh": "f5"}) == ["training.refersh"]


async def test_command_palette_lists_the_actions(store: Store) -> None:
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("3", "escape")  # the Config form (its keys) is there once the pane has been shown
        await settle(pilot)
        from svgagent.tui.palette_commands import screen_commands

        names = [command.name for command in screen_commands(app.dashboard)]
        for wanted in (
            "Run",
            "Rerun",
            "Filter",
            "Sort",
            "Mark",
            "Open",
            "Help",
            "Quit",
            "Runs",
            "Config: Save config",
            "Secrets: Edit",
            "Jobs: Refresh",
        ):  # the panes' keys too
            assert wanted in names
        await pilot.press("ctrl+p")
        await pilot.press(*"rerun")
        await settle(pilot)
        from textual.command import CommandPalette

        palette = app.screen
        assert isinstance(palette, CommandPalette)
        option_list = palette.query_one(OptionList)
        texts = [str(option_list.get_option_at_index(i).prompt) for i in range(option_list.option_count)]
        assert any("Rerun" in t for t in texts)


async def test_footer_fits_80_columns_with_the_important_keys(store: Store) -> None:
    """Export included; keys left out of the footer for room still work (? lists them)."""
    from apps.settings_panes import screen_text

    from svgagent.screens.sort_picker import SortPicker
    from svgagent.tui.widgets.keys_footer import KeysFooter

    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        for pane in ("1", "2", "3", "4", "5"):
            await pilot.press(pane)
            await settle(pilot)
            spans = app.screen.query_one(KeysFooter).key_spans()
            assert spans and max(end for _, end, _ in spans) <= 80, pane  # nothing cut at the edge
            if pane == "3":  # out of the Config field that has the focus, before the next number
                await pilot.press("escape")
        await pilot.press("1")
        await settle(pilot)
        footer = screen_text(app).splitlines()[23]  # the footer as the terminal shows it
        for key in ("q Quit", "? Help", "⏎ Open", "/ Filter", "r Run", "o Runs", "i Stats", "x Export"):
            assert key in footer, footer
        shown = app.screen.query_one(KeysFooter).shown()
        for key, label in (
            ("x", "Export"),
            ("⏎", "Open"),
            ("/", "Filter"),
            ("r", "Run"),
            ("c", "Resume"),
            ("o", "Runs"),
            ("R", "Rerun"),  # before Image: it acts on the rollouts a filter shows (issue 34)
            ("i", "Stats"),
            ("?", "Help"),
            ("q", "Quit"),
        ):
            assert shown.get(key) == label, (key, shown)
        assert "S" not in shown
        await pilot.press("S")
        assert isinstance(app.screen, SortPicker)  # out of the footer, not out of reach


async def test_footer_is_redrawn_only_when_its_keys_change(store: Store) -> None:
    """The footer is one widget drawing one line (Textual's Footer was a widget per key, all rebuilt at every focus
    move); a bindings refresh that leaves the same keys does not repaint it; keys that change are shown at once."""
    from svgagent.tui.widgets.keys_footer import KeysFooter

    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        footer = app.screen.query_one(KeysFooter)
        assert not footer.children
        before = footer.items
        assert before
        repaints = []
        footer.refresh = lambda *a, **k: repaints.append(a) or KeysFooter.refresh(footer, *a, **k)  # type: ignore
        app.screen.refresh_bindings()
        await settle(pilot)
        assert footer.items is before and repaints == []  # the same keys: nothing redrawn
        await pilot.press("slash")  # the filter has the focus: Escape and Enter keys, not the table's
        await settle(pilot)
        assert repaints
        assert {i.display for i in footer.items} != {i.display for i in before}
        assert "Filter" not in footer.shown().values() and "Back" in footer.shown().values()


@pytest.mark.parametrize("keys", [("slash",), ("3", "enter"), ("4", "a")])
async def test_in_a_text_field_the_footer_shows_only_keys_that_work_there(store: Store, keys: tuple[str, ...]) -> None:
    """A key the field would type (``+`` in the filter) is not offered: Zoom shows as ^t there."""
    from svgagent.tui.widgets.keys_footer import KeysFooter

    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press(*keys)
        await settle(pilot)
        field = app.focused
        assert isinstance(field, Input)
        footer = app.screen.query_one(KeysFooter)
        characters = {"plus": "+", "slash": "/", "minus": "-", "question_mark": "?", "space": " "}
        typed = [
            i.display
            for i in footer.items
            if field.check_consume_key(i.key, characters.get(i.key, i.key if len(i.key) == 1 else None))
        ]
        assert typed == []
        await pilot.press("plus")
        await settle(pilot)
        assert field.value.endswith("+") and app.dashboard.zoomed is None  # + typed a plus, it zoomed nothing
        assert footer.shown().get("^t") == "Zoom"


async def test_a_click_on_a_footer_key_runs_it(store: Store) -> None:
    """Clicking a key in the footer does what pressing it does (here: ? opens Help, x the export dialog); a click
    between keys does nothing."""
    from svgagent.screens.export_dialog import ExportDialog
    from svgagent.tui.widgets.keys_footer import KeysFooter

    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        footer = app.screen.query_one(KeysFooter)
        spans = {item.display: (start, end) for start, end, item in footer.key_spans()}
        start, end = spans["?"]
        await pilot.click(KeysFooter, offset=(end, 0))  # the gap after "? Help"
        await settle(pilot)
        assert not isinstance(app.screen, HelpScreen)
        await pilot.click(KeysFooter, offset=(end - 1, 0))  # the last letter of "Help"
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await settle(pilot)
        start, _ = spans["x"]
        await pilot.click(KeysFooter, offset=(start, 0))
        await settle(pilot)
        assert isinstance(app.screen, ExportDialog)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_the_config_form_is_mounted_when_first_shown(store: Store, size: tuple[int, int]) -> None:
    """Two thirds of the app's widgets wait for `3` in either layout; the keys typed after it wait for them."""
    from svgagent.tui.widgets.config_form import ConfigForm
    from svgagent.tui.widgets.job_panel import JobPanel
    from svgagent.tui.widgets.secrets_form import SecretsPane

    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        assert not app.dashboard.query(ConfigForm)
        assert app.dashboard.query(SecretsPane)
        assert app.dashboard.query(JobPanel)
        await pilot.press("3", "enter", "ctrl+u", *"gpt-x")
        await settle(pilot)
        assert app.dashboard.active_pane == "config"
        assert app.dashboard.query_one("#field-model", Input).value == "gpt-x"
        assert not app.dashboard.query("#config-summary")


async def test_in_the_grid_the_config_pane_shows_the_settings_until_tab_reaches_it(store: Store) -> None:
    """Until it is edited the pane is one widget with every value drawn in full (a long one goes under its name and
    folds after a /, it is not cut); Tab onto it mounts the form with its first field browsed, and Enter then typing
    edits that field."""
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        model = app.settings.model
        lines = [line.strip("│ ") for line in summary_lines(app)]
        assert lines[0] == "model"
        folded = "".join(lines[1:3])
        assert folded.startswith(model)
        assert lines[1].endswith("/")
        assert any(line.split()[:2] == ["temperature", str(app.settings.temperature)] for line in lines)
        chain = [w.id for w in app.screen.focus_chain]
        tabs = ["tab"] * chain.index("config-summary")
        await pilot.press(*tabs, "enter", "ctrl+u", *"gpt-y")
        await settle(pilot)
        assert app.focused is app.dashboard.query_one("#field-model", Input)
        assert app.focused.value == "gpt-y"
        assert app.settings.model == "gpt-y"


async def test_the_config_summary_follows_settings_changed_elsewhere(store: Store) -> None:
    """Keys saved end demo mode: the real settings replace the simulator's in the summary too."""
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        fresh = app.settings.model_copy(update={"model": "accounts/me/models/after-the-demo"})
        app.settings = fresh
        app.dashboard.demo_ended(fresh)
        await settle(pilot)
        assert "accounts/me/models/after" in "".join(summary_lines(app)[:3]).replace(" ", "")


async def config_pane_at_120x40(pilot: Pilot) -> tuple[Widget, Widget]:
    from svgagent.tui.widgets.config_form import ConfigForm

    await settle(pilot)
    await pilot.press("3")
    await settle(pilot)
    app = pilot.app
    return app.dashboard.query_one("#pane-config"), app.dashboard.query_one(ConfigForm)


async def test_config_pane_in_the_grid_stacks_labels_and_splits_no_word(store: Store) -> None:
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(120, 40)) as pilot:
        pane, form = await config_pane_at_120x40(pilot)
        assert pane.region.width < 60
        assert form.has_class("-stacked")  # the grid's narrow pane
        hint = form.query_one("#hint-base_url")
        lines = hint.render_lines(hint.region.reset_offset)
        words = " ".join("".join(seg.text for seg in line).strip() for line in lines).split()
        assert "OpenAI-compatible" in words  # no word cut in the middle
        assert form.query_one("#field-model", Input).region.width > pane.region.width - 10  # the value has room


async def test_config_field_shows_its_start_after_blur(store: Store) -> None:
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(120, 40)) as pilot:
        _, form = await config_pane_at_120x40(pilot)
        field = form.query_one("#field-model", Input)
        assert app.focused is field
        await burst(pilot, "enter", "ctrl+u", *"simulated-policy-with-a-rather-long-name-for-the-box")  # typed, at once
        assert field.scroll_x > 0  # longer than the box: while typing, its end is in view
        await pilot.press("tab")
        assert field.cursor_position == 0
        assert field.scroll_x == 0  # its start in view, not "…long-name"
        assert field.value == "simulated-policy-with-a-rather-long-name-for-the-box"


async def test_config_pane_says_what_the_response_cache_is_for(store: Store) -> None:
    """The cache field's hint: off, a rerun is a new sample; either way a resume never pays twice (README says the
    same in its own words)."""
    from svgagent.tui.widgets.text_box import TextBox

    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(120, 40)) as pilot:
        _, form = await config_pane_at_120x40(pilot)
        hint = " ".join(str(form.query_one("#hint-cache", TextBox).render()).split())
        assert "reuse earlier runs' answers to identical requests" in hint
        assert "a resume never pays twice" in hint
    readme = " ".join(Path(__file__).resolve().parents[1].joinpath("README.md").read_text().split())
    assert "a resume never pays for it again. The response cache is something else, and off by default" in readme


async def test_zoom_gives_the_pane_with_the_focus_the_whole_screen(store: Store) -> None:
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(120, 40)) as pilot:
        pane, form = await config_pane_at_120x40(pilot)
        await pilot.press("ctrl+t")  # zoom from inside a text field
        await settle(pilot)
        assert app.dashboard.zoomed == "config"
        assert pane.region.width >= 110
        assert pane.region.height >= 30
        assert not form.has_class("-stacked")
        assert not app.dashboard.query_one("#pane-rollouts").display
        await pilot.press("ctrl+t")
        await settle(pilot)
        assert app.dashboard.zoomed is None
        assert pane.region.width < 60
        await pilot.press("escape", "plus")  # from the table: + zooms the rollouts pane
        await settle(pilot)
        assert app.dashboard.zoomed == "rollouts"
        assert not pane.display
        await pilot.press("plus")
        await settle(pilot)
        assert app.dashboard.zoomed is None
        assert pane.display
