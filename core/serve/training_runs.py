"""Training runs seen by ``svgagent serve``: every rollout a trainer asks the server for, kept in the run store.

A *training run* is keyed by eval-protocol's ``experiment_id`` (one RFT job, or one ``@evaluation_test``
invocation); ``--job`` names the RFT job it belongs to. Each *step* of it is an ordinary run in the ``runs``
table, so everything that works on runs (the rollout table, the compare screen, export) works on a step. A served
rollout is an ordinary rollout of its step's run, plus a ``served_rollouts`` row with eval-protocol's ids and the
status the server logged. The same dataset row keeps one ``row_index`` across the steps of a training run.
A rollout is written once, when it ended (the picture and the status together, in one transaction with the
rollouts that ended at about the same time: ``record_many``); a retry of a rollout that ended in an error is its
next attempt.

Which step a rollout belongs to, first that tells (``StepHint.source``):
1. ``metadata``: ``completion_params`` has ``step`` / ``training_step`` / ``global_step`` (and maybe ``epoch``);
2. ``model``: the model name says ``step-N`` / ``step_N`` / ``checkpoint-N`` / ``ckpt-N`` (and maybe ``epoch-N``);
3. ``run order``: each new eval-protocol ``run_id`` of the training run is the next step.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from svgagent.core.analysis.health import StepRef
from svgagent.core.exchange.ep_status import StatusCode
from svgagent.core.scoring.errors import StoreError
from svgagent.core.store.run_store import Store, new_run_id, now_iso, rollout_id_for, rollout_values, store_failure
from svgagent.core.store.sqlite_values import error_line, safe_text

_STEP_KEYS = ("step", "training_step", "global_step")
_MODEL_STEP = re.compile(r"(?:^|[^a-z0-9])(?:step|checkpoint|ckpt)[-_]?(\d{1,9})(?![0-9])", re.IGNORECASE)
_MODEL_EPOCH = re.compile(r"(?:^|[^a-z0-9])epoch[-_]?(\d{1,6})(?![0-9])", re.IGNORECASE)
# A row's samples (every attempt) in a run, as the rollouts_by_run index (run_id, is_current, row_index, sample_index)
# finds them: without the is_current term SQLite reads every rollout of the run, once per stored rollout.
_SAMPLES_OF_ROW = "run_id = ? AND is_current IN (0, 1) AND row_index = ?"
NEXT_SAMPLES_KEPT = 65_536  # rows whose next sample index is remembered (the least recently stored are read again)


def unstorable(err: BaseException) -> StoreError:
    """The StoreError of a rollout whose rows raised ``err`` (not an SQLite error: a value no statement takes)."""
    return StoreError(f"the rollout could not be stored: {error_line(err)}")


@dataclass(frozen=True, slots=True)
class StepHint:
    step: int | None
    epoch: int | None
    source: str  # "metadata", "model" or "run order"


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and 0 <= value < 10**9:
        return value
    if isinstance(value, str) and value.isdigit() and len(value) <= 9:
        return int(value)
    return None


def step_hint(completion_params: dict[str, Any], model: str) -> StepHint:
    """The step (and epoch) a request says it belongs to (see the module docstring)."""
    epoch = _int(completion_params.get("epoch"))
    for key in _STEP_KEYS:
        step = _int(completion_params.get(key))
        if step is not None:
            return StepHint(step, epoch, "metadata")
    step, model_epoch = _model_step(model)
    if step is not None:
        return StepHint(step, epoch if epoch is not None else model_epoch, "model")
    return StepHint(None, epoch, "run order")


@lru_cache(maxsize=256)
def _model_step(model: str) -> tuple[int | None, int | None]:
    """The step and epoch a model name says (read once per name: every rollout of a step names the same model)."""
    found = _MODEL_STEP.search(model)
    if not found:
        return None, None
    epoch = _MODEL_EPOCH.search(model)
    return int(found.group(1)), int(epoch.group(1)) if epoch else None


@dataclass(frozen=True, slots=True)
class ServedRef:
    """Where a served rollout lives: its eval-protocol id, the current attempt's svgagent rollout id, its step."""

    ep_rollout_id: str
    rollout_id: str
    run_id: str
    training_id: str
    step: int
    status_code: int  # the status logged for it
    row_index: int
    sample_index: int


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a rollout of a training run goes before it is stored: its step's run and its row's index."""

    training_id: str
    step: int
    run_id: str
    row_index: int


@dataclass(frozen=True, slots=True)
class Served:
    """One ended rollout to store (:meth:`TrainingStore.record_many`): where, its ids (eval-protocol's, as
    attributes), what was asked and answered (``columns``), the status logged for it, and for a retry of one that
    ended in an error, that earlier attempt."""

    place: Placement
    ids: Any
    model: str
    prompt: str
    requirements: Sequence[str]
    judged: bool
    columns: dict[str, Any]
    code: StatusCode
    message: str
    previous: ServedRef | None = None


@dataclass(frozen=True, slots=True)
class TrainingRun:
    training_id: str
    experiment_id: str
    job_name: str | None
    label: str
    created: str
    updated: str
    steps: int
    rollouts: int


@dataclass(frozen=True, slots=True)
class TrainingStep:
    step: int
    run_id: str
    epoch: int | None
    model: str | None
    source: str
    rollouts: int
    done: int
    failed: int
    judged: int
    mean_local: float | None  # mean of the valid local (``--judge``) scores; None when nothing was judged


class TrainingStore:
    """Training-run reads and writes on one :class:`Store` (see the module docstring)."""

    def __init__(self, store: Store, *, job_name: str | None = None, settings: dict[str, Any] | None = None) -> None:
        self.store = store
        self.job_name = job_name
        self.settings = dict(settings or {})
        self._known_trainings: set[str] = set()
        self._step_runs: dict[tuple[str, int], str] = {}
        self._run_order_steps: dict[tuple[str, str], int] = {}
        self._row_indexes: dict[tuple[str, str], int] = {}
        # (run_id, row_index) -> the next sample index, as SELECT MAX(sample_index) + 1 said or the rollouts this
        # store committed since: read once per row, not once per stored rollout (see record_many)
        self._next_samples: dict[tuple[str, int], int] = {}

    # --- the server's writes ----------------------------------------------------------------------------------
    def served(self, ep_rollout_id: str) -> ServedRef | None:
        rows = self.store.query(
            "SELECT s.ep_rollout_id, s.rollout_id, r.run_id, s.training_id, s.step, s.status_code, r.row_index,"
            " r.sample_index FROM served_rollouts s JOIN rollouts r ON r.rollout_id = s.rollout_id"
            " WHERE s.ep_rollout_id = ?",
            (ep_rollout_id,),
        )
        return ServedRef(*rows[0]) if rows else None

    def place(self, *, ids: Any, model: str, hint: StepHint, judged: bool) -> Placement:
        """Where a new rollout goes: its training run, step run and row index, created on first sight (one
        transaction). ``ids`` has eval-protocol's ids as attributes. What never changes once written is
        remembered, so for a known step and row this touches no database at all."""
        training_id = ids.experiment_id
        cached_step = hint.step if hint.step is not None else self._run_order_steps.get((training_id, ids.run_id))
        if (
            cached_step is not None
            and (training_id, cached_step) in self._step_runs
            and (training_id, ids.row_id) in self._row_indexes
        ):
            return Placement(
                training_id,
                cached_step,
                self._step_runs[(training_id, cached_step)],
                self._row_indexes[(training_id, ids.row_id)],
            )
        stamp = now_iso()
        with self.store.transaction() as db:
            if training_id not in self._known_trainings:
                if db.execute("SELECT 1 FROM training_runs WHERE training_id = ?", (training_id,)).fetchone() is None:
                    db.execute(
                        "INSERT INTO training_runs(training_id, experiment_id, job_name, label, created, updated)"
                        " VALUES (?,?,?,?,?,?)",
                        (training_id, ids.experiment_id, self.job_name, self._label(training_id), stamp, stamp),
                    )
                self._known_trainings.add(training_id)
            step, run_id = self._step_run(db, training_id, ids.run_id, model, hint, judged, stamp)
            row_index = self._row_index(db, training_id, ids.row_id)
        return Placement(training_id, step, run_id, row_index)

    def record(
        self,
        place: Placement,
        *,
        ids: Any,
        model: str,
        prompt: str,
        requirements: Sequence[str],
        judged: bool,
        columns: dict[str, Any],
        code: StatusCode,
        message: str,
        previous: ServedRef | None = None,
    ) -> ServedRef:
        """Store a served rollout once it ended, with the status logged for it, in one transaction. With
        ``previous`` (an earlier attempt that ended in an error) it is the next attempt of the same rollout."""
        outcome = self.record_many(
            [Served(place, ids, model, prompt, requirements, judged, columns, code, message, previous)]
        )[0]
        if isinstance(outcome, ServedRef):
            return outcome
        raise outcome

    def record_many(self, batch: Sequence[Served]) -> list[ServedRef | StoreError]:
        """Store several ended rollouts in one transaction (its commit was most of a stored rollout's CPU); one
        that cannot be written, whatever it raises (its StoreError in its place in the answer), costs the others
        nothing. A failed commit raises StoreError: then none is stored. The batch is first written as it is; only when that fails is it
        written again with each rollout on a savepoint of its own (two statements more per rollout, paid only then).

        A new sample's index is the one after the last this store committed for its row (read from the database once
        per row); should another writer of the same step run have taken it meanwhile, the insert fails on the
        rollout id, and the batch written again reads each index from the database, as it did before."""
        stamp = now_iso()
        taken: dict[tuple[str, int], int] = {}
        try:
            with self.store.transaction() as db:
                refs = [self._insert(db, one, stamp, taken) for one in batch]
        except Exception:  # rolled back, whatever failed: nothing of it is stored (its rows' indexes are read again)
            for one in batch:
                self._next_samples.pop((one.place.run_id, one.place.row_index), None)
        else:
            known = self._next_samples
            for row, next_index in taken.items():  # the rows stored last at the end; the oldest go first
                known.pop(row, None)
                known[row] = next_index
            while len(known) > NEXT_SAMPLES_KEPT:
                del known[next(iter(known))]
            return refs
        outcomes: list[ServedRef | StoreError] = []
        with self.store.transaction() as db:
            for one in batch:
                db.execute("SAVEPOINT served")
                try:
                    outcomes.append(self._insert(db, one, stamp, None))
                except sqlite3.Error as err:
                    db.execute("ROLLBACK TO served")
                    outcomes.append(store_failure(err, self.store.path))
                except Exception as err:  # noqa: BLE001 - whatever this rollout's rows raise costs only this rollout
                    db.execute("ROLLBACK TO served")
                    outcomes.append(unstorable(err))
                db.execute("RELEASE served")
        return outcomes

    def _insert(self, db: Any, one: Served, stamp: str, taken: dict[tuple[str, int], int] | None) -> ServedRef:
        """One rollout's rows; ``taken``: the next sample index of each row this batch wrote (None: every index read
        from the database)."""
        place, ids, previous = one.place, one.ids, one.previous
        values = rollout_values(one.columns)  # capped like every store write
        if previous is None:
            row = (place.run_id, place.row_index)
            sample_index = None if taken is None else taken.get(row, self._next_samples.get(row))
            if sample_index is None:
                sample_index = db.execute(
                    f"SELECT COALESCE(MAX(sample_index) + 1, 0) FROM rollouts WHERE {_SAMPLES_OF_ROW}", row
                ).fetchone()[0]
            if taken is not None:
                taken[row] = sample_index + 1
            attempt, row_index, run_id = 1, place.row_index, place.run_id
        else:
            run_id, row_index, sample_index = previous.run_id, previous.row_index, previous.sample_index
            attempt = db.execute(
                f"SELECT MAX(attempt) + 1 FROM rollouts WHERE {_SAMPLES_OF_ROW} AND sample_index = ?",
                (run_id, row_index, sample_index),
            ).fetchone()[0]
            db.execute(
                "UPDATE rollouts SET is_current = 0 WHERE run_id = ? AND is_current = 1 AND row_index = ?"
                " AND sample_index = ?",
                (run_id, row_index, sample_index),
            )
        rollout_id = rollout_id_for(run_id, row_index, sample_index, attempt)
        row = {
            "rollout_id": rollout_id,
            "run_id": run_id,
            "row_index": row_index,
            "row_id": ids.row_id,
            "ep_rollout_id": ids.rollout_id,
            "sample_index": sample_index,
            "attempt": attempt,
            "prompt": safe_text(one.prompt),
            "requirements_json": json.dumps(list(one.requirements)),
            "total": len(one.requirements),
            "created": stamp,
            "updated": stamp,
            **values,
        }
        db.execute(f"INSERT INTO rollouts({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", tuple(row.values()))
        db.execute(
            "INSERT INTO served_rollouts(ep_rollout_id, rollout_id, training_id, step, invocation_id, ep_run_id,"
            " row_id, model, status_code, status_message, judged_locally, created, updated)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(ep_rollout_id) DO UPDATE SET"
            " rollout_id = excluded.rollout_id, status_code = excluded.status_code,"
            " status_message = excluded.status_message, updated = excluded.updated",
            (
                ids.rollout_id,
                rollout_id,
                place.training_id,
                place.step,
                ids.invocation_id,
                ids.run_id,
                ids.row_id,
                safe_text(one.model),
                int(one.code),
                safe_text(one.message[:2000]),
                int(one.judged),
                stamp,
                stamp,
            ),
        )
        return ServedRef(
            ids.rollout_id, rollout_id, run_id, place.training_id, place.step, int(one.code), row_index, sample_index
        )

    def _label(self, training_id: str) -> str:
        return self.job_name or f"experiment {training_id[:24]}"

    def _row_index(self, db: Any, training_id: str, row_id: str) -> int:
        key = (training_id, row_id)
        if key in self._row_indexes:
            return self._row_indexes[key]
        found = db.execute("SELECT row_index FROM training_rows WHERE training_id = ? AND row_id = ?", key).fetchone()
        if found is None:
            row_index = db.execute(
                "SELECT COUNT(*) FROM training_rows WHERE training_id = ?", (training_id,)
            ).fetchone()[0]
            db.execute(
                "INSERT INTO training_rows(training_id, row_id, row_index) VALUES (?,?,?)",
                (training_id, row_id, row_index),
            )
        else:
            row_index = found[0]
        self._row_indexes[key] = row_index
        return row_index

    def _step_run(
        self, db: Any, training_id: str, ep_run_id: str, model: str, hint: StepHint, judged: bool, stamp: str
    ) -> tuple[int, str]:
        if hint.step is not None:
            step = hint.step
        elif (training_id, ep_run_id) in self._run_order_steps:
            step = self._run_order_steps[(training_id, ep_run_id)]
        else:
            same = db.execute(
                "SELECT step FROM training_steps WHERE training_id = ? AND ep_run_id = ? AND step_source = 'run order'",
                (training_id, ep_run_id),
            ).fetchone()
            step = (
                same[0]
                if same
                else db.execute(
                    "SELECT COALESCE(MAX(step) + 1, 1) FROM training_steps WHERE training_id = ?", (training_id,)
                ).fetchone()[0]
            )
        if (training_id, step) in self._step_runs:
            return step, self._step_runs[(training_id, step)]
        found = db.execute(
            "SELECT run_id FROM training_steps WHERE training_id = ? AND step = ?", (training_id, step)
        ).fetchone()
        if found is not None:
            run_id = found[0]
        else:
            run_id = self._new_step_run(db, training_id, ep_run_id, step, model, hint, judged, stamp)
        self._step_runs[(training_id, step)] = run_id
        if hint.step is None:
            self._run_order_steps[(training_id, ep_run_id)] = step
        return step, run_id

    def _new_step_run(
        self, db: Any, training_id: str, ep_run_id: str, step: int, model: str, hint: StepHint, judged: bool, stamp: str
    ) -> str:
        run_id = new_run_id()
        while db.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone() is not None:
            run_id = new_run_id()
        settings = {
            **self.settings,
            "model": model,
            "source": "serve",
            "experiment_id": training_id,
            "step": step,
            "judge": "local" if judged else "off",
        }
        dataset = {"name": "served rollouts", "source": "svgagent serve", "training_id": training_id}
        db.execute(
            "INSERT INTO runs(run_id, name, created, updated, status, settings_json, dataset_json)"
            " VALUES (?,?,?,?,?,?,?)",
            (
                run_id,
                f"{self._label(training_id)} · step {step}",
                stamp,
                stamp,
                "serving",
                json.dumps(settings),
                json.dumps(dataset),
            ),
        )
        db.execute(
            "INSERT INTO training_steps(training_id, step, run_id, step_source, epoch, ep_run_id, model,"
            " created) VALUES (?,?,?,?,?,?,?,?)",
            (training_id, step, run_id, hint.source, hint.epoch, ep_run_id, safe_text(model), stamp),
        )
        db.execute("UPDATE training_runs SET updated = ? WHERE training_id = ?", (stamp, training_id))
        return run_id

    def close_steps(self, threshold: float) -> None:
        """Mark the step runs still "serving" as "served", with their summaries (when the server stops)."""
        for (run_id,) in self.store.query("SELECT run_id FROM runs WHERE status = 'serving'"):
            self.store.set_run_status(run_id, "served", self.store.summarize(run_id, threshold))

    # --- reads (CLI, TUI) -------------------------------------------------------------------------------------
    def trainings(self, job_name: str | None = None) -> list[TrainingRun]:
        """Training runs, most recently updated first (only those of ``job_name`` when given)."""
        sql = (
            "SELECT t.training_id, t.experiment_id, t.job_name, t.label, t.created,"
            " COALESCE((SELECT MAX(r.updated) FROM served_rollouts r WHERE r.training_id = t.training_id),"
            " t.updated) AS last,"
            " (SELECT COUNT(*) FROM training_steps s WHERE s.training_id = t.training_id),"
            " (SELECT COUNT(*) FROM served_rollouts r WHERE r.training_id = t.training_id)"
            " FROM training_runs t"
        )
        params: tuple[Any, ...] = ()
        if job_name is not None:
            sql += " WHERE t.job_name = ? OR instr(t.experiment_id, ?) > 0"
            params = (job_name, job_name.rsplit("/", 1)[-1])
        return [TrainingRun(*row) for row in self.store.query(sql + " ORDER BY last DESC", params)]

    def steps(self, training_id: str) -> list[TrainingStep]:
        """Every step of a training run in step order, with counts and the mean local score."""
        rows = self.store.query(
            "SELECT ts.step, ts.run_id, ts.epoch, ts.model, ts.step_source,"
            " COUNT(r.rollout_id),"
            " SUM(CASE WHEN r.status IN ('scored', 'failed') THEN 1 ELSE 0 END),"
            " SUM(CASE WHEN s.status_code IS NOT NULL AND s.status_code NOT IN (100, 101) THEN 1 ELSE 0 END),"
            " SUM(CASE WHEN s.judged_locally = 1 AND r.is_score_valid = 1 THEN 1 ELSE 0 END),"
            " AVG(CASE WHEN s.judged_locally = 1 AND r.is_score_valid = 1 THEN COALESCE(r.override_score, r.score)"
            " END)"
            " FROM training_steps ts"
            " LEFT JOIN served_rollouts s ON s.training_id = ts.training_id AND s.step = ts.step"
            " LEFT JOIN rollouts r ON r.rollout_id = s.rollout_id"
            " WHERE ts.training_id = ? GROUP BY ts.step ORDER BY ts.step",
            (training_id,),
        )
        return [
            TrainingStep(
                row[0], row[1], row[2], row[3], row[4], row[5] or 0, row[6] or 0, row[7] or 0, row[8] or 0, row[9]
            )
            for row in rows
        ]

    def training_of(self, run_id: str) -> str | None:
        """The training run whose step ``run_id`` is, or None (a run made by `svgagent eval` or an import)."""
        rows = self.store.query("SELECT training_id FROM training_steps WHERE run_id = ? LIMIT 1", (run_id,))
        return rows[0][0] if rows else None

    def step_refs(self, training_id: str) -> list[StepRef]:
        """The steps of a training run as the health checks and the filmstrip read them: (step, run) in step order."""
        rows = self.store.query(
            "SELECT step, run_id FROM training_steps WHERE training_id = ? ORDER BY step", (training_id,)
        )
        return [StepRef(step, run_id) for step, run_id in rows]

    def health_steps(self, run_id: str) -> tuple[list[StepRef], str | None]:
        """The steps a run's evaluator health is read over: its training run's (and that training's id), else the
        run alone as one step (and None)."""
        training_id = self.training_of(run_id)
        return (self.step_refs(training_id), training_id) if training_id else ([StepRef(1, run_id)], None)

    def step_picture(self, run_id: str) -> str | None:
        """A rollout of a step's run that has a picture: its first row's first sample (the lowest row index)."""
        rows = self.store.query(
            "SELECT rollout_id FROM rollouts WHERE run_id = ? AND is_current = 1 AND png IS NOT NULL"
            " ORDER BY row_index, sample_index LIMIT 1",
            (run_id,),
        )
        return rows[0][0] if rows else None

    def ep_status(self, ep_rollout_id: str) -> tuple[int | None, str | None]:
        rows = self.store.query(
            "SELECT status_code, status_message FROM served_rollouts WHERE ep_rollout_id = ?", (ep_rollout_id,)
        )
        return (rows[0][0], rows[0][1]) if rows else (None, None)
