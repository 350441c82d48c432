"""A key is answered by a frame of its own: a live batch that arrives while a key is on its way to the screen is
applied after the frame that shows the key (tui/input_order's `input_on_its_way`, screens/open_run's hold), and
still shown. Frames are those written to the terminal. Counted by order of events, not timed: the latency is bench/tui.py's."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from unittest import mock

from factories import RUN_ID, build_run
from tui_support import make_app, settle, table_of, terminal_driver

from svgagent.core.scoring.models import RolloutStatus
from svgagent.core.store.run_store import Store
from svgagent.screens.open_run import HOLD_FRAMES
from svgagent.tui.live_feed import LiveBatch
from svgagent.tui.widgets.rollout_table import RolloutTable


def recording(log: list[str], after_move: Any = lambda: None) -> Any:
    """Patches that log each cursor move (then call ``after_move``) and each table merge, in order (frames: see
    ``terminal``)."""
    move, merge = RolloutTable.move_cursor, RolloutTable.merge

    def moving(self: RolloutTable, row: int) -> None:
        move(self, row)
        log.append("key")
        after_move()

    def merging(self: RolloutTable, *args: Any, **kwargs: Any) -> Any:
        log.append("merge")
        return merge(self, *args, **kwargs)

    return mock.patch.object(RolloutTable, "move_cursor", moving), mock.patch.object(RolloutTable, "merge", merging)


def terminal(app: Any, log: list[str]) -> Any:
    """Run ``app`` writing its frames to a driver that logs each one ("frame") in ``log``."""
    app.driver_class = terminal_driver(lambda _frame: log.append("frame"))
    return app.run_test(headless=False, size=(120, 40))


async def test_a_live_batch_that_comes_with_a_key_is_applied_after_the_frame_that_shows_the_key(tmp_path: Path) -> None:
    with Store(tmp_path / "runs.db") as store:
        build_run(store)
        app = make_app(store, run_id=RUN_ID)
        log: list[str] = []
        async with terminal(app, log) as pilot:
            await settle(pilot)
            dashboard, table = app.dashboard, table_of(app)
            table.focus()
            await settle(pilot)
            changed = table.visible_ids[-1]
            store.update_rollout(changed, status=RolloutStatus.GENERATING.value)
            batch = LiveBatch(RUN_ID, store.get_rollouts([changed]), dashboard.run.feed.generation)
            # the feed's next batch arrives while the key is on its way
            move, merge = recording(log, after_move=lambda: dashboard.post_message(batch))
            with move, merge:
                await pilot.press("down")
                await settle(pilot)
                while not batch.wait_done(0):
                    await pilot.pause()
            key = log.index("key")
            assert "frame" in log[key:], log
            assert log.index("frame", key) < log.index("merge", key), log  # the key's frame came first
            assert 1 <= batch.held <= HOLD_FRAMES
            assert table.records[changed].status is RolloutStatus.GENERATING  # and the batch is shown


async def test_input_is_on_its_way_until_a_frame_after_it_was_handled(tmp_path: Path) -> None:
    with Store(tmp_path / "runs.db") as store:
        build_run(store)
        app = make_app(store, run_id=RUN_ID)
        log: list[str] = []
        async with terminal(app, log) as pilot:
            await settle(pilot)
            assert not app.input_on_its_way()
            seen: list[bool] = []
            move, merge = recording(log, after_move=lambda: seen.append(app.input_on_its_way()))
            table_of(app).focus()
            await settle(pilot)
            with move, merge:
                await pilot.press("down")
                await settle(pilot)
                while app.input_on_its_way():
                    await pilot.pause()
            assert seen == [True]  # while the key was handled
            assert "frame" in log[log.index("key") :]  # and no longer once a frame showed it
