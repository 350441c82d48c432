"""The filmstrip and evaluator-health screens (screens/filmstrip.py, screens/health.py) from the training view: `p`
picks a prompt and shows its pictures at every step (h/l move, enter opens a rollout), `w` lists the health
warnings with the suspects' pictures, and the training view's health line. Pilot tests at 80×24 and 120×40,
asserting on data."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from factories import FLAG_SVG, SCENE_SVG, Spec, serve_training
from job_fakes import fake_source, job
from test_health import hack_svg
from test_tui_training import open_training as open_training_view
from textual.pilot import Pilot
from textual.widgets import OptionList
from tui_support import make_app, settle, wait_until

from svgagent.core.store.run_store import Store
from svgagent.core.terminal_text import cells
from svgagent.screens.filmstrip import FilmFrame, FilmstripScreen, RowPicker
from svgagent.screens.health import HealthScreen
from svgagent.screens.rollout_detail import RolloutDetail
from svgagent.screens.training import TrainingScreen
from svgagent.tui.widgets.health_summary import HealthSummary, summary_text
from svgagent.tui.widgets.picture import Picture

JOB_ID = "svgagent-rft-test"
SIZES = [(80, 24), (120, 40)]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "runs.db") as s:
        yield s


def colours(spec: Spec, colour: str) -> Spec:
    spec.svg = SCENE_SVG.replace("#87ceeb", colour)
    return spec


def five_steps(store: Store) -> str:
    """Row 0 at every step (two samples), row 1 at steps 1 and 5; step 3 answers row 0 with its requirements as
    text (a reward-hacking suspect)."""
    steps = {}
    for step in range(1, 6):
        specs = [colours(Spec(0, fulfilled=min(4, step - 1 + s)), ["#111111", "#222222"][s]) for s in range(2)]
        if step == 3:
            specs = [Spec(0, fulfilled=4, svg=hack_svg()), Spec(0, fulfilled=4, svg=hack_svg())]
        if step in (1, 5):
            specs.append(Spec(1, fulfilled=step - 1, prompt="Draw the French flag", svg=FLAG_SVG))
        steps[step] = specs
    return serve_training(store, steps, job_name=f"accounts/test-account/reinforcementFineTuningJobs/{JOB_ID}")


def jobs_app(store: Store):  # type: ignore[no-untyped-def]
    return make_app(store, job_source=fake_source([job(JOB_ID, "RUNNING", percent=40, processed=10, total=20)]))


async def open_training(pilot: Pilot) -> TrainingScreen:
    """The training view (test_tui_training's way there), once its health line has a report."""
    screen = await open_training_view(pilot)
    await wait_until(pilot, lambda: screen.query_one(HealthSummary).report is not None)
    await settle(pilot)
    return screen


async def open_strip(pilot: Pilot, row_index: int = 0) -> FilmstripScreen:
    await pilot.press("p")
    await settle(pilot)
    picker = pilot.app.screen
    assert isinstance(picker, RowPicker)
    assert [r.row_id for r in picker.rows] == ["row_0", "row_1"]
    picker.query_one(OptionList).highlighted = row_index
    await pilot.press("enter")
    await settle(pilot)
    strip = pilot.app.screen
    assert isinstance(strip, FilmstripScreen)
    await wait_until(pilot, lambda: strip.strip is not None)
    await settle(pilot)
    return strip


def visible_frames(screen: FilmstripScreen) -> list[tuple[str, int]]:
    """(step label, sample) of each frame on screen, left to right, as its label says."""
    out = []
    for slot in screen.query(FilmFrame):
        if slot.display and slot.frame is not None and slot.region.width:
            label = str(slot.label.render())
            out.append((label.split(" · ")[0], slot.frame.sample_index))
    return out


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_p_shows_a_prompts_pictures_at_every_step_and_hl_scroll(store: Store, size: tuple[int, int]) -> None:
    five_steps(store)
    app = jobs_app(store)
    async with app.run_test(size=size) as pilot:
        await open_training(pilot)
        screen = await open_strip(pilot)
        assert screen.strip is not None
        assert [c.label for c in screen.strip.columns] == [f"step {n}" for n in range(1, 6)]
        assert [(f.column, f.sample_index) for f in screen.strip.frames] == [(c, s) for c in range(5) for s in range(2)]
        shown = visible_frames(screen)
        fit = len(shown)
        assert fit == 3  # as many as fit: 26 cells each at 80 columns, bigger pictures at 120×40
        assert shown[0] == ("step 1", 0) and screen.selected == 0
        slot = next(iter(screen.query(FilmFrame)))
        assert str(slot.score.render()) == "0.00"
        assert "triangle is too small" in str(slot.why.render())
        for _ in range(fit):  # past the last frame shown: the strip scrolls
            await pilot.press("l")
        await settle(pilot)
        assert screen.selected == fit
        assert visible_frames(screen)[-1] == (f"step {fit // 2 + 1}", fit % 2)
        await pilot.press("h", "h")
        assert screen.selected == fit - 2
        await pilot.press("end")
        await settle(pilot)
        assert visible_frames(screen)[-1] == ("step 5", 1)
        await pilot.press("enter")  # the highlighted frame on the rollout screen
        await settle(pilot)
        detail = app.screen
        assert isinstance(detail, RolloutDetail)
        assert detail.rollout_id == screen.strip.frames[-1].rollout_id
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is screen


async def test_a_prompt_at_two_steps_and_the_picture_of_each_frame(store: Store) -> None:
    five_steps(store)
    app = jobs_app(store)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_training(pilot)
        screen = await open_strip(pilot, row_index=1)  # row 1: steps 1 and 5 only
        assert screen.strip is not None and [c.label for c in screen.strip.columns] == ["step 1", "step 5"]
        assert visible_frames(screen) == [("step 1", 0), ("step 5", 0)]
        await settle(pilot)
        pictures = [slot.picture for slot in screen.query(FilmFrame) if slot.display]
        assert [p.rollout_id for p in pictures] == [f.rollout_id for f in screen.strip.frames]
        assert all(p.image is not None for p in pictures)  # drawn


async def test_new_steps_join_the_strip_while_it_is_open(store: Store) -> None:
    serve_training(store, {1: [Spec(0, fulfilled=1)]})
    app = jobs_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_training(pilot)
        await pilot.press("p")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, FilmstripScreen)
        await wait_until(pilot, lambda: screen.strip is not None)
        serve_training(store, {2: [Spec(0, fulfilled=3)]})
        await pilot.press("r")
        await wait_until(pilot, lambda: screen.strip is not None and len(screen.strip.frames) == 2)
        assert [c.label for c in screen.strip.columns] == ["step 1", "step 2"]


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_the_health_line_warns_and_w_lists_the_suspects_with_pictures(
    store: Store, size: tuple[int, int]
) -> None:
    five_steps(store)
    app = jobs_app(store)
    async with app.run_test(size=size) as pilot:
        training = await open_training(pilot)
        summary = training.query_one(HealthSummary)
        report = summary.report
        assert report is not None
        # step 3: 4 and 4, and text; row 0's sample 0 draws the same picture at steps 1 and 5, scored 0 then 4
        assert [w.check for w in report.warnings] == ["flat_groups", "text_suspects", "unchanged_rise"]
        assert str(summary_text(report)).startswith(
            "⚠ no learning signal (steps 3,5); reward-hacking suspects 2 (step 3); score up, picture unchanged (step 5)"
        )
        line = str(summary.render())  # on screen: cut to the line's width, the key to the details kept
        assert line.endswith("… · w: details") and cells(line) <= summary.content_size.width
        assert str(summary_text(report)).startswith(line.removesuffix("… · w: details"))
        await pilot.press("w")
        await settle(pilot)
        health = app.screen
        assert isinstance(health, HealthScreen)
        findings = health.query_one("#health-findings", OptionList)
        suspects = [s.rollout_id for s in report.text_suspects]
        assert health.highlighted_rollout() == suspects[0]  # the first rollout listed, its picture beside
        await wait_until(pilot, lambda: health.query_one("#health-picture", Picture).image is not None)
        assert health.query_one("#health-picture", Picture).rollout_id == suspects[0]
        assert "row_0 · score 1.00" in str(health.query_one("#health-caption").render())
        await pilot.press("down")
        assert health.highlighted_rollout() == suspects[1]
        assert findings.highlighted is not None
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, RolloutDetail) and app.screen.rollout_id == suspects[1]


async def test_a_healthy_training_says_so(store: Store) -> None:
    serve_training(
        store,
        {1: [colours(Spec(0, fulfilled=1), "#111111"), colours(Spec(0, fulfilled=2), "#222222")]},
    )
    app = jobs_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        training = await open_training(pilot)
        summary = training.query_one(HealthSummary)
        assert str(summary.render()) == "evaluator health: no warning"
        await pilot.press("w")
        await settle(pilot)
        assert isinstance(app.screen, HealthScreen)
        assert app.screen.highlighted_rollout() is None


async def test_the_stats_screen_of_a_step_shows_its_trainings_health(store: Store) -> None:
    from svgagent.core.serve.training_runs import TrainingStore
    from svgagent.screens.stats import StatsScreen

    training = five_steps(store)
    first = TrainingStore(store).step_refs(training)[0].run_id
    app = make_app(store, run_id=first)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("i")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, StatsScreen)
        summary = screen.query_one(HealthSummary)
        await wait_until(pilot, lambda: summary.report is not None)
        assert summary.report is not None and len(summary.report.steps) == 5  # the training's, not the run's one
        text = str(summary.render())
        assert "⚠ reward-hacking suspects: 2 pictures mostly text or repeating the requirements" in text
        assert text.count("⚠") == 3


async def test_the_run_picker_shows_a_prompt_across_runs_a_and_b(store: Store) -> None:
    from factories import build_run

    from svgagent.screens.run_picker import RunPicker

    base = build_run(store, [Spec(0, fulfilled=1), Spec(1, fulfilled=2)], run_id="20260101-120000-base", name="base")
    tuned = build_run(store, [Spec(0, fulfilled=4, svg=FLAG_SVG)], run_id="20260101-130000-tuned", name="tuned")
    app = make_app(store, run_id=base)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("o")
        await settle(pilot)
        picker = app.screen
        assert isinstance(picker, RunPicker)
        runs = picker.query_one("#runs", OptionList)
        ids = [runs.get_option_at_index(i).id for i in range(runs.option_count)]
        runs.highlighted = ids.index(base)
        await pilot.press("a")
        runs.highlighted = ids.index(tuned)
        await pilot.press("p")  # B: the highlighted run
        await settle(pilot)
        assert isinstance(app.screen, RowPicker)
        await pilot.press("enter")  # row_0, the first
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, FilmstripScreen)
        await wait_until(pilot, lambda: screen.strip is not None)
        assert screen.strip is not None
        assert [c.label for c in screen.strip.columns] == ["A · base", "B · tuned"]
        assert [f.score for f in screen.strip.frames] == [0.25, 1.0]
