"""Benchmark `svgagent serve`: rollouts/s through the server vs the ideal, and the server's CPU per rollout.

    .venv/bin/python bench/serve.py [--n 800] [--concurrency 16 64] [--latency 0.2]

Three processes, as in production: the tracing-gateway simulator with the policy simulator behind it (fixed policy
latency), `svgagent serve` itself (the command a user runs), and this driver, which posts eval-protocol-shaped
/init bodies and waits until the gateway has every rollout's status. With C rollouts at a time and one policy call each, no
server can beat ceil(N / C) * latency: wall / ideal is the server's overhead. The CPU figures are the server
process's own (user + system, from /proc) per rollout — policy call, SVG extraction, store writes, status log,
access log — and, separately, its render workers' (target for the server: < 2 ms per rollout). Also printed: how
many rollouts each store transaction held, and the 1-minute load average when the measurement ended (the machine's
other work inflates CPU figures too: compare runs at similar load).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
from _report import children_of, cpu_seconds, report

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from serve_support import init_body  # noqa: E402 - the same /init bodies the tests send


def start(cmd: list[str], env: dict[str, str]) -> tuple[subprocess.Popen[str], dict[str, str]]:
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    try:
        return proc, json.loads(line)
    except ValueError:
        proc.kill()
        raise SystemExit(f"{cmd[2]} did not start: {line!r}") from None


async def drive(server: str, gateway: str, n: int, experiment: str) -> tuple[float, float]:
    """Post n /init (all at once, as a trainer's batch) and wait until the server has ended them all; the wall
    time, and how many rollouts each store transaction held."""
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=256)) as session:
        async with session.get(f"{server}/") as resp:
            before = await resp.json()
        async with session.get(f"{gateway}/_gw/stats") as resp:
            logged_before = (await resp.json())["logs_posted"]
        t0 = time.perf_counter()

        async def post(i: int) -> None:
            body = init_body(gateway, f"{experiment}-{i}", row=i % 3, row_id=f"row_{i % 100}", experiment_id=experiment)
            async with session.post(f"{server}/init", json=body) as resp:
                assert resp.status == 200, await resp.text()
                await resp.read()

        await asyncio.gather(*(post(i) for i in range(n)))
        while True:  # the gateway counts the statuses logged (asking the server would bill it for the polls)
            async with session.get(f"{gateway}/_gw/stats") as resp:
                logged = (await resp.json())["logs_posted"]
            if logged - logged_before >= n:
                wall = time.perf_counter() - t0
                break
            await asyncio.sleep(0.02)
        async with session.get(f"{server}/") as resp:
            health = await resp.json()
        assert health["errors"] == before["errors"] and health["finished"] - before["finished"] == n, health
        batched = (health["stored"] - before["stored"]) / max(
            1, health["store_transactions"] - before["store_transactions"]
        )
        return wall, batched


def measure(concurrency: int, n: int, latency: float, gateway: str, tmp: Path) -> dict[str, float]:
    env = {**os.environ, "SVGAGENT_HOME": str(tmp / f"home-{concurrency}"), "XDG_CONFIG_HOME": str(tmp / "cfg")}
    env.pop("FIREWORKS_API_KEY", None)
    cmd = [
        sys.executable,
        "-m",
        "svgagent.tui.cli.main",
        "serve",
        "--port",
        "0",
        "--json",
        "--concurrency",
        str(concurrency),
        "--max-retries",
        "0",
    ]
    proc, line = start(cmd, env)
    try:
        url = line["url"]
        asyncio.run(drive(url, gateway, 2 * concurrency, f"warmup-{concurrency}"))  # render pool up, caches warm
        workers = children_of(proc.pid)
        cpu0, wcpu0 = cpu_seconds(proc.pid), sum(cpu_seconds(p) for p in workers)
        wall, batched = asyncio.run(drive(url, gateway, n, f"bench-{concurrency}"))
        cpu, wcpu = cpu_seconds(proc.pid) - cpu0, sum(cpu_seconds(p) for p in workers) - wcpu0
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    ideal = math.ceil(n / concurrency) * latency
    return {
        "wall": wall,
        "ideal": ideal,
        "rate": n / wall,
        "ideal_rate": n / ideal,
        "cpu_ms": 1000 * cpu / n,
        "render_cpu_ms": 1000 * wcpu / n,
        "batched": batched,
        "load": os.getloadavg()[0],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=800, help="rollouts per measurement")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--latency", type=float, default=0.2, help="simulated policy latency (s)")
    args = parser.parse_args()
    gateway_proc, urls = start(
        [sys.executable, "-m", "svgagent.core.sim.tracing_gateway", "--policy-latency", str(args.latency)],
        dict(os.environ),
    )
    figures: dict[str, float] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            print(
                f"{'rollouts':>8} {'conc':>5} {'wall s':>7} {'ideal s':>7} {'ratio':>6} {'rollouts/s':>10} "
                f"{'ideal/s':>8} {'server CPU ms':>13} {'render CPU ms':>13} {'per store tx':>12} {'load':>5}"
            )
            for c in args.concurrency:
                r = measure(c, args.n, args.latency, urls["gateway"], Path(tmp))
                print(
                    f"{args.n:>8} {c:>5} {r['wall']:>7.2f} {r['ideal']:>7.2f} {r['wall'] / r['ideal']:>6.2f} "
                    f"{r['rate']:>10.1f} {r['ideal_rate']:>8.1f} {r['cpu_ms']:>13.2f} {r['render_cpu_ms']:>13.2f} "
                    f"{r['batched']:>12.1f} {r['load']:>5.1f}"
                )
                figures[f"serve wall/ideal, C={c}"] = round(r["wall"] / r["ideal"], 2)
                figures[f"serve rollouts/s, C={c}"] = round(r["rate"], 1)
                figures[f"serve CPU ms/rollout, C={c}"] = round(r["cpu_ms"], 2)
        report(figures)
    finally:
        gateway_proc.terminate()
        gateway_proc.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
