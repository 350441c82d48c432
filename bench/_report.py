"""Benchmarks print their headline figures as one `RESULT {json}` line so bench/run_all.py can tabulate them."""

from __future__ import annotations

import compileall
import importlib.util
import json
import os
from pathlib import Path

PREFIX = "RESULT "


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds process ``pid`` has used so far (from /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def report(figures: dict[str, float]) -> None:
    print(PREFIX + json.dumps(figures), flush=True)


def compile_sources() -> int:
    """Write up-to-date bytecode for svgagent's sources, as installing a wheel does, and return how many files were
    stale. A start-up measured with stale bytecode compiles those modules from source in every process (this
    machine sets PYTHONDONTWRITEBYTECODE, so nothing ever refreshes them): 0.15 - 0.3 s of CPU that no installed
    svgagent pays."""
    root = Path(__file__).resolve().parent.parent
    stale = 0
    for package in ("core", "tui", "screens"):
        for source in (root / package).rglob("*.py"):
            cached = Path(importlib.util.cache_from_source(str(source)))
            if not cached.exists() or cached.stat().st_mtime < source.stat().st_mtime:
                stale += 1
        compileall.compile_dir(str(root / package), quiet=1)
    return stale


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
