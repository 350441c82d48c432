"""``svgagent serve``: the remote rollout server of Eval Protocol's SVG-agent quickstart, on aiohttp's web server.

Routes (what eval-protocol's ``RemoteRolloutProcessor`` and the reference server use):

- ``POST /init`` — an ``InitRequest`` (see :mod:`.protocol`). Answers at once (200 ``{"status": "accepted"}``) and
  runs the rollout in the background (:mod:`.rollout`). A repeated rollout id is the same rollout: while it runs,
  or once it finished, nothing new starts (200 ``{"duplicate": true}``); after it ended in an error — which is
  how eval-protocol retries — a new attempt starts (a RUNNING status is logged first, so the gateway stops
  reporting the old error). 400: a body that is too big, not JSON or not an InitRequest; 429 (``Retry-After``):
  ``concurrency`` rollouts run and ``queue_limit`` more wait, or the bodies of the accepted, unfinished rollouts
  add up to ``queue_bytes``; 503: shutting down, or the store cannot be written; 507 (``Retry-After``): the store's
  file system has less than ``min_free_bytes`` free.
- ``GET /status?rollout_id=…`` — ``StatusResponse`` {terminated, info, status}; without ``rollout_id``, and
  ``GET /``: health and counters.

A rollout waits for a slot at most ``Deadlines.queue_s`` (then it ends DEADLINE_EXCEEDED, the policy never
called); each later stage has its deadline too (:mod:`.rollout`).

Shutdown (:meth:`RolloutServer.stop`): new ``/init`` get 503, running rollouts get ``grace_s`` to finish, the rest
are cancelled; one whose policy had answered is stored with its answer and logged FINISHED, the others are stored
as failed and logged UNAVAILABLE (eval-protocol retries that code). Every request is written
to the ``svgagent.serve.access`` logger as one JSON line (no bodies, so no keys), or to what ``access_log`` names
(``svgagent serve``: straight to stderr, see :class:`AccessSink`).
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from json.encoder import encode_basestring_ascii as _json_str  # a string as json.dumps writes it
from typing import Any

from aiohttp import web

from svgagent.core.exchange.ep_status import StatusCode, status_dict
from svgagent.core.exchange.import_row import parse_formatted_prompt
from svgagent.core.scoring.errors import ConfigError, StoreError
from svgagent.core.scoring.models import FailureKind, RolloutStatus
from svgagent.core.serve.access_log import ROLLOUT_ID, AccessSink, JsonAccessLogger, access_log
from svgagent.core.serve.admission import DEFAULT_MIN_FREE_MB, DEFAULT_QUEUE_MB, MB, Admission, free_bytes_of
from svgagent.core.serve.protocol import RequestError, parse_init_body
from svgagent.core.serve.rollout import FINISHED, Job, Outcome, ServeContext, conclude, log_status, serve_rollout
from svgagent.core.serve.training_runs import step_hint
from svgagent.core.server_socket import listen, listening_socket
from svgagent.core.store.sqlite_values import error_line

log = logging.getLogger("svgagent.serve")
DEFAULT_MAX_BODY_BYTES = 1024 * 1024
STOPPED = "svgagent serve stopped before the rollout finished"
STOP_LOG_S = 15.0  # a stopped rollout's status post (the status logger's own tries take at most about this)


@dataclass
class _Live:
    job: Job
    size: int  # the /init body's bytes, held until the rollout ends
    task: asyncio.Task[Any] | None = None
    running: bool = False


@dataclass
class ServerStats:
    accepted: int = 0
    duplicates: int = 0
    retries: int = 0
    busy: int = 0
    low_disk: int = 0
    bad_requests: int = 0
    finished: int = 0
    errors: int = 0
    stopped: int = 0
    max_running: int = 0
    by_code: dict[int, int] = field(default_factory=dict)


def bind_socket(host: str, port: int) -> socket.socket:
    """The server's listening socket on ``host:port`` (0: a free port); a port in use or an address not of this
    machine is one line (ConfigError), not a traceback. `svgagent serve` binds it before it creates anything, so a
    failed start leaves nothing behind."""
    try:
        return listening_socket(host, port)
    except OSError as err:
        raise ConfigError(
            f"cannot listen on {host}:{port}: {err.strerror or err}"
            + (
                " (another server is there: choose another --port, or 0 for a free one)"
                if err.errno == errno.EADDRINUSE
                else ""
            )
        ) from None


class RolloutServer:
    """Serve rollouts for eval-protocol (see the module docstring). ``await start()``, then ``await stop()``."""

    def __init__(
        self,
        ctx: ServeContext,
        *,
        concurrency: int = 16,
        queue_limit: int = 4096,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        queue_bytes: int = DEFAULT_QUEUE_MB * MB,
        min_free_bytes: int = DEFAULT_MIN_FREE_MB * MB,
        free_bytes: Callable[[], int] | None = None,
        grace_s: float = 30.0,
        access: AccessSink = access_log,
    ) -> None:
        """``queue_bytes``: how many bytes of /init bodies the accepted, unfinished rollouts may hold (at least
        ``max_body_bytes``); ``min_free_bytes``: the free space under which /init is refused (0: never);
        ``free_bytes``: reads the free space of the store's file system (default: its statvfs)."""
        if concurrency < 1 or queue_limit < 0 or queue_bytes < max_body_bytes or min_free_bytes < 0:
            raise ValueError(
                "concurrency must be >= 1, queue_limit >= 0, queue_bytes >= max_body_bytes and min_free_bytes >= 0"
            )
        self.ctx = ctx
        self.concurrency = concurrency
        self.queue_limit = queue_limit
        self.max_body_bytes = max_body_bytes
        self.admission = Admission(
            concurrency=concurrency,
            queue_limit=queue_limit,
            queue_bytes=queue_bytes,
            min_free_bytes=min_free_bytes,
            free_bytes=free_bytes or free_bytes_of(ctx.training.store.path.parent),
        )
        self.grace_s = grace_s
        self.access = access
        self.stats = ServerStats()
        self._slots = asyncio.Semaphore(concurrency)
        self._live: dict[str, _Live] = {}
        self._extra_tasks: set[asyncio.Task[Any]] = set()
        self._running = 0
        self._accepting = False
        self._stopped = False
        self._cut = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.url: str | None = None

    # --- lifecycle --------------------------------------------------------------------------------------------
    def make_app(self) -> web.Application:
        app = web.Application(client_max_size=self.max_body_bytes)
        app.router.add_post("/init", self._handle_init)
        app.router.add_get("/status", self._handle_status)
        app.router.add_get("/", self._handle_health)
        return app

    async def start(self, host: str = "127.0.0.1", port: int = 3000, sock: socket.socket | None = None) -> str:
        """Serve on ``host:port``, or on ``sock`` when given (bound already: :func:`bind_socket`)."""
        if sock is None:
            sock = bind_socket(host, port)
        runner = web.AppRunner(
            self.make_app(),
            access_log_class=JsonAccessLogger,
            access_log=self.access,  # type: ignore[arg-type]
            handler_cancellation=True,
            shutdown_timeout=2.0,
        )
        await runner.setup()
        bound = await listen(runner, host, port, sock)
        self._runner = runner
        self._accepting = True
        self.url = f"http://{'[' + host + ']' if ':' in host else host}:{bound}"
        return self.url

    @property
    def in_flight(self) -> int:
        return len(self._live)

    async def wait_idle(self) -> None:
        """Until no rollout is accepted-but-unfinished (for tests and benchmarks)."""
        while True:
            tasks = [e.task for e in self._live.values() if e.task and not e.task.done()] + list(self._extra_tasks)
            if not tasks:
                return
            await asyncio.gather(*tasks, return_exceptions=True)

    def cut_grace(self) -> None:
        """End the grace period of a running :meth:`stop` now (a second Ctrl-C)."""
        self._cut.set()

    async def stop(self, grace_s: float | None = None) -> None:
        """Refuse new rollouts, give running ones ``grace_s`` to finish, cancel and log the rest, close.
        Calling it again does nothing."""
        if self._stopped:
            return
        self._stopped = True
        self._accepting = False
        grace = self.grace_s if grace_s is None else grace_s
        pending = {e.task for e in self._live.values() if e.task is not None}
        if pending:
            log.info("stopping: %d rollout(s) accepted and not finished; waiting up to %g s", len(pending), grace)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace
        while pending and not self._cut.is_set() and (remaining := deadline - loop.time()) > 0:
            cut = asyncio.create_task(self._cut.wait())
            await asyncio.wait({*pending, cut}, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
            cut.cancel()
            pending = {t for t in pending if not t.done()}
        left = [e for e in self._live.values() if e.task in pending]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        ended = await asyncio.gather(*(self._mark_stopped(e) for e in left), return_exceptions=True)
        for entry, result in zip(left, ended, strict=True):
            if isinstance(result, BaseException):
                rid = entry.job.req.metadata.rollout_id
                log.warning("rollout %s: stopped, and could not be stored or logged: %s", rid, error_line(result))
        if self._extra_tasks:
            await asyncio.wait(self._extra_tasks, timeout=5)
        self.ctx.recorder.flush()  # (nothing waits in it by now: every rollout has concluded)
        try:
            self.ctx.training.close_steps(self.ctx.settings.threshold)
        except (StoreError, sqlite3.Error) as err:
            log.warning("could not close the step runs in the store: %s", err)
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        await self.ctx.status_log.close()

    async def _mark_stopped(self, entry: _Live) -> None:
        """A rollout cancelled by stop(): stored with what it had (its answer, once the policy answered: FINISHED,
        eval-protocol must not pay for it again), or as stopped (UNAVAILABLE, which eval-protocol retries); only its
        status is left to log when it was stored already."""
        job = entry.job
        self._forget(entry)
        outcome = job.outcome or Outcome(
            dict(
                status=RolloutStatus.FAILED,
                is_score_valid=False,
                reason=STOPPED,
                error=STOPPED,
                failure_kind=FailureKind.OTHER,
            ),
            StatusCode.UNAVAILABLE,
            STOPPED,
        )
        if outcome.code.is_error:
            self.stats.stopped += 1
        else:
            self.stats.finished += 1
        self._count(outcome.code)
        if job.stored is not None:
            await asyncio.wait_for(log_status(self.ctx, job.req, outcome.code, outcome.message), timeout=STOP_LOG_S)
            return
        await asyncio.wait_for(
            conclude(self.ctx, job, outcome.columns, outcome.code, outcome.message),
            timeout=self.ctx.deadlines.store_s + STOP_LOG_S,
        )

    def _forget(self, entry: _Live) -> None:
        if self._live.get(entry.job.req.metadata.rollout_id) is entry:
            del self._live[entry.job.req.metadata.rollout_id]
            self.admission.release(entry.size)

    def _count(self, code: StatusCode) -> None:
        self.stats.by_code[int(code)] = self.stats.by_code.get(int(code), 0) + 1

    # --- handlers ---------------------------------------------------------------------------------------------
    async def _handle_init(self, request: web.Request) -> web.Response:
        if not self._accepting:
            return _error(503, "the server is shutting down", retry_after=5)
        if low := self.admission.low_disk():
            self.stats.low_disk += 1
            return _error(507, low, retry_after=60)
        try:
            raw = await request.read()
            req = parse_init_body(raw)
        except web.HTTPRequestEntityTooLarge:
            self.stats.bad_requests += 1
            return _error(400, f"the body is larger than {self.max_body_bytes} bytes")
        except RequestError as err:
            self.stats.bad_requests += 1
            return _error(400, str(err))
        ids = req.metadata
        request[ROLLOUT_ID] = ids.rollout_id
        live = self._live.get(ids.rollout_id)
        if live is not None:
            self.stats.duplicates += 1
            return web.json_response({"status": "running", "rollout_id": ids.rollout_id, "duplicate": True})
        try:
            known = self.ctx.training.served(ids.rollout_id)
        except (StoreError, sqlite3.Error) as err:
            log.warning("the run store cannot be read: %s", err)
            return _error(503, "the run store cannot be read", retry_after=5)
        # what was logged for it before: stored, or (the store took nothing) remembered
        earlier = known.status_code if known is not None else self.ctx.unstored.get(ids.rollout_id, (None, ""))[0]
        if earlier is not None and not StatusCode(earlier).is_error:
            code = StatusCode(earlier)
            self.stats.duplicates += 1
            self._spawn(log_status(self.ctx, req, code, FINISHED))
            return web.json_response({"status": "finished", "rollout_id": ids.rollout_id, "duplicate": True})
        if busy := self.admission.busy(len(raw)):
            self.stats.busy += 1
            return _error(429, busy, retry_after=1)
        prompt, requirements = _prompt_of(req.user_text())
        try:
            place = self.ctx.training.place(
                ids=ids,
                model=req.model,
                hint=step_hint(req.completion_params, req.model),
                judged=self.ctx.judge is not None,
            )
        except Exception as err:  # noqa: BLE001 - a StoreError, or a value no statement takes: one line, no 500
            log.warning("the run store cannot be written: %s", error_line(err))
            return _error(503, "the run store cannot be written", retry_after=5)
        entry = _Live(Job(req, place, prompt, list(requirements), previous=known), len(raw))
        self.stats.retries += known is not None
        self._live[ids.rollout_id] = entry
        self.admission.hold(entry.size)
        entry.task = asyncio.create_task(self._run(entry), name=f"rollout {ids.rollout_id}")
        self.stats.accepted += 1
        return _accepted(ids.rollout_id, known is not None)

    async def _run(self, entry: _Live) -> None:
        rid = entry.job.req.metadata.rollout_id
        code = StatusCode.INTERNAL
        try:
            code = await self._queued(entry)
        except asyncio.CancelledError:
            raise  # stop() stores and logs it
        except Exception as err:  # noqa: BLE001
            log.warning("rollout %s: its end could not be stored or logged: %s", rid, error_line(err))
        self._forget(entry)
        self._count(code)
        if code.is_error:
            self.stats.errors += 1
        else:
            self.stats.finished += 1

    async def _queued(self, entry: _Live) -> StatusCode:
        """Wait for a slot (at most the queue deadline), then serve the rollout in it."""
        job = entry.job
        wait_s = self.ctx.deadlines.queue_s
        try:
            async with asyncio.timeout(wait_s):
                await self._slots.acquire()
        except TimeoutError:
            message = f"waited {wait_s:g} s for a free slot ({self.concurrency} rollouts at a time): not started"
            columns = dict(
                status=RolloutStatus.FAILED,
                is_score_valid=False,
                reason=message,
                error=message,
                failure_kind=FailureKind.TIMEOUT,
            )
            return await conclude(self.ctx, job, columns, StatusCode.DEADLINE_EXCEEDED, message)
        self._running += 1
        entry.running = True
        self.stats.max_running = max(self.stats.max_running, self._running)
        try:
            if job.previous is not None:  # the gateway must stop reporting the old error
                await log_status(self.ctx, job.req, StatusCode.RUNNING, "Rollout is running")
            return await serve_rollout(self.ctx, job)
        except asyncio.CancelledError:
            raise
        except Exception as err:  # a bug must not leave eval-protocol polling until its timeout
            return await self._internal_error(job, err)
        finally:
            self._running -= 1
            self._slots.release()

    async def _internal_error(self, job: Job, err: Exception) -> StatusCode:
        """An unexpected error ends the rollout: failed, with the answer when the policy had answered (then it
        finished for eval-protocol: FINISHED), an INTERNAL status otherwise."""
        rid = job.req.metadata.rollout_id
        message = f"internal error in svgagent serve: {error_line(err)}"
        log.error("rollout %s failed unexpectedly: %s", rid, message, exc_info=err)
        outcome = job.outcome
        if job.stored is not None and outcome is not None:  # stored already: what is left is its status
            await log_status(self.ctx, job.req, outcome.code, outcome.message)
            return outcome.code
        failed = dict(
            status=RolloutStatus.FAILED,
            is_score_valid=False,
            reason=message,
            error=message,
            failure_kind=FailureKind.INTERNAL,
        )
        if outcome is not None and not outcome.code.is_error:
            return await conclude(self.ctx, job, {**outcome.columns, **failed}, outcome.code, outcome.message)
        return await conclude(self.ctx, job, failed, StatusCode.INTERNAL, message)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self._extra_tasks.add(task)
        task.add_done_callback(self._extra_tasks.discard)

    async def _handle_status(self, request: web.Request) -> web.Response:
        rollout_id = request.query.get("rollout_id")
        if not rollout_id:
            return await self._handle_health(request)
        request[ROLLOUT_ID] = rollout_id
        live = self._live.get(rollout_id)
        if live is not None:
            return web.json_response(
                {
                    "terminated": False,
                    "info": {"state": "running" if live.running else "queued"},
                    "status": status_dict(StatusCode.RUNNING, "Rollout is running"),
                }
            )
        code, message = self.ctx.training.ep_status(rollout_id)
        if code is None and rollout_id in self.ctx.unstored:  # logged, though the store could not take it
            code, message = self.ctx.unstored[rollout_id]
        if code is None:
            return web.json_response({"terminated": False, "info": {"state": "unknown"}, "status": None}, status=404)
        return web.json_response(
            {"terminated": True, "info": {"state": "done"}, "status": status_dict(StatusCode(code), message or "")}
        )

    async def _handle_health(self, request: web.Request) -> web.Response:
        s = self.stats
        return web.json_response(
            {
                "status": "ok" if self._accepting else "stopping",
                "service": "svgagent serve",
                "running": self._running,
                "queued": len(self._live) - self._running,
                "concurrency": self.concurrency,
                "queue_limit": self.queue_limit,
                "held_bytes": self.admission.held_bytes,
                "queue_bytes": self.admission.queue_bytes,
                "accepted": s.accepted,
                "finished": s.finished,
                "errors": s.errors,
                "duplicates": s.duplicates,
                "busy": s.busy,
                "low_disk": s.low_disk,
                "bad_requests": s.bad_requests,
                "status_logs_lost": self.ctx.status_log.lost,
                "stored": self.ctx.recorder.stored,
                "store_transactions": self.ctx.recorder.batches,
            }
        )


def _accepted(rollout_id: str, retry: bool) -> web.Response:
    """``json_response({"status": "accepted", "rollout_id": …, "retry": …})``, the same bytes and headers, written
    out (once per rollout: a third of json_response's cost)."""
    body = f'{{"status": "accepted", "rollout_id": {_json_str(rollout_id)}, "retry": {"true" if retry else "false"}}}'
    return web.Response(body=body.encode(), content_type="application/json", charset="utf-8")


@lru_cache(maxsize=1024)
def _prompt_of(text: str) -> tuple[str, tuple[str, ...]]:
    """The prompt and requirements of an SVGBench-formatted user message (the whole text and none when it is not
    one), remembered per text: every rollout of a row asks with the same message (n per step, again each step)."""
    return parse_formatted_prompt(text) or (text, ())


def _error(status: int, message: str, *, retry_after: int | None = None) -> web.Response:
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else None
    return web.json_response({"error": {"message": message, "code": status}}, status=status, headers=headers)
