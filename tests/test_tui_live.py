"""Pilot tests with the engine running against the simulator: start, stop/resume, rerun, coalesced updates."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from factories import RUN_ID, build_run
from tui_support import make_app, notifications, rows, settings_for, settle, table_of, wait_until

from svgagent.core.demo import demo_overrides, demo_simulator
from svgagent.core.scoring.models import RolloutStatus
from svgagent.core.store.run_store import Store
from svgagent.screens.rollout_detail import RolloutDetail
from svgagent.tui.widgets.rollout_cells import prompt_topic
from svgagent.tui.widgets.summary_bar import SummaryBar


@pytest.fixture
def sim_overrides() -> Iterator[dict[str, Any]]:
    with demo_simulator(policy_latency_s=0.01, judge_latency_s=0.01) as sim:
        yield demo_overrides(sim.base_url)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "runs.db") as s:
        yield s


def demo_app(store: Store, overrides: dict[str, Any], **settings: Any) -> Any:
    values = {**overrides, **settings}
    return make_app(
        store, demo=True, settings=settings_for(store.path, **values), demo_overrides=overrides, clock=time.monotonic
    )


async def test_r_starts_a_run_that_fills_the_table_live(store: Store, sim_overrides: dict[str, Any]) -> None:
    app = demo_app(store, sim_overrides, rows=4)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("r")
        run_id = app.dashboard.run_id
        assert run_id is not None
        assert len(table_of(app).visible_ids) == 4
        await settle(pilot)  # waits for the engine and the feed to finish
        assert not app.control.running
        stored = store.list_rollouts(run_id)
        assert [r.status.terminal for r in stored] == [True] * 4
        assert store.get_run(run_id).status == "completed"
        table_rows = rows(app)
        for rec, cells in zip(stored, table_rows):
            assert cells[1] == prompt_topic(rec.prompt)
            assert cells[2] == rec.row_id
            assert cells[4] in ("✓ scored", "✗ failed")
            expected = "–" if rec.effective_score is None else f"{rec.effective_score:.2f}"
            assert cells[5] == expected
        assert "4/4 done" in app.dashboard.query_one(SummaryBar).plain
        assert app.dashboard.feed.batches >= 1


async def test_updates_are_coalesced_to_at_most_ten_a_second(store: Store, sim_overrides: dict[str, Any]) -> None:
    app = demo_app(store, sim_overrides, rows=24, concurrency=4, judge_concurrency=4)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        started = time.monotonic()
        await pilot.press("r")
        await settle(pilot)
        elapsed = time.monotonic() - started
        events = 24 * 4  # at least generating, rendering, judging, finished per rollout
        batches = app.dashboard.feed.batches
        assert 1 <= batches <= elapsed * 10 + 2, (batches, elapsed)
        assert batches < events
        assert all(cells[4] in ("✓ scored", "✗ failed") for cells in rows(app))


async def test_s_stops_keeping_finished_work_and_c_resumes(store: Store, sim_overrides: dict[str, Any]) -> None:
    with demo_simulator(policy_latency_s=0.3, judge_latency_s=0.05) as slow:
        overrides = demo_overrides(slow.base_url)
        app = demo_app(store, overrides, rows=10, concurrency=2, judge_concurrency=2)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            await pilot.press("r")
            run_id = app.dashboard.run_id
            assert run_id is not None
            await wait_until(pilot, lambda: any(r.status.terminal for r in table_of(app).records.values()))
            await pilot.press("s")
            await settle(pilot)
            assert not app.control.running
            stored = store.list_rollouts(run_id)
            finished = [r for r in stored if r.status.terminal]
            assert 1 <= len(finished) < 10
            assert {r.status for r in stored if not r.status.terminal} == {RolloutStatus.QUEUED}
            assert store.get_run(run_id).status == "interrupted"
            assert [cells[4] for cells in rows(app)].count("· queued") == 10 - len(finished)
            kept = {r.rollout_id: r.score for r in finished}
            await pilot.press("c")
            await settle(pilot)
            stored = store.list_rollouts(run_id)
            assert all(r.status.terminal for r in stored)
            assert store.get_run(run_id).status == "completed"
            assert {r.rollout_id: r.score for r in stored if r.rollout_id in kept} == kept
            assert all(cells[4] != "· queued" for cells in rows(app))


async def test_R_reruns_failed_then_marked_as_new_attempts(store: Store, sim_overrides: dict[str, Any]) -> None:
    build_run(store)  # row 3 failed (a judge outage), row 2 scored the model's valid 0, row 5 never ran
    app = demo_app(store, sim_overrides)
    app.initial_run_id = RUN_ID
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("R")  # nothing marked: every rollout without a valid score (invalid or failed)
        await settle(pilot)
        attempts = store.attempts_of(f"{RUN_ID}.3.0")
        assert [a.attempt for a in attempts] == [1, 2]
        assert [a.is_current for a in attempts] == [False, True]
        assert attempts[1].status.terminal
        assert [a.attempt for a in store.attempts_of(f"{RUN_ID}.2.0")] == [1]  # a valid 0 is no failure to redo
        ids = table_of(app).visible_ids
        assert f"{RUN_ID}.3.0.a2" in ids
        assert f"{RUN_ID}.3.0" not in ids
        assert len(ids) == 6
        assert store.get_rollout(f"{RUN_ID}.5.0").status.terminal  # resuming finished the queued one too
        await pilot.press("g", "space", "space")  # mark rows 0 and 1
        assert table_of(app).marked == {f"{RUN_ID}.0.0", f"{RUN_ID}.1.0"}
        assert rows(app)[0][0] == "●"
        await pilot.press("R")
        await settle(pilot)
        assert table_of(app).marked == frozenset()
        assert [a.attempt for a in store.attempts_of(f"{RUN_ID}.0.0")] == [1, 2]
        assert [a.attempt for a in store.attempts_of(f"{RUN_ID}.4.0")] == [1]  # not marked, not failed
        await pilot.press("g", "enter")
        await settle(pilot)
        detail = app.screen
        assert isinstance(detail, RolloutDetail)
        assert detail.rollout_id == f"{RUN_ID}.0.0.a2"
        assert len(store.attempts_of(detail.rollout_id)) == 2


async def test_config_pane_settings_are_used_by_the_next_run(store: Store, sim_overrides: dict[str, Any]) -> None:
    from textual.widgets import Input

    app = demo_app(store, sim_overrides, rows=4)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("3")
        field = app.dashboard.query_one("#field-rows", Input)
        field.value = "2"
        await settle(pilot)
        assert app.settings.rows == 2
        assert app.settings.base_url == sim_overrides["base_url"]  # still the simulator: demo mode
        assert "built-in dataset (2 prompts)" in " ".join(table_of(app).empty_message)
        await pilot.press("escape", "r")
        await settle(pilot)
        run_id = app.dashboard.run_id
        assert run_id is not None
        assert len(store.list_rollouts(run_id)) == 2
        assert store.get_run(run_id).settings["rows"] == 2


async def test_saving_keys_leaves_implicit_demo_mode(store: Store, sim_overrides: dict[str, Any]) -> None:
    from svgagent.tui.widgets.secrets_form import SecretsPane

    real = settings_for(store.path)
    app = demo_app(store, sim_overrides)
    app.settings_loader = lambda: real
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        pane = app.dashboard.query_one(SecretsPane)
        pane.post_message(SecretsPane.Saved(pane, ["FIREWORKS_API_KEY", "OPENAI_API_KEY"]))
        await settle(pilot)
        assert not app.demo
        assert app.settings == real  # the Config pane shows the real settings now and sends them back
        assert app.dashboard.query_one("#banner").has_class("-hidden")
        assert any("Demo mode off" in n or "keys saved" in n for n in notifications(app))


async def test_quitting_during_a_run_stops_it_and_keeps_finished_work(store: Store) -> None:
    with demo_simulator(policy_latency_s=0.3, judge_latency_s=0.05) as slow:
        app = demo_app(store, demo_overrides(slow.base_url), rows=6, concurrency=1, judge_concurrency=1)
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            await pilot.press("r")
            run_id = app.dashboard.run_id
            await wait_until(pilot, lambda: any(r.status.terminal for r in table_of(app).records.values()))
            await pilot.press("q")
            await pilot.pause()
        assert app.return_code == 0
        assert store.get_run(run_id).status == "interrupted"  # type: ignore[arg-type]
        statuses = [r.status for r in store.list_rollouts(run_id)]  # type: ignore[arg-type]
        assert any(s.terminal for s in statuses)
        assert RolloutStatus.QUEUED in statuses


async def test_c_and_R_refuse_a_run_another_process_is_working_on(store: Store, sim_overrides: dict[str, Any]) -> None:
    # issue 10 item 2: `c` in the app while a CLI resume of the same run ran made both process (and pay for)
    # everything. The other worker's lease is live (a fresh heartbeat from another host): the app refuses.
    from svgagent.core.store.leases import LeaseOwner

    build_run(store)  # row 5 never ran; rows 2 and 3 failed
    store.acquire_lease(RUN_ID, LeaseOwner(4242, "build-box", "cli-resume"))
    before = {r.rollout_id: (r.status, r.updated) for r in store.list_rollouts(RUN_ID, current_only=False)}
    app = demo_app(store, sim_overrides)
    app.initial_run_id = RUN_ID
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("c")
        await settle(pilot)
        await pilot.press("R")
        await settle(pilot)
        assert not app.control.running
        busy = [n for n in notifications(app) if "is being processed by pid 4242 on host build-box" in n]
        assert len(busy) == 2
    after = {r.rollout_id: (r.status, r.updated) for r in store.list_rollouts(RUN_ID, current_only=False)}
    assert after == before  # nothing reset, no new attempt queued


async def test_r_s_in_one_burst_stores_the_run_interrupted(store: Store, sim_overrides: dict[str, Any]) -> None:
    # a user test: `r s` in one read stored the run as `created` (the engine's process was stopped before it had
    # marked the run running), while the toast said it was stopped and `c` resumed it; with a pause it said interrupted
    from tui_support import burst

    from svgagent.tui.widgets.summary_bar import SummaryBar

    app = demo_app(store, sim_overrides, rows=5)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await burst(pilot, "r", "s")
        run_id = app.dashboard.run_id
        assert run_id is not None
        assert not app.control.running
        assert any("Run stopped" in n or "stopped:" in n for n in notifications(app))
        assert store.get_run(run_id).status == "interrupted"
        assert "interrupted" in app.dashboard.query_one(SummaryBar).plain
        await pilot.press("c")
        await settle(pilot)
        assert store.get_run(run_id).status == "completed"


async def test_a_rerun_adds_the_new_attempts_tokens_to_the_runs_total(
    store: Store, sim_overrides: dict[str, Any], capsys: Any
) -> None:
    # a user test: marking two rollouts and pressing R took the status line from 16,830 to 16,577 tokens; the first
    # attempts' tokens were paid for. The run's figure counts every attempt; a rollout's own stays its attempt's.
    import json

    from svgagent.tui.cli.main import main

    build_run(store)  # every finished rollout of the fixture used 120 + 340 tokens
    app = demo_app(store, sim_overrides)
    app.initial_run_id = RUN_ID
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("R")  # the failed rows 2 and 3, and the queued row 5
        await settle(pilot)
        spent = sum(r.tokens for r in store.list_rollouts(RUN_ID, current_only=False))
        current = sum(r.tokens for r in store.list_rollouts(RUN_ID))
        assert spent > current  # the first attempts of rows 2 and 3 were paid for too
        assert f"{spent:,} tokens" in app.dashboard.query_one(SummaryBar).plain
        await pilot.press("g", "space", "space", "R")  # rows 0 and 1 again
        await settle(pilot)
        spent_now = sum(r.tokens for r in store.list_rollouts(RUN_ID, current_only=False))
        assert spent_now > spent
        assert f"{spent_now:,} tokens" in app.dashboard.query_one(SummaryBar).plain
        assert store.summarize(RUN_ID, 0.5).prompt_tokens + store.summarize(RUN_ID, 0.5).completion_tokens == spent_now
    summary = store.get_run(RUN_ID).summary
    assert summary is not None and summary["prompt_tokens"] + summary["completion_tokens"] == spent_now
    assert main(["runs", "show", RUN_ID, "--json", "--store", str(store.path)]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["run"]["summary"]["prompt_tokens"] + shown["run"]["summary"]["completion_tokens"] == spent_now
    assert shown["rollouts"][0]["prompt_tokens"] == store.list_rollouts(RUN_ID)[0].prompt_tokens  # per attempt


async def test_elapsed_is_every_sessions_work_on_the_run(store: Store, sim_overrides: dict[str, Any]) -> None:
    # a user test: elapsed restarted on every resume or rerun (9 s before the stop, 6 s at the end), and a run
    # opened from the picker showed `elapsed –`
    import re

    build_run(store)
    store.add_worked(RUN_ID, 75.0)  # earlier sessions (the app's, the CLI's) worked 75 s on it
    app = demo_app(store, sim_overrides)
    app.initial_run_id = RUN_ID
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert "elapsed 1m15s" in app.dashboard.query_one(SummaryBar).plain
        started = time.monotonic()
        await pilot.press("R")
        await settle(pilot)
        took = time.monotonic() - started  # the rerun's session: well under 5 s, unless the machine is loaded
        shown = re.search(r"elapsed 1m(\d+)s", app.dashboard.query_one(SummaryBar).plain)
        assert shown is not None and 15 <= int(shown.group(1)) <= 15 + took + 1, (shown, took)
    assert 75.0 < store.get_run(RUN_ID).worked_s <= 75.0 + took  # type: ignore[operator]
