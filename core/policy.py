"""The policy side of a rollout: OpenAI-compatible clients and one chat-completion call.

Retries with exponential backoff (honouring ``Retry-After``) and per-request timeouts are the openai client's own;
this module only configures them and turns its exceptions into one-line reasons.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import openai

from svgagent.core.scoring.chat import chat_completion
from svgagent.core.scoring.models import Usage
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
    return _client(settings.base_url, settings.fireworks_api_key, settings)


def judge_client(settings: Settings) -> openai.AsyncOpenAI:
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


def describe_api_error(err: BaseException, who: str, settings: Settings) -> str:
    """One line a user can act on, for an error raised by the openai client after its retries."""
    key = "FIREWORKS_API_KEY" if who == "policy" else "OPENAI_API_KEY"
    url = settings.base_url if who == "policy" else settings.judge_base_url
    if isinstance(err, openai.APITimeoutError):
        return f"{who} request timed out after {settings.request_timeout_s:g} s ({settings.max_retries} retries)"
    if isinstance(err, openai.APIConnectionError):
        return f"{who} endpoint unreachable: {url} ({settings.max_retries} retries)"
    if isinstance(err, openai.AuthenticationError):
        return f"{who} key rejected (HTTP 401) by {url}: check {key} in .env or the environment"
    if isinstance(err, openai.RateLimitError):
        return f"{who} endpoint rate-limited (HTTP 429) after {settings.max_retries} retries"
    if isinstance(err, openai.APIStatusError):
        message = str(getattr(err, "message", "") or err).splitlines()[0][:200]
        return f"{who} endpoint answered HTTP {err.status_code}: {message}"
    if isinstance(err, PolicyError):
        return str(err)
    return f"{who} call failed: {type(err).__name__}: {str(err)[:200]}"
