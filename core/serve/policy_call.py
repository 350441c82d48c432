"""The server's policy call: one chat completion POSTed to the request's URL with the request's key.

It goes through the engine's client stack (:mod:`svgagent.core.scoring.endpoint`: ``openai.AsyncOpenAI`` on the
bounded HTTP client — retries on connection errors, 408/409/429 and 5xx with backoff honouring ``Retry-After``,
a per-request timeout, answers read within a cap) and the answer is read and checked where the engine's is
(:func:`svgagent.core.scoring.chat.parse_completion`). An overall deadline (``deadline_s``) ends the call as
DEADLINE_EXCEEDED whatever the retries; a failure is classified by the engine's taxonomy
(:mod:`svgagent.core.scoring.failures`) and given the eval-protocol status code that says it.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import Any

from svgagent.core.exchange.ep_status import STATUS_OF_FAILURE, StatusCode, failure_kind_of
from svgagent.core.run.policy import PolicyAnswer
from svgagent.core.scoring.chat import post_completion
from svgagent.core.scoring.endpoint import endpoint_client
from svgagent.core.scoring.failures import classify, endpoint_errors
from svgagent.core.scoring.models import FailureKind, Usage

_CODES = {  # an HTTP error status the endpoint answered with, as the status eval-protocol reads
    400: StatusCode.INVALID_ARGUMENT,
    401: StatusCode.UNAUTHENTICATED,
    403: StatusCode.PERMISSION_DENIED,
    404: StatusCode.NOT_FOUND,
    408: StatusCode.DEADLINE_EXCEEDED,
    422: StatusCode.INVALID_ARGUMENT,
    429: StatusCode.RESOURCE_EXHAUSTED,
    502: StatusCode.UNAVAILABLE,
    503: StatusCode.UNAVAILABLE,
    504: StatusCode.UNAVAILABLE,
}


_NOT_IN_A_HEADER = re.compile(r"[\x00-\x1f\x7f]")


class PolicyCallError(Exception):
    """The policy call failed for good; ``code`` is the eval-protocol status to log, ``kind`` the failure kind to
    store (the code's, unless the taxonomy says more), ``str()`` says why."""

    def __init__(self, code: StatusCode, message: str, kind: FailureKind | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.kind = kind or failure_kind_of(code)


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 3
    request_timeout_s: float = 120.0
    deadline_s: float = 100.0


def serve_client(policy: RetryPolicy, connections: int) -> Any:
    """The ``openai.AsyncOpenAI`` the server's calls share (policy calls and status posts: each names its URL
    and its Authorization), its pool ``connections`` wide."""
    return endpoint_client(
        "http://127.0.0.1:9/unused",  # every call names an absolute URL
        "unused",  # every call names its Authorization (or none)
        timeout_s=policy.request_timeout_s,
        max_retries=policy.max_retries,
        connections=connections,
    )


def authorization(key: str | None) -> dict[str, Any]:
    """The Authorization header for ``key``: none at all without one (the client's placeholder is removed).
    ValueError for a key a header cannot carry (a control character, e.g. CR LF, or not latin-1)."""
    import openai

    if not key:
        return {"Authorization": openai.Omit()}
    if _NOT_IN_A_HEADER.search(key) or not key.isascii():
        raise ValueError("the request's api_key cannot be sent in a header (a control or non-ASCII character)")
    return {"Authorization": f"Bearer {key}"}


async def post_chat(client: Any, url: str, body: dict[str, Any], key: str | None, policy: RetryPolicy) -> PolicyAnswer:
    """POST ``body`` to ``url`` (…/chat/completions) until it answers, fails for good or the deadline passes."""
    try:
        headers = authorization(key)
    except ValueError as err:
        raise PolicyCallError(StatusCode.INVALID_ARGUMENT, str(err)) from None
    try:
        async with asyncio.timeout(policy.deadline_s):
            completion = await post_completion(client, body, url=url, headers=headers)
    except TimeoutError:
        raise PolicyCallError(
            StatusCode.DEADLINE_EXCEEDED, f"policy call exceeded the rollout deadline of {policy.deadline_s:g} s"
        ) from None
    except endpoint_errors() as err:
        raise _failure(err, url, policy) from None
    if not completion.choices:
        raise PolicyCallError(
            StatusCode.INTERNAL, "the policy endpoint returned no usable choice", FailureKind.BAD_RESPONSE
        )
    choice = completion.choices[0]
    usage = completion.usage
    return PolicyAnswer(
        content=choice.message.content or "",
        finish_reason=choice.finish_reason,
        usage=Usage(usage.prompt_tokens if usage else 0, usage.completion_tokens if usage else 0),
    )


def _failure(err: BaseException, url: str, policy: RetryPolicy) -> PolicyCallError:
    kind, message = classify(
        err,
        "policy",
        url.removesuffix("/chat/completions"),
        key_hint="the api_key the rollout request carries",
        retries=policy.max_retries,
        timeout_s=policy.request_timeout_s,
    )
    status = getattr(err, "status_code", None)
    code = _CODES.get(status, StatusCode.INTERNAL) if isinstance(status, int) else STATUS_OF_FAILURE[kind]
    return PolicyCallError(code, message, kind)
