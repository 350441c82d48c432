"""The server's batched store writes (core/serve/recorder.py): one transaction for the rollouts that end together,
each waiter settled only once its rollout is committed; cancelled before the commit, a rollout is not stored.
Driven by explicit flushes (the window is an hour here), never by timing."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace

import pytest

from svgagent.core.exchange.ep_status import StatusCode
from svgagent.core.scoring.errors import StoreError
from svgagent.core.scoring.models import RolloutStatus
from svgagent.core.serve.recorder import Recorder
from svgagent.core.serve.training_runs import Served, StepHint, TrainingStore
from svgagent.core.store.run_store import Store


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


async def test_a_rollout_whose_rows_raise_anything_fails_alone_and_the_others_are_stored(tmp_path: Path) -> None:
    """A value no statement takes raised OverflowError out of flush() (a timer callback): no waiter of the batch
    was ever settled. Now that rollout alone gets a StoreError naming the cause."""
    with Store(tmp_path / "runs.db") as store:
        training = TrainingStore(store)
        recorder = Recorder(training, window_s=3600)
        insert = training._insert

        def overflowing(db: object, one: Served, *args: object) -> object:
            if one.ids.rollout_id == "bad":
                raise OverflowError("Python int too large to convert to SQLite INTEGER")
            return insert(db, one, *args)  # type: ignore[arg-type]

        training._insert = overflowing  # type: ignore[method-assign, assignment]
        tasks = [asyncio.create_task(recorder.record(served(training, name))) for name in ("a", "bad", "c")]
        await until_pending(recorder, 3)
        recorder.flush()
        first, failed, third = await asyncio.gather(*tasks, return_exceptions=True)
        assert isinstance(failed, StoreError) and "OverflowError" in str(failed)
        assert {first.ep_rollout_id, third.ep_rollout_id} == {"a", "c"}  # type: ignore[union-attr]
        assert training.served("bad") is None and recorder.stored == 2


async def test_a_batch_write_that_raises_anything_is_written_again_one_rollout_at_a_time(tmp_path: Path) -> None:
    """Should the batch's write raise what record_many does not catch, each rollout is written on its own: every
    waiter is settled, and those that can be stored are."""
    with Store(tmp_path / "runs.db") as store:
        training = TrainingStore(store)
        recorder = Recorder(training, window_s=3600)
        record_many = training.record_many

        def only_alone(batch: list[Served]) -> object:
            if len(batch) > 1:
                raise ValueError("something unforeseen")
            return record_many(batch)

        training.record_many = only_alone  # type: ignore[method-assign, assignment]
        committed: list[str] = []
        tasks = [
            asyncio.create_task(
                recorder.record(served(training, f"u{i}"), on_commit=lambda ref: committed.append(ref.ep_rollout_id))
            )
            for i in range(3)
        ]
        await until_pending(recorder, 3)
        recorder.flush()
        refs = await asyncio.gather(*tasks)
        assert [r.ep_rollout_id for r in refs] == ["u0", "u1", "u2"] == committed
