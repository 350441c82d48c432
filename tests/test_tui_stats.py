"""Pilot tests of the dashboard's analysis keys: the stats screen (``i``), filtering the table by a histogram bin,
the compact histogram under the table, and the export dialog (``x``).

Runs are built by hand (test_compare's ``make_run``); expected numbers are computed here from the specs with the
statistics module and exact fractions, and exports are compared with what ``svgagent export`` writes.
"""

from __future__ import annotations

import json
import math
import os
import re
import statistics
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from factories import RUN_ID, build_run
from test_compare import make_run
from textual.widgets import Input
from tui_support import make_app, notifications, plain, settle, table_of

from svgagent.core.analysis.stats import histogram_counts
from svgagent.core.scoring.models import FailureKind, RolloutStatus
from svgagent.core.store.filter_language import parse_query
from svgagent.core.store.run_store import Store
from svgagent.core.store.typed_rows import RolloutRecord
from svgagent.screens.export_dialog import ExportDialog
from svgagent.screens.stats import StatsScreen
from svgagent.tui.cli.main import main
from svgagent.tui.widgets.histogram import Histogram, bin_of_query, bin_query

FAILED, SCORED = RolloutStatus.FAILED, RolloutStatus.SCORED
NO_SVG = {
    "status": FAILED,
    "score": 0.0,
    "fulfilled": 0,
    "is_score_valid": True,
    "reason": "no <svg> element in the answer",
    "failure_kind": FailureKind.NO_SVG,
}
JUDGE_INVALID = {
    "status": FAILED,
    "score": 0.0,
    "fulfilled": 0,
    "is_score_valid": False,
    "reason": "judge invalid: no usable answer",
    "failure_kind": FailureKind.JUDGE_UNUSABLE,
}  # has a number, but it must not count
RENDER_FAILED = {
    "status": FAILED,
    "score": None,
    "is_score_valid": False,
    "reason": "render failed: timed out",
    "failure_kind": FailureKind.RENDER,
}
OVERRIDDEN = {"status": SCORED, "score": 0.25, "fulfilled": 1, "is_score_valid": True, "override": 4}

# (row id, prompt, requirements, samples): an int is that many requirements fulfilled; None a judge outage.
ROWS: list[tuple[str, str, int, list[Any]]] = [
    ("r0", "Draw a cat", 4, [4, 3]),
    ("r1", "Draw a dog", 4, [1]),
    ("r2", "Draw a sun", 5, [2, 0]),
    ("r3", "Draw a car", 2, [None]),
    ("r4", "Draw a hat", 4, [NO_SVG, JUDGE_INVALID]),
    ("r5", "Draw a kite", 3, [RENDER_FAILED]),
    ("r6", "Draw a tree", 10, [3, 7]),
    ("r7", "Draw a bus", 4, [2]),
    ("r8", "Draw a ship", 4, [OVERRIDDEN]),
]


def expected_score(spec: Any, n: int) -> Fraction | None:
    """The score that counts for one sample, exactly, from the spec alone (None: no valid score)."""
    if isinstance(spec, int):
        return Fraction(spec, n)
    if isinstance(spec, dict) and spec.get("override") is not None:
        return Fraction(spec["override"], n)
    if isinstance(spec, dict) and spec.get("is_score_valid") and spec.get("score") is not None:
        return Fraction(spec["score"]).limit_denominator(1000)
    return None


def expected_scores_by_rollout(store: Store, run: str) -> dict[str, Fraction | None]:
    out = {}
    for rec in store.list_rollouts(run):
        _, _, n, specs = ROWS[rec.row_index]
        out[rec.rollout_id] = expected_score(specs[rec.sample_index], n)
    return out


def in_bin(score: Fraction, index: int, bins: int) -> bool:
    low, high = Fraction(index, bins), Fraction(index + 1, bins)
    return low <= score < high or (index == bins - 1 and score == high)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "runs.db") as s:
        yield s


@pytest.fixture
def run(store: Store) -> str:
    return make_run(store, ROWS, name="hand-built", threshold=0.5)


async def open_stats(pilot) -> StatsScreen:  # type: ignore[no-untyped-def]
    await pilot.press("i")
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, StatsScreen)
    assert screen.stats is not None
    return screen


async def test_stats_screen_shows_mean_median_pass_rate_and_failures(store: Store, run: str) -> None:
    scores = [float(s) for s in expected_scores_by_rollout(store, run).values() if s is not None]
    assert len(scores) == 10
    mean, stderr = statistics.fmean(scores), statistics.stdev(scores) / math.sqrt(len(scores))
    passed = sum(1 for s in scores if s >= 0.5)
    app = make_app(store, run_id=run)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = await open_stats(pilot)
        summary = plain(screen.query_one("#stats-summary"), width=120)
        assert "13 rollouts · 13 finished: 10 scored · 2 invalid · 1 failed" in summary
        assert f"mean {mean:.3f} ± {stderr:.3f} · median {statistics.median(scores):.3f}" in summary
        assert f"pass rate (score ≥ 0.5) {100 * passed / 10:.1f}% ({passed}/10)" in summary
        tables = plain(screen.query_one("#stats-tables"), width=120)
        failures = dict(
            re.findall(r"^(no SVG|render error|judge invalid|timeout|endpoint error|other|total)\s+(\d+)", tables, re.M)
        )
        assert failures == {
            "no SVG": "1",
            "render error": "1",
            "judge invalid": "1",
            "timeout": "0",
            "endpoint error": "1",
            "other": "0",
            "total": "4",
        }
        four = [
            float(s)
            for rid, s in expected_scores_by_rollout(store, run).items()
            if s is not None and ROWS[int(rid.split(".")[-2])][2] == 4
        ]
        assert re.search(rf"^4\s+{len(four)}\s+{statistics.fmean(four):.3f}\s", tables, re.M)
        assert re.search(r"^tokens\s+13\s+150\s+150\s+150", tables, re.M)
        assert "no per-requirement verdicts" in tables
        hist = screen.query_one(Histogram)
        exact = [s for s in expected_scores_by_rollout(store, run).values() if s is not None]
        assert list(hist.counts) == [sum(1 for s in exact if in_bin(s, i, 10)) for i in range(10)]
        assert hist.selected == 0  # the fullest bin (ties: the lowest)
        assert "bin [0.0, 0.1): 2 rollouts (20.0%)" in plain(screen.query_one("#stats-bin"))
        await pilot.press("escape")
        assert app.screen is app.dashboard
        assert table_of(app).query_filter.empty


async def test_per_requirement_mode_lists_the_requirements_most_often_failed(store: Store) -> None:
    def judged(*oks: bool) -> dict[str, Any]:
        verdicts = [[i, ok, "" if ok else "missing"] for i, ok in enumerate(oks, start=1)]
        return {
            "status": SCORED,
            "score": sum(oks) / len(oks),
            "fulfilled": sum(oks),
            "is_score_valid": True,
            "verdicts_json": json.dumps(verdicts),
        }

    run = make_run(
        store,
        [
            ("q0", "Draw a fox", 2, [judged(True, False), judged(False, False)]),
            ("q1", "Draw an owl", 3, [judged(True, True, False)]),
        ],
    )
    app = make_app(store, run_id=run)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = await open_stats(pilot)
        tables = plain(screen.query_one("#stats-tables"), width=120)
        assert "Requirements most often failed" in tables
        assert "3 rollouts with verdicts, 0 of them" in tables
        found = re.findall(r"^(q\d)\s+(\d)\s+(\d/\d)\s+(.+?)\s*$", tables, re.M)
        assert found == [
            ("q0", "2", "2/2", "q0: requirement 2"),
            ("q1", "3", "1/1", "q1: requirement 3"),
            ("q0", "1", "1/2", "q0: requirement 1"),
        ]  # most failures first, then the highest rate


@pytest.mark.parametrize(
    ("moves", "index"), [(("left",), 0), (("right",) * 3, 3), (("l",) * 12, 9), (("right",) * 7 + ("h",), 6)]
)
async def test_choosing_a_bin_filters_the_table_to_exactly_its_rollouts(
    store: Store, run: str, moves: tuple[str, ...], index: int
) -> None:
    expected = expected_scores_by_rollout(store, run)
    want = sorted(rid for rid, s in expected.items() if s is not None and in_bin(s, index, 10))
    app = make_app(store, run_id=run)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await open_stats(pilot)
        await pilot.press(*moves, "enter")
        await settle(pilot)
        table = table_of(app)
        assert app.screen is app.dashboard
        assert app.focused is table
        assert table.query_filter.text == bin_query(index, 10)
        assert sorted(table.visible_ids) == want
        assert app.dashboard.query_one("#score-hist", Histogram).selected == index
        await pilot.press("escape")  # clears the filter, as for any other
        assert len(table.visible_ids) == len(expected)


async def test_bins_key_cycles_the_histogram_resolution(store: Store, run: str) -> None:
    expected = expected_scores_by_rollout(store, run)
    app = make_app(store, run_id=run)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = await open_stats(pilot)
        await pilot.press("b")
        await settle(pilot)
        assert screen.stats is not None
        assert screen.stats.bins == 20
        assert screen.query_one(Histogram).bins == 20
        await pilot.press("right", "right", "right", "right", "right", "right", "enter")  # 20 bins: [0.3, 0.35)
        await settle(pilot)
        assert table_of(app).query_filter.text == "valid score>=0.3 score<0.35"
        assert sorted(table_of(app).visible_ids) == sorted(
            rid for rid, s in expected.items() if s is not None and in_bin(s, 6, 20)
        )


async def test_compact_histogram_under_the_table(store: Store, run: str) -> None:
    exact = [s for s in expected_scores_by_rollout(store, run).values() if s is not None]
    for size in ((80, 24), (120, 40)):
        app = make_app(store, run_id=run)
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            hist = app.dashboard.query_one("#score-hist", Histogram)
            assert hist.region.height == (1 if size == (80, 24) else 3)
            assert hist.region.width > 0
            assert list(hist.counts) == [sum(1 for s in exact if in_bin(s, i, 10)) for i in range(10)]
            assert hist.selected is None
            shown = "".join(hist.render().plain.split())
            assert f"median{statistics.median(float(s) for s in exact):.2f}" in shown
            assert "istats" in shown


def test_bin_queries_select_what_the_histogram_counts() -> None:
    """Pure: for every bin count, the query of each bin matches exactly the scores histogram_counts put there —
    scores on an edge included (0.3 is in [0.3, 0.4), 1.0 in the last bin)."""
    scores = sorted({Fraction(k, n) for n in range(1, 13) for k in range(n + 1)})
    for bins in (5, 10, 20):
        counts = histogram_counts([float(s) for s in scores], bins)
        for index in range(bins):
            query = parse_query(bin_query(index, bins))
            assert bin_of_query(bin_query(index, bins), bins) == index
            matched = [s for s in scores if query.matches(_scored(float(s)))]
            assert len(matched) == counts[index], (bins, index)
            assert all(in_bin(s, index, bins) for s in matched)
    assert bin_of_query("score<0.5", 10) is None


def _scored(score: float) -> RolloutRecord:
    return RolloutRecord(
        rollout_id="r.0.0",
        run_id="r",
        row_index=0,
        row_id="row_0",
        sample_index=0,
        status=RolloutStatus.SCORED,
        prompt="",
        requirements=["x"],
        total=1,
        score=score,
        is_score_valid=True,
    )


# --- export ----------------------------------------------------------------------------------------------------------


def cli_export(store: Store, run_id: str, *args: str, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    assert main(["export", run_id, "--store", str(store.path), *args]) == 0
    return capsys.readouterr().out


async def test_export_dialog_writes_what_svgagent_export_writes(
    store: Store, run: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from_cli = cli_export(store, run, capsys=capsys)  # before the app starts: it captures stdout while it runs
    app = make_app(store, run_id=run)
    exports = app.settings.exports_dir()
    assert exports.is_relative_to(app.settings.data_dir())
    assert not exports.exists()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("x")
        dialog = app.screen
        assert isinstance(dialog, ExportDialog)
        path = dialog.query_one("#export-path", Input)
        shown = exports.relative_to(Path.home()) / f"{run}.jsonl"  # the user's data dir (HOME is a tmp dir here)
        assert path.value == f"~/{shown}"
        assert path.has_focus  # not the working directory
        assert "(makes the directory)" in plain(dialog.query_one("#export-status"))
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen is app.dashboard
        written = (exports / f"{run}.jsonl").read_text(encoding="utf-8")
        assert written == from_cli
        assert list(Path.cwd().iterdir()) == []  # nothing in the working directory
        assert (exports / f"{run}.jsonl").stat().st_mode & 0o777 == 0o644  # an ordinary file, not a private one
        lines = [json.loads(line) for line in written.splitlines()]
        assert len(lines) == 13
        assert {r["execution_metadata"]["run_id"] for r in lines} == {run}
        assert any(f"13 rollouts of {run} as JSONL to {exports / f'{run}.jsonl'}" in n for n in notifications(app))


async def test_export_format_shows_without_colour(store: Store, run: str) -> None:
    from svgagent.screens.export_dialog import FormatButton

    app = make_app(store, run_id=run)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("x")
        dialog = app.screen
        assert isinstance(dialog, ExportDialog)

        def glyphs() -> str:
            return " ".join(str(button.render()).strip() for button in dialog.query(FormatButton))

        assert glyphs() == "▐●▌ JSONL (Eval Protocol rows) ▐○▌ CSV (flat table)"
        await pilot.press("ctrl+t")
        await pilot.pause()
        assert dialog.format == "csv"
        assert glyphs() == "▐○▌ JSONL (Eval Protocol rows) ▐●▌ CSV (flat table)"


async def test_export_dialog_csv_with_assets(store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build_run(store)  # six rollouts, four with a picture
    from_cli = cli_export(store, RUN_ID, "--format", "csv", "--assets", str(tmp_path / "cli-pictures"), capsys=capsys)
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("x", "ctrl+t")
        dialog = app.screen
        assert isinstance(dialog, ExportDialog)
        assert dialog.format == "csv"
        path = dialog.query_one("#export-path", Input)
        assert path.value.endswith(f"/exports/{RUN_ID}.csv")  # the extension follows the format
        path.value = str(tmp_path / "out.csv")
        dialog.query_one("#export-assets", Input).value = str(tmp_path / "pictures")
        await settle(pilot)
        status = str(dialog.query_one("#export-status").render())
        files, pictures = status.splitlines()  # each path on a line of its own, cut in its folder when long
        assert files.startswith("writes /") and files.endswith(f"{os.sep}out.csv")
        assert pictures.startswith("PNGs and SVGs to /") and pictures.endswith(f"{os.sep}pictures")
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert app.screen is app.dashboard
        assert (tmp_path / "out.csv").read_bytes().decode("utf-8") == from_cli  # byte for byte (csv lines end in CRLF)
        ours = sorted(p.name for p in (tmp_path / "pictures").iterdir())
        assert ours == sorted(p.name for p in (tmp_path / "cli-pictures").iterdir())
        assert len([n for n in ours if n.endswith(".png")]) == 4
        assert any("4 PNGs and 4 SVGs to" in n for n in notifications(app))


async def test_export_dialog_reports_a_path_it_cannot_write(store: Store, run: str, tmp_path: Path) -> None:
    app = make_app(store, run_id=run)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("x")
        dialog = app.screen
        assert isinstance(dialog, ExportDialog)
        target = tmp_path / "missing" / "out.jsonl"
        dialog.query_one("#export-path", Input).value = str(target)
        await pilot.pause()
        (line,) = plain(dialog.query_one("#export-status"), width=1000).splitlines()  # one line, the path cut inside
        assert line.startswith("no directory /tmp") and line.endswith(f"{os.sep}{target.parent.name}")
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen is dialog
        assert not target.exists()
        assert f"cannot write {target}" in plain(dialog.query_one("#export-status"), width=1000)
        assert any(f"cannot write {target}" in n for n in notifications(app))
        await pilot.press("escape")
        assert app.screen is app.dashboard
