"""Posting a rollout's status to the tracing gateway, as eval-protocol's ``FireworksTracingHttpHandler`` does.

The record is ``{program, status: {code, message, details}, message, tags: ["rollout_id:…", "experiment_id:…",
"run_id:…"], extras: {logger_name, level, timestamp, …}}``, POSTed to ``{gateway}/logs`` (a 404 is tried once at
``{gateway}/v1/logs``). Unlike a logging handler, the post is awaited and retried by the server's client (the
policy calls' openai client: connection errors, timeouts, 408/409/429 and 5xx, with backoff), so a terminal status
is not silently lost: eval-protocol would otherwise poll until its timeout. The Authorization header follows
:class:`~svgagent.core.serve.security.KeyPolicy`.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from svgagent.core.exchange.ep_status import StatusCode, status_dict
from svgagent.core.scoring.chat import request_bytes
from svgagent.core.scoring.failures import endpoint_errors, os_cause, os_detail
from svgagent.core.serve.policy_call import authorization
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
    """Posts status records with ``client`` (the server's openai client, :func:`.policy_call.serve_client`),
    ``retries`` more tries after a failed one."""

    def __init__(self, keys: KeyPolicy, client: Any, *, retries: int = 3, timeout_s: float = 10.0) -> None:
        self.keys = keys
        self.client = client
        self.retries = retries
        self.timeout_s = timeout_s
        self.posted = 0
        self.lost = 0

    async def close(self) -> None:
        """Nothing to close: the client is the server's (closed with its policy calls' client, core/serve/wiring)."""

    async def post(self, gateway: str, record: dict[str, Any], request_key: str | None) -> bool:
        """True once the gateway accepted the record; False (and a warning) when every try failed."""
        base = gateway.rstrip("/")
        key = self.keys.key_for(base, request_key)
        try:
            status = await self._send(f"{base}/logs", record, key)
            if status == 404:
                status = await self._send(f"{base}/v1/logs", record, key)
        except (*endpoint_errors(), ValueError) as err:  # ValueError: a key no header can carry
            problem = _problem(err)
        else:
            if status < 300:
                self.posted += 1
                return True
            problem = f"HTTP {status}"
        self.lost += 1
        tags = record.get("tags") or ["?"]
        log.warning("could not log the status of %s to %s/logs: %s", tags[0], base, problem)
        return False

    async def _send(self, url: str, record: dict[str, Any], key: str | None) -> int:
        """The gateway's status for the post (an error status after the client's retries is returned too)."""
        import httpx2
        import openai

        try:
            response = await self.client.post(
                url,
                content=request_bytes(record),
                cast_to=httpx2.Response,
                options={"headers": authorization(key), "max_retries": self.retries, "timeout": self.timeout_s},
            )
        except openai.APIStatusError as err:
            return err.status_code
        return response.status_code


def _problem(err: BaseException) -> str:
    cause = os_cause(err)
    return os_detail(cause) if cause is not None else type(err).__name__
