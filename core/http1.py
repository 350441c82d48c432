"""A keep-alive HTTP/1.1 client for the hot path: POST a body, read the answer, connections pooled per origin.

Why not aiohttp's client here: the engine makes two requests per rollout and its budget is 1.5 ms of CPU for the
whole rollout; aiohttp's request layer (ClientRequest, payload registry, timers, cookie jar, response and stream
objects) cost 0.35 – 0.8 ms per request in bench/client.py, this 0.1 – 0.3 ms for the same exchange (most of which
is the kernel). What it does is the part of HTTP/1.1 (RFC 9112) a JSON POST needs, strictly:

- requests: ``POST`` with a ``Content-Length`` body; the caller's header block is built once per client;
- answers framed by ``Content-Length``, ``Transfer-Encoding: chunked`` (extensions and trailers skipped) or the end
  of the connection; 1xx interim answers skipped; ``Content-Encoding`` gzip/deflate decoded (asked for, as aiohttp
  asks); anything else that does not parse is :class:`HttpProtocolError` and the connection is closed;
- size caps on everything read from the network: the head (:data:`MAX_HEAD_BYTES`, :data:`MAX_HEADERS`) and the
  body (the caller's ``max_body``: past it, the first ``max_body + 1`` bytes are returned with ``truncated`` set
  and the connection is dropped, so a hostile endpoint cannot fill memory);
- connections kept alive only when the answer allows it (HTTP/1.1, no ``Connection: close``, a framed body, nothing
  left over), reused last-in first-out, dropped after :data:`KEEPALIVE_S` idle (aiohttp's default: a server closes
  idle connections, and a POST is not retried silently on one it closed); a connection whose exchange did not end
  cleanly (a timeout, a cancellation, an error) is closed, never reused;
- TLS through the ssl module's default context (certificates and host name verified), made once per client.

Timeouts are the caller's (``asyncio.timeout`` around :meth:`Http1Client.post`); errors are ``OSError``
(connection refused, reset, TLS) or :class:`HttpProtocolError`. No proxies, cookies or redirects: the engine's
endpoints are API base URLs, as they were with its aiohttp session (which trusted no proxy environment either).
"""

from __future__ import annotations

import asyncio
import re
import ssl
import time
import zlib
from dataclasses import dataclass
from urllib.parse import urlsplit

MAX_HEAD_BYTES = 64 * 1024
MAX_HEADERS = 128
KEEPALIVE_S = 15.0

_STATUS_LINE = re.compile(rb"HTTP/1\.([01]) ([1-9][0-9][0-9])(?: [^\r\n]*)?")
_TOKEN = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,15})[ \t]*(?:;[^\r\n]*)?")
_UNSAFE_IN_TARGET = re.compile(r"[\x00-\x20\x7f]")
_HEAD, _LENGTH, _CHUNKED, _UNTIL_CLOSE, _DONE = range(5)


class HttpProtocolError(Exception):
    """The server's answer is not HTTP/1.1 as this client reads it (or is larger than its caps allow)."""


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

    def head(self, headers: dict[str, str]) -> bytes:
        """The request's head without its Content-Length line and the blank line (appended per request)."""
        lines = [f"POST {self.path} HTTP/1.1", f"Host: {self.authority}", "Accept-Encoding: gzip, deflate"]
        for name, value in headers.items():
            if not _TOKEN.fullmatch(name.encode("latin-1", "replace")) or re.search(r"[\r\n\x00]", value):
                raise ValueError(f"header {name!r} cannot be sent")
            lines.append(f"{name}: {value}")
        return ("\r\n".join(lines) + "\r\n").encode("latin-1")


class _Connection(asyncio.Protocol):
    """One connection; reads one answer at a time into ``_waiter`` (see :meth:`exchange`)."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.lost = False
        self.idle_since = 0.0
        self._buf = bytearray()
        self._waiter: asyncio.Future[HttpResponse] | None = None
        self._state = _DONE

    # -- the exchange ---------------------------------------------------------------------------------------
    def exchange(self, request: list[bytes], max_body: int) -> asyncio.Future[HttpResponse]:
        assert self.transport is not None and self._waiter is None
        self._waiter = asyncio.get_running_loop().create_future()
        self._max_body = max_body
        self._state, self._scanned, self._parts, self._size, self._length = _HEAD, 0, [], 0, 0
        self.keep = False
        self.transport.writelines(request)
        return self._waiter

    def _finish(self, body: bytes, truncated: bool = False) -> None:
        self._state = _DONE
        if truncated or self._buf:  # the rest was not read, or the server sent more than one answer
            self.keep = False
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(HttpResponse(self._status, self._headers, body, truncated))

    def _fail(self, err: BaseException) -> None:
        self._state = _DONE
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
        self._buf += data
        try:
            self._advance()
        except HttpProtocolError as err:
            self._fail(err)
        except Exception as err:  # a parsing bug must not escape into the transport: the exchange fails
            self._fail(HttpProtocolError(f"unreadable answer ({type(err).__name__}: {str(err)[:80]})"))

    def eof_received(self) -> bool:
        self.lost = True
        if self._state == _UNTIL_CLOSE:
            body = bytes(self._buf)
            self._buf.clear()
            self._finish(body)
        elif self._waiter is not None:
            self._fail(ConnectionResetError("the server closed the connection before its answer was complete"))
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        if self._waiter is not None:
            self._fail(exc if isinstance(exc, OSError) else
                       ConnectionResetError("the connection was closed before the answer was complete"))

    # -- parsing ----------------------------------------------------------------------------------------------
    def _advance(self) -> None:
        buf = self._buf
        while self._state == _HEAD:
            end = buf.find(b"\r\n\r\n", max(0, self._scanned - 3))
            if end < 0 or end > MAX_HEAD_BYTES:
                if len(buf) > MAX_HEAD_BYTES:
                    raise HttpProtocolError(f"the answer's head is larger than {MAX_HEAD_BYTES} bytes")
                self._scanned = len(buf)
                return
            head = bytes(buf[:end])
            del buf[: end + 4]
            self._scanned = 0
            self._start(head)
        if self._state == _LENGTH:
            if self._length > self._max_body:
                if len(buf) > self._max_body:
                    self._finish(bytes(buf[: self._max_body + 1]), truncated=True)
            elif len(buf) >= self._length:
                body = bytes(buf[: self._length])
                del buf[: self._length]
                self._finish(body)
        elif self._state == _CHUNKED:
            self._chunks()
        elif self._state == _UNTIL_CLOSE and len(buf) > self._max_body:
            self._finish(bytes(buf[: self._max_body + 1]), truncated=True)

    def _start(self, head: bytes) -> None:
        """Read a head: the status line and the fields; decide how the body is framed."""
        lines = head.split(b"\r\n")
        status_line = _STATUS_LINE.fullmatch(lines[0])
        if status_line is None:
            raise HttpProtocolError(f"not an HTTP/1.1 status line: {lines[0][:80]!r}")
        if len(lines) > MAX_HEADERS + 1:
            raise HttpProtocolError(f"the answer has more than {MAX_HEADERS} header fields")
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, colon, value = line.partition(b":")
            if not colon or not _TOKEN.fullmatch(name):  # also refuses obsolete line folding (a leading space)
                raise HttpProtocolError(f"not a header field: {line[:80]!r}")
            key = name.decode("ascii").lower()
            text = value.strip(b" \t").decode("latin-1")
            headers[key] = f"{headers[key]}, {text}" if key in headers else text
        status = int(status_line.group(2))
        if 100 <= status < 200:
            if status == 101:
                raise HttpProtocolError("the server switched protocols")
            return  # an interim answer (100 Continue, 103 Early Hints): the real one follows
        self._status, self._headers = status, headers
        coding = headers.get("transfer-encoding")
        length = headers.get("content-length")
        if coding is not None:
            chunked = coding.rpartition(",")[2].strip().lower() == "chunked"
            self._state, self._length, self.keep = (_CHUNKED if chunked else _UNTIL_CLOSE), 0, chunked
        elif length is not None:
            values = {v.strip() for v in length.split(",")}
            if len(values) != 1 or not (value := values.pop()).isdigit() or len(value) > 18:
                raise HttpProtocolError(f"not a Content-Length: {length[:40]!r}")
            self._state, self._length, self.keep = _LENGTH, int(value), True
        elif status in (204, 304):
            self._state, self._length, self.keep = _LENGTH, 0, True
        else:
            self._state, self.keep = _UNTIL_CLOSE, False
        connection = headers.get("connection", "").lower()
        if status_line.group(1) != b"1" or "close" in connection:
            self.keep = False

    def _chunks(self) -> None:
        buf = self._buf
        while True:
            if self._length < 0:  # the trailer section: fields until an empty line, then the answer is complete
                end = buf.find(b"\r\n")
                if end < 0:
                    if len(buf) > MAX_HEAD_BYTES:
                        raise HttpProtocolError("the answer's trailer section is too large")
                    return
                del buf[: end + 2]
                if end == 0:
                    self._finish(b"".join(self._parts))
                    return
                continue
            if self._length == 0:  # a chunk-size line is next
                end = buf.find(b"\r\n")
                if end < 0:
                    if len(buf) > 1024:
                        raise HttpProtocolError("a chunk-size line is too long")
                    return
                size = _CHUNK_SIZE.fullmatch(buf, 0, end)
                if size is None:
                    raise HttpProtocolError(f"not a chunk-size line: {bytes(buf[:min(end, 40)])!r}")
                n = int(size.group(1), 16)  # before the del: the match reads the bytearray it was made on
                del buf[: end + 2]
                self._length = n + 2 if n else -1  # the chunk's data and its CRLF; 0: the last chunk
                continue
            if len(buf) < self._length:
                return
            if buf[self._length - 2 : self._length] != b"\r\n":
                raise HttpProtocolError("a chunk does not end with CRLF")
            self._parts.append(bytes(buf[: self._length - 2]))
            self._size += self._length - 2
            del buf[: self._length]
            self._length = 0
            if self._size > self._max_body:
                self._finish(b"".join(self._parts)[: self._max_body + 1], truncated=True)
                return


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

    async def post(self, target: Target, head: bytes, body: bytes, *, max_body: int) -> HttpResponse:
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
                response = await conn.exchange([head, b"Content-Length: %d\r\n\r\n" % len(body), body], max_body)
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
