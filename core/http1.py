"""A keep-alive HTTP/1.1 client for the hot path: POST a body, read the answer, connections pooled per origin. The
protocol is h11's (the sans-IO HTTP/1.1 state machine under httpcore/httpx, hence under openai); this module is the
asyncio connection, the pool and the caps around it.

Why not aiohttp's client, nor httpcore's pool, here: the engine makes two requests per rollout and its budget is
1.5 ms of CPU for the whole rollout. In bench/client.py (three runs, load 5.4 – 6.3) a bare POST cost 0.35 – 0.53
ms on aiohttp, 1.0 – 1.3 ms one at a time and 2.6 – 3.5 ms with 300 in flight on httpcore's
``AsyncConnectionPool`` used directly (anyio streams, its pool's locks and events), and 0.29 – 0.37 / 0.41 – 0.50
ms here. h11 itself is ≈0.1 ms of that (its header validation and state machine); at C=256 the engine spends
≈0.3 – 0.5 ms more CPU per rollout than on the hand-written parser this replaced (BENCHMARKS.md): the price of
not owning an HTTP parser. What it does:

- requests: ``POST`` with a ``Content-Length`` body; the caller's header fields are validated by h11 when
  :meth:`Target.head` builds them (once per client on the engine's path), the events are built per request;
- answers framed as h11 frames them (``Content-Length``, ``Transfer-Encoding: chunked`` with extensions and
  trailers, or the end of the connection), strictly: anything h11 refuses is :class:`HttpProtocolError` and the
  connection is closed; 1xx interim answers are skipped, a 101 nobody asked for is an error; ``Content-Encoding``
  gzip/deflate is decoded here with zlib (asked for, as aiohttp asks);
- size caps on everything read from the network: the head (:data:`MAX_HEAD_BYTES`, also h11's
  ``max_incomplete_event_size``, and :data:`MAX_HEADERS`) and the body (the caller's ``max_body``: past it, the
  first ``max_body + 1`` bytes are returned with ``truncated`` set and the connection is dropped unread, so a
  hostile endpoint cannot fill memory);
- connections kept alive only when h11 says both sides are done (HTTP/1.1, no ``Connection: close``, a framed
  body) and nothing is left over, reused last-in first-out, dropped after :data:`KEEPALIVE_S` idle (aiohttp's
  default: a server closes idle connections, and a POST is not retried silently on one it closed); a connection
  whose exchange did not end cleanly (a timeout, a cancellation, an error) is closed, never reused;
- TLS through the ssl module's default context (certificates and host name verified), made once per client.

Timeouts are the caller's (``asyncio.timeout`` around :meth:`Http1Client.post`); errors are ``OSError``
(connection refused, reset, an answer cut short, TLS) or :class:`HttpProtocolError`. No proxies, cookies or
redirects: the engine's endpoints are API base URLs, as they were with its aiohttp session (which trusted no proxy
environment either).
"""

from __future__ import annotations

import asyncio
import re
import ssl
import time
import zlib
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import h11
from h11._headers import Headers

MAX_HEAD_BYTES = 64 * 1024
MAX_HEADERS = 128
KEEPALIVE_S = 15.0

_UNSAFE_IN_TARGET = re.compile(r"[\x00-\x20\x7f]")
_NEED_DATA = h11.NEED_DATA
_FRAMING_FIELDS = (b"content-length", b"transfer-encoding")
_END = h11.EndOfMessage()  # events are immutable: one will do for every request


class HttpProtocolError(Exception):
    """The server's answer is not HTTP/1.1 as h11 reads it (or is larger than this client's caps allow)."""


@dataclass(slots=True)
class HttpResponse:
    status: int
    headers: dict[str, str]  # lower-cased names; repeated fields joined with ", "
    body: bytes
    truncated: bool = False  # the body was longer than max_body: these are its first max_body + 1 bytes


@dataclass(frozen=True, slots=True)
class Target:
    """Where a request goes: the origin (pool key) and the request line's target, checked once."""

    scheme: str
    host: str
    port: int
    authority: str  # the Host header
    path: str

    @classmethod
    def parse(cls, url: str) -> Target:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url[:200]!r}")
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        authority = parts.netloc.rpartition("@")[2]
        if _UNSAFE_IN_TARGET.search(path) or _UNSAFE_IN_TARGET.search(authority) or not authority.isascii():
            raise ValueError(f"the URL has characters a request line cannot carry: {url[:200]!r}")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        return cls(parts.scheme, parts.hostname, port, authority, path)

    def head(self, headers: dict[str, str]) -> RequestHead:
        """The request's header fields without Content-Length (added per request), validated once by h11."""
        fields = [(b"Host", self.authority.encode("ascii")), (b"Accept-Encoding", b"gzip, deflate")]
        try:
            fields += [(name.encode("ascii"), value.encode("latin-1")) for name, value in headers.items()]
            if any(name.lower() in _FRAMING_FIELDS for name, _ in fields):
                raise h11.LocalProtocolError("Content-Length and Transfer-Encoding are the client's to set")
            checked = h11.Request(method=b"POST", target=self.path.encode("ascii"), headers=fields)
        except (UnicodeError, h11.LocalProtocolError) as err:
            raise ValueError(f"the headers cannot be sent ({err})") from None
        return RequestHead(fields, checked.headers._full_items)


class RequestHead(list):  # type: ignore[type-arg]
    """:meth:`Target.head`'s fields (a list of (name, value) byte pairs) with h11's normal form of them, so each
    request's ``h11.Request`` is built from fields h11 has already validated instead of validating them again
    (``h11._headers.Headers``: h11 is pinned to 0.16; tests/test_http1.py compares the bytes sent both ways)."""

    def __init__(self, fields: list[tuple[bytes, bytes]], normal: list[tuple[bytes, bytes, bytes]]) -> None:
        super().__init__(fields)
        self.normal = tuple(normal)


class _Connection(asyncio.Protocol):
    """One connection and its h11 state machine; reads one answer at a time into ``_waiter`` (see :meth:`exchange`)."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.lost = False
        self.idle_since = 0.0
        self.keep = False
        self._h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD_BYTES)
        self._waiter: asyncio.Future[HttpResponse] | None = None

    # -- the exchange ---------------------------------------------------------------------------------------
    def exchange(self, target: bytes, head: list[tuple[bytes, bytes]], body: bytes,
                 max_body: int) -> asyncio.Future[HttpResponse]:
        assert self.transport is not None and self._waiter is None
        h = self._h11
        if h.our_state is h11.DONE:
            h.start_next_cycle()
        normal = getattr(head, "normal", None)
        if normal is not None:  # validated once (Target.head); Content-Length is digits
            fields: Any = Headers([*normal, (b"Content-Length", b"content-length", b"%d" % len(body))])
        else:
            fields = [*head, (b"Content-Length", b"%d" % len(body))]
        request = h11.Request(method=b"POST", target=target, headers=fields)
        out = [h.send(request)]
        out += h.send_with_data_passthrough(h11.Data(data=body))
        out.append(h.send(_END))
        self._waiter = asyncio.get_running_loop().create_future()
        self._max_body = max_body
        self._response: h11.Response | None = None
        self._fed = 0  # bytes received before the answer's head was read (for the head cap)
        self._parts: list[bytes] = []
        self._size = 0
        self.keep = False
        self.transport.writelines(out)  # type: ignore[arg-type]
        return self._waiter

    def _finish(self, body: bytes, truncated: bool = False) -> None:
        h = self._h11
        self.keep = (not truncated and h.our_state is h11.DONE and h.their_state is h11.DONE
                     and not h.trailing_data[0])  # not: more than one answer, or a close asked for
        response, waiter, self._waiter = self._response, self._waiter, None
        if waiter is not None and not waiter.done() and response is not None:
            waiter.set_result(HttpResponse(response.status_code, _fields(response.headers), body, truncated))

    def _fail(self, err: BaseException) -> None:
        self.keep = False
        self.close()
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(err)

    def close(self) -> None:
        self.lost = True
        if self.transport is not None:
            self.transport.close()

    # -- asyncio.Protocol -----------------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        if self._waiter is None:  # bytes nobody asked for on an idle connection: it cannot be trusted again
            self.close()
            return
        self._feed(data)

    def eof_received(self) -> bool:
        self.lost = True
        if self._waiter is not None:
            self._feed(b"")  # h11 ends a close-delimited body here, or says the answer was cut short
            if self._waiter is not None:
                self._fail(ConnectionResetError("the server closed the connection before its answer was complete"))
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        if self._waiter is not None:
            self._fail(exc if isinstance(exc, OSError) else
                       ConnectionResetError("the connection was closed before the answer was complete"))

    # -- reading: h11's events ------------------------------------------------------------------------------
    def _check_head(self, event: h11.Response | h11.InformationalResponse) -> None:
        """The caps h11 leaves to its user: it bounds an incomplete head (``max_incomplete_event_size``), not one
        that arrived whole in a single read, nor the number of fields."""
        if self._fed > MAX_HEAD_BYTES and self._fed - len(self._h11.trailing_data[0]) > MAX_HEAD_BYTES:
            raise HttpProtocolError(f"the answer's head is larger than {MAX_HEAD_BYTES} bytes")
        if len(event.headers) > MAX_HEADERS:
            raise HttpProtocolError(f"the answer has more than {MAX_HEADERS} header fields")

    def _feed(self, data: bytes) -> None:
        h = self._h11
        if self._response is None:
            self._fed += len(data)
        try:
            h.receive_data(data)
            while self._waiter is not None:
                event = h.next_event()
                if event is _NEED_DATA:
                    return
                kind = type(event)
                if kind is h11.Data:
                    self._parts.append(event.data)  # type: ignore[union-attr]
                    self._size += len(event.data)  # type: ignore[union-attr]
                    if self._size > self._max_body:  # the rest is not read: the connection is dropped
                        self._finish(b"".join(self._parts)[: self._max_body + 1], truncated=True)
                elif kind is h11.Response:
                    self._check_head(event)  # type: ignore[arg-type]
                    self._response = event  # type: ignore[assignment]
                elif kind is h11.EndOfMessage:
                    self._finish(b"".join(self._parts))
                elif kind is h11.InformationalResponse:  # 100 Continue, 103 Early Hints: the real one follows
                    self._check_head(event)  # type: ignore[arg-type]
                elif kind is h11.ConnectionClosed:
                    raise ConnectionResetError("the server closed the connection before its answer was complete")
                else:
                    raise HttpProtocolError(f"unexpected {kind.__name__} from the server")
        except h11.RemoteProtocolError as err:
            if not data:  # the end of the stream came mid-answer
                self._fail(ConnectionResetError(f"the server closed the connection before its answer was complete "
                                                f"({err})"))
            elif err.error_status_hint == 431:  # h11's buffer passed max_incomplete_event_size
                self._fail(HttpProtocolError(f"the answer's head is larger than {MAX_HEAD_BYTES} bytes"))
            else:
                self._fail(HttpProtocolError(f"not HTTP/1.1 as h11 reads it: {err}"))
        except (HttpProtocolError, OSError) as err:
            self._fail(err)
        except Exception as err:  # a bug must not escape into the transport: the exchange fails
            self._fail(HttpProtocolError(f"unreadable answer ({type(err).__name__}: {str(err)[:80]})"))


def _fields(headers: Headers) -> dict[str, str]:
    """h11's header fields as a dict, names lower-cased; repeated fields joined with ", "."""
    out: dict[str, str] = {}
    for name, value in headers.raw_items():  # a list (iterating the Headers goes through Sequence.__getitem__)
        key, text = name.lower().decode("ascii"), value.decode("latin-1")
        out[key] = f"{out[key]}, {text}" if key in out else text
    return out


def _decoded(response: HttpResponse, max_body: int) -> HttpResponse:
    """The body with its Content-Encoding (gzip, deflate) undone, capped like the raw body."""
    coding = response.headers.get("content-encoding", "identity").strip().lower()
    if coding in ("identity", "") or response.truncated:
        return response
    if coding in ("gzip", "x-gzip"):
        decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
    elif coding == "deflate":  # zlib-wrapped as the RFC says, or raw deflate as some servers send
        decoder = zlib.decompressobj(zlib.MAX_WBITS if response.body[:1] == b"\x78" else -zlib.MAX_WBITS)
    else:
        raise HttpProtocolError(f"the answer has a Content-Encoding this client did not ask for: {coding[:40]!r}")
    try:
        body = decoder.decompress(response.body, max_body + 1)
    except zlib.error as err:
        raise HttpProtocolError(f"the answer's {coding} encoding is damaged ({err})") from None
    return HttpResponse(response.status, response.headers, body, len(body) > max_body)


class Http1Client:
    """Pooled keep-alive connections per origin; ``limit`` connections per origin at most (0: no limit — the
    callers' semaphores bound the requests in flight). :meth:`close` closes them all."""

    def __init__(self, *, limit: int = 0, keepalive_s: float = KEEPALIVE_S, tls: ssl.SSLContext | None = None) -> None:
        """``tls``: the context for https origins (default: the ssl module's default, made on first use)."""
        self.limit = limit
        self.keepalive_s = keepalive_s
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
        self._slots: dict[tuple[str, str, int], asyncio.Semaphore] = {}
        self._busy: set[_Connection] = set()
        self._tls = tls
        self.connections_made = 0  # for tests and benchmarks
        self.closed = False

    async def post(self, target: Target, head: list[tuple[bytes, bytes]], body: bytes, *,
                   max_body: int) -> HttpResponse:
        """POST ``body`` with ``head`` (:meth:`Target.head`) and return the answer (see the module docstring)."""
        if self.closed:
            raise ConnectionResetError("the HTTP client is closed")
        key = (target.scheme, target.host, target.port)
        slots = self._slot(key)
        if slots is not None:
            await slots.acquire()
        try:
            conn = self._idle_connection(key) or await self._connect(target)
            self._busy.add(conn)
            clean = False
            try:
                response = await conn.exchange(target.path.encode("ascii"), head, body, max_body)
                clean = True
            finally:
                self._busy.discard(conn)
                if clean and conn.keep and not conn.lost and not self.closed:
                    conn.idle_since = time.monotonic()
                    self._idle.setdefault(key, []).append(conn)
                else:  # a timeout or cancellation mid-exchange leaves the connection in an unknown state
                    conn.close()
        finally:
            if slots is not None:
                slots.release()
        return _decoded(response, max_body)

    def _slot(self, key: tuple[str, str, int]) -> asyncio.Semaphore | None:
        if not self.limit:
            return None
        slots = self._slots.get(key)
        if slots is None:
            slots = self._slots[key] = asyncio.Semaphore(self.limit)
        return slots

    def _idle_connection(self, key: tuple[str, str, int]) -> _Connection | None:
        idle = self._idle.get(key)
        while idle:
            conn = idle.pop()
            if (not conn.lost and conn.transport is not None and not conn.transport.is_closing()
                    and time.monotonic() - conn.idle_since < self.keepalive_s):
                return conn
            conn.close()
        return None

    async def _connect(self, target: Target) -> _Connection:
        loop = asyncio.get_running_loop()
        tls = None
        if target.scheme == "https":
            if self._tls is None:
                self._tls = ssl.create_default_context()
            tls = self._tls
        _, conn = await loop.create_connection(_Connection, target.host, target.port, ssl=tls,
                                               server_hostname=target.host if tls else None)
        self.connections_made += 1
        return conn

    async def close(self) -> None:
        self.closed = True
        for idle in self._idle.values():
            for conn in idle:
                conn.close()
        self._idle.clear()
        for conn in list(self._busy):
            conn.close()
        await asyncio.sleep(0)  # let the transports run their connection_lost
