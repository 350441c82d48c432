"""The engine's chat client: POST /chat/completions on pooled keep-alive connections, with the openai client's manners.

Why not the openai client on the hot path: bench/engine.py profiled its ``post`` at ~70 % of the engine's CPU per
rollout (request building, header models, response construction); a plain aiohttp POST was ~0.3 – 0.8 ms, still
half of the 1.5 ms a whole rollout may cost, so the transport is :mod:`svgagent.core.http1` (llhttp's HTTP/1.1 parser on
asyncio connections of its own, ≈0.2 – 0.45 ms; bench/client.py). What the openai client does that matters is done here the same
way (openai 1.x/2.x ``_base_client``):

- retries (``max_retries``) on connection errors, timeouts, HTTP 408, 409, 429 and 5xx, or when the server says
  ``x-should-retry: true`` (never when it says ``false``);
- exponential backoff 0.5 s x 2^n, at most 8 s, less a random 0-25 % (jitter) — unless the answer carries
  ``retry-after-ms`` / ``Retry-After`` (seconds or an HTTP date) of at most 120 s, which is waited instead (a
  longer one is not retried);
- a per-request timeout (``timeout_s``, the whole request);
- typed errors after the retries: :class:`ChatConnectionError` (with the operating-system cause, e.g. connection
  refused), :class:`ChatTimeout`, :class:`ChatStatusError` (status and the body's ``error.message``);
- the answer checked like :func:`svgagent.core.scoring.chat.checked` (a server-sent event stream, invalid UTF-8,
  JSON of another shape raise :class:`EndpointResponseError`; token counts that are not sane integers read as 0),
  and read at most :data:`MAX_ANSWER_BYTES`.

The openai client stays for everything else (key checks, the RFT bundle's judge). :class:`ChatClient` has the
``complete_chat`` method :func:`svgagent.core.scoring.chat.chat_completion` looks for, so the judge and the policy
call use it unchanged; what it returns has the attribute shape they read (``choices[0].message.content``, …).
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import random
import time
from dataclasses import dataclass
from typing import Any

from svgagent.core.http1 import Http1Client, HttpProtocolError, Target
from svgagent.core.json_body import json_value
from svgagent.core.scoring.errors import EndpointResponseError

RETRIED_STATUSES = frozenset({408, 409, 429})
INITIAL_RETRY_DELAY_S = 0.5
MAX_RETRY_DELAY_S = 8.0
MAX_RETRY_AFTER_S = 120.0
MAX_ANSWER_BYTES = 64 * 1024 * 1024
MAX_TOKEN_COUNT = 10**9  # larger "counts" are not counts: read as 0


class ChatError(Exception):
    """A chat call failed for good (after the client's retries)."""


class ChatConnectionError(ChatError):
    """The endpoint could not be reached; ``cause`` is the operating system's error when there was one."""

    def __init__(self, message: str, cause: OSError | None = None) -> None:
        super().__init__(message)
        self.cause = cause


class ChatTimeout(ChatError):
    """No complete answer within the per-request timeout."""


class ChatStatusError(ChatError):
    """The endpoint answered with an HTTP error status; ``message`` is what its body said."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.message = message


# --- the answer, shaped like the openai types the judge and the policy call read ------------------------------
# (plain slotted dataclasses: a frozen one's __init__ goes through object.__setattr__, 4 % of the engine's loop)


@dataclass(slots=True)
class ChatMessage:
    content: str | None
    refusal: str | None = None


@dataclass(slots=True)
class ChatChoice:
    message: ChatMessage
    finish_reason: str | None


@dataclass(slots=True)
class ChatUsage:
    prompt_tokens: int
    completion_tokens: int


@dataclass(slots=True)
class ChatCompletion:
    choices: list[ChatChoice]
    usage: ChatUsage | None


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_TOKEN_COUNT else 0


def parse_completion(raw: bytes) -> ChatCompletion:
    """The chat completion in ``raw`` (a response body), or :class:`EndpointResponseError` saying what it is."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise EndpointResponseError("the answer is not valid UTF-8") from None
    try:
        data = json_value(text)  # as json.loads reads it (core/json_body)
    except RecursionError:
        raise EndpointResponseError("the answer is JSON nested too deeply to read") from None
    except ValueError as err:
        head = text.lstrip()[:40]
        if head.startswith(("data:", "event:")):
            raise EndpointResponseError("the answer is a server-sent event stream, not a chat completion") from None
        if head[:1] in ("{", "["):  # JSON the decoder refuses (e.g. a number with thousands of digits)
            raise EndpointResponseError(f"the answer is not readable JSON ({str(err)[:120]})") from None
        raise EndpointResponseError(f"the answer is not JSON (it starts {head!r})") from None
    if not isinstance(data, dict):
        raise EndpointResponseError(f"the answer is not a chat completion (a JSON {type(data).__name__})")
    raw_choices = data.get("choices", [])
    if not isinstance(raw_choices, list):
        raise EndpointResponseError("the answer's 'choices' is not a list")
    choices = []
    for choice in raw_choices:
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            raise EndpointResponseError("a choice in the answer has no message object")
        content = message.get("content")
        if content is not None and not isinstance(content, str):
            raise EndpointResponseError("a message in the answer has content that is not text")
        refusal = message.get("refusal")
        finish = choice.get("finish_reason")
        choices.append(
            ChatChoice(
                ChatMessage(content, refusal if isinstance(refusal, str) else None),
                finish if isinstance(finish, str) else None,
            )
        )
    usage = data.get("usage")
    counts = (
        ChatUsage(_count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens")))
        if isinstance(usage, dict)
        else None
    )
    return ChatCompletion(choices, counts)


# --- retries ---------------------------------------------------------------------------------------------------


def retry_after_s(headers: Any) -> float | None:
    """The wait a response asks for (``retry-after-ms``, then ``Retry-After`` as seconds or an HTTP date)."""
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            delay = float(value)
        except ValueError:
            continue
        return delay / divisor if math.isfinite(delay) else MAX_RETRY_AFTER_S + 1
    value = headers.get("retry-after")
    if value:
        try:
            when = email.utils.parsedate_tz(value)
            if when is not None:
                return float(email.utils.mktime_tz(when) - time.time())
        except (TypeError, ValueError, OverflowError, OSError):
            return None
    return None


def backoff_s(retry: int, asked: float | None) -> float:
    """How long to wait before retry number ``retry`` (0-based): what the server asked for, when sane, else
    exponential backoff with up to 25 % jitter."""
    if asked is not None and 0 < asked <= MAX_RETRY_AFTER_S:
        return asked
    return min(INITIAL_RETRY_DELAY_S * 2.0 ** min(retry, 1000), MAX_RETRY_DELAY_S) * (1 - 0.25 * random.random())


def should_retry(status: int, headers: Any) -> bool:
    asked = retry_after_s(headers)
    if asked is not None and asked > MAX_RETRY_AFTER_S:
        return False
    explicit = headers.get("x-should-retry")
    if explicit in ("true", "false"):
        return explicit == "true"
    return status in RETRIED_STATUSES or status >= 500


def _error_message(raw: bytes, status: int) -> str:
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        data = None
    if isinstance(data, dict):
        err = data.get("error")
        message = err.get("message") if isinstance(err, dict) else (err if isinstance(err, str) else None)
        if message:
            return str(message)
    text = raw[:500].decode("utf-8", "replace").strip()
    return text or f"HTTP {status}"


def os_cause(err: BaseException) -> OSError | None:
    """The operating-system error behind a client error (connection refused, unknown host, reset), if any: a
    refused connection can surface as a timeout or a wrapped client error, so its cause decides."""
    seen: set[int] = set()
    current: BaseException | None = err
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and not isinstance(current, TimeoutError):
            return current
        current = current.__cause__ or current.__context__
    return None


# --- the client --------------------------------------------------------------------------------------------


class ChatClient:
    """Chat completions at ``base_url`` (an OpenAI-compatible ``…/v1``) with ``api_key``, on keep-alive connections
    of its own (:class:`svgagent.core.http1.Http1Client`, made on first use in the running loop; :meth:`close` it)."""

    def __init__(
        self, base_url: str, api_key: str, *, timeout_s: float = 120.0, max_retries: int = 2, connections: int = 0
    ) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        self._target = Target.parse(self.url)
        self._head = self._target.head(
            {"Content-Type": "application/json", "Accept": "application/json", "Authorization": f"Bearer {api_key}"}
        )
        self._connections = connections  # 0: no limit (the engine's semaphores bound the calls in flight)
        self._http: Http1Client | None = None

    def _client(self) -> Http1Client:
        if self._http is None or self._http.closed:
            self._http = Http1Client(limit=self._connections)
        return self._http

    async def close(self) -> None:
        if self._http is not None:
            await self._http.close()
            self._http = None

    async def complete_chat(self, body: dict[str, Any]) -> ChatCompletion:
        """POST ``body`` (model, messages, …: plain JSON) and return the checked answer, retrying as described in
        the module docstring; raises a :class:`ChatError` or :class:`EndpointResponseError`."""
        return await self.complete_chat_json(json.dumps(body).encode())

    async def complete_chat_json(self, data: bytes) -> ChatCompletion:
        """:meth:`complete_chat` of a body already serialised (UTF-8 JSON; the judge splices its PNG into one)."""
        http = self._client()
        for retry in range(self.max_retries + 1):
            last = retry == self.max_retries
            try:  # the per-request timeout: a timer on the exchange (http1), not asyncio.timeout's task cancel
                response = await http.post(
                    self._target, self._head, data, max_body=MAX_ANSWER_BYTES, timeout=self.timeout_s
                )
            except TimeoutError:  # the per-request timeout (before OSError: TimeoutError is one)
                if last:
                    raise ChatTimeout(f"request timed out after {self.timeout_s:g} s") from None
                await asyncio.sleep(backoff_s(retry, None))
                continue
            except (OSError, HttpProtocolError) as err:
                if last:
                    raise ChatConnectionError(f"cannot connect: {_describe(err)}", os_cause(err)) from err
                await asyncio.sleep(backoff_s(retry, None))
                continue
            status, raw = response.status, response.body
            if 200 <= status < 300:
                if response.truncated:
                    raise EndpointResponseError(f"the answer is larger than {MAX_ANSWER_BYTES >> 20} MB")
                return parse_completion(raw)
            if last or not should_retry(status, response.headers):
                raise ChatStatusError(status, _error_message(raw, status))
            await asyncio.sleep(backoff_s(retry, retry_after_s(response.headers)))
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises


def _describe(err: BaseException) -> str:
    return f"{type(err).__name__} ({str(err)[:200]})" if isinstance(err, HttpProtocolError) else type(err).__name__
