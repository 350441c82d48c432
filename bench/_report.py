"""Benchmarks print their headline figures as one `RESULT {json}` line so bench/run_all.py can tabulate them."""

from __future__ import annotations

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
