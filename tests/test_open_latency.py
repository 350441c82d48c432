"""What makes `enter` on a rollout, `?` and the Config pane quick to show (issue 34, item 5; the latencies
themselves: bench/tui.py part 6): the rollout screen loads its picture once, at once, in the box it will have, and
adds the SVG source after the frame with the picture; the help is laid out in a thread after the first frame, so
`?` finds its lines ready."""

from __future__ import annotations

import pytest
from factories import RUN_ID
from textual.widgets import Static
from tui_support import make_app, plain, settle, wait_until

from svgagent.core.store.run_store import Store
from svgagent.screens import help as help_screen
from svgagent.screens.rollout_detail import RolloutDetail
from svgagent.tui.widgets import picture as picture_module

SIZES = [(80, 24), (120, 40)]


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_the_rollout_screen_draws_its_picture_once_then_adds_the_svg(
    store: Store, size: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    loads: list[tuple[str, int, int]] = []
    load = picture_module.load_rollout_picture

    def counted(store, rollout_id, cols, lines, *args, **kwargs):  # type: ignore[no-untyped-def]
        loads.append((rollout_id, cols, lines))
        return load(store, rollout_id, cols, lines, *args, **kwargs)

    monkeypatch.setattr(picture_module, "load_rollout_picture", counted)
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        loads.clear()
        await pilot.press("enter")
        screen = app.screen
        assert isinstance(screen, RolloutDetail)
        picture = screen.query_one("#detail-image")
        assert picture.settle_s == 0  # no cursor to wait for
        await wait_until(pilot, lambda: picture.image is not None)
        await settle(pilot)
        assert len(loads) == 1, loads  # drawn once, in the box the layout gave it (not a 24-column one first)
        cols, lines = loads[0][1:]
        left = screen.query_one("#detail-left")
        assert cols == left.scrollable_content_region.width
        svg = screen.query_one("#info-svg", Static)
        assert not svg.has_class("-hidden") and "SVG source" in plain(svg)  # added once the picture was on screen


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_the_help_is_laid_out_before_the_key(store: Store, size: tuple[int, int]) -> None:
    help_screen._RENDERED.clear()
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await wait_until(
            pilot, lambda: any(width == size[0] - help_screen.PAGE_CHROME for _, width in help_screen._RENDERED)
        )
        ready = dict(help_screen._RENDERED)
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, help_screen.HelpScreen)
        assert help_screen._RENDERED == ready  # the page used the lines laid out after the first frame
        text = app.screen.query_one("#help-text", Static)
        assert text.content_region.width == size[0] - help_screen.PAGE_CHROME
