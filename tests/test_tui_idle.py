"""An idle app does no work: parts that tick every second touch the screen only when what they show changes.
(The idle CPU figure itself is measured by bench/tui_idle.py, not here.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from job_fakes import NOW, fake_source, job
from test_tui_jobs import panel_of, poll_now, polled, sim_app
from textual.widgets import Static
from tui_support import plain

from svgagent.core.store import Store


def count_updates(widget: Static) -> list[Any]:
    calls: list[Any] = []
    update = widget.update

    def counting(*args: Any, **kwargs: Any) -> None:
        calls.append(kwargs.get("layout", True))
        update(*args, **kwargs)

    widget.update = counting  # type: ignore[method-assign]
    return calls


async def test_jobs_pane_ticks_and_polls_without_redrawing_what_did_not_change(tmp_path: Path) -> None:
    finished = job("svgagent-rft-0f9e8d7c6b5a", "COMPLETED", percent=100, processed=132, total=132,
                   created="2025-12-31T09:00:00Z", completed="2025-12-31T10:12:30Z")
    offset = [0.0]
    with Store(tmp_path / "runs.db") as store:
        app = sim_app(store, fake_source([finished]), wall_clock=lambda: NOW + offset[0])
        async with app.run_test(size=(120, 40)) as pilot:
            panel = panel_of(app)
            await polled(pilot, panel, 1)
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
            panel = panel_of(app)
            await polled(pilot, panel, 1)
            assert panel._next_at == NOW + 2.0  # a job moves: watch it at the pane's interval
            source.fake.jobs[running["name"]]["state"] = "JOB_STATE_COMPLETED"  # type: ignore[attr-defined]
            await poll_now(pilot, panel)
            assert [v.state for v in panel.views] == ["COMPLETED"]
            assert panel._next_at == NOW + 10.0
