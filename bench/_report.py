"""Benchmarks print their headline figures as one `RESULT {json}` line so bench/run_all.py can tabulate them."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from source_bytecode import compile_sources  # noqa: E402,F401 - one home (tests/source_bytecode.py); the benchmarks re-export it

PREFIX = "RESULT "


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds process ``pid`` has used so far (from /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _stat_fields(pid: int | str) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def process_tree(pid: int) -> list[int]:
    """``pid`` and every live process descended from it (children, their children, …; from /proc)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents.setdefault(int(_stat_fields(entry.name)[1]), []).append(int(entry.name))
            except (OSError, IndexError, ValueError):
                continue
    tree, todo = [], [pid]
    while todo:
        current = todo.pop()
        tree.append(current)
        todo.extend(parents.get(current, ()))
    return tree


def tree_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of ``pid`` and every process it started, as `top` would add them up: each live
    process of the tree, plus what the tree's processes that ended left in their parent's account (a reaped
    child's CPU moves to its parent's cutime/cstime). A difference of two readings is the tree's CPU between them,
    processes started or ended meanwhile included."""
    total = 0.0
    for member in process_tree(pid):
        try:
            fields = _stat_fields(member)
        except (OSError, IndexError):
            continue  # ended between the listing and this read
        total += sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
    return total / os.sysconf("SC_CLK_TCK")


def report(figures: dict[str, float]) -> None:
    print(PREFIX + json.dumps(figures), flush=True)


def children_of(pid: int) -> list[int]:
    """Process ids whose parent is ``pid`` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry.name))
            except (OSError, IndexError, ValueError):
                continue
    return found


# a render that keeps a worker busy for a few tenths of a second (the pool grows when a render waits 0.1 s)
BUSY_SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100"><path stroke="#000" d="M0 0 '
    + " ".join(f"L{i % 100} {(i * 7) % 100}" for i in range(100_000))
    + '"/></svg>'
)


async def warm_pool(renderer: Any) -> None:
    """Every worker of the pool booted before the clock starts (the pool grows only while renders queue, so tiny
    renders left the second worker to boot inside the timed run, its ≈0.45 s of boot CPU counted as rendering)."""
    for _ in range(20):
        if len(renderer.worker_pids()) >= renderer.workers:
            break
        await asyncio.gather(*(renderer.render(BUSY_SVG, size=64) for _ in range(renderer.workers)))
    await asyncio.gather(*(renderer.render(BUSY_SVG, size=64) for _ in range(renderer.workers)))  # all booted
    if len(renderer.worker_pids()) < renderer.workers:
        print(f"warning: the render pool has {len(renderer.worker_pids())} of its {renderer.workers} workers")
