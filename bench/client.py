"""Benchmark what one chat request costs this process in CPU: the engine's client (openai.AsyncOpenAI on the
bounded client — httpx2's API over aiohttp's connections — as core/policy builds it, through
svgagent.core.scoring.chat: the answer read and checked), against a bare httpx2 POST + json.loads on httpx2's own
pool and a bare aiohttp POST + json.loads — all against the simulator in its own process.

    .venv/bin/python bench/client.py [--n 300]

A rollout makes two requests, each waiting seconds on a remote model: this says what the client stack adds to the
engine's CPU per rollout (bench/engine.py), not what a user waits for.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Awaitable, Callable

import aiohttp
import httpx2
from _report import report
from engine import start_simulator

from svgagent.core.scoring.chat import chat_completion
from svgagent.core.scoring.endpoint import endpoint_client

MESSAGES = [{"role": "user", "content": "Draw a red circle.\n1. There is a circle.\n2. The circle is red."}]


async def _cpu_per_request(request: Callable[[], Awaitable[object]], n: int) -> tuple[float, float]:
    """CPU seconds per request: one at a time, then n at once."""
    for _ in range(20):
        await request()
    c0 = time.process_time()
    for _ in range(n):
        await request()
    sequential = (time.process_time() - c0) / n
    c0 = time.process_time()
    await asyncio.gather(*[request() for _ in range(n)])
    return sequential, (time.process_time() - c0) / n


async def measure(url: str, n: int) -> dict[str, tuple[float, float]]:
    out: dict[str, tuple[float, float]] = {}
    client = endpoint_client(url, "bench", timeout_s=60, max_retries=0, connections=n)
    async with client:
        out["engine client"] = await _cpu_per_request(
            lambda: chat_completion(client, model="bench", messages=MESSAGES), n
        )
    body = {"model": "bench", "messages": MESSAGES}
    headers = {"Authorization": "Bearer bench"}
    limits = httpx2.Limits(max_connections=n, max_keepalive_connections=n)
    async with httpx2.AsyncClient(limits=limits, timeout=60) as http:

        async def bare_httpx2() -> object:
            return json.loads((await http.post(f"{url}/chat/completions", json=body, headers=headers)).content)

        out["bare httpx2"] = await _cpu_per_request(bare_httpx2, n)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=n)) as session:

        async def bare_aiohttp() -> object:
            async with session.post(f"{url}/chat/completions", json=body, headers=headers) as response:
                return json.loads(await response.read())

        out["bare aiohttp"] = await _cpu_per_request(bare_aiohttp, n)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=300, help="requests per measurement")
    args = parser.parse_args()
    proc, url = start_simulator(0.0)
    try:
        r = asyncio.run(measure(url, args.n))
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    figures: dict[str, float] = {}
    labels = {
        "engine client": "the engine's client (openai on the bounded client: httpx2 over aiohttp, answer checked)",
        "bare httpx2": "a bare httpx2 POST + json.loads",
        "bare aiohttp": "a bare aiohttp POST + json.loads",
    }
    for name, (one, many) in r.items():
        print(
            f"CPU per chat request, {labels[name]}: {1000 * one:.2f} ms one at a time, {1000 * many:.2f} ms with "
            f"{args.n} in flight"
        )
        figures[f"client CPU ms/req: {name}, 1 in flight"] = round(1000 * one, 2)
        figures[f"client CPU ms/req: {name}, {args.n} in flight"] = round(1000 * many, 2)
    report(figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
