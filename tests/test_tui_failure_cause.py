"""A run where everything failed says why: the summary bar and the run-end notification name the dominant failure
and its count, and the message log keeps it (issue 34, item 2) — through the real app, against a dead endpoint."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from apps.settings_panes import closed_port_url
from tui_support import make_app, notifications, settings_for, settle, wait_until

from svgagent.core.analysis.failure_causes import dominant_failure, failure_causes
from svgagent.core.scoring.models import FailureKind
from svgagent.core.store.run_store import Store
from svgagent.tui.widgets.summary_bar import SummaryBar


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "runs.db") as s:
        yield s


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_a_run_against_a_dead_endpoint_names_the_cause_and_its_count(store: Store, size: tuple[int, int]) -> None:
    dead = closed_port_url() + "/v1"
    settings = settings_for(store.path, base_url=dead, judge_base_url=dead, rows=3, max_retries=0)
    app = make_app(store, settings=settings, clock=time.monotonic)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("r")
        await wait_until(pilot, lambda: app.dashboard.run_id is not None and not app.control.running, timeout=60)
        await settle(pilot)
        headline = f"policy endpoint unreachable: {dead} — 3 of 3"
        assert headline in app.dashboard.query_one(SummaryBar).plain
        finished = [n for n in notifications(app) if n.startswith("3/3 done")]
        assert len(finished) == 1
        assert finished[0].splitlines()[1].startswith(f"policy endpoint unreachable: {dead} (")
        assert finished[0].endswith(" — 3 of 3")
        await pilot.press("L")  # the message log keeps it after the toast is gone
        await settle(pilot)
        from svgagent.screens.message_log import MessageLogScreen

        assert isinstance(app.screen, MessageLogScreen)
        assert any(headline.split(" — ")[0] in entry.message for entry in app.message_log.entries)


def test_the_dominant_failure_is_the_most_frequent_and_ignores_the_models_valid_zeros(tmp_path: Path) -> None:
    """The fixture run: row 2 the model's valid 0 (no SVG), row 3 a judge outage; rows 0 and 1 fail unreachable
    too, row 5 with an unusable judge answer."""
    from factories import RUN_ID, build_run

    with Store(tmp_path / "runs.db") as store:
        build_run(store)
        reason = "judge endpoint unreachable: http://127.0.0.1:9/v1 (connection refused; 3 retries)"
        for row in (0, 1):
            store.update_rollout(
                f"{RUN_ID}.{row}.0",
                status="failed",
                failure_kind=FailureKind.UNREACHABLE,
                is_score_valid=False,
                score=None,
                reason=reason,
            )
        store.update_rollout(
            f"{RUN_ID}.5.0",
            status="failed",
            failure_kind=FailureKind.JUDGE_UNUSABLE,
            is_score_valid=False,
            reason="the judge's answer had no count",
        )
        causes = failure_causes(store, RUN_ID)
        assert [(c.kind, c.count) for c in causes] == [(FailureKind.UNREACHABLE, 3), (FailureKind.JUDGE_UNUSABLE, 1)]
        top = dominant_failure(store, RUN_ID)
        assert top is not None
        assert top.headline == "judge endpoint unreachable: http://127.0.0.1:9/v1 — 3 of 6"
        assert top.line == reason + " — 3 of 6"
