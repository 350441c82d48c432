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

from factories import RUN_ID, big_run, build_run
from test_tui_idle import count_updates
from rich.text import Text
from textual.app import App, ComposeResult
from textual.containers import Vertical
from textual.geometry import Region
from textual.widget import Widget
from tui_support import make_app, plain, preview_of, settle, table_of

from svgagent.core.store import Store
from svgagent.tui import imaging
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
        assert preview.picture.image_text is not None
        drawn = preview.picture.image_text
        with mock.patch.object(imaging, "png_to_text", wraps=imaging.png_to_text) as converted, \
                layout_requests() as asked:
            preview.reload()
            await settle(pilot)
            assert converted.call_count == 0
            assert asked == []
            store.update_rollout(f"{RUN_ID}.0.0", judge_s=0.95)  # a live change that keeps the picture
            preview.reload()
            await settle(pilot)
        assert converted.call_count == 0
        assert preview.picture.image_text is drawn
        assert asked == []
        timing = preview.query_one("#info-timing", TextBox)
        assert "judge 0.95 s" in plain(timing)


async def test_a_picture_of_the_same_size_replaces_the_last_without_a_layout(store: Store) -> None:
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        picture = preview_of(app).picture
        first = picture.image_text
        layouts = count_updates(picture)  # the layout argument of each update
        assert table_of(app).move_to(f"{RUN_ID}.4.0")  # another rollout, the same scene: the same picture size
        await settle(pilot)
        assert picture.rollout_id == f"{RUN_ID}.4.0"
        assert picture.image_text is not None
        assert picture.image_text is not first
        assert layouts == [False]
        assert table_of(app).move_to(f"{RUN_ID}.1.0")  # the flag: another shape, laid out
        await settle(pilot)
        assert layouts == [False, True]


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


@contextmanager
def full_reflows() -> Iterator[list[int]]:
    """One entry per full layout of a screen meanwhile (Textual's ``Screen._refresh_layout`` reflowing all)."""
    from textual.screen import Screen

    done: list[int] = []
    refresh_layout = Screen._refresh_layout

    def counting(self: Screen[Any], size: Any = None, scroll: bool = False) -> None:
        if not scroll or self._layout_widgets:
            done.append(1)
        refresh_layout(self, size, scroll)

    with mock.patch.object(Screen, "_refresh_layout", counting):
        yield done


async def test_a_new_rollout_in_the_preview_is_one_layout_of_the_screen(store: Store) -> None:
    """The cursor moves to a rollout whose picture and text differ in size: the picture and the text change in the
    same frame, and the sizes that layout gives do not ask for a second one (it was three before)."""
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        preview = preview_of(app)
        with full_reflows() as reflows:
            assert table_of(app).move_to(f"{RUN_ID}.1.0")  # the flag: another picture size, other text
            await settle(pilot)
        assert preview.picture.rollout_id == f"{RUN_ID}.1.0"
        assert "All four requirements are met." in plain(preview.query_one("#info-rationale"))
        assert len(reflows) == 1


def test_half_blocks_become_the_same_text_as_richs_ansi_decoder_gives() -> None:
    """The picture's conversion skips Rich's general ANSI decoder (most of its cost, in a thread holding the GIL):
    the text, its spans and styles are the same as ``Text.from_ansi`` makes of term-image's output."""
    import random

    from factories import FLAG_SVG, SCENE_SVG, render_png
    from PIL import Image
    from term_image.image import BlockImage

    imaging.configure_term_image()
    noise = Image.new("RGB", (60, 40))
    rng = random.Random(11)
    noise.putdata([(rng.randrange(256), rng.randrange(256), rng.randrange(256)) for _ in range(60 * 40)])
    pictures = [imaging._decode(render_png(SCENE_SVG)), imaging._decode(render_png(FLAG_SVG)), noise]
    for picture in pictures:
        for box in ((20, 10), (38, 19), (7, 3)):
            block = BlockImage(picture)
            block.set_size(*imaging.fit_cells(picture.width, picture.height, *box))
            ansi = str(block).rstrip("\n")
            expected = Text.from_ansi(ansi, no_wrap=True, end="")
            got = imaging.blocks_to_text(ansi)
            assert got == expected
            assert got.spans == expected.spans
            assert (got.no_wrap, got.end) == (expected.no_wrap, expected.end)
    assert imaging.blocks_to_text("\x1b[1mbold\x1b[0m") == Text.from_ansi("\x1b[1mbold\x1b[0m", no_wrap=True, end="")


async def test_typing_into_the_filter_or_a_config_field_asks_for_no_layout(store: Store) -> None:
    """Each key typed into Textual's Input changed its scrollable width, a reactive that reflows the whole screen:
    one layout of the dashboard per key. A field sized by its pane repaints itself."""
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        field = app.dashboard.query_one("#field-model")
        assert app.focused is field
        with layout_requests() as asked:
            await pilot.press("ctrl+u", *"a-model-name-longer-than-its-box-in-the-grid")
            await settle(pilot)
        assert field.value == "a-model-name-longer-than-its-box-in-the-grid"
        assert field.scroll_x > 0  # the end of the text is in view while typing
        assert field.virtual_size.width == field.content_width
        assert [who for who in asked if who == "field-model"] == []
        await pilot.press("escape", "slash")
        await settle(pilot)
        with layout_requests() as asked:
            await pilot.press(*"score<0.5")
            await settle(pilot)
        assert app.dashboard.query_one("#filter").value == "score<0.5"
        assert [who for who in asked if who == "filter"] == []
