"""Benchmark the terminal app: event-loop stalls while a big run streams, opening a finished big run, first paint
of a real `svgagent tui` process and its memory with a big run open.

    .venv/bin/python bench/tui.py [--rollouts 10000] [--seconds 10] [--rate 100] [--repeat 5] [--no-real-engine | --only-real-engine | --only-open-keys]

1. Streaming (headless, in this process): the app opens a run of N queued rollouts and resumes it with `c`; the
   engine process runs a stand-in (bench/stream_engine.py) that, like the real engine, writes each state change
   to the store and publishes a RolloutUpdate — `--rate` changes a second, 64 rollouts in flight, each going
   generating → rendering → judging (with a real PNG) → scored. A ticker task on the app's event loop sleeps 1 ms at a time and
   records the longest gap between its wake-ups: the longest time the app could not react to a key.
2. Open (headless, in this process, before anything else has run an app): from `SvgAgentApp(run_id=…)` to the
   table holding every rollout of a finished N-rollout run.
3. First paint (a real process under a pseudo-terminal, 120×40): from spawning `svgagent tui --demo` to the
   dashboard's first frame on the terminal (its welcome text), median of `--repeat` starts.
4. The same real process opening the finished N-rollout run (`svgagent tui --run ID`; each rollout with an answer,
   SVG, PNG and judge's answer, as stored): spawn until the summary "N/N done" is on the terminal, then the cursor
   over 40 rollouts, the Preview and back; its peak resident memory (VmHWM).
5. The real engine (`--concurrency`, default 64): the app resumes the queued N-rollout run with the real engine
   against the simulator (its own process) for `--seconds`, then stops it; the longest gaps, as in 1, and the
   key-to-screen latency while it streams: a thread sends a cursor key through the app's driver 0.1 s after the last one showed (as
   the terminal's input thread does; every 8th after a 1.3 s pause, as a person stops to look) and waits for the
   screen to be composed and written with the cursor moved. Frames are turned into escape sequences and written
   through Textual's writer thread (to /dev/null), as on a terminal: headless Textual skips that work.
   Also the CPU the loop's thread used a second after the first (what it did, not what it waited for: it reads
   about the same on a loaded machine) and the full garbage collections meanwhile (each holds the GIL).

6. What a key opens (headless, 120×40, frames written as to a terminal, keys sent through the driver as in 5):
   `enter` on a rollout of a finished run until the rollout screen shows its picture (the PNG is in the store),
   `?` until the help is on screen, `3` until the Config form is (its first open: a new app each time; also at
   80×24, and until every row of the form is mounted — the rows under the first screenful follow it); p50 and
   p95 of `--open-repeat` keys each, in a process of its own (`--only-open-keys`: this part alone).

Noise: on a shared machine other processes steal the CPU; the idle baseline (1), repeated starts (3, 4) and, in 5,
a bare asyncio loop ticking in a process of its own during the run (the floor: what the scheduler alone costs a
loop then) show how much. Read the figures with the machine's load.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import fcntl
import functools
import gc
import json
import math
import os
import pty
import re
import select
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

from _report import PREFIX, compile_sources, cpu_seconds, report

from svgagent.core.config.settings import load_settings
from svgagent.core.demo import demo_overrides
from svgagent.core.scoring.models import DatasetRow
from svgagent.core.scoring.render_worker import render_svg_to_png
from svgagent.core.store.run_store import Store
from svgagent.tui.app import SvgAgentApp
from svgagent.tui.imaging import configure_term_image
from svgagent.tui.widgets.rollout_table import RolloutTable

SIZE = (120, 40)
ANSI = re.compile(rb"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|P[^\x1b]*\x1b\\|[@-Z\\-_])")
FIRST_PAINT_MARKER = b"press r to start a run"


# --- fixtures ------------------------------------------------------------------------------------------------
def make_run(store: Store, n: int, *, finished: bool) -> str:
    rows = [
        DatasetRow(
            i, f"row_{i}", f"Draw picture number {i}.", tuple(f"Requirement {j} of picture {i}." for j in range(6))
        )
        for i in range(n)
    ]
    settings = {"model": "bench-policy", "judge_model": "bench-judge", "threshold": 0.5}
    run_id = store.create_run(
        name="bench", settings=settings, dataset={"name": "bench", "rows": n}, rows=rows, samples=1
    )
    if finished:  # each with what a real finished rollout stores: answer, SVG, the PNG, the judge's answer
        svg = (
            '<svg xmlns="http://www.w3.org/2000/svg" width="512" height="512">'
            + "".join(
                f'<circle cx="{40 + 7 * k}" cy="{60 + 5 * k}" r="{10 + k}" fill="#{k:02x}80c0"/>' for k in range(40)
            )
            + "</svg>"
        )
        png = render_svg_to_png(svg, 512)
        answer = f"Here is the picture.\n\n```svg\n{svg}\n```\n"
        judge = '{"fulfilled": 3, "total": 6, "rationale": "' + "The picture shows most of it. " * 12 + '"}'
        with store._tx() as db:
            db.executemany(
                "UPDATE rollouts SET status='scored', fulfilled=?, score=?, is_score_valid=1, generation_s=?,"
                " judge_s=?, render_s=0.05, prompt_tokens=100, completion_tokens=?, reason=?, raw_answer=?, svg=?,"
                " png=?, judge_raw=? WHERE rollout_id=?",
                [
                    (
                        i % 7,
                        (i % 7) / 6,
                        1 + i % 9,
                        0.5 + i % 3,
                        200 + i % 50,
                        "The picture shows most of it. " * 12,
                        answer,
                        svg,
                        png,
                        judge,
                        f"{run_id}.{i}.0",
                    )
                    for i in range(n)
                ],
            )
        store.set_run_status(run_id, "completed", store.summarize(run_id, 0.5))
    return run_id


class Ticker:
    """Sleeps `period` at a time on the running loop and records each wake-up's gap: (start, end) in seconds, and
    how much CPU the loop's thread used meanwhile (a gap with little CPU was spent waiting: for the GIL, or for a
    core the machine gave to another process)."""

    def __init__(self, period: float = 0.001) -> None:
        self.period = period
        self.gaps: list[tuple[float, float]] = []
        self.cpu: dict[tuple[float, float], float] = {}
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        last, last_cpu = time.perf_counter(), time.thread_time()
        while True:
            await asyncio.sleep(self.period)
            now, cpu = time.perf_counter(), time.thread_time()
            self.gaps.append((last, now))
            if now - last > 0.02:
                self.cpu[(last, now)] = cpu - last_cpu
            last, last_cpu = now, cpu

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        assert self._task is not None
        self._task.cancel()
        try:
            await self._task
        except asyncio.CancelledError:
            pass


def headless_app(store: Store, run_id: str | None, env_file: Path) -> Any:
    extra = demo_overrides("http://127.0.0.1:9/v1")  # never called: the stand-in engine makes no requests
    settings = load_settings(store=str(store.path), **extra)
    return SvgAgentApp(
        settings=settings, store=store, demo=True, run_id=run_id, env_file=env_file, demo_overrides=extra
    )


# --- 2. open a finished run ----------------------------------------------------------------------------------
@contextlib.contextmanager
def stamp_after(
    cls: type, name: str, stamps: dict[str, float], key: str, when: Callable[[Any], bool] = lambda self: True
) -> Iterator[None]:
    """Record in ``stamps[key]`` when ``cls.name`` first returns for an object ``when`` accepts (instrumentation
    only: the original runs as before)."""
    original = getattr(cls, name)

    @functools.wraps(original)  # the same signature: Textual passes handlers only the arguments they take
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(self, *args, **kwargs)
        if when(self):
            stamps.setdefault(key, time.perf_counter())
        return result

    with mock.patch.object(cls, name, wrapper):
        yield


async def measure_open(store: Store, run_id: str, n: int, env_file: Path) -> dict[str, float]:
    """Seconds from ``SvgAgentApp(run_id=…)`` until the table holds every rollout, and until the first frame of
    the dashboard has been composed and written (headless: written nowhere)."""
    from textual.screen import Screen

    from svgagent.screens.dashboard import Dashboard

    stamps: dict[str, float] = {}
    with (
        stamp_after(RolloutTable, "load", stamps, "loaded"),
        stamp_after(Screen, "_compositor_refresh", stamps, "frame", lambda screen: isinstance(screen, Dashboard)),
    ):
        t0 = time.perf_counter()
        app = headless_app(store, run_id, env_file)
        async with app.run_test(headless=True, size=SIZE) as pilot:
            await pilot.pause()
            ok = len(app.dashboard.query_one(RolloutTable).visible_ids) == n
            await pilot.press("q")
    if not ok or "loaded" not in stamps or "frame" not in stamps:
        raise SystemExit("open: the table did not show every rollout")
    return {"loaded": stamps["loaded"] - t0, "painted": stamps["frame"] - t0}


async def settle(app: Any, pilot: Any) -> None:
    """Let queued messages and the workers the app started finish (a superseded worker is cancelled: fine)."""
    from textual.worker import WorkerCancelled, WorkerFailed

    await pilot.pause()
    try:
        await app.workers.wait_for_complete()
    except (WorkerCancelled, WorkerFailed):
        pass
    await pilot.pause()


# --- 1. streaming ----------------------------------------------------------------------------------------------
async def measure_streaming(store: Store, run_id: str, env_file: Path, seconds: float, rate: float) -> dict[str, Any]:
    os.environ.update(BENCH_STREAM_RATE=str(rate), BENCH_STREAM_SECONDS=str(seconds))  # read in the engine process
    app = headless_app(store, run_id, env_file)
    app.control.engine_factory = "stream_engine:StreamingEngine"
    app.control.engine_path = [str(Path(__file__).resolve().parent)]
    ticker = Ticker()
    arrivals: list[float] = []  # perf_counter() of each state change as the app's bus delivers it

    with contextlib.ExitStack() as stack:
        original = app.bus.publish

        def publish(event: Any) -> None:
            arrivals.append(time.perf_counter())
            original(event)

        stack.enter_context(mock.patch.object(app.bus, "publish", publish))
        async with app.run_test(headless=True, size=SIZE) as pilot:
            await settle(app, pilot)
            ticker.start()
            await asyncio.sleep(0.5)  # an idle baseline: what the loop's wake-ups cost with nothing to do
            idle = max((end - start for start, end in ticker.gaps), default=0.0)
            t0 = time.perf_counter()
            await pilot.press("c")  # resume: RunControl starts the stand-in engine, the dashboard follows the bus
            if not app.control.running:
                raise SystemExit("streaming: the run did not start (is `c` bound to resume?)")
            while app.control.running:
                await asyncio.sleep(0.05)
            await settle(app, pilot)
            wall = time.perf_counter() - t0
            await ticker.stop()
            batches = app.dashboard.feed.batches
            await pilot.press("q")
    if not arrivals:
        raise SystemExit("streaming: no state change reached the app")
    first, last = arrivals[0], arrivals[-1]
    # while the run streams: gaps wholly between the first and the last state change; the resume key press and
    # the engine's start (reset, load the queue) come before, the run's end (summary, table reload) after
    inside = [(start, end) for start, end in ticker.gaps if start >= first and end <= last]
    streaming = sorted(end - start for start, end in inside)
    worst = max(inside, key=lambda gap: gap[1] - gap[0])
    resume = [end - start for start, end in ticker.gaps if end > t0 and start < first]
    ending = [end - start for start, end in ticker.gaps if end > last]
    return {
        "max": streaming[-1],
        "max_cpu": ticker.cpu.get(worst, worst[1] - worst[0]),
        "p99": streaming[int(0.99 * (len(streaming) - 1))],
        "p50": statistics.median(streaming),
        "resume": max(resume),
        "end": max(ending, default=0.0),
        "idle": idle,
        "wall": wall,
        "streamed": last - first,
        "events": len(arrivals),
        "batches": batches,
        "ticks": len(streaming),
    }


# --- 5. the real engine ----------------------------------------------------------------------------------------
class FullCollections:
    """While in use: the CPU of each full (generation 2) garbage collection, in whichever thread it ran (it holds
    the GIL: the loop waits for it)."""

    def __init__(self) -> None:
        self.cpu: list[float] = []
        self._started = 0.0

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if info["generation"] == 2:
            if phase == "start":
                self._started = time.thread_time()
            else:
                self.cpu.append(time.thread_time() - self._started)

    def __enter__(self) -> FullCollections:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._callback)


def terminal_like_driver() -> type:
    """Textual's headless driver as a terminal's: `run_test(headless=True)` skips turning each frame into the
    terminal's escape sequences and writing them (App._display does nothing when the driver is headless); this one
    says it is not headless and writes every frame, as Linux's driver does, through Textual's writer thread (to
    /dev/null), so a frame's whole cost is in the measurement."""
    from textual.drivers._writer_thread import WriterThread
    from textual.drivers.headless_driver import HeadlessDriver

    class TerminalLikeDriver(HeadlessDriver):
        written = 0  # characters of frames written (a check that frames are drawn at all)

        @property
        def is_headless(self) -> bool:
            return False

        def start_application_mode(self) -> None:
            self._sink = open(os.devnull, "w")  # noqa: SIM115 - closed in stop_application_mode
            self._writer = WriterThread(self._sink)
            self._writer.start()
            super().start_application_mode()

        def write(self, data: str) -> None:
            TerminalLikeDriver.written += len(data)
            self._writer.write(data)

        def stop_application_mode(self) -> None:
            super().stop_application_mode()
            self._writer.stop()
            self._sink.close()

    return TerminalLikeDriver


class KeyProbe:
    """Key-to-screen latency, as a person at the keyboard feels it: a thread of its own (like the terminal driver's
    input thread) sends a cursor key through the app's driver `period` seconds after the last one showed — every
    `pause_every`-th key after `pause` seconds instead, as a person stops to look (the app runs its deferred full
    collection after a second without keys: a key then may land in it) — and the time until the dashboard's
    screen is next composed and written with the table's cursor on the row the key moved it to is one latency (a
    key not shown within `timeout` counts as lost, and as `timeout` in the percentiles). The cursor goes down and
    up between the first two rows."""

    def __init__(
        self, app: Any, period: float = 0.1, timeout: float = 2.0, pause: float = 1.3, pause_every: int = 8
    ) -> None:
        import threading

        self.app, self.period, self.timeout = app, period, timeout
        self.pause, self.pause_every = pause, pause_every
        self.latencies: list[float] = []
        self.lost = 0
        self._pending: tuple[float, str] | None = None  # (perf_counter() when sent, rollout id expected)
        self._shown = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="key probe", daemon=True)

    def composed(self, screen: Any) -> None:
        """Called after each composition of a screen (on the app's loop)."""
        pending = self._pending
        if pending is None or screen is not self.app.screen:
            return
        if self.app.dashboard.query_one(RolloutTable).cursor_id == pending[1]:
            self.latencies.append(time.perf_counter() - pending[0])
            self._pending = None
            self._shown.set()

    def _run(self) -> None:
        from textual.events import Key

        sent = 0
        while not self._stop.wait(self.pause if sent and sent % self.pause_every == 0 else self.period):
            table = self.app.dashboard.query_one(RolloutTable)
            ids = table.visible_ids[:2]
            if len(ids) < 2:
                continue
            down = table.cursor_id == ids[0]
            self._shown.clear()
            self._pending = (time.perf_counter(), ids[1] if down else ids[0])
            self.app._driver.send_message(Key("down" if down else "up", None))
            sent += 1
            if not self._shown.wait(self.timeout):
                self.lost += 1
                self._pending = None

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


async def measure_real_engine(
    store: Store, run_id: str, env_file: Path, url: str, seconds: float, concurrency: int
) -> dict[str, Any]:
    """Resume the N-rollout run with the real engine against the simulator (another process) for `seconds`, then
    stop it: the longest event-loop gaps that began in the first second (the key press, the engine starting and
    queueing every rollout), later, and from the stop on; and key-to-screen latencies while it streams."""
    from textual.screen import Screen

    extra = demo_overrides(url)
    settings = load_settings(
        store=str(store.path), concurrency=concurrency, judge_concurrency=concurrency, max_retries=0, **extra
    )
    app = SvgAgentApp(settings=settings, store=store, demo=True, run_id=run_id, env_file=env_file, demo_overrides=extra)
    ticker = Ticker()
    probe = KeyProbe(app)
    original = Screen._compositor_refresh

    def composed(screen: Any) -> None:
        original(screen)
        probe.composed(screen)

    full = FullCollections()
    driver = terminal_like_driver()
    with (
        mock.patch.object(Screen, "_compositor_refresh", composed),
        full,
        mock.patch("textual.drivers.headless_driver.HeadlessDriver", driver),
    ):
        async with app.run_test(headless=True, size=SIZE) as pilot:
            await settle(app, pilot)
            ticker.start()
            t0 = time.perf_counter()
            await pilot.press("c")
            probe.start()
            await asyncio.sleep(max(0.0, 1.0 - (time.perf_counter() - t0)))
            cpu0, full_at_1s = time.thread_time(), len(full.cpu)  # the loop's thread, from the first second on
            await asyncio.sleep(max(0.0, seconds - (time.perf_counter() - t0)))
            await asyncio.to_thread(probe.stop)  # joins its thread: not on the loop it measures
            t1, cpu1, full_at_stop = time.perf_counter(), time.thread_time(), len(full.cpu)
            await pilot.press("s")
            await settle(app, pilot)
            t2 = time.perf_counter()
            await ticker.stop()
            await pilot.press("q")
    done = sum(1 for r in store.list_rollouts(run_id) if r.status.terminal)

    def longest(start: float, end: float) -> float:  # of the gaps that began in [start, end)
        return max((b - a for a, b in ticker.gaps if start <= a < end), default=0.0)

    steady = [(a, b) for a, b in ticker.gaps if t0 + 1 <= a < t1]
    worst = max(steady, key=lambda gap: gap[1] - gap[0], default=(0.0, 0.0))
    if not driver.written:
        raise SystemExit("no frame was written: the terminal-like driver is not in use")
    keys = sorted(probe.latencies + [probe.timeout] * probe.lost) or [float("nan")]
    return {
        "start": longest(t0, t0 + 1),
        "steady": longest(t0 + 1, t1),
        "stop": longest(t1, t2),
        "done": done,
        "steady_cpu": ticker.cpu.get(worst, 0.0),
        "seconds": t1 - t0,
        "loop_cpu": (cpu1 - cpu0) / max(1e-9, t1 - t0 - 1.0),
        "full_gc": full.cpu[full_at_1s:full_at_stop],
        "key_p50": statistics.median(keys),
        "key_p95": keys[math.ceil(0.95 * len(keys)) - 1],  # nearest rank
        "key_max": keys[-1],
        "keys": len(probe.latencies),
        "keys_lost": probe.lost,
    }


# --- 6: what a key opens ---------------------------------------------------------------------------------------
class ScreenWatch:
    """After each composition of a screen (on the app's loop): has the screen shown what the key asked for? The
    first composition for which ``wanted(screen)`` holds ends the wait started by :meth:`expect`."""

    def __init__(self) -> None:
        self._wanted: Callable[[Any], bool] | None = None
        self._shown: asyncio.Event | None = None
        self.at = 0.0

    def expect(self, wanted: Callable[[Any], bool]) -> asyncio.Event:
        self._wanted, self._shown = wanted, asyncio.Event()
        return self._shown

    def composed(self, screen: Any) -> None:
        if (
            self._wanted is not None
            and self._shown is not None
            and screen is screen.app.screen
            and self._wanted(screen)
        ):
            self.at = time.perf_counter()
            self._wanted = None
            self._shown.set()


def percentiles(values: list[float]) -> tuple[float, float]:
    """(p50, p95 by nearest rank) of ``values``."""
    ordered = sorted(values)
    return statistics.median(ordered), ordered[math.ceil(0.95 * len(ordered)) - 1]


async def key_to_screen(
    app: Any, watch: ScreenWatch, key: str, character: str | None, wanted: Callable[[Any], bool]
) -> float:
    """Seconds from a key sent through the app's driver (as the terminal's input thread sends it) to the first
    frame composed and written that shows what ``wanted`` looks for."""
    from textual.events import Key

    shown = watch.expect(wanted)
    t0 = time.perf_counter()
    app._driver.send_message(Key(key, character))
    await asyncio.wait_for(shown.wait(), 30)
    return watch.at - t0


def _picture_of(rollout_id: str) -> Callable[[Any], bool]:
    def shown(screen: Any) -> bool:
        if type(screen).__name__ != "RolloutDetail":
            return False
        picture = screen.query_one("#detail-image")
        return picture.image is not None and picture.rollout_id == rollout_id

    return shown


def _help_shown(screen: Any) -> bool:
    return type(screen).__name__ == "HelpScreen"


def _config_form_shown(screen: Any) -> bool:
    return (
        type(screen).__name__ == "Dashboard" and bool(screen.query("#field-model")) and screen.active_pane == "config"
    )


async def measure_open_keys(store: Store, run_id: str, env_file: Path, repeat: int) -> dict[str, list[float]]:
    """Key to screen, each ``repeat`` times, on a finished run (its PNGs in the store), 120×40, frames written as
    to a terminal: `enter` on a rollout until its picture is on the rollout screen (another rollout each time);
    `?` until the help is; `3` until the Config form is — its first open, so a new app each time."""
    from textual.screen import Screen

    watch = ScreenWatch()
    original = Screen._compositor_refresh

    def composed(screen: Any) -> None:
        original(screen)
        watch.composed(screen)

    found: dict[str, list[float]] = {"picture": [], "help": [], "config": [], "config rows": [], "config 80x24": []}
    with (
        mock.patch.object(Screen, "_compositor_refresh", composed),
        mock.patch("textual.drivers.headless_driver.HeadlessDriver", terminal_like_driver()),
    ):
        for _attempt in range(repeat):  # at 80×24 (its pane shows more rows: the first screenful is bigger)
            app = headless_app(store, run_id, env_file)
            async with app.run_test(headless=True, size=(80, 24)) as pilot:
                await settle(app, pilot)
                found["config 80x24"].append(await key_to_screen(app, watch, "3", "3", _config_form_shown))
                await settle(app, pilot)
                await pilot.press("escape", "q")
        for attempt in range(repeat):
            app = headless_app(store, run_id, env_file)
            async with app.run_test(headless=True, size=SIZE) as pilot:
                await settle(app, pilot)
                if attempt == 0:  # the rollout screen and the help, `repeat` times in this app
                    table = app.dashboard.query_one(RolloutTable)
                    for _ in range(repeat):
                        await pilot.press("down")
                        await settle(app, pilot)
                        wanted = _picture_of(table.cursor_id)
                        found["picture"].append(await key_to_screen(app, watch, "enter", "\r", wanted))
                        await pilot.press("escape")
                        await settle(app, pilot)
                        found["help"].append(await key_to_screen(app, watch, "question_mark", "?", _help_shown))
                        await pilot.press("escape")
                        await settle(app, pilot)
                t0 = time.perf_counter()
                found["config"].append(await key_to_screen(app, watch, "3", "3", _config_form_shown))
                await app.dashboard.query_one("ConfigForm").every_row()
                found["config rows"].append(time.perf_counter() - t0)
                await settle(app, pilot)
                await pilot.press("escape", "q")
    return found


def open_keys_part(root: Path, env_file: Path, args: argparse.Namespace) -> dict[str, float]:
    with Store(root / "keys.db") as store:
        run_id = make_run(store, max(args.open_repeat + 2, 40), finished=True)
        found = asyncio.run(measure_open_keys(store, run_id, env_file, args.open_repeat))
    figures: dict[str, float] = {}
    names = {
        "picture": "tui enter to the rollout's picture ms",
        "help": "tui ? to the help ms",
        "config": "tui 3 to the Config form, first open ms",
        "config rows": "tui 3 to every Config row mounted, first open ms",
        "config 80x24": "tui 3 to the Config form at 80x24, first open ms",
    }
    for what, name in names.items():
        p50, p95 = percentiles(found[what])
        figures[f"{name} p50"], figures[f"{name} p95"] = round(1000 * p50), round(1000 * p95)
        print(f"{name}: p50 {1000 * p50:.0f} ms, p95 {1000 * p95:.0f} ms ({len(found[what])} keys)")
    print(f"(load average {os.getloadavg()[0]:.1f})")
    return figures


# --- 3 and 4: a real process under a pseudo-terminal ----------------------------------------------------------
def svgagent_command() -> list[str]:
    script = Path(sys.executable).with_name("svgagent")
    return [str(script)] if script.exists() else [sys.executable, "-m", "svgagent.tui.cli.main"]


def clean_env(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SVGAGENT_", "TMUX", "FIREWORKS_", "OPENAI_"))}
    home = root / "home"
    env.update(
        TERM="xterm-256color",
        COLORTERM="truecolor",
        LANG="C.UTF-8",
        LC_ALL="C.UTF-8",
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_DATA_HOME=str(home / "data"),
        XDG_CACHE_HOME=str(home / "cache"),
        XDG_STATE_HOME=str(home / "state"),
        SVGAGENT_HOME=str(root / "svgagent-home"),
        COLUMNS=str(SIZE[0]),
        LINES=str(SIZE[1]),
    )
    return env


def rss_mb(pid: int) -> float:
    """The process's peak resident memory so far (VmHWM), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def spawn_until(
    args: list[str], marker: bytes, cwd: Path, env: dict[str, str], timeout: float = 60.0, browse: bool = False
) -> dict[str, float]:
    """Start `svgagent ARGS` on a fresh pseudo-terminal; seconds (and CPU seconds) until `marker` is on it, then
    (``browse``: after moving the cursor over 40 rollouts and showing the Preview) its peak RSS; quit."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", SIZE[1], SIZE[0], 0, 0))
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [*svgagent_command(), *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        cwd=cwd,
        env=env,
        start_new_session=True,
        close_fds=True,
    )
    os.close(slave)
    seen = b""
    found = None
    try:
        deadline = t0 + timeout
        while found is None and time.perf_counter() < deadline:
            ready, _, _ = select.select([master], [], [], 0.05)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 1 << 16)
            except OSError as err:
                if err.errno == errno.EIO:
                    break
                raise
            seen += chunk
            if marker in ANSI.sub(b"", seen[-200_000:]):
                found = time.perf_counter() - t0
                cpu = cpu_seconds(proc.pid)
        if found is None:
            text = ANSI.sub(b"", seen).decode(errors="replace")[-1500:]
            raise SystemExit(f"`svgagent {' '.join(args)}`: {marker!r} never appeared; the terminal showed:\n{text}")
        time.sleep(1.0)  # let the first frame's follow-up work finish before measuring memory
        for keys in (b"j" * 30, b"2", b"k" * 10, b"1", b"G") if browse else ():  # the cursor over many rollouts
            os.write(master, keys)
            time.sleep(0.3)
        rss = rss_mb(proc.pid)
        os.write(master, b"q")
        end = time.perf_counter() + 15
        while proc.poll() is None and time.perf_counter() < end:
            if select.select([master], [], [], 0.1)[0]:
                try:
                    os.read(master, 1 << 16)
                except OSError:
                    break
        return {"seconds": found, "rss": rss, "cpu": cpu}
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        os.close(master)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rollouts", type=int, default=10_000, help="rollouts in the big run")
    parser.add_argument("--seconds", type=float, default=10.0, help="how long the run streams")
    parser.add_argument("--rate", type=float, default=100.0, help="state changes per second while streaming")
    parser.add_argument("--repeat", type=int, default=5, help="real-process starts per measurement (median)")
    parser.add_argument(
        "--no-real-engine",
        dest="real_engine",
        action="store_false",
        help="skip part 5, the real engine against the simulator",
    )
    parser.add_argument("--only-real-engine", action="store_true", help="run part 5 alone")
    parser.add_argument("--only-open-keys", action="store_true", help="run part 6 alone")
    parser.add_argument(
        "--open-repeat",
        type=int,
        default=20,
        help="part 6: keys per measurement (and apps for `3`); p95 of 10 is their max",
    )
    parser.add_argument("--concurrency", type=int, default=64, help="part 5: policy and judge concurrency")
    parser.add_argument("--latency", type=float, default=0.2, help="part 5: simulated policy and judge latency (s)")
    parser.add_argument(
        "--sim-nice",
        type=int,
        default=None,
        metavar="N",
        help="part 5: the simulator's CPU priority below the app's (default: as `tui --demo` starts "
        "its simulator, the engine process's; 0: the app's)",
    )
    args = parser.parse_args()
    print(f"bytecode: {compile_sources()} stale svgagent modules compiled first (an installed svgagent has them)")
    n = args.rollouts
    configure_term_image()
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        env_file = root / "bench.env"
        if args.only_open_keys:
            figures.update(open_keys_part(root, env_file, args))
            report(figures)
            return 0
        if not args.only_real_engine:
            figures.update(headless_parts(root, env_file, n, args))
            figures.update(open_keys_in_own_process(args))
        if args.real_engine or args.only_real_engine:
            figures.update(real_engine_part(root, env_file, n, args))
        if not args.only_real_engine:
            figures.update(process_parts(root, n, args))
    report(figures)
    return 0


def open_keys_in_own_process(args: argparse.Namespace) -> dict[str, float]:
    """Part 6 in a process of its own, as a user's app is one: here it would pay for the garbage the parts before
    it leave on this process's heap (the big run read again and again) — 80×24's Config p95 119 ms, 89 alone."""
    argv = [sys.executable, __file__, "--only-open-keys", "--open-repeat", str(args.open_repeat)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900, check=False)
    figures: dict[str, float] = {}
    for line in done.stdout.splitlines():
        if line.startswith(PREFIX):
            figures.update(json.loads(line.removeprefix(PREFIX)))
        elif not line.startswith("bytecode:"):
            print(line)
    if done.returncode != 0:
        raise SystemExit(f"part 6 failed: {done.stderr[-2000:]}")
    return figures


def headless_parts(root: Path, env_file: Path, n: int, args: argparse.Namespace) -> dict[str, float]:
    with Store(root / "open.db") as store:
        finished_id = make_run(store, n, finished=True)
        opened = asyncio.run(measure_open(store, finished_id, n, env_file))
    (root / "open.id").write_text(finished_id)
    print(
        f"open a finished {n:,}-rollout run (headless): every row in the table {opened['loaded']:.3f} s, "
        f"first frame {opened['painted']:.3f} s after SvgAgentApp(run_id=…)"
    )

    with Store(root / "stream.db") as store:
        live_id = make_run(store, n, finished=False)
        s = asyncio.run(measure_streaming(store, live_id, env_file, args.seconds, args.rate))
    print(
        f"streaming {s['events']} state changes over {s['streamed']:.1f} s "
        f"({s['events'] / s['streamed']:.0f}/s) into a {n:,}-rollout run, {s['batches']} table updates: "
        f"event-loop gap max {1000 * s['max']:.1f} ms (the loop's thread ran {1000 * s['max_cpu']:.0f} ms of "
        f"it), p99 {1000 * s['p99']:.1f} ms, median "
        f"{1000 * s['p50']:.2f} ms ({s['ticks']} ticks; idle baseline max {1000 * s['idle']:.1f} ms); "
        f"around the resume key press and engine start {1000 * s['resume']:.0f} ms, at the run's end "
        f"{1000 * s['end']:.0f} ms"
    )
    return {
        "tui longest event-loop stall ms": round(1000 * s["max"], 1),
        "tui longest stall: CPU the loop's thread used, ms": round(1000 * s["max_cpu"], 1),
        "tui event-loop stall p99 ms": round(1000 * s["p99"], 1),
        "tui stall ms, resume key to first update": round(1000 * s["resume"], 1),
        "tui stall ms, run end and table reload": round(1000 * s["end"], 1),
        "tui open finished 10k run s" if n == 10_000 else f"tui open finished {n} run s": round(opened["loaded"], 3),
        "tui open 10k run, first frame s" if n == 10_000 else f"tui open {n} run, first frame s": round(
            opened["painted"], 3
        ),
    }


FLOOR = """
import asyncio, sys, time
async def tick(seconds):
    last = time.perf_counter(); end = last + seconds; worst = 0.0
    while last < end:
        await asyncio.sleep(0.001)
        now = time.perf_counter(); worst = max(worst, now - last); last = now
    print(1000 * worst, flush=True)
asyncio.run(tick(float(sys.argv[1])))
"""


def start_floor(seconds: float) -> subprocess.Popen[str]:
    """A bare asyncio loop doing nothing but the ticker's 1 ms sleeps, in a process of its own, for ``seconds``:
    its longest gap is what the machine's scheduler alone costs a loop at this moment (no app, no GIL to share)."""
    return subprocess.Popen([sys.executable, "-c", FLOOR, str(seconds)], stdout=subprocess.PIPE, text=True)


def read_floor(proc: subprocess.Popen[str]) -> float:
    out, _ = proc.communicate(timeout=60)
    return float(out.strip() or "nan")


def real_engine_part(root: Path, env_file: Path, n: int, args: argparse.Namespace) -> dict[str, float]:
    from engine import start_simulator  # bench/engine.py: the simulator in its own process

    from svgagent.core.run.engine_process import NICE

    nice = NICE if args.sim_nice is None else args.sim_nice
    proc, url = start_simulator(args.latency, nice)
    try:
        with Store(root / "real.db") as store:
            real_id = make_run(store, n, finished=False)
            floor = start_floor(args.seconds + 2)
            real = asyncio.run(measure_real_engine(store, real_id, env_file, url, args.seconds, args.concurrency))
            floor_ms = read_floor(floor)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    print(
        f"the real engine on the {n:,}-rollout run (concurrency {args.concurrency}, simulator latency "
        f"{args.latency:g} s at nice {nice}, {real['done']} rollouts done in {real['seconds']:.1f} s): longest gap "
        f"{1000 * real['start']:.0f} ms in the first second, {1000 * real['steady']:.0f} ms after it (the loop's "
        f"thread ran {1000 * real['steady_cpu']:.0f} ms of it), "
        f"{1000 * real['stop']:.0f} ms around the stop; key to screen p50 {1000 * real['key_p50']:.0f} ms, "
        f"p95 {1000 * real['key_p95']:.0f} ms, max {1000 * real['key_max']:.0f} ms ({real['keys']} keys, "
        f"{real['keys_lost']} not shown within 2 s); after the first second the loop's thread used "
        f"{1000 * real['loop_cpu']:.0f} ms of CPU a second, full garbage collections {len(real['full_gc'])} "
        f"({', '.join(f'{1000 * c:.0f}' for c in real['full_gc']) or 'none'} ms of CPU); meanwhile a bare asyncio loop in a process of its own "
        f"(the machine's floor) had a longest gap of {floor_ms:.0f} ms (load {os.getloadavg()[0]:.1f})"
    )
    return {
        "tui stall ms, real engine: a bare loop meanwhile (the floor)": round(floor_ms),
        "tui stall ms, real engine: first second": round(1000 * real["start"]),
        "tui stall ms, real engine: after it": round(1000 * real["steady"]),
        "tui stall ms, real engine: around the stop": round(1000 * real["stop"]),
        "tui key-to-screen ms p95, real engine": round(1000 * real["key_p95"]),
        "tui loop CPU ms a second, real engine": round(1000 * real["loop_cpu"]),
        "tui full collections while streaming, real engine": len(real["full_gc"]),
    }


def process_parts(root: Path, n: int, args: argparse.Namespace) -> dict[str, float]:
    env = clean_env(root)
    work = root / "work"
    work.mkdir()
    finished_id = (root / "open.id").read_text()
    paints = [spawn_until(["tui", "--demo"], FIRST_PAINT_MARKER, work, env) for _ in range(args.repeat)]
    first = [p["seconds"] for p in paints]
    print(
        f"first paint of `svgagent tui --demo`: median {statistics.median(first):.2f} s "
        f"({', '.join(f'{x:.2f}' for x in first)})"
    )
    opens = [
        spawn_until(
            ["tui", "--store", str(root / "open.db"), "--run", finished_id],
            f"{n}/{n} done".encode(),
            work,
            env,
            browse=True,
        )
        for _ in range(args.repeat)
    ]
    open_s = [o["seconds"] for o in opens]
    rss = [o["rss"] for o in opens]
    print(
        f"`svgagent tui --run` with the finished {n:,}-rollout run: on screen after median "
        f"{statistics.median(open_s):.2f} s ({', '.join(f'{x:.2f}' for x in open_s)}), "
        f"peak RSS after moving over 40 rollouts and their pictures {statistics.median(rss):.0f} MB "
        f"({', '.join(f'{x:.0f}' for x in rss)})"
    )
    shutil.rmtree(root / "home", ignore_errors=True)
    return {
        "tui first paint s": round(statistics.median(first), 2),
        "tui process open run, spawn to summary s": round(statistics.median(open_s), 2),
        "tui RSS MB": round(statistics.median(rss)),
    }


if __name__ == "__main__":
    sys.exit(main())
