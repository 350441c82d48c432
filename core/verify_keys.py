"""Check a key against the endpoint that will use it, with one plain answer: ok, rejected, unreachable or error.

- OpenAI-compatible endpoints (the judge, the policy): ``GET {base_url}/models`` through the ``openai`` client.
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


def _connection_problem(err: Exception, url: str, timeout: float) -> VerifyResult:
    import httpx
    import openai

    if isinstance(err, (openai.APITimeoutError, httpx.TimeoutException)) or "timed out" in type(err).__name__.lower():
        return VerifyResult("unreachable", f"unreachable: no answer from {_host(url)} within {timeout:g} s")
    return VerifyResult("unreachable", f"unreachable: could not connect to host {_host(url)}")


async def verify_openai_key(
    base_url: str, key: str, timeout: float = 10, *, name: str = "OPENAI_API_KEY"
) -> VerifyResult:
    """List the models of an OpenAI-compatible endpoint with ``key``. ``name`` labels the key in the message."""
    import openai  # imported here: ~1 s that the Secrets pane (and so the app's first frame) must not wait for

    shown = display_url(base_url.rstrip("/"))
    if not key or not key.strip():
        return VerifyResult("error", f"{name} is not set")
    if not base_url.startswith(("http://", "https://")):
        return VerifyResult("error", f"invalid endpoint {shown!r}: must start with http:// or https://")
    try:
        async with openai.AsyncOpenAI(
            api_key=key, base_url=base_url.rstrip("/"), timeout=timeout, max_retries=MAX_RETRIES
        ) as client:
            await client.models.list()
    except (openai.AuthenticationError, openai.PermissionDeniedError) as err:
        return _rejected(err.status_code)
    except openai.APIStatusError as err:
        return _status_error(err.status_code, shown, _scrub(err.message, key))
    except openai.APIConnectionError as err:  # includes APITimeoutError
        return _connection_problem(err, base_url, timeout)
    except Exception as err:  # noqa: BLE001 - the answer must be one line, whatever went wrong
        return VerifyResult("error", f"error: {type(err).__name__}: {_scrub(str(err), key)}")
    return VerifyResult("ok", f"{name} accepted by {shown}")


async def verify_fireworks_key(key: str, base_url: str | None = None, timeout: float = 10) -> VerifyResult:
    """Ask the Fireworks control plane whether ``key`` is valid; an accepted key reports its account id."""
    import httpx
    from fireworks import (  # imported here: the client is only needed when a key is checked
        APIConnectionError,
        APIStatusError,
        AsyncFireworks,
        AuthenticationError,
        PermissionDeniedError,
    )

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
    except APIConnectionError as err:
        return _connection_problem(err, base, timeout)
    except Exception as err:  # noqa: BLE001
        return VerifyResult("error", f"error: {type(err).__name__}: {_scrub(str(err), key)}")
    account = (response.headers.get(ACCOUNT_HEADER) or "").strip() or None
    suffix = f" (account {account})" if account else ""
    return VerifyResult("ok", f"FIREWORKS_API_KEY accepted by {shown}{suffix}", account_id=account)
