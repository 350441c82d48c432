"""The fast paths the app relies on for big runs: records built from tuples equal those `from_row` builds, states
are counted in SQL, a reader connection sees committed writes, and a resume leaves queued rows untouched."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from factories import RUN_ID, build_run

from svgagent.core.scoring.models import RolloutStatus
from svgagent.core.store.run_store import Store
from svgagent.core.store.typed_rows import LIGHT_COLUMNS, RolloutRecord, paused_gc


def _both(store: Store, sql: str, params: tuple[object, ...]) -> tuple[list[RolloutRecord], list[RolloutRecord]]:
    db = sqlite3.connect(store.path)
    db.row_factory = sqlite3.Row
    slow = [RolloutRecord.from_row(row) for row in db.execute(sql, params).fetchall()]
    db.row_factory = None
    cursor = db.execute(sql, params)
    fast = RolloutRecord.from_tuples([d[0] for d in cursor.description], cursor.fetchall())
    db.close()
    return slow, fast


def test_from_tuples_builds_what_from_row_builds(tmp_path: Path) -> None:
    with Store(tmp_path / "runs.db") as store:
        build_run(store)  # scored, failed (valid and invalid), overridden and queued rollouts, verdicts
        store.set_override(f"{RUN_ID}.0.0", fulfilled=None, verdicts=[True, False, True, True])
        for columns in (
            "*",
            ", ".join(LIGHT_COLUMNS),
            "status, requirements_json, rollout_id, run_id, row_index,"
            " row_id, sample_index, prompt, total, verdicts_json, attempt",
        ):
            slow, fast = _both(store, f"SELECT {columns} FROM rollouts WHERE run_id = ? ORDER BY row_index", (RUN_ID,))
            assert len(fast) == 6 and fast == slow, columns
        assert (
            store.list_rollouts(RUN_ID, heavy=True)
            == _both(
                store,
                "SELECT * FROM rollouts WHERE run_id = ? AND is_current = 1 ORDER BY row_index, sample_index, attempt",
                (RUN_ID,),
            )[0]
        )
        first, second = store.list_rollouts(RUN_ID)[:2]
        assert first.requirements is not second.requirements  # each record has a list of its own


def test_status_counts_reader_and_resume(tmp_path: Path) -> None:
    with Store(tmp_path / "runs.db") as store:
        build_run(store)
        counts = store.status_counts(RUN_ID)
        assert counts == {RolloutStatus.SCORED: 3, RolloutStatus.FAILED: 2, RolloutStatus.QUEUED: 1}
        queued = f"{RUN_ID}.5.0"
        store.update_rollout(f"{RUN_ID}.4.0", status=RolloutStatus.JUDGING)
        before = store.get_rollout(queued).updated
        assert sorted(store.reset_unfinished(RUN_ID)) == [f"{RUN_ID}.4.0", queued]
        assert store.get_rollout(queued).updated == before  # already queued: not rewritten
        assert store.get_rollout(f"{RUN_ID}.4.0").status is RolloutStatus.QUEUED
        with store.reader() as reader:
            assert reader.list_rollouts(RUN_ID) == store.list_rollouts(RUN_ID)
            store.update_rollout(queued, status=RolloutStatus.GENERATING)
            assert reader.get_rollout(queued).status is RolloutStatus.GENERATING  # sees committed writes


def test_paused_gc_restores_the_collector() -> None:
    import gc

    assert gc.isenabled()
    with paused_gc():
        assert not gc.isenabled()
        with paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner block leaves it as it found it
    assert gc.isenabled()
