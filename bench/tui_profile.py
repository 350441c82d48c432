"""Where the app's loop goes while the real engine streams: part 5 of bench/tui.py under cProfile, with counters.

    .venv/bin/python bench/tui_profile.py [--rollouts 10000] [--seconds 10] [--top 25] [--out FILE.prof]

The same run as `bench/tui.py --only-real-engine` (the real engine in its own process against the simulator, the
key probe sending cursor keys), with cProfile on the app's thread (the headless app runs on this process's main
thread; thread workers are not profiled) and counters on what makes the loop lay the screen out:

- each `Widget.refresh(layout=True)`, by the widget's class and the svgagent function that asked (the nearest
  frame in svgagent's sources), and each `refresh()` without a layout by widget class;
- each widget drawn (`render_lines`), by class;
- the CPU time of each thread of the process (the loop's, the thread workers', the engine link's);
- each callback of the loop that ran over 30 ms (a message pump's task is named after its widget);
- each `Screen.refresh_bindings()` (the footer is composed again after each), by who asked;
- each full reflow of a screen (`Screen._refresh_layout` without `scroll`), its time, and the layout requests
  made since the reflow before it (what caused it).

`--no-cprofile`: the counters and the screen updates' times only. The counters run from the first live batch to the stop key. It prints the run's figures as bench/tui.py does, the counters, and the profile's top functions by cumulative
time. Profiling slows the loop (≈1.5 – 2x): read the counts, not the times, as the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import cProfile
import os
import pstats
import re
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from unittest import mock

from engine import start_simulator  # bench/engine.py: the simulator in its own process (at the demo's priority)

from svgagent.core.run.engine_process import NICE
from svgagent.core.store.run_store import Store
from svgagent.tui.imaging import configure_term_image
from tui import make_run, measure_real_engine

ROOT = str(Path(__file__).resolve().parent.parent)


PLUMBING = (
    "widget.py",
    "reactive.py",
    "styles.py",
    "_static.py",
    "dom.py",
    "_callback.py",
    "message_pump.py",
    "signal.py",
    "events.py",
    "base_events.py",
)


def asker() -> str:
    """The svgagent function (file:line name) nearest on the stack, outside this script; else the nearest
    Textual function that is not plumbing (a reactive's setter, a refresh, the message loop)."""
    frame = sys._getframe(2)
    textual = None
    while frame is not None:
        path = frame.f_code.co_filename
        if path.startswith(ROOT) and "/.venv/" not in path and "/bench/" not in path:
            return f"{Path(path).name}:{frame.f_lineno} {frame.f_code.co_name}"
        if textual is None and Path(path).name not in PLUMBING:
            textual = f"(textual) {Path(path).name}:{frame.f_lineno} {frame.f_code.co_name}"
        frame = frame.f_back
    return textual or "(textual)"


class ThreadCPU:
    """CPU time of each thread of this process, read from /proc every 0.2 s and named after the Python thread
    (thread workers come and go: the last reading before a thread ends is what it used)."""

    def __init__(self) -> None:
        self.seconds: dict[int, float] = {}
        self.names: dict[int, str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="thread CPU sampler", daemon=True)

    def _sample(self) -> None:
        names = {t.native_id: t.name for t in threading.enumerate()}
        tick = os.sysconf("SC_CLK_TCK")
        for task in Path("/proc/self/task").iterdir():
            try:
                fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            tid = int(task.name)
            self.seconds[tid] = (int(fields[11]) + int(fields[12])) / tick
            self.names.setdefault(tid, re.sub(r"[ -]?\d+$", "", names.get(tid, "?")))

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            self._sample()

    def start(self) -> None:
        self._sample()
        self._base = dict(self.seconds)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    def by_name(self) -> collections.Counter[str]:
        total: collections.Counter[str] = collections.Counter()
        for tid, seconds in self.seconds.items():
            total[self.names.get(tid, "?")] += seconds - self._base.get(tid, 0.0)
        return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rollouts", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--top", type=int, default=25, help="profile lines to print")
    parser.add_argument("--out", help="also write the profile here (for snakeviz / pstats)")
    parser.add_argument(
        "--no-cprofile",
        dest="cprofile",
        action="store_false",
        help="only the counters and timers (no profiler: times as without it)",
    )
    args = parser.parse_args()
    from textual.screen import Screen
    from textual.widget import Widget

    from svgagent.screens.dashboard import Dashboard
    from svgagent.screens.open_run import OpenRun

    configure_term_image()
    layouts: collections.Counter[tuple[str, str]] = collections.Counter()
    repaints: collections.Counter[str] = collections.Counter()
    reflows: list[float] = []
    since: set[tuple[str, str]] = set()  # layout requests since the last full reflow
    causes: collections.Counter[tuple[tuple[str, str], ...]] = collections.Counter()
    refresh, refresh_layout = Widget.refresh, Screen._refresh_layout

    streaming = [False]  # counted only from the first live batch to the stop key

    def counted_refresh(
        self: Any, *regions: Any, repaint: bool = True, layout: bool = False, recompose: bool = False
    ) -> Any:
        if not streaming[0]:
            pass
        elif layout:
            who = (type(self).__name__, asker())
            layouts[who] += 1
            since.add(who)
        elif repaint and not regions:
            repaints[type(self).__name__] += 1
        return refresh(self, *regions, repaint=repaint, layout=layout, recompose=recompose)

    def timed_reflow(self: Any, size: Any = None, scroll: bool = False) -> None:
        full = not scroll or bool(self._layout_widgets)
        asked = tuple(sorted(since))
        if full:
            since.clear()  # what the reflow itself asks for (sizes changed: "(textual) …_refresh_layout") is next's
        start = time.perf_counter()
        refresh_layout(self, size, scroll)
        if full and streaming[0]:
            reflows.append(time.perf_counter() - start)
            causes[asked] += 1

    apply_batch, stop_run = OpenRun.apply_batch, Dashboard.action_stop_run

    def first_batch(self: Any, batch: Any) -> None:
        if not streaming[0] and not stopped_at:
            streaming[0] = True
            threads.start()
        apply_batch(self, batch)

    stopped_at: list[float] = []

    async def stopped(self: Any) -> None:
        streaming[0] = False
        stopped_at.append(time.perf_counter())
        threads.stop()
        await stop_run(self)

    frames: dict[str, list[float]] = {"with a layout": [], "repaint only": []}
    on_timer_update = Screen._on_timer_update

    def timed_frame(self: Any) -> None:
        kind = "with a layout" if self._layout_required else "repaint only"
        start = time.perf_counter()
        on_timer_update(self)
        if streaming[0]:
            frames[kind].append(time.perf_counter() - start)

    renders: collections.Counter[str] = collections.Counter()
    render_lines = Widget.render_lines

    def counted_render(self: Any, crop: Any) -> Any:
        if streaming[0]:
            renders[type(self).__name__] += 1
        return render_lines(self, crop)

    slow: list[tuple[float, float, str]] = []  # loop callbacks over 30 ms: (seconds, thread CPU, what)
    handle_run = asyncio.events.Handle._run

    def timed_callback(self: Any) -> None:
        start, cpu = time.perf_counter(), time.thread_time()
        handle_run(self)
        took = time.perf_counter() - start
        if took > 0.03 and streaming[0]:
            callback = getattr(self._callback, "__self__", self._callback)
            what = callback.get_name() if isinstance(callback, asyncio.Task) else repr(self._callback)[:80]
            slow.append((took, time.thread_time() - cpu, what))

    worker_cpu: dict[str, list[float]] = {
        "live feed: store read of the changed rollouts": [],
        "picture: store read + PNG → half blocks": [],
    }
    from svgagent.core.run.follow import RunFollower
    from svgagent.tui.widgets import picture

    def thread_timed(label: str, function: Any) -> Any:
        def timed(*args: Any, **kwargs: Any) -> Any:
            cpu = time.thread_time()
            try:
                return function(*args, **kwargs)
            finally:
                if streaming[0]:
                    worker_cpu[label].append(time.thread_time() - cpu)

        return timed

    bindings: collections.Counter[str] = collections.Counter()
    refresh_bindings = Screen.refresh_bindings

    def counted_bindings(self: Any) -> None:
        if streaming[0]:
            bindings[asker()] += 1
        refresh_bindings(self)

    threads = ThreadCPU()
    profile = cProfile.Profile()
    print(f"load average {os.getloadavg()[0]:.2f}")
    proc, url = start_simulator(args.latency, NICE)
    try:
        with (
            tempfile.TemporaryDirectory() as tmp,
            Store(Path(tmp) / "real.db") as store,
            mock.patch.object(Widget, "refresh", counted_refresh),
            mock.patch.object(Screen, "_refresh_layout", timed_reflow),
            mock.patch.object(OpenRun, "apply_batch", first_batch),
            mock.patch.object(Dashboard, "action_stop_run", stopped),
            mock.patch.object(Screen, "refresh_bindings", counted_bindings),
            mock.patch.object(Screen, "_on_timer_update", timed_frame),
            mock.patch.object(Widget, "render_lines", counted_render),
            mock.patch.object(asyncio.events.Handle, "_run", timed_callback),
            mock.patch.object(
                RunFollower,
                "changed",
                thread_timed("live feed: store read of the changed rollouts", RunFollower.changed),
            ),
            mock.patch.object(
                picture,
                "load_rollout_picture",
                thread_timed("picture: store read + PNG → half blocks", picture.load_rollout_picture),
            ),
        ):
            run_id = make_run(store, args.rollouts, finished=False)
            if args.cprofile:
                profile.enable()
            real = asyncio.run(
                measure_real_engine(store, run_id, Path(tmp) / "bench.env", url, args.seconds, args.concurrency)
            )
            profile.disable()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    print(
        f"{real['done']} rollouts done in {real['seconds']:.1f} s; longest gap {1000 * real['start']:.0f} ms in "
        f"the first second, {1000 * real['steady']:.0f} ms after it, {1000 * real['stop']:.0f} ms around the "
        f"stop; key to screen p50 {1000 * real['key_p50']:.0f} ms, p95 {1000 * real['key_p95']:.0f} ms "
        f"({real['keys']} keys, {real['keys_lost']} lost)" + (" — under the profiler" if args.cprofile else "")
    )
    for kind, times in frames.items():
        if times:
            print(
                f"screen updates {kind}: {len(times)}, {1000 * sum(times):.0f} ms in all, "
                f"longest {1000 * max(times):.0f} ms"
            )
    total = sum(reflows)
    print(
        f"\nfull reflows: {len(reflows)}, {1000 * total:.0f} ms in all"
        + (f", {1000 * total / len(reflows):.0f} ms each on average" if reflows else "")
    )
    print("full reflows by the layout requests since the one before:")
    for cause, count in causes.most_common(10):
        print(
            f"  {count:6d}  "
            + "; ".join(f"{widget} {who}" for widget, who in cause[:4])
            + (f" (+{len(cause) - 4})" if len(cause) > 4 else "")
        )
    print(f"\nrefresh(layout=True): {sum(layouts.values())}")
    for (widget, who), count in layouts.most_common(25):
        print(f"  {count:6d}  {widget:<22} {who}")
    print(f"\nrefresh() without layout (whole widget): {sum(repaints.values())}")
    for widget, count in repaints.most_common(8):
        print(f"  {count:6d}  {widget}")
    print(f"\nloop callbacks over 30 ms: {len(slow)}, {1000 * sum(t for t, _, _ in slow):.0f} ms in all; longest:")
    for took, cpu, what in sorted(slow, reverse=True)[:12]:
        print(f"  {1000 * took:6.0f} ms (thread CPU {1000 * cpu:4.0f} ms)  {what}")
    print("\nCPU seconds of this process's threads while it streams (the app's loop is MainThread):")
    for name, seconds in threads.by_name().most_common(10):
        print(f"  {seconds:7.2f}  {name}")
    for label, times in worker_cpu.items():
        if times:
            print(
                f"  thread workers, {label}: {len(times)} calls, {1000 * sum(times):.0f} ms CPU, longest "
                f"{1000 * max(times):.0f} ms"
            )
    print(f"\nwidgets drawn (render_lines, a crop of one): {sum(renders.values())}")
    for widget, count in renders.most_common(12):
        print(f"  {count:6d}  {widget}")
    print(f"\nScreen.refresh_bindings (each one recomposes the footer): {sum(bindings.values())}")
    for who, count in bindings.most_common(8):
        print(f"  {count:6d}  {who}")
    print(f"\nload average {os.getloadavg()[0]:.2f}\n")
    if not args.cprofile:
        return 0
    stats = pstats.Stats(profile)
    if args.out:
        stats.dump_stats(args.out)
    stats.sort_stats("cumulative").print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
