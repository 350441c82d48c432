"""The vision judge: send the rendered PNG and the numbered requirements to a vision LLM, read back a verdict.

Two modes (``JudgeMode``):

* ``count`` — the quickstart's protocol: the judge answers
  ``{"reasoning": str, "number_of_fulfilled_requirements": int}``; the count must be within ``0..N`` and
  ``score = count / N``.
* ``per-requirement`` — the judge answers one verdict per requirement,
  ``{"verdicts": [{"index": int, "reason": str, "fulfilled": bool}, ...], "reasoning": str}``, with exactly one
  entry for each index ``1..N``; ``score = fulfilled / N`` and every reason is kept in the rationale.

The pure pieces (:func:`build_judge_messages`, :func:`response_format_for`, :func:`parse_judge_answer`) need no
network, so the evaluator bundle can reuse them as they are. (Just over 400 lines: both modes' schema, reader and
retry policy stay in the one file the bundle copies.)

Failure policy of :meth:`Judge.judge`:

* An answer that cannot be used (not JSON, wrong shape, empty ``choices``, ``null`` content, a refusal) is asked
  again up to ``max_format_retries`` times, with a short note saying what was wrong. If it is still unusable the
  result is an *invalid* verdict (``valid=False``, ``score=None``, ``fulfilled=None``) whose rationale says why and
  whose ``raw`` keeps the last answer text that came back ("" when none did). It never raises for a bad answer.
  ``usage`` adds up every attempt and ``attempts`` says how many requests were made.
* API errors (any ``openai.APIError`` — connection errors, timeouts, 4xx/5xx statuses — left over after the
  client's own retries) and bodies that are not chat completions (``EndpointResponseError``) are NOT caught: they
  propagate to the caller, which decides what an outage means (the engine marks the rollout failed with an
  invalid score).

Parsing decisions (count mode): an integer, or a float with an integral value (``3.0`` → 3), or a string holding
a plain decimal integer (``"3"`` → 3, a lenient reading of an answer that is unambiguous) are accepted; booleans,
fractional numbers (``2.5``), NaN/infinity and other strings are schema violations, and so is a count outside
``0..N`` (999 of 8 says the judge broke the schema, not that the picture is perfect): it is asked again, then the
verdict is invalid. An answer the JSON reader refuses — nested thousands of levels deep, an integer of thousands of
digits — is unusable like any other non-JSON (asked again, never an error). A JSON answer wrapped in a Markdown
code fence is accepted.
"""

from __future__ import annotations

import base64
import json
import math
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from svgagent.core.scoring.chat import chat_completion
from svgagent.core.scoring.models import (
    COUNT_KEY,
    COUNT_SCHEMA_NAME,
    PER_REQUIREMENT_SCHEMA_NAME,
    JudgeMode,
    JudgeVerdict,
    RequirementVerdict,
    Usage,
)

if TYPE_CHECKING:  # the client is passed in: an openai.AsyncOpenAI (core/scoring/endpoint.py builds it)
    import openai

__all__ = [
    "COUNT_KEY",
    "COUNT_SCHEMA_NAME",
    "PER_REQUIREMENT_SCHEMA_NAME",
    "Judge",
    "build_judge_messages",
    "judge_question",
    "judge_request_body",
    "parse_judge_answer",
    "response_format_for",
    "schema_name_for",
]

_COUNT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reasoning": {"type": "string"},
        COUNT_KEY: {"type": "integer"},
    },
    "required": ["reasoning", COUNT_KEY],
    "additionalProperties": False,
}

_PER_REQUIREMENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "verdicts": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "index": {"type": "integer"},
                    "reason": {"type": "string"},
                    "fulfilled": {"type": "boolean"},
                },
                "required": ["index", "reason", "fulfilled"],
                "additionalProperties": False,
            },
        },
        "reasoning": {"type": "string"},
    },
    "required": ["verdicts", "reasoning"],
    "additionalProperties": False,
}


def schema_name_for(mode: JudgeMode) -> str:
    """The ``json_schema.name`` sent for ``mode`` (the simulator tells the modes apart by it)."""
    return PER_REQUIREMENT_SCHEMA_NAME if JudgeMode(mode) is JudgeMode.PER_REQUIREMENT else COUNT_SCHEMA_NAME


def response_format_for(mode: JudgeMode, n: int) -> dict[str, Any]:
    """The ``response_format`` argument for a judge request in ``mode`` about ``n`` requirements.

    The schema stays within what strict structured outputs accept (every property required, no extra
    properties, no numeric bounds); the allowed range ``0..n`` is stated in the question instead.
    """
    if n < 1:
        raise ValueError("a judge request needs at least one requirement")
    schema = _PER_REQUIREMENT_SCHEMA if JudgeMode(mode) is JudgeMode.PER_REQUIREMENT else _COUNT_SCHEMA
    return {
        "type": "json_schema",
        "json_schema": {"name": schema_name_for(mode), "strict": True, "schema": json.loads(json.dumps(schema))},
    }


def judge_question(requirements: Sequence[str], mode: JudgeMode = JudgeMode.COUNT, prompt: str | None = None) -> str:
    """The text part of the judge request: the strict question and the requirements numbered ``1..N``."""
    n = len(requirements)
    if n < 1:
        raise ValueError("a judge request needs at least one requirement")
    lines = [
        "You are a strict grader of pictures. The attached image was rendered from an SVG that a model drew.",
    ]
    if prompt and prompt.strip():
        lines += ["", "The drawing was requested with this description:", prompt.strip()]
    lines += [
        "",
        f"Check the image against each of the {n} numbered requirements below. A requirement counts as "
        "fulfilled only when it is clearly visible in the image as rendered; give no credit for features that "
        "are missing, cut off, unrecognisable, only hinted at, or merely plausible.",
        "",
        "Requirements:",
    ]
    lines += [f"{i}. {' '.join(str(req).split())}" for i, req in enumerate(requirements, start=1)]
    lines.append("")
    if JudgeMode(mode) is JudgeMode.PER_REQUIREMENT:
        lines.append(
            "Answer with a JSON object only: "
            '{"verdicts": [{"index": <requirement number>, "reason": "<one short sentence>", '
            '"fulfilled": <true or false>}, ...], "reasoning": "<short overall summary>"} '
            f"with exactly one verdict for every requirement number from 1 to {n}."
        )
    else:
        lines.append(
            "Answer with a JSON object only: "
            '{"reasoning": "<a short note on each requirement>", '
            f'"{COUNT_KEY}": <how many requirements are fulfilled, an integer from 0 to {n}>}}.'
        )
    return "\n".join(lines)


_PNG_URL_PREFIX = "data:image/png;base64,"


def build_judge_messages(
    png: bytes,
    requirements: Sequence[str],
    mode: JudgeMode = JudgeMode.COUNT,
    prompt: str | None = None,
) -> list[dict[str, Any]]:
    """One user message: the question (text part) and the PNG as a base64 data URL (image part)."""
    url = _PNG_URL_PREFIX + base64.b64encode(png).decode("ascii")
    return [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": judge_question(requirements, mode, prompt)},
                {"type": "image_url", "image_url": {"url": url}},
            ],
        }
    ]


def judge_request_body(model: str, messages: list[dict[str, Any]], response_format: dict[str, Any]) -> dict[str, Any]:
    """The JSON body of a judge request (as :func:`svgagent.core.scoring.chat.chat_completion` sends it)."""
    return {"model": model, "messages": messages, "temperature": 0, "response_format": response_format}


# ----------------------------------------------------------------------------------------------------- parsing

_FENCE_RE = re.compile(r"^```[A-Za-z0-9_-]*\s*\n?(.*?)\n?```\s*$", re.DOTALL)
_INT_STR_RE = re.compile(r"^[+-]?\d{1,18}$")  # a count, not a number of thousands of digits


def _load_json(text: str) -> Any:
    """JSON from the answer text, tolerating a Markdown fence around it. Raises ValueError when not JSON."""
    stripped = text.strip()
    fenced = _FENCE_RE.match(stripped)
    if fenced:
        stripped = fenced.group(1).strip()
    if not stripped:
        raise ValueError("the answer is empty")
    try:
        return json.loads(stripped)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the answer is not valid JSON ({exc.msg} at char {exc.pos})") from None
    except RecursionError:
        raise ValueError("the answer is JSON nested too deeply to read") from None
    except ValueError as exc:  # e.g. an integer with more digits than Python converts
        raise ValueError(f"the answer is not readable JSON ({str(exc)[:80]})") from None


def _as_int(value: Any) -> int | None:
    """An integer reading of ``value`` or None. Booleans and fractional numbers are refused."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if math.isfinite(value) and value.is_integer() else None
    if isinstance(value, str) and _INT_STR_RE.match(value.strip()):
        return int(value.strip())
    return None


def _short(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _parse_count(data: Any, n: int) -> JudgeVerdict | str:
    if not isinstance(data, dict):
        return f"expected a JSON object, got {type(data).__name__}"
    if COUNT_KEY not in data:
        return f'the answer has no "{COUNT_KEY}"'
    count = _as_int(data[COUNT_KEY])
    if count is None:
        return f'"{COUNT_KEY}" is not an integer: {_short(data[COUNT_KEY])}'
    reasoning = data.get("reasoning", "")
    if not isinstance(reasoning, str):
        return '"reasoning" is not a string'
    if not 0 <= count <= n:
        return f'"{COUNT_KEY}" is {_short(count)}, outside 0..{n}'
    return JudgeVerdict(total=n, fulfilled=count, score=count / n, valid=True, rationale=reasoning.strip())


def _parse_per_requirement(data: Any, n: int) -> JudgeVerdict | str:
    if not isinstance(data, dict):
        return f"expected a JSON object, got {type(data).__name__}"
    items = data.get("verdicts")
    if not isinstance(items, list):
        return 'the answer has no "verdicts" list'
    reasoning = data.get("reasoning", "")
    if not isinstance(reasoning, str):
        return '"reasoning" is not a string'
    found: dict[int, RequirementVerdict] = {}
    for pos, item in enumerate(items):
        if not isinstance(item, dict):
            return f"verdict #{pos + 1} is not an object"
        index = _as_int(item.get("index"))
        if index is None:
            return f"verdict #{pos + 1} has no integer index: {_short(item.get('index'))}"
        if not 1 <= index <= n:
            return f"verdict index {index} is outside 1..{n}"
        if index in found:
            return f"verdict index {index} appears twice"
        fulfilled = item.get("fulfilled")
        if not isinstance(fulfilled, bool):
            return f'verdict {index} has no boolean "fulfilled": {_short(fulfilled)}'
        reason = item.get("reason", "")
        if not isinstance(reason, str):
            return f'verdict {index} has a non-string "reason"'
        found[index] = RequirementVerdict(index=index, fulfilled=fulfilled, reason=" ".join(reason.split()))
    missing = [i for i in range(1, n + 1) if i not in found]
    if missing:
        shown = ", ".join(str(i) for i in missing[:8]) + (" …" if len(missing) > 8 else "")
        return f"no verdict for requirement(s) {shown}"
    verdicts = tuple(found[i] for i in range(1, n + 1))
    fulfilled_count = sum(v.fulfilled for v in verdicts)
    lines = [f"{'✓' if v.fulfilled else '✗'} {v.index}. {v.reason}".rstrip() for v in verdicts]
    if reasoning.strip():
        lines += ["", reasoning.strip()]
    return JudgeVerdict(
        total=n,
        fulfilled=fulfilled_count,
        score=fulfilled_count / n,
        valid=True,
        rationale="\n".join(lines),
        verdicts=verdicts,
    )


def _parse(text: str, n: int, mode: JudgeMode) -> JudgeVerdict | str:
    """A valid verdict (its ``raw`` left to the caller), or a one-line reason why the answer cannot be used."""
    if n < 1:
        raise ValueError("a judge answer needs at least one requirement to be read against")
    try:
        data = _load_json(text)
    except ValueError as exc:
        return str(exc)
    if JudgeMode(mode) is JudgeMode.PER_REQUIREMENT:
        result = _parse_per_requirement(data, n)
    else:
        result = _parse_count(data, n)
    return result


def parse_judge_answer(text: str, n: int, mode: JudgeMode = JudgeMode.COUNT) -> JudgeVerdict | None:
    """Read a judge's answer about ``n`` requirements; None when it is unparseable or violates the schema.

    The returned verdict is valid, has ``raw=text``, default usage and ``attempts=1``.
    """
    result = _parse(text, n, mode)
    return replace(result, raw=text) if isinstance(result, JudgeVerdict) else None


# ------------------------------------------------------------------------------------------------------ client


def _add_usage(total: Usage, usage: Any) -> Usage:
    if usage is None:
        return total
    return Usage(
        prompt_tokens=total.prompt_tokens + int(getattr(usage, "prompt_tokens", 0) or 0),
        completion_tokens=total.completion_tokens + int(getattr(usage, "completion_tokens", 0) or 0),
    )


def _answer_text(response: Any) -> tuple[str | None, str]:
    """(content, "") or (None, why there is no usable content, e.g. no choices, null content or a refusal)."""
    choices = getattr(response, "choices", None)
    if not choices:
        return None, "the answer had no choices"
    message = getattr(choices[0], "message", None)
    if message is None:
        return None, "the answer had no message"
    content = getattr(message, "content", None)
    if content is None or content == "":
        refusal = getattr(message, "refusal", None)
        if refusal:
            return None, f"the judge refused: {' '.join(str(refusal).split())[:200]}"
        return None, "the answer had no content"
    return str(content), ""


class Judge:
    """Score one rendered image against its requirements with a vision model (see the module docstring)."""

    def __init__(
        self,
        client: openai.AsyncOpenAI | Any,
        model: str,
        mode: JudgeMode = JudgeMode.COUNT,
        max_format_retries: int = 1,
    ) -> None:
        if max_format_retries < 0:
            raise ValueError("max_format_retries must be >= 0")
        self.client = client
        self.model = model
        self.mode = JudgeMode(mode)
        self.max_format_retries = max_format_retries

    async def judge(self, png: bytes, requirements: Sequence[str], prompt: str | None = None) -> JudgeVerdict:
        """Ask the judge about ``png``; a usable answer gives a valid verdict, garbage twice an invalid one.

        Raises ``ValueError`` when ``requirements`` is empty and lets ``openai.APIError`` propagate.
        """
        n = len(requirements)
        if n < 1:
            raise ValueError("a judge request needs at least one requirement")
        messages = build_judge_messages(png, requirements, self.mode, prompt)
        response_format = response_format_for(self.mode, n)
        usage = Usage()
        raw = ""
        why = ""
        attempts = 0
        for attempt in range(1, self.max_format_retries + 2):
            attempts = attempt
            request = messages if attempt == 1 else [*messages, _retry_note(why, n, self.mode)]
            response = await chat_completion(self.client, **judge_request_body(self.model, request, response_format))
            usage = _add_usage(usage, getattr(response, "usage", None))
            text, why = _answer_text(response)
            if text is None:
                continue  # ``raw`` keeps the last answer text that did come back
            raw = text
            result = _parse(text, n, self.mode)
            if isinstance(result, JudgeVerdict):
                return replace(result, raw=text, usage=usage, attempts=attempt)
            why = result
        plural = "attempt" if attempts == 1 else "attempts"
        return JudgeVerdict(
            total=n,
            fulfilled=None,
            score=None,
            valid=False,
            rationale=f"The judge gave no usable answer after {attempts} {plural}: {why}.",
            raw=raw,
            usage=usage,
            attempts=attempts,
        )


def _retry_note(why: str, n: int, mode: JudgeMode) -> dict[str, Any]:
    """The extra user message sent with a retry: what was wrong and what shape is expected."""
    shape = (
        f'a "verdicts" list with exactly one entry for each requirement 1..{n} and a "reasoning" string'
        if JudgeMode(mode) is JudgeMode.PER_REQUIREMENT
        else f'"reasoning" (a string) and "{COUNT_KEY}" (an integer from 0 to {n})'
    )
    return {
        "role": "user",
        "content": f"Your previous answer could not be used ({why}). Reply again with only the JSON object: {shape}.",
    }
