"""The platform's curves in the Jobs pane (issue 27 item 2): sparklines in the selected job's details at any size,
and a chart of its reward and eval reward when the pane is tall enough (zoomed with +). The job's outputMetrics come
in the wire format the control-plane simulator serves (tests/test_fireworks_sim.py reads it with the real client)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from job_fakes import fake_source, job
from tui_support import make_app, plain, settle, wait_until

from svgagent.core.store.run_store import Store
from svgagent.tui.widgets.curve_chart import CurveChart
from svgagent.tui.widgets.job_cells import sparkline

METRICS = {
    "steps": [
        {"step": 1, "reward": 0.3, "loss": 0.2},
        {"step": 2, "reward": 0.55, "loss": 0.15, "eval_reward": 0.5},
        {"step": 3, "reward": 0.8, "loss": 0.1, "eval_reward": 0.7},
    ]
}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "runs.db") as s:
        yield s


def test_sparkline() -> None:
    assert sparkline([0.0, 0.5, 1.0]) == "▁▅█"
    assert sparkline([2.0, 2.0]) == "▄▄"
    assert sparkline([]) == ""
    assert len(sparkline([float(i) for i in range(40)], width=16)) == 16


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=lambda s: f"{s[0]}x{s[1]}")
async def test_jobs_pane_shows_the_jobs_own_curves(store: Store, size: tuple[int, int]) -> None:
    running = job("svgagent-rft-1a2b3c4d5e6f", "RUNNING", percent=60, processed=9, total=12)
    running["outputMetrics"] = json.dumps(METRICS)
    app = make_app(store, job_source=fake_source([running]))
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("5")
        panel = app.dashboard.query_one("JobPanel")  # type: ignore[attr-defined]
        await wait_until(pilot, lambda: panel.polls >= 1)
        await settle(pilot)
        detail = plain(panel.query_one("#jobs-detail"))
        assert "reward      ▁▅█ 0.3 → 0.8 · step 3" in detail
        assert "loss        █▄▁ 0.2 → 0.1 · step 3" in detail
        assert "eval reward ▁█ 0.5 → 0.7 · step 3" in detail
        chart = panel.query_one("#jobs-chart", CurveChart)
        assert not chart.display or panel.size.height >= 30
        await pilot.press("plus")  # the pane on the whole screen
        await settle(pilot)
        tall = panel.size.height >= 30
        assert tall is (size == (120, 40))  # 80×24: the sparklines only
        assert chart.display is tall and panel.has_class("-curves") is tall
        if tall:
            assert [line.label for line in chart.lines] == ["platform reward", "platform eval reward"]
            assert chart.lines[0].points == ((1, 0.3), (2, 0.55), (3, 0.8))
            assert chart.size.height >= 12
