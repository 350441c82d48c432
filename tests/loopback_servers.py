"""Raw loopback servers for the client stack's tests and bench/hostile_rss.py: a scripted endpoint that answers
chat completions the way a hostile (or just odd) endpoint would, and a forwarding HTTP proxy.

Both run an asyncio loop on a thread of their own, listen on a loopback address (random free port), write bytes
by hand (no HTTP library between the test and the wire) and stop by themselves: every endless answer is bounded
in bytes and in time, and ends when the client goes away.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import json
import ssl
import threading
import zlib
from collections.abc import Awaitable, Callable
from typing import Any

SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64"><circle cx="32" cy="32" r="20" fill="red"/></svg>'
ENDLESS_BYTES = 512 * 1024 * 1024  # what an "endless" answer sends at most before it stops by itself
ENDLESS_S = 60.0


def completion(content: str = SVG, **extra: Any) -> dict[str, Any]:
    """A valid chat completion whose answer is ``content``."""
    return {
        "id": "c-1",
        "object": "chat.completion",
        "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30},
        **extra,
    }


@functools.cache
def gzip_bomb(decoded_mib: int = 256) -> bytes:
    """``decoded_mib`` MiB of zeros, gzip'd (≈1 KiB on the wire per MiB decoded)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = bytes(1 << 20)
    return b"".join(packer.compress(zeros) for _ in range(decoded_mib)) + packer.flush()


@functools.cache
def padded_completion(total_mb: int = 63) -> bytes:
    """A valid chat completion padded with ``"x": [[],[],…]`` to ``total_mb`` MB, gzip'd (≈64 KB on the wire)."""
    head = json.dumps(completion())[:-1].encode() + b', "x": ['
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    parts = [packer.compress(head)]
    piece = b"[]," * (1 << 18)
    for _ in range(total_mb * 1_000_000 // len(piece)):
        parts.append(packer.compress(piece))
    parts.append(packer.compress(b"[]]}"))
    return b"".join(parts) + packer.flush()


Case = Callable[[asyncio.StreamWriter], Awaitable[None]]


def _head(status: str = "200 OK", **fields: str | int) -> bytes:
    lines = [f"HTTP/1.1 {status}", "Connection: close"]
    lines += [f"{name.replace('_', '-')}: {value}" for name, value in fields.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _json_answer(body: dict[str, Any], status: str = "200 OK") -> Case:
    raw = json.dumps(body).encode()

    async def write(w: asyncio.StreamWriter) -> None:
        w.write(_head(status, Content_Type="application/json", Content_Length=len(raw)) + raw)

    return write


async def _endless(w: asyncio.StreamWriter, first: bytes, each: bytes, pause_s: float = 0.0) -> None:
    """``first``, then ``each`` again and again until the client goes, ENDLESS_BYTES or ENDLESS_S."""
    loop = asyncio.get_running_loop()
    ends = loop.time() + ENDLESS_S
    w.write(first)
    sent = len(first)
    while sent < ENDLESS_BYTES and loop.time() < ends:
        w.write(each)
        sent += len(each)
        await w.drain()
        if pause_s:
            await asyncio.sleep(pause_s)


async def _huge_headers(w: asyncio.StreamWriter) -> None:
    await _endless(w, b"HTTP/1.1 200 OK\r\n", b"X-Pad: " + b"a" * 8000 + b"\r\n")


async def _endless_chunked(w: asyncio.StreamWriter) -> None:
    chunk = b" " * 65536
    first = _head(Content_Type="application/json", Transfer_Encoding="chunked") + b'2\r\n{"\r\n'
    await _endless(w, first, b"%x\r\n%s\r\n" % (len(chunk), chunk))


async def _endless_trailer(w: asyncio.StreamWriter) -> None:
    raw = json.dumps(completion()).encode()
    first = _head(Content_Type="application/json", Transfer_Encoding="chunked")
    first += b"%x\r\n%s\r\n0\r\n" % (len(raw), raw)
    await _endless(w, first, b"X-Trailer: " + b"t" * 8000 + b"\r\n")


async def _slow_drip(w: asyncio.StreamWriter) -> None:
    await _endless(w, _head(Content_Type="application/json", Content_Length=10**6) + b"{", b" ", pause_s=0.05)


def _compressed(body: bytes) -> Case:
    async def write(w: asyncio.StreamWriter) -> None:
        w.write(_head(Content_Type="application/json", Content_Encoding="gzip", Content_Length=len(body)) + body)

    return write


def hostile_cases() -> dict[str, Case]:
    """The red-team answers, by name (each a path segment of :meth:`ScriptedEndpoint.url`)."""
    return {
        "ok": _json_answer(completion()),
        "huge-headers": _huge_headers,
        "endless-chunked": _endless_chunked,
        "endless-trailer": _endless_trailer,
        "slow-drip": _slow_drip,
        "gzip-bomb": _compressed(gzip_bomb()),
        "padded": _compressed(padded_completion()),
        "numbers": _json_answer(
            completion(usage={"prompt_tokens": 10**30, "completion_tokens": -5, "total_tokens": 1.5})
            | {
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": SVG}, "finish_reason": {"a": [1, 2]}}
                ]
            }
        ),
    }


class _Background:
    """An asyncio server on a thread of its own."""

    def __init__(self, host: str, tls: ssl.SSLContext | None) -> None:
        self.host, self.tls = host, tls
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.base_events.Server | None = None
        self._open: set[asyncio.StreamWriter] = set()
        self._handlers: set[asyncio.Task[None]] = set()  # one per connection: ended before the loop stops

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raise NotImplementedError

    async def _guarded(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._open.add(writer)
        task = asyncio.current_task()
        if task is not None:
            self._handlers.add(task)
        try:
            await self._serve(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ssl.SSLError, OSError):
            pass
        finally:
            self._open.discard(writer)
            self._handlers.discard(task)  # type: ignore[arg-type]
            writer.close()

    def start(self) -> _Background:
        self._thread.start()

        async def listen() -> None:
            self._server = await asyncio.start_server(self._guarded, self.host, 0, ssl=self.tls)
            self.port = self._server.sockets[0].getsockname()[1]

        asyncio.run_coroutine_threadsafe(listen(), self._loop).result(10)
        return self

    def stop(self) -> None:
        async def close() -> None:
            if self._server is not None:
                self._server.close()
            for writer in list(self._open):
                writer.transport.abort()
            handlers = list(self._handlers)  # a handler still waiting on its connection would be destroyed pending
            for task in handlers:
                task.cancel()
            await asyncio.gather(*handlers, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        if not self._thread.is_alive():
            self._loop.close()  # not left to the garbage collector (whose __del__ may meet a test's SIGINT)

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


async def _read_head(reader: asyncio.StreamReader) -> tuple[str, dict[str, str], bytes]:
    """A request's first line, its fields (lower-cased names) and its Content-Length body."""
    head = await reader.readuntil(b"\r\n\r\n")
    line, *rest = head.decode("latin-1").split("\r\n")
    fields = {}
    for text in rest:
        if ":" in text:
            name, _, value = text.partition(":")
            fields[name.strip().lower()] = value.strip()
    body = await reader.readexactly(int(fields.get("content-length", "0")))
    return line, fields, head + body


class ScriptedEndpoint(_Background):
    """POST ``/{case}/v1/chat/completions`` answers with ``cases[case]`` (:func:`hostile_cases` by default);
    ``requests`` counts them per case."""

    def __init__(
        self, cases: dict[str, Case] | None = None, host: str = "127.0.0.1", tls: ssl.SSLContext | None = None
    ) -> None:
        super().__init__(host, tls)
        self.cases = hostile_cases() if cases is None else cases
        self.requests: collections.Counter[str] = collections.Counter()

    def url(self, case: str, host: str | None = None) -> str:
        scheme = "https" if self.tls else "http"
        return f"{scheme}://{host or self.host}:{self.port}/{case}/v1"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        line, _, _ = await _read_head(reader)
        case = line.split(" ")[1].split("/")[1]
        self.requests[case] += 1
        await self.cases[case](writer)
        await writer.drain()


class ForwardProxy(_Background):
    """A forwarding HTTP proxy: absolute-form requests (``POST http://host:port/path``) are sent on to ``routes``
    (``"host:port"`` → ``(address, port)``, else the host itself) with ``Connection: close`` and the answer relayed
    back; ``CONNECT host:port`` opens a tunnel to the same place. ``seen`` lists every request line received."""

    def __init__(self, routes: dict[str, tuple[str, int]] | None = None) -> None:
        super().__init__("127.0.0.1", None)
        self.routes = routes or {}
        self.seen: list[str] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _upstream(self, authority: str) -> tuple[str, int]:
        if authority in self.routes:
            return self.routes[authority]
        host, _, port = authority.rpartition(":")
        return host.strip("[]"), int(port)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        line, fields, raw = await _read_head(reader)
        self.seen.append(line)
        method, target, _ = line.split(" ", 2)
        if method == "CONNECT":
            up_reader, up_writer = await asyncio.open_connection(*self._upstream(target))
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer), return_exceptions=True)
            return
        scheme, _, rest = target.partition("://")
        authority, _, path = rest.partition("/")
        if ":" not in authority.rpartition("]")[2]:
            authority += ":443" if scheme == "https" else ":80"
        up_reader, up_writer = await asyncio.open_connection(*self._upstream(authority))
        head, _, body = raw.partition(b"\r\n\r\n")
        kept = [
            text
            for text in head.decode("latin-1").split("\r\n")[1:]
            if text.partition(":")[0].strip().lower() not in ("connection", "proxy-connection", "keep-alive")
        ]
        request = "\r\n".join([f"{method} /{path} HTTP/1.1", *kept, "Connection: close"]) + "\r\n\r\n"
        up_writer.write(request.encode("latin-1") + body)
        await _pipe(up_reader, writer)
        up_writer.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    finally:
        if writer.can_write_eof():
            writer.write_eof()
