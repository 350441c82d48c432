"""A live run redraws only what changed: the preview's sections, its picture and the table's rows do no work for
an unchanged rollout, and a change that keeps every height asks for no layout of the screen (a layout of the
dashboard is a reflow of every widget on it). Counted, not timed: the speed is bench/tui.py's."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from factories import RUN_ID, big_run, build_run
from rich.text import Text
from textual.app import App, ComposeResult
from textual.containers import Vertical
from textual.geometry import Region, Size
from textual.widget import Widget
from textual.widgets import Input
from tui_support import burst, make_app, plain, preview_of, settle, table_of

from svgagent.core.store.run_store import Store
from svgagent.tui import imaging
from svgagent.tui.widgets.picture import Picture
from svgagent.tui.widgets.rollout_info import SECTIONS, RolloutInfo
from svgagent.tui.widgets.rollout_table import RolloutTable
from svgagent.tui.widgets.text_box import TextBox, signature


@contextmanager
def layout_requests() -> Iterator[list[str]]:
    """The ids (or class names) of the widgets that ask for a layout meanwhile."""
    asked: list[str] = []
    refresh = Widget.refresh

    def counting(self: Widget, *regions: Any, **kwargs: Any) -> Widget:
        if kwargs.get("layout"):
            asked.append(self.id or type(self).__name__)
        return refresh(self, *regions, **kwargs)

    with mock.patch.object(Widget, "refresh", counting):
        yield asked


class BoxApp(App[None]):
    def compose(self) -> ComposeResult:
        with Vertical():
            yield TextBox("one line", id="box")


async def test_text_box_repaints_in_place_and_lays_out_only_when_its_height_changes() -> None:
    async with BoxApp().run_test(size=(30, 10)) as pilot:
        box = pilot.app.query_one(TextBox)
        await pilot.pause()
        assert box.size.height == 1
        with layout_requests() as asked:
            assert box.show("one line") is False  # what it shows already: nothing to do
            assert box.show(Text("another line", style="bold")) is True
            await pilot.pause()
        assert asked == []  # still one line at 30 columns: repainted, not laid out
        assert box.redraws == 1
        assert box.layouts == 0
        assert box.show(Text("another line", style="bold")) is False  # equal text and styles
        with layout_requests() as asked:
            box.show("a first line\na second line\nand a third")
            await pilot.pause()
        assert set(asked) == {"box"}  # (Textual lays the screen out once more for the new size: its own request)
        assert box.size.height == 3  # the layout it asked for gave it its new height
        assert box.layouts == 1


def test_signature_compares_text_and_styles() -> None:
    assert signature(Text("a", style="red")) == signature(Text("a", style="red"))
    assert signature(Text("a", style="red")) != signature(Text("a", style="green"))
    assert signature(Text.assemble(("a", "bold"), "b")) != signature(Text.assemble("a", "b"))
    other = object()
    assert signature(other) != signature(object())  # unknown renderables: always drawn again


class InfoApp(App[None]):
    def compose(self) -> ComposeResult:
        yield RolloutInfo(id="info")


async def test_rollout_info_redraws_only_the_sections_that_changed(tmp_path: Path) -> None:
    with Store(tmp_path / "runs.db") as store:
        build_run(store)
        rec = store.get_rollout(f"{RUN_ID}.0.0")
        async with InfoApp().run_test(size=(80, 40)) as pilot:
            info = pilot.app.query_one(RolloutInfo)
            info.show(rec)
            await pilot.pause()
            boxes = {name: info.query_one(f"#info-{name}", TextBox) for name in SECTIONS}
            before = {name: box.redraws for name, box in boxes.items()}
            laid_out = boxes["rationale"].layouts
            with layout_requests() as asked:
                info.show(replace(rec))  # the same record again (a live batch re-read it)
                await pilot.pause()
                assert {name: box.redraws for name, box in boxes.items()} == before
                info.show(replace(rec, judge_s=0.9, completion_tokens=341))  # only the timing line changes
                await pilot.pause()
            assert asked == []  # one line before and after: no layout of the screen
            changed = [name for name, box in boxes.items() if box.redraws != before[name]]
            assert changed == ["timing"]
            assert "judge 0.90 s" in plain(boxes["timing"])
            info.show(replace(rec, rationale=rec.rationale + "\n" * 3 + "More lines."))
            await pilot.pause()
            assert boxes["rationale"].layouts == laid_out + 1  # taller: laid out again
            assert "More lines." in plain(boxes["rationale"])


async def test_preview_of_an_unchanged_rollout_draws_nothing_again(store: Store) -> None:
    """The preview re-reads the cursor's rollout at each live change of it: the same picture is not converted
    again, and what did not change is not redrawn — no layout of the screen."""
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        preview = preview_of(app)
        assert preview.picture.image is not None
        drawn = preview.picture.image
        with (
            mock.patch.object(imaging, "png_to_blocks", wraps=imaging.png_to_blocks) as converted,
            layout_requests() as asked,
        ):
            preview.reload()
            await settle(pilot)
            assert converted.call_count == 0
            assert asked == []
            store.update_rollout(f"{RUN_ID}.0.0", judge_s=0.95)  # a live change that keeps the picture
            preview.reload()
            await settle(pilot)
        assert converted.call_count == 0
        assert preview.picture.image is drawn
        assert asked == []
        assert "judge 0.95 s" in plain(preview.picture)


class PictureApp(App[None]):
    def __init__(self, store: Store) -> None:
        super().__init__()
        self.store = store

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Picture(self.store, id="picture")


async def test_a_picture_of_the_same_size_replaces_the_last_without_a_layout(store: Store) -> None:
    """The compare and rollout screens' picture is as large as what it shows: the same size again repaints it."""
    async with PictureApp(store).run_test(size=(80, 30)) as pilot:
        picture = pilot.app.query_one(Picture)
        picture.fit(24, 12)
        picture.show(f"{RUN_ID}.0.0")
        await settle(pilot)
        first = picture.image
        assert first is not None
        with layout_requests() as asked:
            picture.show(f"{RUN_ID}.4.0")  # another rollout, the same scene: the same picture size
            await settle(pilot)
            assert picture.image is not None
            assert picture.image is not first
            assert asked == []
            picture.show(f"{RUN_ID}.1.0")  # the flag: another shape, laid out
            await settle(pilot)
        assert asked and set(asked) == {"picture"}  # it asks (and Textual asks again once its size is set)
        assert picture.size == Size(*picture.image.shape)


class TableApp(App[None]):
    def compose(self) -> ComposeResult:
        yield RolloutTable(id="t")


async def test_a_live_batch_repaints_the_rows_in_view_with_one_refresh(tmp_path: Path) -> None:
    with Store(tmp_path / "runs.db") as store:
        run_id = big_run(store, 300)
        records = store.list_rollouts(run_id)
        async with TableApp().run_test(size=(80, 24)) as pilot:
            table = pilot.app.query_one(RolloutTable)
            table.load(records)
            await pilot.pause()
            calls: list[tuple[Region, ...]] = []
            refresh = table.refresh
            table.refresh = lambda *regions, **kw: calls.append(regions) or refresh(*regions, **kw)  # type: ignore
            changed = [replace(r, generation_s=42.0) for r in records[:40]] + [replace(records[299], judge_s=9.0)]
            table.apply(changed)
            assert len(calls) == 1  # one refresh for the whole batch
            lines = range(1, table.size.height)  # under the header; nothing for the rows below the view
            assert sorted(region.y for region in calls[0]) == list(lines)  # one cell (gen s) in each
            assert table.records[records[299].rollout_id].judge_s == 9.0


@pytest.mark.parametrize("size", [(120, 40), (80, 24)], ids=lambda s: f"{s[0]}x{s[1]}")
async def test_moving_the_cursor_repaints_the_preview_and_lays_nothing_out(store: Store, size: tuple[int, int]) -> None:
    """The cursor moves between rollouts whose pictures and texts differ in size (the scene, the flag, one
    without a picture): the preview (picture on top at 120×40, text beside it in the 80×24 pane) is repainted,
    the screen is never laid out again, and each rollout's text is shown, wrapped at its column — wrapped in the
    picture's thread worker, not on the loop (the SVG's syntax highlighting is the costly part)."""
    import threading

    from svgagent.tui.widgets import preview_body

    wrapped_on_loop: list[str] = []
    wrap = preview_body._wrap

    def counting_wrap(*args: Any) -> Any:
        if threading.current_thread() is threading.main_thread():
            wrapped_on_loop.append(type(args[1]).__name__)
        return wrap(*args)

    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        if size == (80, 24):
            await pilot.press("2")
            await settle(pilot)
        preview = preview_of(app)
        body = preview.picture
        with layout_requests() as asked, mock.patch.object(preview_body, "_wrap", counting_wrap):
            for row, expected in (
                (1, "All four requirements are met."),
                (2, "no <svg> element"),
                (0, "triangle is too small to count"),
                (1, "All four requirements are met."),
            ):
                assert table_of(app).move_to(f"{RUN_ID}.{row}.0")
                await settle(pilot)
                assert body.rollout_id == f"{RUN_ID}.{row}.0"
                assert expected in " ".join(body.text.split())
                assert max(map(len, body.text.split("\n"))) <= body.scrollable_content_region.width - body.text_x
        assert asked == []
        assert wrapped_on_loop == []


def _cells(rows: Any) -> list[list[tuple[str, Any]]]:
    """(character, style) of each cell of each line."""
    return [[(char, segment.style) for segment in row for char in segment.text] for row in rows]


def test_half_blocks_become_the_cells_richs_ansi_decoder_gives() -> None:
    """The picture's conversion builds segments directly (one Style for each colour pair), skipping Rich's
    general ANSI decoder and Text (most of its cost, in a thread holding the GIL): each cell has the character and
    style ``Text.from_ansi`` gives for term-image's output, drawn."""
    import io
    import random

    from factories import FLAG_SVG, SCENE_SVG, render_png
    from PIL import Image
    from rich.console import Console
    from term_image.image import BlockImage

    console = Console(file=io.StringIO(), color_system="truecolor", width=500)

    def rich_cells(ansi: str) -> list[list[tuple[str, Any]]]:
        text = Text.from_ansi(ansi, no_wrap=True, end="")
        return _cells(line.render(console, end="") for line in text.split("\n", allow_blank=True))

    imaging.configure_term_image()
    noise = Image.new("RGB", (60, 40))
    rng = random.Random(11)
    noise.putdata([(rng.randrange(256), rng.randrange(256), rng.randrange(256)) for _ in range(60 * 40)])
    pictures = [imaging._decode(render_png(SCENE_SVG)), imaging._decode(render_png(FLAG_SVG)), noise]
    for picture in pictures:
        for box in ((20, 10), (38, 19), (7, 3)):
            block = BlockImage(picture)
            cols, lines = imaging.fit_cells(picture.width, picture.height, *box)
            block.set_size(cols, lines)
            ansi = str(block).rstrip("\n")
            got = imaging.blocks_from_ansi(ansi)
            assert _cells(got.rows) == rich_cells(ansi)
            assert got.shape == (cols, lines)
    bold = imaging.blocks_from_ansi("\x1b[1mbold\x1b[0m")  # not what BlockImage writes: Rich's decoder
    assert _cells(bold.rows) == rich_cells("\x1b[1mbold\x1b[0m")
    assert bold.shape == (4, 1)


async def test_a_value_typed_into_a_field_keeps_its_end_in_view(store: Store) -> None:
    """Typing past the width of a Config field or the filter scrolls the field: the end of what was typed stays in
    view."""
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        field = app.dashboard.query_one("#field-model", Input)
        assert app.focused is field
        await burst(pilot, "enter", "ctrl+u", *"a-model-name-longer-than-its-box-in-the-grid")  # typed, at once
        assert field.value == "a-model-name-longer-than-its-box-in-the-grid"
        assert field.scroll_x > 0 and field.scroll_x == field.max_scroll_x
        await pilot.press("escape", "escape", "slash")
        await settle(pilot)
        await burst(pilot, *"score<0.5")
        assert app.dashboard.query_one("#filter", Input).value == "score<0.5"
