"""The policy side of a rollout: the chat clients the engine uses and one chat-completion call.

The engine's clients are :class:`svgagent.core.chat_http.ChatClient` (aiohttp; retries with exponential backoff
and jitter honouring ``Retry-After``, per-request timeouts, typed errors — the openai client's manners at a
fraction of its CPU). This module configures them and turns their exceptions — and the openai client's, for
callers that pass one — into a typed kind and one line.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from svgagent.core.chat_http import ChatClient, ChatConnectionError, ChatError, ChatStatusError, ChatTimeout, os_cause
from svgagent.core.endpoint_trust import require_trusted
from svgagent.core.scoring.chat import chat_completion
from svgagent.core.scoring.errors import EndpointResponseError
from svgagent.core.scoring.models import FailureKind, Usage
from svgagent.core.settings import Settings

if TYPE_CHECKING:
    import openai


class PolicyError(Exception):
    """The endpoint answered, but with nothing usable (e.g. no choices)."""


@dataclass(frozen=True, slots=True)
class PolicyAnswer:
    content: str
    finish_reason: str | None
    usage: Usage

    def to_cache(self) -> dict[str, Any]:
        return {
            "content": self.content,
            "finish_reason": self.finish_reason,
            "prompt_tokens": self.usage.prompt_tokens,
            "completion_tokens": self.usage.completion_tokens,
        }

    @classmethod
    def from_cache(cls, data: dict[str, Any]) -> PolicyAnswer:
        return cls(
            content=data["content"],
            finish_reason=data.get("finish_reason"),
            usage=Usage(data.get("prompt_tokens", 0), data.get("completion_tokens", 0)),
        )


def _secret(value: Any) -> str:
    return value.get_secret_value() if value is not None else ""


def _client(base_url: str, key: Any, settings: Settings) -> ChatClient:
    return ChatClient(
        base_url, _secret(key) or "missing-key", timeout_s=settings.request_timeout_s, max_retries=settings.max_retries
    )


def policy_client(settings: Settings) -> ChatClient:
    require_trusted(settings, ("base_url",))  # never a key to an unconfirmed project-file endpoint
    return _client(settings.base_url, settings.fireworks_api_key, settings)


def judge_client(settings: Settings) -> ChatClient:
    require_trusted(settings, ("judge_base_url",))
    return _client(settings.judge_base_url, settings.openai_api_key, settings)


def api_errors() -> tuple[type[BaseException], ...]:
    """What a failed policy or judge call raises: the engine's client's errors, an unusable answer, and — only
    when something has imported it, since only then can it have raised — the openai client's."""
    errors: tuple[type[BaseException], ...] = (ChatError, PolicyError, EndpointResponseError)
    openai_module = sys.modules.get("openai")
    return errors + (openai_module.APIError,) if openai_module is not None else errors


def request_params(settings: Settings) -> dict[str, Any]:
    """The sampling parameters that define an answer (also part of the cache key)."""
    params: dict[str, Any] = {"temperature": settings.temperature, "max_tokens": settings.max_tokens}
    if settings.reasoning_effort:
        params["reasoning_effort"] = settings.reasoning_effort
    return params


def request_json(model: str, messages: list[dict[str, Any]], params: dict[str, Any]) -> bytes:
    """The body :func:`generate` sends (what :func:`chat_completion` and ``ChatClient.complete_chat`` serialise),
    built once: the engine keeps it per dataset row, whose samples all send the same request."""
    body = {"model": model, "messages": messages, **params}
    return json.dumps({k: v for k, v in body.items() if v is not None}).encode()


async def generate(
    client: ChatClient | openai.AsyncOpenAI,
    model: str,
    messages: list[dict[str, Any]],
    params: dict[str, Any],
    body: bytes | None = None,
) -> PolicyAnswer:
    """One policy call; ``body``: :func:`request_json` of the same arguments, sent as it is by a client that takes
    a serialised body (the engine's ChatClient), ignored by others."""
    send_json = getattr(client, "complete_chat_json", None) if body is not None else None
    if send_json is not None:
        response = await send_json(body)
    else:
        response = await chat_completion(client, model=model, messages=messages, **params)
    if not response.choices:
        raise PolicyError("the policy endpoint returned no choices")
    choice = response.choices[0]
    usage = response.usage
    return PolicyAnswer(
        content=choice.message.content or "",
        finish_reason=choice.finish_reason,
        usage=Usage(usage.prompt_tokens if usage else 0, usage.completion_tokens if usage else 0),
    )


def _os_detail(cause: OSError) -> str:
    for inner in (getattr(cause, "os_error", None), cause):
        if isinstance(inner, OSError) and inner.errno:  # "connection refused", not "Connect call failed (…)"
            return os.strerror(inner.errno).lower()
        if isinstance(inner, OSError) and inner.strerror:
            return inner.strerror.lower()
    return type(cause).__name__


def classify_api_error(err: BaseException, who: str, settings: Settings) -> tuple[FailureKind, str]:
    """The typed kind and one line a user can act on, for an error of a policy/judge call after the client's
    retries (``who``: "policy" or "judge")."""
    key = "FIREWORKS_API_KEY" if who == "policy" else "OPENAI_API_KEY"
    url = settings.base_url if who == "policy" else settings.judge_base_url
    retries = f"{settings.max_retries} retries"
    if isinstance(err, ChatConnectionError):
        if err.cause is not None:
            return FailureKind.UNREACHABLE, f"{who} endpoint unreachable: {url} ({_os_detail(err.cause)}; {retries})"
        return FailureKind.UNREACHABLE, f"{who} endpoint unreachable: {url} ({retries})"
    if isinstance(err, ChatTimeout):
        return FailureKind.TIMEOUT, f"{who} request timed out after {settings.request_timeout_s:g} s ({retries})"
    if isinstance(err, ChatStatusError):
        return _status_failure(err.status, err.message, who, key, url, retries)
    if isinstance(err, PolicyError):
        return FailureKind.BAD_RESPONSE, str(err)
    if isinstance(err, EndpointResponseError):
        return FailureKind.BAD_RESPONSE, f"{who} endpoint: {err}"
    openai_module = sys.modules.get("openai")
    if openai_module is not None and isinstance(err, openai_module.APIError):
        return _openai_failure(err, openai_module, who, key, url, retries, settings.request_timeout_s)
    return FailureKind.INTERNAL, f"{who} call failed: {type(err).__name__}: {str(err)[:200]}"


def _status_failure(status: int, message: str, who: str, key: str, url: str, retries: str) -> tuple[FailureKind, str]:
    if status in (401, 403):
        return FailureKind.AUTH, f"{who} key rejected (HTTP {status}) by {url}: check {key} in .env or the environment"
    if status == 429:
        return FailureKind.RATE_LIMIT, f"{who} endpoint rate-limited (HTTP 429) after {retries}"
    first = (message.splitlines() or [""])[0][:200]
    return FailureKind.HTTP_ERROR, f"{who} endpoint answered HTTP {status}: {first}"


def _openai_failure(
    err: Any, openai_module: Any, who: str, key: str, url: str, retries: str, timeout_s: float
) -> tuple[FailureKind, str]:
    """The same, for the openai client's errors (callers that pass an ``openai.AsyncOpenAI``)."""
    if isinstance(err, openai_module.APIConnectionError):
        cause = os_cause(err)
        if cause is not None:
            return FailureKind.UNREACHABLE, f"{who} endpoint unreachable: {url} ({_os_detail(cause)}; {retries})"
        if isinstance(err, openai_module.APITimeoutError):
            return FailureKind.TIMEOUT, f"{who} request timed out after {timeout_s:g} s ({retries})"
        return FailureKind.UNREACHABLE, f"{who} endpoint unreachable: {url} ({retries})"
    if isinstance(err, openai_module.APIStatusError):
        return _status_failure(err.status_code, str(getattr(err, "message", "") or err), who, key, url, retries)
    return FailureKind.BAD_RESPONSE, f"{who} endpoint sent an unusable answer: {str(err)[:200]}"


def describe_api_error(err: BaseException, who: str, settings: Settings) -> str:
    """One line a user can act on (see :func:`classify_api_error`)."""
    return classify_api_error(err, who, settings)[1]
