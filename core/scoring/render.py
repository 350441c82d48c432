"""Render untrusted SVG to PNG in a pool of sandboxed worker processes.

:class:`Renderer` runs :func:`render_svg_to_png` (the in-process core, in :mod:`.render_worker`) in long-lived
worker processes, each with an address-space limit, and gives every render a wall-clock timeout: a hung, crashed or
memory-starved worker is replaced and the caller gets a :class:`RenderError` with a one-line reason.

Workers are fresh interpreters (``python -c`` running ``svgagent.core.scoring.render_worker`` as ``__main__``
with the script directory dropped from ``sys.path``, i.e. spawned: exec'd, never forked
from this process, which runs asyncio and threads). They are not started through :mod:`multiprocessing` because its
spawn/forkserver children re-run the parent's ``__main__`` (for the app: the whole TUI, textual included) before
doing any work; an exec'd module imports only what rendering needs. :class:`WorkerProcess` talks to one worker over
its stdin/stdout pipes (framing in :mod:`.render_worker`), polling with deadlines so no read or write can hang.
Callers wait on a small thread pool (one thread per worker), so the event loop never blocks.

Importing this module is cheap (cairosvg is only imported by the workers, or by a direct
:func:`render_svg_to_png` call).
"""

from __future__ import annotations

import asyncio
import os
import select
import signal
import subprocess
import sys
import threading
import time
import weakref
from concurrent.futures import ThreadPoolExecutor

from svgagent.core.scoring.errors import RenderError
from svgagent.core.scoring.render_worker import (
    DEFAULT_MAX_BYTES,
    DEFAULT_SIZE,
    ERROR_RECYCLE,
    MAX_OUTPUT_SIZE,
    OK,
    READY,
    REPLY_HEADER,
    REQUEST_HEADER,
    RenderOutOfMemory,
    encode_capped,
    render_svg_to_png,
)

__all__ = ["Renderer", "RenderError", "RenderOutOfMemory", "render_svg_to_png", "DEFAULT_SIZE", "DEFAULT_MAX_BYTES"]
STARTUP_TIMEOUT_S = 60.0
# Environment variables a worker may see: enough for Python, locale and fontconfig; never the app's API keys.
_WORKER_ENV_NAMES = ("PATH", "HOME", "LANG", "LANGUAGE", "TMPDIR", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV",
                     "LD_LIBRARY_PATH", "DYLD_LIBRARY_PATH", "DYLD_FALLBACK_LIBRARY_PATH", "SYSTEMROOT")
_WORKER_ENV_PREFIXES = ("LC_", "XDG_", "FONTCONFIG_")
# The worker's command line: `python -P -m <module>` without -P (Python 3.11+; the RFT bundle runs on 3.10): drop the
# script directory ('' for -c) from sys.path by hand, then run the module as __main__.
WORKER_MODULE = "svgagent.core.scoring.render_worker"
_WORKER_BOOT = ("import runpy, sys; del sys.path[0]; "
                f"runpy.run_module({WORKER_MODULE!r}, run_name='__main__', alter_sys=True)")


def worker_environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in _WORKER_ENV_NAMES or k.startswith(_WORKER_ENV_PREFIXES)}
    env["MALLOC_ARENA_MAX"] = "2"  # keeps the address space (RLIMIT_AS) close to what is really used
    return env


class _Timeout(Exception):
    pass


class _Died(Exception):
    pass


def describe_exit(code: int | None) -> str:
    if code is None:
        return "exit code unknown"
    if code < 0:
        try:
            return f"exit code {code}, {signal.Signals(-code).name}"
        except ValueError:
            pass
    return f"exit code {code}"


class WorkerProcess:
    """The parent's handle on one worker process. Not thread-safe: one render at a time (the pool ensures it)."""

    def __init__(self, memory_mb: int, max_bytes: int) -> None:
        self.memory_mb = memory_mb
        self.max_bytes = max_bytes
        self._proc: subprocess.Popen | None = None
        self._ready = False
        self._inbox = bytearray()
        self._state = threading.Lock()  # guards _closed/_busy against close() from another thread
        self._closed = False
        self._busy = False

    @property
    def pid(self) -> int | None:
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def start(self) -> None:
        if self._closed:
            return
        command = [
            sys.executable, "-c", _WORKER_BOOT, "--memory-mb", str(self.memory_mb), "--max-bytes", str(self.max_bytes),
        ]  # fmt: skip
        self._proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=worker_environment(), bufsize=0, start_new_session=True,
        )  # fmt: skip
        os.set_blocking(self._proc.stdin.fileno(), False)
        os.set_blocking(self._proc.stdout.fileno(), False)
        self._ready = False
        self._inbox.clear()

    def _discard(self) -> int | None:
        """Kill the process (if alive), reap it and close its pipes; returns its exit code."""
        proc, self._proc = self._proc, None
        if proc is None:
            return None
        if proc.poll() is None:
            proc.kill()
        try:
            code = proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        for pipe in (proc.stdin, proc.stdout):
            try:
                pipe.close()
            except OSError:
                pass
        return code

    def restart(self) -> int | None:
        code = self._discard()
        self.start()
        return code

    def close(self) -> None:
        """Stop the worker for good. Safe to call from another thread while a render is in flight."""
        with self._state:
            self._closed = True
            busy = self._busy
            proc = self._proc
        if busy:
            if proc is not None and proc.poll() is None:
                proc.kill()  # the rendering thread sees EOF and cleans up
        else:
            self._discard()

    # -- I/O with deadlines -------------------------------------------------------------------------------

    def _wait(self, fd: int, events: int, deadline: float) -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise _Timeout
        poller = select.poll()
        poller.register(fd, events)
        if not poller.poll(max(1, int(remaining * 1000 + 0.5))) and time.monotonic() >= deadline:
            raise _Timeout

    def _write_all(self, data: bytes, deadline: float) -> None:
        fd = self._proc.stdin.fileno()
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(fd, view) :]
            except BlockingIOError:
                self._wait(fd, select.POLLOUT, deadline)
            except (BrokenPipeError, ConnectionResetError):
                raise _Died from None

    def _read_reply(self, deadline: float) -> tuple[int, bytes]:
        fd = self._proc.stdout.fileno()
        while True:
            if len(self._inbox) >= REPLY_HEADER.size:
                status, length = REPLY_HEADER.unpack_from(self._inbox)
                end = REPLY_HEADER.size + length
                if len(self._inbox) >= end:
                    payload = bytes(self._inbox[REPLY_HEADER.size : end])
                    del self._inbox[:end]
                    return status, payload
            try:
                chunk = os.read(fd, 1 << 20)
            except BlockingIOError:
                self._wait(fd, select.POLLIN, deadline)
                continue
            if not chunk:
                raise _Died
            self._inbox += chunk

    def _ensure_ready(self) -> None:
        if self._proc is None or self._proc.poll() is not None:
            self.restart()
        if self._ready:
            return
        try:
            status, _ = self._read_reply(time.monotonic() + STARTUP_TIMEOUT_S)
        except _Timeout:
            self._discard()
            raise RenderError(f"renderer did not start within {STARTUP_TIMEOUT_S:g} s") from None
        except _Died:
            code = describe_exit(self._discard())
            raise RenderError(f"renderer failed to start ({code}; run python -m svgagent.core.scoring.render_worker "
                              f"--memory-mb {self.memory_mb} --max-bytes {self.max_bytes} to see why)") from None
        if status != READY:
            self._discard()
            raise RenderError("renderer failed to start (unexpected reply)")
        self._ready = True

    # -- one render ---------------------------------------------------------------------------------------

    def render(self, data: bytes, size: int, timeout_s: float) -> bytes:
        with self._state:
            if self._closed:
                raise RenderError("renderer is closed")
            self._busy = True
        try:
            return self._render(data, size, timeout_s)
        finally:
            with self._state:
                self._busy = False
                closed = self._closed
            if closed:
                self._discard()

    def _render(self, data: bytes, size: int, timeout_s: float) -> bytes:
        self._ensure_ready()
        deadline = time.monotonic() + timeout_s
        try:
            self._write_all(REQUEST_HEADER.pack(size, len(data)) + data, deadline)
            status, payload = self._read_reply(deadline)
        except _Timeout:
            self.restart()
            raise RenderError(f"render timed out after {timeout_s:g} s") from None
        except _Died:
            if self._closed:
                raise RenderError("renderer was closed during the render") from None
            code = self.restart()
            raise RenderError(f"renderer crashed ({describe_exit(code)})") from None
        if status == OK:
            return payload
        if status == ERROR_RECYCLE:
            self.restart()
        reason = payload.decode("utf-8", "replace") or "renderer gave no reason"
        raise RenderError(reason)


def _close_workers(workers: list[WorkerProcess]) -> None:
    for worker in workers:
        worker.close()


class Renderer:
    """A pool of sandboxed worker processes rendering SVG to PNG, each render with a wall-clock timeout.

    Workers (default: one per CPU) start on the first render and live until :meth:`close`. A worker that times
    out, crashes or runs out of memory is replaced; the caller gets :class:`RenderError` with a one-line reason.
    """

    def __init__(
        self,
        size: int = DEFAULT_SIZE,
        timeout_s: float = 10.0,
        memory_mb: int = 1024,
        workers: int | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        if not isinstance(size, int) or not 1 <= size <= MAX_OUTPUT_SIZE:
            raise ValueError(f"size must be an int between 1 and {MAX_OUTPUT_SIZE}, got {size!r}")
        if not timeout_s > 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s!r}")
        if memory_mb < 64:
            raise ValueError(f"memory_mb must be at least 64, got {memory_mb!r}")
        if max_bytes < 1:
            raise ValueError(f"max_bytes must be positive, got {max_bytes!r}")
        self.size = size
        self.timeout_s = float(timeout_s)
        self.memory_mb = memory_mb
        self.workers = max(1, workers if workers is not None else (os.cpu_count() or 1))
        self.max_bytes = max_bytes
        self._pool_state = threading.Condition()
        self._all: list[WorkerProcess] = []
        self._idle: list[WorkerProcess] = []
        self._executor: ThreadPoolExecutor | None = None
        self._finalizer: weakref.finalize | None = None
        self._closed = False

    # -- public API -----------------------------------------------------------------------------------------

    async def render(self, svg: str | bytes, size: int | None = None) -> bytes:
        """PNG bytes of ``svg`` (longest side ``size``, default the renderer's), or :class:`RenderError`.

        Never blocks the event loop; any number of callers may await at once (they queue for free workers).
        Cancelling the await is safe: a render already running finishes (within the timeout) and is dropped.
        """
        data, size = self._prepare(svg, size)
        loop = asyncio.get_running_loop()
        try:
            job = loop.run_in_executor(self._get_executor(), self._render_blocking, data, size)
        except RuntimeError:  # the executor was shut down by a concurrent close()
            raise RenderError("renderer is closed") from None
        return await job

    def render_sync(self, svg: str | bytes, size: int | None = None) -> bytes:
        """Like :meth:`render`, blocking the calling thread (do not call it from an event loop's thread)."""
        data, size = self._prepare(svg, size)
        return self._render_blocking(data, size)

    def close(self) -> None:
        """Stop all workers. Renders in flight or queued fail with :class:`RenderError`. Idempotent."""
        with self._pool_state:
            if self._closed:
                return
            self._closed = True
            workers = list(self._all)
            self._pool_state.notify_all()
        _close_workers(workers)
        if self._executor is not None:
            self._executor.shutdown(wait=False)
        if self._finalizer is not None:
            self._finalizer.detach()

    @property
    def closed(self) -> bool:
        return self._closed

    def worker_pids(self) -> list[int]:
        """Process ids of the live workers (for diagnostics and tests)."""
        with self._pool_state:
            return [pid for pid in (worker.pid for worker in self._all) if pid is not None]

    def __enter__(self) -> Renderer:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    async def __aenter__(self) -> Renderer:
        return self

    async def __aexit__(self, *exc_info) -> None:
        self.close()

    # -- internals ------------------------------------------------------------------------------------------

    def _prepare(self, svg: str | bytes, size: int | None) -> tuple[bytes, int]:
        """Cheap checks done by the caller: the size argument, the byte cap, str -> UTF-8."""
        if self._closed:
            raise RenderError("renderer is closed")
        size = self.size if size is None else size
        if not isinstance(size, int) or not 1 <= size <= MAX_OUTPUT_SIZE:
            raise ValueError(f"size must be an int between 1 and {MAX_OUTPUT_SIZE}, got {size!r}")
        return encode_capped(svg, self.max_bytes), size

    def _get_executor(self) -> ThreadPoolExecutor:
        with self._pool_state:
            if self._closed:
                raise RenderError("renderer is closed")
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="svg-render")
            return self._executor

    def start(self) -> None:
        """Start the worker processes now (they boot in the background; a render waits only for what is left of
        that), instead of at the first render. Idempotent; the engine calls it as a run begins, so the workers'
        start-up overlaps the first policy calls."""
        with self._pool_state:
            self._start_workers()

    def _start_workers(self) -> None:  # under _pool_state
        if not self._all and not self._closed:
            self._all = [WorkerProcess(self.memory_mb, self.max_bytes) for _ in range(self.workers)]
            for worker in self._all:
                worker.start()
            self._idle = list(self._all)
            self._finalizer = weakref.finalize(self, _close_workers, self._all)

    def _acquire(self) -> WorkerProcess:
        with self._pool_state:
            self._start_workers()
            while not self._idle and not self._closed:
                self._pool_state.wait()
            if self._closed:
                raise RenderError("renderer is closed")
            return self._idle.pop()

    def _release(self, worker: WorkerProcess) -> None:
        with self._pool_state:
            self._idle.append(worker)
            self._pool_state.notify()

    def _render_blocking(self, data: bytes, size: int) -> bytes:
        worker = self._acquire()
        try:
            return worker.render(data, size, self.timeout_s)
        finally:
            self._release(worker)
