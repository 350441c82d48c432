"""The server's policy call: one chat completion POSTed to the request's URL on pooled keep-alive connections.

Why not the openai client: bench/client.py measured it at 1.1–1.6 ms of CPU per request, and the server's budget
is < 2 ms per rollout for everything (bench/serve.py); an aiohttp POST still cost 0.35–0.8 ms, so the request goes
through :mod:`svgagent.core.http1` as the engine's do. What the openai client would do is done here the same way: retries on connection errors,
408/409/429 and 5xx with exponential backoff that honours ``Retry-After``, a per-request timeout, and an overall
deadline (``deadline_s``) that ends the call as DEADLINE_EXCEEDED whatever the retries.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from dataclasses import dataclass
from typing import Any

from svgagent.core.ep_status import StatusCode
from svgagent.core.http1 import Http1Client, HttpProtocolError, RequestHead, Target
from svgagent.core.json_body import json_bytes, json_value
from svgagent.core.policy import PolicyAnswer
from svgagent.core.scoring.models import Usage

RETRIED_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
MAX_ANSWER_BYTES = 16 * 1024 * 1024
_CODES = {
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


class PolicyCallError(Exception):
    """The policy call failed for good; ``code`` is the eval-protocol status to log, ``str()`` says why."""

    def __init__(self, code: StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 3
    request_timeout_s: float = 120.0
    deadline_s: float = 100.0
    base_delay_s: float = 0.5
    max_delay_s: float = 8.0


def json_post(url: str, key: str | None) -> tuple[Target, RequestHead]:
    """Where a JSON POST to ``url`` goes and its head, with ``key`` as its bearer token (none without one) — for
    the policy calls and the status posts alike. The URLs differ per rollout only in their path: what they say of
    the origin, and the header fields, are read and checked once (:meth:`Target.parse`, :meth:`Target.head`)."""
    target = Target.parse(url)
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}
    return target, target.head(headers)


def _delay(attempt: int, retry_after: str | None, policy: RetryPolicy) -> float:
    if retry_after:
        try:
            return min(max(0.0, float(retry_after)), 60.0)
        except ValueError:
            pass
    return min(policy.base_delay_s * 2**attempt, policy.max_delay_s) * (0.75 + random.random() / 2)


def _error_text(raw: bytes) -> str:
    try:
        data = json.loads(raw)
        err = data.get("error") if isinstance(data, dict) else None
        message = (
            err.get("message") if isinstance(err, dict) else (data.get("detail") if isinstance(data, dict) else None)
        )
        if message:
            return str(message).splitlines()[0][:200]
    except (ValueError, AttributeError):
        pass
    return raw[:200].decode("utf-8", "replace").splitlines()[0] if raw.strip() else "no details"


def parse_answer(raw: bytes) -> PolicyAnswer:
    """The first choice and the usage of a chat-completion body; PolicyCallError (INTERNAL) when it has none."""
    try:
        data = json_value(raw)
        choice = data["choices"][0]
        message = choice.get("message") or {}
        content = message.get("content")
        usage = data.get("usage") or {}
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        raise PolicyCallError(StatusCode.INTERNAL, "the policy endpoint returned no usable choice") from None
    if isinstance(content, list):
        content = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return PolicyAnswer(
        content=content if isinstance(content, str) else "",
        finish_reason=choice.get("finish_reason"),
        usage=Usage(int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)),
    )


async def post_chat(
    http: Http1Client, url: str, body: dict[str, Any], key: str | None, policy: RetryPolicy
) -> PolicyAnswer:
    """POST ``body`` to ``url`` (…/chat/completions) until it answers, fails for good or the deadline passes."""
    try:
        target, head = json_post(url, key)
    except ValueError as err:
        raise PolicyCallError(StatusCode.INVALID_ARGUMENT, f"the policy URL cannot be called: {err}") from None
    data = json_bytes(body)
    started = time.monotonic()
    problem, code = "", StatusCode.UNAVAILABLE
    for attempt in range(policy.max_retries + 1):
        left = policy.deadline_s - (time.monotonic() - started)
        if left <= 0:
            raise _past_deadline(policy, problem)
        retry_after: str | None = None
        per_request = min(policy.request_timeout_s, left)
        try:
            resp = await http.post(target, head, data, max_body=MAX_ANSWER_BYTES, timeout=per_request)
        except TimeoutError:  # (before OSError: TimeoutError is one)
            if per_request >= left:
                raise _past_deadline(policy, problem) from None
            problem, code = f"timed out after {per_request:g} s", StatusCode.DEADLINE_EXCEEDED
        except (OSError, HttpProtocolError) as err:
            problem, code = f"unreachable ({type(err).__name__})", StatusCode.UNAVAILABLE
        else:
            raw = resp.body[:MAX_ANSWER_BYTES]
            if resp.status == 200:
                return parse_answer(raw)
            problem = f"answered HTTP {resp.status}: {_error_text(raw)}"
            code = _CODES.get(resp.status, StatusCode.INTERNAL)
            if resp.status not in RETRIED_STATUSES:
                raise PolicyCallError(code, f"policy endpoint {problem}")
            retry_after = resp.headers.get("retry-after")
        if attempt == policy.max_retries:
            break
        pause = _delay(attempt, retry_after, policy)
        if pause >= policy.deadline_s - (time.monotonic() - started):
            raise _past_deadline(policy, problem)
        await asyncio.sleep(pause)
    if code is StatusCode.RESOURCE_EXHAUSTED:
        raise PolicyCallError(code, f"policy endpoint rate-limited (HTTP 429) after {policy.max_retries} retries")
    raise PolicyCallError(code, f"policy endpoint {problem} ({policy.max_retries} retries)")


def _past_deadline(policy: RetryPolicy, problem: str) -> PolicyCallError:
    return PolicyCallError(
        StatusCode.DEADLINE_EXCEEDED,
        f"policy call exceeded the rollout deadline of "
        f"{policy.deadline_s:g} s" + (f" (last try: {problem})" if problem else ""),
    )
