"""issue 31 item 1, fast: the one rule for outside text on screen (core/terminal_text, tui/widgets/screen_text),
widget by widget under Pilot. Each view is drawn with the widgets' own line rendering (``Widget.render_lines``,
the lines the app writes) and must show OSC 52 / OSC 0 / CSI / C1 / bidi controls as escapes and Rich markup as
text, with no control character left. The real terminal (clipboard, title, screen) is test_tui_hostile_text.py."""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from apps.settings_panes import SecretsPaneApp
from factories import SCENE_SVG, render_png
from job_fakes import job
from rich.console import Console, Group
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.app import App, ComposeResult
from textual.color import Color
from textual.geometry import Region
from textual.widget import Widget
from textual.widgets import DataTable, Static
from tui_support import make_app, settle, wait_until

from svgagent.core.exchange.ep_status import StatusCode
from svgagent.core.exchange.import_file import import_file
from svgagent.core.rft.monitor import JobView
from svgagent.core.scoring.models import RolloutStatus
from svgagent.core.serve.training_runs import StepHint, TrainingStore
from svgagent.core.store.run_store import Store
from svgagent.core.terminal_text import visible, visible_line, without_controls
from svgagent.screens.message_log import MessageLogScreen
from svgagent.screens.rollout_detail import RolloutDetail
from svgagent.screens.run_picker import RunPicker
from svgagent.screens.stats import StatsScreen
from svgagent.screens.training import TrainingScreen
from svgagent.tui.imaging import show_full_resolution
from svgagent.tui.widgets.job_cells import job_detail
from svgagent.tui.widgets.preview import Preview
from svgagent.tui.widgets.rollout_info import info_sections
from svgagent.tui.widgets.rollout_table import RolloutTable
from svgagent.tui.widgets.screen_text import ControlFilter, escaped, safe_renderable, shown, shown_line
from svgagent.tui.widgets.secrets_form import SecretsPane
from svgagent.tui.widgets.text_box import TextBox

ESC, BEL = "\x1b", "\x07"
CONTROLS = ("\x1b", "\x07", "\x9b", "\x9d", "\u202e", "\u2066", "\u200f")
MARKUP = "[red]R[/red][link=http://x]L[/link]"


def hostile(tag: str) -> str:
    clip = base64.b64encode(f"PWNED-{tag}".encode()).decode()
    return f"{tag}{ESC}]52;c;{clip}{BEL}{ESC}]0;T-{tag}{BEL}{ESC}[2J\x9b31m\x9d0;x\u202e{MARKUP}\u2066\u200f"


def drawn(widget: Widget) -> str:
    """The lines ``widget`` and everything in it draw (as the app writes them), one string."""
    out = []
    for each in [widget, *widget.query("*")]:
        width, height = each.size
        if each.display and width and height:
            out += [strip.text for strip in each.render_lines(Region(0, 0, width, height))]
    return "\n".join(out)


def assert_safe(text: str, *tags: str) -> None:
    """No control character in ``text``; each tag shown with its escapes, and the markup as text."""
    assert not any(c in text for c in CONTROLS), [c for c in CONTROLS if c in text]
    assert "\\x1b]52;c;" in text
    for tag in tags:
        assert f"{tag}\\x1b]52;c;" in text, tag


# --- the rule -------------------------------------------------------------------------------------------------------


def test_visible_escapes_every_control_and_bidi_character_and_nothing_else() -> None:
    controls = [chr(c) for c in (*range(0x20), 0x7F, *range(0x80, 0xA0))]
    bidi = ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069"]
    bidi += ["\u200e", "\u200f", "\u061c"]
    for char in controls + bidi:
        line = visible_line(char)
        assert line != char and line.isprintable() and line.isascii(), repr(char)
        assert visible(char) == (char if char in "\t\n" else line)
    assert visible_line("\x1b]52;c;eA==\x07") == "\\x1b]52;c;eA==\\x07"
    assert visible("a\u202eb\tc\nd") == "a\\u202eb\tc\nd"
    kept = "plain ascii, é, 猫, 🦊, a\\back\\slash, [red]markup[/red], \u00a0nbsp, \u200bzwsp"
    assert visible(kept) == kept == visible_line(kept)
    once = visible_line(hostile("x"))
    assert visible_line(once) == once  # a second pass changes nothing
    assert without_controls(hostile("x")) == hostile("x").translate({ord(c): None for c in CONTROLS + (BEL,)})


def test_escaped_text_keeps_its_styles_and_gives_each_escape_the_controls_style() -> None:
    text = Text("ok ", style="bold")
    text.append("red\x1b[2J", style="red")
    text.append("\u202etail")
    out = escaped(text)
    assert out.plain == "ok red\\x1b[2J\\u202etail"
    assert out.style == "bold"
    red = [s for s in out.spans if s.style == "red"]
    assert "".join(out.plain[s.start : s.end] for s in red) == "red\\x1b[2J"
    clean = Text("nothing to do", style="bold")
    assert escaped(clean) is clean
    assert escaped(Text("a\nb\tc")).plain == "a\nb\tc"
    assert escaped(Text("a\nb\tc"), one_line=True).plain == "a\\x0ab\\x09c"


def test_a_string_for_a_widget_is_never_markup() -> None:
    assert shown(MARKUP).plain == MARKUP and not shown(MARKUP).spans
    assert shown_line("a\nb", style="red").plain == "a\\x0ab"
    group = safe_renderable(Group(Text("x\x1b"), "[red]y", Text("clean")))
    assert [part.plain for part in group.renderables] == ["x\\x1b", "[red]y", "clean"]
    same = Group(Text("clean"))
    assert safe_renderable(same) is same


def test_the_control_filter_drops_what_a_widget_let_through_and_keeps_widths_and_styles() -> None:
    red = Style(color="red")
    segments = [
        Segment("a\x1b]52;c;eA==\x07b", red),
        Segment("\u202e"),
        Segment("\x1b[?1049h", None, [(1,)]),
        Segment("c"),
    ]
    out = ControlFilter().apply(segments, Color(0, 0, 0))
    assert out == [Segment("a]52;c;eA==b", red), Segment("\x1b[?1049h", None, [(1,)]), Segment("c")]
    clean = [Segment("plain", red)]
    assert ControlFilter().apply(clean, Color(0, 0, 0)) is clean


async def test_the_app_filters_every_line_it_draws(store: Store) -> None:
    """A widget that forgot the rule (raw ESC in a Text) still writes no control: the app's line filter."""
    app = make_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        raw = Static(Text("x\x1b]0;T\x07y\u202ez"), id="raw")
        await app.screen.mount(raw)
        await pilot.pause()
        assert drawn(raw).startswith("x]0;Tyz")


# --- every view -----------------------------------------------------------------------------------------------------


def hostile_row(index: int) -> dict[str, object]:
    return {
        "messages": [
            {"role": "user", "content": "draw"},
            {"role": "assistant", "content": hostile("answer") + "\n<svg><desc>" + hostile("svgsrc") + "</desc></svg>"},
        ],
        "input_metadata": {
            "row_id": f"r{index}" + hostile("rowid"),
            "dataset_info": {"original_prompt": hostile("prompt"), "requirements": [hostile("req1"), hostile("req2")]},
        },
        "evaluation_result": {
            "score": 0.5,
            "is_score_valid": True,
            "reason": hostile("rationale"),
            "metrics": {
                "requirement_1": {"score": 1, "reason": hostile("verdict1")},
                "requirement_2": {"score": 0, "reason": hostile("verdict2")},
            },
        },
        "rollout_status": {"code": 13, "message": hostile("error")},
    }


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "runs.db") as s:
        yield s


@pytest.fixture
def runs(store: Store, tmp_path: Path) -> tuple[str, str]:
    path = tmp_path / "hostile.jsonl"
    path.write_text("".join(json.dumps(hostile_row(i)) + "\n" for i in range(2)))
    run_a = import_file(store, path, name="A " + hostile("nameA")).run_id
    run_b = import_file(store, path, name="B " + hostile("nameB")).run_id
    return run_a, run_b


async def test_rollout_table_preview_and_summary(store: Store, runs: tuple[str, str]) -> None:
    app = make_app(store, run_id=runs[1])
    async with app.run_test(size=(160, 60)) as pilot:
        await settle(pilot)
        table = app.dashboard.query_one(RolloutTable)
        await wait_until(pilot, lambda: table.row_count == 2)
        assert_safe(drawn(table), "prompt")
        preview = app.dashboard.query_one(Preview)
        await wait_until(pilot, lambda: "Judge's rationale" in drawn(preview))
        text = drawn(preview)
        assert_safe(text, "prompt", "error", "rationale", "req1", "verdict1")
        assert "[red]R[/red]" in text and "[/link]" in text  # markup as text (the lines wrap at the pane's width)
        assert_safe(drawn(app.dashboard.query_one("#summary")), "nameB")


async def test_rollout_screen(store: Store, runs: tuple[str, str]) -> None:
    app = make_app(store, run_id=runs[0])
    async with app.run_test(size=(160, 80)) as pilot:
        await settle(pilot)
        rollout_id = next(store.iter_rollouts(runs[0])).rollout_id
        app.push_screen(RolloutDetail(store, rollout_id))
        await settle(pilot)
        text = drawn(app.screen)
        assert_safe(text, "rowid", "req1", "req2", "error", "rationale", "prompt", "svgsrc")


async def test_stats_run_picker_and_compare(store: Store, runs: tuple[str, str]) -> None:
    app = make_app(store, run_id=runs[1])
    async with app.run_test(size=(160, 60)) as pilot:
        await settle(pilot)
        app.push_screen(StatsScreen(store, runs[1], name=store.get_run(runs[1]).name))
        await settle(pilot)
        await wait_until(pilot, lambda: "Requirements most often failed" in drawn(app.screen))
        assert_safe(drawn(app.screen), "nameB", "req2")
        app.pop_screen()
        app.push_screen(RunPicker(store, current=runs[1]))
        await settle(pilot)
        assert_safe(drawn(app.screen), "nameA", "nameB")
        app.pop_screen()
        await settle(pilot)
        assert app.open_compare(runs[0], runs[1])
        await settle(pilot)
        await wait_until(pilot, lambda: "paired rows" in drawn(app.screen))
        assert_safe(drawn(app.screen), "nameA", "nameB", "prompt", "rationale", "error")


async def test_training_view(store: Store) -> None:
    """A training run's label and models come from the rollout server's requests (on main a label holding ``[/red]``
    stopped the app with a MarkupError)."""
    training = TrainingStore(store, job_name=hostile("job"))
    for step in (1, 2):
        model = f"m-step-{step}" + hostile("model")
        ids = SimpleNamespace(
            invocation_id="i", experiment_id="e", rollout_id=f"r{step}", run_id=f"s{step}", row_id="0"
        )
        place = training.place(ids=ids, model=model, hint=StepHint(step, None, "model"), judged=True)
        training.record(
            place,
            ids=ids,
            model=model,
            prompt=hostile("served"),
            requirements=("a",),
            judged=True,
            columns={"status": RolloutStatus.SCORED, "score": 1.0, "fulfilled": 1, "is_score_valid": True},
            code=StatusCode.FINISHED,
            message="Rollout finished",
        )
    app = make_app(store)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        app.push_screen(TrainingScreen(store, serving="http://127.0.0.1:1"))
        await wait_until(pilot, lambda: "2 steps" in drawn(app.screen))
        text = drawn(app.screen)
        assert not any(c in text for c in CONTROLS)
        assert "job\\x1b]52;c;" in text and MARKUP in text
        assert "\\u2066\\u200f" in text.split("local mean", 1)[1]  # the models' ends in the steps table


async def test_notifications_and_the_message_log(store: Store) -> None:
    app = make_app(store)
    async with app.run_test(size=(160, 40), notifications=True) as pilot:
        await settle(pilot)
        app.notify(hostile("message"), title=hostile("title"))
        await wait_until(pilot, lambda: bool(app.screen.query("Toast")))
        toasts = drawn(app.screen.query_one("ToastRack"))
        assert_safe(toasts, "message", "title")
        app.push_screen(MessageLogScreen(app.message_log.entries))
        await settle(pilot)
        assert_safe(drawn(app.screen), "message", "title")


async def test_a_text_box_shows_a_string_as_data() -> None:
    class Boxes(App[None]):
        def compose(self) -> ComposeResult:
            yield TextBox(id="box")

    async with Boxes().run_test(size=(120, 5)) as pilot:
        box = pilot.app.query_one(TextBox)
        box.show(hostile("box"))
        await pilot.pause()
        assert_safe(drawn(box), "box")
        assert MARKUP in drawn(box)


def test_the_job_detail_shows_the_control_planes_text_as_data() -> None:
    raw = job("j1" + hostile("jobid"), "FAILED", display=hostile("display"), message=hostile("status"))
    view = JobView.from_job(raw, "http://127.0.0.1:1", fetched_at=0.0)
    console = Console(width=200, force_terminal=False, color_system=None)
    with console.capture() as capture:
        console.print(job_detail(view, 0.0, ""))
    assert_safe(capture.get(), "jobid", "display", "status")


def test_the_full_size_pictures_caption_is_escaped() -> None:
    out = io.StringIO()
    show_full_resolution(render_png(SCENE_SVG), hostile("caption"), stdin=io.StringIO(), stdout=out, size=(40, 12))
    caption = out.getvalue().rsplit("\n", 1)[1]
    assert "caption\\x1b]52;c;" in caption and "]52;" not in caption.replace("\\x1b]52;", "")
    assert not any(c in caption for c in ("\x07", "\x9b", "\u202e")) and "\x1b]" not in caption


def test_info_sections_never_hold_a_control(store: Store, runs: tuple[str, str]) -> None:
    rec = next(store.iter_rollouts(runs[0]))
    console = Console(width=120, force_terminal=False, color_system=None)
    with console.capture() as capture:
        for section in info_sections(rec, full=True).values():
            if section is not None:
                console.print(section)
    assert_safe(capture.get(), "req1", "verdict1", "error", "rationale", "prompt", "svgsrc")


async def test_the_secrets_pane_shows_a_projects_env_as_data(isolated_env: Path) -> None:
    """A cloned project's .env is outside text: a value starting ``[/x]`` was read as markup by the table."""
    env = isolated_env / ".env"
    env.write_bytes(b"EXTRA_TOKEN='[/x]\x1b]52;c;cHduZWQ=\x07-tail'\n")
    app = SecretsPaneApp(env)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        pane = app.query_one(SecretsPane)
        assert pane.row_cells("EXTRA_TOKEN")[2] == "[/x]…tail"  # masked: its first four and last four characters
        table = app.query_one(DataTable)
        table.move_cursor(row=table.get_row_index("EXTRA_TOKEN"))
        await pilot.press("v")  # revealed: the table and the detail line show it whole
        await pilot.pause()
        assert pane.row_cells("EXTRA_TOKEN")[2] == "[/x]\\x1b]52;c;cHduZWQ=\\x07-tail"
        text = drawn(app.screen)
        assert "[/x]\\x1b]52;c;cHduZWQ=\\x07-tail" in text and ESC not in text and BEL not in text
