"""Benchmark `svgagent serve`'s memory and settling under hostile load: peak RSS of the server process.

    .venv/bin/python bench/serve_rss.py [--python PATH] [--bodies 600] [--hostile 200]

Two cases, each on a fresh `svgagent serve` process (the command a user runs; ``--python`` picks the interpreter,
and so the svgagent, that runs it — e.g. another checkout's venv for a before/after figure):

1. **queued bodies**: ``--bodies`` /init bodies of ~0.9 MB each, posted 16 at a time, against a policy that never
   answers (every accepted rollout stays in memory). Printed: how many were accepted (200) and refused (429), and
   the server's peak RSS (VmHWM).
2. **hostile answers**: ``--hostile`` /init whose policy answers are hostile (usage counts of 10**30, a JSON object
   as finish_reason, a lone surrogate in the content) or good, in turn. Printed: how many settled (the server holds
   none running or queued) within 60 s, how many the gateway heard a status for, the peak RSS, and whether stderr
   was all JSON lines.

The policy (and the gateway the statuses go to) is tests/hostile_policy.py, on loopback in this process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
from _report import report

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from hostile_policy import HostilePolicy, hostile_policy  # noqa: E402 - the tests' hostile endpoint
from serve_support import init_body  # noqa: E402 - the /init bodies the tests send

HOSTILE_MODELS = ("overflow", "dict-finish", "surrogate", "good")
SETTLE_S = 60.0


def peak_rss_mb(pid: int) -> float:
    """The process's peak resident set (VmHWM), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def start_serve(python: str, tmp: Path, name: str, gateway: str) -> tuple[subprocess.Popen[str], str]:
    env = {
        **os.environ,
        "SVGAGENT_HOME": str(tmp / f"home-{name}"),
        "XDG_CONFIG_HOME": str(tmp / "cfg"),
        "PYTHONDONTWRITEBYTECODE": "1",  # another checkout is run read-only
    }
    env.pop("FIREWORKS_API_KEY", None)
    cmd = [python, "-m", "svgagent.tui.cli.main", "serve", "--port", "0", "--json", "--max-retries", "0"]
    cmd += ["--gateway-url", gateway, "--grace", "0", "--store", str(tmp / f"{name}.db")]
    with (tmp / f"{name}.stderr").open("w") as err:  # a file: a pipe nobody drains would stop the server when full
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True, env=env, cwd=tmp)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        proc.wait(timeout=60)
        raise SystemExit(f"serve did not start: {(tmp / f'{name}.stderr').read_text()[-2000:]}")
    return proc, json.loads(line)["url"]


async def stop(proc: subprocess.Popen[str], policy: HostilePolicy, tmp: Path, name: str) -> str:
    """SIGTERM, let the held policy calls go, and wait; its stderr."""
    proc.send_signal(signal.SIGTERM)
    policy.release()
    await asyncio.to_thread(proc.communicate, timeout=300)
    return (tmp / f"{name}.stderr").read_text()


def big_body(policy_url: str, i: int) -> bytes:
    body = init_body(policy_url, f"big-{i}", row=i % 3, model="silent", row_id=f"row_{i % 50}")
    for k in range(4):
        body["messages"].insert(0, {"role": "system", "content": chr(ord("a") + k) * 200_000})
    body["messages"].insert(0, {"role": "system", "content": "e" * 100_000})
    return json.dumps(body).encode()


async def queued_bodies(python: str, tmp: Path, n: int) -> dict[str, Any]:
    async with hostile_policy() as policy:
        proc, url = start_serve(python, tmp, "queued", policy.url)
        codes: dict[int, int] = {}
        size = len(big_body(policy.url, 0))
        try:
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=16)) as session:
                slots = asyncio.Semaphore(16)  # a body is made when it can be sent, not all of them up front

                async def post(i: int) -> None:
                    async with slots:
                        body = big_body(policy.url, i)
                        headers = {"Content-Type": "application/json"}
                        async with session.post(f"{url}/init", data=body, headers=headers) as resp:
                            await resp.read()
                            codes[resp.status] = codes.get(resp.status, 0) + 1

                t0 = time.perf_counter()
                await asyncio.gather(*(post(i) for i in range(n)))
                wall = time.perf_counter() - t0
                await asyncio.sleep(1.0)  # the accepted rollouts parsed and queued
                peak = peak_rss_mb(proc.pid)
        finally:
            err = await stop(proc, policy, tmp, "queued")
    return {"body_kb": size / 1024, "codes": codes, "peak_mb": peak, "post_s": wall, "stderr_tail": err[-300:]}


async def hostile_burst(python: str, tmp: Path, n: int) -> dict[str, Any]:
    async with hostile_policy() as policy:
        proc, url = start_serve(python, tmp, "hostile", policy.url)
        try:
            async with aiohttp.ClientSession() as session:
                for i in range(n):
                    model = HOSTILE_MODELS[i % len(HOSTILE_MODELS)]
                    body = init_body(policy.url, f"hostile-{i}", row=i % 3, model=model, row_id=f"row_{i % 50}")
                    async with session.post(f"{url}/init", json=body) as resp:
                        assert resp.status == 200, await resp.text()
                t0 = time.perf_counter()
                health: dict[str, Any] = {}
                while time.perf_counter() - t0 < SETTLE_S:
                    async with session.get(f"{url}/") as resp:
                        health = await resp.json()
                    if health["running"] == 0 and health["queued"] == 0:
                        break
                    await asyncio.sleep(0.1)
                settle_s = time.perf_counter() - t0
                peak = peak_rss_mb(proc.pid)
                heard = sum(policy.statuses.values())
        finally:
            err = await stop(proc, policy, tmp, "hostile")
    not_json = 0
    for line in err.splitlines():
        try:
            json.loads(line)
        except ValueError:
            not_json += 1
    return {
        "settled": n - health.get("running", 0) - health.get("queued", 0),
        "stored": health.get("stored", 0),
        "heard": heard,
        "settle_s": settle_s,
        "peak_mb": peak,
        "stderr_lines_not_json": not_json,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", default=sys.executable, help="the interpreter (and so the svgagent) to run serve")
    parser.add_argument("--bodies", type=int, default=600, help="~0.9 MB /init bodies against a silent policy")
    parser.add_argument("--hostile", type=int, default=200, help="/init with hostile (and good) policy answers")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        queued = asyncio.run(queued_bodies(args.python, Path(tmp), args.bodies))
        print(
            f"queued bodies: {args.bodies} x {queued['body_kb']:.0f} KB posted in {queued['post_s']:.1f} s; "
            f"answers {dict(sorted(queued['codes'].items()))}; serve peak RSS {queued['peak_mb']:.0f} MB"
        )
        burst = asyncio.run(hostile_burst(args.python, Path(tmp), args.hostile))
        print(
            f"hostile answers: {burst['settled']} of {args.hostile} settled in {burst['settle_s']:.1f} s, "
            f"{burst['stored']} stored, {burst['heard']} statuses logged; serve peak RSS {burst['peak_mb']:.0f} MB; "
            f"{burst['stderr_lines_not_json']} stderr lines not JSON"
        )
    report(
        {
            f"serve peak RSS MB, {args.bodies} queued ~0.9 MB bodies": round(queued["peak_mb"]),
            f"serve /init accepted of {args.bodies} ~0.9 MB bodies": queued["codes"].get(200, 0),
            f"serve peak RSS MB, {args.hostile} hostile answers": round(burst["peak_mb"]),
            f"serve rollouts settled of {args.hostile} hostile answers": burst["settled"],
        }
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
