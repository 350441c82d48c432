"""The platform's own training curves of an RFT job (reward, loss, eval reward per step), read from the job.

fireworks-ai 1.2.30's ``ReinforcementFineTuningJob`` has no typed per-step metrics: it has ``jobProgress`` (percent,
epoch, request and token counts) and ``outputMetrics``, a string whose content the API reference does not describe
(docs/rft.md, "The platform's curves": what is documented and what is assumed). This module reads ``outputMetrics``
as JSON, in any of these shapes, and gives up quietly (no curves) on anything else:

- ``{"steps": [{"step": 1, "reward": 0.4, "loss": 0.1, ...}, ...]}`` or that list alone (one object per step; what
  the control-plane simulator serves);
- ``{"reward": [0.4, 0.5, ...]}`` (steps 1, 2, ...), ``{"reward": [[1, 0.4], ...]}`` or
  ``{"reward": [{"step": 1, "value": 0.4}, ...]}`` (one series per metric);
- ``{"reward": 0.61, ...}`` (final values only: kept as ``finals``, no curve).

Metric names are matched case-insensitively with their aliases (``train/reward``, ``mean_reward``, ``score`` →
reward; ``train/loss`` → loss; ``eval/reward``, ``eval_mean_reward``, ``evalReward`` → eval reward); other numeric
series are kept under their own (capped) names. The text is outside data: sizes are capped, names are shown through
the screens' escaping.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

REWARD, LOSS, EVAL_REWARD = "reward", "loss", "eval_reward"
KNOWN = (REWARD, LOSS, EVAL_REWARD)
LABELS = {REWARD: "reward", LOSS: "loss", EVAL_REWARD: "eval reward"}
_ALIASES = {
    REWARD: ("reward", "train/reward", "train_reward", "mean_reward", "train_mean_reward", "score", "avg_reward"),
    LOSS: ("loss", "train/loss", "train_loss", "policy_loss"),
    EVAL_REWARD: ("eval_reward", "eval/reward", "evalreward", "eval_mean_reward", "eval_score", "validation_reward"),
}
_CANONICAL = {alias: name for name, aliases in _ALIASES.items() for alias in aliases}
_STEP_KEYS = ("step", "global_step", "training_step", "trainingstep")
MAX_TEXT = 4 << 20  # characters of outputMetrics read at all
MAX_SERIES = 24
MAX_POINTS = 10_000
NAME_CAP = 40
_NAME_OK = re.compile(r"[^a-z0-9_./-]+")


@dataclass(frozen=True)
class JobCurves:
    """Per-step series (metric → ((step, value), ...) in step order) and final values (metric → value)."""

    series: dict[str, tuple[tuple[int, float], ...]] = field(default_factory=dict)
    finals: dict[str, float] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.series or self.finals)

    def names(self) -> list[str]:
        """The series, the known ones first (reward, loss, eval reward), then the others by name."""
        return [n for n in KNOWN if n in self.series] + sorted(n for n in self.series if n not in KNOWN)

    def last(self, name: str) -> float | None:
        points = self.series.get(name)
        if points:
            return points[-1][1]
        return self.finals.get(name)


def _name(raw: object) -> str | None:
    text = str(raw).strip().lower().replace(" ", "_")
    if text in _CANONICAL:
        return _CANONICAL[text]
    if text.replace("_", "") in _CANONICAL:
        return _CANONICAL[text.replace("_", "")]
    cleaned = _NAME_OK.sub("", text)[:NAME_CAP]
    return cleaned or None


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                return None
        else:
            return None
    number = float(value)
    return number if math.isfinite(number) else None


def _step(value: object) -> int | None:
    number = _number(value)
    return int(number) if number is not None and number == int(number) and 0 <= number < 10**9 else None


def _from_rows(rows: list[Any]) -> dict[str, dict[int, float]]:
    out: dict[str, dict[int, float]] = {}
    for position, row in enumerate(rows[:MAX_POINTS], start=1):
        if not isinstance(row, Mapping):
            continue
        step = next((_step(row[k]) for k in row if str(k).lower() in _STEP_KEYS), None)
        step = position if step is None else step
        for key, value in row.items():
            if str(key).lower() in _STEP_KEYS or str(key).lower() == "epoch":
                continue
            name, number = _name(key), _number(value)
            if name is not None and number is not None:
                out.setdefault(name, {})[step] = number
    return out


def _from_series(name: str, values: list[Any]) -> dict[int, float]:
    points: dict[int, float] = {}
    for position, item in enumerate(values[:MAX_POINTS], start=1):
        step: int | None = position
        if isinstance(item, (list, tuple)) and len(item) == 2:
            step, number = _step(item[0]), _number(item[1])
        elif isinstance(item, Mapping):
            raw_step = next((item[k] for k in item if str(k).lower() in _STEP_KEYS), position)
            step, number = _step(raw_step), _number(item.get("value", item.get(name)))
        else:
            number = _number(item)
        if step is not None and number is not None:
            points[step] = number
    return points


def parse_output_metrics(text: object) -> JobCurves:
    """The curves in a job's ``outputMetrics`` (see the module docstring); empty when there are none."""
    if isinstance(text, str):
        if not text.strip() or len(text) > MAX_TEXT:
            return JobCurves()
        try:
            data: Any = json.loads(text)
        except ValueError:
            return JobCurves()
    else:
        data = text
    found: dict[str, dict[int, float]] = {}
    finals: dict[str, float] = {}
    if isinstance(data, list):
        found = _from_rows(data)
    elif isinstance(data, Mapping):
        rows = data.get("steps")
        if isinstance(rows, list):
            found = _from_rows(rows)
        for key, value in data.items():
            if key == "steps":
                continue
            name = _name(key)
            if name is None:
                continue
            if isinstance(value, list):
                points = _from_series(name, value)
                if points:
                    found.setdefault(name, {}).update(points)
            elif (number := _number(value)) is not None:
                finals[name] = number
    series = {name: tuple(sorted(points.items())) for name, points in list(found.items())[:MAX_SERIES] if points}
    return JobCurves(series, dict(list(finals.items())[:MAX_SERIES]))


def job_curves(job: Mapping[str, Any]) -> JobCurves:
    """The curves of a job as the control plane returns it (wire/camelCase form)."""
    return parse_output_metrics(job.get("outputMetrics"))


def curves_line(curves: JobCurves) -> str:
    """One line: each series' first and last value and the steps reported ("" when there are none)."""
    parts = []
    for name in curves.names()[:4]:
        points = curves.series[name]
        label = LABELS.get(name, name)
        first, last = points[0][1], points[-1][1]
        parts.append(f"{label} {first:.3g} → {last:.3g}" if len(points) > 1 else f"{label} {last:.3g}")
    steps = {step for points in curves.series.values() for step, _ in points}
    if parts:
        return " · ".join(parts) + f" ({len(steps)} step{'s' if len(steps) != 1 else ''})"
    if curves.finals:
        return " · ".join(f"{LABELS.get(k, k)} {v:.3g}" for k, v in list(curves.finals.items())[:4])
    return ""
