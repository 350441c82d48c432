"""The ``/init`` request as eval-protocol sends it (``InitRequest`` of ``eval_protocol.types``), validated with caps.

Body: ``completion_params`` (``model`` required, plus sampling parameters), ``messages`` (OpenAI chat messages),
``tools``, ``model_base_url`` (the tracing-proxy URL with the rollout's ids in its path), ``metadata``
{invocation_id, experiment_id, rollout_id, run_id, row_id} and ``api_key``. Anything that does not fit is refused
with a 400 whose message names the field and never echoes a value (the body holds a key).
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, field_validator

from svgagent.core.serve.security import check_http_url

MAX_MESSAGES = 64
MAX_TEXT_CHARS = 200_000
# An id goes into URL paths (the tracing proxy's) and the store: printable, no spaces, no path or query syntax.
Id = Annotated[str, StringConstraints(min_length=1, max_length=256, pattern=r"^[^\s/?#%\\]+$")]
# The sampling parameters passed on to the policy; everything else in completion_params stays here.
SAMPLING_KEYS = (
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "max_tokens",
    "max_completion_tokens",
    "stop",
    "seed",
    "presence_penalty",
    "frequency_penalty",
    "repetition_penalty",
    "reasoning_effort",
    "logprobs",
    "top_logprobs",
)


class RolloutIds(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    invocation_id: Id
    experiment_id: Id
    rollout_id: Id
    run_id: Id
    row_id: Id


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")

    role: Literal["system", "user", "assistant", "tool", "developer"]
    content: str | list[dict[str, Any]] | None = None
    name: Annotated[str, StringConstraints(max_length=256)] | None = None
    tool_call_id: Annotated[str, StringConstraints(max_length=256)] | None = None
    tool_calls: list[dict[str, Any]] | None = None

    @field_validator("content")
    @classmethod
    def _capped(cls, value: Any) -> Any:
        if isinstance(value, str) and len(value) > MAX_TEXT_CHARS:
            raise ValueError(f"is longer than {MAX_TEXT_CHARS} characters")
        return value

    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        if isinstance(self.content, list):
            return "".join(str(p.get("text", "")) for p in self.content if p.get("type") == "text")
        return ""


class InitRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    completion_params: dict[str, Any]
    messages: Annotated[list[ChatMessage], Field(min_length=1, max_length=MAX_MESSAGES)]
    tools: list[dict[str, Any]] | None = None
    model_base_url: Annotated[str, StringConstraints(min_length=1, max_length=4096)]
    metadata: RolloutIds
    api_key: Annotated[str, StringConstraints(max_length=1024)] | None = None

    @field_validator("completion_params")
    @classmethod
    def _has_model(cls, value: dict[str, Any]) -> dict[str, Any]:
        model = value.get("model")
        if not isinstance(model, str) or not model.strip() or len(model) > 512:
            raise ValueError("needs 'model': a non-empty string of at most 512 characters")
        return value

    @field_validator("model_base_url")
    @classmethod
    def _callable_url(cls, value: str) -> str:
        problem = check_http_url(value)
        if problem:
            raise ValueError(problem)
        return value.rstrip("/")

    @property
    def model(self) -> str:
        return str(self.completion_params["model"]).strip()

    def sampling(self) -> dict[str, Any]:
        return {k: self.completion_params[k] for k in SAMPLING_KEYS if self.completion_params.get(k) is not None}

    def chat_messages(self) -> list[dict[str, Any]]:
        return [m.model_dump(exclude_none=True) for m in self.messages]

    def user_text(self) -> str:
        """The last user message: the formatted SVGBench prompt."""
        users = [m for m in self.messages if m.role == "user"]
        return users[-1].text() if users else ""


class RequestError(ValueError):
    """A body that cannot be accepted; ``str()`` is the one-line reason for the 400."""


def parse_init_body(raw: bytes) -> InitRequest:
    """Validate a raw ``/init`` body; RequestError says why not (fields only, never values). Read by pydantic's own
    JSON parser (no Python dicts built for what it ignores: a third of json.loads + :func:`parse_init`'s CPU); a
    body it refuses as JSON goes through json.loads as before (a BOM, UTF-16 and -32 are JSON to it), so the same
    bodies are accepted. Nested too deep for either: not valid JSON."""
    try:
        return InitRequest.model_validate_json(raw)
    except ValidationError as err:
        if err.errors(include_url=False)[0]["type"] != "json_invalid":
            raise _request_error(err) from None
    try:
        payload = json.loads(raw)
    except (ValueError, RecursionError):  # JSONDecodeError, UnicodeDecodeError; json.loads recurses per level
        raise RequestError("the body is not valid JSON") from None
    return parse_init(payload)


def parse_init(payload: Any) -> InitRequest:
    """Validate a decoded JSON body; RequestError names the first problems (fields only, never values)."""
    if not isinstance(payload, dict):
        raise RequestError("the body must be a JSON object")
    try:
        return InitRequest.model_validate(payload)
    except ValidationError as err:
        raise _request_error(err) from None


def _request_error(err: ValidationError) -> RequestError:
    items = err.errors(include_url=False)
    if len(items) == 1 and items[0]["type"] == "model_type" and not items[0]["loc"]:
        return RequestError("the body must be a JSON object")
    problems = []
    for item in items[:3]:
        where = ".".join(str(p) for p in item.get("loc", ())) or "body"
        message = str(item.get("msg", "invalid")).removeprefix("Value error, ")
        problems.append(f"{where}: {message}")
    more = err.error_count() - len(problems)
    return RequestError("; ".join(problems) + (f" (and {more} more)" if more > 0 else ""))


def gateway_base(model_base_url: str) -> str:
    """The tracing gateway eval-protocol polls: ``model_base_url`` without the rollout's path (which starts at
    ``/rollout_id/``); the URL itself when it has none."""
    cut = model_base_url.find("/rollout_id/")
    return (model_base_url[:cut] if cut >= 0 else model_base_url).rstrip("/")
