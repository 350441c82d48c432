"""Training runs in the store (core/serve/training_runs.py): which step a served rollout belongs to, one run per step, one
row index per dataset row across steps, retries as attempts."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from svgagent.core.exchange.ep_status import StatusCode
from svgagent.core.scoring.models import RolloutStatus
from svgagent.core.serve.training_runs import StepHint, TrainingStore, step_hint
from svgagent.core.store.run_store import Store


@pytest.mark.parametrize(
    ("params", "model", "expected"),
    [
        ({"step": 7, "epoch": 1}, "m", StepHint(7, 1, "metadata")),
        ({"training_step": "12"}, "m", StepHint(12, None, "metadata")),
        ({"global_step": True}, "accounts/a/models/x-step-400", StepHint(400, None, "model")),
        ({}, "accounts/a/deployedModels/run-epoch-2-checkpoint-1500", StepHint(1500, 2, "model")),
        ({}, "fireworks_ai/accounts/a/models/ckpt_30", StepHint(30, None, "model")),
        ({}, "accounts/fireworks/models/qwen3-0p6b", StepHint(None, None, "run order")),
        ({}, "stepwise-model", StepHint(None, None, "run order")),
    ],
    ids=["metadata", "string-step", "model-step", "checkpoint-and-epoch", "ckpt", "nothing", "no-digits"],
)
def test_step_hint(params: dict[str, object], model: str, expected: StepHint) -> None:
    assert step_hint(params, model) == expected


def ids(rollout: str, run: str, row: str, experiment: str = "exp") -> SimpleNamespace:
    return SimpleNamespace(invocation_id="inv", experiment_id=experiment, rollout_id=rollout, run_id=run, row_id=row)


def store_one(
    training: TrainingStore, ident: SimpleNamespace, code: StatusCode = StatusCode.FINISHED, previous: object = None
) -> object:
    place = training.place(ids=ident, model="m", hint=StepHint(None, None, "run order"), judged=False)
    columns = {
        "status": RolloutStatus.SCORED if code is StatusCode.FINISHED else RolloutStatus.FAILED,
        "raw_answer": "answer",
    }
    return training.record(
        place,
        ids=ident,
        model="m",
        prompt="Draw",
        requirements=("a",),
        judged=False,
        columns=columns,
        code=code,
        message="m",
        previous=previous,
    )  # type: ignore[arg-type]


def test_each_new_eval_protocol_run_is_the_next_step_and_rows_keep_their_index(tmp_path: Path) -> None:
    with Store(tmp_path / "runs.db") as store:
        training = TrainingStore(store, job_name="accounts/a/reinforcementFineTuningJobs/j1")
        for step_run in ("run-a", "run-b"):
            for row in ("row_9", "row_3"):
                store_one(training, ids(f"{step_run}-{row}", step_run, row))
        store_one(training, ids("again", "run-a", "row_3"))  # run-a again: still step 1, a second sample
        fresh = TrainingStore(store)  # another process reading the same store: nothing cached
        steps = fresh.steps("exp")
        assert [(s.step, s.rollouts, s.source) for s in steps] == [(1, 3, "run order"), (2, 2, "run order")]
        by_row = {(r.row_id, r.sample_index): r.row_index for r in store.list_rollouts(steps[0].run_id)}
        assert by_row == {("row_9", 0): 0, ("row_3", 0): 1, ("row_3", 1): 1}
        assert {r.row_id: r.row_index for r in store.list_rollouts(steps[1].run_id)} == {"row_9": 0, "row_3": 1}
        (run,) = fresh.trainings("accounts/a/reinforcementFineTuningJobs/j1")
        assert run.label == "accounts/a/reinforcementFineTuningJobs/j1"
        assert run.steps == 2
        assert run.rollouts == 5
        assert fresh.trainings("accounts/a/reinforcementFineTuningJobs/other") == []
        assert store.get_run(steps[0].run_id).name.endswith("· step 1")


def test_a_retry_after_an_error_is_the_next_attempt_of_the_same_rollout(tmp_path: Path) -> None:
    with Store(tmp_path / "runs.db") as store:
        training = TrainingStore(store)
        first = store_one(training, ids("r1", "run", "row_0"), StatusCode.UNAVAILABLE)
        second = store_one(training, ids("r1", "run", "row_0"), previous=training.served("r1"))
        assert first.rollout_id != second.rollout_id  # type: ignore[attr-defined]
        attempts = store.attempts_of(second.rollout_id)  # type: ignore[attr-defined]
        assert [(a.attempt, a.is_current) for a in attempts] == [(1, False), (2, True)]
        assert training.served("r1").status_code == StatusCode.FINISHED  # type: ignore[union-attr]
        assert training.steps("exp")[0].rollouts == 1  # one rollout, two attempts


def test_storing_a_rollout_reads_only_its_row_of_the_run_not_every_rollout_of_it(tmp_path: Path) -> None:
    """The sample and attempt lookups of record() go through the rollouts_by_run index down to the row: a step run
    of a long training holds thousands of rollouts, and reading them all for each new one made storing O(n)."""
    with Store(tmp_path / "runs.db") as store:
        training = TrainingStore(store)
        store_one(training, ids("r0", "run", "row_0"), StatusCode.UNAVAILABLE)
        statements: list[str] = []
        store._db.set_trace_callback(statements.append)  # noqa: SLF001 - what SQLite is asked, as it is asked
        try:
            store_one(training, ids("r1", "run", "row_1"))
            store_one(training, ids("r0", "run", "row_0"), previous=training.served("r0"))
        finally:
            store._db.set_trace_callback(None)  # noqa: SLF001
        lookups = [
            sql
            for sql in statements
            if ("FROM rollouts WHERE" in sql or "UPDATE rollouts SET" in sql) and "sample_index" in sql
        ]
        assert len(lookups) == 3  # the new sample's index; the retry's attempt number and the old attempt's flag
        for sql in lookups:
            plan = " ".join(str(row[3]) for row in store._db.execute(f"EXPLAIN QUERY PLAN {sql}"))  # noqa: SLF001
            assert "rollouts_by_run" in plan and "row_index=?" in plan, (sql, plan)


def test_a_batch_stores_each_rollout_on_a_savepoint_of_its_own(tmp_path: Path) -> None:
    """record_many (the server's batched writes): one rollout that cannot be written costs the others nothing."""
    from dataclasses import replace

    from svgagent.core.scoring.errors import StoreError
    from svgagent.core.serve.training_runs import Served

    with Store(tmp_path / "runs.db") as store:
        training = TrainingStore(store)
        hint = StepHint(None, None, "run order")
        served = []
        for name in ("b1", "b2", "b3"):
            ident = ids(name, "run", f"row_{name}")
            place = training.place(ids=ident, model="m", hint=hint, judged=False)
            served.append(
                Served(
                    place,
                    ident,
                    "m",
                    "Draw",
                    ("a",),
                    False,
                    {"status": RolloutStatus.SCORED, "raw_answer": name},
                    StatusCode.FINISHED,
                    "done",
                )
            )
        served[1] = replace(served[1], place=replace(served[1].place, run_id="no-such-run"))  # a foreign key fails
        first, failed, third = training.record_many(served)
        assert isinstance(failed, StoreError)
        assert [training.served(n) is not None for n in ("b1", "b2", "b3")] == [True, False, True]
        assert (first.ep_rollout_id, third.ep_rollout_id) == ("b1", "b3")  # type: ignore[union-attr]
        assert store.get_rollout(third.rollout_id).raw_answer == "b3"  # type: ignore[union-attr]


def test_a_batch_that_can_be_written_is_written_without_savepoints(tmp_path: Path) -> None:
    """The savepoints (two statements more per rollout) are paid only when the batch as a whole fails."""
    from svgagent.core.serve.training_runs import Served

    with Store(tmp_path / "runs.db") as store:
        training = TrainingStore(store)
        hint = StepHint(None, None, "run order")
        batch = []
        for name in ("c1", "c2"):
            ident = ids(name, "run", f"row_{name}")
            place = training.place(ids=ident, model="m", hint=hint, judged=False)
            batch.append(
                Served(
                    place,
                    ident,
                    "m",
                    "Draw",
                    ("a",),
                    False,
                    {"status": RolloutStatus.SCORED, "raw_answer": name},
                    StatusCode.FINISHED,
                    "done",
                )
            )
        statements: list[str] = []
        store._db.set_trace_callback(statements.append)
        try:
            refs = training.record_many(batch)
        finally:
            store._db.set_trace_callback(None)
        assert [ref.ep_rollout_id for ref in refs] == ["c1", "c2"]  # type: ignore[union-attr]
        assert not [s for s in statements if "SAVEPOINT" in s.upper()]
        assert sum(s.startswith("INSERT INTO served_rollouts") for s in statements) == 2


def test_a_rows_next_sample_index_is_read_once_then_counted(tmp_path: Path) -> None:
    """The server stores every sample of a row in its step run: the row's next sample index is read from the database
    once, then counted from what this store committed (one statement fewer per stored rollout)."""
    from svgagent.core.serve.training_runs import Served

    with Store(tmp_path / "runs.db") as store:
        training = TrainingStore(store)
        statements: list[str] = []
        store._db.set_trace_callback(statements.append)  # noqa: SLF001
        try:
            store_one(training, ids("s0", "run", "row_0"))
            store_one(training, ids("s1", "run", "row_0"))
            batch = []
            for name in ("s2", "s3"):  # two samples of the row in one batch
                ident = ids(name, "run", "row_0")
                place = training.place(ids=ident, model="m", hint=StepHint(None, None, "run order"), judged=False)
                batch.append(
                    Served(
                        place,
                        ident,
                        "m",
                        "Draw",
                        ("a",),
                        False,
                        {"status": RolloutStatus.SCORED, "raw_answer": name},
                        StatusCode.FINISHED,
                        "done",
                    )
                )
            training.record_many(batch)
        finally:
            store._db.set_trace_callback(None)  # noqa: SLF001
        assert sum("MAX(sample_index)" in sql for sql in statements) == 1
        (step,) = training.steps("exp")
        assert sorted((r.row_id, r.sample_index) for r in store.list_rollouts(step.run_id)) == [
            ("row_0", 0),
            ("row_0", 1),
            ("row_0", 2),
            ("row_0", 3),
        ]


def test_another_writer_taking_a_rows_next_sample_index_costs_no_rollout(tmp_path: Path) -> None:
    """Two servers on one store serving the same step: the index one of them counted on is taken by the other; its
    insert fails on the rollout id and the batch is written again with the index read from the database."""
    with Store(tmp_path / "runs.db") as store, Store(tmp_path / "runs.db") as other_connection:
        mine, theirs = TrainingStore(store), TrainingStore(other_connection)
        store_one(mine, ids("m0", "run", "row_0"))
        store_one(theirs, ids("t0", "run", "row_0"))  # takes sample 1, which `mine` counts on next
        third = store_one(mine, ids("m1", "run", "row_0"))
        fourth = store_one(mine, ids("m2", "run", "row_0"))
        assert (third.sample_index, fourth.sample_index) == (2, 3)  # type: ignore[attr-defined]
        (step,) = mine.steps("exp")
        assert sorted((r.row_id, r.sample_index) for r in store.list_rollouts(step.run_id)) == [
            ("row_0", 0),
            ("row_0", 1),
            ("row_0", 2),
            ("row_0", 3),
        ]
        assert all(mine.served(name) is not None for name in ("m0", "t0", "m1", "m2"))


def test_the_remembered_sample_indexes_are_bounded_and_a_forgotten_row_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long training stores rollouts of ever new (step run, row) pairs: the next indexes kept are capped, the least
    recently stored row is forgotten first, and a forgotten row's next index comes from the database again."""
    import svgagent.core.serve.training_runs as training_module

    monkeypatch.setattr(training_module, "NEXT_SAMPLES_KEPT", 2)
    with Store(tmp_path / "runs.db") as store:
        training = TrainingStore(store)
        for name, row in (("a0", "row_a"), ("b0", "row_b"), ("a1", "row_a"), ("c0", "row_c")):
            store_one(training, ids(name, "run", row))
        # row_b (row index 1), stored least recently, was forgotten; row_a was stored again after it
        assert [row for _, row in training._next_samples] == [0, 2]  # noqa: SLF001
        again = store_one(training, ids("b1", "run", "row_b"))
        assert again.sample_index == 1  # type: ignore[attr-defined]
        (step,) = training.steps("exp")
        assert sorted((r.row_id, r.sample_index) for r in store.list_rollouts(step.run_id)) == [
            ("row_a", 0),
            ("row_a", 1),
            ("row_b", 0),
            ("row_b", 1),
            ("row_c", 0),
        ]
