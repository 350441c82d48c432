"""The vision judge: send the rendered PNG and the numbered requirements to a vision LLM, read back a verdict.

What is asked and how the answer is read is the judge profile's (:mod:`.judge_profiles`: the recipe, as data) and
its answer form's for the judge mode (:mod:`.judge_forms`: schema, question, reader). svgagent's own profile has
two modes (``JudgeMode``):

* ``count`` — ``{"reasoning": str, "number_of_fulfilled_requirements": int}``; the count must be within ``0..N``
  and ``score = count / N``.
* ``per-requirement`` — ``{"verdicts": [{"index": int, "reason": str, "fulfilled": bool}, ...], "reasoning": str}``,
  exactly one entry for each index ``1..N``; ``score = fulfilled / N`` and every reason is kept in the rationale.

The pure pieces (:func:`build_judge_messages`, :func:`response_format_for`, :func:`parse_judge_answer`) need no
network, so the evaluator bundle reuses them as they are.

Failure policy of :meth:`Judge.judge`:

* An answer that cannot be used (not JSON, wrong shape, empty ``choices``, ``null`` content, a refusal) is asked
  again up to the profile's ``format_retries`` times (svgagent's: once, with a note saying what was wrong). If it is
  still unusable the result is an *invalid* verdict (``valid=False``, ``score=None``, ``fulfilled=None``) whose
  rationale says why and whose ``raw`` keeps the last answer text that came back ("" when none did) — or, for a
  profile whose failure rule says so (``unusable_scores_zero``), a valid 0 with the same rationale. It never
  raises for a bad answer. ``usage`` adds up every attempt and ``attempts`` says how many requests were made.
* API errors (any ``openai.APIError`` — connection errors, timeouts, 4xx/5xx statuses — left over after the
  client's own retries) and bodies that are not chat completions (``EndpointResponseError``) are NOT caught: they
  propagate to the caller, which decides what an outage means (the engine marks the rollout failed with an
  invalid score, whatever the profile).
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from svgagent.core.scoring.chat import chat_completion
from svgagent.core.scoring.judge_forms import JudgeForm
from svgagent.core.scoring.judge_profiles import JudgeProfile, profile_named
from svgagent.core.scoring.models import (
    COUNT_KEY,
    COUNT_SCHEMA_NAME,
    PER_REQUIREMENT_SCHEMA_NAME,
    JudgeMode,
    JudgeProfileName,
    JudgeVerdict,
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

Profile = JudgeProfile | JudgeProfileName | str
DEFAULT_PROFILE = JudgeProfileName.SVGAGENT


def _profile(profile: Profile) -> JudgeProfile:
    return profile if isinstance(profile, JudgeProfile) else profile_named(profile)


def _form(mode: JudgeMode | str, profile: Profile) -> JudgeForm:
    return _profile(profile).form(mode)


def schema_name_for(mode: JudgeMode, profile: Profile = DEFAULT_PROFILE) -> str:
    """The ``json_schema.name`` sent for ``mode`` (the simulator tells the forms apart by it)."""
    return _form(mode, profile).name


def response_format_for(mode: JudgeMode, n: int, profile: Profile = DEFAULT_PROFILE) -> dict[str, Any]:
    """The ``response_format`` argument for a judge request in ``mode`` about ``n`` requirements.

    svgagent's schemas stay within what strict structured outputs accept (every property required, no extra
    properties, no numeric bounds); the allowed range ``0..n`` is stated in the question instead.
    """
    return _form(mode, profile).response_format(n)


def judge_question(
    requirements: Sequence[str],
    mode: JudgeMode = JudgeMode.COUNT,
    prompt: str | None = None,
    profile: Profile = DEFAULT_PROFILE,
) -> str:
    """The text part of the judge request: the question and the requirements numbered ``1..N``."""
    return _form(mode, profile).question(requirements, prompt)


def _image_part(png: bytes, profile: JudgeProfile) -> dict[str, Any]:
    image: dict[str, Any] = {"url": f"data:{profile.image_type};base64," + base64.b64encode(png).decode("ascii")}
    if profile.image_detail is not None:
        image["detail"] = profile.image_detail
    return {"type": "image_url", "image_url": image}


def build_judge_messages(
    png: bytes,
    requirements: Sequence[str],
    mode: JudgeMode = JudgeMode.COUNT,
    prompt: str | None = None,
    profile: Profile = DEFAULT_PROFILE,
) -> list[dict[str, Any]]:
    """One user message: the question (text part) and the PNG as a base64 data URL (image part)."""
    chosen = _profile(profile)
    return [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": judge_question(requirements, mode, prompt, chosen)},
                _image_part(png, chosen),
            ],
        }
    ]


def judge_request_body(
    model: str, messages: list[dict[str, Any]], response_format: dict[str, Any], temperature: float | None = 0
) -> dict[str, Any]:
    """The JSON body of a judge request (as :func:`svgagent.core.scoring.chat.chat_completion` sends it); a
    ``temperature`` of None is not sent."""
    body: dict[str, Any] = {"model": model, "messages": messages}
    if temperature is not None:
        body["temperature"] = temperature
    body["response_format"] = response_format
    return body


# ----------------------------------------------------------------------------------------------------- parsing


def _parse(
    text: str, n: int, mode: JudgeMode = JudgeMode.COUNT, profile: Profile = DEFAULT_PROFILE
) -> JudgeVerdict | str:
    """A valid verdict (its ``raw`` left to the caller), or a one-line reason why the answer cannot be used."""
    return _form(mode, profile).read(text, n)


def parse_judge_answer(
    text: str, n: int, mode: JudgeMode = JudgeMode.COUNT, profile: Profile = DEFAULT_PROFILE
) -> JudgeVerdict | None:
    """Read a judge's answer about ``n`` requirements; None when it is unparseable or violates the schema.

    The returned verdict is valid, has ``raw=text``, default usage and ``attempts=1``.
    """
    result = _parse(text, n, mode, profile)
    return replace(result, raw=text) if isinstance(result, JudgeVerdict) else None


# ------------------------------------------------------------------------------------------------------ client


def _add_usage(total: Usage, usage: Any) -> Usage:
    if usage is None:
        return total
    return Usage(
        prompt_tokens=total.prompt_tokens + int(getattr(usage, "prompt_tokens", 0) or 0),
        completion_tokens=total.completion_tokens + int(getattr(usage, "completion_tokens", 0) or 0),
        cached_prompt_tokens=total.cached_prompt_tokens + int(getattr(usage, "cached_prompt_tokens", 0) or 0),
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
    """Score one rendered image against its requirements with a vision model (see the module docstring).

    ``max_format_retries`` (None: the profile's ``format_retries``) is how often an unusable answer is asked again.
    """

    def __init__(
        self,
        client: openai.AsyncOpenAI | Any,
        model: str,
        mode: JudgeMode = JudgeMode.COUNT,
        max_format_retries: int | None = None,
        profile: Profile = DEFAULT_PROFILE,
    ) -> None:
        self.profile = _profile(profile)
        self.form = self.profile.form(mode)  # ConfigError when the profile has no such mode
        retries = self.profile.format_retries if max_format_retries is None else max_format_retries
        if retries < 0:
            raise ValueError("max_format_retries must be >= 0")
        self.client = client
        self.model = model
        self.mode = JudgeMode(mode)
        self.max_format_retries = retries

    async def judge(self, png: bytes, requirements: Sequence[str], prompt: str | None = None) -> JudgeVerdict:
        """Ask the judge about ``png``; a usable answer gives a valid verdict, an unusable one after the retries
        the profile's failure verdict.

        Raises ``ValueError`` when ``requirements`` is empty and lets ``openai.APIError`` propagate.
        """
        n = len(requirements)
        if n < 1:
            raise ValueError("a judge request needs at least one requirement")
        profile, form = self.profile, self.form
        messages = build_judge_messages(png, requirements, self.mode, prompt, profile)
        response_format = form.response_format(n)
        usage = Usage()
        raw = ""
        why = ""
        attempts = 0
        for attempt in range(1, self.max_format_retries + 2):
            attempts = attempt
            request = messages
            if attempt > 1 and profile.retry_says_why:
                request = [*messages, _retry_note(why, n, form)]
            response = await chat_completion(
                self.client, **judge_request_body(self.model, request, response_format, profile.temperature)
            )
            usage = _add_usage(usage, getattr(response, "usage", None))
            text, why = _answer_text(response)
            if text is None:
                continue  # ``raw`` keeps the last answer text that did come back
            raw = text
            result = form.read(text, n)
            if isinstance(result, JudgeVerdict):
                return replace(result, raw=text, usage=usage, attempts=attempt)
            why = result
        plural = "attempt" if attempts == 1 else "attempts"
        rationale = f"The judge gave no usable answer after {attempts} {plural}: {why}."
        if profile.unusable_scores_zero:
            return JudgeVerdict(
                total=n, fulfilled=0, score=0.0, valid=True, rationale=rationale, raw=raw, usage=usage,
                attempts=attempts, unusable=True,
            )  # fmt: skip
        return JudgeVerdict(
            total=n,
            fulfilled=None,
            score=None,
            valid=False,
            rationale=rationale,
            raw=raw,
            usage=usage,
            attempts=attempts,
            unusable=True,
        )


def _retry_note(why: str, n: int, form: JudgeForm) -> dict[str, Any]:
    """The extra user message sent with a retry: what was wrong and what shape is expected."""
    return {
        "role": "user",
        "content": f"Your previous answer could not be used ({why}). Reply again with only the JSON object: "
        f"{form.expects(n)}.",
    }
