"""The policy side of a rollout: OpenAI-compatible clients and one chat-completion call.

Retries with exponential backoff (honouring ``Retry-After``) and per-request timeouts are the openai client's own;
this module only configures them and turns its exceptions into one-line reasons.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import openai

from svgagent.core.endpoint_trust import require_trusted
from svgagent.core.scoring.chat import chat_completion
from svgagent.core.scoring.errors import EndpointResponseError
from svgagent.core.scoring.models import FailureKind, Usage
from svgagent.core.settings import Settings


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


def _client(base_url: str, key: Any, settings: Settings) -> openai.AsyncOpenAI:
    # The aiohttp transport (openai[aiohttp]) costs far less CPU per request than the default httpx pool when
    # hundreds of requests are in flight; it is what keeps the engine near the ideal wall time (bench/engine.py).
    return openai.AsyncOpenAI(
        base_url=base_url,
        api_key=_secret(key) or "missing-key",
        timeout=settings.request_timeout_s,
        max_retries=settings.max_retries,
        http_client=openai.DefaultAioHttpClient(timeout=settings.request_timeout_s),
    )


def policy_client(settings: Settings) -> openai.AsyncOpenAI:
    require_trusted(settings, ("base_url",))  # never a key to an unconfirmed project-file endpoint
    return _client(settings.base_url, settings.fireworks_api_key, settings)


def judge_client(settings: Settings) -> openai.AsyncOpenAI:
    require_trusted(settings, ("judge_base_url",))
    return _client(settings.judge_base_url, settings.openai_api_key, settings)


def request_params(settings: Settings) -> dict[str, Any]:
    """The sampling parameters that define an answer (also part of the cache key)."""
    params: dict[str, Any] = {"temperature": settings.temperature, "max_tokens": settings.max_tokens}
    if settings.reasoning_effort:
        params["reasoning_effort"] = settings.reasoning_effort
    return params


async def generate(client: openai.AsyncOpenAI, model: str, messages: list[dict[str, Any]], params: dict[str, Any]) -> PolicyAnswer:
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


def _os_cause(err: BaseException) -> OSError | None:
    """The operating-system error behind a client error (connection refused, unknown host, reset), if any —
    the aiohttp transport reports a refused connection as a *connect timeout*, so its cause decides."""
    seen: set[int] = set()
    current: BaseException | None = err
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and not isinstance(current, TimeoutError):
            return current
        current = current.__cause__ or current.__context__
    return None


def _os_detail(cause: OSError) -> str:
    for inner in (getattr(cause, "os_error", None), cause):
        if isinstance(inner, OSError) and inner.strerror:
            return inner.strerror.lower()
    return type(cause).__name__


def classify_api_error(err: BaseException, who: str, settings: Settings) -> tuple[FailureKind, str]:
    """The typed kind and one line a user can act on, for an error of a policy/judge call after the client's
    retries (``who``: "policy" or "judge")."""
    key = "FIREWORKS_API_KEY" if who == "policy" else "OPENAI_API_KEY"
    url = settings.base_url if who == "policy" else settings.judge_base_url
    retries = f"{settings.max_retries} retries"
    if isinstance(err, openai.APIConnectionError):
        cause = _os_cause(err)
        if cause is not None:
            return FailureKind.UNREACHABLE, f"{who} endpoint unreachable: {url} ({_os_detail(cause)}; {retries})"
        if isinstance(err, openai.APITimeoutError):
            return (FailureKind.TIMEOUT,
                    f"{who} request timed out after {settings.request_timeout_s:g} s ({retries})")
        return FailureKind.UNREACHABLE, f"{who} endpoint unreachable: {url} ({retries})"
    if isinstance(err, (openai.AuthenticationError, openai.PermissionDeniedError)):
        return (FailureKind.AUTH,
                f"{who} key rejected (HTTP {err.status_code}) by {url}: check {key} in .env or the environment")
    if isinstance(err, openai.RateLimitError):
        return FailureKind.RATE_LIMIT, f"{who} endpoint rate-limited (HTTP 429) after {retries}"
    if isinstance(err, openai.APIStatusError):
        message = str(getattr(err, "message", "") or err).splitlines()[0][:200]
        return FailureKind.HTTP_ERROR, f"{who} endpoint answered HTTP {err.status_code}: {message}"
    if isinstance(err, PolicyError):
        return FailureKind.BAD_RESPONSE, str(err)
    if isinstance(err, EndpointResponseError):
        return FailureKind.BAD_RESPONSE, f"{who} endpoint: {err}"
    if isinstance(err, openai.APIResponseValidationError | openai.APIError):
        return FailureKind.BAD_RESPONSE, f"{who} endpoint sent an unusable answer: {str(err)[:200]}"
    return FailureKind.INTERNAL, f"{who} call failed: {type(err).__name__}: {str(err)[:200]}"


def describe_api_error(err: BaseException, who: str, settings: Settings) -> str:
    """One line a user can act on (see :func:`classify_api_error`)."""
    return classify_api_error(err, who, settings)[1]
