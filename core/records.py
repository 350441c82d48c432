"""Typed views of store rows (runs, rollouts) and the run summary computed from them."""

from __future__ import annotations

import functools
import json
import math
import sqlite3
from dataclasses import asdict, dataclass, fields
from typing import Any

from .models import RolloutStatus

# Columns cheap enough to load for every row of a 10,000-rollout run (no answers, SVG or PNG).
LIGHT_COLUMNS: tuple[str, ...] = (
    "rollout_id", "run_id", "row_index", "row_id", "sample_index", "attempt", "is_current", "status", "prompt",
    "requirements_json", "score", "fulfilled", "total", "is_score_valid", "reason", "error", "generation_s",
    "render_s", "judge_s", "prompt_tokens", "completion_tokens", "judge_prompt_tokens", "judge_completion_tokens",
    "cached", "created", "updated", "override_score", "override_fulfilled", "override_verdicts_json", "override_at",
)


@functools.cache
def _field_names(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in fields(cls))


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
    cached: bool = False
    created: str = ""
    updated: str = ""
    override_score: float | None = None
    override_fulfilled: int | None = None
    override_verdicts: list[bool] | None = None
    override_at: str | None = None
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
        if "verdicts_json" in data:
            raw = data.pop("verdicts_json")
            data["verdicts"] = json.loads(raw) if raw else None
        if "override_verdicts_json" in data:
            raw = data.pop("override_verdicts_json")
            data["override_verdicts"] = json.loads(raw) if raw else None
        for flag in ("is_current", "cached"):
            if flag in data:
                data[flag] = bool(data[flag])
        if data.get("is_score_valid") is not None:
            data["is_score_valid"] = bool(data["is_score_valid"])
        names = _field_names(cls)
        return cls(**{k: v for k, v in data.items() if k in names})

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
        }


@dataclass(slots=True)
class RunRecord:
    run_id: str
    name: str
    created: str
    updated: str
    status: str
    settings: dict[str, Any]
    dataset: dict[str, Any]
    summary: dict[str, Any] | None

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> RunRecord:
        return cls(
            run_id=row["run_id"],
            name=row["name"],
            created=row["created"],
            updated=row["updated"],
            status=row["status"],
            settings=json.loads(row["settings_json"]),
            dataset=json.loads(row["dataset_json"]),
            summary=json.loads(row["summary_json"]) if row["summary_json"] else None,
        )

    def public_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "name": self.name,
            "created": self.created,
            "updated": self.updated,
            "status": self.status,
            "settings": self.settings,
            "dataset": self.dataset,
            "summary": self.summary,
        }


@dataclass(slots=True)
class RunSummary:
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


def mean_and_stderr(scores: list[float]) -> tuple[float | None, float | None]:
    """Sample mean and its standard error (sample standard deviation / sqrt(n))."""
    n = len(scores)
    if n == 0:
        return None, None
    mean = sum(scores) / n
    if n == 1:
        return mean, 0.0
    var = sum((s - mean) ** 2 for s in scores) / (n - 1)
    return mean, math.sqrt(var / n)


def summarize_rows(rows: list[RolloutRecord], threshold: float) -> RunSummary:
    done = [r for r in rows if r.status.terminal]
    scores = [float(r.effective_score) for r in done if r.counts_toward_mean]  # type: ignore[arg-type]
    mean, stderr = mean_and_stderr(scores)
    return RunSummary(
        rollouts=len(rows),
        done=len(done),
        scored=sum(1 for r in done if r.status is RolloutStatus.SCORED),
        failed=sum(1 for r in done if r.status is RolloutStatus.FAILED),
        invalid=sum(1 for r in done if not r.is_score_valid),
        mean_score=mean,
        stderr=stderr,
        threshold=threshold,
        passed=mean is not None and mean >= threshold,
        prompt_tokens=sum(r.prompt_tokens or 0 for r in rows),
        completion_tokens=sum(r.completion_tokens or 0 for r in rows),
        overridden=sum(1 for r in rows if r.overridden),
    )
