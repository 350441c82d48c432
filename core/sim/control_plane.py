"""A simulated Fireworks control plane: an aiohttp server on 127.0.0.1 that speaks the wire format the official
`fireworks-ai` client uses (camelCase JSON, `accounts/{acct}/...` resource names, `/v1` paths, Google-style
error bodies), so tests and offline demos drive the real client against it.

    with FireworksSim(account_id="sim-account") as sim:       # or sim.start() / sim.stop()
        client = fireworks.Fireworks(api_key="k", base_url=sim.base_url)

It is as strict as the platform is known to be: evaluator builds check the archive (eval-protocol's layout, a
requirements.txt, an entry point that resolves) and, with `build_python`, import the entry module with
eval-protocol installed (`control_plane_build`); a job needs an Eval Protocol dataset; a missing secret is sometimes
answered with 500. Knobs live in `SimConfig` (lifecycle speed, build/job failures, admin role); `sim.inject(...)` makes the next N
requests (optionally only on one route) fail with 401/403/429/5xx. `sim.requests` is the request log, with
secret values masked. Standalone: `python -m svgagent.core.sim.control_plane --port 8765`.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import re
import threading
from collections.abc import Callable
from typing import Any

from aiohttp import web

from svgagent.core.server_socket import listen
from svgagent.core.sim.background import BackgroundLoop
from svgagent.core.sim.control_plane_jobs import SimState
from svgagent.core.sim.control_plane_state import MASK, Fault, SimConfig, SimError, SimRequest, mask_secrets

__all__ = ["FireworksSim", "SimConfig", "SimRequest", "main"]

_A = r"/v1/accounts/(?P<acct>[^/:]+)"
_I = r"(?P<id>[^/:]+)"
Handler = Callable[[SimState, dict[str, str], dict[str, str], Any], dict[str, Any]]


def _obj(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise SimError(400, "request body must be a JSON object")
    return body


def _file(body: Any) -> tuple[str, bytes]:
    if not isinstance(body, tuple):
        raise SimError(400, "send the dataset as multipart/form-data with a 'file' field")
    return body


_ROUTES: list[tuple[str, re.Pattern[str], Handler]] = [
    (m, re.compile(p), h)
    for m, p, h in [
        ("POST", _A + "/secrets", lambda s, m, q, b: s.secret_create(_obj(b))),
        ("GET", _A + "/secrets", lambda s, m, q, b: s.secret_list(q)),
        ("GET", _A + "/secrets/" + _I, lambda s, m, q, b: s.secret_get(m["id"])),
        ("PATCH", _A + "/secrets/" + _I, lambda s, m, q, b: s.secret_update(m["id"], _obj(b))),
        ("DELETE", _A + "/secrets/" + _I, lambda s, m, q, b: s.secret_delete(m["id"])),
        ("POST", _A + "/datasets", lambda s, m, q, b: s.dataset_create(_obj(b))),
        ("GET", _A + "/datasets", lambda s, m, q, b: s.dataset_list(q)),
        ("GET", _A + "/datasets/" + _I, lambda s, m, q, b: s.dataset_get(m["id"])),
        ("DELETE", _A + "/datasets/" + _I, lambda s, m, q, b: s.dataset_delete(m["id"])),
        ("POST", _A + "/datasets/" + _I + ":upload", lambda s, m, q, b: s.dataset_upload(m["id"], *_file(b))),
        (
            "POST",
            _A + "/datasets/" + _I + ":getUploadEndpoint",
            lambda s, m, q, b: s.dataset_upload_endpoint(m["id"], _obj(b)),
        ),
        ("POST", _A + "/datasets/" + _I + ":validateUpload", lambda s, m, q, b: s.dataset_validate(m["id"])),
        ("POST", _A + "/evaluatorsV2", lambda s, m, q, b: s.evaluator_create(_obj(b))),
        ("GET", _A + "/evaluators", lambda s, m, q, b: s.evaluator_list(q)),
        ("GET", _A + "/evaluators/" + _I, lambda s, m, q, b: s.evaluator_get(m["id"])),
        ("PATCH", _A + "/evaluators/" + _I, lambda s, m, q, b: s.evaluator_update(m["id"], _obj(b), q)),
        ("DELETE", _A + "/evaluators/" + _I, lambda s, m, q, b: s.evaluator_delete(m["id"])),
        (
            "POST",
            _A + "/evaluators/" + _I + ":getUploadEndpoint",
            lambda s, m, q, b: s.evaluator_upload_endpoint(m["id"], _obj(b)),
        ),
        ("POST", _A + "/evaluators/" + _I + ":validateUpload", lambda s, m, q, b: s.evaluator_validate(m["id"])),
        ("GET", _A + "/evaluators/" + _I + ":getBuildLogEndpoint", lambda s, m, q, b: s.evaluator_build_log(m["id"])),
        ("POST", _A + "/reinforcementFineTuningJobs", lambda s, m, q, b: s.job_create(_obj(b), q)),
        ("GET", _A + "/reinforcementFineTuningJobs", lambda s, m, q, b: s.job_list(q)),
        ("GET", _A + "/reinforcementFineTuningJobs/" + _I, lambda s, m, q, b: s.job_get(m["id"])),
        ("DELETE", _A + "/reinforcementFineTuningJobs/" + _I, lambda s, m, q, b: s.job_delete(m["id"])),
        ("POST", _A + "/reinforcementFineTuningJobs/" + _I + ":cancel", lambda s, m, q, b: s.job_cancel(m["id"])),
        ("POST", _A + "/reinforcementFineTuningJobs/" + _I + ":resume", lambda s, m, q, b: s.job_resume(m["id"])),
    ]
]
_DASHBOARD = re.compile(r"/dashboard/(?P<kind>evaluators|datasets|fine-tuning/reinforcement)/(?P<id>[^/]+)")


class FireworksSim:
    """The simulator server: `start()` serves on 127.0.0.1 (random free port) from a background thread."""

    def __init__(self, config: SimConfig | None = None, **knobs: Any) -> None:
        self.config = dataclasses.replace(config or SimConfig(), **knobs)
        self.state = SimState(self.config)
        self.port: int | None = None
        self._background = BackgroundLoop("fireworks-sim")
        self._runner: web.AppRunner | None = None

    # ---- test-facing API -------------------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        if self.port is None:
            raise RuntimeError("the simulator is not running: call start() first")
        return f"http://127.0.0.1:{self.port}"

    @property
    def requests(self) -> list[SimRequest]:
        with self.state.lock:
            return list(self.state.requests)

    def paths(self) -> list[str]:
        """The request log as "METHOD /path" strings (no query), in order."""
        return [f"{r.method} {r.path}" for r in self.requests]

    @property
    def uploads(self) -> list[dict[str, Any]]:
        """Signed-URL PUTs received: token, size, header names, and whether an Authorization header was (wrongly)
        sent to the storage URL."""
        with self.state.lock:
            return list(self.state.upload_log)

    def inject(
        self,
        status: int,
        *,
        times: int | None = 1,
        route: str | None = None,
        method: str | None = None,
        message: str | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        """Fail the next `times` matching requests (None: until `clear_faults()`). `route` is a regex searched
        in the path, `method` an HTTP method."""
        default = {
            401: "invalid API key",
            403: "permission denied",
            429: "rate limit exceeded: quota exhausted",
            500: "internal error",
            503: "service unavailable",
        }.get(status, "injected failure")
        with self.state.lock:
            self.state.faults.append(
                Fault(
                    status,
                    times,
                    re.compile(route) if route else None,
                    method.upper() if method else None,
                    message or default,
                    retry_after_s,
                )
            )

    def clear_faults(self) -> None:
        with self.state.lock:
            self.state.faults.clear()

    def reset(self) -> None:
        """Forget all resources, the request log and injected faults (knobs in `config` stay)."""
        self.state.reset()

    def secret_value(self, secret_id: str) -> str | None:
        with self.state.lock:
            entry = self.state.secrets.get(secret_id)
            return entry["value"] if entry else None

    def evaluator_archive(self, evaluator_id: str) -> bytes | None:
        """The bytes last PUT for an evaluator (the .tar.gz bundle), or None."""
        with self.state.lock:
            e = self.state.evaluators.get(evaluator_id)
            return next(iter(e.files.values()), None) if e else None

    def dataset_bytes(self, dataset_id: str) -> bytes | None:
        with self.state.lock:
            d = self.state.datasets.get(dataset_id)
            return b"".join(d.files.values()) if d and d.files else None

    def job_state(self, job_id: str) -> str:
        """Peek at a job's state without advancing it."""
        with self.state.lock:
            return self.state.jobs[job_id].state

    def set_job_state(self, job_id: str, state: str, message: str = "") -> None:
        with self.state.lock:
            self.state.set_job_state(job_id, state, message)

    def dump_state(self) -> dict[str, Any]:
        """Everything the simulator holds, secret values masked and blobs reduced to sizes."""
        s = self.state
        with s.lock:
            return {
                "account": self.config.account_id,
                "secrets": {k: {"keyName": v["keyName"], "value": MASK} for k, v in s.secrets.items()},
                "datasets": {
                    k: {**s._dataset_out(d), "files": {n: len(b) for n, b in d.files.items()}}
                    for k, d in s.datasets.items()
                },
                "evaluators": {
                    k: {**s._evaluator_out(e), "files": {n: len(b) for n, b in e.files.items()}}
                    for k, e in s.evaluators.items()
                },
                "jobs": {k: mask_secrets(s._job_out(j)) for k, j in s.jobs.items()},
            }

    # ---- HTTP ------------------------------------------------------------------------------------------------
    async def _read(self, request: web.Request) -> tuple[Any, Any]:
        """(body for the handler, body for the log)."""
        if request.content_type.startswith("multipart/"):
            form = await request.post()
            part = form.get("file")
            if not isinstance(part, web.FileField):
                return SimError(400, "multipart field 'file' is required"), {"file": None}
            data = part.file.read()
            return (part.filename, data), {"file": {"filename": part.filename, "size": len(data)}}
        raw = await request.read()
        if request.path.startswith("/_upload/"):
            return raw, {"bytes": len(raw)}
        if not raw:
            return {}, None
        try:
            body = json.loads(raw)
        except ValueError:
            return SimError(400, "request body is not valid JSON"), f"<{len(raw)} bytes>"
        return body, mask_secrets(body)

    def _fault(self, method: str, path: str) -> Fault | None:
        for fault in self.state.faults:
            if (fault.method in (None, method)) and (fault.route is None or fault.route.search(path)):
                if fault.times is not None:
                    fault.times -= 1
                    if fault.times <= 0:
                        self.state.faults.remove(fault)
                return fault
        return None

    def _auth(self, request: web.Request) -> None:
        scheme, _, key = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not key.strip():
            raise SimError(401, "missing API key: send Authorization: Bearer <FIREWORKS_API_KEY>")
        if key.strip() in self.config.rejected_keys:
            raise SimError(401, "invalid API key")

    def _dispatch(self, request: web.Request, body: Any) -> tuple[int, Any, dict[str, str]]:
        path, method, query = request.path, request.method, dict(request.query)
        if path.startswith("/_upload/"):
            if method != "PUT":
                raise SimError(405, "signed URLs accept PUT only", "UNIMPLEMENTED")
            headers = {k.lower(): v for k, v in request.headers.items()}
            self.state.put_upload(path.removeprefix("/_upload/"), body, headers)
            return 200, "", {}
        if path.startswith("/_logs/"):
            return 200, self.state.build_log_text(path.removeprefix("/_logs/")), {}
        if (match := _DASHBOARD.fullmatch(path)) is not None:
            return 200, self._dashboard(match["kind"], match["id"]), {}
        self._auth(request)
        if path == "/verifyApiKey" and method == "GET":
            return 200, {}, {"x-fireworks-account-id": self.config.account_id}
        allowed = False
        for route_method, pattern, handler in _ROUTES:
            if (match := pattern.fullmatch(path)) is None:
                continue
            allowed = True
            if route_method == method:
                if match["acct"] != self.config.account_id:
                    raise SimError(403, f"API key is not authorized for account {match['acct']}")
                if isinstance(body, SimError):
                    raise body
                return 200, handler(self.state, match.groupdict(), query, body), {}
        raise SimError(405, "Method Not Allowed", "UNIMPLEMENTED") if allowed else SimError(404, "Not Found")

    def _dashboard(self, kind: str, rid: str) -> str:
        s = self.state
        lookup = {
            "evaluators": lambda: s._evaluator_out(s._evaluator(rid)),
            "datasets": lambda: s._dataset_out(s._dataset(rid)),
            "fine-tuning/reinforcement": lambda: mask_secrets(s._job_out(s._job(rid))),
        }[kind]
        return f"Fireworks SIMULATOR (local, not app.fireworks.ai): {kind} {rid}\n\n" + json.dumps(lookup(), indent=2)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body, logged = await self._read(request)
        if self.config.response_delay_s > 0:
            await asyncio.sleep(self.config.response_delay_s)
        headers: dict[str, str] = {}
        with self.state.lock:
            try:
                fault = self._fault(request.method, request.path)
                if fault is not None:
                    if fault.retry_after_s is not None:
                        headers["Retry-After"] = str(fault.retry_after_s)
                    raise SimError(fault.status, fault.message)
                status, payload, headers = self._dispatch(request, body)
            except SimError as err:
                status, payload = err.http, err.body()
            self.state.requests.append(SimRequest(request.method, request.path, dict(request.query), logged, status))
        if isinstance(payload, str):
            return web.Response(status=status, text=payload, headers=headers)
        return web.json_response(payload, status=status, headers=headers)

    # ---- server lifecycle ------------------------------------------------------------------------------------
    def start(self, port: int = 0) -> str:
        """Serve on 127.0.0.1:`port` (0: a free one) from a daemon thread; returns the base URL."""
        if self._background.running:
            return self.base_url
        try:
            self._background.start(lambda: self._serve(port), self._shutdown, timeout_s=10)
        except Exception as exc:
            raise RuntimeError(f"the Fireworks simulator could not start: {exc}") from exc
        return self.base_url

    async def _serve(self, port: int) -> None:
        app = web.Application(client_max_size=512 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        self.port = await listen(runner, "127.0.0.1", port)
        self.state.base_url = self.base_url
        self._runner = runner

    async def _shutdown(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def stop(self) -> None:
        self._background.stop(timeout_s=10)

    def __enter__(self) -> FireworksSim:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m svgagent.core.sim.control_plane",
        description="Run the simulated Fireworks control plane on 127.0.0.1.",
    )
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--account", default="sim-account", help="account id reported by /verifyApiKey")
    parser.add_argument("--advance", choices=["poll", "time"], default="time")
    parser.add_argument("--step-seconds", type=float, default=2.0, help="lifecycle step length (time mode)")
    parser.add_argument("--build-failure", default=None, help="make evaluator builds fail with this message")
    parser.add_argument("--job-failure", default=None, help="make jobs fail half-way with this message")
    parser.add_argument("--no-admin", action="store_true", help="answer 403 admin role required on evaluator create")
    parser.add_argument(
        "--build-python",
        default=None,
        help="a python with eval-protocol installed: builds import the evaluator's entry module",
    )
    args = parser.parse_args(argv)
    sim = FireworksSim(
        account_id=args.account,
        advance=args.advance,
        step_seconds=args.step_seconds,
        evaluator_build_failure=args.build_failure,
        job_failure=args.job_failure,
        admin=not args.no_admin,
        build_python=args.build_python,
    )
    url = sim.start(args.port)
    print(f"Fireworks simulator on {url} (account {args.account}); use FIREWORKS_BASE_URL={url}. Ctrl-C stops.")
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        sim.stop()


if __name__ == "__main__":
    main()
