"""What a judge is asked and how its answer is read: one :class:`JudgeForm` per answer form.

A form holds the response schema (its ``json_schema`` name, the schema, strict or not), the question that asks for
it and the reader of the answer (a valid :class:`JudgeVerdict` or a one-line reason the answer cannot be used), as
data the judge, the evaluator bundle and the simulator share: the simulator looks a request's form up by its schema
name (:func:`form_named`) and answers with :meth:`JudgeForm.answer`.

Forms:

* ``SVGAGENT_COUNT`` / ``SVGAGENT_VERDICTS`` — svgagent's own (the ``count`` and ``per-requirement`` judge modes):
  strict schemas; a count must be an integer in ``0..N`` (``3.0`` and ``"3"`` are read as 3), anything else is
  unusable; one verdict per requirement, exactly.
* ``EP_QUICKSTART_COUNT`` — Eval Protocol's quickstart evaluator: schema ``SVGBenchResponse`` (a ``reasoning``
  string and an integer count), not strict; the answer text must be plain JSON (no Markdown fence); any number
  is a count and is clamped into ``0..N`` (so 999 of 8 is 8, a fraction stays a fraction); a string, null or
  missing count, or a ``reasoning`` that is not text, is unusable.
* ``SVGBENCH_COUNT`` — SVGBench's: a ``number`` count alone, not strict; any number is a count; the score is not
  clamped there, but svgagent keeps every score within 0..1, so a count outside ``0..N`` is unusable (retried).

Counts that are not finite (NaN, infinity) never become a score, except where the quickstart's clamp turns them
into one (NaN → 0, +∞ → N, -∞ → 0, as Python's ``max(0, min(count, N))`` does).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from svgagent.core.scoring.models import (
    COUNT_KEY,
    COUNT_SCHEMA_NAME,
    PER_REQUIREMENT_SCHEMA_NAME,
    JudgeVerdict,
    RequirementVerdict,
)

__all__ = [
    "EP_QUICKSTART_COUNT",
    "FORMS",
    "SVGAGENT_COUNT",
    "SVGAGENT_VERDICTS",
    "SVGBENCH_COUNT",
    "JudgeForm",
    "form_named",
    "numbered",
]

EP_SCHEMA_NAME = "SVGBenchResponse"
SVGBENCH_SCHEMA_NAME = "structured_response"


def numbered(requirements: Sequence[Any]) -> list[str]:
    """The requirements as lines ``1. …`` (whitespace inside each folded to single spaces)."""
    return [f"{i}. {' '.join(str(req).split())}" for i, req in enumerate(requirements, start=1)]


# ------------------------------------------------------------------------------------------------ questions


def _svgagent_question(requirements: Sequence[Any], prompt: str | None, *, per_requirement: bool) -> str:
    n = len(requirements)
    lines = ["You are a strict grader of pictures. The attached image was rendered from an SVG that a model drew."]
    if prompt and prompt.strip():
        lines += ["", "The drawing was requested with this description:", prompt.strip()]
    lines += [
        "",
        f"Check the image against each of the {n} numbered requirements below. A requirement counts as "
        "fulfilled only when it is clearly visible in the image as rendered; give no credit for features that "
        "are missing, cut off, unrecognisable, only hinted at, or merely plausible.",
        "",
        "Requirements:",
        *numbered(requirements),
        "",
    ]
    if per_requirement:
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


def _ep_question(requirements: Sequence[Any], prompt: str | None) -> str:
    """The quickstart's question, in svgagent's words: how many of the N are met, be strict, JSON only with a
    reasoning and the count (0..N), then the numbered requirements. The drawing's description is not part of it."""
    n = len(requirements)
    return "\n".join(
        [
            f"Look at the image. How many of these {n} requirements does it fulfil?",
            "",
            "Judge the requirements strictly. Reply with nothing but a JSON object shaped like this:",
            f'{{"reasoning": <your reasoning>, "{COUNT_KEY}": <count>}}',
            "",
            f"<count> is a number from 0 to {n}.",
            "",
            "Requirements:",
            *numbered(requirements),
        ]
    )


def _svgbench_question(requirements: Sequence[Any], prompt: str | None) -> str:
    """SVGBench's question, in svgagent's words: how many of the N are met, a number only, be strict."""
    n = len(requirements)
    return "\n".join(
        [
            f"Look at the image. How many of the following {n} requirements does it fulfil?",
            "",
            "Answer with the number alone, and judge the requirements strictly.",
            "",
            "Requirements:",
            *numbered(requirements),
        ]
    )


# -------------------------------------------------------------------------------------------------- schemas

_SVGAGENT_COUNT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"reasoning": {"type": "string"}, COUNT_KEY: {"type": "integer"}},
    "required": ["reasoning", COUNT_KEY],
    "additionalProperties": False,
}
_SVGAGENT_VERDICTS_SCHEMA: dict[str, Any] = {
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
# what pydantic's model_json_schema() gives for the quickstart's response model (titles included)
_EP_SCHEMA: dict[str, Any] = {
    "properties": {
        "reasoning": {"title": "Reasoning", "type": "string"},
        COUNT_KEY: {"title": "Number Of Fulfilled Requirements", "type": "integer"},
    },
    "required": ["reasoning", COUNT_KEY],
    "title": EP_SCHEMA_NAME,
    "type": "object",
}
_SVGBENCH_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        COUNT_KEY: {"type": "number", "minimum": 0, "description": "How many of the requirements are fulfilled"}
    },
    "required": [COUNT_KEY],
    "additionalProperties": False,
}


# -------------------------------------------------------------------------------------------------- reading

_FENCE_RE = re.compile(r"^```[A-Za-z0-9_-]*\s*\n?(.*?)\n?```\s*$", re.DOTALL)
_INT_STR_RE = re.compile(r"^[+-]?\d{1,18}$")  # a count, not a number of thousands of digits


def _load_json(text: str, fenced: bool) -> Any:
    """JSON from the answer text (inside a Markdown fence when ``fenced`` allows one). Raises ValueError."""
    stripped = text.strip()
    if fenced:
        match = _FENCE_RE.match(stripped)
        if match:
            stripped = match.group(1).strip()
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


def _short(value: Any, limit: int = 60) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    except ValueError:  # a number too large to print
        text = type(value).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _as_int(value: Any) -> int | None:
    """An integer reading of ``value`` or None: booleans and fractions refused, a plain decimal string read."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if math.isfinite(value) and value.is_integer() else None
    if isinstance(value, str) and _INT_STR_RE.match(value.strip()):
        return int(value.strip())
    return None


def _as_number(value: Any) -> float | int | None:
    """``value`` when Python does arithmetic with it (int, float, bool), else None."""
    return value if isinstance(value, int | float) else None


CountValues = Literal["integer", "number"]
OutOfRange = Literal["refuse", "clamp"]


@dataclass(frozen=True)
class JudgeForm:
    """One answer form: schema, question and reader (see the module docstring)."""

    name: str  # the json_schema name sent; the simulator tells forms apart by it
    kind: Literal["count", "verdicts"]
    schema: Mapping[str, Any]
    strict: bool
    ask: Callable[[Sequence[Any], str | None], str]
    counts: CountValues = "integer"  # "number": any int/float (bools included, as Python counts them)
    out_of_range: OutOfRange = "refuse"  # "clamp": max(0, min(count, N))
    fenced: bool = True  # a JSON answer inside a Markdown code fence is read
    reasoning_key: str | None = "reasoning"  # None: the form has no reasoning text
    null_reasoning: bool = False  # a null reasoning reads as none (else it is unusable, as any non-string is)

    def response_format(self, n: int) -> dict[str, Any]:
        """The ``response_format`` of a request about ``n`` requirements (a fresh copy each time)."""
        if n < 1:
            raise ValueError("a judge request needs at least one requirement")
        spec: dict[str, Any] = {"name": self.name}
        if self.strict:
            spec["strict"] = True
        spec["schema"] = json.loads(json.dumps(self.schema))
        return {"type": "json_schema", "json_schema": spec}

    def question(self, requirements: Sequence[Any], prompt: str | None = None) -> str:
        if len(requirements) < 1:
            raise ValueError("a judge request needs at least one requirement")
        return self.ask(requirements, prompt)

    def read(self, text: str, n: int) -> JudgeVerdict | str:
        """A valid verdict (``raw`` left to the caller), or a one-line reason why ``text`` cannot be used."""
        if n < 1:
            raise ValueError("a judge answer needs at least one requirement to be read against")
        try:
            data = _load_json(text, self.fenced)
        except ValueError as exc:
            return str(exc)
        if not isinstance(data, dict):
            return f"expected a JSON object, got {type(data).__name__}"
        reasoning = ""
        if self.reasoning_key is not None:
            value = data.get(self.reasoning_key, "")
            if value is None and self.null_reasoning:
                value = ""
            if not isinstance(value, str):
                return f'"{self.reasoning_key}" is not a string'
            reasoning = value.strip()
        if self.kind == "verdicts":
            return _read_verdicts(data, n, reasoning)
        return self._read_count(data, n, reasoning)

    def _read_count(self, data: dict[str, Any], n: int, reasoning: str) -> JudgeVerdict | str:
        if COUNT_KEY not in data:
            return f'the answer has no "{COUNT_KEY}"'
        raw = data[COUNT_KEY]
        count = _as_int(raw) if self.counts == "integer" else _as_number(raw)
        if count is None:
            kind = "an integer" if self.counts == "integer" else "a number"
            return f'"{COUNT_KEY}" is not {kind}: {_short(raw)}'
        if self.out_of_range == "clamp":
            count = max(0, min(count, n))  # this order: NaN becomes 0, as in the quickstart's evaluator
        elif not (isinstance(count, int) or math.isfinite(count)) or not 0 <= count <= n:
            return f'"{COUNT_KEY}" is {_short(count)}, outside 0..{n}'
        whole = int(count) if float(count).is_integer() else None
        score = float(count) / n
        rationale = reasoning if self.reasoning_key else f"{_short(count)} of {n} requirements fulfilled"
        return JudgeVerdict(total=n, fulfilled=whole, score=score, valid=True, rationale=rationale)

    def expects(self, n: int) -> str:
        """What a usable answer holds, for the note a retry may carry."""
        if self.kind == "verdicts":
            return f'a "verdicts" list with exactly one entry for each requirement 1..{n} and a "reasoning" string'
        kind = "an integer" if self.counts == "integer" else "a number"
        head = f'"{self.reasoning_key}" (a string) and ' if self.reasoning_key else ""
        return f'{head}"{COUNT_KEY}" ({kind} from 0 to {n})'

    def answer(self, fulfilled: Sequence[bool], reasoning: str, reasons: Sequence[str] | None = None) -> dict[str, Any]:
        """The answer a judge following this form gives for these decisions (the simulator's, and tests')."""
        if self.kind == "verdicts":
            notes = list(reasons) if reasons is not None else [""] * len(fulfilled)
            verdicts = [
                {"index": i, "reason": note, "fulfilled": bool(ok)}
                for i, (ok, note) in enumerate(zip(fulfilled, notes), start=1)
            ]
            return {"verdicts": verdicts, "reasoning": reasoning}
        body: dict[str, Any] = {self.reasoning_key: reasoning} if self.reasoning_key else {}
        body[COUNT_KEY] = sum(bool(ok) for ok in fulfilled)
        return body


def _read_verdicts(data: dict[str, Any], n: int, reasoning: str) -> JudgeVerdict | str:
    items = data.get("verdicts")
    if not isinstance(items, list):
        return 'the answer has no "verdicts" list'
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
        ok = item.get("fulfilled")
        if not isinstance(ok, bool):
            return f'verdict {index} has no boolean "fulfilled": {_short(ok)}'
        reason = item.get("reason", "")
        if not isinstance(reason, str):
            return f'verdict {index} has a non-string "reason"'
        found[index] = RequirementVerdict(index=index, fulfilled=ok, reason=" ".join(reason.split()))
    missing = [i for i in range(1, n + 1) if i not in found]
    if missing:
        shown = ", ".join(str(i) for i in missing[:8]) + (" …" if len(missing) > 8 else "")
        return f"no verdict for requirement(s) {shown}"
    verdicts = tuple(found[i] for i in range(1, n + 1))
    count = sum(v.fulfilled for v in verdicts)
    lines = [f"{'✓' if v.fulfilled else '✗'} {v.index}. {v.reason}".rstrip() for v in verdicts]
    if reasoning:
        lines += ["", reasoning]
    return JudgeVerdict(
        total=n, fulfilled=count, score=count / n, valid=True, rationale="\n".join(lines), verdicts=verdicts
    )


# ---------------------------------------------------------------------------------------------------- forms

SVGAGENT_COUNT = JudgeForm(
    name=COUNT_SCHEMA_NAME,
    kind="count",
    schema=_SVGAGENT_COUNT_SCHEMA,
    strict=True,
    ask=lambda reqs, prompt: _svgagent_question(reqs, prompt, per_requirement=False),
)
SVGAGENT_VERDICTS = JudgeForm(
    name=PER_REQUIREMENT_SCHEMA_NAME,
    kind="verdicts",
    schema=_SVGAGENT_VERDICTS_SCHEMA,
    strict=True,
    ask=lambda reqs, prompt: _svgagent_question(reqs, prompt, per_requirement=True),
)
EP_QUICKSTART_COUNT = JudgeForm(
    name=EP_SCHEMA_NAME,
    kind="count",
    schema=_EP_SCHEMA,
    strict=False,
    ask=_ep_question,
    counts="number",
    out_of_range="clamp",
    fenced=False,
    null_reasoning=True,
)
SVGBENCH_COUNT = JudgeForm(
    name=SVGBENCH_SCHEMA_NAME,
    kind="count",
    schema=_SVGBENCH_SCHEMA,
    strict=False,
    ask=_svgbench_question,
    counts="number",
    fenced=False,
    reasoning_key=None,
)
FORMS: dict[str, JudgeForm] = {
    f.name: f for f in (SVGAGENT_COUNT, SVGAGENT_VERDICTS, EP_QUICKSTART_COUNT, SVGBENCH_COUNT)
}


def form_named(name: str) -> JudgeForm:
    """The form whose schema is called ``name``; svgagent's count form for any other name."""
    return FORMS.get(name, SVGAGENT_COUNT)
