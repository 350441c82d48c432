"""What a judge's verdict and a policy answer become in the store and the answer cache.

One home for the columns a verdict gives a rollout (the engine and the rollout server write them), the cache key of
a request and a verdict's cache form.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from svgagent.core.scoring.judge_profiles import JudgeProfile
from svgagent.core.scoring.models import (
    FailureKind,
    JudgeProfileName,
    JudgeVerdict,
    RequirementVerdict,
    RolloutStatus,
    Usage,
)
from svgagent.core.terminal_text import clipped


def cache_key(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def profile_key(profile: JudgeProfile) -> tuple[str, ...]:
    """What a judge profile adds to a verdict's cache key: nothing for svgagent's own (keys made before profiles
    existed stay valid), its name for the others (their questions and readers differ)."""
    return () if profile.name is JudgeProfileName.SVGAGENT else (f"profile={profile.name.value}",)


def verdict_to_cache(v: JudgeVerdict) -> dict[str, Any]:
    return {
        "total": v.total,
        "fulfilled": v.fulfilled,
        "score": v.score,
        "rationale": v.rationale,
        "raw": v.raw,
        "verdicts": [[x.index, x.fulfilled, x.reason] for x in v.verdicts] if v.verdicts is not None else None,
        "prompt_tokens": v.usage.prompt_tokens,
        "completion_tokens": v.usage.completion_tokens,
    }


def verdict_from_cache(d: dict[str, Any]) -> JudgeVerdict:
    verdicts = d.get("verdicts")
    return JudgeVerdict(
        total=d["total"],
        fulfilled=d["fulfilled"],
        score=d["score"],
        valid=True,
        rationale=d["rationale"],
        verdicts=tuple(RequirementVerdict(i, f, r) for i, f, r in verdicts) if verdicts is not None else None,
        raw=d.get("raw", ""),
        usage=Usage(d.get("prompt_tokens", 0), d.get("completion_tokens", 0)),
    )


def verdict_columns(verdict: JudgeVerdict, judge_s: float) -> tuple[RolloutStatus, dict[str, Any]]:
    """The state and store columns a judge's verdict gives a rollout (scored, or failed with an invalid score)."""
    columns: dict[str, Any] = dict(
        judge_s=judge_s,
        judge_raw=verdict.raw,
        rationale=verdict.rationale,
        verdicts_json=json.dumps([[v.index, v.fulfilled, v.reason] for v in verdict.verdicts])
        if verdict.verdicts is not None
        else None,
        judge_prompt_tokens=verdict.usage.prompt_tokens,
        judge_completion_tokens=verdict.usage.completion_tokens,
        judge_cached_prompt_tokens=verdict.usage.cached_prompt_tokens,
    )
    if verdict.valid:
        columns.update(
            score=verdict.score,
            fulfilled=verdict.fulfilled,
            is_score_valid=True,
            reason=first_line(verdict.rationale),
            failure_kind=None,
        )
        return RolloutStatus.SCORED, columns
    columns.update(
        score=None,
        fulfilled=None,
        is_score_valid=False,
        reason=first_line(verdict.rationale) or None,
        error="judge gave no usable answer",
        failure_kind=FailureKind.JUDGE_UNUSABLE,
    )
    return RolloutStatus.FAILED, columns


REASON_LINE = 200  # a scored rollout's reason: the rationale's first line, short enough for a table cell


def first_line(text: str | None, limit: int = REASON_LINE) -> str:
    """The first line of ``text`` as a rollout's short reason: at most ``limit`` characters, a longer line cut
    between words and marked with "…" (the whole text stays in the rationale)."""
    stripped = (text or "").strip()
    line = stripped.splitlines()[0] if stripped else ""
    return clipped(line, limit, words=True)
