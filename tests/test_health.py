"""Evaluator health (core/analysis/health.py, picture_traits.py): each check on rollouts built to trip it and on
rollouts built not to, stored with tests/factories.py as runs of a run store, one run per step."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from unittest import mock

import pytest
from factories import FLAG_SVG, REQUIREMENTS, SCENE_SVG, Spec, build_run

from svgagent.core.analysis import health
from svgagent.core.analysis.health import HealthTracker, StepRef, run_health
from svgagent.core.analysis.picture_traits import similarity, text_traits, thumbnail
from svgagent.core.scoring.models import FailureKind, RolloutStatus
from svgagent.core.store.run_store import Store

SUN_SVG = """<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 100 100" width="100" height="100">
  <rect width="100" height="100" fill="#ffffff"/><circle cx="50" cy="50" r="30" fill="#ffcc00"/>
</svg>"""
LABELLED_SVG = """<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 256 256" width="256" height="256">
  <rect width="256" height="256" fill="#87ceeb"/><circle cx="200" cy="50" r="30" fill="#ffcc00"/>
  <rect y="180" width="256" height="76" fill="#228b22"/>
  <text x="10" y="20" font-size="10">grass</text>
</svg>"""


def hack_svg(requirements: Sequence[str] = REQUIREMENTS) -> str:
    """What the demo's reward-hacking policy answers: the requirements written out on coloured bars."""
    lines = [
        f'<rect x="4" y="{8 + i * 30}" width="248" height="28" fill="#e2ece9"/>'
        f'<text x="10" y="{28 + i * 30}" font-family="sans-serif" font-size="14">{i + 1}. {r}</text>'
        for i, r in enumerate(requirements)
    ]
    return (
        '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 256 256" width="256" height="256">'
        '<rect width="256" height="256" fill="#fde2e4"/>' + "".join(lines) + "</svg>"
    )


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "runs.db") as s:
        yield s


def steps_of(store: Store, runs: dict[int, list[Spec]]) -> list[StepRef]:
    """One run per step, each built from its specs (rows keep their index across the steps, as in a training)."""
    refs = []
    for step, specs in runs.items():
        run_id = build_run(store, specs, run_id=f"20260101-12000{step}-step", name=f"step {step}")
        refs.append(StepRef(step, run_id))
    return refs


def own_svgs(specs: list[Spec]) -> list[Spec]:
    """Each row its own drawing (so the same-SVG check stays out of what a test looks at)."""
    colours = ["#e63946", "#2a9d8f", "#264653", "#f4a261", "#8338ec", "#118ab2"]
    for spec in specs:
        colour = colours[spec.row % len(colours)]
        spec.svg = SCENE_SVG.replace("#87ceeb", colour)
    return specs


def checks(report: health.HealthReport) -> set[str]:
    return {w.check for w in report.warnings}


# --- flat groups -------------------------------------------------------------------------------------------------


def test_groups_whose_samples_all_score_alike_are_a_share_per_step_and_warn(store: Store) -> None:
    flat = own_svgs([Spec(row, sample, fulfilled=2) for row in range(3) for sample in range(3)])
    mixed = own_svgs([Spec(row, sample, fulfilled=sample + row % 2) for row in range(3) for sample in range(3)])
    report = run_health(store, steps_of(store, {1: mixed, 2: flat}))
    assert [(s.step, s.groups, s.flat_groups, s.flat_share) for s in report.steps] == [(1, 3, 0, 0.0), (2, 3, 3, 1.0)]
    (warning,) = [w for w in report.warnings if w.check == "flat_groups"]
    assert warning.steps == (2,)
    assert "3/3" in warning.message


def test_groups_with_spread_scores_raise_no_flat_warning(store: Store) -> None:
    specs = own_svgs([Spec(row, sample, fulfilled=(row + sample) % 4) for row in range(4) for sample in range(2)])
    specs.append(Spec(9, 0, fulfilled=3))  # a prompt with one sample is no group
    report = run_health(store, steps_of(store, {1: specs}))
    assert report.steps[0].groups == 4 and report.steps[0].flat_groups == 0
    assert "flat_groups" not in checks(report)


# --- invalid scores ----------------------------------------------------------------------------------------------


def failed_invalid(row: int, sample: int) -> Spec:
    return Spec(
        row,
        sample,
        status=RolloutStatus.FAILED,
        fulfilled=None,
        valid=False,
        rationale=None,
        reason="judge unreachable",
        extra={"failure_kind": FailureKind.UNREACHABLE},
    )


def test_a_step_with_many_invalid_scores_warns(store: Store) -> None:
    specs = own_svgs([Spec(0, 0, fulfilled=1), Spec(1, 0, fulfilled=2), failed_invalid(2, 0), failed_invalid(3, 0)])
    report = run_health(store, steps_of(store, {1: specs}))
    step = report.steps[0]
    assert (step.finished, step.invalid, step.invalid_share) == (4, 2, 0.5)
    (warning,) = [w for w in report.warnings if w.check == "invalid_scores"]
    assert "2/4" in warning.message


def test_a_valid_zero_and_a_queued_rollout_are_not_invalid_scores(store: Store) -> None:
    no_svg = Spec(
        1, status=RolloutStatus.FAILED, fulfilled=0, svg=None, extra={"failure_kind": FailureKind.NO_SVG}
    )  # the model's valid 0
    queued = Spec(2, status=RolloutStatus.QUEUED, fulfilled=None, svg=None, rationale=None)
    specs = own_svgs([Spec(0, fulfilled=3)])
    report = run_health(store, steps_of(store, {1: [*specs, no_svg, queued]}))
    assert (report.steps[0].finished, report.steps[0].invalid) == (2, 0)
    assert "invalid_scores" not in checks(report)


# --- the same SVG for different prompts -------------------------------------------------------------------------


def test_the_same_svg_for_different_prompts_is_listed_with_its_rollouts(store: Store) -> None:
    specs = [
        Spec(0, fulfilled=3, prompt="Draw a landscape"),
        Spec(1, fulfilled=1, prompt="Draw a bicycle", svg="  " + SCENE_SVG.replace("\n", "\n    ")),  # re-indented
        Spec(2, fulfilled=2, prompt="Draw a flag", svg=FLAG_SVG),
    ]
    report = run_health(store, steps_of(store, {1: specs}))
    (same,) = report.same_svg
    assert same.rows == ("row_0", "row_1")
    assert same.rollouts == 2 and len(same.rollout_ids) == 2
    assert "same_svg" in checks(report)


def test_the_same_svg_for_one_prompt_across_samples_and_steps_is_fine(store: Store) -> None:
    report = run_health(
        store,
        steps_of(
            store,
            {
                1: [Spec(0, 0, fulfilled=1), Spec(0, 1, fulfilled=2), Spec(1, 0, fulfilled=2, svg=FLAG_SVG)],
                2: [Spec(0, 0, fulfilled=2), Spec(1, 0, fulfilled=3, svg=FLAG_SVG)],
            },
        ),
    )
    assert report.same_svg == ()
    assert "same_svg" not in checks(report)


# --- reward-hacking suspects: text --------------------------------------------------------------------------------


def test_a_picture_of_the_requirements_written_out_is_a_suspect(store: Store) -> None:
    specs = [Spec(0, fulfilled=4, svg=hack_svg()), Spec(1, fulfilled=3, svg=LABELLED_SVG)]
    report = run_health(store, steps_of(store, {1: specs}))
    (suspect,) = report.text_suspects
    assert suspect.row_id == "row_0" and suspect.score == 1.0
    assert suspect.why == "mostly text and repeats the requirements"
    (warning,) = [w for w in report.warnings if w.check == "text_suspects"]
    assert warning.rollout_ids == (suspect.rollout_id,)  # the screen shows its picture


def test_a_drawing_with_a_short_label_is_no_suspect(store: Store) -> None:
    specs = [Spec(0, fulfilled=3, svg=LABELLED_SVG), Spec(1, fulfilled=3, svg=SUN_SVG), Spec(2, fulfilled=3)]
    report = run_health(store, steps_of(store, {1: specs}))
    assert report.text_suspects == ()
    assert "text_suspects" not in checks(report)


def test_text_traits_measure_text_and_its_echo_of_the_requirements() -> None:
    hack = text_traits(hack_svg(), list(REQUIREMENTS))
    assert hack.chars > 80 and hack.area_share > 0.15
    assert hack.echo_share == 1.0  # every requirement word is written out
    label = text_traits(LABELLED_SVG, list(REQUIREMENTS))
    assert label.chars == 5 and label.area_share < 0.01 and label.echoed == 1  # "grass"
    assert text_traits(SUN_SVG, list(REQUIREMENTS)).chars == 0
    # not well-formed (an unquoted attribute, as a broken answer has): read by pattern, at 16 px
    broken = '<svg viewBox="0 0 100 100"><rect fill=red/><text x="1">The sky is light blue</text></svg>'
    assert text_traits(broken, list(REQUIREMENTS)).chars == len("Theskyislightblue")


# --- score rising while the picture barely changes ----------------------------------------------------------------


def test_the_same_picture_scored_higher_later_is_flagged(store: Store) -> None:
    first = own_svgs([Spec(0, s, fulfilled=1) for s in range(2)] + [Spec(1, s, fulfilled=1) for s in range(2)])
    last = own_svgs([Spec(0, s, fulfilled=4) for s in range(2)] + [Spec(1, s, fulfilled=1) for s in range(2)])
    report = run_health(store, steps_of(store, {1: first, 2: last}))
    (rise,) = report.unchanged_rises
    assert (rise.row_id, rise.first_step, rise.last_step) == ("row_0", 1, 2)
    assert (rise.mean_first, rise.mean_last) == (0.25, 1.0)
    assert rise.similarity == 1.0 and rise.same_picture_rise == 0.75
    assert "unchanged_rise" in checks(report)


def test_a_rise_with_a_new_picture_or_the_good_picture_more_often_is_not_flagged(store: Store) -> None:
    first = [
        Spec(0, 0, fulfilled=1, svg=SUN_SVG),  # row 0: a new picture later
        Spec(0, 1, fulfilled=1, svg=SUN_SVG),
        Spec(1, 0, fulfilled=4, svg=FLAG_SVG),  # row 1: its good picture, and a bad one
        Spec(1, 1, fulfilled=0, svg=SUN_SVG),
    ]
    last = [
        Spec(0, 0, fulfilled=4, svg=SCENE_SVG),
        Spec(0, 1, fulfilled=4, svg=SCENE_SVG),
        Spec(1, 0, fulfilled=4, svg=FLAG_SVG),  # the good picture every time: its score did not change
        Spec(1, 1, fulfilled=4, svg=FLAG_SVG),
    ]
    report = run_health(store, steps_of(store, {1: first, 2: last}))
    assert report.unchanged_rises == ()
    assert "unchanged_rise" not in checks(report)


def test_thumbnails_tell_the_same_picture_from_another() -> None:
    from factories import render_png

    scene, flag = thumbnail(render_png(SCENE_SVG)), thumbnail(render_png(FLAG_SVG))
    assert scene is not None and flag is not None
    assert similarity(scene, scene) == 1.0
    assert similarity(scene, thumbnail(render_png(SCENE_SVG, 64)) or b"") > 0.97  # the same, at another size
    assert similarity(scene, flag) < 0.9
    assert thumbnail(b"not a png") is None


# --- the tracker ------------------------------------------------------------------------------------------------


def test_the_tracker_reads_again_only_the_rollouts_that_changed(store: Store) -> None:
    refs = steps_of(store, {1: own_svgs([Spec(row, fulfilled=2) for row in range(4)])})
    tracker = HealthTracker()
    with (
        mock.patch.object(health, "text_traits", wraps=health.text_traits) as read,
        mock.patch.object(health, "thumbnail", wraps=health.thumbnail) as pictures,
    ):
        tracker.update(store, refs)
        assert read.call_count == 4
        tracker.update(store, refs)
        assert read.call_count == 4  # nothing changed: nothing read again
        store.update_rollout(f"{refs[0].run_id}.2.0", svg=hack_svg())
        report = tracker.update(store, refs)
        assert read.call_count == 5
        assert [s.row_id for s in report.text_suspects] == ["row_2"]
        assert pictures.call_count == 0  # one step: no score rose, no picture decoded
        more = steps_of(store, {2: own_svgs([Spec(0, fulfilled=4), Spec(1, fulfilled=2)])})
        report = tracker.update(store, [*refs, *more])
        assert [s.step for s in report.steps] == [1, 2] and report.steps[1].rollouts == 2
        assert pictures.call_count == 2  # row 0 rose: its first and last pictures, not row 1's
        assert [r.row_id for r in report.unchanged_rises] == ["row_0"]
        tracker.update(store, [*refs, *more])
        assert pictures.call_count == 2  # decoded once


def test_no_scores_yet_says_so_and_warns_of_nothing(store: Store) -> None:
    specs = [Spec(0, status=RolloutStatus.QUEUED, fulfilled=None, svg=None, rationale=None)]
    report = run_health(store, steps_of(store, {1: specs}))
    assert report.ok and report.lines() == ["evaluator health: no scored rollouts yet"]
    data = report.to_dict()
    assert data["ok"] is True and data["steps"][0]["rollouts"] == 1


# --- the command line ---------------------------------------------------------------------------------------------


def test_runs_stats_reads_the_health_of_the_whole_training_a_step_belongs_to(
    store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    from factories import serve_training

    from svgagent.core.serve.training_runs import TrainingStore
    from svgagent.tui.cli.main import main

    training = serve_training(
        store,
        {
            1: own_svgs([Spec(0, fulfilled=1), Spec(0, fulfilled=2), Spec(1, fulfilled=2), Spec(1, fulfilled=3)]),
            2: [Spec(0, fulfilled=4, svg=hack_svg()), Spec(0, fulfilled=4, svg=hack_svg())],
        },
    )
    first = TrainingStore(store).step_refs(training)[0].run_id
    db = str(store.path)
    assert main(["runs", "stats", first, "--json", "--store", db]) == 0
    data = json.loads(capsys.readouterr().out)["health"]
    assert (data["scope"], data["training_id"], data["step_count"]) == ("training", training, 2)
    assert [w["check"] for w in data["warnings"]] == ["flat_groups", "text_suspects"]  # step 2: 4 and 4
    assert [s["step"] for s in data["text_suspects"]] == [2, 2]
    assert main(["runs", "stats", first, "--store", db]) == 0
    text = capsys.readouterr().out
    assert f"evaluator health over the 2 steps of training {training}" in text
    assert "⚠ reward-hacking suspects: 2 pictures" in text
    assert data["text_suspects"][0]["rollout_id"] in text
    assert main(["runs", "show", first, "--store", db]) == 0
    assert "⚠ reward-hacking suspects" in capsys.readouterr().out
    assert main(["runs", "show", first, "--json", "--store", db]) == 0
    assert json.loads(capsys.readouterr().out)["run"]["health"]["ok"] is False


def test_runs_stats_of_a_healthy_plain_run_says_no_warning(store: Store, capsys: pytest.CaptureFixture[str]) -> None:
    from svgagent.tui.cli.main import main

    (ref,) = steps_of(store, {1: own_svgs([Spec(row, s, fulfilled=row + s) for row in range(3) for s in range(2)])})
    assert main(["runs", "stats", ref.run_id, "--json", "--store", str(store.path)]) == 0
    data = json.loads(capsys.readouterr().out)["health"]
    assert (data["scope"], data["ok"], data["warnings"]) == ("run", True, [])
    assert main(["runs", "stats", ref.run_id, "--store", str(store.path)]) == 0
    assert "evaluator health over this run (one step)\nevaluator health: no warning" in capsys.readouterr().out


@pytest.mark.parametrize("width", [60, 78, 118])
async def test_the_health_line_keeps_the_key_to_its_details_whatever_its_width(width: int, tmp_path: Path) -> None:
    """At 80 columns the line lost its "· w: details" tail: the warnings are cut (…, between words) instead."""
    from textual.app import App, ComposeResult

    from svgagent.core.analysis.health import HealthReport, HealthWarning
    from svgagent.tui.widgets.health_summary import HealthSummary

    report = HealthReport(
        steps=(),
        same_svg=(),
        text_suspects=(),
        unchanged_rises=(),
        warnings=(
            HealthWarning("flat_groups", "m", steps=(1, 2, 3, 4, 5, 6)),
            HealthWarning("same_svg", "m", steps=(2, 3)),
            HealthWarning("text_suspects", "m", steps=(4,), rollout_ids=("a", "b", "c")),
            HealthWarning("unchanged_rise", "m", steps=(5, 6)),
        ),
        judged=12,
    )

    class One(App[None]):
        def compose(self) -> ComposeResult:
            yield HealthSummary(Store(tmp_path / "runs.db"), id="health")

    app = One()
    async with app.run_test(size=(width + 2, 5)) as pilot:
        line = app.query_one(HealthSummary)
        line._show(report)
        await pilot.pause()
        shown = str(line.render())
        assert shown.endswith(" · w: details")
        assert len(shown) <= line.content_size.width
        assert shown.startswith("⚠ no learning signal (steps 1,2,3,4…)")
        if width < 100:
            assert "…" in shown.removeprefix("⚠ no learning signal (steps 1,2,3,4…)")  # cut before the key
