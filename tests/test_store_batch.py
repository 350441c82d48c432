"""The engine's batched store writer (core/store/batch_writer.py): what it commits, when a change counts as stored, and
that a storage error stops the run instead of becoming a verdict. (The SIGKILL guarantee: tests/test_crash_resume.py.)"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest

from svgagent.core.scoring.errors import StoreError, StoreWriteError
from svgagent.core.scoring.models import DatasetRow, RolloutStatus
from svgagent.core.store.batch_writer import RolloutWriter
from svgagent.core.store.run_store import Store


@pytest.fixture
def run(tmp_path: Path) -> tuple[Store, list[str]]:
    store = Store(tmp_path / "runs.db")
    rows = [DatasetRow(index=i, row_id=f"r{i}", prompt=f"p{i}", requirements=("a", "b")) for i in range(3)]
    run_id = store.create_run(name=None, settings={}, dataset={}, rows=rows, samples=1)
    return store, [r.rollout_id for r in store.list_rollouts(run_id)]


def _status_elsewhere(path: Path, rollout_id: str) -> str:
    """What another connection (another process) sees."""
    with sqlite3.connect(path) as db:
        return db.execute("SELECT status FROM rollouts WHERE rollout_id = ?", (rollout_id,)).fetchone()[0]


async def test_changes_of_a_window_are_one_transaction_and_merge_per_rollout(run) -> None:
    store, ids = run
    async with RolloutWriter(store, window_s=60) as writer:  # a window that never closes by itself
        writer.submit(ids[0], {"status": RolloutStatus.GENERATING})
        writer.submit(ids[0], {"status": RolloutStatus.RENDERING, "svg": "<svg/>", "raw_answer": "a"})
        writer.submit(ids[1], {"status": RolloutStatus.GENERATING})
        assert _status_elsewhere(store.path, ids[0]) == "queued"  # not committed yet
        await writer.commit(ids[2], {"status": RolloutStatus.GENERATING})  # an urgent change closes the batch
    assert writer.batches == 1
    first = store.get_rollouts([ids[0]], heavy=True)[0]
    assert (first.status, first.svg, first.raw_answer) == (RolloutStatus.RENDERING, "<svg/>", "a")
    assert [_status_elsewhere(store.path, i) for i in ids] == ["rendering", "generating", "generating"]


async def test_a_committed_change_is_visible_to_other_connections_when_commit_returns(run) -> None:
    store, ids = run
    seen: list[str] = []
    async with RolloutWriter(store) as writer:
        await writer.commit(
            ids[0],
            {"status": RolloutStatus.RENDERING, "raw_answer": "paid"},
            done=lambda error: seen.append(_status_elsewhere(store.path, ids[0])),
        )
        assert _status_elsewhere(store.path, ids[0]) == "rendering"
    assert seen == ["rendering"]  # the publish callback runs after the commit: events describe stored state


async def test_the_commits_of_one_batch_wake_their_loop_once(run, monkeypatch) -> None:
    """Each wake-up of the engine's loop from the writer's thread is a syscall and a loop turn (bench/engine.py):
    the commits that one transaction acknowledges are settled together."""
    store, ids = run
    loop = asyncio.get_running_loop()
    wakes: list[object] = []
    original = loop.call_soon_threadsafe

    def counted(callback, *args):
        if getattr(callback, "__name__", "") == "_settle":  # the writer settling commits (not to_thread's own)
            wakes.append(callback)
        return original(callback, *args)

    monkeypatch.setattr(loop, "call_soon_threadsafe", counted)
    async with RolloutWriter(store, window_s=60, urgent_s=0.5) as writer:  # the three commits share a batch
        await asyncio.gather(
            *[writer.commit(i, {"status": RolloutStatus.RENDERING, "raw_answer": "paid"}) for i in ids]
        )
    assert writer.batches == 1
    assert len(wakes) == 1
    assert [_status_elsewhere(store.path, i) for i in ids] == ["rendering"] * 3


async def test_cache_entries_commit_with_their_answer(run) -> None:
    store, ids = run
    async with RolloutWriter(store) as writer:
        await writer.commit(
            ids[0], {"status": RolloutStatus.RENDERING, "raw_answer": "a"}, cache=("key1", "policy", {"content": "a"})
        )
    assert store.cache_get("key1") == {"content": "a"}


async def test_close_commits_what_is_queued(run) -> None:
    store, ids = run
    writer = RolloutWriter(store, window_s=60)
    writer.submit(ids[0], {"status": RolloutStatus.JUDGING})
    await asyncio.to_thread(writer.close)
    assert _status_elsewhere(store.path, ids[0]) == "judging"
    with pytest.raises(StoreError, match="closed"):
        writer.submit(ids[1], {"status": RolloutStatus.JUDGING})


async def test_a_storage_error_reaches_every_waiter_and_every_later_change(run, monkeypatch) -> None:
    store, ids = run
    failed = threading.Event()

    def full(self: Store, rollouts: list, cache: tuple = ()) -> None:
        failed.set()
        raise StoreWriteError(f"cannot write the run store {self.path}: database or disk is full")

    monkeypatch.setattr(Store, "write_batch", full)
    outcomes: list[BaseException | None] = []
    async with RolloutWriter(store) as writer:
        writer.submit(ids[0], {"status": RolloutStatus.GENERATING}, done=outcomes.append)
        with pytest.raises(StoreWriteError, match="disk is full"):
            await writer.commit(ids[1], {"status": RolloutStatus.RENDERING, "raw_answer": "paid"})
        assert failed.is_set()
        assert isinstance(outcomes[0], StoreWriteError)
        with pytest.raises(StoreWriteError):
            writer.submit(ids[2], {"status": RolloutStatus.GENERATING})
        with pytest.raises(StoreWriteError):
            await writer.flush()
    monkeypatch.undo()
    assert [_status_elsewhere(store.path, i) for i in ids] == ["queued"] * 3  # nothing became a verdict


async def test_flush_waits_for_everything_submitted(run) -> None:
    store, ids = run
    async with RolloutWriter(store, window_s=0.02) as writer:
        for rollout_id in ids:
            writer.submit(rollout_id, {"status": RolloutStatus.SCORED, "score": 1.0})
        await writer.flush()
        assert all(_status_elsewhere(store.path, i) == "scored" for i in ids)


async def test_batches_that_queue_while_one_is_written_share_the_next_transaction(run, monkeypatch) -> None:
    """The loop closes batches on its timer; those that close while the thread is still writing are committed
    together (each would have been a transaction of its own), and every one of their commits is acknowledged."""
    store, ids = run
    entered, release = threading.Event(), threading.Event()
    real = Store.write_batch
    calls: list[list[str]] = []

    def held(self: Store, rollouts: list, cache: tuple = ()) -> None:
        calls.append([rollout_id for rollout_id, _ in rollouts])
        if len(calls) == 1:
            entered.set()
            release.wait(10)
        real(self, rollouts, cache)

    async def cut(count: int) -> None:  # until the loop's timer has handed that many batches to the thread
        while writer._batches.qsize() < count:
            await asyncio.sleep(0.001)

    monkeypatch.setattr(Store, "write_batch", held)
    async with RolloutWriter(store, urgent_s=0.001) as writer:
        first = asyncio.ensure_future(writer.commit(ids[0], {"status": RolloutStatus.RENDERING, "raw_answer": "a"}))
        await asyncio.to_thread(entered.wait, 10)
        later = []
        for count, rollout_id in enumerate(ids[1:], start=1):  # each its own batch
            later.append(
                asyncio.ensure_future(writer.commit(rollout_id, {"status": RolloutStatus.RENDERING, "raw_answer": "b"}))
            )
            await cut(count)
        assert not first.done() and not any(f.done() for f in later)
        release.set()
        await asyncio.gather(first, *later)
    assert calls == [[ids[0]], ids[1:]]
    assert writer.batches == 2
    assert [_status_elsewhere(store.path, i) for i in ids] == ["rendering"] * 3


async def test_commit_soon_returns_at_once_and_its_future_settles_once_the_change_is_stored(run) -> None:
    """The engine goes on with a rollout while its paid answer is written, and hands the call's slot on from this
    future's callback: it must not be settled before another connection can read the change."""
    store, ids = run
    seen: list[str] = []
    async with RolloutWriter(store, window_s=60, urgent_s=0.05) as writer:
        stored = writer.commit_soon(ids[0], {"status": RolloutStatus.RENDERING, "raw_answer": "paid"})
        stored.add_done_callback(lambda _: seen.append(_status_elsewhere(store.path, ids[0])))
        assert not stored.done() and _status_elsewhere(store.path, ids[0]) == "queued"
        await stored
    assert seen == ["rendering"]


async def test_the_committed_hook_gets_each_transactions_changes_after_the_commit(run) -> None:
    store, ids = run
    told: list[list[tuple[str, str, str]]] = []

    def committed(changes) -> None:  # on the writer's thread
        told.append(
            [
                (rollout_id, fields["status"].value, _status_elsewhere(store.path, rollout_id))
                for rollout_id, fields in changes
            ]
        )

    async with RolloutWriter(store, window_s=60, committed=committed) as writer:
        writer.submit(ids[0], {"status": RolloutStatus.GENERATING})
        writer.submit(ids[0], {"status": RolloutStatus.RENDERING, "raw_answer": "a"})
        await writer.commit(ids[1], {"status": RolloutStatus.RENDERING, "raw_answer": "b"})
    assert told == [
        [(ids[0], "generating", "rendering"), (ids[0], "rendering", "rendering"), (ids[1], "rendering", "rendering")]
    ]


def _rows(store: Store, ids: list[str]) -> list[tuple[object, ...]]:
    with sqlite3.connect(store.path) as db:  # every column but the ids and times (another run's in each store)
        cols = [
            r[1]
            for r in db.execute("PRAGMA table_info(rollouts)")
            if r[1] not in ("rollout_id", "run_id", "created", "updated")
        ]
        return [
            db.execute(f"SELECT {', '.join(cols)} FROM rollouts WHERE rollout_id = ?", (i,)).fetchone() for i in ids
        ]


def test_a_batch_stores_what_the_same_updates_stored_one_at_a_time_cuts_included(tmp_path: Path) -> None:
    """write_batch sends the updates of a shape as one executemany, and an update with nothing to cut takes the
    statement built once for its columns; what ends up stored is what one UPDATE per change gave, the general path
    (store._cut_update) with its caps and truncated_json notes."""
    from svgagent.core.scoring.models import FailureKind
    from svgagent.core.store import run_store as store_module
    from svgagent.core.store.size_caps import LINE_CAP, SVG_CAP

    changes = [  # (rollout, fields): shapes shared by several rollouts, values over their caps, enums and flags
        (0, {"status": RolloutStatus.RENDERING, "raw_answer": "a", "svg": "<svg/>", "cached": False}),
        (1, {"status": RolloutStatus.RENDERING, "raw_answer": "b", "svg": "x" * (SVG_CAP + 5), "cached": True}),
        (
            2,
            {
                "status": RolloutStatus.FAILED,
                "reason": "r" * (LINE_CAP + 1),
                "failure_kind": FailureKind.RENDER,
                "is_score_valid": True,
                "score": 0.0,
            },
        ),
        (3, {"status": RolloutStatus.RENDERING, "raw_answer": "d", "svg": "<svg/>", "cached": False}),
        (4, {"status": RolloutStatus.SCORED, "score": 0.5, "fulfilled": 1, "png": b"\x89PNG", "reason": "ok"}),
    ]
    later = [
        (1, {"status": RolloutStatus.JUDGING, "svg": "<svg/>", "render_s": 0.1}),  # stored whole again
        (2, {"status": RolloutStatus.FAILED, "reason": "short", "error": "e"}),
    ]
    stored = []
    for how in ("batch", "one at a time"):
        store = Store(tmp_path / f"{how}.db")
        rows = [DatasetRow(index=i, row_id=f"r{i}", prompt=f"p{i}", requirements=("a", "b")) for i in range(5)]
        ids = [
            r.rollout_id
            for r in store.list_rollouts(store.create_run(name=None, settings={}, dataset={}, rows=rows, samples=1))
        ]
        for step in (changes, later):
            if how == "batch":
                store.write_batch([(ids[i], fields) for i, fields in step])
            else:
                for i, fields in step:
                    sql, params = store_module._cut_update(ids[i], fields, None)
                    with store.transaction() as db:
                        db.execute(sql, params)
        stored.append(_rows(store, ids))
        if how == "batch":
            assert store.get_rollout(ids[2]).truncated is None and store.get_rollout(ids[1]).truncated is None
            store.write_batch([(ids[1], {"svg": "y" * (SVG_CAP + 1)})])
            assert store.get_rollout(ids[1]).truncated == {"svg": SVG_CAP + 1}
            store.write_batch([(ids[1], {"svg": "y" * (SVG_CAP + 2)})])
        else:
            for length in (SVG_CAP + 1, SVG_CAP + 2):
                sql, params = store_module._cut_update(ids[1], {"svg": "y" * length}, None)
                with store.transaction() as db:
                    db.execute(sql, params)
        stored[-1] += _rows(store, ids[1:2])
        store.close()
    assert stored[0] == stored[1]


def test_a_rollout_named_twice_in_a_batch_keeps_its_updates_in_order(run) -> None:
    store, ids = run
    store.write_batch(
        [
            (ids[0], {"status": RolloutStatus.GENERATING, "reason": "first"}),
            (ids[1], {"status": RolloutStatus.GENERATING}),
            (ids[0], {"status": RolloutStatus.RENDERING, "svg": "<svg/>"}),
        ]
    )
    rec = store.get_rollouts([ids[0]], heavy=True)[0]
    assert (rec.status, rec.reason, rec.svg) == (RolloutStatus.RENDERING, "first", "<svg/>")
