from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from svgagent.core.scoring.errors import StoreError
from svgagent.core.scoring.models import DatasetRow, RolloutStatus
from svgagent.core.store.run_store import MIGRATIONS, Store

ROWS = [
    DatasetRow(0, "row_0", "Draw a red square.", ("A red square.", "White background.")),
    DatasetRow(1, "row_1", "Draw a blue circle.", ("A blue circle.", "Centered.", "Thin black outline.")),
]


@pytest.fixture
def store(tmp_path: Path) -> Store:
    with Store(tmp_path / "runs.db") as s:
        yield s


def _run(store: Store, samples: int = 2) -> str:
    return store.create_run(
        name="t", settings={"model": "m", "threshold": 0.5}, dataset={"name": "d"}, rows=ROWS, samples=samples
    )


def test_schema_is_versioned_and_wal(store: Store) -> None:
    assert store.schema_version == len(MIGRATIONS)
    mode = sqlite3.connect(store.path).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_a_new_store_has_16_kib_pages_and_an_old_one_keeps_its_own(tmp_path: Path) -> None:
    """A rollout's answer, SVG and PNG (≈130 kB) span ~8 pages of 16 KiB instead of ~32 of 4 KiB: fewer WAL frames
    per commit (bench/engine.py's writer thread) and fewer overflow pages to walk for a run's light view."""
    with Store(tmp_path / "new.db") as new:
        run_id = _run(new)
        assert new.query("PRAGMA page_size")[0][0] == 16384
    old_path = tmp_path / "old.db"
    with sqlite3.connect(old_path) as db:  # a file made before: SQLite's default pages, in WAL already
        db.execute("PRAGMA page_size = 4096")
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("CREATE TABLE kept (x)")
    with Store(old_path) as old:  # migrated in place; its page size only changes with a VACUUM, never silently
        assert old.query("PRAGMA page_size")[0][0] == 4096
        assert old.get_run(_run(old)).name == "t"
    with Store(tmp_path / "new.db") as reopened:
        assert reopened.get_run(run_id).name == "t" and reopened.query("PRAGMA page_size")[0][0] == 16384


def test_create_run_queues_every_row_and_sample(store: Store) -> None:
    run_id = _run(store, samples=3)
    rollouts = store.list_rollouts(run_id)
    assert len(rollouts) == 6
    assert {(r.row_index, r.sample_index) for r in rollouts} == {(i, k) for i in (0, 1) for k in range(3)}
    assert all(r.status is RolloutStatus.QUEUED for r in rollouts)
    assert rollouts[0].requirements == ["A red square.", "White background."]
    assert rollouts[0].total == 2
    assert store.get_run(run_id).status == "created"


def test_update_and_heavy_columns(store: Store) -> None:
    run_id = _run(store)
    rid = store.list_rollouts(run_id)[0].rollout_id
    store.update_rollout(
        rid,
        status=RolloutStatus.SCORED,
        score=0.5,
        fulfilled=1,
        is_score_valid=True,
        png=b"\x89PNG...",
        svg="<svg/>",
        raw_answer="```svg<svg/>```",
    )
    light = store.list_rollouts(run_id)[0]
    assert light.png is None
    assert light.score == 0.5
    assert light.is_score_valid is True
    heavy = store.get_rollout(rid)
    assert heavy.png == b"\x89PNG..."
    assert heavy.svg == "<svg/>"
    with pytest.raises(ValueError):
        store.update_rollout(rid, prompt="changed")


def test_summary_counts_only_valid_scores(store: Store) -> None:
    run_id = _run(store)
    ids = [r.rollout_id for r in store.list_rollouts(run_id)]
    store.update_rollout(ids[0], status=RolloutStatus.SCORED, score=1.0, is_score_valid=True)
    store.update_rollout(ids[1], status=RolloutStatus.SCORED, score=0.5, is_score_valid=True)
    store.update_rollout(ids[2], status=RolloutStatus.FAILED, score=0.0, is_score_valid=True)  # no SVG
    store.update_rollout(ids[3], status=RolloutStatus.FAILED, score=None, is_score_valid=False)  # judge outage
    s = store.summarize(run_id, 0.4)
    # outcomes (core/store/outcomes.py): the no-SVG 0 is scored (the model's valid 0), the judge outage failed
    assert (s.rollouts, s.done, s.scored, s.failed, s.invalid) == (4, 4, 3, 1, 0)
    assert s.mean_score == pytest.approx(0.5)
    # sample std of [1, .5, 0] is 0.5; stderr = 0.5 / sqrt(3)
    assert s.stderr == pytest.approx(0.5 / 3**0.5)
    assert s.passed


def test_reset_unfinished_keeps_finished(store: Store) -> None:
    run_id = _run(store)
    ids = [r.rollout_id for r in store.list_rollouts(run_id)]
    store.update_rollout(ids[0], status=RolloutStatus.SCORED, score=1.0, is_score_valid=True)
    store.update_rollout(ids[1], status=RolloutStatus.JUDGING, raw_answer="x", finish_reason="stop")
    store.update_rollout(ids[2], status=RolloutStatus.GENERATING)
    assert sorted(store.reset_unfinished(run_id)) == sorted(ids[1:])
    statuses = {r.rollout_id: r.status for r in store.list_rollouts(run_id)}
    assert statuses[ids[0]] is RolloutStatus.SCORED
    assert all(statuses[i] is RolloutStatus.QUEUED for i in ids[1:])
    assert store.get_rollout(ids[1]).raw_answer == "x"  # kept so a resume need not regenerate


def test_new_attempts_keep_history(store: Store) -> None:
    run_id = _run(store, samples=1)
    first = store.list_rollouts(run_id)[0]
    store.update_rollout(first.rollout_id, status=RolloutStatus.FAILED, is_score_valid=False, error="boom")
    (new_id,) = store.new_attempts(run_id, [first.rollout_id])
    current = store.list_rollouts(run_id)
    assert len(current) == 2
    assert new_id in {r.rollout_id for r in current}
    assert first.rollout_id not in {r.rollout_id for r in current}
    history = store.attempts_of(new_id)
    assert [h.attempt for h in history] == [1, 2]
    assert history[0].error == "boom"
    assert len(store.list_rollouts(run_id, current_only=False)) == 3


def test_unknown_run_is_a_clear_error(store: Store) -> None:
    with pytest.raises(StoreError, match="runs list"):
        store.get_run("nope")


def test_cache_roundtrip(store: Store) -> None:
    assert store.cache_get("k") is None
    store.cache_put("k", "policy", {"content": "hi"})
    assert store.cache_get("k") == {"content": "hi"}


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.db"
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 5}")
    con.close()
    with pytest.raises(StoreError, match="newer"):
        Store(path)


def test_second_process_reads_while_writer_holds_connection(store: Store) -> None:
    run_id = _run(store)
    rid = store.list_rollouts(run_id)[0].rollout_id
    store.update_rollout(rid, status=RolloutStatus.SCORED, score=0.75, is_score_valid=True)
    code = (
        "import sys; from svgagent.core.store.run_store import Store\n"
        f"s = Store({str(store.path)!r}, readonly=True)\n"
        f"print(s.get_rollout({rid!r}).score)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "0.75"
    assert store.integrity_ok()


def test_override_is_kept_next_to_judge_and_used_in_summary(store: Store) -> None:
    run_id = _run(store, samples=1)
    a, b = (r.rollout_id for r in store.list_rollouts(run_id))
    store.update_rollout(a, status=RolloutStatus.SCORED, score=1.0, fulfilled=2, is_score_valid=True)
    store.update_rollout(b, status=RolloutStatus.FAILED, score=None, is_score_valid=False)
    store.set_override(a, fulfilled=None, verdicts=[True, False])
    store.set_override(b, fulfilled=3)
    ra, rb = store.list_rollouts(run_id)
    assert ra.score == 1.0
    assert ra.override_score == 0.5
    assert ra.override_verdicts == [True, False]
    assert rb.effective_score == 1.0
    assert rb.overridden
    s = store.summarize(run_id, 0.5)
    assert s.overridden == 2
    assert s.mean_score == pytest.approx(0.75)
    with pytest.raises(ValueError):
        store.set_override(a, fulfilled=9)
    store.set_override(a, fulfilled=None)
    assert store.get_rollout(a).override_score is None


def test_two_reviewers_refreshing_a_summary_never_leave_the_older_one_stored(tmp_path: Path) -> None:
    """Two apps review one run: the summary each stores is computed under the write lock, so the one stored last
    is computed from every override committed before it (computed outside it, a slow refresh wrote a mean the
    other's later override had already changed)."""
    import threading

    path = tmp_path / "runs.db"
    with Store(path) as first, Store(path) as second:
        run_id = _run(first, samples=1)
        a, b = (r.rollout_id for r in first.list_rollouts(run_id))
        for rollout_id in (a, b):
            first.update_rollout(rollout_id, status=RolloutStatus.SCORED, score=0.0, fulfilled=0, is_score_valid=True)
        first.set_run_status(run_id, "completed", first.summarize(run_id, 0.5))
        computed, go_on = threading.Event(), threading.Event()
        summarize = first.summarize

        def slow_summarize(run: str, threshold: float):  # the first reviewer's refresh, held once it has computed
            summary = summarize(run, threshold)
            computed.set()
            go_on.wait(10)
            return summary

        first.summarize = slow_summarize  # type: ignore[method-assign]
        slow = threading.Thread(target=first.set_override, args=(a,), kwargs={"fulfilled": 2})
        slow.start()
        assert computed.wait(10)
        later = threading.Thread(target=second.set_override, args=(b,), kwargs={"fulfilled": 3})
        later.start()
        later.join(1.0)  # with the refresh outside the lock this override and its refresh are done by now
        go_on.set()
        slow.join(10)
        later.join(30)
        assert not slow.is_alive() and not later.is_alive()
        stored = second.get_run(run_id).summary
        assert stored is not None
        assert stored["mean_score"] == pytest.approx(1.0) == second.summarize(run_id, 0.5).mean_score


def test_v1_store_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    con = sqlite3.connect(path)
    con.executescript(MIGRATIONS[0] + "\nPRAGMA user_version = 1;")
    con.close()
    with Store(path) as s:
        assert s.schema_version == len(MIGRATIONS)
        cols = {r[1] for r in sqlite3.connect(path).execute("PRAGMA table_info(rollouts)")}
        assert "override_score" in cols


def test_summary_reads_one_snapshot_when_a_rerun_commits_between_its_reads(store: Store) -> None:
    """A rerun committed by another connection between the summary's two reads (current rollouts, then the
    replaced attempts' tokens) must not count the replaced attempt twice (or not at all): one snapshot."""
    run_id = _run(store, samples=1)
    first, second = store.list_rollouts(run_id)
    store.update_rollout(
        first.rollout_id,
        status=RolloutStatus.FAILED,
        is_score_valid=False,
        error="boom",
        prompt_tokens=100,
        completion_tokens=40,
    )
    store.update_rollout(
        second.rollout_id,
        status=RolloutStatus.SCORED,
        score=1.0,
        is_score_valid=True,
        prompt_tokens=10,
        completion_tokens=4,
    )
    paid = (110, 44)
    other = Store(store.path)  # another process's connection (the app's `R` while `runs show` summarizes)
    read_current = store.list_rollouts

    def list_then_rerun(*args: object, **kwargs: object) -> list:
        rows = read_current(*args, **kwargs)
        other.new_attempts(run_id, [first.rollout_id])  # commits: `first` is no longer current
        return rows

    store.list_rollouts = list_then_rerun  # type: ignore[method-assign]
    try:
        s = store.summarize(run_id, 0.5)
    finally:
        del store.list_rollouts
        other.close()
    assert (s.prompt_tokens, s.completion_tokens) == paid  # the failed attempt's tokens counted exactly once
    assert s.rollouts == 2 and s.failed == 1  # the state before the rerun, whole
    after = store.summarize(run_id, 0.5)  # and the state after it, whole: same money spent, one rollout queued
    assert (after.prompt_tokens, after.completion_tokens) == paid
    assert after.failed == 0


def test_runs_made_in_the_same_millisecond_list_the_later_one_first(tmp_path: Path) -> None:
    # `created` has millisecond resolution: two runs made within one were listed oldest first, so `latest` (and the
    # run picker, and tests/test_run_ref.py's fixture now and then) took the older one
    from unittest import mock

    with (
        Store(tmp_path / "runs.db") as store,
        mock.patch("svgagent.core.store.run_store.now_iso", return_value="2026-01-01T00:00:00.000Z"),
    ):
        first = store.create_run(name="first", settings={}, dataset={}, rows=[], samples=1)
        second = store.create_run(name="second", settings={}, dataset={}, rows=[], samples=1)
        assert [r.run_id for r in store.list_runs()] == [second, first]
