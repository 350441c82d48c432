"""Cut and odd text (issue 34, item 4): one helper shortens text with an ellipsis where text was left out, and the
places a new user tripped on — a reason cut mid-word, a job name cut from the left, a path shown from its middle, a
URL split over two lines, toasts over the message log, "Quit — Quit", a hint between two options, a footer without
Rerun, `tui --help` without a word, `eval --rwos 8` answered with the top-level usage, pydantic's "Value error,",
`runs list` naming a run by its id twice — each checked at 80×24 and 120×40 where it is a screen."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from factories import RUN_ID
from job_fakes import fake_source, job
from textual.widgets import Input, OptionList, Static
from tui_support import make_app, plain, settle, summary_lines, wait_until

from svgagent.core.sim.content import _req_label
from svgagent.core.store.run_store import Store
from svgagent.core.store.verdict_columns import first_line
from svgagent.core.terminal_text import cells, clipped, folded, short_path
from svgagent.screens.export_dialog import ExportDialog
from svgagent.screens.help import HelpScreen
from svgagent.screens.message_log import MessageLogScreen
from svgagent.screens.sort_picker import SortPicker
from svgagent.tui.widgets.job_table import JobTable
from svgagent.tui.widgets.keys_footer import KeysFooter

SIZES = [(80, 24), (120, 40)]
SIZE_IDS = ["80x24", "120x40"]
RATIONALE = "[simulated judge] Judged strictly: the image covers 70% of the canvas with 5 distinct colours."


# --- the helper -------------------------------------------------------------------------------------------------
def test_clipped_marks_every_cut_and_cuts_between_words_when_asked() -> None:
    assert clipped("short", 10) == "short"
    assert clipped(RATIONALE, 61) == RATIONALE[:60] + "…"  # "…70% of t…": mid-word, but marked
    between = clipped(RATIONALE, 60, words=True)
    assert between == "[simulated judge] Judged strictly: the image covers 70% of…"
    assert cells(between) <= 60
    assert clipped("svgagent-rft-3b7fd97ab1bc", 12, keep="end") == "…b7fd97ab1bc"  # the tail kept
    assert clipped("abcdefghijklmnopqrstuvwxyz", 9, keep="middle") == "abcd…wxyz"
    wide = clipped("中文字符测试中文", 7)  # two cells a character: never past the width
    assert wide.endswith("…") and cells(wide) <= 7
    assert clipped("anything", 0) == ""


def test_short_path_keeps_home_as_tilde_the_file_name_whole_and_cuts_the_folder_between_its_parts() -> None:
    home = "/home/wcomer"
    path = f"{home}/some/rather/deep/xdg/data/svgagent/exports/20261207-130801-fa3c.jsonl"
    assert short_path(path, 200, home=home) == "~/some/rather/deep/xdg/data/svgagent/exports/20261207-130801-fa3c.jsonl"
    assert short_path(path, 50, home=home) == "~/…/svgagent/exports/20261207-130801-fa3c.jsonl"
    assert short_path(path, 40, home="/elsewhere") == "/home/…/20261207-130801-fa3c.jsonl"
    assert short_path("/x/\x1b]52;c;x\x07/f.csv", 80, home="/h") == "/x/\\x1b]52;c;x\\x07/f.csv"  # controls shown


def test_folded_breaks_a_name_after_its_slashes() -> None:
    assert folded("accounts/fireworks/models/qwen3-0p6b", 32) == ["accounts/fireworks/models/", "qwen3-0p6b"]
    assert folded("http://127.0.0.1:39623/v1", 32) == ["http://127.0.0.1:39623/v1"]


def test_reasons_and_the_simulators_quotes_end_between_words_with_an_ellipsis() -> None:
    assert first_line(RATIONALE, 60) == "[simulated judge] Judged strictly: the image covers 70% of…"
    label = _req_label("The camera body is a dark grey rounded rectangle, wider than it is tall.")
    assert label == "The camera body is a dark grey rounded…"  # not "…rounded rectangl…"


# --- the command line -------------------------------------------------------------------------------------------
def _run_with_reason(store: Store) -> None:
    (first, *_) = store.list_rollouts(RUN_ID)
    store.update_rollout(first.rollout_id, reason=RATIONALE)


@pytest.mark.parametrize("columns", ["120", "200"])
def test_runs_show_cuts_a_reason_between_words_with_an_ellipsis(
    store: Store, columns: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from svgagent.tui.cli.main import main

    _run_with_reason(store)
    monkeypatch.setenv("COLUMNS", columns)
    assert main(["runs", "show", RUN_ID, "--store", str(store.path)]) == 0
    (line,) = [line for line in capsys.readouterr().out.splitlines() if "[simulated judge]" in line]
    reason = line.rsplit("│", 2)[1].strip()
    assert reason.endswith("…")
    assert RATIONALE.startswith(reason[:-1].rstrip())  # the start of the reason, nothing invented
    assert reason[:-1].rstrip().split()[-1] in RATIONALE.split()  # its last word whole


def test_runs_list_leaves_the_name_blank_for_a_run_named_by_its_id(
    store: Store, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from svgagent.tui.cli.main import main

    with store.transaction() as db:
        db.execute("UPDATE runs SET name = run_id")
    monkeypatch.setenv("COLUMNS", "160")
    assert main(["runs", "list", "--store", str(store.path)]) == 0
    (row,) = [line for line in capsys.readouterr().out.splitlines() if RUN_ID in line]
    assert row.count(RUN_ID) == 1
    assert main(["runs", "list", "--store", str(store.path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["name"] == RUN_ID  # the data keeps it


def test_tui_help_says_what_the_app_is(capsys: pytest.CaptureFixture[str]) -> None:
    from svgagent.tui.cli.main import main

    with pytest.raises(SystemExit):
        main(["tui", "--help"])
    out = capsys.readouterr().out
    assert "Open the terminal app" in out
    assert "svgagent tui --demo" in out


@pytest.mark.parametrize(
    ("argv", "usage", "hint"),
    [
        (["eval", "--rwos", "8"], "usage: svgagent eval ", "(did you mean --rows?)"),
        (["tui", "--demo", "latest"], "usage: svgagent tui ", "unrecognized arguments: latest"),
        (["runs", "show", "latest", "--jsn"], "usage: svgagent runs show ", "(did you mean --json?)"),
    ],
    ids=["eval", "tui", "runs-show"],
)
def test_an_unknown_flag_is_refused_by_its_own_command(
    argv: list[str], usage: str, hint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from svgagent.tui.cli.main import main

    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(usage)
    assert hint in err
    assert "COMMAND ..." not in err


def test_a_settings_error_has_no_pydantic_prefix(capsys: pytest.CaptureFixture[str]) -> None:
    from svgagent.tui.cli.main import main

    assert main(["eval", "--demo", "--rows", "1", "--base-url", "ftp://example.com/v1"]) == 2
    err = capsys.readouterr().err
    assert "base_url" in err and "must start with http:// or https://" in err
    assert "Value error" not in err


# --- the screens ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
async def test_jobs_pane_names_a_job_by_its_start_cut_at_its_end(store: Store, size: tuple[int, int]) -> None:
    name = "svgagent builtin (33 rows) accounts/fireworks/models/qwen3-0p6b"
    source = fake_source([job("svgagent-rft-3b7fd97ab1bc", "RUNNING", percent=40, display=name)])
    app = make_app(store, job_source=source)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("5")
        table = app.dashboard.query_one(JobTable)
        await wait_until(pilot, lambda: table.row_count == 1)
        await settle(pilot)
        line = table.render_line(1).text.strip()  # the header is line 0
        assert line.startswith("svgagent buil")  # the name's start, not "…t-3b7fd97ab1bc"
        assert "…" in line
        assert name.startswith(line.split("…")[0])


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
async def test_export_dialog_shows_the_path_from_home_with_the_file_name_whole(
    store: Store, size: tuple[int, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "home" / "some" / "rather" / "deep" / "xdg" / "data"))
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("x")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ExportDialog)
        assert dialog.query_one("#export-path", Input).value.startswith("~/some/rather/deep/")
        status = dialog.query_one("#export-status", Static)
        (line,) = plain(status, width=status.content_region.width).splitlines()
        assert line.startswith("writes ~/")
        assert line.endswith(f"/{RUN_ID}.jsonl (makes the directory)")
        assert "/svgagent/exports/" in line or "/…/" in line


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://127.0.0.1:39623/v1", "http://127.0.0.1:39623/v1"),  # the demo's
        ("https://api.fireworks.ai/inference/v1", "api.fireworks.ai/inference/v1"),  # the default: https:// goes
    ],
    ids=["demo", "default"],
)
async def test_config_summary_keeps_a_base_url_on_one_line_in_the_120x40_grid(
    store: Store, url: str, shown: str
) -> None:
    from tui_support import settings_for

    app = make_app(store, settings=settings_for(store.path, base_url=url))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        lines = [line.strip("│ ") for line in summary_lines(app)]
        assert lines[lines.index("base_url") + 1] == shown  # whole, on the line under its name


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
async def test_no_toast_covers_the_message_log(store: Store, size: tuple[int, int]) -> None:
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=size, notifications=True) as pilot:
        await settle(pilot)
        app.notify("first message, shown as a toast")
        await settle(pilot)
        await pilot.press("L")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, MessageLogScreen)
        app.notify("arrived while the log is open")
        await wait_until(pilot, lambda: "arrived while the log is open" in plain(screen.query_one("#log-text")))
        rack = screen.query_one("#textual-toastrack")
        assert not rack.display and not rack.children  # no toast drawn over the log's text
        assert "— 2, oldest first" in plain(screen.query_one("#log-title"))


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
async def test_help_says_each_key_once(store: Store, size: tuple[int, int]) -> None:
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        text = " ".join(plain(static, width=200) for static in app.screen.query(Static))
        assert "Quit — Quit" not in text
        assert "Quit (a run in progress is stopped" in text


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
async def test_sort_picker_options_are_one_line_each(store: Store, size: tuple[int, int]) -> None:
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("S")
        await settle(pilot)
        assert isinstance(app.screen, SortPicker)
        options = app.screen.query_one(OptionList)
        assert options.virtual_size.height == options.option_count  # no option wraps onto a second line
        assert "again: reverse" in plain(app.screen.query_one("#sort-help"), width=200)


async def test_a_filtered_footer_keeps_rerun_at_80_columns(store: Store) -> None:
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        footer = app.screen.query_one(KeysFooter)
        assert "R Rerun" in footer.render().plain
        await pilot.press("slash")
        app.dashboard.query_one("#filter", Input).value = "status:sc"
        await pilot.press("enter")
        await settle(pilot)
        assert "R Rerun" in footer.render().plain  # R reruns the rollouts the filter shows
        hint = app.dashboard.query_one("#filter-hint")
        assert hint.display and "esc: clear" in str(hint.render())  # said by the filter bar, under the table


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
async def test_a_footer_shows_whole_keys_only(store: Store, size: tuple[int, int]) -> None:
    """The run picker's footer at 80 columns ended "… l Leaderboard p Films": a key that does not fit whole now
    leaves the line (it still works, and ? lists it) — on every screen, whether or not it picks which keys go."""
    from svgagent.screens.run_picker import RunPicker

    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("o")
        await wait_until(pilot, lambda: isinstance(app.screen, RunPicker))
        await settle(pilot)
        footer = app.screen.query_one(KeysFooter)
        line = footer.render().plain
        assert cells(line) <= footer.size.width
        shown = [f"{item.display} {item.description}" for _, _, item in footer.key_spans()]
        assert line.rstrip().endswith(shown[-1])  # the last key on the line is whole
        for start, end, item in footer.key_spans():
            assert line[start:end] == f"{item.display} {item.description}"
        if size == (80, 24):
            assert len(shown) < len(footer.items)  # some keys left the line whole rather than one cut in two
