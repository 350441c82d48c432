"""The filter language (core/store/filter_language.py): parsing, matching every kind of term, errors, sorting."""

from __future__ import annotations

import pytest

from svgagent.core.scoring.models import RolloutStatus
from svgagent.core.store.filter_language import QueryError, parse_query, sort_records, unmatched_terms
from svgagent.core.store.typed_rows import RolloutRecord


def rec(
    row: int,
    *,
    status: RolloutStatus = RolloutStatus.SCORED,
    score: float | None = None,
    fulfilled: int | None = None,
    valid: bool | None = True,
    override: float | None = None,
    prompt: str = "draw a cat",
    sample: int = 0,
    error: str | None = None,
    reason: str | None = None,
    gen: float | None = None,
    tokens: tuple[int, int] | None = None,
    attempt: int = 1,
) -> RolloutRecord:
    return RolloutRecord(
        rollout_id=f"run.{row}.{sample}",
        run_id="run",
        row_index=row,
        row_id=f"row_{row}",
        sample_index=sample,
        status=status,
        prompt=prompt,
        requirements=["a", "b", "c", "d"],
        total=4,
        score=score,
        fulfilled=fulfilled,
        is_score_valid=valid,
        override_score=override,
        override_fulfilled=None if override is None else int(override * 4),
        error=error,
        reason=reason,
        generation_s=gen,
        prompt_tokens=tokens[0] if tokens else None,
        completion_tokens=tokens[1] if tokens else None,
        attempt=attempt,
    )


ROWS = [
    rec(0, score=0.25, fulfilled=1, prompt="Draw a red bicycle", gen=3.0, tokens=(100, 200)),
    rec(1, score=1.0, fulfilled=4, prompt="Draw the French flag", gen=12.0, tokens=(100, 900)),
    rec(2, status=RolloutStatus.FAILED, score=0.0, fulfilled=0, reason="no <svg> element", prompt="A lighthouse"),
    rec(3, status=RolloutStatus.FAILED, valid=False, error="judge unreachable", prompt="A red barn"),
    rec(4, score=0.25, fulfilled=1, override=0.75, prompt="A cat on a mat", sample=1, attempt=2),
    rec(5, status=RolloutStatus.QUEUED, valid=None, prompt="A sailboat"),
]


def rows_matching(text: str) -> list[int]:
    query = parse_query(text)
    return [r.row_index for r in ROWS if query.matches(r, marked={"run.1.0"})]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", [0, 1, 2, 3, 4, 5]),
        ("score<0.5", [0, 2]),
        ("score>=0.8", [1]),
        ("score>=0.75", [1, 4]),  # the override counts, not the judge's 0.25
        ("judge_score<0.5", [0, 2, 4]),
        ("score=1", [1]),
        ("score!=0.25", [1, 2, 4]),
        ("status:failed", [3]),  # the shown word (core/store/outcomes.py): row 2's no-SVG 0 is scored
        ("status:fail", [3]),
        ("status:scored", [0, 1, 2, 4]),
        ("status:queued", [5]),
        ("invalid", []),  # the outcome: row 3 failed (an endpoint), none finished without a score with nothing broken
        ("valid", [0, 1, 2, 4]),
        ("overridden", [4]),
        ("marked", [1]),
        ("row:3", [3]),
        ("row:row_4", [4]),
        ("sample:1", [4]),
        ("attempt:2", [4]),
        ("attempt>1", [4]),
        ("red", [0, 3]),
        ("RED", [0, 3]),
        ('"red bicycle"', [0]),
        ("red status:failed", [3]),
        ("-status:failed", [0, 1, 2, 4, 5]),
        ("-red score<0.5", [2]),
        ("gen>10", [1]),
        ("tokens>500", [1]),
        ("error:unreachable", [3]),
        ("error:svg", [2]),
        ("prompt:cat", [4]),
        ("id:run.2", [2]),
        ("fulfilled<=1", [0, 2]),
    ],
)
def test_terms_select_the_expected_rows(text: str, expected: list[int]) -> None:
    assert rows_matching(text) == expected


def test_a_value_missing_never_satisfies_a_comparison() -> None:
    assert 5 not in rows_matching("score<2")
    assert 3 not in rows_matching("score>=0")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("scor<0.5", "unknown field 'scor'"),
        ("score<abc", "'abc' is not a number"),
        ("status:nope", "no status starts with 'nope'"),
        ("colour:red", "unknown field 'colour'"),
        ("sample:x", "is not a whole number"),
        ('"unclosed', "cannot read the filter"),
    ],
)
def test_errors_name_the_problem(text: str, message: str) -> None:
    with pytest.raises(QueryError, match=message):
        parse_query(text)


def test_query_keeps_its_text_and_reports_empty() -> None:
    assert parse_query("  ").empty
    query = parse_query("score<0.5 red")
    assert not query.empty
    assert query.text == "score<0.5 red"
    assert query.terms == ("score<0.5", "red")
    assert query.free_text == ("red",)


@pytest.mark.parametrize(
    ("text", "note"),
    [
        ("failed", "'failed' is not a filter term and no prompt or row id contains it — did you mean status:failed?"),
        ("overriden", "did you mean overridden?"),
        ("-invalidd", "did you mean invalid?"),
        ("score", "did you mean a comparison such as score>=1?"),
        ("zebra", "'zebra' is not a filter term and no prompt or row id contains it"),
    ],
)
def test_free_text_that_matches_nothing_says_so(text: str, note: str) -> None:
    notes = unmatched_terms(parse_query(text), ROWS)
    assert len(notes) == 1
    assert note in notes[0]


def test_free_text_that_matches_something_is_not_reported() -> None:
    assert unmatched_terms(parse_query("red status:failed"), ROWS) == []
    assert unmatched_terms(parse_query("status:failed"), ROWS) == []  # no free text at all


def test_sorting_puts_missing_values_last_both_ways() -> None:
    up = [r.row_index for r in sort_records(ROWS, "score")]
    down = [r.row_index for r in sort_records(ROWS, "score", reverse=True)]
    assert up == [2, 0, 4, 1, 3, 5]  # 0.0, 0.25, 0.75 (override), 1.0, then no score
    assert down == [1, 4, 0, 2, 3, 5]


def test_sorting_by_status_and_ties_keep_row_order() -> None:
    assert [r.row_index for r in sort_records(ROWS, "status")] == [5, 0, 1, 4, 2, 3]
    assert [r.row_index for r in sort_records(list(reversed(ROWS)), "rollout")] == [0, 1, 2, 3, 4, 5]
