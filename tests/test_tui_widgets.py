"""The TUI's parts on their own: the rollout table at 10,000 rows, cells, summary, images, keymap, `svgagent tui`."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from factories import FLAG_SVG, RUN_ID, SCENE_SVG, big_run, build_run, render_png
from textual.app import App, ComposeResult
from textual.geometry import Region
from tui_support import FIXED_CLOCK, picture_colours  # noqa: F401 - FIXED_CLOCK: configures term-image here too

from svgagent.core.config.settings import load_settings
from svgagent.core.scoring.errors import ConfigError
from svgagent.core.store.run_store import Store
from svgagent.core.store.typed_rows import summarize_rows
from svgagent.tui.cli.main import main
from svgagent.tui.imaging import fit_cells, png_to_blocks, show_full_resolution
from svgagent.tui.widgets.rollout_cells import COLUMNS, TABLE_WIDTH, cells_for, prompt_topic, short_id
from svgagent.tui.widgets.rollout_table import RolloutTable
from svgagent.tui.widgets.summary_bar import estimate_eta, format_duration, format_summary


class TableApp(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.moved: list[str | None] = []

    def compose(self) -> ComposeResult:
        yield RolloutTable(id="t")

    def on_rollout_table_cursor_moved(self, message: RolloutTable.CursorMoved) -> None:
        self.moved.append(message.rollout_id)


# --- the table -------------------------------------------------------------------------------------------------
def test_columns_fit_an_80_column_terminal() -> None:
    assert TABLE_WIDTH <= 78  # 80 minus the scrollbar and a margin
    assert [c.key for c in COLUMNS][1:] == [
        "prompt",
        "row",
        "sample",
        "status",
        "score",
        "fulfilled",
        "gen",
        "judge",
        "tokens",
    ]


def test_rows_are_named_by_what_they_draw(tmp_path: Path) -> None:
    """Not "0.0" / "32.0.a2" (read as scores): the prompt's subject, the row and the sample (↻ for a rerun)."""
    assert (
        prompt_topic("Write `svg` code to draw a mobile app login screen mock-up.") == "mobile app login screen mock-up"
    )
    assert prompt_topic("Draw the French flag") == "French flag"
    assert prompt_topic("Create an SVG of a red bicycle.") == "red bicycle"
    assert prompt_topic("A lighthouse at night") == "lighthouse at night"
    with Store(tmp_path / "runs.db") as store:
        build_run(store)
        store.new_attempts(RUN_ID, [f"{RUN_ID}.2.0"])
        records = {r.rollout_id: r for r in store.list_rollouts(RUN_ID)}
    cells = cells_for(records[f"{RUN_ID}.0.0"])
    assert cells[1:4] == ("landscape with a sun", "row_0", "0")
    assert cells_for(records[f"{RUN_ID}.2.0.a2"])[1:4] == ("red bicycle", "row_2", "0↻2")


async def test_sort_direction_shows_on_every_column_and_a_header_click_sorts(tmp_path: Path) -> None:
    with Store(tmp_path / "runs.db") as store:
        build_run(store)
        app = TableApp()
        async with app.run_test(size=(80, 24)) as pilot:
            table = app.query_one(RolloutTable)
            table.load(store.list_rollouts(RUN_ID))
            await pilot.pause()
            for column, start, width in zip(COLUMNS, table.column_offsets(), table.widths()):
                if column.key == "mark":
                    continue
                for reverse, arrow in ((False, "▲"), (True, "▼")):
                    table.set_sort(column.key, reverse)
                    header = table.render_line(0).text
                    assert arrow in header[start : start + width], (column.key, header[start : start + width])
            score = [c.key for c in COLUMNS].index("score")
            x = table.column_offsets()[score] + 1
            await pilot.click(RolloutTable, offset=(x, 0))
            assert (table.sort_column, table.sort_reverse) == ("score", False)
            await pilot.click(RolloutTable, offset=(x, 0))  # the same header again: the other way round
            assert (table.sort_column, table.sort_reverse) == ("score", True)
            scores = [table.records[rid].effective_score for rid in table.visible_ids]
            shown = [s for s in scores if s is not None]
            assert shown == sorted(shown, reverse=True)


async def test_ten_thousand_rows_load_sort_filter_and_scroll(tmp_path: Path) -> None:
    """What a 10,000-row run needs of the table; how fast it is lives in bench/tui.py (no timings in tests)."""
    with Store(tmp_path / "runs.db") as store:
        big_run(store, 10_000)
        records = store.list_rollouts(RUN_ID)
        app = TableApp()
        async with app.run_test(size=(80, 24)) as pilot:
            table = app.query_one(RolloutTable)
            table.load(records)
            await pilot.pause()
            assert len(table.visible_ids) == 10_000
            table.set_sort("score", reverse=True)
            table.set_filter("score>=0.5 -row:7")
            await pilot.pause()
            assert len(table.visible_ids) == 5_999  # scores 0.5, 0.75, 1 (6,000 rows) minus row 7
            first = table.records[table.visible_ids[0]]
            assert first.score == 1.0
            table.focus()
            await pilot.press(*["pagedown"] * 5, *["j"] * 20, "end")
            assert table.cursor_id == table.visible_ids[-1]
            await pilot.press("home")
            assert table.cursor_id == table.visible_ids[0]
            changed = list(records[:500])
            for rec in changed:
                rec.generation_s = 99.0
            table.apply(changed)
            await pilot.pause()
            assert table.records[changed[0].rollout_id].generation_s == 99.0


async def test_apply_repaints_only_the_cells_that_changed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Store(tmp_path / "runs.db") as store:
        build_run(store)
        records = store.list_rollouts(RUN_ID)
        app = TableApp()
        async with app.run_test(size=(80, 24)) as pilot:
            table = app.query_one(RolloutTable)
            table.load(records)
            await pilot.pause()
            painted: list[Region] = []
            monkeypatch.setattr(table, "refresh", lambda *regions, **kw: painted.extend(regions))
            row = records[1]
            row.score, row.fulfilled = 0.5, 2  # score and fulfilled change, nothing else
            table.apply([row])
            score_col = [c.key for c in COLUMNS].index("score")
            offsets, widths = table.column_offsets(), table.widths()
            assert painted == [
                Region(offsets[score_col], 2, widths[score_col] + 1, 1),
                Region(offsets[score_col + 1], 2, widths[score_col + 1] + 1, 1),
            ]
            assert table.row_cells(row.rollout_id)[5:7] == ("0.50", "2/4")
            painted.clear()
            table.apply([row])  # same state again: nothing to repaint
            assert painted == []


async def test_merge_keeps_rows_a_live_update_made_newer(tmp_path: Path) -> None:
    """A reload read in a thread lands after live updates: rows newer in the table stay, the rest are replaced, and
    rollouts no longer current leave."""
    from dataclasses import replace

    with Store(tmp_path / "runs.db") as store:
        build_run(store)
        records = store.list_rollouts(RUN_ID)
        app = TableApp()
        async with app.run_test(size=(80, 24)):
            table = app.query_one(RolloutTable)
            table.load(records)
            snapshot = {r.rollout_id: r for r in records}
            live = replace(records[0], score=1.0, fulfilled=4, updated="2999-01-01T00:00:00.000Z")
            table.apply([live])  # a live batch, newer than the snapshot below
            older = replace(snapshot[records[0].rollout_id], score=0.0, fulfilled=0)
            reread = replace(
                snapshot[records[1].rollout_id], score=0.25, fulfilled=1, updated="2998-01-01T00:00:00.000Z"
            )
            table.merge([older, reread], removed=[records[2].rollout_id])
            assert table.records[records[0].rollout_id].fulfilled == 4  # the live state wins
            assert table.records[records[1].rollout_id].fulfilled == 1
            assert records[2].rollout_id not in table.records
            assert len(table.visible_ids) == 5


async def test_table_messages_and_marks(tmp_path: Path) -> None:
    with Store(tmp_path / "runs.db") as store:
        build_run(store)
        app = TableApp()
        async with app.run_test(size=(80, 24)) as pilot:
            table = app.query_one(RolloutTable)
            table.load(store.list_rollouts(RUN_ID))
            table.focus()
            await pilot.press("space", "space", "k")
            assert table.marked == {f"{RUN_ID}.0.0", f"{RUN_ID}.1.0"}
            assert table.cursor_id == f"{RUN_ID}.1.0"
            await pilot.click(RolloutTable, offset=(5, 4))  # header line, then rows 0, 1, 2: the fourth row
            await pilot.pause()
            assert table.cursor_id == f"{RUN_ID}.3.0"
            assert app.moved[-1] == f"{RUN_ID}.3.0"
            table.set_filter("marked")
            assert len(table.visible_ids) == 2
            table.clear_marks()
            assert table.marked == frozenset()


def test_cells_show_overrides_and_missing_values(tmp_path: Path) -> None:
    with Store(tmp_path / "runs.db") as store:
        build_run(store)
        by_row = {r.row_index: r for r in store.list_rollouts(RUN_ID)}
    assert cells_for(by_row[4])[5] == "0.75*"
    assert cells_for(by_row[4])[6] == "3/4"
    assert cells_for(by_row[3])[4:7] == ("✗ failed", "–", "–/4")
    assert short_id(f"{RUN_ID}.3.0.a2", RUN_ID) == "3.0.a2"


def test_store_reads_many_rollouts_in_batches(tmp_path: Path) -> None:
    with Store(tmp_path / "runs.db") as store:
        big_run(store, 1_200)
        ids = [f"{RUN_ID}.{i}.0" for i in range(0, 1_200, 1)] + ["missing"]
        found = store.get_rollouts(ids)
        assert len(found) == 1_200
        assert found[0].png is None
        heavy = store.get_rollouts([f"{RUN_ID}.5.0"], heavy=True)
        assert heavy[0].rollout_id == f"{RUN_ID}.5.0"


# --- summary -----------------------------------------------------------------------------------------------------
def test_summary_line_has_every_figure(tmp_path: Path) -> None:
    with Store(tmp_path / "runs.db") as store:
        build_run(store)
        summary = summarize_rows(store.list_rollouts(RUN_ID), 0.5)
    text = format_summary(summary, run_label="fixture run", elapsed=65, eta=30, shown=2, state="running").plain
    for part in (
        "fixture run",
        "running",
        "5/6 done",
        "showing 2",
        "mean 0.625 ± 0.217 PASS (≥0.5)",
        "4 scored · 1 failed",  # the no-SVG 0 is scored; an outcome with none is left out (no "0 invalid")
        "2,300 tokens",
        "elapsed 1m05s",
        "ETA 30s",
        "1 overridden",
    ):
        assert part in text
    assert "ETA" not in format_summary(summary, elapsed=None, state="completed").plain
    assert format_summary(None).plain == "no run open"


def test_one_score_has_a_mean_and_no_spread(tmp_path: Path) -> None:
    # one scored rollout read "mean 0.750 ± 0.000": a standard error of 0 from one score, undefined in fact
    from factories import Spec

    from svgagent.core.store.typed_rows import mean_and_stderr, spread_text

    assert mean_and_stderr([0.75]) == (0.75, None)
    assert mean_and_stderr([0.5, 1.0]) == pytest.approx((0.75, 0.25))
    assert (spread_text(None), spread_text(0.0), spread_text(0.25)) == ("", " ± 0.000", " ± 0.250")
    with Store(tmp_path / "runs.db") as store:
        build_run(store, [Spec(row=0, fulfilled=3)])
        with_one = format_summary(summarize_rows(store.list_rollouts(RUN_ID), 0.5)).plain
    assert "mean 0.750 PASS (≥0.5)" in with_one and "±" not in with_one


def test_a_mean_next_to_its_verdict_is_never_rounded_across_the_threshold() -> None:
    """8 scores with a mean of 0.4997 read "mean 0.500 FAIL (≥0.5)": as many digits as it takes, no more."""
    import dataclasses

    from svgagent.core.store.typed_rows import RunSummary, mean_text

    summary = RunSummary(
        rollouts=8,
        done=8,
        scored=8,
        failed=0,
        invalid=0,
        mean_score=0.4997,
        stderr=0.117,
        threshold=0.5,
        passed=False,
        prompt_tokens=0,
        completion_tokens=0,
    )
    assert "mean 0.4997 ± 0.117 FAIL (≥0.5)" in format_summary(summary).plain
    close_pass = dataclasses.replace(summary, mean_score=0.5004, passed=True)
    assert "mean 0.500 ± 0.117 PASS (≥0.5)" in format_summary(close_pass).plain
    assert [mean_text(m, 0.5) for m in (0.49996, 0.5, 0.49949, 0.123456, None)] == [
        "0.49996",
        "0.500",
        "0.499",
        "0.123",
        "–",
    ]
    assert mean_text(0.4997) == "0.500"  # no verdict beside it: the usual three decimals


def test_durations_and_eta() -> None:
    assert [format_duration(s) for s in (None, 0, 59.4, 61, 3_725)] == ["–", "0s", "59s", "1m01s", "1h02m"]
    assert estimate_eta(done_now=10, done_at_start=0, total=40, elapsed=20.0) == 60.0
    assert estimate_eta(done_now=5, done_at_start=5, total=40, elapsed=20.0) is None


# --- pictures ----------------------------------------------------------------------------------------------------
def test_fit_cells_keeps_the_aspect_ratio() -> None:
    assert fit_cells(100, 100, 40, 10) == (20, 10)  # square: 20 columns x 10 lines = 20 x 20 half-block pixels
    assert fit_cells(120, 80, 30, 30) == (30, 10)
    assert fit_cells(10, 1000, 40, 5) == (1, 5)


def test_png_becomes_24_bit_half_blocks() -> None:
    picture = png_to_blocks(render_png(SCENE_SVG), 20, 10)
    lines = picture.plain.split("\n")
    assert len(lines) == 10
    assert {len(line) for line in lines} == {20}
    assert picture.shape == (20, 10)
    assert "▀" in picture.plain or "▄" in picture.plain
    assert (255, 204, 0) in picture_colours(picture, "color")  # the sun, drawn with a 24-bit foreground
    flag = png_to_blocks(render_png(FLAG_SVG), 30, 30)
    assert len(flag.plain.split("\n")) == 10  # 3:2 picture in 30 columns


def test_full_resolution_view_without_a_terminal_falls_back_to_blocks() -> None:
    out = io.StringIO()
    show_full_resolution(render_png(SCENE_SVG), "0.0 (row_0)", stdin=io.StringIO(), stdout=out)
    written = out.getvalue()
    assert "0.0 (row_0) — block · press any key to go back" in written
    assert "\x1b[38;2;" in written or "\x1b[48;2;" in written


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (200, 30)])
def test_full_resolution_view_fills_the_terminal_and_leaves_nothing(size: tuple[int, int]) -> None:
    """`f` draws the picture as large as the terminal (not 24 columns), on the alternate screen it then leaves:
    after quitting the app the shell's screen has no picture on it."""
    import re

    out = io.StringIO()
    style = show_full_resolution(render_png(SCENE_SVG), "cap", stdin=io.StringIO(), stdout=out, size=size)
    written = out.getvalue()
    assert style == "block"
    assert written.startswith("\x1b[?1049h")
    assert written.endswith("\x1b[?1049l")
    picture = written.split("\x1b[2J\x1b[H", 1)[1].rsplit("\ncap — ", 1)[0]
    rows = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in picture.split("\n")]
    widths = {len(row.strip("\n")) for row in rows if row}
    columns, lines = size
    assert len(rows) == lines - 1 or max(widths) >= columns - 1  # the square picture meets an edge
    assert len(rows) <= lines - 1
    assert max(widths) <= columns


@pytest.mark.parametrize(("name", "marker"), [("KittyImage", "\x1b_G"), ("ITerm2Image", "\x1b]1337;File=")])
def test_full_resolution_view_uses_the_terminals_graphics_and_deletes_them(name: str, marker: str) -> None:
    """In a terminal that speaks kitty's or iTerm2's graphics protocol (what term-image detects once queries are
    on), `f` draws in it — as large as the terminal — and deletes the picture before leaving the alternate screen
    (graphics live outside the text cells: clearing the screen alone would leave them)."""
    from unittest import mock

    import term_image.image as images

    cls = getattr(images, name)
    cleared: list[bool] = []
    out = io.StringIO()
    with (
        mock.patch("term_image.image.auto_image_class", return_value=cls),
        mock.patch.object(cls, "is_supported", classmethod(lambda _cls: True)),
        mock.patch.object(cls, "clear", lambda *a, **k: cleared.append(True)),
    ):
        style = show_full_resolution(render_png(SCENE_SVG), "cap", stdin=io.StringIO(), stdout=out, size=(80, 24))
    written = out.getvalue()
    assert style == name.removesuffix("Image").lower()
    assert written.startswith("\x1b[?1049h") and written.endswith("\x1b[?1049l")
    assert marker in written
    assert cleared == [True]


# --- configuration and the command -------------------------------------------------------------------------------
def test_keymap_is_a_setting_read_by_the_settings_layers(tmp_path: Path) -> None:
    from svgagent.core.config.settings import user_config_file

    assert load_settings().keymap == {}
    config = user_config_file()
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('model = "x"\n[keymap]\n"app.run" = "ctrl+r"\n"table.filter" = "slash, f3"\n')
    Path("svgagent.toml").write_text('[keymap]\n"app.run" = "f5"\n')  # the project's file wins, id by id
    assert load_settings().keymap == {"app.run": "f5", "table.filter": "slash,f3"}
    assert "keymap" not in load_settings().public_dict()  # how this person's keys are laid out is not a run's
    Path("svgagent.toml").write_text('[keymap]\n"app.run" = 3\n')
    with pytest.raises(ConfigError, match="keymap.app.run"):
        load_settings()
    Path("svgagent.toml").write_text('[keymap]\n"app.run" = " "\n')
    with pytest.raises(ConfigError, match="values must be key names"):
        load_settings()


def test_tui_with_an_unknown_run_fails_before_the_screen(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with Store(tmp_path / "runs.db"):
        pass
    assert main(["tui", "--store", str(tmp_path), "--run", "nope"]) == 2
    assert "no run 'nope'" in capsys.readouterr().err


def test_tui_without_keys_starts_in_demo_mode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from svgagent.tui.app import SvgAgentApp

    seen: dict[str, Any] = {}

    def fake_run(self: SvgAgentApp, *args: Any, **kwargs: Any) -> None:
        seen.update(
            demo=self.demo,
            base_url=self.settings.base_url,
            model=self.settings.model,
            loader=self.settings_loader is not None,
            store=self.store.path,
            keymap=self.keymap,
            missing=self.missing_keys,
        )

    monkeypatch.setattr(SvgAgentApp, "run", fake_run)
    from svgagent.core.config.settings import user_config_file

    config = user_config_file()
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('threshold = 0.7\n[keymap]\n"app.run" = "ctrl+r"\n')  # settings and keymap, one file
    assert main(["tui", "--store", str(tmp_path)]) == 0
    assert seen["keymap"] == {"app.run": "ctrl+r"}
    assert seen["demo"]
    assert seen["base_url"].startswith("http://127.0.0.1:")
    assert seen["loader"]
    assert seen["model"] == "accounts/fireworks/models/qwen3-0p6b"  # the demo policy plays the settings' model
    assert seen["store"] == tmp_path / "runs.db"
    assert seen["missing"] == ["FIREWORKS_API_KEY", "OPENAI_API_KEY"]  # the banner names them
    monkeypatch.setenv("FIREWORKS_API_KEY", "fw-key")
    assert main(["tui", "--store", str(tmp_path)]) == 0
    assert seen["demo"]
    assert seen["missing"] == ["OPENAI_API_KEY"]
    monkeypatch.setenv("OPENAI_API_KEY", "sk-key")
    assert main(["tui", "--store", str(tmp_path)]) == 0
    assert not seen["demo"]
    assert seen["base_url"] == "https://api.fireworks.ai/inference/v1"
    assert main(["tui", "--store", str(tmp_path), "--demo"]) == 0
    assert seen["demo"]
    assert not seen["loader"]  # asked for: saving keys does not leave it
    assert seen["missing"] == []  # the keys are there: the banner says demo mode, not that a key is missing
