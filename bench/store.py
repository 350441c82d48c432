"""Benchmark the run store: state-change write throughput, and a second process's read latency during writes.

    .venv/bin/python bench/store.py [--rollouts 10000] [--seconds 5]

A writer applies the engine's pattern (status updates, then a final update with a ~40 kB PNG) as fast as it can
while a separate reader process, like `svgagent runs show` or a second TUI, repeatedly loads the light view of the
whole run and a single heavy rollout. Prints writes/s, and the reader's p50/p95/max latency for each query.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _report import report

from svgagent.core.scoring.models import DatasetRow, RolloutStatus
from svgagent.core.store.run_store import Store


def make_run(path: Path, n: int) -> tuple[str, list[str]]:
    rows = [
        DatasetRow(i, f"row_{i}", f"Draw picture number {i}.", tuple(f"Requirement {j}." for j in range(8)))
        for i in range(n)
    ]
    with Store(path) as store:
        run_id = store.create_run(name="bench", settings={}, dataset={"name": "bench"}, rows=rows, samples=1)
        ids = [r.rollout_id for r in store.list_rollouts(run_id)]
    return run_id, ids


def reader(path: str, run_id: str, rollout_id: str, stop_at: float, out: mp.Queue) -> None:
    store = Store(path, readonly=True)
    light, heavy = [], []
    while time.perf_counter() < stop_at:
        t0 = time.perf_counter()
        store.list_rollouts(run_id)
        light.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        store.get_rollout(rollout_id)
        heavy.append(time.perf_counter() - t0)
    out.put((light, heavy))


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rollouts", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    png = os.urandom(40_000)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        run_id, ids = make_run(path, args.rollouts)
        results: mp.Queue = mp.get_context("spawn").Queue()
        stop_at = time.perf_counter() + args.seconds + 1.0
        proc = mp.get_context("spawn").Process(target=reader, args=(str(path), run_id, ids[0], stop_at, results))
        proc.start()
        time.sleep(1.0)  # let the reader start
        writes = 0
        with Store(path) as store:
            t0 = time.perf_counter()
            i = 0
            while time.perf_counter() - t0 < args.seconds:
                rid = ids[i % len(ids)]
                for status in (RolloutStatus.GENERATING, RolloutStatus.RENDERING):
                    store.update_rollout(rid, status=status)
                store.update_rollout(rid, status=RolloutStatus.JUDGING, png=png)
                store.update_rollout(rid, status=RolloutStatus.SCORED, score=0.5, fulfilled=4, is_score_valid=True)
                writes += 4
                i += 1
            elapsed = time.perf_counter() - t0
        light, heavy = results.get(timeout=60)
        proc.join(timeout=30)
    print(f"writes: {writes / elapsed:,.0f} state changes/s ({i / elapsed:,.0f} rollouts/s) over {elapsed:.1f} s")
    print(
        f"reader, light view of {args.rollouts:,} rollouts: p50 {1000 * statistics.median(light):.1f} ms, "
        f"p95 {1000 * pct(light, 0.95):.1f} ms, max {1000 * max(light):.1f} ms ({len(light)} reads)"
    )
    print(
        f"reader, one heavy rollout: p50 {1000 * statistics.median(heavy):.2f} ms, "
        f"p95 {1000 * pct(heavy, 0.95):.2f} ms, max {1000 * max(heavy):.1f} ms"
    )
    report(
        {
            "store state changes/s": round(writes / elapsed),
            f"store reader p95 ms, light view of {args.rollouts} rollouts": round(1000 * pct(light, 0.95), 1),
            "store reader p95 ms, one heavy rollout": round(1000 * pct(heavy, 0.95), 2),
        }
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
