"""The policy side of a rollout: the chat clients the engine uses and one chat-completion call.

The clients are ``openai.AsyncOpenAI`` on svgagent's bounded HTTP client (:mod:`svgagent.core.scoring.endpoint`:
one per endpoint, its pool sized to the concurrency, retries and timeouts from Settings, proxies from the
environment). This module configures them and turns what they raise into a typed kind and one line
(:mod:`svgagent.core.scoring.failures`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from svgagent.core.config.project_trust import require_trusted
from svgagent.core.config.settings import Settings
from svgagent.core.scoring.chat import chat_completion
from svgagent.core.scoring.endpoint import endpoint_client
from svgagent.core.scoring.failures import classify, endpoint_errors
from svgagent.core.scoring.models import FailureKind, Usage


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
            "cached_prompt_tokens": self.usage.cached_prompt_tokens,
        }

    @classmethod
    def from_cache(cls, data: dict[str, Any]) -> PolicyAnswer:
        return cls(
            content=data["content"],
            finish_reason=data.get("finish_reason"),
            usage=Usage(
                data.get("prompt_tokens", 0), data.get("completion_tokens", 0), data.get("cached_prompt_tokens", 0)
            ),
        )


def _secret(value: Any) -> str:
    return value.get_secret_value() if value is not None else ""


def _client(base_url: str, key: Any, settings: Settings, connections: int) -> Any:
    return endpoint_client(
        base_url,
        _secret(key),
        timeout_s=settings.request_timeout_s,
        max_retries=settings.max_retries,
        connections=connections,
    )


def policy_client(settings: Settings) -> Any:
    """The ``openai.AsyncOpenAI`` of the policy endpoint (``await client.close()`` when done)."""
    require_trusted(settings, ("base_url",))  # never a key to an unconfirmed project-file endpoint
    return _client(settings.base_url, settings.fireworks_api_key, settings, settings.concurrency)


def judge_client(settings: Settings) -> Any:
    """The ``openai.AsyncOpenAI`` of the judge endpoint."""
    require_trusted(settings, ("judge_base_url",))
    return _client(settings.judge_base_url, settings.openai_api_key, settings, settings.judge_concurrency)


def api_errors() -> tuple[type[BaseException], ...]:
    """What a failed policy or judge call raises: the openai client's errors, an answer that is not a chat
    completion, an answer with nothing usable."""
    return (*endpoint_errors(), PolicyError)


def request_params(settings: Settings) -> dict[str, Any]:
    """The sampling parameters that define an answer (also part of the cache key)."""
    params: dict[str, Any] = {"temperature": settings.temperature, "max_tokens": settings.max_tokens}
    if settings.reasoning_effort:
        params["reasoning_effort"] = settings.reasoning_effort
    return params


async def generate(client: Any, model: str, messages: list[dict[str, Any]], params: dict[str, Any]) -> PolicyAnswer:
    """One policy call (``client``: an ``openai.AsyncOpenAI``)."""
    response = await chat_completion(client, model=model, messages=messages, **params)
    if not response.choices:
        raise PolicyError("the policy endpoint returned no choices")
    choice = response.choices[0]
    usage = response.usage
    return PolicyAnswer(
        content=choice.message.content or "",
        finish_reason=choice.finish_reason,
        usage=Usage(usage.prompt_tokens, usage.completion_tokens, usage.cached_prompt_tokens) if usage else Usage(),
    )


def classify_api_error(err: BaseException, who: str, settings: Settings) -> tuple[FailureKind, str]:
    """The typed kind and one line a user can act on, for an error of a policy/judge call after the client's
    retries (``who``: "policy" or "judge")."""
    if isinstance(err, PolicyError):
        return FailureKind.BAD_RESPONSE, str(err)
    key = "FIREWORKS_API_KEY" if who == "policy" else "OPENAI_API_KEY"
    return classify(
        err,
        who,
        settings.base_url if who == "policy" else settings.judge_base_url,
        key_hint=f"{key} in .env or the environment",
        retries=settings.max_retries,
        timeout_s=settings.request_timeout_s,
    )


def describe_api_error(err: BaseException, who: str, settings: Settings) -> str:
    """One line a user can act on (see :func:`classify_api_error`)."""
    return classify_api_error(err, who, settings)[1]
