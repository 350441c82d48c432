"""The simulated platform's own training curves: what the simulated control plane reports as a job's per-step
metrics (reward, loss, eval reward) in its ``outputMetrics`` field.

Modelled, not measured: the simulated trainer does not run the evaluator bundle on the rollouts (the rollout
server's local judge already scores them, and twice the rendering would only slow the demo). A step's reward is the
share of good drawings the policy simulator gives the step's checkpoint for the step's prompts
(:func:`~svgagent.core.sim.policy_skill.skill`) with a little deterministic noise — so it rises with training
as the pictures do — except inside the reward-hacking window, where the judge is fooled by text and the reward
jumps while the drawings do not improve (what a person should notice beside the local mean). The loss falls as the
reward's room to grow shrinks; the eval reward, on held-out prompts, is reported every other step and at the last,
without the hack's boost.

The wire format — ``outputMetrics`` as a JSON string ``{"steps": [{"step", "epoch", "reward", "loss",
"eval_reward"?}, ...]}`` — is this simulator's assumption (docs/rft.md, "The platform's curves"); the reader
(:mod:`svgagent.core.rft.job_metrics`) accepts other plausible shapes too.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from svgagent.core.sim.content import digest
from svgagent.core.sim.policy_skill import Trained, base_skill, hacking, skill

HACKED_REWARD = 0.92  # what the fooled judge gives an answer of the reward-hacking window
NOISE = 0.04
MAX_STEPS_REPORTED = 10_000


def _noise(*parts: object) -> float:
    """A number in [-NOISE, NOISE) from the parts' hash."""
    return (int.from_bytes(digest(*parts)[:8], "big") / 2**64 * 2 - 1) * NOISE


def _clamp(value: float) -> float:
    return round(min(1.0, max(0.0, value)), 4)


def step_metrics(
    job_id: str,
    step: int,
    epoch: int,
    model: str,
    prompts: Sequence[str],
    trained: Mapping[str, Trained],
    *,
    last: bool = False,
) -> dict[str, Any]:
    """One step's metrics for a checkpoint ``model`` answering ``prompts`` (the step's prompts, once per sample)."""
    if not prompts:
        return {"step": step, "epoch": epoch}
    rewards = [HACKED_REWARD if hacking(model, p, trained) else skill(model, p, trained) for p in prompts]
    honest = [skill(model, p, trained) for p in prompts]
    reward = _clamp(sum(rewards) / len(rewards) + _noise("reward", job_id, step))
    loss = round(max(0.0, 0.35 * (1.0 - sum(honest) / len(honest)) + _noise("loss", job_id, step) / 2), 4)
    out: dict[str, Any] = {"step": step, "epoch": epoch, "reward": reward, "loss": loss}
    if step % 2 == 0 or last:
        out["eval_reward"] = _clamp(sum(honest) / len(honest) - 0.03 + _noise("eval", job_id, step) / 2)
    return out


def modelled_steps(job_id: str, base_model: str, steps: int, done: int, epochs: int) -> list[dict[str, Any]]:
    """The curves of a job whose steps only the clock moves (not the trainer): the base model's skill rising
    towards the ceiling, ``done`` of ``steps`` steps so far."""
    start = base_skill(base_model)
    out = []
    for step in range(1, min(done, MAX_STEPS_REPORTED) + 1):
        honest = start + (0.9 - start) * (1.0 - math.exp(-(step - 1) / 2.5))
        row: dict[str, Any] = {
            "step": step,
            "epoch": min(epochs - 1, (step - 1) * epochs // max(steps, 1)),
            "reward": _clamp(honest + _noise("reward", job_id, step)),
            "loss": round(max(0.0, 0.35 * (1.0 - honest) + _noise("loss", job_id, step) / 2), 4),
        }
        if step % 2 == 0 or step == steps:
            row["eval_reward"] = _clamp(honest - 0.03 + _noise("eval", job_id, step) / 2)
        out.append(row)
    return out


def output_metrics(rows: Sequence[Mapping[str, Any]]) -> str:
    """The ``outputMetrics`` string of a job that reported ``rows`` (one per step)."""
    return json.dumps({"steps": list(rows)[-MAX_STEPS_REPORTED:]}, separators=(",", ":"))
