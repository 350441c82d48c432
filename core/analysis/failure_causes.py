"""Why a run's rollouts failed, in one line each: the kinds of failure, most frequent first, with how many.

The one home of "what went wrong in this run": `svgagent eval` prints the endpoint lines after its summary, and
the app names the dominant cause in its summary bar and in the run-end notification (the message log keeps it) —
"policy endpoint unreachable: http://127.0.0.1:9/v1 — 33 of 33" instead of a bare "mean – (FAIL)".

Only failures without a valid score count: a missing or unrenderable SVG that scored the model's valid 0 is the
model's answer, not a failure of the run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from svgagent.core.scoring.models import FailureKind
from svgagent.core.store.run_store import Store

_DETAIL = re.compile(r"\s+\([^()]*\)$")  # a reason's closing "(connection refused; 3 retries)"


@dataclass(frozen=True)
class FailureCause:
    """``count`` of the run's ``total`` rollouts failed as ``kind``; ``reason`` is one of them's reason."""

    kind: FailureKind
    count: int
    total: int
    reason: str

    @property
    def headline(self) -> str:
        """The reason without its closing detail, and the count: "… unreachable: http://h/v1 — 33 of 33"."""
        return f"{_DETAIL.sub('', self.first_line)} — {self.count} of {self.total}"

    @property
    def line(self) -> str:
        """The whole first line of the reason, and the count (the notification, the message log)."""
        return f"{self.first_line} — {self.count} of {self.total}"

    @property
    def first_line(self) -> str:
        stripped = self.reason.strip()
        return stripped.splitlines()[0] if stripped else f"failed ({self.kind.value})"


def failure_causes(store: Store, run_id: str) -> list[FailureCause]:
    """The run's current failures without a valid score, one per kind, the most frequent first (then by kind)."""
    kinds = store.failure_kinds(run_id, invalid_only=True)
    if not kinds:
        return []
    total = sum(store.status_counts(run_id).values())
    causes = [FailureCause(kind, count, total, reason) for kind, (count, reason) in kinds.items()]
    return sorted(causes, key=lambda c: (-c.count, c.kind.value))


def dominant_failure(store: Store, run_id: str) -> FailureCause | None:
    """The most frequent failure of the run (None: no rollout failed without a valid score)."""
    causes = failure_causes(store, run_id)
    return causes[0] if causes else None
