"""A loopback policy endpoint that answers as a hostile or broken one would, for the rollout-server tests and
bench/serve_rss.py. Which answer a request gets is chosen by the ``model`` it names:

- ``overflow``: a valid completion whose ``usage.prompt_tokens`` is 10**30 (an integer no SQLite column holds);
- ``dict-finish``: a valid completion whose ``finish_reason`` is a JSON object;
- ``surrogate``: a valid completion whose content holds a lone surrogate (``\\ud800``: JSON, not UTF-8);
- ``silent``: the request is read and never answered (the connection stays open);
- ``slow-N``: a good answer after N seconds;
- anything else: a good answer with a small SVG.

Every request is counted per model (``requests``), so a test can tell that a policy was asked and answered. It also
takes status logs (``POST /logs``: counted by status code in ``statuses``), so it can stand in for the tracing
gateway where only the statuses matter (bench/serve_rss.py).
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from aiohttp import web

GOOD_SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><rect width="8" height="8" fill="red"/></svg>'


def completion(*, finish_reason: Any = "stop", usage: dict[str, Any] | None = None, content: str | None = None) -> dict:
    return {
        "id": "chatcmpl-hostile",
        "object": "chat.completion",
        "created": 0,
        "model": "hostile",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": GOOD_SVG if content is None else content},
                "finish_reason": finish_reason,
            }
        ],
        "usage": usage if usage is not None else {"prompt_tokens": 12, "completion_tokens": 34, "total_tokens": 46},
    }


class HostilePolicy:
    """The endpoint's state: requests seen per model, and the connections held open by ``silent``."""

    def __init__(self) -> None:
        self.requests: Counter[str] = Counter()
        self.answered: Counter[str] = Counter()
        self.statuses: Counter[int] = Counter()
        self._released = asyncio.Event()
        self.url = ""

    def release(self) -> None:
        """End every held ``silent`` request (with a 503), so the server under test can shut down quickly."""
        self._released.set()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        model = str(body.get("model", ""))
        self.requests[model] += 1
        if model == "silent":
            await self._released.wait()
            return web.json_response({"error": {"message": "released"}}, status=503)
        if model.startswith("slow-"):
            await asyncio.sleep(float(model.removeprefix("slow-")))
        if model == "overflow":
            answer = completion(usage={"prompt_tokens": 10**30, "completion_tokens": -(10**25), "total_tokens": 1})
        elif model == "dict-finish":
            answer = completion(finish_reason={"type": "stop", "nested": {"x": [1, 2, 3]}})
        elif model == "surrogate":
            answer = completion(content=GOOD_SVG + " \ud800 done")
        else:
            answer = completion()
        self.answered[model] += 1
        # json.dumps, not web.json_response's default: the big integers must reach the wire as integers
        return web.Response(body=json.dumps(answer).encode(), content_type="application/json")

    async def handle_log(self, request: web.Request) -> web.StreamResponse:
        record = await request.json()
        status = record.get("status") if isinstance(record, dict) else None
        self.statuses[status.get("code") if isinstance(status, dict) else -1] += 1
        return web.json_response({"ok": True})


@asynccontextmanager
async def hostile_policy() -> AsyncIterator[HostilePolicy]:
    """The endpoint on 127.0.0.1 (a free port), on the running loop; ``.url`` is its base URL: it answers
    ``POST <any path>/chat/completions``."""
    policy = HostilePolicy()
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/{path:(.*/)?chat/completions}", policy.handle)  # any prefix: model_base_url's path too
    app.router.add_post("/logs", policy.handle_log)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5, handler_cancellation=True)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    policy.url = f"http://127.0.0.1:{port}"
    try:
        yield policy
    finally:
        policy.release()
        await runner.cleanup()
