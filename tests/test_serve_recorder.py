"""The server's batched store writes (core/serve/recorder.py): one transaction for the rollouts that end together,
each waiter settled only once its rollout is committed; cancelled before the commit, a rollout is not stored.
Driven by explicit flushes (the window is an hour here), never by timing."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace

import pytest

from svgagent.core.ep_status import StatusCode
from svgagent.core.scoring.errors import StoreError
from svgagent.core.scoring.models import RolloutStatus
from svgagent.core.serve.recorder import Recorder
from svgagent.core.store import Store
from svgagent.core.training import Served, StepHint, TrainingStore


def served(training: TrainingStore, name: str) -> Served:
    ident = SimpleNamespace(invocation_id="inv", experiment_id="exp", rollout_id=name, run_id="run", row_id=name)
    place = training.place(ids=ident, model="m", hint=StepHint(None, None, "run order"), judged=False)
    return Served(
        place,
        ident,
        "m",
        "Draw",
        ("a",),
        False,
        {"status": RolloutStatus.SCORED, "raw_answer": name},
        StatusCode.FINISHED,
        "Rollout finished",
    )


async def until_pending(recorder: Recorder, count: int) -> None:
    while recorder.pending < count:
        await asyncio.sleep(0)


async def test_rollouts_that_end_together_are_stored_in_one_transaction(tmp_path: Path) -> None:
    with Store(tmp_path / "runs.db") as store:
        training = TrainingStore(store)
        recorder = Recorder(training, window_s=3600)
        transactions = []
        record_many = training.record_many
        training.record_many = lambda batch: transactions.append(len(batch)) or record_many(batch)  # type: ignore[method-assign]
        tasks = [asyncio.create_task(recorder.record(served(training, f"r{i}"))) for i in range(3)]
        await until_pending(recorder, 3)
        assert not any(t.done() for t in tasks)  # nobody hears "stored" before the commit
        assert training.served("r0") is None
        recorder.flush()
        refs = await asyncio.gather(*tasks)
        assert transactions == [3]
        assert [r.ep_rollout_id for r in refs] == ["r0", "r1", "r2"]
        assert len({r.rollout_id for r in refs}) == 3
        assert all(training.served(f"r{i}") is not None for i in range(3))
        assert (recorder.batches, recorder.stored, recorder.pending) == (1, 3, 0)


async def test_a_rollout_cancelled_before_the_commit_is_not_stored(tmp_path: Path) -> None:
    with Store(tmp_path / "runs.db") as store:
        training = TrainingStore(store)
        recorder = Recorder(training, window_s=3600)
        kept = asyncio.create_task(recorder.record(served(training, "kept")))
        dropped = asyncio.create_task(recorder.record(served(training, "dropped")))
        await until_pending(recorder, 2)
        dropped.cancel()
        with pytest.raises(asyncio.CancelledError):
            await dropped
        assert recorder.pending == 1
        recorder.flush()
        assert (await kept).ep_rollout_id == "kept"
        assert training.served("dropped") is None


async def test_a_failed_commit_gives_every_waiter_the_store_error(tmp_path: Path) -> None:
    with Store(tmp_path / "runs.db") as store:
        training = TrainingStore(store)
        recorder = Recorder(training, window_s=3600)
        tasks = [asyncio.create_task(recorder.record(served(training, f"f{i}"))) for i in range(2)]
        await until_pending(recorder, 2)

        def full(batch: object) -> None:
            raise StoreError("disk full")

        training.record_many = full  # type: ignore[method-assign, assignment]
        recorder.flush()
        outcomes = await asyncio.gather(*tasks, return_exceptions=True)
        assert [type(o) for o in outcomes] == [StoreError, StoreError]
        assert recorder.stored == 0
