"""What one cursor move costs the app's loop when the preview shows the rollout it lands on: CPU, not wall time.

    .venv/bin/python bench/tui_cursor.py [--moves 40] [--rows 24]

A finished run of ``--rows`` rollouts with the simulator's pictures (of several aspect ratios, its SVG sources
and rationales of different lengths), opened headless at 120×40 (the preview below the table's right, picture on
top) and in the 80×24 Preview pane (text beside the picture); the cursor moves ``--moves`` times, one row at a
time, each time waiting until the preview has drawn the new rollout. Per move it prints the CPU the loop's thread
used (``time.thread_time``: what it did, not what it waited for — so it reads the same on a loaded machine), the
CPU of the picture's thread worker (store read + PNG → half blocks), and the full reflows of the screen.

Comparing two trees: run it once with ``PYTHONPATH`` pointing at an export of the other (``svgagent/core``,
``svgagent/tui``, ``svgagent/screens``), one after the other.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from unittest import mock

from svgagent.core.scoring.render_worker import render_svg_to_png
from svgagent.core.sim.content import choose_quality, make_svg
from svgagent.core.store.run_store import Store
from svgagent.tui.imaging import configure_term_image
from tui import headless_app, make_run, settle

PROMPTS = (
    "Draw a flag of three vertical bands.",
    "Draw a login screen with two fields and a button.",
    "Draw a snowman on a hill.",
    "Draw a bar chart of four bars.",
    "Draw a city skyline at night.",
    "Draw a rocket taking off.",
)


def fill_run(store: Store, run_id: str, rows: int) -> None:
    """Give each rollout an SVG, its PNG and a rationale, as a scored run has (sizes vary row to row)."""
    for i in range(rows):
        prompt = PROMPTS[i % len(PROMPTS)]
        svg = make_svg(7, prompt, i, choose_quality(7, prompt, i), 4 + i % 5, pad_to=600 + 400 * (i % 4))
        if i % 3 == 1:  # another aspect ratio: a wide picture
            svg = svg.replace("<svg ", '<svg width="300" height="150" ', 1) if "width=" not in svg[:200] else svg
        rationale = " ".join(
            f"Requirement {j} is {'met' if (i + j) % 3 else 'missed'}: the picture shows it." for j in range(2 + i % 6)
        )
        store.update_rollout(f"{run_id}.{i}.0", svg=svg, png=render_svg_to_png(svg, 256), rationale=rationale)


async def measure(
    store: Store, run_id: str, env_file: Path, size: tuple[int, int], moves: int, rows: int
) -> dict[str, list[float]]:
    from textual.screen import Screen

    from svgagent.tui.widgets.preview import Preview

    reflows: list[int] = []
    refresh_layout = Screen._refresh_layout

    def counting(self: Any, size: Any = None, scroll: bool = False) -> None:
        if not scroll or self._layout_widgets:
            reflows.append(1)
        refresh_layout(self, size, scroll)

    loop_cpu: list[float] = []
    per_move_reflows: list[float] = []
    per_move_worker: list[float] = []
    app = headless_app(store, run_id, env_file)
    with mock.patch.object(Screen, "_refresh_layout", counting):
        async with app.run_test(headless=True, size=size) as pilot:
            await settle(app, pilot)
            if size[0] < 100:
                await pilot.press("2")  # the Preview pane; the cursor still moves in the table
                await settle(app, pilot)
            preview = app.dashboard.query_one(Preview)
            from svgagent.tui.widgets.rollout_table import RolloutTable

            table = app.dashboard.query_one(RolloutTable)
            assert threading.current_thread() is threading.main_thread()
            for move in range(moves):
                target = f"{run_id}.{(move + 1) % rows}.0"
                before_reflows = len(reflows)
                start, start_all = time.thread_time(), time.process_time()
                assert table.move_to(target)
                await settle(app, pilot)
                while (
                    preview.picture.rollout_id != target
                    or preview.picture.record is None
                    or preview.picture.record.rollout_id != target
                ):
                    await asyncio.sleep(0.01)
                    await settle(app, pilot)
                loop = time.thread_time() - start
                loop_cpu.append(loop)
                per_move_reflows.append(len(reflows) - before_reflows)
                per_move_worker.append(time.process_time() - start_all - loop)
            await pilot.press("q")
    return {"loop": loop_cpu, "reflows": per_move_reflows, "worker": per_move_worker}


def describe(values: list[float], scale: float = 1000.0) -> str:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"median {scale * statistics.median(ordered):.1f}, p95 {scale * p95:.1f}, max {scale * ordered[-1]:.1f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--moves", type=int, default=40)
    parser.add_argument("--rows", type=int, default=24)
    args = parser.parse_args()
    configure_term_image()
    import os

    print(f"load average {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "runs.db")
        run_id = make_run(store, args.rows, finished=True)
        fill_run(store, run_id, args.rows)
        for size in ((120, 40), (80, 24)):
            got = asyncio.run(measure(store, run_id, Path(tmp) / "bench.env", size, args.moves, args.rows))
            print(
                f"{size[0]}x{size[1]}, {args.moves} cursor moves: the loop's CPU per move (ms) "
                f"{describe(got['loop'])}; the other threads' (picture worker) CPU per move (ms) "
                f"{describe(got['worker'])}; "
                f"full reflows {int(sum(got['reflows']))} ({int(sum(got['reflows'][1:]))} after the first move)"
            )
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
