"""The engine's aiohttp chat client (core/chat_http.py) against a scripted server on 127.0.0.1: answers, retries,
Retry-After, timeouts, typed errors and the one-line reasons the engine stores for them."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiohttp import web

from svgagent.core import chat_http
from svgagent.core.chat_http import (
    ChatClient,
    ChatConnectionError,
    ChatStatusError,
    ChatTimeout,
    backoff_s,
    retry_after_s,
    should_retry,
)
from svgagent.core.policy import classify_api_error, generate
from svgagent.core.scoring.errors import EndpointResponseError
from svgagent.core.scoring.judge import Judge, build_judge_messages, response_format_for
from svgagent.core.scoring.models import COUNT_KEY, FailureKind, JudgeMode
from svgagent.core.settings import load_settings

BODY = {"model": "m", "messages": [{"role": "user", "content": "draw"}]}


def completion(content: Any = "<svg/>", **extra: Any) -> dict[str, Any]:
    return {
        "id": "x",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7},
        **extra,
    }


class Script:
    """Answers requests in order from a list of handlers (the last one repeats); records what was asked."""

    def __init__(self) -> None:
        self.handlers: list[Callable[[web.Request], Any]] = []
        self.requests: list[dict[str, Any]] = []

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.requests.append({"headers": dict(request.headers), "body": await request.json()})
        handler = self.handlers[min(len(self.requests), len(self.handlers)) - 1]
        return await handler(request)


@pytest.fixture
async def server() -> AsyncIterator[tuple[Script, str]]:
    script = Script()
    app = web.Application()
    app.router.add_post("/v1/chat/completions", script.handle)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    try:
        yield script, f"http://127.0.0.1:{port}/v1"
    finally:
        await runner.cleanup()


def answer(
    status: int = 200,
    body: Any = None,
    *,
    raw: bytes | None = None,
    headers: dict[str, str] | None = None,
    content_type: str = "application/json",
) -> Callable[[web.Request], Any]:
    async def handler(request: web.Request) -> web.Response:
        data = raw if raw is not None else json.dumps(completion() if body is None else body).encode()
        return web.Response(status=status, body=data, headers=headers, content_type=content_type)

    return handler


def client(url: str, **kwargs: Any) -> ChatClient:
    kwargs.setdefault("max_retries", 2)
    return ChatClient(url, "test-key", **kwargs)


async def test_an_answer_has_the_shape_the_judge_and_policy_read(server, monkeypatch) -> None:
    script, url = server
    script.handlers = [answer(body=completion("the svg", usage={"prompt_tokens": 5, "completion_tokens": True}))]
    chat = client(url)
    try:
        response = await chat.complete_chat(BODY)
        assert response.choices[0].message.content == "the svg"
        assert response.choices[0].finish_reason == "stop"
        assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (5, 0)  # a bool is no count
        policy = await generate(chat, "m", BODY["messages"], {"temperature": 0.5})
        assert policy.content == "the svg"
        assert policy.usage.prompt_tokens == 5
    finally:
        await chat.close()
    sent = script.requests[0]
    assert sent["headers"]["Authorization"] == "Bearer test-key"
    assert sent["body"] == BODY
    assert script.requests[1]["body"]["temperature"] == 0.5


async def test_the_judge_works_through_it(server) -> None:
    script, url = server
    script.handlers = [answer(body=completion(json.dumps({"reasoning": "ok", COUNT_KEY: 2})))]
    chat = client(url)
    try:
        verdict = await Judge(chat, "judge-model").judge(b"\x89PNG fake", ["a", "b"])
    finally:
        await chat.close()
    assert verdict.valid
    assert verdict.fulfilled == 2
    assert verdict.usage.prompt_tokens == 11


async def test_the_judge_sends_its_spliced_body_and_retries_with_the_dict(server) -> None:
    """Through ChatClient the judge's first request is the spliced body (judge_request_json), its retry after an
    unusable answer the request's dict with the note: both are what the judge's messages say, as JSON."""
    script, url = server
    script.handlers = [
        answer(body=completion("not json")),
        answer(body=completion(json.dumps({"reasoning": "ok", COUNT_KEY: 1}))),
    ]
    chat = client(url)
    png = b"\x89PNG fake \x00\xff"
    try:
        verdict = await Judge(chat, "judge-model").judge(png, ["a", "b é"], "draw ✓")
    finally:
        await chat.close()
    assert verdict.valid and verdict.fulfilled == 1 and verdict.attempts == 2
    messages = build_judge_messages(png, ["a", "b é"], JudgeMode.COUNT, "draw ✓")
    first, second = (r["body"] for r in script.requests)
    assert first == {
        "model": "judge-model",
        "messages": messages,
        "temperature": 0,
        "response_format": response_format_for(JudgeMode.COUNT, 2),
    }
    assert second["messages"][:1] == messages and "could not be used" in second["messages"][1]["content"]
    assert {k: v for k, v in second.items() if k != "messages"} == {k: v for k, v in first.items() if k != "messages"}


async def test_5xx_and_429_are_retried_then_succeed(server, monkeypatch) -> None:
    waits: list[float] = []

    async def no_sleep(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(chat_http.asyncio, "sleep", no_sleep)
    script, url = server
    script.handlers = [
        answer(503, {"error": {"message": "overloaded"}}),
        answer(429, {"error": {"message": "slow"}}, headers={"Retry-After": "1.5"}),
        answer(),
    ]
    chat = client(url)
    try:
        response = await chat.complete_chat(BODY)
    finally:
        await chat.close()
    assert response.choices[0].message.content == "<svg/>"
    assert len(script.requests) == 3
    assert 0.375 <= waits[0] <= 0.5
    assert waits[1] == 1.5  # backoff with jitter, then what the server asked for


async def test_retries_run_out_into_a_typed_error_and_a_reason(server, monkeypatch) -> None:
    monkeypatch.setattr(chat_http.asyncio, "sleep", _no_wait)
    script, url = server
    script.handlers = [answer(500, {"error": {"message": "boom\nsecond line"}})]
    chat = client(url, max_retries=2)
    with pytest.raises(ChatStatusError) as caught:
        await chat.complete_chat(BODY)
    await chat.close()
    assert caught.value.status == 500
    assert len(script.requests) == 3
    settings = load_settings(base_url=url)
    kind, reason = classify_api_error(caught.value, "policy", settings)
    assert kind is FailureKind.HTTP_ERROR
    assert reason == "policy endpoint answered HTTP 500: boom"


@pytest.mark.parametrize(
    ("status", "headers", "requests", "kind"),
    [
        (401, {}, 1, FailureKind.AUTH),
        (403, {}, 1, FailureKind.AUTH),
        (400, {}, 1, FailureKind.HTTP_ERROR),
        (400, {"x-should-retry": "true"}, 3, FailureKind.HTTP_ERROR),
        (500, {"x-should-retry": "false"}, 1, FailureKind.HTTP_ERROR),
        (429, {"Retry-After": "600"}, 1, FailureKind.RATE_LIMIT),  # longer than 120 s: not worth waiting
        (429, {}, 3, FailureKind.RATE_LIMIT),
        (409, {}, 3, FailureKind.HTTP_ERROR),
    ],
)
async def test_which_statuses_are_retried(server, monkeypatch, status, headers, requests, kind) -> None:
    monkeypatch.setattr(chat_http.asyncio, "sleep", _no_wait)
    script, url = server
    script.handlers = [answer(status, {"error": {"message": "no"}}, headers=headers)]
    chat = client(url, max_retries=2)
    with pytest.raises(ChatStatusError) as caught:
        await chat.complete_chat(BODY)
    await chat.close()
    assert len(script.requests) == requests
    assert classify_api_error(caught.value, "judge", load_settings(judge_base_url=url))[0] is kind


async def test_refused_connection_is_unreachable_with_its_cause(monkeypatch) -> None:
    monkeypatch.setattr(chat_http.asyncio, "sleep", _no_wait)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens here once it is closed
    chat = client(f"http://127.0.0.1:{port}/v1", max_retries=1)
    with pytest.raises(ChatConnectionError) as caught:
        await chat.complete_chat(BODY)
    await chat.close()
    kind, reason = classify_api_error(caught.value, "policy", load_settings(base_url=f"http://127.0.0.1:{port}/v1"))
    assert kind is FailureKind.UNREACHABLE
    assert "(connection refused; " in reason


async def test_no_answer_within_the_timeout_is_a_timeout(server, monkeypatch) -> None:
    monkeypatch.setattr(chat_http.asyncio, "sleep", _no_wait)
    script, url = server
    never = asyncio.Event()

    async def hang(request: web.Request) -> web.Response:
        await never.wait()
        raise AssertionError("unreachable")

    script.handlers = [hang]
    chat = client(url, max_retries=1, timeout_s=0.2)
    with pytest.raises(ChatTimeout):
        await chat.complete_chat(BODY)
    await chat.close()
    never.set()  # let the hanging handlers end
    assert len(script.requests) == 2
    kind, reason = classify_api_error(ChatTimeout("x"), "judge", load_settings(request_timeout_s=0.2))
    assert kind is FailureKind.TIMEOUT
    assert reason == "judge request timed out after 0.2 s (3 retries)"


async def test_the_per_request_timeout_is_a_timer_on_the_exchange_not_asyncio_timeout(server, monkeypatch) -> None:
    """The per-request timeout is http1's timer on the exchange (Http1Client.post's ``timeout``), not an
    ``asyncio.timeout`` per request (a Timeout object, its timer, and a cancellation of the caller's task). Each
    request still times out on its own, one that is answered is not touched, and a cancellation from outside stays
    a cancellation."""
    monkeypatch.setattr(chat_http.asyncio, "sleep", _no_wait)
    script, url = server
    never = asyncio.Event()

    async def route(request: web.Request) -> web.Response:
        if script.requests[-1]["body"]["messages"][0]["content"] == "quick":
            return web.json_response(completion())
        await never.wait()
        raise AssertionError("unreachable")

    script.handlers = [route]
    loop = asyncio.get_running_loop()
    timers: list[float] = []
    real_call_at = loop.call_at

    def counted(when: float, callback: Any, *args: Any, **kwargs: Any) -> asyncio.TimerHandle:
        if getattr(callback, "__self__", None).__class__.__name__ == "Timeout":  # asyncio.timeout's
            timers.append(when)
        return real_call_at(when, callback, *args, **kwargs)

    monkeypatch.setattr(loop, "call_at", counted)
    chat = client(url, max_retries=0, timeout_s=0.3)
    quick_body = {**BODY, "messages": [{"role": "user", "content": "quick"}]}
    await chat.complete_chat(quick_body)  # (a new connection's connect is bounded by asyncio.timeout_at)
    timers.clear()
    quick = await chat.complete_chat(quick_body)  # on the kept-alive connection
    assert timers == []  # (one asyncio.timeout before)
    hanging = [asyncio.create_task(chat.complete_chat(BODY)) for _ in range(5)]
    outside = asyncio.create_task(chat.complete_chat(BODY))
    while len(script.requests) < 8:  # every request reached the server
        await asyncio.wait([outside], timeout=0.01)  # (asyncio.sleep is patched out)
    outside.cancel()
    results = await asyncio.gather(*hanging, outside, return_exceptions=True)
    await chat.close()
    never.set()
    assert quick.choices[0].message.content == "<svg/>"
    assert all(isinstance(r, ChatTimeout) for r in results[:5]), results
    assert isinstance(results[5], asyncio.CancelledError)  # cancelled by its caller: not a timeout


@pytest.mark.parametrize(
    ("raw", "content_type", "why"),
    [
        (b'data: {"choices": []}\n\n', "text/event-stream", "server-sent event stream"),
        (b"\xff\xfe{}", "application/json", "not valid UTF-8"),
        (b"<html>busy</html>", "text/html", "not JSON (it starts '<html>busy</html>')"),
        (b"[1, 2]", "application/json", "not a chat completion (a JSON list)"),
        (b'{"choices": {"a": 1}}', "application/json", "'choices' is not a list"),
        (b'{"choices": [{"message": 3}]}', "application/json", "has no message object"),
        (b'{"choices": [{"message": {"content": [1]}}]}', "application/json", "content that is not text"),
        (b"{" * 100_000, "application/json", "JSON"),
    ],
    ids=["sse", "utf8", "html", "list", "choices", "message", "content", "deep"],
)
async def test_unusable_answers_are_bad_responses(server, raw, content_type, why) -> None:
    script, url = server
    script.handlers = [answer(raw=raw, content_type=content_type)]
    chat = client(url)
    with pytest.raises(EndpointResponseError, match=why.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        await chat.complete_chat(BODY)
    await chat.close()
    assert classify_api_error(EndpointResponseError(why), "policy", load_settings())[0] is FailureKind.BAD_RESPONSE


async def test_an_answer_over_the_cap_is_not_read_whole(server, monkeypatch) -> None:
    monkeypatch.setattr(chat_http, "MAX_ANSWER_BYTES", 1000)
    script, url = server
    script.handlers = [answer(body=completion("x" * 5000))]
    chat = client(url)
    with pytest.raises(EndpointResponseError, match="larger than"):
        await chat.complete_chat(BODY)
    await chat.close()


def test_retry_after_forms_and_backoff() -> None:
    assert retry_after_s({"retry-after-ms": "250"}) == 0.25
    assert retry_after_s({"retry-after": "3"}) == 3.0
    assert retry_after_s({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) < 0  # a date in the past
    assert retry_after_s({"retry-after": "soon"}) is None
    assert retry_after_s({}) is None
    assert backoff_s(0, 2.0) == 2.0
    assert backoff_s(0, 0.0) <= 0.5
    assert backoff_s(0, 500.0) <= 0.5
    assert all(3.0 <= backoff_s(3, None) <= 4.0 for _ in range(50))  # 0.5 * 2^3, less up to 25 %
    assert all(6.0 <= backoff_s(10, None) <= 8.0 for _ in range(50))  # capped at 8 s
    assert should_retry(503, {})
    assert should_retry(408, {})
    assert not should_retry(404, {})
    assert not should_retry(503, {"retry-after": "121"})


async def _no_wait(seconds: float) -> None:
    return None
