"""What became of a finished rollout, in one word: scored · invalid · failed — the one vocabulary every surface uses
(the app's table, summary bar, stats and run picker; `eval`'s summary and `--json`; `runs show/list/stats`; the
exports). The README defines the three words the same way, once.

- **scored**: it has a valid score, which counts toward the mean — the judge's verdict, a person's override, or the
  model's 0 for an answer without a usable SVG (the model's answer, not a failure).
- **invalid**: it finished without a valid score though nothing broke — the judge's answer was unusable, the judge
  profile counts a render failure as invalid, or no judge was asked (a served rollout without ``--judge``). Not in
  the mean.
- **failed**: an endpoint or svgagent failed it — unreachable, timed out, a rejected key, rate limited, an HTTP error,
  an answer that is not a chat completion, an internal error, a stop. No score; not in the mean.

A rollout that has not finished has no outcome (None): its status (queued, generating, …) says where it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from svgagent.core.scoring.models import FailureKind, RolloutStatus


class Outcome(StrEnum):
    SCORED = "scored"
    INVALID = "invalid"
    FAILED = "failed"


OUTCOMES = (Outcome.SCORED, Outcome.INVALID, Outcome.FAILED)
# the word a rollout's state is shown and filtered (`status:`) by: where it is until it finished, then its outcome
STATE_WORDS = (*(s.value for s in RolloutStatus if not s.terminal), *(o.value for o in OUTCOMES))

MEANINGS: dict[Outcome, str] = {
    Outcome.SCORED: "a valid score, in the mean: the judge's verdict, your override, or the model's 0 for no usable SVG",
    Outcome.INVALID: "finished without a valid score, nothing broke: an unusable judge answer, or no judge asked",
    Outcome.FAILED: "an endpoint or svgagent failed it (unreachable, timeout, key, rate limit, HTTP error, stop)",
}

# failure kinds that are the answer's or the judge's verdict, not a breakdown (the rest: an endpoint or svgagent)
_NOT_BROKEN = frozenset({FailureKind.NO_SVG, FailureKind.RENDER, FailureKind.JUDGE_UNUSABLE})


def outcome_of(
    status: RolloutStatus,
    *,
    score_valid: bool | None,
    score: float | None,
    overridden: bool,
    failure_kind: FailureKind | None,
) -> Outcome | None:
    """The outcome of a rollout with these columns (None: not finished). The one classification: every count and
    every word on screen, in the CLI and in the exports comes from here."""
    if not status.terminal:
        return None
    if overridden or (score_valid and score is not None):
        return Outcome.SCORED
    if status is RolloutStatus.FAILED and failure_kind not in _NOT_BROKEN:
        return Outcome.FAILED
    return Outcome.INVALID


@dataclass(frozen=True, slots=True)
class OutcomeCounts:
    scored: int = 0
    invalid: int = 0
    failed: int = 0

    @property
    def unscored(self) -> int:
        """Finished without a valid score: invalid or failed (not in the mean)."""
        return self.invalid + self.failed

    def text(self, *, all_three: bool = False) -> str:
        """``30 scored · 2 invalid · 1 failed``; without ``all_three`` a zero invalid or failed is left out."""
        parts = [f"{self.scored} scored"]
        for word, n in (("invalid", self.invalid), ("failed", self.failed)):
            if n or all_three:
                parts.append(f"{n} {word}")
        return " · ".join(parts)

    def to_dict(self) -> dict[str, int]:
        return {"scored": self.scored, "invalid": self.invalid, "failed": self.failed}
