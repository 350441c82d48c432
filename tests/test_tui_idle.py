"""An idle app does no work: parts that tick every second touch the screen only when what they show changes.
(The idle CPU figure itself is measured by bench/tui_idle.py, not here.)"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from job_fakes import NOW, fake_source, job
from test_tui_jobs import mounted_panel, poll_now, polled, sim_app
from textual.pilot import Pilot
from textual.widgets import Static
from tui_support import plain

from svgagent.core.store.run_store import Store
from svgagent.tui.widgets.job_panel import JobPanel
from svgagent.tui.widgets.text_box import TextBox


def count_updates(widget: Static) -> list[Any]:
    calls: list[Any] = []
    update = widget.update

    def counting(*args: Any, **kwargs: Any) -> None:
        calls.append(kwargs.get("layout", True))
        update(*args, **kwargs)

    widget.update = counting  # type: ignore[method-assign]
    return calls


@asynccontextmanager
async def jobs_pane(tmp_path: Path, one_job: dict[str, Any]) -> AsyncIterator[tuple[Pilot[Any], JobPanel, list[float]]]:
    """The app at 120×40 with ``one_job`` in the Jobs pane, polled once; ``offset[0]`` moves the wall clock."""
    offset = [0.0]
    with Store(tmp_path / "runs.db") as store:
        app = sim_app(store, fake_source([one_job]), wall_clock=lambda: NOW + offset[0])
        async with app.run_test(size=(120, 40)) as pilot:
            panel = await mounted_panel(pilot)
            await polled(pilot, panel, 1)
            yield pilot, panel, offset


async def test_jobs_pane_ticks_and_polls_without_redrawing_what_did_not_change(tmp_path: Path) -> None:
    finished = job(
        "svgagent-rft-0f9e8d7c6b5a",
        "COMPLETED",
        percent=100,
        processed=132,
        total=132,
        created="2025-12-31T09:00:00Z",
        completed="2025-12-31T10:12:30Z",
    )
    async with jobs_pane(tmp_path, finished) as (pilot, panel, offset):
        status = count_updates(panel.query_one("#jobs-status", Static))
        detail = count_updates(panel.query_one("#jobs-detail", Static))
        for _ in range(3):
            panel._tick()  # what the pane's 1-second interval calls
        await poll_now(pilot, panel)  # the same job again: a new fetch time, nothing else new
        await poll_now(pilot, panel)
        assert detail == []
        assert status == []  # still "updated just now"
        offset[0] += 5
        panel._tick()
        assert status == []  # under 10 s: still "just now"
        offset[0] += 7
        panel._tick()
        assert status == [False]  # "updated 12 s ago": one line, no layout pass
        assert detail == []  # a finished job's detail does not depend on the time
        assert plain(panel.query_one("#jobs-status")).strip() == "1 job · updated 12 s ago"


async def test_jobs_pane_polls_slowly_while_no_job_moves(tmp_path: Path) -> None:
    """At a 2 s interval (demo mode's) the next poll still waits 10 s when every job has ended."""
    running = job("svgagent-rft-1a2b3c4d5e6f", "RUNNING", percent=40, processed=53, total=132)
    with Store(tmp_path / "runs.db") as store:
        source = fake_source([running])
        app = sim_app(store, source, wall_clock=lambda: NOW, job_poll_s=2.0)
        async with app.run_test(size=(120, 40)) as pilot:
            panel = await mounted_panel(pilot)
            await polled(pilot, panel, 1)
            assert panel._next_at == NOW + 2.0  # a job moves: watch it at the pane's interval
            source.fake.jobs[running["name"]]["state"] = "JOB_STATE_COMPLETED"  # type: ignore[attr-defined]
            await poll_now(pilot, panel)
            assert [v.state for v in panel.views] == ["COMPLETED"]
            assert panel._next_at == NOW + 10.0


async def test_a_moving_jobs_elapsed_second_repaints_the_detail_without_a_layout(tmp_path: Path) -> None:
    """While a job runs its detail's "N s elapsed" changes every second: the detail is repainted in place (its
    height is the same), the screen is not laid out again."""
    running = job(
        "svgagent-rft-1a2b3c4d5e6f", "RUNNING", percent=40, processed=53, total=132, created="2026-01-01T12:02:00Z"
    )
    async with jobs_pane(tmp_path, running) as (pilot, panel, offset):
        box = panel.query_one("#jobs-detail", TextBox)
        detail = count_updates(box)
        layouts = box.layouts
        assert "1m 05s elapsed" in plain(box, width=200)
        offset[0] += 1
        panel._tick()
        await pilot.pause()
        assert detail == [False]  # redrawn once, without a layout pass
        assert box.layouts == layouts  # and none asked for after it: the height did not change
        assert "1m 06s elapsed" in plain(box, width=200)
