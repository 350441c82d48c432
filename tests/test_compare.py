"""`svgagent runs compare` and svgagent.core.analysis.compare, on runs built by hand in a temporary store.

Expected numbers are computed here from the specs with the statistics module, not read from the implementation.
Also home of :func:`make_run`, the small run builder test_stats and test_import_export use too.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from svgagent.core.analysis.compare import compare_rollouts, compare_runs, filter_rows, sort_rows
from svgagent.core.scoring.models import DatasetRow, FailureKind, RolloutStatus
from svgagent.core.store.run_store import Store
from svgagent.tui.cli.main import main

Sample = int | None | dict[str, Any]
RowSpec = tuple[str, str, int, Sequence[Sample]]  # (row_id, prompt, number of requirements, samples)

OUTAGE = "judge endpoint unreachable: http://127.0.0.1:9 (3 retries)"


def requirements_for(row_id: str, n: int) -> tuple[str, ...]:
    return tuple(f"{row_id}: requirement {j}" for j in range(1, n + 1))


def make_run(
    store: Store,
    rows: Sequence[RowSpec],
    *,
    name: str = "run",
    threshold: float = 0.5,
    requirements: dict[str, tuple[str, ...]] | None = None,
) -> str:
    """A finished run with one rollout per sample. A sample is an int (that many requirements fulfilled: scored),
    None (failed without a valid score: judge outage) or a dict of rollout columns (anything else). A dict may hold
    ``"override": k`` or ``"override_verdicts": [...]`` for a human override."""
    dataset_rows = [
        DatasetRow(i, row_id, prompt, (requirements or {}).get(row_id, requirements_for(row_id, n)))
        for i, (row_id, prompt, n, _) in enumerate(rows)
    ]
    samples = max(len(r[3]) for r in rows)
    run_id = store.create_run(
        name=name,
        settings={"threshold": threshold, "model": f"model-{name}"},
        dataset={"name": "hand-built"},
        rows=dataset_rows,
        samples=samples,
    )
    for rec in store.list_rollouts(run_id):
        row_id, _, n, specs = rows[rec.row_index]
        if rec.sample_index >= len(specs):
            store.update_rollout(rec.rollout_id, is_current=False)
            continue
        spec = specs[rec.sample_index]
        common = {
            "raw_answer": "```svg\n<svg xmlns='http://www.w3.org/2000/svg'/>\n```",
            "finish_reason": "stop",
            "generation_s": 1.0 + rec.row_index,
            "prompt_tokens": 100,
            "completion_tokens": 50,
        }
        if isinstance(spec, int):
            store.update_rollout(
                rec.rollout_id,
                status=RolloutStatus.SCORED,
                fulfilled=spec,
                score=spec / n,
                is_score_valid=True,
                reason=f"{spec} of {n}",
                judge_s=0.5,
                **common,
            )
        elif spec is None:
            store.update_rollout(
                rec.rollout_id,
                status=RolloutStatus.FAILED,
                score=None,
                fulfilled=None,
                is_score_valid=False,
                reason=OUTAGE,
                error=OUTAGE,
                failure_kind=FailureKind.UNREACHABLE,
                **common,
            )
        else:
            spec = dict(spec)
            override = spec.pop("override", None)
            override_verdicts = spec.pop("override_verdicts", None)
            store.update_rollout(rec.rollout_id, **{**common, **spec})
            if override is not None or override_verdicts is not None:
                store.set_override(rec.rollout_id, fulfilled=override, verdicts=override_verdicts)
    store.set_run_status(run_id, "completed", store.summarize(run_id, threshold))
    return run_id


def effective_valid_scores(specs: Sequence[Sample], n: int) -> list[float]:
    """The scores that count, computed from the specs (not by the code under test)."""
    out = []
    for spec in specs:
        if isinstance(spec, int):
            out.append(spec / n)
        elif isinstance(spec, dict) and spec.get("override") is not None:
            out.append(spec["override"] / n)
        elif isinstance(spec, dict) and spec.get("is_score_valid") and spec.get("score") is not None:
            out.append(spec["score"])
    return out


def stderr_of(values: Sequence[float]) -> float:
    return statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0


# Run A and run B. Row "row_9" names a different prompt in each run: it must not be paired.
ROWS_A: list[RowSpec] = [
    ("row_0", "Draw a cat", 4, [2, 4]),
    ("row_1", "Draw a dog", 5, [1, None]),
    ("row_2", "Draw the sun", 4, [3]),
    ("row_3", "Draw a car", 2, [None]),
    ("row_4", "Draw a hat", 4, [2]),
    ("row_6", "Draw a kite", 3, [0, 3, 3]),
    ("row_9", "Draw a boat", 4, [4]),
]
ROWS_B: list[RowSpec] = [
    ("row_0", "Draw a cat", 4, [4, 4]),
    ("row_1", "Draw a dog", 5, [1]),
    (
        "row_2",
        "Draw the sun",
        4,
        [1, {"status": RolloutStatus.SCORED, "score": 0.75, "fulfilled": 3, "is_score_valid": True, "override": 0}],
    ),
    ("row_3", "Draw a car", 2, [2]),
    ("row_5", "Draw a tree", 4, [1]),
    ("row_6", "Draw a kite", 3, [1, 1]),
    ("row_9", "Draw a plane", 4, [0]),
]


@pytest.fixture
def store(tmp_path: Path) -> Store:
    with Store(tmp_path / "runs.db") as s:
        yield s


def expected_comparison(rows_a: list[RowSpec], rows_b: list[RowSpec]) -> dict[str, Any]:
    def per_row(rows: list[RowSpec]) -> dict[tuple[str, str], list[float]]:
        return {(rid, prompt): effective_valid_scores(specs, n) for rid, prompt, n, specs in rows}

    a, b = per_row(rows_a), per_row(rows_b)
    deltas = {}
    for key in a.keys() & b.keys():
        if a[key] and b[key]:
            deltas[key] = statistics.fmean(b[key]) - statistics.fmean(a[key])
    all_a = [s for scores in a.values() for s in scores]
    all_b = [s for scores in b.values() for s in scores]
    return {
        "deltas": deltas,
        "mean_diff": statistics.fmean(deltas.values()),
        "diff_stderr": stderr_of(list(deltas.values())),
        "wins": sum(1 for d in deltas.values() if d > 1e-9),
        "losses": sum(1 for d in deltas.values() if d < -1e-9),
        "ties": sum(1 for d in deltas.values() if abs(d) <= 1e-9),
        "only_a": len(a.keys() - b.keys()),
        "only_b": len(b.keys() - a.keys()),
        "unscored": sum(1 for k in a.keys() & b.keys() if not (a[k] and b[k])),
        "mean_a": statistics.fmean(all_a),
        "stderr_a": stderr_of(all_a),
        "mean_b": statistics.fmean(all_b),
        "stderr_b": stderr_of(all_b),
        "paired_mean_a": statistics.fmean(statistics.fmean(a[k]) for k in deltas),
        "paired_mean_b": statistics.fmean(statistics.fmean(b[k]) for k in deltas),
    }


def test_paired_difference_wins_and_one_sided_rows(store: Store) -> None:
    run_a, run_b = make_run(store, ROWS_A, name="A"), make_run(store, ROWS_B, name="B")
    want = expected_comparison(ROWS_A, ROWS_B)
    c = compare_runs(store, run_a, run_b)
    assert (c.run_a, c.run_b, c.name_a, c.name_b) == (run_a, run_b, "A", "B")
    assert c.paired_rows == len(want["deltas"]) == 4
    assert c.mean_diff == pytest.approx(want["mean_diff"])
    assert c.diff_stderr == pytest.approx(want["diff_stderr"])
    assert (c.wins, c.losses, c.ties) == (want["wins"], want["losses"], want["ties"]) == (1, 2, 1)
    assert (c.only_a, c.only_b, c.unscored) == (want["only_a"], want["only_b"], want["unscored"]) == (2, 2, 1)
    for key in ("mean_a", "stderr_a", "mean_b", "stderr_b", "paired_mean_a", "paired_mean_b"):
        assert getattr(c, key) == pytest.approx(want[key]), key
    got = {(r.row_id, r.prompt): r.delta for r in c.rows if r.delta is not None}
    assert got.keys() == want["deltas"].keys()
    for key, delta in want["deltas"].items():
        assert got[key] == pytest.approx(delta), key
    # The override in B's row_2 counts (effective score 0, not the judge's 0.75); B's row_1 outage is left out.
    row2 = next(r for r in c.rows if r.row_id == "row_2")
    assert row2.mean_b == pytest.approx((1 / 4 + 0) / 2)
    assert row2.outcome == "regression"
    row1 = next(r for r in c.rows if r.row_id == "row_1")
    assert row1.mean_a == pytest.approx(1 / 5)
    assert row1.a is not None
    assert row1.a.samples == 2
    assert row1.outcome == "tie"


def test_row_id_alone_does_not_align_rows(store: Store) -> None:
    run_a, run_b = make_run(store, ROWS_A), make_run(store, ROWS_B)
    c = compare_runs(store, run_a, run_b)
    row9 = [r for r in c.rows if r.row_id == "row_9"]
    assert sorted(r.outcome for r in row9) == ["only_a", "only_b"]
    assert {r.prompt for r in row9} == {"Draw a boat", "Draw a plane"}
    # Same prompt under another row id is not the same row either.
    other = make_run(store, [("q_0", "Draw a cat", 4, [2])])
    c2 = compare_runs(store, run_a, other)
    assert c2.paired_rows == 0
    assert c2.only_b == 1
    assert c2.mean_diff is None


def test_changed_requirements_still_align_but_are_flagged(store: Store) -> None:
    a = make_run(store, [("row_0", "Draw a cat", 2, [1])])
    b = make_run(store, [("row_0", "Draw a cat", 2, [2])], requirements={"row_0": ("whiskers", "a tail")})
    c = compare_runs(store, a, b)
    assert c.paired_rows == 1
    assert c.requirements_changed == 1
    assert c.rows[0].delta == pytest.approx(0.5)
    assert not c.rows[0].same_requirements


def test_filter_and_sort(store: Store) -> None:
    c = compare_runs(store, make_run(store, ROWS_A), make_run(store, ROWS_B))
    want = expected_comparison(ROWS_A, ROWS_B)["deltas"]
    regressions = c.select("regressions")
    assert [r.delta for r in regressions] == sorted(d for d in want.values() if d < 0)
    assert all(r.outcome == "regression" for r in regressions)
    assert len(regressions) == 2
    improvements = c.select("improvements", descending=True)
    assert [r.row_id for r in improvements] == ["row_0"]
    ordered = sort_rows(c.rows, "delta")
    deltas = [r.delta for r in ordered if r.delta is not None]
    assert deltas == sorted(deltas)
    assert all(r.delta is None for r in ordered[len(deltas) :])
    by_size = sort_rows(c.rows, "abs_delta")
    sizes = [abs(r.delta) for r in by_size if r.delta is not None]
    assert sizes == sorted(sizes, reverse=True)
    assert [r.row_id for r in sort_rows(c.rows, "row")][:3] == ["row_0", "row_1", "row_2"]
    assert len(c.select(limit=2)) == 2
    with pytest.raises(ValueError):
        filter_rows(c.rows, "bogus")  # type: ignore[arg-type]


def test_run_against_itself_is_all_ties(store: Store) -> None:
    run = make_run(store, ROWS_A)
    c = compare_runs(store, run, run)
    assert c.mean_diff == 0
    assert c.diff_stderr == 0
    assert c.losses == c.wins == 0
    assert c.ties == c.paired_rows == 6
    assert c.unscored == 1
    assert c.only_a == c.only_b == 0


def test_pure_function_on_rollout_lists(store: Store) -> None:
    run_a, run_b = make_run(store, ROWS_A), make_run(store, ROWS_B)
    c = compare_rollouts(store.list_rollouts(run_a), store.list_rollouts(run_b))
    assert c.run_a == "A"
    assert c.paired_rows == 4
    empty = compare_rollouts([], [])
    assert empty.rows == ()
    assert empty.mean_a is None
    assert empty.mean_diff is None


def test_cli_compare_json_and_text(store: Store, capsys: pytest.CaptureFixture[str]) -> None:
    run_a, run_b = make_run(store, ROWS_A, name="A"), make_run(store, ROWS_B, name="B")
    want = expected_comparison(ROWS_A, ROWS_B)
    db = str(store.path)
    assert main(["runs", "compare", run_a, run_b, "--json", "--store", db]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["mean_diff"] == pytest.approx(want["mean_diff"])
    assert data["diff_stderr"] == pytest.approx(want["diff_stderr"])
    assert (data["wins"], data["losses"], data["ties"], data["only_a"], data["only_b"]) == (1, 2, 1, 2, 2)
    assert len(data["rows"]) == 9
    assert main(["runs", "compare", run_a, run_b, "--json", "--only", "regressions", "--store", db]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [r["row_id"] for r in rows] == ["row_2", "row_6"]
    assert all(r["delta"] < 0 for r in rows)
    assert main(["runs", "compare", run_a, run_b, "--store", db]) == 0
    text = capsys.readouterr().out
    assert f"{want['mean_diff']:+.3f} ± {want['diff_stderr']:.3f}" in text
    assert "only in A: 2" in text
    assert "only in B: 2" in text
    assert "Draw a kite" in text


def test_cli_compare_unknown_run_is_exit_2(store: Store, capsys: pytest.CaptureFixture[str]) -> None:
    run_a = make_run(store, ROWS_A)
    assert main(["runs", "compare", run_a, "nope", "--store", str(store.path)]) == 2
    assert "nope" in capsys.readouterr().err
