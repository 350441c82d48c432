"""Posting a rollout's status to the tracing gateway, as eval-protocol's ``FireworksTracingHttpHandler`` does.

The record is ``{program, status: {code, message, details}, message, tags: ["rollout_id:…", "experiment_id:…",
"run_id:…"], extras: {logger_name, level, timestamp, …}}``, POSTed to ``{gateway}/logs`` (a 404 is retried once at
``{gateway}/v1/logs``). Unlike a logging handler, the post is awaited and retried (connection errors, 5xx, 429:
three more tries with backoff), so a terminal status is not silently lost: eval-protocol would otherwise poll
until its timeout. The Authorization header follows :class:`~svgagent.core.serve.security.KeyPolicy`.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime
from typing import Any

from svgagent.core.ep_status import StatusCode, status_dict
from svgagent.core.http1 import Http1Client, HttpProtocolError
from svgagent.core.json_body import json_bytes
from svgagent.core.serve.policy_call import json_post
from svgagent.core.serve.security import KeyPolicy

log = logging.getLogger("svgagent.serve")
PROGRAM = "svgagent-serve"
RETRY_DELAYS_S = (0.2, 0.5, 1.0)


def log_record(
    code: StatusCode,
    message: str,
    *,
    rollout_id: str,
    experiment_id: str,
    run_id: str,
    extras: dict[str, Any] | None = None,
) -> dict[str, Any]:
    level = "ERROR" if code.is_error else "INFO"
    stamp = datetime.now(UTC).isoformat(timespec="microseconds")[:-6] + "Z"  # (strftime's %f…Z, at half the cost)
    return {
        "program": PROGRAM,
        "status": status_dict(code, message),
        "message": f"rollout {rollout_id}: {code.name.lower()}" + (f": {message}" if code.is_error else ""),
        "tags": [f"rollout_id:{rollout_id}", f"experiment_id:{experiment_id}", f"run_id:{run_id}"],
        "extras": {**(extras or {}), "logger_name": "svgagent.serve", "level": level, "timestamp": stamp},
    }


class StatusLogger:
    """Posts status records on pooled keep-alive connections (:mod:`svgagent.core.http1`, as the policy calls;
    ``await close()`` when done)."""

    def __init__(
        self, keys: KeyPolicy, *, timeout_s: float = 10.0, retry_delays_s: tuple[float, ...] = RETRY_DELAYS_S
    ) -> None:
        self.keys = keys
        self.timeout_s = timeout_s
        self.retry_delays_s = retry_delays_s
        self._http: Http1Client | None = None
        self.posted = 0
        self.lost = 0

    def _client(self) -> Http1Client:
        if self._http is None or self._http.closed:
            self._http = Http1Client(limit=64)
        return self._http

    async def close(self) -> None:
        if self._http is not None and not self._http.closed:
            await self._http.close()

    async def post(self, gateway: str, record: dict[str, Any], request_key: str | None) -> bool:
        """True once the gateway accepted the record; False (and a warning) when every try failed."""
        base = gateway.rstrip("/")
        key = self.keys.key_for(base, request_key)
        problem = ""
        for delay in (0.0, *self.retry_delays_s):
            if delay:
                await asyncio.sleep(delay)
            try:
                status = await self._send(f"{base}/logs", record, key)
                if status == 404:
                    status = await self._send(f"{base}/v1/logs", record, key)
            except (OSError, HttpProtocolError, ValueError) as err:  # TimeoutError is an OSError
                problem = f"{type(err).__name__}"
                continue
            if status < 300:
                self.posted += 1
                return True
            problem = f"HTTP {status}"
            if status < 500 and status != 429:
                break  # the gateway refuses it (e.g. 401): trying again will not help
        self.lost += 1
        tags = record.get("tags") or ["?"]
        log.warning("could not log the status of %s to %s/logs: %s", tags[0], base, problem)
        return False

    async def _send(self, url: str, record: dict[str, Any], key: str | None) -> int:
        target, head = json_post(url, key)
        response = await self._client().post(target, head, json_bytes(record), max_body=1 << 20, timeout=self.timeout_s)
        return response.status
