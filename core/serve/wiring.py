"""Putting a rollout server together from settings: the pooled policy client, the renderer, the optional local
judge, the status logger, the training store — and closing what it made. Used by the CLI, the app and tests."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass

from svgagent.core.config.settings import Settings
from svgagent.core.run.events import EventBus
from svgagent.core.run.policy import judge_client
from svgagent.core.scoring.judge import Judge
from svgagent.core.scoring.models import RolloutUpdate
from svgagent.core.scoring.render import Renderer
from svgagent.core.scoring.renderers import make_renderer
from svgagent.core.serve.access_log import AccessSink, access_log
from svgagent.core.serve.admission import DEFAULT_MIN_FREE_MB, DEFAULT_QUEUE_MB, MB
from svgagent.core.serve.policy_call import RetryPolicy, serve_client
from svgagent.core.serve.rollout import QUEUE_TIMEOUT_S, Deadlines, ServeContext
from svgagent.core.serve.security import KeyPolicy, check_http_url
from svgagent.core.serve.server import DEFAULT_MAX_BODY_BYTES, RolloutServer
from svgagent.core.serve.status_log import StatusLogger
from svgagent.core.serve.training_runs import TrainingStore
from svgagent.core.store.run_store import Store


@dataclass(frozen=True)
class ServeOptions:
    host: str = "127.0.0.1"
    port: int = 3000
    concurrency: int = 16
    queue_limit: int = 4096
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    allow_hosts: Sequence[str] = ()
    gateway_url: str | None = None
    judge: bool = False
    job_name: str | None = None
    rollout_timeout_s: float = 100.0
    queue_timeout_s: float = QUEUE_TIMEOUT_S
    queue_mb: int = DEFAULT_QUEUE_MB
    min_free_mb: int = DEFAULT_MIN_FREE_MB
    grace_s: float = 30.0
    status_retries: int = 3  # more tries of a status post, after the first (the client's backoff between them)

    def problems(self) -> list[str]:
        found = []
        if not 1 <= self.concurrency <= 4096:
            found.append("--concurrency must be from 1 to 4096")
        if not 0 <= self.queue_limit <= 1_000_000:
            found.append("--queue-limit must be from 0 to 1000000")
        if not 1024 <= self.max_body_bytes <= 64 * 1024 * 1024:
            found.append("--max-body must be from 1024 to 67108864 bytes")
        if not 0 <= self.port <= 65535:
            found.append("--port must be from 0 to 65535")
        if self.gateway_url and (why := check_http_url(self.gateway_url)):
            found.append(f"--gateway-url {why}")
        if not 0 < self.rollout_timeout_s <= 3600:
            found.append("--rollout-timeout must be more than 0 and at most 3600 seconds")
        if not 0 < self.queue_timeout_s <= 86400:
            found.append("--queue-timeout must be more than 0 and at most 86400 seconds")
        if not 1 <= self.queue_mb <= 1_048_576 or self.queue_mb * MB < self.max_body_bytes:
            found.append("--queue-mb must be from 1 to 1048576, and hold at least one --max-body")
        if not 0 <= self.min_free_mb <= 1_048_576:
            found.append("--min-free-mb must be from 0 to 1048576")
        return found


async def build_context(
    settings: Settings,
    store: Store,
    options: ServeOptions,
    *,
    bus: EventBus[RolloutUpdate] | None = None,
    renderer: Renderer | None = None,
) -> ServeContext:
    own = settings.fireworks_api_key.get_secret_value() if settings.fireworks_api_key else None
    keys = KeyPolicy.build(own, options.allow_hosts)
    http = serve_client(
        RetryPolicy(settings.max_retries, settings.request_timeout_s, options.rollout_timeout_s),
        # the policy calls in flight, and the status posts of as many rollouts
        2 * options.concurrency,
    )
    judge = (
        Judge(judge_client(settings), settings.judge_model, settings.judge_mode, profile=settings.judge_profile)
        if options.judge
        else None
    )
    return ServeContext(
        settings=settings,
        keys=keys,
        training=TrainingStore(store, job_name=options.job_name, settings=settings.public_dict()),
        status_log=StatusLogger(keys, http, retries=options.status_retries),
        renderer=renderer or make_renderer(settings),
        http=http,
        judge=judge,
        gateway_url=options.gateway_url,
        deadlines=Deadlines.of(
            settings, rollout_timeout_s=options.rollout_timeout_s, queue_timeout_s=options.queue_timeout_s
        ),
        bus=bus,
    )


@asynccontextmanager
async def rollout_server(
    settings: Settings,
    store: Store,
    options: ServeOptions,
    *,
    bus: EventBus[RolloutUpdate] | None = None,
    renderer: Renderer | None = None,
    access: AccessSink = access_log,
    sock: socket.socket | None = None,
) -> AsyncIterator[RolloutServer]:
    """A started server; on exit it stops (``options.grace_s``) and closes what it created. ``access``: where the
    access-log lines go (the ``svgagent.serve.access`` logger); ``sock``: the socket to serve on, bound already
    (else ``options.host:port`` is bound)."""
    ctx = await build_context(settings, store, options, bus=bus, renderer=renderer)
    server = RolloutServer(
        ctx,
        concurrency=options.concurrency,
        queue_limit=options.queue_limit,
        max_body_bytes=options.max_body_bytes,
        queue_bytes=options.queue_mb * MB,
        min_free_bytes=options.min_free_mb * MB,
        grace_s=options.grace_s,
        access=access,
    )
    try:
        await server.start(options.host, options.port, sock)
        yield server
    finally:
        try:
            await server.stop()
        finally:
            await ctx.http.close()
            if ctx.judge is not None:
                await ctx.judge.client.close()
            if renderer is None:
                ctx.renderer.close()


class ServerThread:
    """A rollout server on a thread and event loop of its own, with its own store connection (``svgagent tui
    --serve``: the app's loop stays free for the screen). ``start()`` returns its URL; ``stop()`` stops it as
    SIGTERM stops `svgagent serve`."""

    def __init__(self, settings: Settings, options: ServeOptions) -> None:
        self.settings, self.options = settings, options
        self.url: str | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None

    def start(self) -> str:
        ready = threading.Event()

        async def serve() -> None:
            self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
            with Store(self.settings.store_path()) as store:
                async with rollout_server(self.settings, store, self.options) as server:
                    self.url = server.url
                    ready.set()
                    await self._stop.wait()

        def run() -> None:
            try:
                asyncio.run(serve())
            except BaseException as exc:  # noqa: BLE001 - reported to the starting thread
                self._failure = exc
            finally:
                ready.set()

        self._thread = threading.Thread(target=run, name="svgagent-serve", daemon=True)
        self._thread.start()
        ready.wait()
        if self.url is None:
            self._thread.join()
            raise self._failure or RuntimeError("the rollout server did not start")
        return self.url

    def stop(self) -> None:
        if self._thread is None:
            return
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join()
        self._thread = None
