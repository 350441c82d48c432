"""Check a key against the endpoint that will use it, with one plain answer: ok, rejected, unreachable or error.

- OpenAI-compatible endpoints (the judge, the policy): ``GET {base_url}/models`` through the client the engine
  uses (:func:`svgagent.core.scoring.endpoint.endpoint_client`: proxies, caps), its errors read by the engine's
  taxonomy (:mod:`svgagent.core.scoring.failures`).
- The Fireworks control plane: ``GET {FIREWORKS_BASE_URL or https://api.fireworks.ai}/verifyApiKey`` through the
  fireworks-ai client's low-level ``get``; the account id comes back in the ``x-fireworks-account-id`` header.

At most one retry (transient failures only), a short timeout, and no message ever contains the key: anything a
server says is scrubbed of it before it reaches ``VerifyResult.message``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

DEFAULT_CONTROL_PLANE = "https://api.fireworks.ai"
ACCOUNT_HEADER = "x-fireworks-account-id"
MAX_RETRIES = 1
VerifyStatus = Literal["ok", "rejected", "unreachable", "error", "simulator"]  # simulator: demo mode's


@dataclass(frozen=True, slots=True)
class VerifyResult:
    status: VerifyStatus
    message: str
    account_id: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def control_plane_url(base_url: str | None = None) -> str:
    """The Fireworks control plane: ``base_url``, else ``FIREWORKS_BASE_URL``, else the public API."""
    return (base_url or os.environ.get("FIREWORKS_BASE_URL") or DEFAULT_CONTROL_PLANE).rstrip("/")


def display_url(url: str) -> str:
    """``url`` without user info, query or fragment: safe to show."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<invalid url>"
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", "")) or url


def _scrub(text: str, key: str) -> str:
    text = " ".join(str(text).split())
    if key:
        text = text.replace(key, "••••")
    return text[:200]


def _host(url: str) -> str:
    try:
        parts = urlsplit(url)
        return f"{parts.hostname}:{parts.port}" if parts.port else (parts.hostname or url)
    except ValueError:
        return url


def _rejected(code: int) -> VerifyResult:
    if code == 403:
        return VerifyResult("rejected", "rejected (HTTP 403): the key is valid but not allowed here")
    return VerifyResult("rejected", f"rejected (HTTP {code}): the key is wrong or revoked")


def _status_error(code: int, url: str, body: str) -> VerifyResult:
    if code == 404:
        hint = f"not found (HTTP 404) at {url}: check the base URL"
    elif code == 429:
        hint = f"rate limited (HTTP 429) by {url}: try again in a moment"
    else:
        hint = f"unexpected answer (HTTP {code}) from {url}"
    return VerifyResult("error", hint + (f": {body}" if body and code not in (404, 429) else ""))


def _connection_problem(timed_out: bool, url: str, timeout: float) -> VerifyResult:
    if timed_out:
        return VerifyResult("unreachable", f"unreachable: no answer from {_host(url)} within {timeout:g} s")
    return VerifyResult("unreachable", f"unreachable: could not connect to host {_host(url)}")


def _openai_verdict(err: BaseException, base_url: str, shown: str, key: str, timeout: float) -> VerifyResult:
    """What a failed ``GET /models`` says of the key, by the engine's failure kinds."""
    from svgagent.core.scoring.failures import classify, status_message
    from svgagent.core.scoring.models import FailureKind

    kind, _ = classify(err, "key check", shown, key_hint="the key", retries=MAX_RETRIES, timeout_s=timeout)
    status = getattr(err, "status_code", 0)
    if kind is FailureKind.AUTH:
        return _rejected(status)
    if kind in (FailureKind.HTTP_ERROR, FailureKind.RATE_LIMIT):
        return _status_error(status, shown, _scrub(status_message(err), key))
    if kind in (FailureKind.UNREACHABLE, FailureKind.TIMEOUT):
        return _connection_problem(kind is FailureKind.TIMEOUT, base_url, timeout)
    return VerifyResult("error", f"error: {type(err).__name__}: {_scrub(str(err), key)}")


async def verify_openai_key(
    base_url: str, key: str, timeout: float = 10, *, name: str = "OPENAI_API_KEY"
) -> VerifyResult:
    """List the models of an OpenAI-compatible endpoint with ``key``. ``name`` labels the key in the message."""
    from svgagent.core.scoring.endpoint import endpoint_client  # (imports openai: ~1 s the app's first frame skips)

    shown = display_url(base_url.rstrip("/"))
    if not key or not key.strip():
        return VerifyResult("error", f"{name} is not set")
    if not base_url.startswith(("http://", "https://")):
        return VerifyResult("error", f"invalid endpoint {shown!r}: must start with http:// or https://")
    try:
        async with endpoint_client(base_url.rstrip("/"), key, timeout_s=timeout, max_retries=MAX_RETRIES) as client:
            await client.models.list()
    except Exception as err:  # noqa: BLE001 - the answer must be one line, whatever went wrong
        return _openai_verdict(err, base_url, shown, key, timeout)
    return VerifyResult("ok", f"{name} accepted by {shown}")


async def verify_fireworks_key(key: str, base_url: str | None = None, timeout: float = 10) -> VerifyResult:
    """Ask the Fireworks control plane whether ``key`` is valid; an accepted key reports its account id."""
    import httpx
    from fireworks import (  # imported here: the client is only needed when a key is checked
        APIConnectionError,
        APIStatusError,
        APITimeoutError,
        AsyncFireworks,
        AuthenticationError,
        PermissionDeniedError,
    )

    from svgagent.core.scoring.failures import os_cause

    base = control_plane_url(base_url)
    shown = display_url(base)
    if not key or not key.strip():
        return VerifyResult("error", "FIREWORKS_API_KEY is not set")
    if not base.startswith(("http://", "https://")):
        return VerifyResult("error", f"invalid control plane URL {shown!r}: must start with http:// or https://")
    try:
        async with AsyncFireworks(api_key=key, base_url=base, timeout=timeout, max_retries=MAX_RETRIES) as client:
            response = await client.get("/verifyApiKey", cast_to=httpx.Response)
    except (AuthenticationError, PermissionDeniedError) as err:
        return _rejected(err.status_code)
    except APIStatusError as err:
        return _status_error(err.status_code, shown, _scrub(err.message, key))
    except APIConnectionError as err:  # (a refused connection can come as a timeout: its cause decides)
        return _connection_problem(isinstance(err, APITimeoutError) and os_cause(err) is None, base, timeout)
    except Exception as err:  # noqa: BLE001
        return VerifyResult("error", f"error: {type(err).__name__}: {_scrub(str(err), key)}")
    account = (response.headers.get(ACCOUNT_HEADER) or "").strip() or None
    suffix = f" (account {account})" if account else ""
    return VerifyResult("ok", f"FIREWORKS_API_KEY accepted by {shown}{suffix}", account_id=account)
