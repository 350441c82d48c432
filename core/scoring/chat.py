"""One home for chat-completion calls to OpenAI-compatible endpoints (policy and judge).

The request goes through the openai client's own ``post`` (its retries with backoff honouring ``Retry-After``, its
timeouts and error types), with a body that is already plain JSON. That skips the SDK's per-call walk of the
typed request parameters, which bench/engine.py measured at ~1.5 ms of CPU per call — a third of the engine's
CPU per rollout when hundreds of requests are in flight.

The client builds the response object without validating it, so what comes back is checked here: a body that is
not a chat completion (a server-sent event stream, invalid UTF-8, JSON of another shape) raises
:class:`EndpointResponseError` with one line, and token counts that are not sane integers are read as 0.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from svgagent.core.scoring.errors import EndpointResponseError

if TYPE_CHECKING:  # openai is imported by the calls that use it (importing it takes most of a second)
    import openai
    from openai.types.chat import ChatCompletion

MAX_TOKEN_COUNT = 10**9  # larger "counts" are not counts: read as 0


async def chat_completion(client: openai.AsyncOpenAI | Any, **body: Any) -> ChatCompletion | Any:
    """POST /chat/completions with ``body`` (model, messages, temperature, … and any extra fields).

    ``client`` is an ``openai.AsyncOpenAI``, or any object with an async ``complete_chat(body)`` that does the
    same (the engine's aiohttp client in core/chat_http.py): its answer has the same attribute shape."""
    clean = {k: v for k, v in body.items() if v is not None}
    complete_chat = getattr(client, "complete_chat", None)
    if complete_chat is not None:
        return await complete_chat(clean)
    from openai.types.chat import ChatCompletion

    try:
        response = await client.post("/chat/completions", body=clean, cast_to=ChatCompletion)
    except UnicodeDecodeError:
        raise EndpointResponseError("the answer is not valid UTF-8") from None
    except RecursionError:
        raise EndpointResponseError("the answer is JSON nested too deeply to read") from None
    except ValueError as err:  # JSON the decoder refuses (e.g. a number with thousands of digits)
        raise EndpointResponseError(f"the answer is not readable JSON ({str(err)[:120]})") from None
    return checked(response)


def checked(response: Any) -> ChatCompletion:
    """``response`` when it has the shape of a chat completion (choices with messages); raises otherwise."""
    from openai.types import CompletionUsage
    from openai.types.chat import ChatCompletion, ChatCompletionMessage

    if isinstance(response, str):
        head = response.lstrip()[:40]
        if head.startswith(("data:", "event:")):
            raise EndpointResponseError("the answer is a server-sent event stream, not a chat completion")
        raise EndpointResponseError(f"the answer is not JSON (it starts {head!r})")
    if not isinstance(response, ChatCompletion):
        raise EndpointResponseError(f"the answer is not a chat completion (a JSON {type(response).__name__})")
    choices = response.choices
    if not isinstance(choices, list):
        raise EndpointResponseError("the answer's 'choices' is not a list")
    for choice in choices:
        message = getattr(choice, "message", None)
        if not isinstance(message, ChatCompletionMessage):
            raise EndpointResponseError("a choice in the answer has no message object")
        if message.content is not None and not isinstance(message.content, str):
            raise EndpointResponseError("a message in the answer has content that is not text")
    usage = response.usage
    if usage is not None and not isinstance(usage, CompletionUsage):
        response.usage = usage = None
    if usage is not None:
        for name in ("prompt_tokens", "completion_tokens"):
            value = getattr(usage, name, None)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKEN_COUNT:
                setattr(usage, name, 0)
    return response
