"""`svgagent runs stats` and svgagent.core.analysis.stats: histogram, summary statistics, failure categories, percentiles
and the requirements most often failed. Expected numbers come from the statistics module and the specs."""

from __future__ import annotations

import json
import math
import statistics
from fractions import Fraction
from pathlib import Path

import httpx
import openai
import pytest
from test_compare import make_run

from svgagent.core.analysis.stats import (
    CATEGORY_OF_KIND,
    FailureCategory,
    bar,
    classify_failure,
    compute_stats,
    histogram_counts,
    histogram_lines,
    percentile,
    run_stats,
)
from svgagent.core.config.settings import load_settings
from svgagent.core.run.policy import classify_api_error
from svgagent.core.run.prompt import format_prompt
from svgagent.core.scoring.extract import NO_SVG
from svgagent.core.scoring.models import FailureKind, RolloutStatus
from svgagent.core.store.run_store import Store
from svgagent.tui.cli.main import main

FAILED = RolloutStatus.FAILED


@pytest.fixture
def store(tmp_path: Path) -> Store:
    with Store(tmp_path / "runs.db") as s:
        yield s


# --- histogram -------------------------------------------------------------------------------------------------------


def exact_counts(scores: list[Fraction], bins: int) -> list[int]:
    """Bins [i/bins, (i+1)/bins), the last one closed, with exact fractions."""
    counts = [0] * bins
    for s in scores:
        for i in range(bins):
            low, high = Fraction(i, bins), Fraction(i + 1, bins)
            if low <= s < high or (i == bins - 1 and s == high):
                counts[i] += 1
                break
    return counts


@pytest.mark.parametrize("bins", [1, 3, 4, 5, 7, 10, 20, 100])
def test_histogram_counts_match_exact_bins(bins: int) -> None:
    scores = [Fraction(k, n) for n in range(1, 16) for k in range(0, n + 1)]
    assert histogram_counts([float(s) for s in scores], bins) == exact_counts(scores, bins)


def test_histogram_edges_and_out_of_range_scores() -> None:
    assert histogram_counts([0.0, 0.1, 0.0999, 1.0, 0.57], 10) == [2, 1, 0, 0, 0, 1, 0, 0, 0, 1]
    assert histogram_counts([0.57], 100)[57] == 1
    assert histogram_counts([-0.5, 1.5], 4) == [1, 0, 0, 1]  # unclamped judges: counted at the ends
    with pytest.raises(ValueError):
        histogram_counts([0.5], 0)


def test_bar_is_drawn_to_an_eighth_of_a_cell() -> None:
    assert bar(3, 3, 10) == "█" * 10
    eighths = round(8 * 10 / 3)  # 26.67 → 27 eighths: 3 full cells and 3/8
    assert bar(1, 3, 10) == "█" * (eighths // 8) + "▍"
    assert bar(0, 3, 10) == ""
    assert bar(1, 1000, 4) == "▏"  # a non-zero count is never invisible


def test_histogram_lines() -> None:
    scores = [0.0, 0.05, 0.5, 0.5, 0.55, 1.0, 1.0, 1.0]
    lines = histogram_lines(scores, 5, width=12)
    assert len(lines) == 5
    assert lines[0].startswith("0.0–0.2 │")
    assert lines[-1].startswith("0.8–1.0 │")
    counts = exact_counts([Fraction(s).limit_denominator(100) for s in scores], 5)
    for line, count in zip(lines, counts):
        drawn = line.split("│")[1]
        assert len(drawn) == 12  # padded to the bar width: columns line up
        assert drawn.rstrip() == bar(count, max(counts), 12)
        assert line.split("│")[2].split()[0] == str(count)
        assert line.endswith(f"{100 * count / len(scores):.1f}%")
    assert lines[2].split("│")[1] == "█" * 12  # the largest bin fills the width
    assert histogram_lines([], 3) == [
        "0.0–0.3 │" + " " * 40 + "│ 0     –",
        "0.3–0.7 │" + " " * 40 + "│ 0     –",
        "0.7–1.0 │" + " " * 40 + "│ 0     –",
    ]


# --- failure categories ----------------------------------------------------------------------------------------------


def _api_errors() -> list[tuple[BaseException, str, FailureCategory]]:
    request = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    response = httpx.Response(503, request=request)
    return [
        (openai.APITimeoutError(request=request), "policy", FailureCategory.TIMEOUT),
        (openai.APITimeoutError(request=request), "judge", FailureCategory.TIMEOUT),
        (openai.APIConnectionError(request=request), "judge", FailureCategory.ENDPOINT_ERROR),
        (
            openai.InternalServerError("overloaded", response=response, body=None),
            "policy",
            FailureCategory.ENDPOINT_ERROR,
        ),
        (
            openai.RateLimitError("slow down", response=httpx.Response(429, request=request), body=None),
            "policy",
            FailureCategory.ENDPOINT_ERROR,
        ),
        (
            openai.AuthenticationError("bad key", response=httpx.Response(401, request=request), body=None),
            "judge",
            FailureCategory.ENDPOINT_ERROR,
        ),
    ]


def test_the_engines_failure_kinds_fall_in_their_categories() -> None:
    settings = load_settings()
    for err, who, category in _api_errors():
        kind, _ = classify_api_error(err, who, settings)
        assert classify_failure(kind) is category, kind
    assert classify_failure(FailureKind.NO_SVG) is FailureCategory.NO_SVG
    assert classify_failure(FailureKind.RENDER) is FailureCategory.RENDER_ERROR
    assert classify_failure(FailureKind.JUDGE_UNUSABLE) is FailureCategory.JUDGE_INVALID
    assert classify_failure(FailureKind.BAD_RESPONSE) is FailureCategory.ENDPOINT_ERROR
    assert classify_failure(FailureKind.INTERNAL) is FailureCategory.OTHER
    assert classify_failure(None) is FailureCategory.OTHER
    assert set(CATEGORY_OF_KIND) == set(FailureKind)  # every kind has its category


def test_failures_are_counted_by_their_stored_kind_not_their_words(store: Store) -> None:
    """Issue 10 item 18: the reason is prose for a person; the category comes from the typed kind stored with the
    rollout. Each of these reasons says something else than its kind."""
    misleading = [
        ("endpoint unreachable: connect timed out", FailureKind.UNREACHABLE),  # not a request timeout
        ("render failed: render timed out after 10 s", FailureKind.RENDER),
        ("took too long", FailureKind.TIMEOUT),  # no word of a timeout in it
        ("no SVG, says the endpoint's error page", FailureKind.HTTP_ERROR),
        ("judge endpoint unreachable, then no usable answer", FailureKind.JUDGE_UNUSABLE),
    ]
    run = make_run(
        store,
        [
            (
                "row_0",
                "Draw a cat",
                2,
                [
                    {
                        "status": FAILED,
                        "is_score_valid": kind.is_model_fault,
                        "score": 0.0 if kind.is_model_fault else None,
                        "reason": reason,
                        "error": reason,
                        "failure_kind": kind,
                    }
                    for reason, kind in misleading
                ],
            )
        ],
    )
    s = run_stats(store, run)
    assert s.failures == {
        "no SVG": 0,
        "render error": 1,
        "judge invalid": 1,
        "timeout": 1,
        "endpoint error": 2,
        "other": 0,
    }


def test_imported_failures_get_their_kind_from_the_status_code(store: Store, tmp_path: Path) -> None:
    rows = [
        {"rollout_status": {"code": 4, "message": "took too long"}},  # DEADLINE_EXCEEDED
        {"rollout_status": {"code": 14, "message": "x"}},  # UNAVAILABLE
        {"evaluation_result": {"score": 0.0, "is_score_valid": False, "reason": "bad"}},  # no error code
    ]
    lines = [
        json.dumps(
            {
                "messages": [
                    {"role": "user", "content": format_prompt(f"Draw {i}", ["a circle"])},
                    {"role": "assistant", "content": "<svg/>"},
                ],
                **row,
            }
        )
        for i, row in enumerate(rows)
    ]
    (tmp_path / "in.jsonl").write_text("\n".join(lines) + "\n")
    assert main(["import", str(tmp_path / "in.jsonl"), "--store", str(store.path)]) == 0
    (run,) = [r.run_id for r in store.list_runs()]
    kinds = sorted(str(r.failure_kind) for r in store.list_rollouts(run))
    assert kinds == ["judge_unusable", "timeout", "unreachable"]
    s = run_stats(store, run)
    assert (s.failures["timeout"], s.failures["endpoint error"], s.failures["judge invalid"]) == (1, 1, 1)


# --- the whole report ------------------------------------------------------------------------------------------------

ROWS = [
    ("row_0", "Draw a cat", 4, [4, 3, 1]),
    ("row_1", "Draw a dog", 5, [0, 5, None]),
    (
        "row_2",
        "Draw a sun",
        2,
        [
            1,
            {
                "status": FAILED,
                "score": 0.0,
                "fulfilled": 0,
                "is_score_valid": True,
                "reason": NO_SVG,
                "generation_s": 9.0,
                "failure_kind": FailureKind.NO_SVG,
            },
        ],
    ),
    (
        "row_3",
        "Draw a car",
        4,
        [
            {
                "status": FAILED,
                "score": 0.0,
                "fulfilled": 0,
                "is_score_valid": True,
                "reason": "render failed: SVG is empty",
                "failure_kind": FailureKind.RENDER,
            },
            {
                "status": FAILED,
                "is_score_valid": False,
                "reason": "policy request timed out after 120 s (3 retries)",
                "error": "policy request timed out after 120 s",
                "failure_kind": FailureKind.TIMEOUT,
            },
            {
                "status": FAILED,
                "is_score_valid": False,
                "reason": "The judge gave no usable answer after 2 attempts: not JSON.",
                "error": "judge gave no usable answer",
                "failure_kind": FailureKind.JUDGE_UNUSABLE,
            },
        ],
    ),
    (
        "row_4",
        "Draw a hat",
        5,
        [
            {"status": RolloutStatus.SCORED, "score": 0.2, "fulfilled": 1, "is_score_valid": True, "override": 4},
            {"status": RolloutStatus.QUEUED, "generation_s": None, "prompt_tokens": None, "completion_tokens": None},
        ],
    ),
]


def expected_scores() -> list[float]:
    return [x for (_, _, n, specs) in ROWS for x in expected_for(specs, n)]


def test_summary_statistics(store: Store) -> None:
    run = make_run(store, ROWS, threshold=0.6)
    s = run_stats(store, run)
    scores = expected_scores()
    assert s.rollouts == 13
    assert s.terminal == 12
    assert s.valid == len(scores) == 9
    assert s.mean == pytest.approx(statistics.fmean(scores))
    assert s.stderr == pytest.approx(statistics.stdev(scores) / math.sqrt(len(scores)))
    assert s.median == pytest.approx(statistics.median(scores))
    assert s.threshold == 0.6  # the run's own threshold
    assert s.passed == sum(1 for x in scores if x >= 0.6)
    assert s.pass_rate == pytest.approx(s.passed / len(scores))
    assert list(s.histogram) == exact_counts([Fraction(x).limit_denominator(100) for x in scores], 10)
    assert s.failures == {
        "no SVG": 1,
        "render error": 1,
        "judge invalid": 1,
        "timeout": 1,
        "endpoint error": 1,
        "other": 0,
    }
    assert list(s.failures) == [c.value for c in FailureCategory]
    by_count = {g.key: g for g in s.by_requirement_count}
    for n in (2, 4, 5):
        group = [x for (_, _, total, specs) in ROWS if total == n for x in expected_for(specs, total)]
        assert by_count[n].n == len(group)
        assert by_count[n].mean == pytest.approx(statistics.fmean(group))
        assert by_count[n].stderr == pytest.approx(statistics.stdev(group) / math.sqrt(len(group)))
    assert run_stats(store, run, threshold=0.0).pass_rate == 1.0


def expected_for(specs: list, n: int) -> list[float]:  # type: ignore[type-arg]
    out = []
    for spec in specs:
        if isinstance(spec, int):
            out.append(spec / n)
        elif isinstance(spec, dict) and spec.get("override") is not None:
            out.append(spec["override"] / n)
        elif isinstance(spec, dict) and spec.get("is_score_valid"):
            out.append(spec["score"])
    return out


def test_percentiles_match_statistics_quantiles(store: Store) -> None:
    run = make_run(store, ROWS)
    rollouts = store.list_rollouts(run)
    s = compute_stats(rollouts)
    gens = [r.generation_s for r in rollouts if r.generation_s is not None]
    cuts = statistics.quantiles(gens, n=100, method="inclusive")
    p = s.percentiles["generation_s"]
    assert p.n == len(gens) == 12
    assert (p.p50, p.p90, p.p99) == pytest.approx((cuts[49], cuts[89], cuts[98]))
    judge = s.percentiles["judge_s"]
    assert judge.n == 6
    assert judge.p50 == pytest.approx(0.5)
    tokens = s.percentiles["tokens"]
    assert tokens.n == 12
    assert tokens.p99 == pytest.approx(150)
    assert percentile([], 50) is None
    assert percentile([7.0], 99) == 7.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == pytest.approx(statistics.median([1.0, 2.0, 3.0, 4.0]))


def test_requirements_most_often_failed(store: Store) -> None:
    t, f = True, False
    judged = [[1, t, "ok"], [2, f, "missing"], [3, f, "wrong colour"]]
    all_ok = [[1, t, ""], [2, t, ""], [3, t, ""]]
    rows = [
        (
            "row_0",
            "Draw a cat",
            3,
            [
                {
                    "status": RolloutStatus.SCORED,
                    "score": 1 / 3,
                    "fulfilled": 1,
                    "is_score_valid": True,
                    "verdicts_json": json.dumps(judged),
                },
                {
                    "status": RolloutStatus.SCORED,
                    "score": 1.0,
                    "fulfilled": 3,
                    "is_score_valid": True,
                    "verdicts_json": json.dumps(all_ok),
                },
                # A person's per-requirement verdicts replace the judge's.
                {
                    "status": RolloutStatus.SCORED,
                    "score": 1.0,
                    "fulfilled": 3,
                    "is_score_valid": True,
                    "verdicts_json": json.dumps(all_ok),
                    "override_verdicts": [f, f, t],
                },
                # Overridden with a bare count: the judge's verdicts are no longer the truth; left out.
                {
                    "status": RolloutStatus.SCORED,
                    "score": 1 / 3,
                    "fulfilled": 1,
                    "is_score_valid": True,
                    "verdicts_json": json.dumps(judged),
                    "override": 3,
                },
            ],
        ),
        (
            "row_1",
            "Draw a dog",
            2,
            [
                {
                    "status": RolloutStatus.SCORED,
                    "score": 0.5,
                    "fulfilled": 1,
                    "is_score_valid": True,
                    "verdicts_json": json.dumps([[1, f, "no dog"], [2, t, "grass"]]),
                },
                1,  # count mode: no verdicts
            ],
        ),
    ]
    run = make_run(store, rows)
    assert set(store.rollout_verdicts(run)) == {f"{run}.0.0", f"{run}.0.1", f"{run}.0.2", f"{run}.0.3", f"{run}.1.0"}
    report = run_stats(store, run).requirements
    assert report.rollouts_with_verdicts == 4
    assert report.from_overrides == 1
    assert report.count_only_overrides == 1
    # Tally by hand: row_0 #1 failed once (override), #2 twice (judge + override), #3 once (judge); row_1 #1 once.
    got = {(r.row_id, r.index): (r.failed, r.judged) for r in report.most_failed}
    assert got == {("row_0", 2): (2, 3), ("row_0", 1): (1, 3), ("row_0", 3): (1, 3), ("row_1", 1): (1, 1)}
    assert (report.most_failed[0].row_id, report.most_failed[0].index) == ("row_0", 2)
    assert report.most_failed[1].row_id == "row_1"  # 1 of 1 fails more often than 1 of 3
    assert report.most_failed[0].text == "row_0: requirement 2"
    assert len(run_stats(store, run, top=2).requirements.most_failed) == 2


def test_empty_run(store: Store) -> None:
    run = make_run(store, [("row_0", "Draw a cat", 2, [{"status": RolloutStatus.QUEUED}])])
    s = run_stats(store, run, bins=4)
    assert s.valid == 0
    assert s.mean is None
    assert s.median is None
    assert s.pass_rate is None
    assert list(s.histogram) == [0, 0, 0, 0]
    assert s.requirements.most_failed == ()
    json.dumps(s.to_dict())


def test_cli_stats_json_and_text(store: Store, capsys: pytest.CaptureFixture[str]) -> None:
    run = make_run(store, ROWS, name="stats run", threshold=0.6)
    db = str(store.path)
    assert main(["runs", "stats", run, "--json", "--bins", "5", "--store", db]) == 0
    data = json.loads(capsys.readouterr().out)
    scores = expected_scores()
    assert data["mean"] == pytest.approx(statistics.fmean(scores))
    assert data["name"] == "stats run"
    assert data["histogram"]["counts"] == exact_counts([Fraction(x).limit_denominator(100) for x in scores], 5)
    assert data["histogram"]["edges"] == pytest.approx([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    assert data["failures"]["timeout"] == 1
    assert data["percentiles"]["generation_s"]["n"] == 12
    assert main(["runs", "stats", run, "--bins", "4", "--store", db]) == 0
    text = capsys.readouterr().out
    assert sum(1 for line in text.splitlines() if "│" in line and "–" in line.split("│")[0]) == 4
    assert f"median {statistics.median(scores):.3f}" in text
    assert "pass rate (score ≥ 0.6)" in text
    assert "judge invalid" in text
    assert "generation_s" in text
    with pytest.raises(SystemExit) as exited:
        main(["runs", "stats", run, "--bins", "0", "--store", db])
    assert exited.value.code == 2
    assert "--bins" in capsys.readouterr().err
