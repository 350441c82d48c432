"""The client stack of every endpoint call (core/scoring/endpoint.py, chat.py, failures.py) against real loopback
servers: the openai client's retries and Retry-After as the engine sees them, the failure kinds and their lines,
one reading of an answer's fields and numbers, and each red-team answer ending bounded in time and memory with
one line of reason."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
import tracemalloc
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from aiohttp import web
from loopback_servers import SVG, ScriptedEndpoint, completion

from svgagent.core.scoring.chat import MAX_TOKEN_COUNT, chat_completion, parse_completion
from svgagent.core.scoring.endpoint import MAX_ANSWER_BYTES, AnswerTooLarge, endpoint_client
from svgagent.core.scoring.errors import EndpointResponseError
from svgagent.core.scoring.failures import classify, endpoint_errors
from svgagent.core.scoring.models import FailureKind

MESSAGES = [{"role": "user", "content": "draw"}]


def _kind(err: BaseException, retries: int = 0, timeout_s: float = 2) -> tuple[FailureKind, str]:
    return classify(err, "policy", "http://x/v1", key_hint="THE_KEY", retries=retries, timeout_s=timeout_s)


async def _call(url: str, *, retries: int = 0, timeout_s: float = 5.0) -> Any:
    client = endpoint_client(url, "k", timeout_s=timeout_s, max_retries=retries)
    try:
        return await chat_completion(client, model="m", messages=MESSAGES)
    finally:
        await client.close()


# --- a scripted aiohttp endpoint: answers in turn ----------------------------------------------------------------


class Script:
    """An endpoint that answers each POST with the next of ``answers`` ((status, headers, body)); the last repeats.
    ``times`` are the monotonic times of the requests, ``bodies`` what they carried."""

    def __init__(self, answers: list[tuple[int, dict[str, str], bytes]]) -> None:
        self.answers = answers
        self.times: list[float] = []
        self.bodies: list[bytes] = []

    async def handle(self, request: web.Request) -> web.Response:
        self.bodies.append(await request.read())
        self.times.append(time.monotonic())
        status, headers, body = self.answers[min(len(self.times), len(self.answers)) - 1]
        return web.Response(status=status, headers=headers, body=body, content_type="application/json")


@pytest.fixture
def scripted() -> Iterator[Any]:
    """``start(answers)`` → (Script, base URL) on a loopback aiohttp server in a thread of its own."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    runners: list[web.AppRunner] = []

    def start(answers: list[tuple[int, dict[str, str], bytes]]) -> tuple[Script, str]:
        script = Script(answers)
        app = web.Application()
        app.router.add_post("/v1/chat/completions", script.handle)

        async def up() -> int:
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            runners.append(runner)
            return runner.addresses[0][1]

        port = asyncio.run_coroutine_threadsafe(up(), loop).result(10)
        return script, f"http://127.0.0.1:{port}/v1"

    yield start
    for runner in runners:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(10)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)


OK = (200, {}, json.dumps(completion()).encode())


def _error(status: int, message: str = "boom", **headers: str) -> tuple[int, dict[str, str], bytes]:
    return (
        status,
        {k.replace("_", "-"): v for k, v in headers.items()},
        json.dumps({"error": {"message": message}}).encode(),
    )


async def test_5xx_and_429_are_retried_then_succeed(scripted) -> None:
    script, url = scripted([_error(503, retry_after_ms="10"), _error(429, retry_after_ms="10"), OK])
    answer = await _call(url, retries=2)
    assert answer.choices[0].message.content == SVG
    assert len(script.times) == 3
    assert len({body for body in script.bodies}) == 1  # the same request each time


async def test_retry_after_is_honoured(scripted) -> None:
    script, url = scripted([_error(429, retry_after="1"), OK])
    await _call(url, retries=1)
    assert script.times[1] - script.times[0] >= 0.95  # the server's wait, not the client's 0.5 s backoff


@pytest.mark.parametrize(
    ("answer", "requests", "kind"),
    [
        (_error(400, "bad model"), 1, FailureKind.HTTP_ERROR),
        (_error(401, "no"), 1, FailureKind.AUTH),
        (_error(404), 1, FailureKind.HTTP_ERROR),
        (_error(408, retry_after_ms="10"), 3, FailureKind.HTTP_ERROR),
        (_error(409, retry_after_ms="10"), 3, FailureKind.HTTP_ERROR),
        (_error(429, retry_after_ms="10"), 3, FailureKind.RATE_LIMIT),
        (_error(500, retry_after_ms="10"), 3, FailureKind.HTTP_ERROR),
        (_error(503, x_should_retry="false"), 1, FailureKind.HTTP_ERROR),
        (_error(400, x_should_retry="true", retry_after_ms="10"), 3, FailureKind.HTTP_ERROR),
        (_error(503, retry_after="3600"), 1, FailureKind.HTTP_ERROR),  # a wait past 60 s is not waited for
    ],
)
async def test_which_answers_are_retried_and_what_they_become(scripted, answer, requests, kind) -> None:
    script, url = scripted([answer])
    with pytest.raises(endpoint_errors()) as caught:
        await _call(url, retries=2)
    assert len(script.times) == requests
    got, line = _kind(caught.value, retries=2)
    assert got is kind
    assert "\n" not in line
    if kind is FailureKind.AUTH:
        assert line == "policy key rejected (HTTP 401) by http://x/v1: check THE_KEY"
    elif kind is FailureKind.RATE_LIMIT:
        assert line == "policy endpoint rate-limited (HTTP 429) after 2 retries"
    else:
        message = json.loads(answer[2])["error"]["message"]
        assert line == f"policy endpoint answered HTTP {answer[0]}: {message}"


async def test_a_refused_connection_is_unreachable_with_its_cause() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(openai.APIConnectionError) as caught:
        await _call(f"http://127.0.0.1:{port}/v1")
    kind, line = _kind(caught.value, retries=3)
    assert kind is FailureKind.UNREACHABLE
    assert line == "policy endpoint unreachable: http://x/v1 (connection refused; 3 retries)"


async def test_no_answer_within_the_timeout_is_a_timeout() -> None:
    listener = socket.socket()  # accepts (the kernel's backlog) and never answers
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    try:
        started = time.monotonic()
        with pytest.raises(openai.APITimeoutError) as caught:
            await _call(f"http://127.0.0.1:{listener.getsockname()[1]}/v1", timeout_s=0.5)
        assert time.monotonic() - started < 10
    finally:
        listener.close()
    assert _kind(caught.value, timeout_s=0.5) == (
        FailureKind.TIMEOUT,
        "policy request timed out after 0.5 s (0 retries)",
    )


# --- reading an answer: one place ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        (b'data: {"choices": []}\n\ndata: [DONE]\n\n', "server-sent event stream"),
        (b'{"choices": [{"message": {"content": "\xff\xfe"}}]}', "not valid UTF-8"),
        (b"<html>oops</html>", "not JSON (it starts '<html>oops</html>')"),
        (b'{"choices": "none"}', "'choices' is not a list"),
        (b'{"choices": [{"nomessage": 1}]}', "a choice in the answer has no message object"),
        (b'{"choices": [{"message": {"content": 7}}]}', "content that is not text"),
        (b"[1, 2]", "not a chat completion (a JSON array)"),
        (b'{"choices": [' * 5000, "nested too deeply"),
        (b'{"choices": [], "n": 1' + b"0" * 5000 + b"}", "not readable JSON"),  # a number of 5000 digits
    ],
    ids=["sse", "utf8", "html", "choices", "message", "content", "array", "deep", "digits"],
)
def test_answers_that_are_not_chat_completions_say_what_they_are(raw: bytes, words: str) -> None:
    with pytest.raises(EndpointResponseError) as caught:
        parse_completion(raw)
    assert words in str(caught.value)
    assert _kind(caught.value)[0] is FailureKind.BAD_RESPONSE


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        ({"prompt_tokens": 10**30, "completion_tokens": 12}, (0, 12)),
        ({"prompt_tokens": -5, "completion_tokens": 1.5}, (0, 0)),
        ({"prompt_tokens": "12", "completion_tokens": True}, (0, 0)),
        ({"prompt_tokens": MAX_TOKEN_COUNT, "completion_tokens": None}, (MAX_TOKEN_COUNT, 0)),
        ({}, (0, 0)),
    ],
)
def test_token_counts_are_sane_integers_or_0(usage: dict[str, Any], expected: tuple[int, int]) -> None:
    answer = parse_completion(json.dumps(completion(usage=usage)).encode())
    assert answer.usage is not None
    assert (answer.usage.prompt_tokens, answer.usage.completion_tokens) == expected


@pytest.mark.parametrize(
    ("finish", "expected"),
    [("stop", "stop"), ({"a": [1]}, '{"a": [1]}'), (7, "7"), ("x" * 65, "x" * 64), (None, None)],
)
def test_a_finish_reason_is_text_of_at_most_64_characters(finish: Any, expected: str | None) -> None:
    """A dict (SQLite binds none) or a number is kept as its JSON text; every one is cut to 64 characters."""
    body = completion()
    body["choices"][0]["finish_reason"] = finish
    assert parse_completion(json.dumps(body).encode()).choices[0].finish_reason == expected


def test_a_lone_surrogate_escape_is_read_as_the_json_module_reads_it() -> None:
    """pydantic's reader refuses \\udc00; the json module reads it (the store makes it U+FFFD)."""
    raw = json.dumps(completion(content="a \udc00 b")).encode()
    assert parse_completion(raw).choices[0].message.content == "a \udc00 b"


def test_content_as_text_parts_is_joined_and_odd_fields_are_dropped() -> None:
    body = completion(usage="many")
    body["choices"][0]["message"] = {"content": [{"type": "text", "text": "a"}, {"type": "x"}, {"text": "b"}]}
    body["choices"][0]["message"]["refusal"] = {"no": 1}
    answer = parse_completion(json.dumps(body).encode())
    assert answer.choices[0].message.content == "ab"
    assert answer.choices[0].message.refusal is None
    assert answer.usage is None


# --- the red-team answers: each ends bounded, with one line ---------------------------------------------------


@pytest.fixture(scope="module")
def hostile() -> Iterator[ScriptedEndpoint]:
    with ScriptedEndpoint() as server:
        yield server


async def _bounded(url: str, *, retries: int = 0, timeout_s: float = 5.0) -> tuple[Any, float, int]:
    """(what the call returned or raised, seconds it took, peak bytes Python allocated meanwhile)."""
    tracemalloc.start()
    started = time.monotonic()
    try:
        try:
            outcome: Any = await _call(url, retries=retries, timeout_s=timeout_s)
        except Exception as err:  # noqa: BLE001 - the outcome is what is checked
            outcome = err
        return outcome, time.monotonic() - started, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("case", ["endless-chunked", "gzip-bomb", "padded"])
async def test_an_answer_past_the_cap_ends_at_the_cap_and_is_not_asked_again(hostile, case: str) -> None:
    """Bytes are counted as they arrive, decoded (a gzip bomb: 256 MiB of zeros in 256 KiB; a valid completion
    padded to 63 MB, 64 KB on the wire) or endless: the read stops at the cap, before anything parses it."""
    before = hostile.requests[case]
    outcome, seconds, peak = await _bounded(hostile.url(case), retries=2)
    assert isinstance(outcome, AnswerTooLarge)
    assert hostile.requests[case] - before == 1  # its bytes were the endpoint's answer: not paid for again
    assert peak < 4 * MAX_ANSWER_BYTES, peak
    assert seconds < 30
    assert _kind(outcome) == (FailureKind.BAD_RESPONSE, "policy endpoint: the answer is larger than 4 MiB")


@pytest.mark.parametrize("case", ["huge-headers", "endless-trailer"])
async def test_a_head_or_trailer_past_the_parsers_cap_is_an_unreadable_answer(hostile, case: str) -> None:
    before = hostile.requests[case]
    outcome, seconds, peak = await _bounded(hostile.url(case), retries=1)
    assert isinstance(outcome, openai.APIConnectionError)
    assert hostile.requests[case] - before == 2  # a broken exchange is retried like a dropped connection
    assert peak < 8 * 1024 * 1024, peak
    assert seconds < 30
    kind, line = _kind(outcome, retries=1)
    assert kind is FailureKind.BAD_RESPONSE
    assert line.startswith("policy endpoint sent an unreadable answer: http://x/v1 (")
    assert "header" in line.lower() or "receive buffer" in line.lower(), line  # what the parser refused
    assert "\n" not in line


async def test_a_slow_drip_ends_at_the_whole_requests_deadline(hostile) -> None:
    """One byte every 50 ms never trips a per-read timeout; the whole request's deadline ends it."""
    outcome, seconds, peak = await _bounded(hostile.url("slow-drip"), timeout_s=1.0)
    assert isinstance(outcome, openai.APITimeoutError)
    assert 0.9 < seconds < 10
    assert peak < 8 * 1024 * 1024
    assert _kind(outcome, timeout_s=1.0) == (FailureKind.TIMEOUT, "policy request timed out after 1 s (0 retries)")


async def test_numbers_from_an_answer_are_made_sane_on_the_way_in(hostile) -> None:
    answer = await _call(hostile.url("numbers"))
    assert answer.usage is not None
    assert (answer.usage.prompt_tokens, answer.usage.completion_tokens) == (0, 0)
    assert answer.choices[0].finish_reason == '{"a": [1, 2]}'
    assert answer.choices[0].message.content == SVG


async def test_an_error_status_with_a_huge_body_is_still_its_status(scripted) -> None:
    """An error answer's body is cut at 64 KiB (what it says is kept), not refused as too large."""
    _, url = scripted([(500, {"x-should-retry": "false"}, b'{"error": {"message": "' + b"y" * (8 << 20) + b'"}}')])
    with pytest.raises(openai.InternalServerError) as caught:
        await _call(url)
    kind, line = _kind(caught.value)
    assert kind is FailureKind.HTTP_ERROR
    assert line.startswith("policy endpoint answered HTTP 500: ")
    assert len(line) < 300
