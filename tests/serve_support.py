"""Helpers for the rollout-server tests: /init bodies shaped like eval-protocol's, and a server on a tmp store."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp

from svgagent.core.config.settings import load_settings
from svgagent.core.run.prompt import format_prompt
from svgagent.core.scoring.render import Renderer
from svgagent.core.serve.server import RolloutServer
from svgagent.core.serve.wiring import ServeOptions, rollout_server
from svgagent.core.store.run_store import Store

ID_NAMES = ("rollout_id", "invocation_id", "experiment_id", "run_id", "row_id")
REQUEST_KEY = "request-key-from-eval-protocol"
ROWS = [
    (
        "A red fox sitting under a crescent moon.",
        ["the fox is orange-red", "a crescent moon is visible", "the fox is sitting"],
    ),
    ("A lighthouse on a rocky coast at dusk.", ["a lighthouse stands on rocks", "the sky shows dusk colours"]),
    (
        "Three balloons tied to a bench.",
        ["there are exactly three balloons", "a bench is visible", "strings tie the balloons to the bench"],
    ),
]


def ids_for(
    rollout_id: str,
    *,
    experiment_id: str = "exp-1",
    run_id: str = "run-1",
    row_id: str = "row_0",
    invocation_id: str = "inv-1",
) -> dict[str, str]:
    return {
        "invocation_id": invocation_id,
        "experiment_id": experiment_id,
        "rollout_id": rollout_id,
        "run_id": run_id,
        "row_id": row_id,
    }


def init_body(
    gateway: str,
    rollout_id: str,
    *,
    row: int = 0,
    model: str = "simulated-policy",
    api_key: str | None = REQUEST_KEY,
    **id_overrides: str,
) -> dict[str, Any]:
    """What eval-protocol's build_init_request sends for one row (model_base_url path-encoded as it does)."""
    ids = ids_for(rollout_id, row_id=id_overrides.pop("row_id", f"row_{row}"), **id_overrides)
    prompt, requirements = ROWS[row % len(ROWS)]
    url = gateway + "".join(f"/{name}/{ids[name]}" for name in ID_NAMES)
    body: dict[str, Any] = {
        "completion_params": {"model": model, "temperature": 0.7, "max_tokens": 2048},
        "messages": [{"role": "user", "content": format_prompt(prompt, requirements)}],
        "tools": None,
        "model_base_url": url,
        "metadata": ids,
        "api_key": api_key,
    }
    return body


async def post_init(
    session: aiohttp.ClientSession, server_url: str, body: Any, *, raw: bytes | None = None
) -> tuple[int, dict[str, Any], aiohttp.typedefs.LooseHeaders]:
    kwargs: dict[str, Any] = {"data": raw} if raw is not None else {"json": body}
    async with session.post(f"{server_url}/init", **kwargs) as resp:
        return resp.status, await resp.json(content_type=None), resp.headers


@asynccontextmanager
async def serving(
    store: Store, renderer: Renderer, *, settings: dict[str, Any] | None = None, **options: Any
) -> AsyncIterator[RolloutServer]:
    """A started server on port 0 writing to ``store``, sharing ``renderer``."""
    config = load_settings(**{"store": str(store.path), "max_retries": 0, "render_size": 64, **(settings or {})})
    async with rollout_server(
        config, store, ServeOptions(port=0, status_retries=1, **options), renderer=renderer
    ) as server:
        yield server


async def wait_for(predicate: Any, *, timeout: float = 30.0) -> None:
    """Poll ``predicate`` (no sleeps in assertions: this only bounds how long a broken server can hang a test)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.01)
