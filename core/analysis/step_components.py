"""The means of a rollout's score components (core/scoring/components.py), per run: what the training view plots
step by step (each training step is a run), one metric at a time.

Read from the columns every rollout already has (no migration): ``svg`` (the SVG found), ``png`` (the picture made),
``total``, ``fulfilled`` (a person's override first), ``raw_answer``'s length (its original length when the store
cut it: ``truncated_json``), the policy's tokens, and the score. The parts of an answer (SVG found, rendered, length,
tokens) count over the rollouts that got one; ``fulfilled`` and ``score`` over those with a valid score.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from svgagent.core.scoring.components import COMPONENTS, Component
from svgagent.core.store.run_store import Store

SCORE = Component("score", "score", True)
PLOTTED: tuple[Component, ...] = (SCORE, *COMPONENTS)  # the order `m` cycles through in the training view

_ANSWERED = "raw_answer IS NOT NULL"
_VALID = "is_score_valid = 1"
_SQL: dict[str, str] = {
    "score": f"AVG(CASE WHEN {_VALID} THEN COALESCE(override_score, score) END)",
    "svg_found": f"AVG(CASE WHEN {_ANSWERED} THEN svg IS NOT NULL END)",
    "rendered": f"AVG(CASE WHEN {_ANSWERED} THEN svg IS NOT NULL AND png IS NOT NULL END)",
    "requirement_count": "AVG(total)",
    "fulfilled": f"AVG(CASE WHEN {_VALID} THEN COALESCE(override_fulfilled, fulfilled) END)",
    "answer_chars": f"AVG(CASE WHEN {_ANSWERED} THEN COALESCE(json_extract(truncated_json, '$.raw_answer'),"
    " length(raw_answer)) END)",
    "completion_tokens": f"AVG(CASE WHEN {_ANSWERED} THEN completion_tokens END)",
    "prompt_tokens": f"AVG(CASE WHEN {_ANSWERED} THEN prompt_tokens END)",
}
assert set(_SQL) == {c.key for c in PLOTTED}


@dataclass(frozen=True, slots=True)
class StepComponents:
    run_id: str
    rollouts: int
    means: dict[str, float | None]  # component key -> mean over the run's current rollouts (None: nothing to average)


def step_components(store: Store, run_ids: Sequence[str]) -> dict[str, StepComponents]:
    """Every component's mean for each of ``run_ids`` (runs without rollouts are left out)."""
    out: dict[str, StepComponents] = {}
    keys = [c.key for c in PLOTTED]
    for start in range(0, len(run_ids), 500):  # SQLite's bound-parameter limit
        chunk = list(run_ids[start : start + 500])
        marks = ",".join("?" * len(chunk))
        rows = store.query(
            f"SELECT run_id, COUNT(*), {', '.join(_SQL[k] for k in keys)} FROM rollouts"
            f" WHERE is_current = 1 AND run_id IN ({marks}) GROUP BY run_id",
            chunk,
        )
        for row in rows:
            means = {k: (None if v is None else float(v)) for k, v in zip(keys, tuple(row)[2:], strict=True)}
            out[row[0]] = StepComponents(row[0], int(row[1]), means)
    return out


def series(steps: Sequence[StepComponents | None], key: str) -> list[float | None]:
    """One component's means in the order of ``steps`` (None where a step has no value)."""
    return [None if s is None else s.means.get(key) for s in steps]
