"""A keep-alive HTTP/1.1 client for the hot path: POST a body, read the answer, connections pooled per origin. Answers
are parsed by llhttp (the C parser under Node.js and aiohttp) through httptools, uvicorn's binding of it; requests
are written here as bytes; this module is the asyncio connection, the pool and the caps around them. (Over 400
lines: the protocol, the connection and the pool share the framing and cap state, which must stay in one place.)

Why not aiohttp's client, nor httpcore's pool: the engine makes two requests per rollout and its budget is 1.5 ms of
CPU for the whole rollout; bench/client.py measured a bare POST at 0.35 – 0.53 ms on aiohttp and 1.0 – 3.5 ms on
httpcore's pool against 0.29 – 0.50 ms here on h11, which this replaced: h11's pure-Python state machine was the
largest single CPU cost left (≈0.45 ms per rollout in the engine, ≈22 % of the serve server's CPU; BENCHMARKS.md,
issues 13 and 14). What it does:

- requests: ``POST`` with a ``Content-Length`` body; :meth:`Target.head` writes the request line and the header
  fields once as bytes (once per client on the engine's path), refusing what a head cannot carry (names that are
  not RFC 9110 tokens, control characters in values, a caller's Host/Content-Length/Transfer-Encoding); each
  request adds its Content-Length;
- answers framed as llhttp frames them (``Content-Length``, ``Transfer-Encoding: chunked`` with extensions and
  trailers, or the end of the connection), strictly but for obsolete line folding, which is unfolded (RFC 9112
  5.2; llhttp's lenient headers, as aiohttp reads answers; control characters in values are refused here):
  anything refused is :class:`HttpProtocolError` and the connection is closed; 1xx interim answers are skipped, a
  101 nobody asked for is an error; ``Content-Encoding`` gzip/deflate is decoded here with zlib (asked for, as
  aiohttp asks);
- size caps on everything read from the network: the head (:data:`MAX_HEAD_BYTES`, :data:`MAX_HEADERS`) and the
  body (the caller's ``max_body``: past it, the first ``max_body + 1`` bytes are returned with ``truncated`` set
  and the connection is dropped unread, so a hostile endpoint cannot fill memory);
- connections kept alive only when llhttp says the answer allows it (HTTP/1.1 or 1.0 keep-alive, no ``Connection:
  close``, a framed body) and nothing followed it, reused last-in first-out, dropped after :data:`KEEPALIVE_S` idle
  (aiohttp's default: a server closes idle connections; one it closed is seen before it is reused, and a POST is
  not retried silently once sent); a connection whose exchange did not end cleanly (a timeout, a cancellation, an
  error) is closed, never reused;
- TLS through the ssl module's default context (certificates and host name verified), made once per client.

Timeouts: :meth:`Http1Client.post`'s ``timeout`` (a TimeoutError once it passes: a timer on the exchange, not a
cancellation of the caller's task), or ``asyncio.timeout`` around it; errors are ``OSError``
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
from typing import TypeVar
from urllib.parse import urlsplit

import httptools

from svgagent.core.urls import split_origin

MAX_HEAD_BYTES = 64 * 1024
MAX_HEADERS = 128
KEEPALIVE_S = 15.0

_UNSAFE_IN_TARGET = re.compile(r"[\x00-\x20\x7f]")
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # RFC 9110 5.6.2: a field name
_CTL_IN_VALUE = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")  # RFC 9110 5.5: no control characters but HTAB
_THE_CLIENTS = ("host", "content-length", "transfer-encoding")


class HttpProtocolError(Exception):
    """The server's answer is not HTTP/1.1 as llhttp reads it (or is larger than this client's caps allow)."""


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
        """``url`` read as urlsplit reads it; what it says of an origin is remembered (see :func:`split_origin`),
        so a URL that only differs in its path from one seen before costs no urlsplit."""
        split = split_origin(url)
        if split is None:
            return cls._read(url)
        origin, path = split  # (a path that split_origin lets through has nothing _UNSAFE_IN_TARGET finds)
        known = _ORIGINS.get(origin)
        if known is None:
            try:
                read = cls._read(origin)
            except ValueError:
                return cls._read(url)  # (which refuses it too, naming the whole URL)
            known = _remember(_ORIGINS, origin, (read.scheme, read.host, read.port, read.authority))
        return cls(*known, path or "/")

    @classmethod
    def _read(cls, url: str) -> Target:
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
        """The request line and header fields up to ``Content-Length:`` (whose value is added per request),
        checked here: names are RFC 9110 tokens, values latin-1 without control characters (CR, LF, NUL…),
        and Host, Content-Length, Transfer-Encoding are the client's to set. The fields are written and checked
        once per authority and headers (remembered); only the request line is written per call."""
        if not self.path.isascii():
            raise ValueError("the headers cannot be sent (the path is not ASCII)")
        key = (self.authority, *headers.items())
        fields = _FIELDS.get(key)
        if fields is None:
            fields = _remember(_FIELDS, key, _fields(self.authority, headers))
        return RequestHead(b"POST %s HTTP/1.1\r\n%s" % (self.path.encode("ascii"), fields))


def _fields(authority: str, headers: dict[str, str]) -> bytes:
    lines = [b"Host: %s\r\nAccept-Encoding: gzip, deflate\r\n" % authority.encode("ascii")]
    for name, value in headers.items():
        try:
            raw = value.encode("latin-1")
        except UnicodeError:
            raise ValueError(f"the headers cannot be sent ({name[:40]!r} is not latin-1)") from None
        if not _TOKEN.fullmatch(name) or name.lower() in _THE_CLIENTS or _CTL_IN_VALUE.search(raw):
            raise ValueError(
                f"the headers cannot be sent ({name[:40]!r}: not a field name, a control "
                f"character in its value, or a field the client sets)"
            )
        lines.append(b"%s: %s\r\n" % (name.encode("ascii"), raw))
    lines.append(b"Content-Length: ")
    return b"".join(lines)


# What Target.parse read of an origin and Target.head wrote for an authority and headers (keys included: they
# are in the process's memory either way). Bounded: the URLs come from requests.
_ORIGINS: dict[str, tuple[str, str, int, str]] = {}
_FIELDS: dict[tuple[object, ...], bytes] = {}
_REMEMBERED = 256
_K = TypeVar("_K")
_V = TypeVar("_V")


def _remember(cache: dict[_K, _V], key: _K, value: _V) -> _V:
    if len(cache) >= _REMEMBERED:
        cache.clear()
    cache[key] = value
    return value


class RequestHead(bytes):
    """:meth:`Target.head`'s bytes: a request's head but for its Content-Length value and the blank line."""


class _Stop(Exception):
    """Raised from a parser callback to stop reading (the body passed its cap)."""


class _Connection(asyncio.Protocol):
    """One connection and its llhttp parser (httptools); reads one answer at a time into ``_waiter``. The parser's
    callbacks (``on_*``) collect the answer; :meth:`_feed` hands it over once it is complete."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.lost = False
        self.idle_since = 0.0
        self.keep = False
        self._parser = httptools.HttpResponseParser(self)
        # As aiohttp's client reads answers: obs-fold unfolded (RFC 9112 5.2) -- which also lets control characters
        # through in values, refused in on_header.
        self._parser.set_dangerous_leniencies(lenient_headers=True)
        self._waiter: asyncio.Future[HttpResponse] | None = None
        self._timer: asyncio.TimerHandle | None = None

    # -- the exchange ---------------------------------------------------------------------------------------
    def exchange(
        self, head: bytes, body: bytes, max_body: int, deadline: float | None = None
    ) -> asyncio.Future[HttpResponse]:
        """Send the request; the future has the answer, or the error (TimeoutError at ``deadline``, loop time)."""
        assert self.transport is not None and self._waiter is None
        loop = asyncio.get_running_loop()
        self._waiter = loop.create_future()
        self._timer = None if deadline is None else loop.call_at(deadline, self._time_out)
        self._max_body = max_body
        self._begin()
        self._done: HttpResponse | None = None
        self._extra = False  # a second answer (or bytes of one) followed the first
        self._fed = 0  # bytes received before the answer's head was read (for the head cap)
        self.keep = False
        self.transport.write(b"%s%d\r\n\r\n%s" % (head, len(body), body))
        return self._waiter

    def _begin(self) -> None:
        self._fields: dict[str, str] = {}
        self._head_size = self._count = self._size = 0
        self._status = 0  # set once the head is complete
        self._parts: list[bytes] = []

    def _time_out(self) -> None:
        self._timer = None
        self._fail(TimeoutError("no answer before the request's deadline"))

    def _stop_timer(self) -> None:
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()

    def _deliver(self) -> None:
        self._stop_timer()
        done, self._done = self._done, None
        if self._extra:
            self.keep = False
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done() and done is not None:
            waiter.set_result(done)

    def _fail(self, err: BaseException) -> None:
        self._stop_timer()
        self.keep = False
        self.close()
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(err)

    def close(self) -> None:
        self.lost = True
        self._stop_timer()
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
            if self._status and self._until_eof:  # a body delimited by the end of the connection ends here
                self._done = HttpResponse(self._status, self._fields, b"".join(self._parts))
                self.keep = False
                self._deliver()
            else:
                self._fail(ConnectionResetError("the server closed the connection before its answer was complete"))
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        if self._waiter is not None:
            self._fail(
                exc
                if isinstance(exc, OSError)
                else ConnectionResetError("the connection was closed before the answer was complete")
            )

    # -- reading: llhttp's callbacks ------------------------------------------------------------------------
    def _feed(self, data: bytes) -> None:
        if not self._status:
            self._fed += len(data)
        try:
            self._parser.feed_data(data)
            if not self._status and self._fed > MAX_HEAD_BYTES:
                raise HttpProtocolError(f"the answer's head is larger than {MAX_HEAD_BYTES} bytes")
        except httptools.HttpParserCallbackError as err:
            cause = err.__context__
            if not isinstance(cause, _Stop):
                self._fail(
                    cause
                    if isinstance(cause, HttpProtocolError)
                    else HttpProtocolError(f"unreadable answer ({type(cause).__name__}: {str(cause)[:80]})")
                )
        except httptools.HttpParserUpgrade:
            self._fail(HttpProtocolError("the server switched protocols (101) though nobody asked it to"))
        except httptools.HttpParserError as err:
            if self._done is None:
                self._fail(HttpProtocolError(f"not HTTP/1.1 as llhttp reads it: {err}"))
            self._extra = True  # bytes after the answer that are not one: the connection is not reused
        except HttpProtocolError as err:
            self._fail(err)
        except Exception as err:  # a bug must not escape into the transport: the exchange fails
            self._fail(HttpProtocolError(f"unreadable answer ({type(err).__name__}: {str(err)[:80]})"))
        if self._done is not None:
            self._deliver()

    def on_message_begin(self) -> None:
        if self._done is not None:
            self._extra = True

    def on_status(self, reason: bytes) -> None:
        self._head_size += len(reason)

    def on_header(self, name: bytes, value: bytes) -> None:
        if self._done is not None:
            return
        self._count += 1
        self._head_size += len(name) + len(value) + 4
        if self._head_size > MAX_HEAD_BYTES:
            raise HttpProtocolError(f"the answer's head is larger than {MAX_HEAD_BYTES} bytes")
        if self._count > MAX_HEADERS:
            raise HttpProtocolError(f"the answer has more than {MAX_HEADERS} header fields")
        value = value.rstrip(b" \t")  # llhttp strips the whitespace before a value, not after it
        if _CTL_IN_VALUE.search(value):
            raise HttpProtocolError("the answer has a control character in a header value")
        key, text = name.decode("latin-1").lower(), value.decode("latin-1")
        fields = self._fields
        fields[key] = f"{fields[key]}, {text}" if key in fields else text

    def on_headers_complete(self) -> None:
        if self._done is not None:
            return
        status = self._status = self._parser.get_status_code()
        if status == 101:
            raise HttpProtocolError("the server switched protocols (101) though nobody asked it to")
        framing = self._fields.get("transfer-encoding", "").rsplit(",", 1)[-1].strip().lower()
        self._until_eof = (
            status >= 200 and status not in (204, 304) and framing != "chunked" and "content-length" not in self._fields
        )

    def on_body(self, data: bytes) -> None:
        if self._done is not None:
            return
        self._parts.append(data)
        self._size += len(data)
        if self._size > self._max_body:  # the rest is not read: the connection is dropped
            self._done = HttpResponse(self._status, self._fields, b"".join(self._parts)[: self._max_body + 1], True)
            self.keep = False
            raise _Stop

    def on_message_complete(self) -> None:
        if self._done is not None:
            return
        if self._status < 200:  # 100 Continue, 103 Early Hints: the real answer follows
            self._begin()
            return
        self.keep = self._parser.should_keep_alive()  # HTTP/1.1 (or 1.0 keep-alive), no Connection: close, framed
        self._done = HttpResponse(self._status, self._fields, b"".join(self._parts))


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

    async def post(
        self, target: Target, head: RequestHead, body: bytes, *, max_body: int, timeout: float | None = None
    ) -> HttpResponse:
        """POST ``body`` with ``head`` (:meth:`Target.head`) and return the answer (see the module docstring).
        ``timeout`` (seconds) bounds the whole request — a wait for a free connection, the connect, the exchange —
        with TimeoutError, as ``asyncio.timeout`` around it would; the exchange's is a timer on the connection."""
        if self.closed:
            raise ConnectionResetError("the HTTP client is closed")
        deadline = None if timeout is None else asyncio.get_running_loop().time() + timeout
        key = (target.scheme, target.host, target.port)
        slots = self._slot(key)
        if slots is not None:
            if deadline is not None and slots.locked():
                async with asyncio.timeout_at(deadline):
                    await slots.acquire()
            else:
                await slots.acquire()
        try:
            conn = self._idle_connection(key)
            if conn is None:
                if deadline is None:
                    conn = await self._connect(target)
                else:
                    async with asyncio.timeout_at(deadline):
                        conn = await self._connect(target)
            self._busy.add(conn)
            clean = False
            try:
                response = await conn.exchange(head, body, max_body, deadline)
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
            if (
                not conn.lost
                and conn.transport is not None
                and not conn.transport.is_closing()
                and time.monotonic() - conn.idle_since < self.keepalive_s
            ):
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
        _, conn = await loop.create_connection(
            _Connection, target.host, target.port, ssl=tls, server_hostname=target.host if tls else None
        )
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
