"""The engine in a process of its own, for the app: its CPU, heap and garbage collections stay out of the UI's.

Why a process and not a thread: on a thread the engine shared the app's interpreter, so its Python work competed
with the UI for the GIL and its ≈100,000 objects (a 10,000-rollout run's tasks and records) made every full
collection of the *app's* heap take 80–300 ms (bench/tui.py; the UI's own heap is frozen). A child process has
its own GIL, heap and scheduler slot.

The child is a fresh interpreter (``python -c`` running this module as ``__main__`` with the script directory
dropped from ``sys.path`` — exec'd, never forked from the app, which runs threads; like the render workers). The
protocol is JSON lines:

- parent → child (stdin): one request ``{"settings": …, "store": path, "run_id": …}`` (settings with the keys:
  they travel through the pipe only, never argv, environment, logs or disk), then ``"cancel"`` to stop the run;
  end of input (the app died) also stops it.
- child → parent (stdout): ``{"events": [[run_id, rollout_id, status], …]}`` every ``FORWARD_EVERY_S`` (after the
  store has the changes: the engine writes before it publishes), then one of ``{"done": summary}``,
  ``{"cancelled": true}``, ``{"store_error": "one line"}`` (raised in the parent as a ``StoreError``) or
  ``{"error": "one line"}``.

The parent side, :class:`EngineProcess`, republishes the events on the app's (thread-safe) event bus from a reader
thread and completes ``future`` with the run's summary (``asyncio.CancelledError`` when it was cancelled).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import importlib
import json
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from typing import IO, Any

from svgagent.core import event_loop
from svgagent.core.config.settings import SECRET_FIELDS, Settings
from svgagent.core.run.budget import BudgetReached
from svgagent.core.run.events import EventBus
from svgagent.core.scoring.errors import StoreError
from svgagent.core.scoring.models import RolloutStatus, RolloutUpdate
from svgagent.core.startup_gc import long_run_heap
from svgagent.core.store.typed_rows import RunSummary

MODULE = "svgagent.core.run.engine_process"
ENGINE = "svgagent.core.run.engine:Engine"
FORWARD_EVERY_S = 0.02
STDIN = 0
# The child yields the CPU to the app: on a busy machine the kernel then runs the UI first (it needs little) and
# the engine gets all the rest. Its render workers inherit it.
NICE = 10
KILL_AFTER_S = 10.0  # a child that does not stop within this after "cancel" is killed
_BOOT = f"import runpy, sys; del sys.path[0]; runpy.run_module({MODULE!r}, run_name='__main__', alter_sys=True)"


class EngineProcessError(RuntimeError):
    """The engine process failed (its one-line reason) or died."""


def settings_payload(settings: Settings) -> dict[str, Any]:
    """Every resolved setting, keys included, as JSON values (for the pipe to the child only)."""
    data = settings.model_dump(mode="json")
    for name in SECRET_FIELDS:
        secret = getattr(settings, name)
        data[name] = secret.get_secret_value() if secret is not None else None
    return data


# --- the parent's handle ------------------------------------------------------------------------------------------
class EngineProcess:
    """One run of the engine in a child process. ``start()`` returns at once: spawning, the request and reading the
    child's output happen on a reader thread. ``factory`` ("module:attribute") and ``path`` (extra ``sys.path``
    entries for the child) let tests and benchmarks run a stand-in engine with the same plumbing."""

    def __init__(
        self,
        settings: Settings,
        store_path: str,
        bus: EventBus[RolloutUpdate],
        run_id: str,
        *,
        factory: str = ENGINE,
        path: Sequence[str] = (),
        rollouts: Sequence[str] | None = None,
        render_workers: int | None = None,
        nice: bool = True,
    ) -> None:
        """``rollouts``, ``render_workers``: the child is one of a run's worker processes (engine_workers);
        ``nice``: it yields the CPU to the app (the app's engine; not a headless run's workers)."""
        self.run_id = run_id
        self.future: concurrent.futures.Future[RunSummary] = concurrent.futures.Future()
        self._request = {
            "settings": settings_payload(settings),
            "store": store_path,
            "run_id": run_id,
            "factory": factory,
            "path": list(path),
            "rollouts": list(rollouts) if rollouts is not None else None,
            "render_workers": render_workers,
            "nice": nice,
        }
        self._bus = bus
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._cancelled = False
        self.pid: int | None = None
        self.thread = threading.Thread(target=self._main, name=f"engine {run_id}", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def cancel(self) -> None:
        """Ask the engine to stop (from any thread); ``future`` completes once it has."""
        with self._lock:
            self._cancelled = True
            proc = self._proc
        if proc is not None:
            self._send(proc, "cancel")

    def join(self, timeout: float = KILL_AFTER_S) -> None:
        """Wait for the child to end; kill it if it has not within ``timeout`` (it keeps every stored rollout)."""
        self.thread.join(timeout)
        with self._lock:
            proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.kill()
            self.thread.join(timeout)

    @staticmethod
    def _send(proc: subprocess.Popen[bytes], message: object) -> None:
        try:
            assert proc.stdin is not None
            proc.stdin.write(json.dumps(message).encode() + b"\n")
            proc.stdin.flush()
        except (OSError, ValueError):  # the child has gone: its end is reported by the reader
            pass

    def _main(self) -> None:
        outcome: tuple[str, Any] = ("error", "the engine process gave no result")
        with tempfile.TemporaryFile() as errors:
            try:
                proc = subprocess.Popen(
                    [sys.executable, "-c", _BOOT],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=errors,
                    start_new_session=True,
                )
            except OSError as err:
                self.future.set_exception(EngineProcessError(f"cannot start the engine process: {err}"))
                return
            with self._lock:
                self._proc, self.pid = proc, proc.pid
                cancelled = self._cancelled
            self._send(proc, self._request)
            if cancelled:
                self._send(proc, "cancel")
            assert proc.stdout is not None
            for line in proc.stdout:
                message = json.loads(line)
                if "events" in message:
                    for run_id, rollout_id, status in message["events"]:
                        self._bus.publish(RolloutUpdate(run_id, rollout_id, RolloutStatus(status)))
                else:
                    outcome = next(iter(message.items()))
            code = proc.wait()
            with contextlib.suppress(OSError, ValueError):
                assert proc.stdin is not None
                proc.stdin.close()
            if outcome[0] == "error" and code != 0:
                errors.seek(0)
                tail = errors.read()[-2000:].decode(errors="replace").strip().splitlines()
                outcome = ("error", f"{outcome[1]} (exit code {code}{': ' + tail[-1] if tail else ''})")
        kind, value = outcome
        if kind == "error" and self._cancelled:  # stopped, if not gracefully: killed after KILL_AFTER_S
            kind = "cancelled"
        if kind == "done":
            self.future.set_result(RunSummary(**value))
        elif kind == "cancelled":
            self.future.cancel()
        elif kind == "store_error":  # a storage problem stays one: never a rollout's verdict, exit 2 in the CLI
            self.future.set_exception(StoreError(str(value)))
        else:
            self.future.set_exception(EngineProcessError(str(value)))


# --- the child -------------------------------------------------------------------------------------------------
def _load(factory: str) -> Any:
    module, _, attribute = factory.partition(":")
    return getattr(importlib.import_module(module), attribute)


def _write(out: IO[bytes], message: object) -> None:
    out.write(json.dumps(message).encode() + b"\n")
    out.flush()


def _read_request() -> tuple[dict[str, Any], bytes]:
    """The request line from stdin, read from the descriptor itself (a buffered reader could swallow a "cancel"
    sent right after it), and whatever followed it."""
    data = b""
    while b"\n" not in data:
        chunk = os.read(STDIN, 65536)
        if not chunk:
            raise SystemExit(0)  # no request: the app went away first
        data += chunk
    line, _, rest = data.partition(b"\n")
    return json.loads(line), rest


def event_batch(events: Any) -> list[list[str]]:
    """The changes a subscription holds, drained, as the ``{"events": …}`` line carries them."""
    return [[e.run_id, e.rollout_id, e.status.value] for e in events.drain()]


async def _serve(request: dict[str, Any], pending: bytes, out: IO[bytes]) -> None:
    from svgagent.core.store.run_store import Store

    loop = asyncio.get_running_loop()
    settings = Settings.model_validate(request["settings"])
    bus: EventBus[RolloutUpdate] = EventBus()
    events = bus.subscribe()

    def forward() -> None:
        batch = event_batch(events)
        if batch:
            _write(out, {"events": batch})

    async def forwarder() -> None:
        while True:
            await asyncio.sleep(FORWARD_EVERY_S)
            forward()

    with contextlib.ExitStack() as stack:
        store = stack.enter_context(Store(request["store"]))
        extra = {k: request[k] for k in ("rollouts", "render_workers") if request.get(k) is not None}
        engine = _load(request.get("factory") or ENGINE)(settings, store, bus=bus, **extra)
        stack.enter_context(long_run_heap())  # the run is this process's job: the collector set for it
        task = loop.create_task(engine.run(request["run_id"]))
        os.set_blocking(STDIN, False)

        def command() -> None:
            try:
                data = os.read(STDIN, 4096)
            except BlockingIOError:
                return
            if not data or b"cancel" in data:  # end of input: the app has gone
                loop.remove_reader(STDIN)
                task.cancel()

        if b"cancel" in pending:
            task.cancel()
        else:
            loop.add_reader(STDIN, command)
        ticker = loop.create_task(forwarder())
        try:
            summary = await task
        except asyncio.CancelledError:
            forward()
            _write(out, {"cancelled": True})
            return
        except StoreError as err:
            forward()
            _write(out, {"store_error": str(err)})
            return
        except BudgetReached as err:  # the run stopped before a call would pass its budget: its own line
            forward()
            _write(out, {"error": str(err)})
            return
        except Exception as err:  # noqa: BLE001 - one line for the app's notification
            forward()
            _write(out, {"error": f"{type(err).__name__}: {str(err)[:300]}"})
            return
        finally:
            ticker.cancel()
            with contextlib.suppress(BaseException):
                await engine.aclose()
        forward()
        _write(out, {"done": summary.to_dict()})


def main() -> int:
    out = sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing but the protocol on the pipe
    request, pending = _read_request()
    if request.get("nice", True):
        with contextlib.suppress(OSError):
            os.nice(NICE)
    sys.path[:0] = [p for p in request.get("path", []) if p not in sys.path]
    try:
        event_loop.run(_serve(request, pending, out))
    except Exception as err:  # noqa: BLE001 - setting up failed (store, engine): one line for the app
        _write(out, {"error": f"the engine could not start: {type(err).__name__}: {str(err)[:300]}"})
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
