"""Comparing two runs row by row: per-row means, the paired difference and its standard error.

Alignment rule: a rollout of run A and one of run B belong to the same dataset row when they have the same
``row_id`` **and** the same prompt text (byte for byte). A row id alone is not enough: ``row_0`` of one dataset is
an unrelated prompt in another, and two SVGBench entries share a prompt (so the prompt alone is not enough either).
Requirements are not part of the key (a dataset whose wording was edited still aligns); rows whose requirements
differ between the runs are flagged (``same_requirements`` False, counted in ``requirements_changed``).

Per row, each run contributes the mean of its rollouts' *effective* scores (the human override when there is one,
else the judge's), counting only rollouts whose score is valid; several samples per row are averaged first, so a
row weighs the same however many samples it has. The delta of a row is ``mean_b - mean_a`` (positive: B is better).

Everything here is pure (lists of :class:`RolloutRecord` in, frozen dataclasses out) except :func:`compare_runs`,
which reads the two runs from a store; the CLI and the TUI both use these results.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from svgagent.core.store.run_store import Store
from svgagent.core.store.typed_rows import RolloutRecord, mean_and_stderr

TIE_TOLERANCE = 1e-9

Outcome = Literal["improvement", "regression", "tie", "only_a", "only_b", "unscored"]
Only = Literal["regressions", "improvements"]
SortKey = Literal["delta", "row", "abs_delta"]


@dataclass(frozen=True, slots=True)
class RowKey:
    """The identity of a dataset row across runs (see the module docstring)."""

    row_id: str
    prompt: str


@dataclass(frozen=True, slots=True)
class RowScores:
    """One run's rollouts of one row."""

    row_index: int
    requirements: tuple[str, ...]
    rollout_ids: tuple[str, ...]
    valid_scores: tuple[float, ...]
    overridden: int = 0  # how many of the rollouts carry a person's override

    @property
    def samples(self) -> int:
        return len(self.rollout_ids)

    @property
    def mean(self) -> float | None:
        return sum(self.valid_scores) / len(self.valid_scores) if self.valid_scores else None


@dataclass(frozen=True, slots=True)
class RowComparison:
    key: RowKey
    a: RowScores | None
    b: RowScores | None
    tie_tolerance: float = TIE_TOLERANCE

    @property
    def row_id(self) -> str:
        return self.key.row_id

    @property
    def prompt(self) -> str:
        return self.key.prompt

    @property
    def mean_a(self) -> float | None:
        return self.a.mean if self.a else None

    @property
    def mean_b(self) -> float | None:
        return self.b.mean if self.b else None

    @property
    def delta(self) -> float | None:
        """``mean_b - mean_a`` when both runs have a valid score for this row, else None."""
        if self.mean_a is None or self.mean_b is None:
            return None
        return self.mean_b - self.mean_a

    @property
    def paired(self) -> bool:
        return self.delta is not None

    @property
    def same_requirements(self) -> bool:
        return self.a is None or self.b is None or self.a.requirements == self.b.requirements

    @property
    def outcome(self) -> Outcome:
        if self.a is None:
            return "only_b"
        if self.b is None:
            return "only_a"
        delta = self.delta
        if delta is None:
            return "unscored"
        if delta > self.tie_tolerance:
            return "improvement"
        if delta < -self.tie_tolerance:
            return "regression"
        return "tie"

    def to_dict(self) -> dict[str, Any]:
        def side(s: RowScores | None) -> dict[str, Any] | None:
            if s is None:
                return None
            return {
                "row_index": s.row_index,
                "samples": s.samples,
                "valid": len(s.valid_scores),
                "mean": s.mean,
                "rollout_ids": list(s.rollout_ids),
            }

        return {
            "row_id": self.row_id,
            "prompt": self.prompt,
            "outcome": self.outcome,
            "delta": self.delta,
            "mean_a": self.mean_a,
            "mean_b": self.mean_b,
            "same_requirements": self.same_requirements,
            "a": side(self.a),
            "b": side(self.b),
        }


@dataclass(frozen=True, slots=True)
class Comparison:
    """Run B against run A. ``rows`` holds every row of either run, in A's row order then B-only rows."""

    run_a: str
    run_b: str
    rows: tuple[RowComparison, ...]
    # Means of all valid rollouts of each run (what `runs show` prints), with their standard errors.
    mean_a: float | None
    stderr_a: float | None
    mean_b: float | None
    stderr_b: float | None
    # Over the paired rows only (both runs have a valid score): mean of per-row means, and of the deltas.
    paired_rows: int
    paired_mean_a: float | None
    paired_mean_b: float | None
    mean_diff: float | None
    diff_stderr: float | None
    wins: int  # B better than A
    losses: int  # B worse than A
    ties: int
    only_a: int
    only_b: int
    unscored: int  # in both runs, but at least one has no valid score for it
    requirements_changed: int
    name_a: str = ""
    name_b: str = ""
    tie_tolerance: float = TIE_TOLERANCE

    def select(
        self, only: Only | None = None, sort: SortKey = "delta", *, descending: bool = False, limit: int | None = None
    ) -> list[RowComparison]:
        """Rows to show: optionally only regressions or improvements, sorted (``delta``: worst first; rows without
        a delta go last), at most ``limit`` of them."""
        rows = filter_rows(self.rows, only)
        rows = sort_rows(rows, sort, descending=descending)
        return rows if limit is None else rows[:limit]

    def header_dict(self) -> dict[str, Any]:
        return {
            "run_a": self.run_a,
            "run_b": self.run_b,
            "name_a": self.name_a,
            "name_b": self.name_b,
            "mean_a": self.mean_a,
            "stderr_a": self.stderr_a,
            "mean_b": self.mean_b,
            "stderr_b": self.stderr_b,
            "paired_rows": self.paired_rows,
            "paired_mean_a": self.paired_mean_a,
            "paired_mean_b": self.paired_mean_b,
            "mean_diff": self.mean_diff,
            "diff_stderr": self.diff_stderr,
            "wins": self.wins,
            "losses": self.losses,
            "ties": self.ties,
            "only_a": self.only_a,
            "only_b": self.only_b,
            "unscored": self.unscored,
            "requirements_changed": self.requirements_changed,
            "tie_tolerance": self.tie_tolerance,
        }

    def to_dict(self, rows: Iterable[RowComparison] | None = None) -> dict[str, Any]:
        return {**self.header_dict(), "rows": [r.to_dict() for r in (self.rows if rows is None else rows)]}


def row_key(rec: RolloutRecord) -> RowKey:
    return RowKey(rec.row_id, rec.prompt)


def valid_scores(rollouts: Iterable[RolloutRecord]) -> list[float]:
    """Effective scores of the rollouts whose score counts (finished, and valid or overridden)."""
    return [float(r.effective_score) for r in rollouts if r.counts_toward_mean]  # type: ignore[arg-type]


def group_by_row(rollouts: Iterable[RolloutRecord]) -> dict[RowKey, RowScores]:
    """One :class:`RowScores` per row key, in order of first appearance."""
    groups: dict[RowKey, list[RolloutRecord]] = {}
    for rec in rollouts:
        groups.setdefault(row_key(rec), []).append(rec)
    out: dict[RowKey, RowScores] = {}
    for key, recs in groups.items():
        out[key] = RowScores(
            row_index=recs[0].row_index,
            requirements=tuple(recs[0].requirements),
            rollout_ids=tuple(r.rollout_id for r in recs),
            valid_scores=tuple(valid_scores(recs)),
            overridden=sum(1 for r in recs if r.overridden),
        )
    return out


def compare_rollouts(
    a: Sequence[RolloutRecord],
    b: Sequence[RolloutRecord],
    *,
    run_a: str = "A",
    run_b: str = "B",
    name_a: str = "",
    name_b: str = "",
    tie_tolerance: float = TIE_TOLERANCE,
) -> Comparison:
    """Compare two runs given their (current) rollouts."""
    ga, gb = group_by_row(a), group_by_row(b)
    keys = list(ga) + [k for k in gb if k not in ga]
    rows = tuple(RowComparison(k, ga.get(k), gb.get(k), tie_tolerance) for k in keys)
    paired = [r for r in rows if r.paired]
    deltas = [r.delta for r in paired]
    mean_diff, diff_stderr = mean_and_stderr(deltas)  # type: ignore[arg-type]
    pa, _ = mean_and_stderr([r.mean_a for r in paired])  # type: ignore[misc]
    pb, _ = mean_and_stderr([r.mean_b for r in paired])  # type: ignore[misc]
    mean_a, stderr_a = mean_and_stderr(valid_scores(a))
    mean_b, stderr_b = mean_and_stderr(valid_scores(b))
    outcomes = [r.outcome for r in rows]
    return Comparison(
        run_a=run_a,
        run_b=run_b,
        rows=rows,
        mean_a=mean_a,
        stderr_a=stderr_a,
        mean_b=mean_b,
        stderr_b=stderr_b,
        paired_rows=len(paired),
        paired_mean_a=pa,
        paired_mean_b=pb,
        mean_diff=mean_diff,
        diff_stderr=diff_stderr,
        wins=outcomes.count("improvement"),
        losses=outcomes.count("regression"),
        ties=outcomes.count("tie"),
        only_a=outcomes.count("only_a"),
        only_b=outcomes.count("only_b"),
        unscored=outcomes.count("unscored"),
        requirements_changed=sum(1 for r in rows if not r.same_requirements),
        name_a=name_a,
        name_b=name_b,
        tie_tolerance=tie_tolerance,
    )


def compare_runs(store: Store, run_a: str, run_b: str, *, tie_tolerance: float = TIE_TOLERANCE) -> Comparison:
    """Compare two stored runs (current attempts only). Raises StoreError for an unknown run id."""
    ra, rb = store.get_run(run_a), store.get_run(run_b)
    return compare_rollouts(
        store.list_rollouts(ra.run_id),
        store.list_rollouts(rb.run_id),
        run_a=ra.run_id,
        run_b=rb.run_id,
        name_a=ra.name,
        name_b=rb.name,
        tie_tolerance=tie_tolerance,
    )


def filter_rows(rows: Iterable[RowComparison], only: Only | None) -> list[RowComparison]:
    if only is None:
        return list(rows)
    wanted = {"regressions": "regression", "improvements": "improvement"}.get(only)
    if wanted is None:
        raise ValueError(f"only must be 'regressions' or 'improvements', not {only!r}")
    return [r for r in rows if r.outcome == wanted]


def sort_rows(rows: Iterable[RowComparison], by: SortKey = "delta", *, descending: bool = False) -> list[RowComparison]:
    """``delta``: most negative first (``descending``: most positive first); ``abs_delta``: largest change first;
    ``row``: A's row order. Rows without a delta always go last, in row order."""
    items = list(rows)
    if by == "row":
        return list(reversed(items)) if descending else items
    with_delta = [r for r in items if r.delta is not None]
    without = [r for r in items if r.delta is None]
    if by == "delta":
        with_delta.sort(key=lambda r: r.delta, reverse=descending)  # type: ignore[arg-type, return-value]
    elif by == "abs_delta":
        with_delta.sort(key=lambda r: abs(r.delta), reverse=not descending)  # type: ignore[arg-type]
    else:
        raise ValueError(f"unknown sort key {by!r}")
    return with_delta + without
