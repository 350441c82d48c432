"""The HTTP client of every call to an OpenAI-compatible endpoint: the policy and the judge (``svgagent eval``, the
app, ``svgagent serve``, the RFT bundle), serve's status posts and the key checks.

It is ``openai.AsyncOpenAI`` on an ``httpx2.AsyncClient`` (openai 3's transport; openai 2, which eval-protocol
pins in the RFT bundle, takes it through its ``httpx2`` extra) on aiohttp's connections where openai 3 offers them
(``openai.DefaultAioHttpClient``: httpx2's pool costs ~3x the CPU per request and more the larger it grows, httpx2
issue 827), else on httpx2's own: the openai client's retries
(connection errors, timeouts, 408/409/429/5xx, ``x-should-retry``), backoff with jitter honouring ``Retry-After``,
typed errors; httpx2's connection pool, proxies from the environment (``HTTP_PROXY``, ``HTTPS_PROXY``,
``ALL_PROXY``, ``NO_PROXY``) and TLS. What :class:`BoundedHttpClient` adds, through httpx2's public API, so that a
hostile endpoint cannot hold a caller's memory or time:

- an answer's body is counted as it arrives, on the wire and decoded (httpx2 inflates gzip/deflate/brotli/zstd in
  pieces of at most 1 MiB), before anything parses it: a successful answer past ``max_body`` raises
  :class:`AnswerTooLarge` (openai 3 does not retry it: its bytes were the endpoint's answer), an error status's body is cut at
  :data:`MAX_ERROR_BYTES` (the status still tells what happened); the connection is then dropped unread;
- a whole-request deadline (the request's timeout as the openai client sets it, else ``deadline_s``: connect, head
  and body together; httpx2's timeouts are per read, so a slow drip would otherwise never end): past it the
  request fails as a timeout, which the openai client retries like any other;
- answer heads and trailers are capped by the HTTP/1.1 parser (aiohttp's: 128 fields of at most 8 KiB; h11's:
  100 KiB): past it the exchange is a protocol error (what a transport raises that httpx2 has no class for is
  made one);
- loopback endpoints (``localhost``, ``127.0.0.1``, ``[::1]``) are always called directly, never through a proxy
  from the environment (as Go's net/http does): the demo's simulators and local model servers keep working
  behind a corporate proxy.
"""

from __future__ import annotations

import asyncio
import datetime
import functools
import importlib.util
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx2

from svgagent.core.scoring.errors import EndpointResponseError

MAX_ANSWER_BYTES = 4 * 1024 * 1024  # a chat completion, decoded (the store keeps at most 2,000,000 chars of answer)
MAX_ERROR_BYTES = 64 * 1024  # what is kept of an error status's body (its message)
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")
_FRAMING = frozenset({"content-encoding", "content-length", "transfer-encoding"})


class AnswerTooLarge(EndpointResponseError):
    """A successful answer was larger than the caller's cap (counted on the wire or decoded)."""


class _Overflow(Exception):
    """Raised by :class:`_WireCap` once more bytes arrived than a body may have."""


class _WireCap(httpx2.AsyncByteStream):
    """The bytes of a body as they come off the connection (before decoding), counted: past ``limit`` it stops.
    (Bytes that decode to nothing, e.g. data after a gzip stream's end, are still bytes held in memory.)"""

    def __init__(self, inner: httpx2.AsyncByteStream, limit: int) -> None:
        self._inner = inner
        self._limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self._inner:
            seen += len(chunk)
            if seen > self._limit:
                raise _Overflow
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


async def _read(response: httpx2.Response, limit: int) -> tuple[bytes, bool]:
    """At most ``limit`` decoded bytes of ``response``'s body, and whether there was more."""
    parts: list[bytes] = []
    size = 0
    try:
        async for piece in response.aiter_bytes():
            size += len(piece)
            if size > limit:
                parts.append(piece[: len(piece) - (size - limit)])
                return b"".join(parts), True
            parts.append(piece)
    except _Overflow:
        return b"".join(parts), True
    return b"".join(parts), False


class _Bounded:
    """What :class:`BoundedHttpClient` adds to an ``httpx2.AsyncClient`` (a mixin: it goes before the client class)."""

    max_body: int
    deadline_s: float

    def __init__(self, *, max_body: int = MAX_ANSWER_BYTES, deadline_s: float = 120.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)  # type: ignore[call-arg]
        self.max_body = max_body
        self.deadline_s = deadline_s

    async def send(self, request: httpx2.Request, *, stream: bool = False, **kwargs: Any) -> httpx2.Response:
        deadline = _deadline(request) or self.deadline_s
        started = time.perf_counter()
        try:
            response, body, cut = await asyncio.wait_for(self._exchange(request, kwargs), deadline)
        except asyncio.TimeoutError:  # noqa: UP041 - not the builtin on Python 3.10 (the RFT bundle's floor)
            raise httpx2.ReadTimeout(
                f"no complete answer within {deadline:g} s (the whole request's deadline)", request=request
            ) from None
        if cut and response.is_success:
            raise AnswerTooLarge(f"the answer is larger than {_size(self.max_body)}")
        loaded = httpx2.Response(
            response.status_code,
            headers=[(k, v) for k, v in response.headers.multi_items() if k.lower() not in _FRAMING],
            content=body,
            request=request,
            extensions=response.extensions,
        )
        loaded.elapsed = datetime.timedelta(seconds=time.perf_counter() - started)
        return loaded

    async def _exchange(self, request: httpx2.Request, kwargs: dict[str, Any]) -> tuple[httpx2.Response, bytes, bool]:
        try:
            response = await super().send(request, stream=True, **kwargs)  # type: ignore[misc]
        except httpx2.HTTPError:
            raise
        except Exception as err:  # what a transport raised that httpx2 has no class for (aiohttp: a head too large)
            raise httpx2.RemoteProtocolError(f"{type(err).__name__}: {err}", request=request) from err
        try:
            limit = self.max_body if response.is_success else min(self.max_body, MAX_ERROR_BYTES)
            response.stream = _WireCap(response.stream, limit)
            body, cut = await _read(response, limit)
        finally:
            await response.aclose()  # a body read whole goes back to the pool; one cut short is dropped
        return response, body, cut


class BoundedHttpClient(_Bounded, httpx2.AsyncClient):
    """An ``httpx2.AsyncClient`` whose every answer is read whole, within ``max_body`` bytes and a deadline (the
    request's read timeout, as the openai client sets it per request, else ``deadline_s``) before :meth:`send`
    returns it (see the module docstring). What it returns carries the decoded body (its Content-Encoding,
    Content-Length and Transfer-Encoding fields dropped)."""


@functools.lru_cache(maxsize=1)
def _on_aiohttp() -> type[BoundedHttpClient] | None:
    """:class:`BoundedHttpClient` on the openai client's aiohttp transport (``openai.DefaultAioHttpClient``: httpx2's
    client, proxies and decoding, aiohttp's connections), when this openai has one for httpx2 and aiohttp is
    installed; None otherwise (openai 2 in the RFT bundle: its aiohttp client is for httpx)."""
    if importlib.util.find_spec("aiohttp") is None:
        return None
    import openai

    base = getattr(openai, "DefaultAioHttpClient", None)
    if not isinstance(base, type) or not issubclass(base, httpx2.AsyncClient):
        return None
    return type("BoundedAioHttpClient", (_Bounded, base), {"__doc__": BoundedHttpClient.__doc__})


def _deadline(request: httpx2.Request) -> float | None:
    """The request's own read timeout (what the openai client sets per request), taken as its whole deadline."""
    timeout = request.extensions.get("timeout")
    read = timeout.get("read") if isinstance(timeout, dict) else None
    return float(read) if isinstance(read, (int, float)) and read > 0 else None


def _size(n: int) -> str:
    return f"{n / (1 << 20):g} MiB" if n >= 1 << 20 else f"{n} bytes"


def http_client(
    *, timeout_s: float, connections: int | None = None, max_body: int = MAX_ANSWER_BYTES
) -> BoundedHttpClient:
    """A pooled client: at most ``connections`` connections (None: no limit), all kept alive between requests;
    ``timeout_s`` bounds each read and the whole request; proxies from the environment, loopback direct; no
    redirects followed (a key never follows one). On aiohttp's connections where openai offers them (a third of
    httpcore's CPU per request, which grows with the pool: httpx2 issue 827), else on httpx2's own."""
    kind = _on_aiohttp() or BoundedHttpClient
    return kind(
        max_body=max_body,
        deadline_s=timeout_s,
        timeout=httpx2.Timeout(timeout_s),
        limits=httpx2.Limits(max_connections=connections, max_keepalive_connections=connections),
        mounts={f"all://{host}": None for host in LOOPBACK_HOSTS},
        follow_redirects=False,
    )


def endpoint_client(
    base_url: str,
    api_key: str,
    *,
    timeout_s: float,
    max_retries: int,
    connections: int | None = None,
    http: httpx2.AsyncClient | None = None,
) -> Any:
    """An ``openai.AsyncOpenAI`` for ``base_url`` on :func:`http_client` (``http``: one of the caller's, e.g. shared
    by several endpoints' clients). ``await client.close()`` closes its HTTP client too."""
    import openai  # (most of a second to import: not before a client is needed)

    return openai.AsyncOpenAI(
        base_url=base_url,
        api_key=api_key or "missing-key",
        timeout=timeout_s,
        max_retries=max_retries,
        http_client=http or http_client(timeout_s=timeout_s, connections=connections),
    )
