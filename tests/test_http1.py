"""The hot path's HTTP/1.1 client (core/http1.py) against real servers on 127.0.0.1: aiohttp's web server for what
real endpoints send (keep-alive, chunked, gzip), and a scripted socket server for answers no good server sends
(malformed, oversized, cut short, pipelined extras)."""

from __future__ import annotations

import asyncio
import gzip
import json
import ssl
import subprocess
import zlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from svgagent.core import http1
from svgagent.core.chat_http import ChatClient
from svgagent.core.http1 import Http1Client, HttpProtocolError, Target
from svgagent.core.listen import listen

HEAD_HEADERS = {"Content-Type": "application/json", "Authorization": "Bearer k"}


@pytest.fixture
async def web_server() -> AsyncIterator[tuple[list[dict[str, Any]], str]]:
    seen: list[dict[str, Any]] = []

    async def echo(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        seen.append(
            {
                "headers": dict(request.headers),
                "body": body,
                "peer": request.transport.get_extra_info("sockname") and request.transport.get_extra_info("peername"),
            }
        )
        mode = request.query.get("mode", "")
        payload = json.dumps({"echo": body.decode(), "n": len(seen)}).encode()
        if mode == "chunked":
            response = web.StreamResponse()
            response.enable_chunked_encoding()
            await response.prepare(request)
            for i in range(0, len(payload), 7):
                await response.write(payload[i : i + 7])
            await response.write_eof()
            return response
        if mode == "gzip":
            return web.Response(body=gzip.compress(payload), headers={"Content-Encoding": "gzip"})
        if mode == "deflate":
            return web.Response(body=zlib.compress(payload), headers={"Content-Encoding": "deflate"})
        if mode == "close":
            return web.Response(body=payload, headers={"Connection": "close"})
        return web.Response(
            body=payload, status=int(request.query.get("status", "200")), headers={"Retry-After": "2", "X-Twice": "a"}
        )

    app = web.Application()
    app.router.add_post("/v1/echo", echo)
    app.router.add_post("/v1/chat/completions", echo)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
    await runner.setup()
    port = await listen(runner, "127.0.0.1", 0)
    try:
        yield seen, f"http://127.0.0.1:{port}/v1/echo"
    finally:
        await runner.cleanup()


async def _post(
    client: Http1Client, url: str, body: bytes = b'{"a": 1}', max_body: int = 1 << 20
) -> http1.HttpResponse:
    target = Target.parse(url)
    return await client.post(target, target.head(HEAD_HEADERS), body, max_body=max_body)


async def test_keep_alive_reuses_one_connection_for_sequential_requests(web_server) -> None:
    seen, url = web_server
    client = Http1Client()
    try:
        answers = [await _post(client, url, json.dumps({"i": i}).encode()) for i in range(5)]
    finally:
        await client.close()
    assert [json.loads(a.body)["echo"] for a in answers] == [json.dumps({"i": i}) for i in range(5)]
    assert client.connections_made == 1
    assert len({s["peer"] for s in seen}) == 1
    assert seen[0]["headers"]["Authorization"] == "Bearer k"
    assert seen[0]["headers"]["Content-Length"] == str(len(json.dumps({"i": 0})))


@pytest.mark.parametrize("mode", ["chunked", "gzip", "deflate"])
async def test_chunked_and_compressed_answers_are_decoded(web_server, mode) -> None:
    _, url = web_server
    client = Http1Client()
    try:
        first = await _post(client, f"{url}?mode={mode}", b"x" * 100)
        second = await _post(client, f"{url}?mode={mode}", b"y")
    finally:
        await client.close()
    assert json.loads(first.body) == {"echo": "x" * 100, "n": 1}
    assert json.loads(second.body)["n"] == 2
    assert client.connections_made == 1  # chunked and compressed answers keep the connection


async def test_connection_close_is_honoured_and_many_in_flight_each_get_their_own(web_server) -> None:
    _, url = web_server
    client = Http1Client()
    try:
        await _post(client, f"{url}?mode=close")
        await _post(client, f"{url}?mode=close")
        assert client.connections_made == 2
        answers = await asyncio.gather(*[_post(client, url, str(i).encode()) for i in range(20)])
    finally:
        await client.close()
    assert sorted(json.loads(a.body)["echo"] for a in answers) == sorted(str(i) for i in range(20))


async def test_status_and_headers_come_back_with_lower_cased_names(web_server) -> None:
    _, url = web_server
    client = Http1Client()
    try:
        answer = await _post(client, f"{url}?status=429")
    finally:
        await client.close()
    assert answer.status == 429
    assert answer.headers["retry-after"] == "2"
    assert answer.headers["x-twice"] == "a"


async def test_a_limit_bounds_the_connections_per_origin(web_server) -> None:
    _, url = web_server
    client = Http1Client(limit=2)
    try:
        await asyncio.gather(*[_post(client, url) for _ in range(12)])
    finally:
        await client.close()
    assert client.connections_made == 2


async def test_an_idle_connection_past_its_keepalive_is_not_reused(web_server) -> None:
    _, url = web_server
    client = Http1Client(keepalive_s=0.0)
    try:
        await _post(client, url)
        await _post(client, url)
    finally:
        await client.close()
    assert client.connections_made == 2


# --- answers no good server sends: a scripted socket server -------------------------------------------------


@pytest.fixture
async def scripted() -> AsyncIterator[tuple[list[bytes], str, list[int]]]:
    """Each connection reads a request and writes the next scripted answer, until none is left; a :class:`Cut`
    answer is written and then the connection is closed."""
    answers: list[Any] = []
    connections: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        try:
            while answers:
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(
                    next(
                        line.split(b":")[1]
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length")
                    )
                )
                await reader.readexactly(length)
                answer = answers.pop(0)
                writer.write(answer)
                await writer.drain()
                if isinstance(answer, Cut):
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield answers, f"http://127.0.0.1:{port}/v1/x", connections
    finally:
        server.close()
        await server.wait_closed()


class Cut(bytes):
    """An answer after which the scripted server closes the connection."""


def _ok(body: bytes, extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s" % (len(body), extra, body)


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        (Cut(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this"), "before its answer was complete"),
        (b"HTTP/2 200\r\n\r\n", "llhttp reads it: Expected dot"),
        (b"ICY 200 OK\r\n\r\n", "Expected HTTP/"),
        (b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "Invalid header token"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2, 3\r\n\r\nab", "Invalid character in Content-Length"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "Invalid character in Content-Length"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "chunk size"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n", "after chunk data"),
        (b"HTTP/1.1 200 OK\r\nContent-Encoding: br\r\nContent-Length: 1\r\n\r\nx", "did not ask for"),
        (b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 4\r\n\r\nnope", "damaged"),
        (b"HTTP/1.1 101 Switching\r\n\r\n", "switched protocols"),
        (b"HTTP/1.1 200 OK\r\n" + b"X-Pad: " + b"a" * (70 * 1024) + b"\r\n\r\n", "head is larger"),
        (b"HTTP/1.1 200 OK\r\n" + b"X: 1\r\n" * 200 + b"\r\n", "more than"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx", "Duplicate Content-Length"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "Content-Length"),
        (b"HTTP/1.1 200 OK\r\nX: a\x00b\r\nContent-Length: 0\r\n\r\n", "control character"),
        (b"HTTP/1.1 200 OK\r\nX: a\rb\r\nContent-Length: 0\r\n\r\n", "llhttp reads it"),
        (b"HTTP/1.1 200 OK\nContent-Length: 0\n\n", "llhttp reads it"),
        (b"HTTP/1.1 99 Low\r\nContent-Length: 0\r\n\r\n", "status code"),
    ],
    ids=[
        "cut-short",
        "h2",
        "icy",
        "no-colon",
        "two-lengths",
        "negative",
        "chunk-size",
        "chunk-crlf",
        "br",
        "bad-gzip",
        "101",
        "huge-head",
        "many-fields",
        "length-twice",
        "length-and-chunked",
        "nul-in-value",
        "bare-cr",
        "bare-lf",
        "status-99",
    ],
)
async def test_malformed_answers_are_protocol_errors(scripted, answer, why) -> None:
    """... and one cut short is a connection error (the chat client retries both as connection trouble)."""
    answers, url, _ = scripted
    answers.append(answer)
    client = Http1Client()
    try:
        with pytest.raises(ConnectionResetError if isinstance(answer, Cut) else HttpProtocolError, match=why):
            await _post(client, url)
    finally:
        await client.close()


async def test_a_head_over_the_cap_is_refused_even_when_it_arrives_whole(scripted, monkeypatch) -> None:
    """The head cap holds for a head that arrives in one read as for one that trickles in (llhttp has none)."""
    monkeypatch.setattr(http1, "MAX_HEAD_BYTES", 200)
    answers, url, _ = scripted
    answers.append(_ok(b"ok", b"X-Pad: " + b"a" * 300 + b"\r\n"))  # one write, read at once
    client = Http1Client()
    try:
        with pytest.raises(HttpProtocolError, match="head is larger than 200"):
            await _post(client, url)
    finally:
        await client.close()


async def test_an_obsolete_folded_field_is_unfolded(scripted) -> None:
    """RFC 9112 5.2: a user agent replaces an obs-fold with spaces (llhttp does with lenient headers, as aiohttp
    reads answers)."""
    answers, url, _ = scripted
    answers.append(_ok(b"ok", b"X: a\r\n folded\r\n"))
    client = Http1Client()
    try:
        answer = await _post(client, url)
    finally:
        await client.close()
    assert (answer.body, answer.headers["x"]) == (b"ok", "a folded")


async def test_interim_answers_are_skipped_and_close_delimited_bodies_read_to_the_end(scripted) -> None:
    answers, url, connections = scripted
    answers.append(Cut(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nConnection: close\r\n\r\nall of it"))
    client = Http1Client()
    try:
        answer = await _post(client, url)
    finally:
        await client.close()
    assert (answer.status, answer.body) == (200, b"all of it")


async def test_trailers_and_chunk_extensions_are_skipped(scripted) -> None:
    answers, url, _ = scripted
    answers.extend(
        [
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n1\r\nd\r\n0\r\n"
            b"X-Trailer: t\r\n\r\n",
            _ok(b"next"),
        ]
    )
    client = Http1Client()
    try:
        first = await _post(client, url)
        second = await _post(client, url)
    finally:
        await client.close()
    assert (first.body, second.body) == (b"abcd", b"next")
    assert client.connections_made == 1


@pytest.mark.parametrize(
    "answer",
    [
        _ok(b"x" * 5000),
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        + b"3e8\r\n"
        + b"x" * 1000
        + b"\r\n" * 1
        + (b"3e8\r\n" + b"x" * 1000 + b"\r\n") * 4
        + b"0\r\n\r\n",
        Cut(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + b"x" * 5000),
        b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(gzip.compress(b"x" * 5000))
        + gzip.compress(b"x" * 5000),
    ],
    ids=["length", "chunked", "until-close", "gzip-bomb"],
)
async def test_a_body_over_the_cap_is_read_only_up_to_it(scripted, answer) -> None:
    answers, url, _ = scripted
    answers.extend([answer, _ok(b"fresh")])
    client = Http1Client()
    try:
        capped = await _post(client, url, max_body=1000)
        assert capped.truncated
        assert len(capped.body) == 1001
        fresh = await _post(client, url)
    finally:
        await client.close()
    assert fresh.body == b"fresh"


async def test_extra_bytes_after_an_answer_drop_the_connection(scripted) -> None:
    answers, url, connections = scripted
    answers.extend([_ok(b"one") + b"HTTP/1.1 200 OK\r\n", _ok(b"two")])
    client = Http1Client()
    try:
        assert (await _post(client, url)).body == b"one"
        assert (await _post(client, url)).body == b"two"
    finally:
        await client.close()
    assert client.connections_made == 2


async def test_a_timed_out_exchange_closes_its_connection(scripted) -> None:
    answers, url, connections = scripted
    answers.extend([b"HTTP/1.1 200 OK\r\n", _ok(b"late")])  # the first answer never completes
    client = Http1Client()
    try:
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.2):
                await _post(client, url)
        assert (await _post(client, url)).body == b"late"
    finally:
        await client.close()
    assert client.connections_made == 2


async def test_a_request_past_its_timeout_is_a_timeout_error_and_its_connection_is_closed(scripted) -> None:
    answers, url, connections = scripted
    answers.extend([b"HTTP/1.1 200 OK\r\n", _ok(b"late"), _ok(b"again")])  # the first answer never completes
    client = Http1Client()
    target = Target.parse(url)
    head = target.head(HEAD_HEADERS)
    try:
        with pytest.raises(TimeoutError):
            await client.post(target, head, b"{}", max_body=1024, timeout=0.2)
        assert (await client.post(target, head, b"{}", max_body=1024, timeout=30)).body == b"late"
        kept = client._idle[("http", "127.0.0.1", target.port)][0]
        assert kept._timer is None  # the answer's arrival cancelled its deadline: nothing fires on a kept connection
        assert (await client.post(target, head, b"{}", max_body=1024, timeout=30)).body == b"again"
    finally:
        await client.close()
    assert client.connections_made == 2  # the timed-out one is never reused; the answered one is


async def test_a_timeout_also_bounds_the_wait_for_a_free_connection(scripted) -> None:
    answers, url, connections = scripted
    answers.extend([b"HTTP/1.1 200 OK\r\n", _ok(b"unused")])  # never completes: the one connection stays busy
    client = Http1Client(limit=1)
    target = Target.parse(url)
    head = target.head(HEAD_HEADERS)
    try:
        first = asyncio.create_task(client.post(target, head, b"{}", max_body=1024))
        while not client._busy:
            await asyncio.sleep(0)
        with pytest.raises(TimeoutError):
            await client.post(target, head, b"{}", max_body=1024, timeout=0.1)
        assert client.connections_made == 1 and not first.done()
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
    finally:
        await client.close()


def test_urls_and_headers_that_a_request_cannot_carry_are_refused() -> None:
    with pytest.raises(ValueError, match="http"):
        Target.parse("ftp://example.com/v1")
    with pytest.raises(ValueError, match="characters"):
        Target.parse("http://example.com/v1 HTTP/1.1\r\nX: y")
    target = Target.parse("https://user:pw@api.example.com:8443/v1/chat?x=1")
    assert (target.host, target.port, target.authority, target.path) == (
        "api.example.com",
        8443,
        "api.example.com:8443",
        "/v1/chat?x=1",
    )
    assert Target.parse("http://[::1]:9/v1").authority == "[::1]:9"
    with pytest.raises(ValueError, match="cannot be sent"):
        target.head({"Authorization": "Bearer a\r\nX-Evil: 1"})


class _Capture(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.sent = b""

    def write(self, data: Any) -> None:
        self.sent += bytes(data)


async def test_a_request_head_is_written_once_as_bytes_and_content_length_per_request() -> None:
    target = Target.parse("http://127.0.0.1:9/v1/x?y=1")
    head = target.head({**HEAD_HEADERS, "X-Mixed-Case": "Ünï"})
    sent = []
    for body in (b"", b'{"a": 1}' * 300):
        conn = http1._Connection()
        conn.connection_made(_Capture())
        waiter = conn.exchange(head, body, 100)
        sent.append(conn.transport.sent)
        waiter.cancel()
    assert sent[0] == (
        b"POST /v1/x?y=1 HTTP/1.1\r\nHost: 127.0.0.1:9\r\nAccept-Encoding: gzip, deflate\r\n"
        b"Content-Type: application/json\r\nAuthorization: Bearer k\r\nX-Mixed-Case: \xdcn\xef\r\n"
        b"Content-Length: 0\r\n\r\n"
    )
    assert sent[1] == sent[0].replace(b"Length: 0", b"Length: 2400") + b'{"a": 1}' * 300


@pytest.mark.parametrize(
    "headers",
    [
        {"X-Evil": "a\r\nX-Injected: 1"},
        {"X-Evil": "a\nb"},
        {"X-Evil": "a\rb"},
        {"X-Evil": "a\x00b"},
        {"X-Evil": "a\x7fb"},
        {"X Space": "1"},
        {"X:Colon": "1"},
        {"X-Evil\r\n": "1"},
        {"": "1"},
        {"Ünï": "1"},
        {"X-Wide": "\u20ac"},
        {"Content-Length": "5"},
        {"transfer-encoding": "chunked"},
        {"HOST": "elsewhere"},
    ],
    ids=[
        "crlf",
        "lf",
        "cr",
        "nul",
        "del",
        "space-in-name",
        "colon-in-name",
        "crlf-in-name",
        "empty-name",
        "non-ascii-name",
        "not-latin-1",
        "content-length",
        "transfer-encoding",
        "host",
    ],
)
def test_header_fields_a_request_cannot_carry_are_refused_before_anything_is_sent(headers) -> None:
    """RFC 9110 5.1/5.5: a field name is a token, a value has no control characters but HTAB; framing and Host are
    the client's. Refused by Target.head, so no request with them is ever written."""
    target = Target.parse("http://127.0.0.1:9/v1/x")
    with pytest.raises(ValueError, match="cannot be sent"):
        target.head(headers)
    assert target.head({"X-Tab": "a\tb", "X-Latin": "caf\xe9", "X-Empty": ""}).endswith(
        b"X-Tab: a\tb\r\nX-Latin: caf\xe9\r\nX-Empty: \r\nContent-Length: "
    )


async def test_answers_with_connection_close_or_on_http_1_0_are_not_kept(scripted) -> None:
    answers, url, connections = scripted
    answers.extend(
        [
            _ok(b"one", b"Connection: close\r\n"),
            b"HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\ntwo",
            _ok(b"three"),
            _ok(b"four"),
        ]
    )
    client = Http1Client()
    try:
        got = [(await _post(client, url)).body for _ in range(4)]
    finally:
        await client.close()
    assert got == [b"one", b"two", b"three", b"four"]
    assert client.connections_made == 3  # the first two are not reused; the third is


async def test_a_kept_connection_the_server_closed_is_not_used_again(scripted) -> None:
    """The server ends a kept-alive connection while it is idle: the next POST goes on a fresh one (nothing was
    sent on the closed one), and succeeds."""
    answers, url, connections = scripted
    answers.append(Cut(_ok(b"one")))  # no Connection: close, but the server closes after it
    client = Http1Client()
    try:
        assert (await _post(client, url)).body == b"one"
        async with asyncio.timeout(10):  # a bound for a broken client, not a timing assertion
            while not all(conn.lost for idle in client._idle.values() for conn in idle):
                await asyncio.sleep(0.01)  # the client's transport sees the end of the connection
        answers.append(_ok(b"two"))
        assert (await _post(client, url)).body == b"two"
    finally:
        await client.close()
    assert client.connections_made == 2


async def test_the_chat_client_reuses_its_connections(web_server) -> None:
    """The engine's chat client pays for one connection per concurrent call, not one per request."""
    seen, url = web_server
    chat = ChatClient(url.removesuffix("/echo"), "k", max_retries=0)
    try:
        for _ in range(3):
            answer = await chat.complete_chat({"model": "m", "messages": []})
            assert answer.choices == []  # the echo is JSON without choices: read as none
        assert chat._http is not None
        assert chat._http.connections_made == 1
    finally:
        await chat.close()
    assert [json.loads(s["body"]) for s in seen] == [{"model": "m", "messages": []}] * 3


async def test_https_verifies_the_certificate_and_keeps_the_connection(tmp_path: Path) -> None:
    """TLS as the real endpoints speak it: a certificate for localhost made here, trusted by the client's context;
    the default context (the system's roots) refuses it."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=DNS:localhost",
        ],
        check=True,
        capture_output=True,
    )

    async def echo(request: web.Request) -> web.Response:
        return web.json_response({"got": len(await request.read())})

    app = web.Application()
    app.router.add_post("/v1/x", echo)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
    await runner.setup()
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(cert, key)
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=server_tls)
    await site.start()
    url = f"https://localhost:{site._server.sockets[0].getsockname()[1]}/v1/x"
    trusting = ssl.create_default_context()
    trusting.load_verify_locations(cert)
    client, default = Http1Client(tls=trusting), Http1Client()
    try:
        answers = [await _post(client, url, b"x" * 5000) for _ in range(3)]
        with pytest.raises(ssl.SSLCertVerificationError):
            await _post(default, url)
    finally:
        await client.close()
        await default.close()
        await runner.cleanup()
    assert [json.loads(a.body) for a in answers] == [{"got": 5000}] * 3
    assert client.connections_made == 1
