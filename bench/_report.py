"""Benchmarks print their headline figures as one `RESULT {json}` line so bench/run_all.py can tabulate them."""

from __future__ import annotations

import json

PREFIX = "RESULT "


def report(figures: dict[str, float]) -> None:
    print(PREFIX + json.dumps(figures), flush=True)
