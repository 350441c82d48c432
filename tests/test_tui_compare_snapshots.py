"""Snapshots of the compare screen and the stats screen at 80×24 and 120×40 — runs built here with fixed ids and
pictures rendered from fixed SVGs (tests/factories.py), no animations. Review the report before
`--snapshot-update`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from factories import FLAG_SVG, Spec, build_run
from textual.pilot import Pilot
from tui_support import make_app, settle

from svgagent.core.scoring.models import FailureKind, RolloutStatus
from svgagent.core.store.run_store import Store

SIZES = [(80, 24), (120, 40)]
RUN_A, RUN_B, RUN_STATS = "20260101-120000-aaaa", "20260102-120000-bbbb", "20260103-120000-stat"

NIGHT_SVG = """<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 100 100" width="100" height="100">
  <rect width="100" height="100" fill="#1b2a49"/>
  <circle cx="28" cy="24" r="10" fill="#f5f3ce"/>
  <rect y="72" width="100" height="28" fill="#2e5e3a"/>
  <polygon points="45,72 65,40 85,72" fill="#6b4226"/>
</svg>"""
WRONG_FLAG_SVG = """<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 120 80" width="120" height="80">
  <rect width="120" height="80" fill="#ffffff"/>
  <rect width="120" height="27" fill="#0055a4"/>
  <rect y="53" width="120" height="27" fill="#ef4135"/>
</svg>"""
FLAG = ("Three vertical bands.", "Blue on the left.", "Red on the right.", "White middle.")


def compare_runs_specs() -> tuple[list[Spec], list[Spec]]:
    a = [
        Spec(0, 0, fulfilled=3),
        Spec(0, 1, fulfilled=2, rationale="The sun is missing."),
        Spec(
            1,
            fulfilled=4,
            prompt="Draw the French flag",
            svg=FLAG_SVG,
            requirements=FLAG,
            rationale="All four requirements are met.",
        ),
        Spec(
            2,
            status=RolloutStatus.FAILED,
            fulfilled=0,
            svg=None,
            rationale=None,
            prompt="Draw a red bicycle",
            reason="no <svg> element in the answer",
        ),
        Spec(3, fulfilled=2, prompt="Draw a lighthouse at night", svg=NIGHT_SVG),
        Spec(4, fulfilled=1, prompt="Draw a cat sitting on a mat"),
    ]
    b = [
        Spec(0, 0, fulfilled=4, svg=NIGHT_SVG, rationale="Sky, sun, grass and a triangle: all four."),
        Spec(0, 1, fulfilled=4),
        Spec(
            1,
            fulfilled=2,
            prompt="Draw the French flag",
            svg=WRONG_FLAG_SVG,
            requirements=FLAG,
            rationale="The bands are horizontal; blue and red are top and bottom, not left and right.",
        ),
        Spec(2, fulfilled=1, prompt="Draw a red bicycle"),
        Spec(3, fulfilled=2, prompt="Draw a lighthouse at night", svg=NIGHT_SVG),
        Spec(5, fulfilled=3, prompt="Draw a sailboat on waves"),
    ]
    return a, b


def stats_specs() -> list[Spec]:
    three = ("A red circle.", "A blue square.", "A green triangle.")
    five = ("One.", "Two.", "Three.", "Four.", "Five.")
    per_req = [[1, True, "red circle"], [2, False, "the square is purple"], [3, True, "green triangle"]]
    specs = [
        Spec(
            i,
            fulfilled=f,
            requirements=three,
            prompt=f"Draw shapes {i}",
            verdicts=[[1, f >= 1, ""], [2, f >= 3, "the square is purple"], [3, f >= 2, ""]],
        )
        for i, f in enumerate([3, 2, 2, 1, 3])
    ]
    specs += [
        Spec(
            5 + i,
            fulfilled=f,
            requirements=five,
            prompt=f"Count to five {i}",
            gen_s=1.0 + i / 2,
            tokens=(100, 200 + 40 * i),
        )
        for i, f in enumerate([5, 4, 4, 3, 2, 4])
    ]
    specs += [
        Spec(11 + i, fulfilled=f, prompt=f"Landscape {i}", judge_s=0.5 + i / 10) for i, f in enumerate([4, 3, 3, 0])
    ]
    specs += [
        Spec(
            15,
            status=RolloutStatus.FAILED,
            fulfilled=None,
            valid=False,
            rationale=None,
            judge_s=None,
            reason="judge unreachable: connection refused",
            prompt="Draw a lighthouse",
            extra={"failure_kind": FailureKind.UNREACHABLE},
        ),
        Spec(
            16,
            status=RolloutStatus.FAILED,
            fulfilled=0,
            svg=None,
            rationale=None,
            judge_s=None,
            reason="no <svg> element in the answer",
            prompt="Draw a bicycle",
            extra={"failure_kind": FailureKind.NO_SVG},
        ),
        Spec(17, fulfilled=1, requirements=three, prompt="Draw shapes again", verdicts=per_req, override=2),
    ]
    return specs


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "runs.db") as s:
        a, b = compare_runs_specs()
        build_run(s, a, run_id=RUN_A, name="baseline")
        build_run(s, b, run_id=RUN_B, name="candidate")
        build_run(s, stats_specs(), run_id=RUN_STATS, name="shapes and landscapes", judge_mode="per-requirement")
        yield s


def compare_ready():  # type: ignore[no-untyped-def]
    async def run_before(pilot: Pilot) -> None:
        await settle(pilot)
        assert pilot.app.open_compare(RUN_A, RUN_B)  # type: ignore[attr-defined]
        await settle(pilot)
        await settle(pilot)

    return run_before


def stats_ready(*keys: str):  # type: ignore[no-untyped-def]
    async def run_before(pilot: Pilot) -> None:
        await settle(pilot)
        await pilot.press("i", *keys)
        await settle(pilot)

    return run_before


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_compare_screen(snap_compare, store: Store, size: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(make_app(store, run_id=RUN_A), terminal_size=size, run_before=compare_ready())


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_stats_screen(snap_compare, store: Store, size: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(make_app(store, run_id=RUN_STATS), terminal_size=size, run_before=stats_ready("right"))
