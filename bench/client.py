"""Benchmark what one chat request costs this process in CPU: the engine's own client (core/chat_http.ChatClient on
core/http1's keep-alive connections, llhttp through httptools), the openai client on the aiohttp transport (through
svgagent.core.scoring.chat), the same client on its default httpx pool, and bare POSTs + json.loads on core/http1,
on httpcore's AsyncConnectionPool (the transport under httpx) and on aiohttp — all against the simulator in its own
process.

    .venv/bin/python bench/client.py [--n 300]

The engine spends most of its CPU here (see BENCHMARKS.md): at 256 rollouts in flight the ideal run needs about
1.6 ms of CPU per rollout for everything, and a rollout makes two requests.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Awaitable, Callable

import aiohttp
import httpcore
import openai
from _report import report
from engine import start_simulator

from svgagent.core.chat_http import ChatClient
from svgagent.core.http1 import Http1Client, Target
from svgagent.core.scoring.chat import chat_completion

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
    engine = ChatClient(url, "bench", max_retries=0)
    try:
        out["engine ChatClient"] = await _cpu_per_request(
            lambda: chat_completion(engine, model="bench", messages=MESSAGES), n
        )
    finally:
        await engine.close()
    engine_like = openai.AsyncOpenAI(
        base_url=url, api_key="bench", max_retries=0, http_client=openai.DefaultAioHttpClient()
    )  # as core.policy builds it
    default = openai.AsyncOpenAI(base_url=url, api_key="bench", max_retries=0)  # the httpx connection pool
    for name, client in (("openai+aiohttp", engine_like), ("openai+httpx pool", default)):
        async with client:
            out[name] = await _cpu_per_request(lambda c=client: chat_completion(c, model="bench", messages=MESSAGES), n)
    async with aiohttp.ClientSession() as session:

        async def raw() -> object:
            async with session.post(
                f"{url}/chat/completions",
                json={"model": "bench", "messages": MESSAGES},
                headers={"Authorization": "Bearer bench"},
            ) as response:
                return json.loads(await response.read())

        out["bare aiohttp"] = await _cpu_per_request(raw, n)
    body = json.dumps({"model": "bench", "messages": MESSAGES}).encode()
    fields = {"Content-Type": "application/json", "Authorization": "Bearer bench"}
    target = Target.parse(f"{url}/chat/completions")
    head, http = target.head(fields), Http1Client()
    try:

        async def bare_http1() -> object:
            return json.loads((await http.post(target, head, body, max_body=1 << 22)).body)

        out["bare http1"] = await _cpu_per_request(bare_http1, n)
    finally:
        await http.close()
    async with httpcore.AsyncConnectionPool(max_connections=n) as pool:
        listed = [
            (b"Host", target.authority.encode()),
            (b"Accept-Encoding", b"gzip, deflate"),
            *((k.encode(), v.encode()) for k, v in fields.items()),
            (b"Content-Length", b"%d" % len(body)),
        ]

        async def bare_httpcore() -> object:
            return json.loads(
                (await pool.request(b"POST", f"{url}/chat/completions", headers=listed, content=body)).content
            )

        out["bare httpcore"] = await _cpu_per_request(bare_httpcore, n)
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
        "engine ChatClient": "the engine's ChatClient on core/http1 (llhttp)",
        "openai+aiohttp": "the openai client on the aiohttp transport (as core.policy builds it)",
        "openai+httpx pool": "the openai client on its default httpx pool",
        "bare aiohttp": "a bare aiohttp POST + json.loads",
        "bare http1": "a bare core/http1 (llhttp) POST + json.loads",
        "bare httpcore": "a bare httpcore AsyncConnectionPool POST + json.loads",
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
