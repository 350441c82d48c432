"""Render untrusted SVG to PNG in a pool of sandboxed worker processes.

:class:`Renderer` runs :func:`render_svg_to_png` (the in-process core, in :mod:`.render_worker`) in long-lived
worker processes, each with an address-space limit, and gives every render a wall-clock timeout: a hung, crashed or
memory-starved worker is replaced and the caller gets a :class:`RenderError` with a one-line reason.

Workers are fresh interpreters (``python -c`` running ``svgagent.core.scoring.render_worker`` as ``__main__``
with the script directory dropped from ``sys.path``, i.e. spawned: exec'd, never forked
from this process, which runs asyncio and threads). They are not started through :mod:`multiprocessing` because its
spawn/forkserver children re-run the parent's ``__main__`` (for the app: the whole TUI, textual included) before
doing any work; an exec'd module imports only what rendering needs. :class:`WorkerProcess` talks to one worker over
its stdin/stdout pipes (framing in :mod:`.render_worker`), with deadlines so no read or write can hang. An async
caller's render is written and read by its event loop (the pipes are non-blocking; a timer is the deadline), so a
render costs no thread hand-off; a worker not yet booted, a restart after a failure and :meth:`Renderer.render_sync`
use blocking I/O in a thread (a small pool, one thread per worker), so the event loop never blocks. (Over 400
lines: the two I/O paths share the pool's and the worker's state, which must stay in one place.)

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
from collections.abc import Callable
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
    check_size,
    encode_capped,
    render_svg_to_png,
)

__all__ = ["Renderer", "RenderError", "RenderOutOfMemory", "render_svg_to_png", "DEFAULT_SIZE", "DEFAULT_MAX_BYTES"]
STARTUP_TIMEOUT_S = 60.0
GROW_AFTER_S = 0.1  # a render that waited this long for a free worker starts another (up to the pool's size)
# Environment variables a worker may see: enough for Python, locale and fontconfig; never the app's API keys.
_WORKER_ENV_NAMES = (
    "PATH",
    "HOME",
    "LANG",
    "LANGUAGE",
    "TMPDIR",
    "PYTHONPATH",
    "PYTHONHOME",
    "VIRTUAL_ENV",
    "LD_LIBRARY_PATH",
    "DYLD_LIBRARY_PATH",
    "DYLD_FALLBACK_LIBRARY_PATH",
    "SYSTEMROOT",
)
_WORKER_ENV_PREFIXES = ("LC_", "XDG_", "FONTCONFIG_")
# The worker's command line: `python -P -m <module>` without -P (Python 3.11+; the RFT bundle runs on 3.10): drop the
# script directory ('' for -c) from sys.path by hand, then run the module as __main__.
WORKER_MODULE = "svgagent.core.scoring.render_worker"
_WORKER_BOOT = (
    f"import runpy, sys; del sys.path[0]; runpy.run_module({WORKER_MODULE!r}, run_name='__main__', alter_sys=True)"
)


def usable_cpus() -> int:
    """The CPUs this process may run on: its affinity mask (``taskset``, a container's cpuset), not the machine's
    count -- a pool of one render worker per machine CPU, confined to one core, had its renders slice each other's
    time and caches. At least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # no affinity on this platform
        return max(1, os.cpu_count() or 1)


# glibc's malloc (mallopt(3); other C libraries ignore these): a render's big buffers — cairo's surface, 1 MB at
# 512 px, and the PNG encoder's — were each a fresh mapping, unmapped again when freed, so every render faulted in and
# zeroed hundreds of new pages. From the heap and kept there between renders, the next render reuses them. A worker
# keeps at most TRIM of freed memory (RLIMIT_AS: 1 GB).
WORKER_MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(32 << 20), "MALLOC_TRIM_THRESHOLD_": str(64 << 20)}


def worker_environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in _WORKER_ENV_NAMES or k.startswith(_WORKER_ENV_PREFIXES)}
    env["MALLOC_ARENA_MAX"] = "2"  # keeps the address space (RLIMIT_AS) close to what is really used
    env.update(WORKER_MALLOC)
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
        self._ready_at = 0.0
        self._inbox = bytearray()
        self._state = threading.Lock()  # guards _closed/_busy against close() from another thread
        self._closed = False
        self._busy = False
        # The event loop's reader on the worker's stdout, kept between the renders that loop drives (registering and
        # removing it per render was ~9 system calls: poll handle set-up, epoll changes, io_uring submissions).
        self._watch_loop: asyncio.AbstractEventLoop | None = None
        self._watch_fd = -1
        self._job: _LoopRender | None = None  # the loop render whose reply that reader hands over

    def ready_for(self) -> float | None:
        """Seconds since the worker said it is ready (its imports done); None while it boots."""
        return time.monotonic() - self._ready_at if self._ready else None

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
        """Kill the process (if alive), reap it and close its pipes; returns its exit code. A stdout an event loop
        still watches is closed by that loop once its reader is gone (never under it: the descriptor's number could
        be reused while the loop still polls it)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return None
        if proc.poll() is None:
            proc.kill()
        try:
            code = proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        pipes = (proc.stdin, proc.stdout)
        with self._state:
            loop, fd = self._watch_loop, self._watch_fd
            watched = (
                loop is not None and not loop.is_closed() and not proc.stdout.closed and fd == proc.stdout.fileno()
            )
            if watched or (loop is not None and loop.is_closed()):
                self._watch_loop, self._watch_fd = None, -1
        if watched:
            assert loop is not None
            if _running_loop() is loop:
                _unwatch_and_close(loop, fd, pipes)
                return code
            try:
                loop.call_soon_threadsafe(_unwatch_and_close, loop, fd, pipes)
                return code
            except RuntimeError:  # that loop is closed: its readers went with it
                pass
        _close_pipes(pipes)
        return code

    # -- the event loop's reader on stdout --------------------------------------------------------------

    def watch(self, job: _LoopRender) -> bool:
        """Hand ``job``'s reply over from this worker's stdout reader on ``job.loop``, registered there once and
        kept between renders. False when another live loop has it (``job`` then registers a reader of its own)."""
        loop, fd = job.loop, job.fd_out
        with self._state:
            current = self._watch_loop
            if current is not None and current is not loop and not current.is_closed():
                return False
            if current is not loop or self._watch_fd != fd:  # (a closed loop's readers went with it)
                loop.add_reader(fd, self._readable, loop, fd)
                self._watch_loop, self._watch_fd = loop, fd
            self._job = job
        return True

    def _readable(self, loop: asyncio.AbstractEventLoop, fd: int) -> None:
        job = self._job
        if job is not None and job.loop is loop and job.fd_out == fd:
            job._readable()
        else:  # not a reply this loop waits for (a thread's render, the end of an idle worker): stop watching
            self.unwatch(loop, fd)

    def unwatch(self, loop: asyncio.AbstractEventLoop, fd: int) -> None:
        """Remove the reader on ``fd`` (on ``loop``'s thread); before a restart, which closes the pipes."""
        loop.remove_reader(fd)
        with self._state:
            if self._watch_loop is loop and self._watch_fd == fd:
                self._watch_loop, self._watch_fd = None, -1

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
            raise RenderError(
                f"renderer failed to start ({code}; run python -m svgagent.core.scoring.render_worker "
                f"--memory-mb {self.memory_mb} --max-bytes {self.max_bytes} to see why)"
            ) from None
        if status != READY:
            self._discard()
            raise RenderError("renderer failed to start (unexpected reply)")
        self._ready = True
        self._ready_at = time.monotonic()

    # -- one render ---------------------------------------------------------------------------------------

    def start_loop_render(self) -> bool:
        """Mark this worker busy for a render the event loop drives (:class:`_LoopRender`); False (and not busy)
        when it must boot or be restarted first, which the blocking path does."""
        proc = self._proc
        if not self._ready or proc is None or proc.poll() is not None:
            return False
        with self._state:
            if self._closed:
                raise RenderError("renderer is closed")
            self._busy = True
        return True

    def end_loop_render(self) -> None:
        with self._state:
            self._busy = False

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


class _LoopRender:
    """One render on ``worker`` driven by the event loop: the request written and the reply read as the pipes
    allow, the timeout a timer. It owns the worker until it ends, whether or not its caller still waits (a
    cancelled caller's render finishes, or times out, and is dropped); ``done`` then hands the worker back. A
    failure's restart (kill, reap, spawn) runs in ``executor``, not on the loop."""

    def __init__(
        self,
        worker: WorkerProcess,
        loop: asyncio.AbstractEventLoop,
        request: bytes,
        timeout_s: float,
        executor: ThreadPoolExecutor,
        done: Callable[[], None],
    ) -> None:
        self.worker, self.loop, self.timeout_s, self.executor, self.done = worker, loop, timeout_s, executor, done
        self.future: asyncio.Future[bytes] = loop.create_future()
        proc = worker._proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        self.fd_in, self.fd_out = proc.stdin.fileno(), proc.stdout.fileno()
        self.out = memoryview(request)
        self.writing = self.reading = self.over = False
        if not worker.watch(self):  # the one step that may raise: nothing is registered yet
            self.loop.add_reader(self.fd_out, self._readable)  # another loop watches it: a reader of this render's
            self.reading = True
        self.timer = loop.call_later(timeout_s, self._end, _Timeout())
        self._writable()

    def _writable(self) -> None:
        try:
            while self.out:
                self.out = self.out[os.write(self.fd_in, self.out) :]
        except BlockingIOError:
            if not self.writing:
                self.loop.add_writer(self.fd_in, self._writable)
                self.writing = True
            return
        except OSError:  # a broken pipe, or the pipe closed under it: the worker is gone
            self._end(_Died())
            return
        if self.writing:
            self.loop.remove_writer(self.fd_in)
            self.writing = False

    def _readable(self) -> None:
        inbox = self.worker._inbox
        wanted = REPLY_HEADER.size
        if len(inbox) >= wanted:
            wanted += REPLY_HEADER.unpack_from(inbox)[1]
        try:  # what the reply still needs (at least a pipe's worth, at most 1 MiB): not a 1 MiB buffer per read
            chunk = os.read(self.fd_out, min(max(wanted - len(inbox), 1 << 16), 1 << 20))
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._end(_Died())
            return
        inbox += chunk
        if len(inbox) >= REPLY_HEADER.size:
            status, length = REPLY_HEADER.unpack_from(inbox)
            end = REPLY_HEADER.size + length
            if len(inbox) >= end:
                payload = bytes(inbox[REPLY_HEADER.size : end])
                del inbox[:end]
                self._end((status, payload))

    def _end(self, outcome: tuple[int, bytes] | Exception) -> None:
        if self.over:
            return
        self.over = True
        self.timer.cancel()
        worker = self.worker
        if worker._job is self:
            worker._job = None
        if self.reading:
            self.loop.remove_reader(self.fd_out)
        if self.writing:
            self.loop.remove_writer(self.fd_in)
        failed = not (isinstance(outcome, tuple) and outcome[0] != ERROR_RECYCLE)
        if failed and worker._watch_loop is self.loop and worker._watch_fd == self.fd_out:
            worker.unwatch(self.loop, self.fd_out)  # the restart that follows (in a thread) closes the pipes
        if not failed:  # a PNG, or a reason (the worker carries on)
            status, payload = outcome
            self._settle(
                payload
                if status == OK
                else RenderError(payload.decode("utf-8", "replace") or "renderer gave no reason")
            )
        else:  # what _render does with it, restarts included: in a thread
            try:
                self.loop.run_in_executor(self.executor, self._failure, outcome).add_done_callback(self._failed)
            except RuntimeError:  # the pool was closed (its executor shut down): no restart follows
                self._settle(self._failure(outcome))

    def _failure(self, outcome: tuple[int, bytes] | Exception) -> RenderError:
        worker = self.worker
        if isinstance(outcome, _Timeout):
            worker.restart()
            return RenderError(f"render timed out after {self.timeout_s:g} s")
        if isinstance(outcome, _Died):
            if worker._closed:
                return RenderError("renderer was closed during the render")
            return RenderError(f"renderer crashed ({describe_exit(worker.restart())})")
        worker.restart()  # ERROR_RECYCLE: the worker asked to be replaced
        return RenderError(outcome[1].decode("utf-8", "replace") or "renderer gave no reason")  # type: ignore[index]

    def _failed(self, job: asyncio.Future[RenderError]) -> None:
        self._settle(
            job.result() if not job.cancelled() and job.exception() is None else RenderError("renderer is closed")
        )

    def _settle(self, result: bytes | RenderError) -> None:
        worker = self.worker
        with worker._state:
            worker._busy = False
            closed = worker._closed
        if closed:
            worker._discard()
        self.done()
        if not self.future.done():  # its caller may have stopped waiting
            if isinstance(result, RenderError):
                self.future.set_exception(result)
            else:
                self.future.set_result(result)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _close_pipes(pipes: tuple[object, ...]) -> None:
    for pipe in pipes:
        try:
            pipe.close()  # type: ignore[attr-defined]
        except OSError:
            pass


def _unwatch_and_close(loop: asyncio.AbstractEventLoop, fd: int, pipes: tuple[object, ...]) -> None:
    """On ``loop``'s thread: its reader on ``fd`` removed, then the pipes closed."""
    loop.remove_reader(fd)
    _close_pipes(pipes)


def _close_workers(workers: list[WorkerProcess]) -> None:
    for worker in workers:
        worker.close()


class Renderer:
    """A pool of sandboxed worker processes rendering SVG to PNG, each render with a wall-clock timeout.

    Up to ``workers`` worker processes (default: one per CPU this process may use, :func:`usable_cpus`) live until
    :meth:`close`. The first starts on the first render (or :meth:`start`); another starts only when a render has
    waited ``GROW_AFTER_S`` for a busy one (not for a boot: that ends sooner than a second would), so a run whose
    renders never queue boots one interpreter, not one per CPU (each boot costs ≈0.45 s of CPU, half of it cffi
    parsing cairo's C declarations). A worker that times out, crashes or runs out of memory is replaced; the caller
    gets :class:`RenderError` with a one-line reason.
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
        self.workers = max(1, workers if workers is not None else usable_cpus())
        self.max_bytes = max_bytes
        self._pool_state = threading.Condition()
        self._all: list[WorkerProcess] = []
        self._idle: list[WorkerProcess] = []
        self._executor: ThreadPoolExecutor | None = None
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[WorkerProcess]]] = []
        self._finalizer: weakref.finalize | None = None
        self._grow_pending = False  # a timer will check whether renders still queue
        self._closed = False

    # -- public API -----------------------------------------------------------------------------------------

    async def render(self, svg: str | bytes, size: int | None = None) -> bytes:
        """PNG bytes of ``svg`` (longest side ``size``, default the renderer's; 0: the SVG's own page size,
        :mod:`.picture_size`), or :class:`RenderError`.

        Never blocks the event loop; any number of callers may await at once (they queue for free workers).
        Cancelling the await is safe: a render already running finishes (within the timeout) and is dropped.
        """
        data, size = self._prepare(svg, size)
        loop = asyncio.get_running_loop()
        executor = self._get_executor()
        worker = await self._acquire_async(loop)
        try:
            ready = worker.start_loop_render()
        except BaseException:
            self._release(worker)
            raise
        try:
            if ready:  # booted and alive: the loop writes and reads (see the module docstring)
                job = _LoopRender(
                    worker,
                    loop,
                    REQUEST_HEADER.pack(size, len(data)) + data,
                    self.timeout_s,
                    executor,
                    lambda: self._release(worker),
                ).future
            else:  # booting, or to be restarted first: blocking I/O in a thread
                job = loop.run_in_executor(executor, self._render_on, worker, data, size)
        except BaseException:
            worker.end_loop_render()
            self._release(worker)
            if isinstance(sys.exc_info()[1], RuntimeError):  # the executor was shut down by a concurrent close()
                raise RenderError("renderer is closed") from None
            raise
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
            waiters, self._waiters = self._waiters, []
            self._pool_state.notify_all()
        for loop, waiter in waiters:
            _call_in(loop, _give, waiter, None, self)
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
        size = check_size(self.size if size is None else size)  # 0: the SVG's own size (picture_size.OWN_SIZE)
        return encode_capped(svg, self.max_bytes), size

    def _get_executor(self) -> ThreadPoolExecutor:
        with self._pool_state:
            if self._closed:
                raise RenderError("renderer is closed")
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="svg-render")
            return self._executor

    def start(self) -> None:
        """Start the first worker process now (it boots in the background; a render waits only for what is left
        of that), instead of at the first render. Idempotent; the engine calls it as a run begins, so the boot
        overlaps the first policy calls."""
        with self._pool_state:
            self._start_workers()

    def _start_workers(self) -> None:  # under _pool_state
        if not self._all and not self._closed:
            self._add_worker()
            self._finalizer = weakref.finalize(self, _close_workers, self._all)  # the list grows in place

    def _add_worker(self) -> WorkerProcess:  # under _pool_state
        worker = WorkerProcess(self.memory_mb, self.max_bytes)
        worker.start()
        self._all.append(worker)
        self._idle.append(worker)
        return worker

    def _can_grow(self) -> bool:  # under _pool_state
        return not self._closed and 0 < len(self._all) < self.workers

    def _all_busy_long_enough(self) -> bool:  # under _pool_state
        """Every worker has been up for GROW_AFTER_S: a render waiting now waits for renders, not for a boot."""
        up = [worker.ready_for() for worker in self._all]
        return all(seconds is not None and seconds >= GROW_AFTER_S for seconds in up)

    def _grow_if_waiting(self) -> None:
        """A render has waited ``GROW_AFTER_S``: start one more worker (if still needed) and hand it to the first
        waiter; check again later while renders still queue and there is room."""
        with self._pool_state:
            self._grow_pending = False
            if not (self._waiters and self._can_grow()):
                return
            if not self._all_busy_long_enough():  # a wait for a boot: it ends sooner than another would
                self._schedule_growth()
                return
            worker = self._add_worker()
            self._idle.remove(worker)
        self._release(worker)
        with self._pool_state:
            if self._waiters:
                self._schedule_growth()

    def _schedule_growth(self) -> None:  # under _pool_state, on a waiter's loop
        if self._grow_pending or not self._can_grow() or not self._waiters:
            return
        loop = self._waiters[0][0]
        try:
            loop.call_soon_threadsafe(loop.call_later, GROW_AFTER_S, self._grow_if_waiting)
        except RuntimeError:  # that loop is closed: nobody waits there any more
            return
        self._grow_pending = True

    def _acquire(self) -> WorkerProcess:
        with self._pool_state:
            self._start_workers()
            waited = 0.0
            while not self._idle and not self._closed:
                if waited >= GROW_AFTER_S and self._can_grow() and self._all_busy_long_enough():
                    worker = self._add_worker()
                    self._idle.remove(worker)
                    return worker
                started = time.monotonic()
                self._pool_state.wait(GROW_AFTER_S if self._can_grow() else None)
                waited += time.monotonic() - started
            if self._closed:
                raise RenderError("renderer is closed")
            return self._idle.pop()

    async def _acquire_async(self, loop: asyncio.AbstractEventLoop) -> WorkerProcess:
        """A worker for this caller, waiting (without a thread) while all are busy; waiters are served in order."""
        with self._pool_state:
            self._start_workers()
            if self._closed:
                raise RenderError("renderer is closed")
            if self._idle and not self._waiters:
                return self._idle.pop()
            waiter: asyncio.Future[WorkerProcess] = loop.create_future()
            self._waiters.append((loop, waiter))
            self._schedule_growth()
        try:
            return await waiter
        except BaseException:
            with self._pool_state:
                try:
                    self._waiters.remove((loop, waiter))
                except ValueError:
                    pass
            if waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                self._release(waiter.result())  # handed a worker just as it was cancelled: pass it on
            raise

    def _release(self, worker: WorkerProcess) -> None:
        """Hand ``worker`` to the first async waiter, else back to the idle list (and a blocked thread)."""
        with self._pool_state:
            if self._closed:
                for loop, waiter in self._waiters:
                    _call_in(loop, _give, waiter, None, self)
                self._waiters.clear()
            elif self._waiters:
                loop, waiter = self._waiters.pop(0)
                _call_in(loop, _give, waiter, worker, self)
                return
            self._idle.append(worker)
            self._pool_state.notify()

    def _render_on(self, worker: WorkerProcess, data: bytes, size: int) -> bytes:
        try:
            return worker.render(data, size, self.timeout_s)
        finally:
            self._release(worker)

    def _render_blocking(self, data: bytes, size: int) -> bytes:
        return self._render_on(self._acquire(), data, size)


def _call_in(loop: asyncio.AbstractEventLoop, callback: Callable[..., None], *args: object) -> None:
    """Run ``callback`` in ``loop``: now when this thread runs that loop, else at its next turn."""
    if _running_loop() is loop:
        callback(*args)
        return
    try:
        loop.call_soon_threadsafe(callback, *args)
    except RuntimeError:  # that loop is closed: nobody waits there any more
        if args[1] is not None:
            args[2]._release(args[1])  # type: ignore[attr-defined]


def _give(waiter: asyncio.Future[WorkerProcess], worker: WorkerProcess | None, pool: Renderer) -> None:
    """Settle an async waiter with ``worker`` (None: the pool closed); one that stopped waiting passes it on."""
    if waiter.done():
        if worker is not None:
            pool._release(worker)
    elif worker is None:
        waiter.set_exception(RenderError("renderer is closed"))
    else:
        waiter.set_result(worker)
