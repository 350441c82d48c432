"""A loopback stand-in for the Fireworks tracing gateway, in the shapes eval-protocol's client reads.

The remote-rollout loop of the SVG-agent quickstart has three parties: eval-protocol (it posts ``/init`` to the
rollout server, then polls the gateway), the rollout server (it calls the policy through the gateway and logs the
rollout's terminal status there) and this gateway. Endpoints, as eval-protocol 0.3.33's ``RemoteRolloutProcessor``,
``FireworksTracingAdapter`` and ``FireworksTracingHttpHandler`` use them:

- ``POST /rollout_id/{r}/invocation_id/{i}/experiment_id/{e}/run_id/{u}/row_id/{w}[/encoded_base_url/{b64}]``
  ``/chat/completions`` (also under ``…/v1/chat/completions``): the chat proxy. The body is forwarded to the
  policy (the project's simulator, or the loopback URL in ``encoded_base_url``) with the caller's Authorization;
  the answer goes back unchanged (status, body, ``Retry-After``) and a 200 answer is recorded as a trace tagged
  ``rollout_id:…``, ``invocation_id:…``, ``experiment_id:…``, ``run_id:…``, ``row_id:…``.
- ``POST /logs`` and ``POST /v1/logs``: a log record ``{program, status, message, tags, extras}``.
- ``GET /logs`` / ``GET /v1/logs?tags=…&tags=…``: ``{"entries": [...]}``, newest first, entries carrying every tag.
- ``GET /v1/status?rollout_id=…``: ``{"rollout_id", "status": {"code"} | null, "extras"}`` from the newest log
  entry of that rollout that has a status code.
- ``GET /v1/traces/pointwise?tags=…``: ``{"traces": [...]}`` (``id``, ``tags``, ``input.messages``, ``output``).
- ``GET /_gw/stats`` (no auth): counters and every distinct Authorization value seen, for the tests.

Every route but ``/_gw/stats`` wants ``Authorization: Bearer <something>`` (401 otherwise), as the real gateway.
Its base URL is ``http://localhost:PORT``: eval-protocol adds the rollout path to a ``model_base_url`` only when it
starts with ``http://localhost`` (or names the Fireworks tracing host).
"""

from __future__ import annotations

import asyncio
import base64
import copy
import itertools
import json
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from aiohttp import web

from svgagent.core.server_socket import listen
from svgagent.core.sim.background import BackgroundLoop, BackgroundServer
from svgagent.core.urls import is_loopback_host

TAG_NAMES = ("rollout_id", "invocation_id", "experiment_id", "run_id", "row_id")
_PROXY_ROUTE = (
    "/rollout_id/{rollout_id}/invocation_id/{invocation_id}/experiment_id/{experiment_id}/run_id/{run_id}"
    "/row_id/{row_id}"
)
_CHAT = "{chat:(v1/)?chat/completions}"
_PASSED_HEADERS = ("Content-Type", "Retry-After", "x-ratelimit-remaining-requests")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _is_loopback(url: str) -> bool:
    return is_loopback_host(urlsplit(url).hostname or "")


class TracingGateway(BackgroundServer):
    """The simulated gateway (see the module docstring); ``policy_base_url`` is where chat requests go."""

    def __init__(self, policy_base_url: str, *, on_log: Callable[[dict[str, Any]], None] | None = None) -> None:
        """``on_log``: called with each log entry as it is received, before it is kept (on the gateway's thread:
        a test checks there what was true when the status arrived)."""
        self.policy_base_url = policy_base_url.rstrip("/")
        self.on_log = on_log
        self._lock = threading.Lock()
        self._logs: list[dict[str, Any]] = []
        self._traces: list[dict[str, Any]] = []
        self._ids = itertools.count(1)
        self._stats: dict[str, Any] = {
            "chat": 0,
            "chat_ok": 0,
            "logs_posted": 0,
            "status_polls": 0,
            "log_searches": 0,
            "trace_fetches": 0,
            "unauthorized": 0,
        }
        self._authorizations: set[str] = set()
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self._background = BackgroundLoop("svgagent-tracing-gateway")
        self.base_url: str | None = None

    # ------------------------------------------------------------------------------------------ for the tests
    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {**copy.deepcopy(self._stats), "authorizations": sorted(self._authorizations)}

    def logs(self, rollout_id: str) -> list[dict[str, Any]]:
        """The log entries tagged ``rollout_id:<rollout_id>``, oldest first."""
        tag = f"rollout_id:{rollout_id}"
        with self._lock:
            return [copy.deepcopy(e) for e in self._logs if tag in e["tags"]]

    def status_code(self, rollout_id: str) -> int | None:
        with self._lock:
            return self._status(rollout_id)

    def traces(self, rollout_id: str) -> list[dict[str, Any]]:
        tag = f"rollout_id:{rollout_id}"
        with self._lock:
            return [copy.deepcopy(t) for t in self._traces if tag in t["tags"]]

    # ------------------------------------------------------------------------------------------------ serving
    def _make_app(self) -> web.Application:
        app = web.Application(client_max_size=16 * 1024 * 1024)
        app.router.add_post(f"{_PROXY_ROUTE}/{_CHAT}", self._handle_chat)
        app.router.add_post(f"{_PROXY_ROUTE}/encoded_base_url/{{encoded}}/{_CHAT}", self._handle_chat)
        for prefix in ("", "/v1"):
            app.router.add_post(f"{prefix}/logs", self._handle_post_log)
            app.router.add_get(f"{prefix}/logs", self._handle_search_logs)
        app.router.add_get("/v1/status", self._handle_status)
        app.router.add_get("/v1/traces/pointwise", self._handle_traces)
        app.router.add_get("/_gw/stats", self._handle_stats)
        return app

    async def start_async(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Serve on the running loop; returns ``http://localhost:PORT``."""
        if self._runner is not None:
            raise RuntimeError("the gateway is already running")
        self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
        runner = web.AppRunner(self._make_app(), handler_cancellation=True, shutdown_timeout=1.0, access_log=None)
        await runner.setup()
        try:
            bound_port = await listen(runner, host, port)
        except BaseException:
            await self._session.close()
            raise
        self._runner = runner
        self.base_url = f"http://localhost:{bound_port}"
        return self.base_url

    async def stop_async(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._session is not None:
            await self._session.close()
            self._session = None

    # ----------------------------------------------------------------------------------------------- handlers
    def _authorized(self, request: web.Request) -> bool:
        header = request.headers.get("Authorization", "")
        scheme, _, key = header.partition(" ")
        with self._lock:
            if header:
                self._authorizations.add(header)
            if scheme.lower() != "bearer" or not key.strip():
                self._stats["unauthorized"] += 1
                return False
        return True

    @staticmethod
    def _unauthorized() -> web.Response:
        return web.json_response({"detail": "missing bearer token"}, status=401)

    async def _handle_chat(self, request: web.Request) -> web.StreamResponse:
        with self._lock:
            self._stats["chat"] += 1
        if not self._authorized(request):
            return self._unauthorized()
        ids = {name: request.match_info[name] for name in TAG_NAMES}
        target = self.policy_base_url
        if "encoded" in request.match_info:
            try:
                target = base64.urlsafe_b64decode(request.match_info["encoded"].encode()).decode().rstrip("/")
            except (ValueError, UnicodeDecodeError):
                return web.json_response({"detail": "encoded_base_url is not URL-safe base64"}, status=400)
            if not _is_loopback(target):
                return web.json_response({"detail": "the simulated gateway forwards to loopback only"}, status=400)
        body = await request.read()
        assert self._session is not None
        headers = {"Authorization": request.headers["Authorization"], "Content-Type": "application/json"}
        try:
            async with self._session.post(
                f"{target}/chat/completions", data=body, headers=headers, timeout=aiohttp.ClientTimeout(total=None)
            ) as upstream:
                payload = await upstream.read()
                status = upstream.status
                passed = {h: upstream.headers[h] for h in _PASSED_HEADERS if h in upstream.headers}
        except aiohttp.ClientError as err:
            return web.json_response({"detail": f"policy unreachable: {type(err).__name__}"}, status=502)
        if status == 200:
            self._record_trace(ids, body, payload)
        return web.Response(body=payload, status=status, headers=passed)

    def _record_trace(self, ids: dict[str, str], request_body: bytes, payload: bytes) -> None:
        try:
            sent = json.loads(request_body)
            answer = json.loads(payload)["choices"][0]["message"]
        except (ValueError, KeyError, IndexError, TypeError):
            return
        trace: dict[str, Any] = {
            "id": f"trace-{next(self._ids)}",
            "name": "chat.completions",
            "timestamp": _now(),
            "tags": [f"{name}:{value}" for name, value in ids.items()],
            "input": {"messages": sent.get("messages", [])},
            "output": {"role": answer.get("role", "assistant"), "content": answer.get("content")},
        }
        if sent.get("tools"):
            trace["input"]["tools"] = sent["tools"]
        with self._lock:
            self._stats["chat_ok"] += 1
            self._traces.append(trace)

    async def _handle_post_log(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return self._unauthorized()
        try:
            record = await request.json()
        except ValueError:
            return web.json_response({"detail": "the body is not JSON"}, status=400)
        tags = record.get("tags") if isinstance(record, dict) else None
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            return web.json_response({"detail": "'tags' must be a list of strings"}, status=400)
        status = record.get("status")
        extras = record.get("extras") if isinstance(record.get("extras"), dict) else {}
        entry = {
            "timestamp": extras.get("timestamp") or _now(),
            "message": record.get("message"),
            "severity": extras.get("level", "INFO"),
            "tags": tags,
            "status": status if isinstance(status, dict) else None,
            "extras": extras,
            "program": record.get("program"),
            "received": time.monotonic(),
        }
        if self.on_log is not None:
            self.on_log(entry)
        with self._lock:
            self._stats["logs_posted"] += 1
            self._logs.append(entry)
        return web.json_response({"ok": True})

    def _tagged(
        self,
        request: web.Request,
        stat: str,
        items: list[dict[str, Any]],
        copy_out: Callable[[dict[str, Any]], dict[str, Any]],
    ) -> web.Response | list[dict[str, Any]]:
        """Copies of the newest ``items`` that carry every ``tags`` query value (at most ``limit``), or the error
        response of a request without a key or without tags; counts the request under ``stat``."""
        if not self._authorized(request):
            return self._unauthorized()
        wanted = request.query.getall("tags", [])
        if not wanted:
            return web.json_response({"detail": "at least one tag is required"}, status=400)
        limit = _int(request.query.get("limit"), 100)
        with self._lock:
            self._stats[stat] += 1
            found = [item for item in reversed(items) if all(t in item["tags"] for t in wanted)][:limit]
            return [copy_out(item) for item in found]

    async def _handle_search_logs(self, request: web.Request) -> web.Response:
        found = self._tagged(
            request, "log_searches", self._logs, lambda entry: {k: v for k, v in entry.items() if k != "received"}
        )
        return found if isinstance(found, web.Response) else web.json_response({"entries": found})

    def _status(self, rollout_id: str) -> int | None:
        tag = f"rollout_id:{rollout_id}"
        for entry in reversed(self._logs):
            status = entry["status"]
            if tag in entry["tags"] and isinstance(status, dict) and isinstance(status.get("code"), int):
                return int(status["code"])
        return None

    async def _handle_status(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return self._unauthorized()
        rollout_id = request.query.get("rollout_id", "")
        if not rollout_id:
            return web.json_response({"detail": "rollout_id is required"}, status=400)
        with self._lock:
            self._stats["status_polls"] += 1
            code = self._status(rollout_id)
        return web.json_response(
            {"rollout_id": rollout_id, "status": None if code is None else {"code": code}, "extras": None}
        )

    async def _handle_traces(self, request: web.Request) -> web.Response:
        found = self._tagged(request, "trace_fetches", self._traces, copy.deepcopy)
        return found if isinstance(found, web.Response) else web.json_response({"traces": found})

    async def _handle_stats(self, request: web.Request) -> web.Response:
        return web.json_response(self.stats())


def _int(value: str | None, default: int) -> int:
    try:
        return max(1, int(value)) if value is not None else default
    except ValueError:
        return default


# ------------------------------------------------------------------------------------------------------- CLI
async def _serve_forever(args: Any) -> None:
    import signal

    from svgagent.core.sim.simulator import SimConfig, Simulator

    sim = None
    policy_url = args.policy_url
    if not policy_url:
        sim = Simulator(SimConfig(seed=args.seed, policy_latency_s=args.policy_latency))
        policy_url = await sim.start_async(args.host, 0)
    gateway = TracingGateway(policy_url)
    url = await gateway.start_async(args.host, args.port)
    print(json.dumps({"gateway": url, "policy": policy_url}), flush=True)
    done = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, done.set)
    try:
        await done.wait()
    finally:
        await gateway.stop_async()
        if sim is not None:
            await sim.stop_async()


def main(argv: list[str] | None = None) -> int:
    """``python -m svgagent.core.sim.tracing_gateway [--port P] [--policy-url URL | --policy-latency S]``: prints
    one JSON line ``{"gateway": URL, "policy": URL}`` once ready (with no ``--policy-url``, a policy simulator runs
    in the same process) and serves until SIGINT/SIGTERM."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m svgagent.core.sim.tracing_gateway")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--policy-url", help="forward chat requests here (default: a simulator in this process)")
    parser.add_argument("--policy-latency", type=float, default=0.0, help="the embedded simulator's latency, s")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    try:
        asyncio.run(_serve_forever(args))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main())
