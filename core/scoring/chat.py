"""One home for chat-completion calls to OpenAI-compatible endpoints (policy and judge, engine and ``serve``) and for
reading what comes back.

The request goes through the openai client's own ``post`` (its retries with backoff honouring ``Retry-After``, its
timeouts and typed errors) on :mod:`svgagent.core.scoring.endpoint`'s bounded HTTP client, with a body that is
plain JSON. The answer comes back as bytes (read whole, within the client's cap) and is read here, once, by
:func:`parse_completion` — the one place an answer's fields are checked and its numbers made sane:

- a body that is not a chat completion (a server-sent event stream, invalid UTF-8, JSON of another shape, JSON
  nested too deeply) raises :class:`EndpointResponseError` with one line;
- a message's content is text, ``null`` or a list of text parts (joined); anything else is refused;
- token counts that are not integers from 0 to :data:`MAX_TOKEN_COUNT` (``1e30`` written as an integer, ``-5``,
  ``1.5``, ``"12"``) read as 0; a ``finish_reason`` that is not a string is kept as its JSON text, and any is cut
  to :data:`MAX_FINISH_REASON_CHARS`; a ``refusal`` that is not a string reads as ``None``; JSON that pydantic's
  reader refuses but the json module reads (a lone surrogate escape) is read by the json module;
- fields nobody reads are not kept (pydantic skips them), so padding costs no Python objects.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from svgagent.core.scoring.errors import EndpointResponseError
from svgagent.core.scoring.models import MAX_TOKEN_COUNT

__all__ = ["MAX_TOKEN_COUNT", "ChatCompletion", "chat_completion", "parse_completion", "post_completion"]
MAX_FINISH_REASON_CHARS = 64


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class ChatMessage(_Model):
    content: str | None = None
    refusal: str | None = None

    @field_validator("content", mode="before")
    @classmethod
    def _text(cls, value: Any) -> Any:
        if value is None or isinstance(value, str):
            return value
        if isinstance(value, list) and all(isinstance(part, dict) for part in value):
            return "".join(part["text"] for part in value if isinstance(part.get("text"), str))
        raise ValueError("content that is not text")

    @field_validator("refusal", mode="before")
    @classmethod
    def _refusal(cls, value: Any) -> Any:
        return value if isinstance(value, str) else None


class ChatChoice(_Model):
    message: ChatMessage
    finish_reason: str | None = None

    @field_validator("finish_reason", mode="before")
    @classmethod
    def _reason(cls, value: Any) -> Any:
        if value is not None and not isinstance(value, str):  # an object, a number: kept as its JSON text
            value = json.dumps(value, ensure_ascii=False)
        return value[:MAX_FINISH_REASON_CHARS] if value is not None else None


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_TOKEN_COUNT else 0


class ChatUsage(_Model):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # ``prompt_tokens_details.cached_tokens`` (OpenAI's and Fireworks' field): the part of the prompt the provider
    # served from its prompt cache, billed at the cached-input price; never more than the prompt
    cached_prompt_tokens: int = 0

    @model_validator(mode="before")
    @classmethod
    def _details(cls, data: Any) -> Any:
        if isinstance(data, dict):
            details = data.get("prompt_tokens_details")
            cached = _count(details.get("cached_tokens")) if isinstance(details, dict) else 0
            data = {**data, "cached_prompt_tokens": min(cached, _count(data.get("prompt_tokens")))}
        return data

    @field_validator("prompt_tokens", "completion_tokens", "cached_prompt_tokens", mode="before")
    @classmethod
    def _sane(cls, value: Any) -> int:
        return _count(value)


class ChatCompletion(_Model):
    """The fields of a chat completion svgagent reads (the shape of openai's type, for those fields)."""

    choices: list[ChatChoice] = []
    usage: ChatUsage | None = None

    @field_validator("usage", mode="before")
    @classmethod
    def _usage(cls, value: Any) -> Any:
        return value if isinstance(value, dict) else None


def parse_completion(raw: bytes) -> ChatCompletion:
    """The chat completion in ``raw`` (a response body), or :class:`EndpointResponseError` saying what it is."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise EndpointResponseError("the answer is not valid UTF-8") from None
    try:
        return ChatCompletion.model_validate_json(text)
    except ValidationError as err:
        refused = err
    except RecursionError:
        raise EndpointResponseError("the answer is JSON nested too deeply to read") from None
    if refused.errors(include_url=False)[0]["type"] == "json_invalid":  # e.g. "\\ud800", which json.loads reads
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            data = _UNREADABLE
        if data is not _UNREADABLE:
            try:
                return ChatCompletion.model_validate(data)
            except ValidationError as err:
                refused = err
    raise EndpointResponseError(_what_is_wrong(refused, text)) from None


_UNREADABLE = object()


def _what_is_wrong(err: ValidationError, text: str) -> str:
    first = err.errors(include_url=False)[0]
    kind, loc = first["type"], first["loc"]
    if kind == "json_invalid":
        head = text.lstrip()[:40]
        if head.startswith(("data:", "event:")):
            return "the answer is a server-sent event stream, not a chat completion"
        detail = str(first.get("ctx", {}).get("error", first["msg"]))
        if "recursion" in detail.lower():
            return "the answer is JSON nested too deeply to read"
        if head[:1] in ("{", "["):  # JSON the reader refuses (cut short, a number with thousands of digits, …)
            return f"the answer is not readable JSON ({detail[:120]})"
        return f"the answer is not JSON (it starts {head!r})"
    if not loc:
        shape = type(first.get("input")).__name__
        return f"the answer is not a chat completion (a JSON {_JSON_NAMES.get(shape, shape)})"
    if loc == ("choices",):
        return "the answer's 'choices' is not a list"
    if "content" in loc:
        return "a message in the answer has content that is not text"
    return "a choice in the answer has no message object"


_JSON_NAMES = {"list": "array", "str": "string", "int": "number", "float": "number", "bool": "boolean"}


async def post_completion(
    client: Any,
    body: dict[str, Any],
    *,
    url: str = "/chat/completions",
    headers: dict[str, Any] | None = None,
) -> ChatCompletion:
    """POST ``body`` with ``client`` (an ``openai.AsyncOpenAI``) to ``url`` (relative to its base URL, or
    absolute) and read the answer (:func:`parse_completion`). ``headers`` add to or replace the client's (an
    ``openai.Omit()`` value removes one). Raises the openai client's errors after its retries,
    :class:`EndpointResponseError` for an answer that is not a chat completion (or too large)."""
    import httpx2

    options: dict[str, Any] = {"headers": headers} if headers else {}
    response = await client.post(url, content=request_bytes(body), cast_to=httpx2.Response, options=options)
    return parse_completion(response.content)


def request_bytes(body: Any) -> bytes:
    """``body`` as a JSON request body, as the openai client writes one (UTF-8, compact), or with ``\\u`` escapes
    where UTF-8 cannot hold a string (a lone surrogate, which a prompt read from JSON may carry)."""
    try:
        return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(body, separators=(",", ":")).encode("ascii")


async def chat_completion(client: Any, **body: Any) -> ChatCompletion:
    """POST /chat/completions with ``body`` (model, messages, temperature, … and any extra fields; ``None``
    values left out) — :func:`post_completion` at ``client``'s base URL."""
    return await post_completion(client, {k: v for k, v in body.items() if v is not None})
