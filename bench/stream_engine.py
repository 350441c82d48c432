"""bench/tui.py's stand-in for core.engine.Engine, run in the app's engine process (so it imports no UI): the
same store writes and bus events as the real engine, at a fixed rate, with no HTTP. Its rate and duration come from
the environment the app's process passes on (``BENCH_STREAM_RATE``, ``BENCH_STREAM_SECONDS``)."""

from __future__ import annotations

import asyncio
import os
import random
import time
from typing import Any

from svgagent.core.scoring.models import RolloutStatus, RolloutUpdate
from svgagent.core.store.run_store import Store

IN_FLIGHT = 64


def sample_png() -> bytes:
    import cairosvg

    svg = (
        '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 100 100"><rect width="100" height="100" '
        'fill="#87ceeb"/><circle cx="70" cy="30" r="15" fill="#fc0"/><rect y="70" width="100" height="30" '
        'fill="#228b22"/></svg>'
    )
    return cairosvg.svg2png(bytestring=svg.encode(), output_width=512)


class StreamingEngine:
    """Stands in for core.engine.Engine: the same store writes and bus events, at a fixed rate, no HTTP."""

    def __init__(self, settings: Any, store: Store, *, bus: Any) -> None:
        self.settings, self.store, self.bus = settings, store, bus
        self.rate = float(os.environ.get("BENCH_STREAM_RATE", "100"))
        self.seconds = float(os.environ.get("BENCH_STREAM_SECONDS", "10"))
        self.png = sample_png()

    def _emit(self, rec: Any, status: RolloutStatus, **fields: Any) -> None:
        self.store.update_rollout(rec.rollout_id, status=status, **fields)
        self.bus.publish(RolloutUpdate(rec.run_id, rec.rollout_id, status))

    def _read(self, query: Any) -> Any:
        with self.store.reader() as store:
            return query(store)

    def _step(self, rec: Any, stage: int, rng: random.Random) -> None:
        if stage == 0:
            self._emit(rec, RolloutStatus.GENERATING)
        elif stage == 1:
            self._emit(
                rec,
                RolloutStatus.RENDERING,
                svg="<svg/>",
                raw_answer="```svg\n<svg/>\n```",
                finish_reason="stop",
                prompt_tokens=120,
                completion_tokens=rng.randint(100, 900),
                generation_s=rng.uniform(0.5, 3),
            )
        elif stage == 2:
            self._emit(rec, RolloutStatus.JUDGING, png=self.png, render_s=0.05)
        else:
            fulfilled = rng.randint(0, rec.total)
            self._emit(
                rec,
                RolloutStatus.SCORED,
                score=fulfilled / rec.total,
                fulfilled=fulfilled,
                is_score_valid=True,
                reason="bench",
                judge_s=rng.uniform(0.3, 1.5),
                judge_raw=str(fulfilled),
                rationale="bench rationale",
            )

    async def run(self, run_id: str) -> Any:
        self.store.reset_unfinished(run_id)  # as core.engine.Engine.run does: big reads in a thread, own connection
        pending = await asyncio.to_thread(
            self._read, lambda store: store.list_rollouts(run_id, heavy=True, statuses=[RolloutStatus.QUEUED.value])
        )
        self.store.set_run_status(run_id, "running")
        rng = random.Random(7)
        flight: list[list[Any]] = []  # [record, next stage]
        t0 = time.perf_counter()
        done = 0
        try:
            while (elapsed := time.perf_counter() - t0) < self.seconds:
                due = int(elapsed * self.rate) - done
                for _ in range(due):
                    while len(flight) < IN_FLIGHT and pending:
                        flight.append([pending.pop(0), 0])
                    if not flight:
                        break
                    slot = flight[rng.randrange(len(flight))]
                    self._step(slot[0], slot[1], rng)
                    slot[1] += 1
                    if slot[1] == 4:
                        flight.remove(slot)
                    done += 1
                await asyncio.sleep(0.01)
        except BaseException:
            self.store.set_run_status(run_id, "interrupted")
            raise
        summary = await asyncio.to_thread(self._read, lambda store: store.summarize(run_id, 0.5))
        self.store.set_run_status(run_id, "interrupted", summary)  # a stand-in never finishes a 10k run
        return summary

    async def aclose(self) -> None:
        pass
