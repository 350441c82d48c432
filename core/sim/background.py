"""One event loop in a daemon thread, for the simulators that tests and the demo start from synchronous code.

The policy+judge simulator, the Fireworks control plane and the tracing gateway all serve aiohttp apps this way:
`start` runs the server's own async set-up on a fresh loop, waits until it has bound its port (or re-raises the
error it failed with in the caller's thread), then keeps the loop running until `stop`.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Self


class BackgroundLoop:
    """A named daemon thread that owns one event loop while a server runs on it."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self.thread is not None

    def on_other_thread(self) -> bool:
        """True when called from outside the loop's thread while it runs (then hand work over threadsafe)."""
        return self.thread is not None and threading.current_thread() is not self.thread

    def start(
        self,
        setup: Callable[[], Awaitable[object]],
        teardown: Callable[[], Awaitable[object]],
        *,
        timeout_s: float | None = None,
    ) -> None:
        """Run `setup()` on a new loop in the thread, then serve until `stop()`, then `teardown()`.

        Returns once `setup` finished; an exception it raised is raised here, and the thread is gone.
        """
        if self.thread is not None:
            raise RuntimeError(f"{self.name} is already running")
        loop = asyncio.new_event_loop()
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(setup())
            except BaseException as exc:  # noqa: BLE001 - re-raised in the starting thread
                failure.append(exc)
                ready.set()
                loop.close()
                return
            ready.set()
            try:
                loop.run_forever()
            finally:
                loop.run_until_complete(teardown())
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.close()

        self.loop = loop
        self.thread = threading.Thread(target=run, name=self.name, daemon=True)
        self.thread.start()
        if not ready.wait(timeout_s):
            raise RuntimeError(f"{self.name} did not start within {timeout_s} s")
        if failure:
            self.thread.join()
            self.thread = self.loop = None
            raise failure[0]

    def stop(self, timeout_s: float | None = None) -> None:
        """Stop the loop (its teardown runs in the thread) and wait for the thread. Safe to call twice."""
        thread, loop = self.thread, self.loop
        if thread is None or loop is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout_s)
        self.thread = self.loop = None


class BackgroundServer:
    """A server with ``start_async``/``stop_async`` that synchronous code (tests, the demo) can also run with
    ``start()``/``stop()`` or ``with server:`` — on a :class:`BackgroundLoop` of its own."""

    base_url: str | None
    _background: BackgroundLoop

    async def start_async(self, host: str = "127.0.0.1", port: int = 0) -> str:
        raise NotImplementedError

    async def stop_async(self) -> None:
        raise NotImplementedError

    def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Serve from a background thread with its own event loop; returns the base URL."""
        self._background.start(lambda: self.start_async(host, port), self.stop_async)
        assert self.base_url is not None
        return self.base_url

    def stop(self) -> None:
        """Stop serving (requests still waiting end at once). Safe to call twice."""
        self._background.stop()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
