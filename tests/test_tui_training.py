"""The training view (screens/training.py): a job's served rollouts step by step, opened from the Jobs pane with `t`,
live as the store fills, two steps compared on the compare screen with pictures. Pilot tests assert on data;
snapshots at 80×24 and 120×40 (review the report before `--snapshot-update`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from factories import FLAG_SVG
from job_fakes import fake_source, job
from textual.pilot import Pilot
from textual.widgets import DataTable
from tui_support import make_app, settle, wait_until

from svgagent.core.exchange.ep_status import StatusCode
from svgagent.core.scoring.models import RolloutStatus
from svgagent.core.scoring.render import render_svg_to_png
from svgagent.core.serve.training_runs import StepHint, TrainingStore
from svgagent.core.store.run_store import Store
from svgagent.screens.compare import CompareScreen
from svgagent.screens.training import TrainingScreen
from svgagent.tui.widgets.training_curves import TrainingCurves

JOB_ID = "svgagent-rft-1a2b3c4d5e6f"
JOB_NAME = f"accounts/test-account/reinforcementFineTuningJobs/{JOB_ID}"
REQS = ("three vertical bands", "blue on the left", "red on the right", "a white middle")
SIZES = [(80, 24), (120, 40)]


def serve_steps(
    store: Store, scores: dict[int, list[int]], *, job_name: str = JOB_NAME, experiment: str = "exp-train"
) -> TrainingStore:
    """Store rollouts as `svgagent serve --judge --job JOB_NAME` does: step -> fulfilled counts, one per row."""
    training = TrainingStore(store, job_name=job_name)
    png = render_svg_to_png(FLAG_SVG, 64)
    for step, fulfilled in scores.items():
        model = f"accounts/test-account/models/{JOB_ID}-step-{step}"
        for row, count in enumerate(fulfilled):
            ids = SimpleNamespace(
                invocation_id="inv",
                experiment_id=experiment,
                rollout_id=f"{experiment}-s{step}r{row}",
                run_id=f"run-{step}",
                row_id=f"row_{row}",
            )
            place = training.place(ids=ids, model=model, hint=StepHint(step, None, "model"), judged=True)
            columns = {
                "status": RolloutStatus.SCORED,
                "raw_answer": f"```svg\n{FLAG_SVG}\n```",
                "svg": FLAG_SVG,
                "png": png,
                "score": count / len(REQS),
                "fulfilled": count,
                "is_score_valid": True,
                "rationale": f"{count} of 4",
                "reason": f"{count} of 4",
            }
            training.record(
                place,
                ids=ids,
                model=model,
                prompt=f"Draw flag {row}",
                requirements=REQS,
                judged=True,
                columns=columns,
                code=StatusCode.FINISHED,
                message="Rollout finished",
            )
    return training


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "runs.db") as s:
        yield s


def jobs_app(store: Store):  # type: ignore[no-untyped-def]
    source = fake_source(
        [job(JOB_ID, "RUNNING", percent=40, processed=53, total=132, display="svgagent builtin qwen3-0p6b")]
    )
    return make_app(store, job_source=source)


async def open_training(pilot: Pilot) -> TrainingScreen:
    await settle(pilot)
    await pilot.press("5")  # the Jobs pane
    panel = pilot.app.dashboard.query_one("JobPanel")  # type: ignore[attr-defined]
    await wait_until(pilot, lambda: panel.polls >= 1)
    await settle(pilot)
    await pilot.press("t")
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, TrainingScreen)
    await pilot.app.workers.wait_for_complete()
    await settle(pilot)
    return screen


async def test_t_on_a_job_opens_its_steps_with_counts_and_local_means(store: Store) -> None:
    serve_steps(store, {1: [1, 0, 2], 2: [2, 2, 3], 3: [4, 3, 4]})
    serve_steps(
        store, {1: [4, 4]}, job_name="accounts/test-account/reinforcementFineTuningJobs/another", experiment="exp-other"
    )
    app = jobs_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_training(pilot)
        table = screen.query_one("#training-steps", DataTable)
        rows = [table.get_row_at(i) for i in range(table.row_count)]
        assert [r[:5] for r in rows] == [
            ["1", "3", "3", "0", "0.250"],
            ["2", "3", "3", "0", "0.583"],
            ["3", "3", "3", "0", "0.917"],
        ]
        chart = screen.query_one(TrainingCurves)
        (local,) = chart.lines  # the job reports no curves of its own: the local mean alone
        assert local.label == "local mean"
        assert [s for s, _ in local.points] == [1, 2, 3]
        assert [v for _, v in local.points] == pytest.approx([0.25, 7 / 12, 11 / 12])
        # each step's dollars: its run's rollouts at the price table's rates (core.config.prices.rollouts_cost)
        from svgagent.core.config.prices import price_table, rollouts_cost, usd_text

        for step, row in zip(screen.steps, rows):
            run = store.get_run(step.run_id)
            want = rollouts_cost(
                store.list_rollouts(step.run_id, current_only=False),
                price_table(),
                step.model or run.settings.get("model"),
                run.settings.get("judge_model"),
            )
            assert row[6] == usd_text(want.total_usd)
        assert screen.training_run is not None
        assert screen.training_run.job_name == JOB_NAME  # not the other job's training run
        await pilot.press("escape")
        assert not isinstance(app.screen, TrainingScreen)


async def test_rollouts_stream_in_while_the_view_is_open(store: Store) -> None:
    training = serve_steps(store, {1: [1, 2]})
    app = jobs_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_training(pilot)
        assert [s.rollouts for s in screen.steps] == [2]
        del training
        serve_steps(store, {2: [3, 3, 4]})  # the server stores step 2 while the view is open
        await pilot.press("r")
        await pilot.app.workers.wait_for_complete()
        await settle(pilot)
        assert [(s.step, s.rollouts) for s in screen.steps] == [(1, 2), (2, 3)]
        assert screen.query_one("#training-steps", DataTable).row_count == 2


async def test_compare_first_and_last_or_a_marked_step_opens_the_compare_screen(store: Store) -> None:
    serve_steps(store, {1: [1, 0], 2: [2, 3], 3: [4, 4]})
    app = jobs_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_training(pilot)
        steps = {s.step: s.run_id for s in screen.steps}
        await pilot.press("c")  # nothing marked: the first step against the last
        await settle(pilot)
        compare = app.screen
        assert isinstance(compare, CompareScreen)
        assert (compare.run_a, compare.run_b) == (steps[1], steps[3])
        assert compare.comparison is not None
        assert compare.comparison.paired_rows == 2  # rows aligned across steps
        await pilot.press("escape")
        await settle(pilot)
        assert screen.query_one("#training-steps", DataTable).cursor_row == 2  # the newest step, followed
        await pilot.press("up", "space", "up")  # mark step 2, highlight step 1
        await pilot.press("c")
        await settle(pilot)
        assert (app.screen.run_a, app.screen.run_b) == (steps[2], steps[1])  # type: ignore[attr-defined]


async def test_a_job_without_served_rollouts_says_how_to_get_them(store: Store) -> None:
    app = jobs_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_training(pilot)
        assert screen.training_run is None
        assert screen.steps == []
        hint = str(screen.query_one("#training-hint").render())
        assert "svgagent serve" in hint
        assert "--rollouts remote" in hint
        await pilot.press("c")
        await settle(pilot)
        assert isinstance(app.screen, TrainingScreen)  # nothing to compare: a warning, not a screen


def training_ready():  # type: ignore[no-untyped-def]
    async def run_before(pilot: Pilot) -> None:
        await open_training(pilot)

    return run_before


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_training_screen(snap_compare, store: Store, size: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
    serve_steps(store, {1: [1, 0, 2], 2: [2, 2, 3], 3: [3, 3, 4], 4: [4, 3, 4]})
    assert snap_compare(jobs_app(store), terminal_size=size, run_before=training_ready())


async def test_tui_serve_runs_the_server_and_its_rollouts_stream_into_the_view(store: Store) -> None:
    import aiohttp
    from serve_support import init_body, post_init
    from tui_support import settings_for

    from svgagent.core.serve.wiring import ServeOptions, ServerThread
    from svgagent.core.sim.simulator import Simulator
    from svgagent.core.sim.tracing_gateway import TracingGateway

    with Simulator() as sim, TracingGateway(str(sim.base_url)) as gateway:
        settings = settings_for(store.path, max_retries=0, render_size=64)
        server = ServerThread(settings, ServeOptions(port=0))  # what `svgagent tui --serve` starts
        url = server.start()
        try:
            app = make_app(store, settings=settings, serve_url=url)
            async with app.run_test(size=(80, 24)) as pilot:
                await settle(pilot)
                screen = app.screen
                assert isinstance(screen, TrainingScreen)
                assert screen.serving == url
                assert screen.training_run is None
                async with aiohttp.ClientSession() as session:
                    for i in range(3):
                        status, _, _ = await post_init(
                            session, url, init_body(str(gateway.base_url), f"live-{i}", row=i)
                        )
                        assert status == 200
                await wait_until(pilot, lambda: all(gateway.status_code(f"live-{i}") is not None for i in range(3)))
                await pilot.press("r")
                await app.workers.wait_for_complete()
                await settle(pilot)
                assert screen.training_run is not None
                assert screen.training_run.rollouts == 3
                assert [(s.step, s.rollouts, s.done) for s in screen.steps] == [(1, 3, 3)]
        finally:
            server.stop()
    assert {row[0] for row in store.query("SELECT ep_rollout_id FROM served_rollouts")} == {
        "live-0",
        "live-1",
        "live-2",
    }


PLATFORM_METRICS = {
    "steps": [
        {"step": 1, "reward": 0.3, "loss": 0.2},
        {"step": 2, "reward": 0.55, "loss": 0.15, "eval_reward": 0.5},
        {"step": 3, "reward": 0.8, "loss": 0.1, "eval_reward": 0.7},
    ]
}


def curves_app(store: Store):  # type: ignore[no-untyped-def]
    import json

    running = job(JOB_ID, "RUNNING", percent=60, processed=9, total=12, display="svgagent builtin qwen3-0p6b")
    running["outputMetrics"] = json.dumps(PLATFORM_METRICS)
    return make_app(store, job_source=fake_source([running]))


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_the_platforms_curves_beside_the_local_mean_and_m_cycles_the_components(
    store: Store, size: tuple[int, int]
) -> None:
    serve_steps(store, {1: [1, 0, 2], 2: [2, 2, 3], 3: [4, 3, 4]})
    async with curves_app(store).run_test(size=size) as pilot:
        screen = await open_training(pilot)
        await wait_until(pilot, lambda: len(screen.query_one(TrainingCurves).lines) == 3)
        chart = screen.query_one(TrainingCurves)
        local, reward, evaluated = chart.lines
        assert (local.label, reward.label, evaluated.label) == ("local mean", "platform reward", "platform eval reward")
        assert reward.points == ((1, 0.3), (2, 0.55), (3, 0.8)) and evaluated.points == ((2, 0.5), (3, 0.7))
        assert chart.share and chart.size.height >= 7
        assert "platform reward" in "\n".join(line.text for line in chart.render_lines(chart.region.reset_offset))
        assert "chart: score (m: next metric)" in str(screen.query_one("#training-hint").render())
        labels = []
        for _ in chart.choices():
            await pilot.press("m")
            labels.append((chart.metric, [line.points for line in chart.lines]))
        metrics = [metric for metric, _ in labels]
        assert metrics[0] == "platform:loss" and metrics[-1] == "score"  # around and back to the score
        assert dict(labels)["platform:loss"] == [((1, 0.2), (2, 0.15), (3, 0.1))]
        assert dict(labels)["requirement_count"] == [((1, 4.0), (2, 4.0), (3, 4.0))]
        fulfilled = dict(labels)["fulfilled"][0]
        assert [v for _, v in fulfilled] == pytest.approx([1.0, 7 / 3, 11 / 3])
        assert dict(labels)["svg_found"] == [((1, 1.0), (2, 1.0), (3, 1.0))]
        assert "chart: score" in str(screen.query_one("#training-hint").render())
