"""`v` in the Jobs pane and the app's exit: a job that cannot be evaluated says why (nothing is deployed), and a
deployment still up is named when you quit, never left billing silently (the whole before/after flow runs in a real
terminal in tests/test_tui_loop_tmux.py)."""

from __future__ import annotations

from job_fakes import NOW, fake_source, job
from tui_support import make_app, notifications, settle, wait_until

from svgagent.core.store.run_store import Store
from svgagent.screens.confirm import Confirm
from svgagent.screens.evaluate import EvaluateScreen


async def test_quitting_with_a_deployment_up_asks_first(store: Store) -> None:
    app = make_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        app.billing["job-1-eval"] = "1 replica × 1 NVIDIA_H100_80GB: about $7.00 an hour"
        await pilot.press("q")
        await settle(pilot)
        assert isinstance(app.screen, Confirm)
        assert "job-1-eval" in app.screen.detail and "$7.00 an hour" in app.screen.detail
        await pilot.press("n")  # stay
        await settle(pilot)
        assert app.is_running and not isinstance(app.screen, Confirm)
        await pilot.press("q", "y")
        await settle(pilot)
    assert app.return_code == 0


async def test_v_on_a_job_without_held_out_rows_says_so_and_deploys_nothing(store: Store) -> None:
    jobs = [job("svgagent-done", "COMPLETED", percent=100, processed=4, total=4, completed="2026-01-01T12:02:00Z")]
    source = fake_source(jobs)
    app = make_app(store, job_source=source, wall_clock=lambda: NOW)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("5")
        await wait_until(
            pilot, lambda: bool(app.dashboard.query("JobPanel")) and app.dashboard.query_one("JobPanel").polls >= 1
        )
        await settle(pilot)
        await pilot.press("v")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, EvaluateScreen)
        await wait_until(pilot, lambda: screen.stage == "failed")
        outcome = str(screen.query_one("#evaluate-outcome").render())
        assert "no held-out rows are stored for job svgagent-done" in " ".join(outcome.split())
        assert screen.deployment is None and not app.billing
        assert not screen.check_action("deploy", ())
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, EvaluateScreen)
    assert not any("failed" in n and "worker" in n for n in notifications(app))
