"""Exports of a run: Eval Protocol ``EvaluationRow`` JSONL and a flat CSV. Never includes keys or PNG bytes."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator
from typing import Any, TextIO

from .models import RolloutStatus
from .prompt import format_prompt
from .records import RolloutRecord, RunRecord

# rollout_status codes: 100 finished, 101 running; gRPC codes for errors.
STATUS_FINISHED, STATUS_RUNNING, STATUS_DEADLINE, STATUS_UNAVAILABLE, STATUS_INTERNAL = 100, 101, 4, 14, 13

CSV_COLUMNS = (
    "run_id", "rollout_id", "row_id", "row_index", "sample_index", "attempt", "status", "score", "fulfilled", "total",
    "is_score_valid", "reason", "error", "generation_s", "render_s", "judge_s", "prompt_tokens", "completion_tokens",
    "prompt",
)


def rollout_status(rec: RolloutRecord) -> dict[str, Any]:
    if rec.status is RolloutStatus.SCORED or (rec.status is RolloutStatus.FAILED and rec.is_score_valid):
        return {"code": STATUS_FINISHED, "message": "finished" if rec.status is RolloutStatus.SCORED else (rec.reason or "")}
    if rec.status is RolloutStatus.FAILED:
        text = rec.error or rec.reason or "failed"
        if "timed out" in text:
            code = STATUS_DEADLINE
        elif "unreachable" in text or "rate-limited" in text:
            code = STATUS_UNAVAILABLE
        else:
            code = STATUS_INTERNAL
        return {"code": code, "message": text}
    return {"code": STATUS_RUNNING, "message": rec.status.value}


def evaluation_result(rec: RolloutRecord) -> dict[str, Any] | None:
    if not rec.status.terminal:
        return None
    metrics: dict[str, Any] = {}
    if rec.fulfilled is not None and rec.total:
        metrics["requirements_fulfilled"] = {
            "score": rec.fulfilled / rec.total,
            "is_score_valid": bool(rec.is_score_valid),
            "reason": f"{rec.fulfilled}/{rec.total} requirements fulfilled",
        }
    for index, fulfilled, reason in rec.verdicts or []:
        metrics[f"requirement_{index}"] = {"score": 1.0 if fulfilled else 0.0, "is_score_valid": True, "reason": reason}
    return {
        "score": rec.score if rec.score is not None else 0.0,
        "is_score_valid": bool(rec.is_score_valid),
        "reason": rec.rationale or rec.reason or rec.error or "",
        "metrics": metrics,
    }


def evaluation_row(run: RunRecord, rec: RolloutRecord) -> dict[str, Any]:
    formatted = format_prompt(rec.prompt, rec.requirements)
    messages: list[dict[str, Any]] = [{"role": "user", "content": formatted}]
    if rec.raw_answer is not None:
        messages.append({"role": "assistant", "content": rec.raw_answer})
    settings = run.settings
    duration = sum(x or 0.0 for x in (rec.generation_s, rec.render_s, rec.judge_s))
    return {
        "messages": messages,
        "input_metadata": {
            "row_id": rec.row_id,
            "completion_params": {
                "model": settings.get("model"),
                "temperature": settings.get("temperature"),
                "max_tokens": settings.get("max_tokens"),
                **({"reasoning_effort": settings["reasoning_effort"]} if settings.get("reasoning_effort") else {}),
            },
            "dataset_info": {
                "original_prompt": rec.prompt,
                "requirements": rec.requirements,
                "total_requirements": rec.total,
                "formatted_prompt": formatted,
                "sample_index": rec.sample_index,
            },
        },
        "evaluation_result": evaluation_result(rec),
        "rollout_status": rollout_status(rec),
        "execution_metadata": {
            "invocation_id": run.run_id,
            "experiment_id": run.name,
            "rollout_id": rec.rollout_id,
            "run_id": run.run_id,
            "usage": {
                "prompt_tokens": rec.prompt_tokens or 0,
                "completion_tokens": rec.completion_tokens or 0,
                "total_tokens": rec.tokens,
            },
            "duration_seconds": duration,
        },
        "created_at": rec.created,
    }


def iter_jsonl(run: RunRecord, rollouts: Iterable[RolloutRecord]) -> Iterator[str]:
    for rec in rollouts:
        yield json.dumps(evaluation_row(run, rec), ensure_ascii=False) + "\n"


def write_csv(rollouts: Iterable[RolloutRecord], out: TextIO) -> int:
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, extrasaction="ignore")
    writer.writeheader()
    count = 0
    for rec in rollouts:
        row = {name: getattr(rec, name, None) for name in CSV_COLUMNS}
        row["status"] = rec.status.value
        writer.writerow(row)
        count += 1
    return count


def csv_text(rollouts: Iterable[RolloutRecord]) -> str:
    buf = io.StringIO()
    write_csv(rollouts, buf)
    return buf.getvalue()
