"""Render untrusted SVG to PNG with headless Chromium, the way Eval Protocol's quickstart evaluator does.

:class:`ChromiumRenderer` has the cairosvg :class:`~svgagent.core.scoring.render.Renderer`'s interface (``render``,
``render_sync``, ``start``, ``close``) and its sandbox rules, kept by other means:

* input: the same checks and caps before anything reaches the browser (size cap, gzip with a capped expansion,
  UTF-8, not empty; XML entities refused);
* no network: the page is loaded from memory (a ``data:`` URL), every fetch it tries is failed by the DevTools
  ``Fetch`` domain (inline ``data:`` URLs load, nothing else), hostnames resolve nowhere, scripts are off;
* a wall-clock cap per render: past it the browser's whole process group is killed (and replaced on the next
  render); the same for a browser that grows past the memory cap (the proportional memory of all its processes,
  polled while it renders and checked before each render) or whose picture is larger than :data:`.chromium_browser.MAX_MESSAGE_BYTES`;
* a size cap on the picture: the page's longest side is at most :data:`.picture_size.MAX_OWN_SIDE` px (own size) or
  the requested size.

A pool of up to ``workers`` browser processes is kept warm (each boots once, in about a second, then renders in
tens of milliseconds); a render takes the most recently used free one. The browsers live on this renderer's own
event-loop thread, so any thread or event loop may call it. Chromium comes from the system (``find_chromium``).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import weakref
from collections.abc import Coroutine
from typing import Any, TypeVar

from svgagent.core.scoring.chromium_browser import Browser, group_memory_mb
from svgagent.core.scoring.chromium_page import find_chromium, page_geometry, page_html
from svgagent.core.scoring.errors import RenderError
from svgagent.core.scoring.picture_size import OWN_SIZE
from svgagent.core.scoring.render_worker import DEFAULT_MAX_BYTES, DEFAULT_SIZE, MAX_OUTPUT_SIZE, svg_input_bytes

__all__ = ["ChromiumRenderer"]

T = TypeVar("T")
MEMORY_POLL_S = 0.25


class _Loop:
    """An event loop on a daemon thread of its own."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="svg-chromium", daemon=True)
        self._thread.start()

    def submit(self, coro: Coroutine[Any, Any, T]) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def stop(self) -> None:
        if self.loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(self.loop.stop)
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout=10)
            if not self._thread.is_alive():
                self.loop.close()


def _kill_all(browsers: list[Browser]) -> None:
    for browser in browsers:
        browser.kill()


class ChromiumRenderer:
    """A pool of headless Chromium processes rendering SVG to PNG (see the module docstring)."""

    def __init__(
        self,
        size: int = DEFAULT_SIZE,
        timeout_s: float = 20.0,
        memory_mb: int = 1024,
        workers: int | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
        executable: str | None = None,
    ) -> None:
        if not isinstance(size, int) or not 1 <= size <= MAX_OUTPUT_SIZE:
            raise ValueError(f"size must be an int between 1 and {MAX_OUTPUT_SIZE}, got {size!r}")
        if not timeout_s > 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s!r}")
        self.executable = find_chromium(executable)  # ConfigError naming the package when there is none
        self.size = size
        self.timeout_s = float(timeout_s)
        self.memory_mb = memory_mb
        self.workers = max(1, workers if workers is not None else 2)
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._thread: _Loop | None = None
        self._idle: asyncio.LifoQueue[Browser] | None = None
        self._browsers: list[Browser] = []
        self._finalizer: weakref.finalize | None = None
        self._closed = False

    # -- public API ---------------------------------------------------------------------------------------------

    async def render(self, svg: str | bytes, size: int | None = None) -> bytes:
        """PNG bytes of ``svg``: its own page size (``size`` = OWN_SIZE) or longest side ``size`` (default the
        renderer's); RenderError with a one-line reason. Never blocks the calling loop."""
        return await asyncio.wrap_future(self._submit(svg, size))

    def render_sync(self, svg: str | bytes, size: int | None = None) -> bytes:
        """Like :meth:`render`, blocking the calling thread."""
        return self._submit(svg, size).result()

    def start(self) -> None:
        """Boot the first browser now (in the background) rather than at the first render. Idempotent."""
        with self._lock:
            if self._closed:
                return
            thread = self._ensure_loop()
        thread.submit(self._warm())

    def close(self) -> None:
        """Kill every browser; renders in flight fail with RenderError. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            thread = self._thread
        if thread is not None:
            with contextlib.suppress(Exception):
                thread.submit(self._shutdown()).result(timeout=15)
            thread.stop()
        _kill_all(self._browsers)
        if self._finalizer is not None:
            self._finalizer.detach()

    @property
    def closed(self) -> bool:
        return self._closed

    def worker_pids(self) -> list[int]:
        """Process ids of the live browser processes (for diagnostics and tests)."""
        return [b.pid for b in list(self._browsers) if b.pid is not None and b.alive]

    def refused_urls(self) -> list[str]:
        """The latest URLs the pages tried to fetch and were refused (for diagnostics and tests)."""
        return [url for browser in list(self._browsers) for url in list(browser.refused)]

    def __enter__(self) -> ChromiumRenderer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> ChromiumRenderer:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.close()

    # -- internals ----------------------------------------------------------------------------------------------

    def _ensure_loop(self) -> _Loop:  # under _lock
        if self._thread is None:
            self._thread = _Loop()
            self._finalizer = weakref.finalize(self, _kill_all, self._browsers)  # the list grows in place
        return self._thread

    def _submit(self, svg: str | bytes, size: int | None) -> Any:
        size = self.size if size is None else size
        if not isinstance(size, int) or not (size == OWN_SIZE or 1 <= size <= MAX_OUTPUT_SIZE):
            raise ValueError(f"size must be {OWN_SIZE} (own size) or an int between 1 and {MAX_OUTPUT_SIZE}")
        data = svg_input_bytes(svg, self.max_bytes)  # the cheap checks, in the caller's thread
        with self._lock:
            if self._closed:
                raise RenderError("renderer is closed")
            thread = self._ensure_loop()
        return thread.submit(self._render(data, size))

    def _queue(self) -> asyncio.LifoQueue[Browser]:
        if self._idle is None:
            self._idle = asyncio.LifoQueue()
            for _ in range(self.workers):
                browser = Browser(self.executable)
                self._browsers.append(browser)
                self._idle.put_nowait(browser)
        return self._idle

    async def _warm(self) -> None:
        idle = self._queue()
        browser = await idle.get()
        try:
            if not browser.alive:
                await browser.start()
        except RenderError:
            pass  # the first render reports it
        finally:
            idle.put_nowait(browser)

    async def _render(self, data: bytes, size: int) -> bytes:
        geometry = page_geometry(data, size)  # RenderError: entities, an unusable size
        html = page_html(data.decode("utf-8"), geometry)
        idle = self._queue()
        browser = await idle.get()
        if self._closed:
            idle.put_nowait(browser)
            raise RenderError("renderer is closed")
        # the render runs to its end (or its cap) even when its caller stops waiting: a browser is never left
        # halfway through a page, and goes back to the pool only when it is done
        job = asyncio.ensure_future(self._render_on(browser, html, geometry))
        job.add_done_callback(lambda done: (idle.put_nowait(browser), done.cancelled() or done.exception()))
        return await asyncio.shield(job)

    def _over_memory(self, browser: Browser) -> bool:
        return browser.pid is not None and group_memory_mb(browser.pid) > self.memory_mb

    async def _render_on(self, browser: Browser, html: str, geometry: Any) -> bytes:
        if browser.alive and self._over_memory(browser):
            browser.kill()  # grown past the cap between renders: a fresh one draws this picture
        if not browser.alive:
            browser.kill()  # what is left of a crashed one
            await browser.start()
        job = asyncio.ensure_future(browser.render(html, geometry))
        deadline = time.monotonic() + self.timeout_s
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    browser.kill()
                    raise RenderError(f"render timed out after {self.timeout_s:g} s")
                done, _ = await asyncio.wait({job}, timeout=min(MEMORY_POLL_S, remaining))
                if done:
                    return job.result()
                if self._over_memory(browser):
                    browser.kill()
                    raise RenderError(f"SVG needs more memory than the renderer allows ({self.memory_mb} MB)")
        except RenderError:
            if not browser.alive:
                browser.kill()
            raise
        finally:
            if not job.done():
                job.cancel()
                with contextlib.suppress(BaseException):
                    await job

    async def _shutdown(self) -> None:
        _kill_all(self._browsers)
