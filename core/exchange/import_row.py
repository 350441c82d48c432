"""One evaluated Eval Protocol row (a decoded JSONL line) → the rollout columns svgagent stores.

Mapping:

- prompt and requirements: ``input_metadata.dataset_info.{original_prompt, requirements}``; else parsed from
  ``dataset_info.formatted_prompt`` or the first user message (the SVGBench format: prompt, instruction, example,
  ``Requirements:`` and numbered lines).
- row identity: ``input_metadata.row_id`` (else a stable hash of prompt and requirements).
- answer: the last assistant message (text parts joined when the content is a list of parts).
- score: ``evaluation_result.score`` / ``is_score_valid`` / ``reason``; ``rollout_status.code`` 100 (or absent)
  means finished, another gRPC code means the rollout failed (its message becomes the error). A valid score on a
  finished rollout → ``scored``; an invalid score → ``failed`` without a valid score.
- no ``evaluation_result`` but an answer → ``queued`` with the answer stored and ``finish_reason`` set (the
  original one, else ``imported``): the engine then skips generation and only renders and judges it.
- ``execution_metadata.usage`` → tokens; ``rollout_duration_seconds`` / ``eval_duration_seconds`` → timings.
- an ``execution_metadata.extra["svgagent"]`` block (our own exports) restores what Eval Protocol has no field
  for — the judge's score next to a person's override, reason, error, verdicts, stage timings — but only when it
  agrees with the standard fields; the standard fields always decide the effective score.

Every value is checked for type, range and size: a line that breaks a rule raises :class:`LineError` naming it.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from svgagent.core.exchange.ep_status import failure_kind_of, status_name
from svgagent.core.exchange.export import EXTRA_FORMAT, EXTRA_KEY
from svgagent.core.exchange.import_extra import MAX_SECONDS, SvgagentExtra, validate_extra
from svgagent.core.run.prompt import format_prompt
from svgagent.core.scoring.extract import extract_svg
from svgagent.core.scoring.models import MAX_TOKEN_COUNT, FailureKind, RolloutStatus
from svgagent.core.store.size_caps import MAX_REQUIREMENTS, PROMPT_CAP, REQUIREMENT_CAP
from svgagent.core.store.verdict_columns import first_line
from svgagent.core.terminal_text import clipped

IMPORTED_FINISH_REASON = "imported"
FINISHED, RUNNING = 100, 101
_NUMBERED = re.compile(r"\s*(\d+)[.)]\s?(.*)")


class LineError(ValueError):
    """One line cannot be imported; the message says why."""


@dataclass(frozen=True, slots=True)
class ParsedRollout:
    """One usable line: the row it belongs to and the rollout columns to store."""

    line: int
    row_id: str
    prompt: str
    requirements: tuple[str, ...]
    columns: dict[str, Any]
    completion_params: dict[str, Any] = field(default_factory=dict)
    recipe: dict[str, str] = field(default_factory=dict)  # judge_profile, renderer: input_metadata.session_data

    @property
    def status(self) -> RolloutStatus:
        return RolloutStatus(self.columns["status"])


def parse_evaluation_row(obj: Any, line: int = 0) -> ParsedRollout:
    """One evaluated ``EvaluationRow`` (a decoded JSON object) → a :class:`ParsedRollout`. Raises LineError."""
    if not isinstance(obj, dict):
        raise LineError(f"expected a JSON object, got {kind_of(obj)}")
    messages = obj.get("messages")
    if messages is None:
        messages = []
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise LineError("'messages' must be a list of message objects")
    meta = _obj(obj, "input_metadata")
    info = _obj(meta, "dataset_info", "input_metadata.")
    prompt, requirements = _prompt_and_requirements(info, messages)
    total = info.get("total_requirements")
    if total is not None and total != len(requirements):
        raise LineError(f"dataset_info.total_requirements is {total!r} but there are {len(requirements)} requirements")
    row_id = meta.get("row_id")
    if row_id is None:
        digest = hashlib.sha256(json.dumps([prompt, list(requirements)]).encode()).hexdigest()[:12]
        row_id = f"row_{digest}"
    elif not isinstance(row_id, str) or not row_id.strip():
        raise LineError(f"input_metadata.row_id must be a non-empty string, got {row_id!r}")
    answer = _last_assistant(messages)
    execution = _obj(obj, "execution_metadata")
    columns = _outcome(obj, answer, len(requirements))
    columns.update(_usage_and_timing(execution))
    if answer is not None:
        columns["raw_answer"] = answer
        columns["finish_reason"] = _str(execution.get("finish_reason")) or IMPORTED_FINISH_REASON
        columns["svg"] = extract_svg(answer).svg
    extra = (execution.get("extra") or {}).get(EXTRA_KEY) if isinstance(execution.get("extra"), dict) else None
    if isinstance(extra, dict) and extra.get("format") == EXTRA_FORMAT:
        try:
            block = validate_extra(extra, len(requirements))
        except ValueError as err:
            raise LineError(f"execution_metadata.extra.{EXTRA_KEY} is invalid: {err}") from None
        _restore_extra(columns, block, len(requirements))
    created = obj.get("created_at")
    if isinstance(created, str) and created.strip():
        columns["created"] = created
    params = meta.get("completion_params")
    session = meta.get("session_data")
    recipe = {
        key: session[key]
        for key in ("judge_profile", "renderer")
        if isinstance(session, dict) and isinstance(session.get(key), str) and 0 < len(session[key]) <= 200
    }
    return ParsedRollout(
        line, row_id, prompt, requirements, columns, params if isinstance(params, dict) else {}, recipe
    )


def parse_formatted_prompt(text: str) -> tuple[str, tuple[str, ...]] | None:
    """(prompt, requirements) from an SVGBench formatted prompt, or None when ``text`` has no requirements list.

    The exact format (``format_prompt``) is recognised first, so the prompt comes back byte-identical; otherwise
    the prompt is everything before the last ``Requirements:`` line."""
    suffix = format_prompt("", [])  # instruction, example and "Requirements:\n" — what follows the prompt
    cut = text.rfind(suffix)
    if cut >= 0:
        prompt, tail = text[:cut], text[cut + len(suffix) :]
    else:
        match = None
        for match in re.finditer(r"(?im)^\s*requirements\s*:\s*$", text):  # noqa: B007 -- the last match is used after the loop
            pass
        if match is None:
            return None
        prompt, tail = text[: match.start()].strip(), text[match.end() :]
    requirements: list[str] = []
    for line in tail.split("\n"):
        numbered = _NUMBERED.fullmatch(line)
        if numbered and int(numbered.group(1)) == len(requirements) + 1:
            requirements.append(numbered.group(2))
        elif line.strip() and requirements:
            requirements[-1] += "\n" + line
        elif line.strip():
            return None
    if not prompt.strip() or not requirements or not all(r.strip() for r in requirements):
        return None
    return prompt, tuple(requirements)


def _prompt_and_requirements(info: dict[str, Any], messages: list[dict[str, Any]]) -> tuple[str, tuple[str, ...]]:
    original, reqs = info.get("original_prompt"), info.get("requirements")
    if original is not None or reqs is not None:
        if not isinstance(original, str) or not original.strip():
            raise LineError("dataset_info.original_prompt must be a non-empty string")
        if not isinstance(reqs, list) or not reqs or not all(isinstance(r, str) and r.strip() for r in reqs):
            raise LineError("dataset_info.requirements must be a non-empty list of non-empty strings")
        return _within_caps(original, tuple(reqs))
    candidates = [info.get("formatted_prompt")]
    candidates += [_text(m.get("content")) for m in messages if m.get("role") == "user"][:1]
    for text in candidates:
        if isinstance(text, str) and len(text) <= PROMPT_CAP * 2:
            found = parse_formatted_prompt(text)
            if found is not None:
                return _within_caps(*found)
    raise LineError("no prompt with numbered requirements (neither input_metadata.dataset_info nor the user message)")


def _within_caps(prompt: str, requirements: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    if len(prompt) > PROMPT_CAP:
        raise LineError(f"the prompt is {len(prompt):,} characters (at most {PROMPT_CAP:,})")
    if len(requirements) > MAX_REQUIREMENTS or max(len(r) for r in requirements) > REQUIREMENT_CAP:
        raise LineError(
            f"too many or too long requirements (at most {MAX_REQUIREMENTS} of {REQUIREMENT_CAP:,} characters each)"
        )
    return prompt, requirements


def _real(value: Any) -> float | None:
    """``value`` as a finite float when it is a JSON number a float can hold (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        real = float(value)
    except OverflowError:  # an integer of hundreds of digits
        return None
    return real if math.isfinite(real) else None


def _shown(value: Any) -> str:
    text = (
        repr(value)
        if not isinstance(value, int) or abs(value) < 10**30
        else f"an integer of {len(str(abs(value)))} digits"
    )
    return clipped(text, 60)


def _outcome(obj: dict[str, Any], answer: str | None, total: int) -> dict[str, Any]:
    """Status, score and reasons from evaluation_result and rollout_status."""
    status = obj.get("rollout_status")
    if status is not None and not isinstance(status, dict):
        raise LineError(f"rollout_status must be an object, got {kind_of(status)}")
    code = (status or {}).get("code")
    if code is not None and (isinstance(code, bool) or not isinstance(code, int)):
        raise LineError(f"rollout_status.code must be an integer, got {code!r}")
    message = _str((status or {}).get("message"))
    rollout_error = None
    if code not in (None, FINISHED, RUNNING):
        rollout_error = f"rollout failed ({status_name(code)} {code})" + (f": {message}" if message else "")
    result = obj.get("evaluation_result")
    kind = failure_kind_of(code) if rollout_error is not None else FailureKind.OTHER
    if result is None:
        if rollout_error is not None:
            return {
                "status": RolloutStatus.FAILED,
                "is_score_valid": False,
                "reason": message or rollout_error,
                "error": rollout_error,
                "failure_kind": kind,
            }
        if answer is None:
            raise LineError("not an evaluated row: no assistant answer, no evaluation_result and no error status")
        return {"status": RolloutStatus.QUEUED}
    if not isinstance(result, dict):
        raise LineError(f"evaluation_result must be an object, got {kind_of(result)}")
    score = result.get("score")
    if _real(score) is None:
        raise LineError(f"evaluation_result.score must be a finite number, got {_shown(score)}")
    if not 0.0 <= score <= 1.0:
        raise LineError(f"evaluation_result.score must be between 0 and 1, got {_shown(score)}")
    valid = result.get("is_score_valid", True)
    if not isinstance(valid, bool):
        raise LineError(f"evaluation_result.is_score_valid must be true or false, got {valid!r}")
    explanation = _str(result.get("reason")) or ""
    if not valid:
        return {
            "status": RolloutStatus.FAILED,
            "score": None,
            "is_score_valid": False,
            "reason": first_line(explanation) or message or "score invalid",
            "error": rollout_error or "score invalid (is_score_valid is false)",
            "rationale": explanation or None,
            "failure_kind": kind if rollout_error is not None else FailureKind.JUDGE_UNUSABLE,
        }
    columns: dict[str, Any] = {
        "status": RolloutStatus.SCORED if rollout_error is None else RolloutStatus.FAILED,
        "score": float(score),
        "is_score_valid": True,
        "reason": first_line(explanation) or None,
        "rationale": explanation or None,
        "error": rollout_error,
        "fulfilled": _fulfilled(result, float(score), total),
        "failure_kind": kind if rollout_error is not None else None,
    }
    verdicts = _metric_verdicts(result.get("metrics"), total)
    if verdicts is not None:
        columns["verdicts_json"] = json.dumps(verdicts)
    return columns


def _fulfilled(result: dict[str, Any], score: float, total: int) -> int | None:
    metrics = result.get("metrics")
    metric = metrics.get("requirements_fulfilled") if isinstance(metrics, dict) else None
    candidates = [metric.get("score")] if isinstance(metric, dict) else []
    for value in [*candidates, score]:
        if _real(value) is not None:
            count = value * total
            if abs(count - round(count)) < 1e-6 and 0 <= round(count) <= total:
                return round(count)
    return None


def _metric_verdicts(metrics: Any, total: int) -> list[list[Any]] | None:
    if not isinstance(metrics, dict):
        return None
    out = []
    for index in range(1, total + 1):
        metric = metrics.get(f"requirement_{index}")
        if not isinstance(metric, dict) or not isinstance(metric.get("score"), int | float):
            return None
        out.append([index, metric["score"] >= 0.5, _str(metric.get("reason")) or ""])
    return out


def _usage_and_timing(execution: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    usage = execution.get("usage")
    if isinstance(usage, dict):
        for key in ("prompt_tokens", "completion_tokens"):
            value = usage.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_TOKEN_COUNT:
                out[key] = value  # a count beyond that is no count (and would not fit SQLite's integers)
    for source, column in (("rollout_duration_seconds", "generation_s"), ("eval_duration_seconds", "judge_s")):
        value = execution.get(source)
        if (real := _real(value)) is not None and 0 <= real <= MAX_SECONDS:
            out[column] = float(value)
    return out


def _restore_extra(columns: dict[str, Any], extra: SvgagentExtra, total: int) -> None:
    """Fill in what an svgagent export kept in ``execution_metadata.extra`` (validated) — when it agrees with the
    standard fields (same effective score and validity); otherwise the standard fields stand alone."""
    override = extra.override
    judge_score = extra.score
    effective = override.score if override else judge_score
    valid = override is not None or (bool(extra.is_score_valid) and judge_score is not None)
    here = RolloutStatus(columns["status"])
    if extra.status.terminal != here.terminal:
        return
    if here.terminal:
        ours = columns.get("score") if columns.get("is_score_valid") else None
        if valid != bool(columns.get("is_score_valid")):
            return
        if valid and (effective is None or ours is None or abs(float(effective) - ours) > 1e-9):
            return
        columns.update(
            status=extra.status,
            score=judge_score,
            fulfilled=extra.fulfilled,
            is_score_valid=extra.is_score_valid,
            reason=extra.reason,
            error=extra.error,
            rationale=extra.rationale,
            verdicts_json=json.dumps([list(v) for v in extra.verdicts]) if extra.verdicts is not None else None,
        )
        if extra.failure_kind is not None and extra.status is RolloutStatus.FAILED:
            columns["failure_kind"] = extra.failure_kind
        if override:
            columns.update(
                override_score=override.score,
                override_fulfilled=override.fulfilled,
                override_verdicts_json=json.dumps(override.verdicts) if override.verdicts is not None else None,
                override_at=override.at,
            )
    for key in (
        "generation_s",
        "render_s",
        "judge_s",
        "judge_prompt_tokens",
        "judge_completion_tokens",
        "cached_prompt_tokens",
        "judge_cached_prompt_tokens",
    ):
        value = getattr(extra, key)
        if value is None:
            columns.pop(key, None)
        else:
            columns[key] = value


# --- small helpers ---------------------------------------------------------------------------------------------------


def _obj(parent: dict[str, Any], key: str, prefix: str = "") -> dict[str, Any]:
    value = parent.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise LineError(f"{prefix}{key} must be an object, got {kind_of(value)}")
    return value


def _text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
        return "".join(parts) if parts else None
    return None


def _last_assistant(messages: list[dict[str, Any]]) -> str | None:
    for message in reversed(messages):
        if message.get("role") == "assistant":
            return _text(message.get("content"))
    return None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def kind_of(value: object) -> str:
    """How a JSON value is named in a message: "an object", "an array", "null", …"""
    if value is None:
        return "null"
    return {
        dict: "an object",
        list: "an array",
        str: "a string",
        bool: "a boolean",
        int: "a number",
        float: "a number",
    }.get(type(value), type(value).__name__)
