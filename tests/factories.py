"""Runs with fixed data in a temporary store, for the TUI's Pilot and snapshot tests (no simulator, no engine).

Pictures are real PNGs rendered with cairosvg from fixed SVGs, so the half-block preview is the same every time.
Run ids normally carry the clock; here they are fixed so the screens are deterministic.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any
from unittest import mock

import cairosvg

from svgagent.core.scoring.models import DatasetRow, FailureKind, RolloutStatus
from svgagent.core.store.run_store import Store

RUN_ID = "20260101-120000-test"

SCENE_SVG = """<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 100 100" width="100" height="100">
  <rect width="100" height="100" fill="#87ceeb"/>
  <circle cx="72" cy="26" r="14" fill="#ffcc00"/>
  <rect y="70" width="100" height="30" fill="#228b22"/>
  <polygon points="20,70 40,45 60,70" fill="#8b4513"/>
</svg>"""

FLAG_SVG = """<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 120 80" width="120" height="80">
  <rect width="120" height="80" fill="#ffffff"/>
  <rect width="40" height="80" fill="#0055a4"/>
  <rect x="80" width="40" height="80" fill="#ef4135"/>
</svg>"""

REQUIREMENTS = (
    "The sky is light blue.",
    "A yellow sun is in the upper right.",
    "Green grass covers the bottom third.",
    "A brown triangle stands on the grass.",
)


@lru_cache(maxsize=8)
def render_png(svg: str, size: int = 96) -> bytes:
    return cairosvg.svg2png(bytestring=svg.encode(), output_width=size)


@dataclass
class Spec:
    """One rollout of a fixture run (row ``row`` / sample ``sample``)."""

    row: int
    sample: int = 0
    status: RolloutStatus = RolloutStatus.SCORED
    fulfilled: int | None = None
    prompt: str = "Draw a landscape with a sun"
    requirements: tuple[str, ...] = REQUIREMENTS
    svg: str | None = SCENE_SVG
    rationale: str | None = "The sky, sun and grass are present; the triangle is too small to count."
    verdicts: list[list[Any]] | None = None
    valid: bool = True
    reason: str | None = None
    error: str | None = None
    gen_s: float | None = 1.5
    judge_s: float | None = 0.8
    tokens: tuple[int, int] | None = (120, 340)
    override: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def standard_specs() -> list[Spec]:
    """Six rollouts covering the states the table and preview draw."""
    per_req = [
        [1, True, "light blue background"],
        [2, True, "yellow circle top right"],
        [3, True, "green band at the bottom"],
        [4, False, "no triangle visible"],
    ]
    return [
        Spec(0, fulfilled=3, verdicts=per_req),
        Spec(
            1,
            fulfilled=4,
            prompt="Draw the French flag",
            svg=FLAG_SVG,
            requirements=("Three vertical bands.", "Blue on the left.", "Red on the right.", "White middle."),
            rationale="All four requirements are met.",
        ),
        Spec(
            2,
            status=RolloutStatus.FAILED,
            fulfilled=0,
            svg=None,
            rationale=None,
            reason="no <svg> element in the answer",
            judge_s=None,
            prompt="Draw a red bicycle",
            extra={"failure_kind": FailureKind.NO_SVG},
        ),
        Spec(
            3,
            status=RolloutStatus.FAILED,
            fulfilled=None,
            valid=False,
            rationale=None,
            reason="judge unreachable: connection refused",
            error="judge: connection refused (3 retries)",
            judge_s=None,
            prompt="Draw a lighthouse at night",
            extra={"failure_kind": FailureKind.UNREACHABLE},
        ),
        Spec(4, fulfilled=1, override=3, prompt="Draw a cat sitting on a mat"),
        Spec(
            5,
            status=RolloutStatus.QUEUED,
            fulfilled=None,
            svg=None,
            rationale=None,
            gen_s=None,
            judge_s=None,
            tokens=None,
            prompt="Draw a sailboat on waves",
        ),
    ]


def build_run(
    store: Store,
    specs: Sequence[Spec] | None = None,
    *,
    run_id: str = RUN_ID,
    name: str = "fixture run",
    threshold: float = 0.5,
    judge_mode: str = "count",
) -> str:
    """Create ``run_id`` in ``store`` with one rollout per spec, in the states the specs describe."""
    specs = list(specs if specs is not None else standard_specs())
    rows: dict[int, DatasetRow] = {}
    for spec in specs:
        rows.setdefault(spec.row, DatasetRow(spec.row, f"row_{spec.row}", spec.prompt, tuple(spec.requirements)))
    samples = max(s.sample for s in specs) + 1
    settings = {
        "model": "fixture-policy",
        "judge_model": "fixture-judge",
        "threshold": threshold,
        "judge_mode": judge_mode,
        "dataset": "fixture",
    }
    dataset = {"name": "fixture", "source": "fixture", "sha256": "0" * 64, "rows": len(rows)}
    with mock.patch("svgagent.core.store.run_store.new_run_id", return_value=run_id):
        store.create_run(name=name, settings=settings, dataset=dataset, rows=list(rows.values()), samples=samples)
    wanted = {(s.row, s.sample) for s in specs}
    for rec in store.list_rollouts(run_id):
        if (rec.row_index, rec.sample_index) not in wanted:
            store.update_rollout(rec.rollout_id, is_current=False)
    for spec in specs:
        _apply(store, f"{run_id}.{spec.row}.{spec.sample}", spec)
    store.set_run_status(
        run_id,
        "completed" if all(s.status.terminal for s in specs) else "interrupted",
        store.summarize(run_id, threshold),
    )
    return run_id


def _apply(store: Store, rollout_id: str, spec: Spec) -> None:
    fields: dict[str, Any] = {"status": spec.status}
    if spec.status is not RolloutStatus.QUEUED:
        total = len(spec.requirements)
        fields.update(
            svg=spec.svg,
            png=render_png(spec.svg) if spec.svg else None,
            rationale=spec.rationale,
            fulfilled=spec.fulfilled,
            score=None if spec.fulfilled is None else spec.fulfilled / total,
            is_score_valid=spec.valid,
            reason=spec.reason,
            error=spec.error,
            generation_s=spec.gen_s,
            judge_s=spec.judge_s,
            render_s=0.05 if spec.svg else None,
            raw_answer=f"```svg\n{spec.svg}\n```" if spec.svg else "I cannot draw that.",
            finish_reason="stop",
            verdicts_json=json.dumps(spec.verdicts) if spec.verdicts is not None else None,
        )
        if spec.tokens is not None:
            fields.update(prompt_tokens=spec.tokens[0], completion_tokens=spec.tokens[1])
    fields.update(spec.extra)
    store.update_rollout(rollout_id, **fields)
    if spec.override is not None:
        store.set_override(rollout_id, fulfilled=spec.override)


def big_run(store: Store, n: int, *, run_id: str = RUN_ID) -> str:
    """``n`` scored rollouts (no pictures) for load tests: scores cycle through 0, ¼, ½, ¾, 1."""
    rows = [DatasetRow(i, f"row_{i}", f"prompt number {i}", REQUIREMENTS) for i in range(n)]
    with mock.patch("svgagent.core.store.run_store.new_run_id", return_value=run_id):
        store.create_run(
            name="big run", settings={"threshold": 0.5}, dataset={"name": "big", "rows": n}, rows=rows, samples=1
        )
    with store._tx() as db:  # one transaction: a 10,000-row fixture in well under a second
        db.executemany(
            "UPDATE rollouts SET status='scored', fulfilled=?, score=?, is_score_valid=1, generation_s=?,"
            " judge_s=?, prompt_tokens=100, completion_tokens=? WHERE rollout_id=?",
            [(i % 5, (i % 5) / 4, 1 + i % 7, 0.5, 200 + i % 50, f"{run_id}.{i}.0") for i in range(n)],
        )
    return run_id


def serve_training(
    store: Store,
    steps: dict[int, list[Spec]],
    *,
    job_name: str | None = "accounts/test-account/reinforcementFineTuningJobs/svgagent-rft-test",
    experiment: str = "exp-test",
) -> str:
    """A training run as `svgagent serve --judge --job JOB_NAME` stores it: each step's specs as served rollouts
    (eval-protocol's row ids ``row_N``; the samples in spec order). Returns the training id."""
    from types import SimpleNamespace

    from svgagent.core.exchange.ep_status import StatusCode
    from svgagent.core.serve.training_runs import StepHint, TrainingStore

    training = TrainingStore(store, job_name=job_name)
    for step, specs in steps.items():
        model = f"accounts/test-account/models/svgagent-rft-test-step-{step}"
        for n, spec in enumerate(specs):
            ids = SimpleNamespace(
                invocation_id="inv",
                experiment_id=experiment,
                rollout_id=f"{experiment}-s{step}-{n}",
                run_id=f"run-{step}",
                row_id=f"row_{spec.row}",
            )
            place = training.place(ids=ids, model=model, hint=StepHint(step, None, "model"), judged=True)
            total = len(spec.requirements)
            columns: dict[str, Any] = {
                "status": spec.status,
                "raw_answer": f"```svg\n{spec.svg}\n```" if spec.svg else "no drawing",
                "svg": spec.svg,
                "png": render_png(spec.svg) if spec.svg else None,
                "score": None if spec.fulfilled is None else spec.fulfilled / total,
                "fulfilled": spec.fulfilled,
                "is_score_valid": spec.valid,
                "rationale": spec.rationale,
                "reason": spec.reason,
                **spec.extra,
            }
            training.record(
                place,
                ids=ids,
                model=model,
                prompt=spec.prompt,
                requirements=spec.requirements,
                judged=True,
                columns=columns,
                code=StatusCode.FINISHED,
                message="Rollout finished",
            )
    return experiment
