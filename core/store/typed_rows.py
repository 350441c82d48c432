"""Typed views of store rows (runs, rollouts) and the run summary computed from them."""

from __future__ import annotations

import bisect
import contextlib
import functools
import gc
import json
import math
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from enum import StrEnum
from typing import Any

from svgagent.core.scoring.models import FailureKind, JudgeProfileName, RendererName, RolloutStatus
from svgagent.core.store.outcomes import Outcome, OutcomeCounts, outcome_of
from svgagent.core.urls import has_userinfo, strip_userinfo


class RunStatus(StrEnum):
    """A run's state, as rollouts have theirs. ``running`` with no live lease means its worker died: a resume
    (or the next worker) continues it."""

    CREATED = "created"
    RUNNING = "running"
    COMPLETED = "completed"
    INTERRUPTED = "interrupted"
    IMPORTED = "imported"
    SERVING = "serving"  # rollouts served to a trainer (`svgagent serve`) are arriving
    SERVED = "served"


# Columns cheap enough to load for every row of a 10,000-rollout run (no answers, SVG or PNG).
TOKEN_COLUMN_NAMES = (  # a call's token counts, as the provider reported them
    "prompt_tokens",
    "completion_tokens",
    "judge_prompt_tokens",
    "judge_completion_tokens",
    "cached_prompt_tokens",
    "judge_cached_prompt_tokens",
)
LIGHT_COLUMNS: tuple[str, ...] = (
    "rollout_id",
    "run_id",
    "row_index",
    "row_id",
    "sample_index",
    "attempt",
    "is_current",
    "status",
    "prompt",
    "requirements_json",
    "score",
    "fulfilled",
    "total",
    "is_score_valid",
    "reason",
    "error",
    "generation_s",
    "render_s",
    "judge_s",
    *TOKEN_COLUMN_NAMES,
    "cached",
    "created",
    "updated",
    "override_score",
    "override_fulfilled",
    "override_verdicts_json",
    "override_at",
    "failure_kind",
    "truncated_json",
    "ep_rollout_id",
)


# store column → RolloutRecord field, where they differ (the JSON columns are parsed)
_RENAMED = {
    "requirements_json": "requirements",
    "verdicts_json": "verdicts",
    "override_verdicts_json": "override_verdicts",
    "truncated_json": "truncated",
}
_JSON_FIELDS = ("verdicts", "override_verdicts", "truncated")
_STATUSES = {s.value: s for s in RolloutStatus}
_KINDS = {k.value: k for k in FailureKind}


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """Build many long-lived objects without the cyclic collector running: they are not garbage, yet every
    ~700 allocations would trigger a collection, and some of them walk the whole heap (a Textual app's ~170k
    objects: 0.1–0.2 s each). Collection resumes afterwards, as it was."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@functools.cache
def _field_names(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in fields(cls))


@dataclass(frozen=True, slots=True)
class TokenGroup:
    """Rollouts (attempts) alike in what decides their price, their tokens summed (``Store.token_groups``); one
    rollout is a group of one (``TokenGroup.of``)."""

    cached: bool  # the policy's answer came from the response cache (an earlier run paid for it)
    answered: bool  # a policy call's tokens are recorded
    judged: bool  # a judge call's tokens are recorded
    count: int
    prompt_tokens: int
    completion_tokens: int
    judge_prompt_tokens: int
    judge_completion_tokens: int
    cached_prompt_tokens: int = 0  # of prompt_tokens: served from the provider's prompt cache
    judge_cached_prompt_tokens: int = 0

    @classmethod
    def of(cls, rec: RolloutRecord) -> TokenGroup:
        (group,) = cls.add_up([rec])
        return group

    @classmethod
    def add_up(cls, records: Iterable[RolloutRecord]) -> list[TokenGroup]:
        """``records`` grouped as ``Store.token_groups`` groups a run's rows, in one pass (a screen's 10,000 rollouts:
        a handful of groups to price, not 10,000 rollouts)."""
        sums: dict[tuple[bool, bool, bool], list[int]] = {}
        for rec in records:
            answered = rec.prompt_tokens is not None or rec.completion_tokens is not None
            judged = rec.judge_prompt_tokens is not None or rec.judge_completion_tokens is not None
            tally = sums.get((rec.cached, answered, judged))
            if tally is None:
                tally = sums[(rec.cached, answered, judged)] = [0] * 7
            tally[0] += 1
            tally[1] += rec.prompt_tokens or 0
            tally[2] += rec.completion_tokens or 0
            tally[3] += rec.judge_prompt_tokens or 0
            tally[4] += rec.judge_completion_tokens or 0
            tally[5] += rec.cached_prompt_tokens or 0
            tally[6] += rec.judge_cached_prompt_tokens or 0
        return [cls(cached, answered, judged, *tally) for (cached, answered, judged), tally in sums.items()]


@dataclass(slots=True)
class RolloutRecord:
    rollout_id: str
    run_id: str
    row_index: int
    row_id: str
    sample_index: int
    status: RolloutStatus
    prompt: str
    requirements: list[str]
    total: int
    attempt: int = 1
    is_current: bool = True
    score: float | None = None
    fulfilled: int | None = None
    is_score_valid: bool | None = None
    reason: str | None = None
    error: str | None = None
    generation_s: float | None = None
    render_s: float | None = None
    judge_s: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    judge_prompt_tokens: int | None = None
    judge_completion_tokens: int | None = None
    cached_prompt_tokens: int | None = None  # of prompt_tokens: served from the provider's prompt cache
    judge_cached_prompt_tokens: int | None = None
    cached: bool = False  # the answer came from svgagent's own response cache (no call made)
    created: str = ""
    updated: str = ""
    override_score: float | None = None
    override_fulfilled: int | None = None
    override_verdicts: list[bool | None] | None = None  # a person's ✓/✗ per requirement, None: undecided
    override_at: str | None = None
    failure_kind: FailureKind | None = None
    truncated: dict[str, int] | None = (
        None  # column -> original length, for text cut to its cap (core/store/size_caps.py)
    )
    ep_rollout_id: str | None = None  # eval-protocol's id of a served rollout (its /init metadata); None otherwise
    # heavy columns (None unless loaded)
    raw_answer: str | None = None
    finish_reason: str | None = None
    svg: str | None = None
    png: bytes | None = None
    judge_raw: str | None = None
    rationale: str | None = None
    verdicts: list[list[Any]] | None = None  # [index, fulfilled, reason] per requirement

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> RolloutRecord:
        data = dict(row)
        data["requirements"] = json.loads(data.pop("requirements_json"))
        data["status"] = RolloutStatus(data["status"])
        for column, name in _RENAMED.items():
            if name in _JSON_FIELDS and column in data:
                raw = data.pop(column)
                data[name] = json.loads(raw) if raw else None
        if data.get("failure_kind") is not None:
            data["failure_kind"] = _KINDS.get(data["failure_kind"], FailureKind.OTHER)
        for flag in ("is_current", "cached"):
            if flag in data:
                data[flag] = bool(data[flag])
        if data.get("is_score_valid") is not None:
            data["is_score_valid"] = bool(data["is_score_valid"])
        names = _field_names(cls)
        return cls(**{k: v for k, v in data.items() if k in names})

    @classmethod
    def from_tuples(cls, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[RolloutRecord]:
        """Records from plain row tuples whose columns are named ``columns``: what :meth:`from_row` makes, three
        to four times faster — the column plan is worked out once, records are built from positional
        arguments, statuses are looked up, identical requirement lists are parsed once, and the cyclic GC waits
        (see :func:`paused_gc`). The app reads every rollout of a run each time it opens one: 10,000 of them."""
        order = [f.name for f in fields(cls)]
        index: dict[str, int] = {}
        for i, column in enumerate(columns):
            name = _RENAMED.get(column, column)
            if name in order:
                index[name] = i
        prefix: list[int] = []  # columns of the leading fields, in field order: passed by position
        for name in order:
            if name not in index:
                break
            prefix.append(index[name])
        extra = [(name, index[name]) for name in order[len(prefix) :] if name in index]  # passed by keyword
        i_req, i_status = index["requirements"], index["status"]
        flags = [index[n] for n in ("is_current", "cached") if n in index]
        i_valid = index.get("is_score_valid")
        json_cols = [index[n] for n in _JSON_FIELDS if n in index]
        i_kind = index.get("failure_kind")
        loads, statuses, kinds = json.loads, _STATUSES, _KINDS
        parsed: dict[str, list[Any]] = {}
        out: list[RolloutRecord] = []
        with paused_gc():
            for row in rows:
                v = list(row)
                text = v[i_req]
                requirements = parsed.get(text)
                if requirements is None:
                    requirements = parsed[text] = loads(text)
                v[i_req] = list(requirements)  # a list of its own, as from_row gives
                status = statuses.get(v[i_status])
                v[i_status] = status if status is not None else RolloutStatus(v[i_status])
                for i in flags:
                    v[i] = bool(v[i])
                if i_valid is not None and v[i_valid] is not None:
                    v[i_valid] = bool(v[i_valid])
                for i in json_cols:
                    v[i] = loads(v[i]) if v[i] else None
                if i_kind is not None and v[i_kind] is not None:
                    v[i_kind] = kinds.get(v[i_kind], FailureKind.OTHER)
                record = cls(*[v[i] for i in prefix])
                for name, i in extra:
                    setattr(record, name, v[i])
                out.append(record)
        return out

    @property
    def tokens(self) -> int:
        return (self.prompt_tokens or 0) + (self.completion_tokens or 0)

    @property
    def overridden(self) -> bool:
        return self.override_score is not None

    @property
    def effective_score(self) -> float | None:
        """The human override when there is one, else the judge's score."""
        return self.override_score if self.override_score is not None else self.score

    @property
    def effective_fulfilled(self) -> int | None:
        return self.override_fulfilled if self.override_fulfilled is not None else self.fulfilled

    @property
    def outcome(self) -> Outcome | None:
        """scored · invalid · failed (None: not finished) — :func:`svgagent.core.store.outcomes.outcome_of`."""
        return outcome_of(
            self.status,
            score_valid=self.is_score_valid,
            score=self.score,
            overridden=self.overridden,
            failure_kind=self.failure_kind,
        )

    @property
    def state(self) -> str:
        """The word its state is shown and filtered by: its outcome once finished, else its status (queued, …)."""
        outcome = self.outcome
        return self.status.value if outcome is None else outcome.value

    @property
    def counts_toward_mean(self) -> bool:
        if not self.status.terminal:
            return False
        if self.overridden:
            return True
        return bool(self.is_score_valid) and self.score is not None

    def public_dict(self) -> dict[str, Any]:
        """The fields `runs show --json` prints for each rollout."""
        return {
            "rollout_id": self.rollout_id,
            "row_id": self.row_id,
            "row_index": self.row_index,
            "sample_index": self.sample_index,
            "attempt": self.attempt,
            "status": self.status.value,
            "outcome": None if (outcome := self.outcome) is None else outcome.value,  # scored · invalid · failed
            "score": self.score,
            "fulfilled": self.fulfilled,
            "total": self.total,
            "is_score_valid": self.is_score_valid,
            "reason": self.reason,
            "error": self.error,
            "generation_s": self.generation_s,
            "render_s": self.render_s,
            "judge_s": self.judge_s,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "override_score": self.override_score,
            "failure_kind": self.failure_kind.value if self.failure_kind is not None else None,
            "truncated": self.truncated,
            "ep_rollout_id": self.ep_rollout_id,
        }


DEFAULT_THRESHOLD = 0.5  # the mean score a run needs to pass when nothing says otherwise (Settings' default too)


def run_threshold(settings: Mapping[str, Any]) -> float:
    """The pass threshold of a run with these stored settings: its own, else :data:`DEFAULT_THRESHOLD` — the one
    fallback for every place that summarizes a stored run (the store, a stop, `runs`, the statistics, the
    dashboard), never the session's configured threshold, so each of them judges the run alike."""
    value = settings.get("threshold")
    if isinstance(value, int | float) and not isinstance(value, bool) and 0.0 <= value <= 1.0:
        return float(value)
    return DEFAULT_THRESHOLD


def recipe_columns(settings: Mapping[str, Any]) -> tuple[str, str]:
    """(judge_profile, renderer) a run with these settings is stored with: the settings' own when they are known
    names, else svgagent's profile and cairosvg (what every run used before they could be chosen)."""
    profile = settings.get("judge_profile")
    renderer = settings.get("renderer")
    return (
        profile if profile in {p.value for p in JudgeProfileName} else JudgeProfileName.SVGAGENT.value,
        renderer if renderer in {r.value for r in RendererName} else RendererName.CAIROSVG.value,
    )


def public_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """A run's stored settings fit to print: credentials in any URL (older stores kept them) removed."""
    return {k: strip_userinfo(v) if isinstance(v, str) and has_userinfo(v) else v for k, v in settings.items()}


@dataclass(slots=True)
class RunRecord:
    run_id: str
    name: str
    created: str
    updated: str
    status: RunStatus
    settings: dict[str, Any]
    dataset: dict[str, Any]
    summary: dict[str, Any] | None
    worked_s: float | None = None  # seconds engines worked on the run, over all its sessions (None: not yet)
    judge_profile: str = "svgagent"  # whose recipe its scores follow (core/scoring/judge_profiles.py)
    renderer: str = "cairosvg"  # what drew its pictures

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> RunRecord:
        keys = row.keys()
        return cls(
            run_id=row["run_id"],
            name=row["name"],
            created=row["created"],
            updated=row["updated"],
            status=RunStatus(row["status"]),
            settings=json.loads(row["settings_json"]),
            dataset=json.loads(row["dataset_json"]),
            summary=json.loads(row["summary_json"]) if row["summary_json"] else None,
            worked_s=row["worked_s"],
            judge_profile=row["judge_profile"] if "judge_profile" in keys else "svgagent",
            renderer=row["renderer"] if "renderer" in keys else "cairosvg",
        )

    @property
    def threshold(self) -> float:
        """The run's pass threshold (:func:`run_threshold`)."""
        return run_threshold(self.settings)

    @property
    def measured_settings(self) -> dict[str, Any]:
        """Its stored settings with the recipe its scores follow (``judge_profile``, ``renderer``: columns of their
        own, known for runs stored before they were settings): what a resume continues with."""
        return {**self.settings, "judge_profile": self.judge_profile, "renderer": self.renderer}

    def public_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "name": self.name,
            "created": self.created,
            "updated": self.updated,
            "status": self.status,
            "settings": public_settings(self.settings),
            "dataset": self.dataset,
            "summary": self.summary,
            "worked_s": self.worked_s,
            "judge_profile": self.judge_profile,
            "renderer": self.renderer,
        }


@dataclass(slots=True)
class RunSummary:
    """A run's counts and mean. ``scored``, ``invalid`` and ``failed`` are the outcomes of its finished rollouts
    (core/store/outcomes.py: every finished rollout is exactly one of them, ``done`` is their sum)."""

    rollouts: int
    done: int
    scored: int
    failed: int
    invalid: int
    mean_score: float | None
    stderr: float | None
    threshold: float
    passed: bool
    prompt_tokens: int
    completion_tokens: int
    overridden: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def outcomes(self) -> OutcomeCounts:
        return OutcomeCounts(self.scored, self.invalid, self.failed)


def mean_and_stderr(scores: list[float]) -> tuple[float | None, float | None]:
    """Sample mean and its standard error (sample standard deviation / sqrt(n)); None for what is undefined: the
    mean of no score, the spread of one (it was 0.0, printed as a certain "± 0.000")."""
    n = len(scores)
    if n == 0:
        return None, None
    mean = sum(scores) / n
    if n == 1:
        return mean, None
    var = sum((s - mean) ** 2 for s in scores) / (n - 1)
    return mean, math.sqrt(var / n)


def mean_text(mean: float | None, threshold: float | None = None, digits: int = 3) -> str:
    """``mean`` to ``digits`` decimals ("–" for none); next to a PASS/FAIL against ``threshold``, as many more as
    it takes for the figure to sit on the same side of the threshold as the mean (0.4997 is not "0.500 FAIL")."""
    if mean is None:
        return "–"
    text = f"{mean:.{digits}f}"
    while threshold is not None and (float(text) >= threshold) != (mean >= threshold) and digits < 12:
        digits += 1
        text = f"{mean:.{digits}f}"
    return text


def spread_text(stderr: float | None, digits: int = 3) -> str:
    """The " ± 0.053" after a mean (every place that prints one: the CLI's summaries, the TUI's summary bar, compare
    and stats); nothing when the standard error is undefined (one score, or none)."""
    return "" if stderr is None else f" ± {stderr:.{digits}f}"


def summarize_rows(rows: Iterable[RolloutRecord], threshold: float, earlier: Iterable[TokenGroup] = ()) -> RunSummary:
    return RunTally(rows).summary(threshold, earlier)


class RunTally:
    """A run's summary kept up to date one changed rollout at a time, so a 10,000-rollout run's summary line and
    histogram cost no full pass per live update. :func:`summarize_rows` is a tally of all rows at once: the TUI's
    summary bar, the headless progress bar, the store's run summary and the stats read the same rule — a finished
    rollout counts toward the mean with its ``effective_score`` (a person's override first) when
    ``counts_toward_mean``. The counted scores are kept sorted (for the median and histogram bins)."""

    def __init__(self, rows: Iterable[RolloutRecord] = ()) -> None:
        self.rollouts = self.done = self.scored = self.failed = self.invalid = self.overridden = 0
        self.prompt_tokens = self.completion_tokens = 0
        self.scores: list[float] = []
        for rec in rows:
            self._count(rec, 1)

    def replace(self, old: RolloutRecord | None, new: RolloutRecord | None) -> None:
        """``old`` (None: a new row) became ``new`` (None: the row is gone, e.g. replaced by a rerun)."""
        if old is not None:
            self._count(old, -1)
        if new is not None:
            self._count(new, 1)

    def _count(self, rec: RolloutRecord, sign: int) -> None:
        self.rollouts += sign
        self.prompt_tokens += sign * (rec.prompt_tokens or 0)
        self.completion_tokens += sign * (rec.completion_tokens or 0)
        self.overridden += sign * rec.overridden
        if not rec.status.terminal:
            return
        self.done += sign
        outcome = rec.outcome  # scored · invalid · failed, each counted once (core/store/outcomes.py)
        self.scored += sign * (outcome is Outcome.SCORED)
        self.invalid += sign * (outcome is Outcome.INVALID)
        self.failed += sign * (outcome is Outcome.FAILED)
        if rec.counts_toward_mean:
            score = float(rec.effective_score)  # type: ignore[arg-type]
            if sign > 0:
                bisect.insort(self.scores, score)
            else:
                del self.scores[bisect.bisect_left(self.scores, score)]

    def summary(self, threshold: float, earlier: Iterable[TokenGroup] = ()) -> RunSummary:
        """The run's summary; its tokens are what the run spent: the current rollouts' and those of ``earlier``,
        the attempts reruns replaced (``Store.current_and_earlier_tokens``) — paid for too."""
        earlier = tuple(earlier)
        mean, stderr = mean_and_stderr(self.scores)
        return RunSummary(
            rollouts=self.rollouts,
            done=self.done,
            scored=self.scored,
            failed=self.failed,
            invalid=self.invalid,
            mean_score=mean,
            stderr=stderr,
            threshold=threshold,
            passed=mean is not None and mean >= threshold,
            prompt_tokens=self.prompt_tokens + sum(g.prompt_tokens for g in earlier),
            completion_tokens=self.completion_tokens + sum(g.completion_tokens for g in earlier),
            overridden=self.overridden,
        )

    @property
    def mean(self) -> float | None:
        return mean_and_stderr(self.scores)[0]
