"""What a failed endpoint call was: a :class:`FailureKind` and one line a user can act on — the one taxonomy of the
engine, ``svgagent serve``, the key checks and the RFT bundle's judge.

The errors are the openai client's, after its retries (``APITimeoutError``, ``APIConnectionError`` with the
operating system's or the HTTP layer's cause, ``APIStatusError`` with the status and the body's message), and
:class:`EndpointResponseError` for an answer that is not a chat completion or is too large (never retried).
"""

from __future__ import annotations

import errno as errno_names
import os
from typing import Any

from svgagent.core.scoring.errors import EndpointResponseError
from svgagent.core.scoring.models import FailureKind


def os_cause(err: BaseException) -> OSError | None:
    """The operating-system error behind a client error (connection refused, unknown host, reset), if any: a
    refused connection can surface as a timeout or a wrapped client error, so its cause decides. The most precise
    one is taken: one with an error number (anyio's "All connection attempts failed" is caused by it)."""
    found = [e for e in _chain(err) if isinstance(e, OSError) and not isinstance(e, TimeoutError)]
    precise = [e for e in found if e.errno]
    return (precise or found or [None])[0]


def _chain(err: BaseException) -> list[BaseException]:
    """``err``, its causes and contexts, and the first exception of any group among them."""
    seen: list[BaseException] = []
    current: BaseException | None = err
    while current is not None and all(current is not s for s in seen):
        seen.append(current)
        group = getattr(current, "exceptions", None)  # (an ExceptionGroup: several connection attempts failed)
        nested = group[0] if isinstance(group, tuple) and group and isinstance(group[0], BaseException) else None
        current = current.__cause__ or current.__context__ or nested
    return seen


def os_detail(cause: OSError) -> str:
    """``connection refused``, not ``Connect call failed (…)``; a resolver's own words for an unknown host."""
    for inner in (getattr(cause, "os_error", None), cause):
        if isinstance(inner, OSError) and inner.errno and inner.errno > 0 and inner.errno in errno_names.errorcode:
            return os.strerror(inner.errno).lower()
        if isinstance(inner, OSError) and inner.strerror:
            return str(inner.strerror).lower()[:120]
    return type(cause).__name__


def _protocol_problem(err: BaseException) -> str | None:
    """What the HTTP layer refused in the answer (a head too large, framing it cannot read, a broken encoding)."""
    import httpx2

    for current in _chain(err):
        # (aiohttp's parse errors, under the aiohttp transport, live in aiohttp.http_exceptions: a head, a line or
        # a trailer past its caps; httpx2 maps some of them to a ReadError)
        if isinstance(current, (httpx2.ProtocolError, httpx2.DecodingError)) or (
            type(current).__module__ == "aiohttp.http_exceptions"
        ):
            text = " ".join(str(current).split())[:160]
            return f"{type(current).__name__}: {text}" if text else type(current).__name__
    return None


def status_message(err: Any) -> str:
    """The first line of what an error status's body said (its ``error.message`` when it is JSON)."""
    body = getattr(err, "body", None)
    message = body.get("message") if isinstance(body, dict) else body
    if not isinstance(message, str) or not message.strip():
        message = str(getattr(err, "message", "") or err)
    return (message.strip().splitlines() or [""])[0][:200]


def classify(
    err: BaseException, who: str, url: str, *, key_hint: str, retries: int, timeout_s: float
) -> tuple[FailureKind, str]:
    """The kind and one line for ``err``, raised by a ``who`` ("policy", "judge") call to ``url`` after the
    client's ``retries``; ``key_hint`` says which key to check when the endpoint refuses it ("OPENAI_API_KEY in
    .env or the environment")."""
    import openai

    tries = f"{retries} retries"
    unusable = next((e for e in _chain(err) if isinstance(e, EndpointResponseError)), None)
    if unusable is not None:  # (openai 2, the RFT bundle's, wraps what the HTTP client raised in a connection error)
        return FailureKind.BAD_RESPONSE, f"{who} endpoint: {unusable}"
    if isinstance(err, openai.APIConnectionError):
        cause = os_cause(err)
        if cause is not None:
            return FailureKind.UNREACHABLE, f"{who} endpoint unreachable: {url} ({os_detail(cause)}; {tries})"
        if isinstance(err, openai.APITimeoutError):
            return FailureKind.TIMEOUT, f"{who} request timed out after {timeout_s:g} s ({tries})"
        problem = _protocol_problem(err)
        if problem is not None:
            return FailureKind.BAD_RESPONSE, f"{who} endpoint sent an unreadable answer: {url} ({problem}; {tries})"
        return FailureKind.UNREACHABLE, f"{who} endpoint unreachable: {url} ({tries})"
    if isinstance(err, openai.APIStatusError):
        status = err.status_code
        if status in (401, 403):
            return FailureKind.AUTH, f"{who} key rejected (HTTP {status}) by {url}: check {key_hint}"
        if status == 429:
            return FailureKind.RATE_LIMIT, f"{who} endpoint rate-limited (HTTP 429) after {tries}"
        return FailureKind.HTTP_ERROR, f"{who} endpoint answered HTTP {status}: {status_message(err)}"
    if isinstance(err, openai.APIError):
        return FailureKind.BAD_RESPONSE, f"{who} endpoint sent an unusable answer: {str(err)[:200]}"
    return FailureKind.INTERNAL, f"{who} call failed: {type(err).__name__}: {str(err)[:200]}"


def endpoint_errors() -> tuple[type[BaseException], ...]:
    """What a failed policy or judge call raises (what :func:`classify` reads)."""
    import openai

    return (openai.APIError, EndpointResponseError)
