"""One headless Chromium process and its DevTools session over a pipe, rendering one page at a time.

The browser is spawned (``posix_spawn``: no fork of this threaded process) in a session of its own, with a new
empty profile directory, a stripped environment (no API keys), stdout discarded and stderr to a file in its profile
directory. It speaks the DevTools protocol on its fds 3 (commands in) and 4 (replies and events out), one JSON
message per NUL-terminated frame, and exits when that pipe closes (so it never outlives this process).

A render (:meth:`Browser.render`): set the viewport, navigate the page's one tab to the HTML as a ``data:`` URL,
wait for that navigation's ``load`` and for the page's fonts, then capture the page's box as PNG. Every fetch the
page attempts is paused by the ``Fetch`` domain and failed on the spot (only ``data:`` URLs, which never leave
the process, load); scripts are off. :meth:`Browser.kill` ends the whole process group (renderer and GPU
processes included) and removes the profile directory.

All methods run on one event loop (the renderer's own thread, :mod:`.chromium`).
"""

from __future__ import annotations

import asyncio
import base64
import collections
import contextlib
import json
import os
import shutil
import signal
import tempfile
from typing import Any

from svgagent.core.scoring.chromium_page import PageGeometry, browser_flags
from svgagent.core.scoring.errors import RenderError

__all__ = ["Browser", "BrowserGone", "group_memory_mb"]

STARTUP_TIMEOUT_S = 60.0
MAX_MESSAGE_BYTES = 96 << 20  # the largest DevTools message read (a screenshot's base64): a size cap on the output
_ENV_NAMES = ("PATH", "HOME", "LANG", "LANGUAGE", "TMPDIR", "TZ")
_ENV_PREFIXES = ("LC_", "XDG_", "FONTCONFIG_")
_FONTS_READY = "document.fonts.ready.then(() => document.fonts.size)"


class BrowserGone(RenderError):
    """The browser process ended (crashed, killed, or its pipe closed) during a call."""


def _environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k in _ENV_NAMES or k.startswith(_ENV_PREFIXES)}


def group_memory_mb(session_id: int) -> float:
    """Memory (MB) of every process in session ``session_id`` (the browser and its children): the sum of their
    proportional set sizes, so the pages they share are counted once, not once per process."""
    total_kb = 0
    try:
        entries = os.listdir("/proc")
    except OSError:
        return 0.0
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
            if int(fields[3]) != session_id:  # after "(comm)": state ppid pgrp session ...
                continue
            with open(f"/proc/{entry}/smaps_rollup", "rb") as rollup:
                for line in rollup:
                    if line.startswith(b"Pss:"):
                        total_kb += int(line.split()[1])
                        break
        except (OSError, ValueError, IndexError):
            continue
    return total_kb / 1024


class Browser:
    """One browser process with one tab (see the module docstring). Not reentrant: one render at a time."""

    def __init__(self, executable: str) -> None:
        self.executable = executable
        self.pid: int | None = None
        self._profile: str | None = None
        self._out: asyncio.WriteTransport | None = None
        self._reader: asyncio.StreamReader | None = None
        self._transport: asyncio.BaseTransport | None = None
        self._pump: asyncio.Task[None] | None = None
        self._next_id = 0
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._session = ""
        self._loaded: dict[str, asyncio.Event] = {}  # loaderId -> its "load" lifecycle event
        self._loads: collections.deque[str] = collections.deque(maxlen=32)  # loaderIds whose "load" came
        self._gone: str | None = None
        self.refused: collections.deque[str] = collections.deque(maxlen=64)  # the latest fetches it failed

    @property
    def alive(self) -> bool:
        return self.pid is not None and self._gone is None

    # -- process ------------------------------------------------------------------------------------------------

    async def start(self) -> None:
        """Spawn the browser and open its tab; RenderError (with the browser's last complaint) when it cannot."""
        self._gone, self._pending, self._loads, self._session = None, {}, collections.deque(maxlen=32), ""
        self._profile = tempfile.mkdtemp(prefix="svgagent-chromium-")
        commands_r, commands_w = os.pipe()
        events_r, events_w = os.pipe()
        log = os.path.join(self._profile, "stderr.log")
        actions = [
            (os.POSIX_SPAWN_DUP2, commands_r, 3),
            (os.POSIX_SPAWN_DUP2, events_w, 4),
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
            (os.POSIX_SPAWN_OPEN, 2, log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600),
        ]
        argv = [self.executable, *browser_flags(self._profile), "about:blank"]
        try:
            self.pid = os.posix_spawn(self.executable, argv, _environment(), file_actions=actions, setsid=True)
        except OSError as err:
            for fd in (commands_r, commands_w, events_r, events_w):
                os.close(fd)
            self._remove_profile()
            raise RenderError(f"Chromium could not be started: {err.strerror or err}") from None
        os.close(commands_r)
        os.close(events_w)
        loop = asyncio.get_running_loop()
        self._out, _ = await loop.connect_write_pipe(asyncio.Protocol, os.fdopen(commands_w, "wb", buffering=0))
        self._reader = asyncio.StreamReader(limit=MAX_MESSAGE_BYTES)
        self._transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(self._reader), os.fdopen(events_r, "rb", buffering=0)
        )
        self._pump = asyncio.create_task(self._read_messages())
        try:
            await asyncio.wait_for(self._open_tab(), STARTUP_TIMEOUT_S)
        except (asyncio.TimeoutError, RenderError) as err:  # noqa: UP041 - not the builtin before Python 3.11 (the bundle runs on 3.10)
            why = self._last_complaint() or (
                "no answer" if isinstance(err, asyncio.TimeoutError) else str(err).removeprefix("renderer crashed: ")
            )
            self.kill()
            raise RenderError(f"Chromium did not start ({why})") from None

    async def _open_tab(self) -> None:
        target = await self._call("Target.createTarget", {"url": "about:blank"})
        attached = await self._call("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True})
        self._session = attached["sessionId"]
        for method, params in (
            ("Page.enable", {}),
            ("Page.setLifecycleEventsEnabled", {"enabled": True}),
            ("Fetch.enable", {"patterns": [{"urlPattern": "*"}]}),
            ("Emulation.setScriptExecutionDisabled", {"value": True}),
        ):
            await self._call(method, params, page=True)

    def kill(self) -> None:
        """End the browser's whole process group, reap it, close the pipes, remove the profile. Idempotent."""
        self._gone = self._gone or "closed"
        pid, self.pid = self.pid, None
        if pid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
        if self._out is not None:
            self._out.abort()
            self._out = None
        if self._transport is not None:
            self._transport.close()
            self._transport = None
        if self._pump is not None:
            self._pump.cancel()
            self._pump = None
        self._fail_pending(BrowserGone("renderer was closed during the render"))
        self._remove_profile()

    def _remove_profile(self) -> None:
        if self._profile is not None:
            shutil.rmtree(self._profile, ignore_errors=True)
            self._profile = None

    def _last_complaint(self) -> str:
        """The last line of the browser's stderr that is not dbus noise (for a start that failed)."""
        if self._profile is None:
            return ""
        try:
            with open(os.path.join(self._profile, "stderr.log"), "rb") as log:
                lines = log.read()[-8192:].decode("utf-8", "replace").splitlines()
        except OSError:
            return ""
        useful = [line.strip() for line in lines if line.strip() and "dbus" not in line.lower()]
        return useful[-1][:200] if useful else ""

    # -- protocol -----------------------------------------------------------------------------------------------

    async def _read_messages(self) -> None:
        assert self._reader is not None
        why = "the browser closed its DevTools pipe"
        try:
            while True:
                frame = await self._reader.readuntil(b"\0")
                self._dispatch(json.loads(frame[:-1]))
        except asyncio.IncompleteReadError:
            pass
        except asyncio.LimitOverrunError:
            why = f"the picture is larger than the renderer accepts ({MAX_MESSAGE_BYTES >> 20} MB)"
        except (ValueError, UnicodeDecodeError):
            why = "the browser sent a message that is not JSON"
        self._gone = why
        self._fail_pending(BrowserGone(f"renderer crashed: {why}"))

    def _fail_pending(self, err: RenderError) -> None:
        pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(err)

    def _dispatch(self, message: dict[str, Any]) -> None:
        ident = message.get("id")
        if ident is not None:
            future = self._pending.pop(ident, None)
            if future is not None and not future.done():
                error = message.get("error")
                if error:
                    future.set_exception(RenderError(f"Chromium: {str(error.get('message', error))[:160]}"))
                else:
                    future.set_result(message.get("result") or {})
            return
        method, params = message.get("method"), message.get("params") or {}
        if method == "Fetch.requestPaused":  # every fetch the page tries: only data: URLs may load
            url = str((params.get("request") or {}).get("url", ""))
            request = {"requestId": params.get("requestId")}
            if url[:5].lower() == "data:":
                self._send("Fetch.continueRequest", request, page=True)
            else:
                self.refused.append(url[:200])
                self._send("Fetch.failRequest", {**request, "errorReason": "BlockedByClient"}, page=True)
        elif method == "Page.lifecycleEvent" and params.get("name") == "load":
            loader = str(params.get("loaderId"))
            self._loads.append(loader)
            event = self._loaded.get(loader)
            if event is not None:
                event.set()
        elif method in ("Inspector.detached", "Target.targetCrashed", "Target.detachedFromTarget"):
            self._gone = "the page crashed"
            self._fail_pending(BrowserGone("renderer crashed: the page crashed"))

    def _send(self, method: str, params: dict[str, Any], *, page: bool = False) -> int:
        if self._gone is not None or self._out is None or self._out.is_closing():
            raise BrowserGone(f"renderer crashed: {self._gone or 'not running'}")
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if page:
            message["sessionId"] = self._session
        self._out.write(json.dumps(message).encode() + b"\0")  # buffered by the loop: never blocks it
        return self._next_id

    async def _call(self, method: str, params: dict[str, Any], *, page: bool = False) -> dict[str, Any]:
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        ident = self._send(method, params, page=page)
        self._pending[ident] = future
        return await future

    # -- one render ---------------------------------------------------------------------------------------------

    async def render(self, html: str, geometry: PageGeometry) -> bytes:
        """The PNG of ``html`` captured over ``geometry`` (no timeout of its own: the pool gives one)."""
        width, height = geometry.viewport
        await self._call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            page=True,
        )
        url = "data:text/html;charset=utf-8;base64," + base64.b64encode(html.encode("utf-8")).decode("ascii")
        loaded = asyncio.Event()
        navigation = await self._call("Page.navigate", {"url": url}, page=True)
        if navigation.get("errorText"):
            raise RenderError(f"Chromium could not load the page ({str(navigation['errorText'])[:120]})")
        loader = str(navigation.get("loaderId"))
        if loader not in self._loads:  # its "load" may have come in the same read as the navigation's reply
            self._loaded = {loader: loaded}
            try:
                await loaded.wait()
            finally:
                self._loaded = {}
        await self._call("Runtime.evaluate", {"expression": _FONTS_READY, "awaitPromise": True}, page=True)
        clip = {"x": 0, "y": 0, "width": geometry.width, "height": geometry.height, "scale": geometry.scale}
        shot = await self._call(
            "Page.captureScreenshot",
            {"format": "png", "clip": clip, "captureBeyondViewport": False, "fromSurface": True},
            page=True,
        )
        try:
            return base64.b64decode(shot["data"], validate=True)
        except (KeyError, ValueError, TypeError):
            raise RenderError("Chromium returned no picture") from None
