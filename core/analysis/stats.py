"""Distributions and summary statistics of one run, and a histogram drawn with block characters.

Conventions (the CLI's ``runs stats`` and the TUI's stats screen both show these):

- Scores are *effective* scores (human override, else judge) of current rollouts whose score is valid.
- ``pass_rate`` is the share of those scores that are ``>= threshold`` (rollouts without a valid score are not in
  the denominator; they are counted under ``failures``).
- Failures are rollouts in the ``failed`` state, put into one category each by :func:`classify_failure`, from
  their typed failure kind.
- Percentiles use linear interpolation between closest ranks (like ``numpy.percentile``'s default, and
  ``statistics.quantiles(..., method="inclusive")``), over the rollouts that have the value.
- Requirements: per rollout, the human override's per-requirement verdicts when a person gave them, else the
  judge's per-requirement verdicts (judge mode ``per-requirement``). A rollout overridden with a bare count has no
  per-requirement truth and is left out (counted in ``RequirementReport.count_only_overrides``).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from svgagent.core.scoring.models import FailureKind, RolloutStatus
from svgagent.core.store.outcomes import OUTCOMES, OutcomeCounts
from svgagent.core.store.reviews import complete, marks_of_judge
from svgagent.core.store.run_store import Store
from svgagent.core.store.typed_rows import DEFAULT_THRESHOLD, RolloutRecord, mean_and_stderr

DEFAULT_BINS = 10
PERCENTILES = (50, 90, 99)
# Partial blocks, one eighth of a cell each: a bar can be drawn to 1/8 of a character.
_EIGHTHS = ("", "▏", "▎", "▍", "▌", "▋", "▊", "▉")
_FULL = "█"


# --- failure categories ---------------------------------------------------------------------------------------------


class FailureCategory(StrEnum):
    NO_SVG = "no SVG"
    RENDER_ERROR = "render error"
    JUDGE_INVALID = "judge invalid"
    TIMEOUT = "timeout"
    ENDPOINT_ERROR = "endpoint error"
    OTHER = "other"


# Each typed failure kind (stored with the rollout by whatever wrote it: engine, import, serve) in its category.
CATEGORY_OF_KIND: dict[FailureKind, FailureCategory] = {
    FailureKind.NO_SVG: FailureCategory.NO_SVG,
    FailureKind.RENDER: FailureCategory.RENDER_ERROR,
    FailureKind.JUDGE_UNUSABLE: FailureCategory.JUDGE_INVALID,
    FailureKind.TIMEOUT: FailureCategory.TIMEOUT,
    FailureKind.UNREACHABLE: FailureCategory.ENDPOINT_ERROR,
    FailureKind.AUTH: FailureCategory.ENDPOINT_ERROR,
    FailureKind.RATE_LIMIT: FailureCategory.ENDPOINT_ERROR,
    FailureKind.HTTP_ERROR: FailureCategory.ENDPOINT_ERROR,
    FailureKind.BAD_RESPONSE: FailureCategory.ENDPOINT_ERROR,
    FailureKind.INTERNAL: FailureCategory.OTHER,
    FailureKind.OTHER: FailureCategory.OTHER,
}


def classify_failure(kind: FailureKind | None) -> FailureCategory:
    """The category of a failed rollout, from its typed failure kind — never from the words of its reason (a
    refused connection whose message mentions a timeout is an endpoint error, a render that timed out a render
    error). A failure without a kind is ``other``."""
    return CATEGORY_OF_KIND.get(kind, FailureCategory.OTHER) if kind is not None else FailureCategory.OTHER


# --- histogram ------------------------------------------------------------------------------------------------------


def histogram_counts(scores: Iterable[float], bins: int = DEFAULT_BINS, lo: float = 0.0, hi: float = 1.0) -> list[int]:
    """How many scores fall in each of ``bins`` equal bins over [lo, hi]. Bins are half-open ``[edge, next)``
    except the last, which includes ``hi``; scores outside the range are counted in the nearest end bin."""
    if bins < 1:
        raise ValueError("bins must be at least 1")
    if not hi > lo:
        raise ValueError("hi must be greater than lo")
    counts = [0] * bins
    for s in scores:
        # The epsilon keeps a score that sits on an edge (0.57 with 100 bins: 56.99999999999999) in the bin above.
        index = math.floor((s - lo) / (hi - lo) * bins + 1e-9)
        counts[min(max(index, 0), bins - 1)] += 1
    return counts


def bin_edges(bins: int = DEFAULT_BINS, lo: float = 0.0, hi: float = 1.0) -> list[float]:
    return [lo + (hi - lo) * i / bins for i in range(bins + 1)]


def bar(value: float, maximum: float, width: int) -> str:
    """A horizontal bar of ``value / maximum`` of ``width`` cells, drawn to an eighth of a cell."""
    if maximum <= 0 or value <= 0 or width <= 0:
        return ""
    eighths = round(min(value / maximum, 1.0) * width * 8)
    if eighths == 0:
        eighths = 1  # a non-zero count is never invisible
    return _FULL * (eighths // 8) + _EIGHTHS[eighths % 8]


def histogram_lines(
    scores: Sequence[float],
    bins: int = DEFAULT_BINS,
    *,
    width: int = 40,
    lo: float = 0.0,
    hi: float = 1.0,
    digits: int | None = None,
) -> list[str]:
    """The histogram as plain text lines (no markup), one per bin, lowest bin first::

        0.0–0.1 │██████▍                                  │  5  12.5%

    ``width`` is the bar's width in cells; bars are scaled to the largest bin. Usable as is by the CLI and, as
    ``rich.text.Text`` lines, by the TUI.
    """
    counts = histogram_counts(scores, bins, lo, hi)
    edges = bin_edges(bins, lo, hi)
    if digits is None:
        digits = 1 if bins <= 10 else 2
    total = sum(counts)
    biggest = max(counts) if counts else 0
    count_width = max(len(str(biggest)), 1)
    lines = []
    for i, count in enumerate(counts):
        label = f"{edges[i]:.{digits}f}–{edges[i + 1]:.{digits}f}"
        share = f"{100 * count / total:5.1f}%" if total else "    –"
        lines.append(f"{label} │{bar(count, biggest, width):<{width}}│ {count:>{count_width}} {share}")
    return lines


# --- percentiles ----------------------------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0..100) by linear interpolation between closest ranks; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    if len(ordered) == 1:
        return float(ordered[0])
    pos = (len(ordered) - 1) * q / 100
    low = math.floor(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


@dataclass(frozen=True, slots=True)
class Percentiles:
    n: int
    p50: float | None
    p90: float | None
    p99: float | None

    @classmethod
    def of(cls, values: Sequence[float]) -> Percentiles:
        return cls(len(values), *(percentile(values, q) for q in PERCENTILES))


# --- per-requirement failures ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RequirementFailure:
    row_id: str
    prompt: str
    index: int  # 1-based, as numbered in the prompt
    text: str
    failed: int
    judged: int

    @property
    def failure_rate(self) -> float:
        return self.failed / self.judged if self.judged else 0.0


@dataclass(frozen=True, slots=True)
class RequirementReport:
    rollouts_with_verdicts: int  # rollouts that contributed per-requirement verdicts
    from_overrides: int  # of those, how many used a person's verdicts
    count_only_overrides: int  # overridden with a count only: left out
    most_failed: tuple[RequirementFailure, ...]


def requirement_verdicts(rec: RolloutRecord, judge_verdicts: Sequence[Sequence[Any]] | None) -> list[bool] | None:
    """Per-requirement fulfilment of one rollout (index i-1 ↔ requirement i), or None when not known.

    A person's per-requirement verdicts win; an override with a bare count means the judge's verdicts are no longer
    the truth, so there are none; otherwise the judge's ``[index, fulfilled, reason]`` triples."""
    if rec.overridden:
        return complete(rec.override_verdicts)  # a person's marks, when they decided every requirement
    return complete(marks_of_judge(judge_verdicts, rec.total)) if judge_verdicts else None


def requirement_report(
    rollouts: Iterable[RolloutRecord], verdicts: Mapping[str, Sequence[Sequence[Any]]], top: int = 10
) -> RequirementReport:
    """The requirements most often failed, over terminal rollouts with a valid (or overridden) score."""
    tally: dict[tuple[str, str, int], list[int]] = {}
    texts: dict[tuple[str, str, int], str] = {}
    with_verdicts = from_overrides = count_only = 0
    for rec in rollouts:
        if not rec.counts_toward_mean:
            continue
        if rec.overridden and complete(rec.override_verdicts) is None:
            count_only += 1
            continue
        flags = requirement_verdicts(rec, verdicts.get(rec.rollout_id))
        if flags is None:
            continue
        with_verdicts += 1
        from_overrides += rec.overridden
        for i, ok in enumerate(flags, start=1):
            key = (rec.row_id, rec.prompt, i)
            counts = tally.setdefault(key, [0, 0])
            counts[0] += not ok
            counts[1] += 1
            texts.setdefault(key, rec.requirements[i - 1] if i <= len(rec.requirements) else "")
    items = [RequirementFailure(k[0], k[1], k[2], texts[k], c[0], c[1]) for k, c in tally.items() if c[0] > 0]
    items.sort(key=lambda r: (-r.failed, -r.failure_rate, r.row_id, r.index))
    return RequirementReport(with_verdicts, from_overrides, count_only, tuple(items[:top]))


# --- the whole report -----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GroupStats:
    key: int
    n: int
    mean: float | None
    stderr: float | None


@dataclass(frozen=True, slots=True)
class RunStats:
    run_id: str
    rollouts: int  # current rollouts
    terminal: int
    valid: int  # scores that count (valid or overridden)
    mean: float | None
    stderr: float | None
    median: float | None
    threshold: float
    passed: int  # valid scores >= threshold
    pass_rate: float | None
    bins: int
    histogram: tuple[int, ...]
    failures: dict[str, int]  # every category, in FailureCategory order
    by_requirement_count: tuple[GroupStats, ...]
    percentiles: dict[str, Percentiles]  # generation_s, render_s, judge_s, tokens
    requirements: RequirementReport
    scores: tuple[float, ...] = field(default=(), repr=False)
    outcomes: OutcomeCounts = OutcomeCounts()  # the finished rollouts: scored · invalid · failed

    def histogram_lines(self, width: int = 40) -> list[str]:
        return histogram_lines(self.scores, self.bins, width=width)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("scores")
        data["histogram"] = {"edges": bin_edges(self.bins), "counts": list(self.histogram)}
        data["requirements"]["most_failed"] = [
            {**asdict(r), "failure_rate": r.failure_rate} for r in self.requirements.most_failed
        ]
        return data


def compute_stats(
    rollouts: Sequence[RolloutRecord],
    *,
    run_id: str = "",
    threshold: float = DEFAULT_THRESHOLD,
    bins: int = DEFAULT_BINS,
    verdicts: Mapping[str, Sequence[Sequence[Any]]] | None = None,
    top: int = 10,
) -> RunStats:
    """Statistics of a run's current rollouts (pure; ``verdicts`` maps rollout id → judge verdicts)."""
    terminal = [r for r in rollouts if r.status.terminal]
    counted = [r for r in terminal if r.counts_toward_mean]
    scores = [float(r.effective_score) for r in counted]  # type: ignore[arg-type]
    mean, stderr = mean_and_stderr(scores)
    passed = sum(1 for s in scores if s >= threshold)
    failures = {c.value: 0 for c in FailureCategory}
    for r in terminal:
        if r.status is RolloutStatus.FAILED:
            failures[classify_failure(r.failure_kind).value] += 1
    groups: dict[int, list[float]] = {}
    for r, s in zip(counted, scores):
        groups.setdefault(r.total, []).append(s)
    by_count = tuple(GroupStats(total, len(v), *mean_and_stderr(v)) for total, v in sorted(groups.items()))

    def present(values: Iterable[float | int | None]) -> list[float]:
        return [float(v) for v in values if v is not None]

    percentiles = {
        "generation_s": Percentiles.of(present(r.generation_s for r in rollouts)),
        "render_s": Percentiles.of(present(r.render_s for r in rollouts)),
        "judge_s": Percentiles.of(present(r.judge_s for r in rollouts)),
        "tokens": Percentiles.of(
            present(
                r.tokens if (r.prompt_tokens is not None or r.completion_tokens is not None) else None for r in rollouts
            )
        ),
    }
    return RunStats(
        run_id=run_id,
        rollouts=len(rollouts),
        terminal=len(terminal),
        valid=len(scores),
        mean=mean,
        stderr=stderr,
        median=statistics.median(scores) if scores else None,
        threshold=threshold,
        passed=passed,
        pass_rate=passed / len(scores) if scores else None,
        bins=bins,
        histogram=tuple(histogram_counts(scores, bins)),
        failures=failures,
        by_requirement_count=by_count,
        percentiles=percentiles,
        requirements=requirement_report(rollouts, verdicts or {}, top),
        scores=tuple(scores),
        outcomes=OutcomeCounts(
            **{o.value: sum(1 for r in terminal if r.outcome is o) for o in OUTCOMES}  # type: ignore[arg-type]
        ),
    )


def run_stats(
    store: Store, run_id: str, *, threshold: float | None = None, bins: int = DEFAULT_BINS, top: int = 10
) -> RunStats:
    """:func:`compute_stats` for a stored run; ``threshold`` defaults to the run's own (``RunRecord.threshold``)."""
    run = store.get_run(run_id)
    if threshold is None:
        threshold = run.threshold
    return compute_stats(
        store.list_rollouts(run.run_id),
        run_id=run.run_id,
        threshold=threshold,
        bins=bins,
        verdicts=store.rollout_verdicts(run.run_id),
        top=top,
    )
