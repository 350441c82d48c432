"""The run store: SQLite in WAL mode, one file, readable by a second process while the engine writes.

Tables: ``runs`` (settings without secrets, dataset reference, status, summary), ``rollouts`` (everything about
one attempt at one (row, sample), including the exact PNG the judge saw) and ``cache`` (model answers keyed by a
hash of the request). The schema version lives in ``PRAGMA user_version``; ``MIGRATIONS`` upgrades old files.
"""

from __future__ import annotations

import json
import secrets as _random
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from svgagent.core.scoring.errors import StoreError
from svgagent.core.scoring.models import DatasetRow, RolloutStatus
from svgagent.core.records import LIGHT_COLUMNS, RolloutRecord, RunRecord, RunSummary, summarize_rows
from svgagent.core.schema import MIGRATIONS

_ROLLOUT_COLUMNS: frozenset[str] = frozenset(
    """raw_answer finish_reason svg png judge_raw rationale verdicts_json score fulfilled total is_score_valid
    reason error generation_s render_s judge_s prompt_tokens completion_tokens judge_prompt_tokens
    judge_completion_tokens cached status is_current override_score override_fulfilled override_verdicts_json
    override_at""".split()
)


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + _random.token_hex(2)


def rollout_id_for(run_id: str, row_index: int, sample_index: int, attempt: int = 1) -> str:
    return f"{run_id}.{row_index}.{sample_index}" + (f".a{attempt}" if attempt > 1 else "")


class Store:
    """Thread-safe access to one store file. Cheap to open; opening creates or migrates the schema."""

    def __init__(self, path: Path | str, *, readonly: bool = False) -> None:
        self.path = Path(path)
        self._lock = threading.RLock()
        try:
            if readonly:
                if not self.path.exists():
                    raise StoreError(f"no run store at {self.path}")
                uri = f"file:{self.path}?mode=ro"
                self._db = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
            self._db.row_factory = sqlite3.Row
            self._db.execute("PRAGMA busy_timeout = 30000")
            if not readonly:
                self._db.execute("PRAGMA journal_mode = WAL")
                self._db.execute("PRAGMA synchronous = NORMAL")
                self._db.execute("PRAGMA foreign_keys = ON")
                self._migrate()
        except sqlite3.DatabaseError as err:
            raise StoreError(f"cannot open run store {self.path}: {err}") from None

    # --- lifecycle ------------------------------------------------------------------------------------------
    @contextmanager
    def reader(self) -> Iterator[Store]:
        """A read-only store on the same file with its own connection, for a big read in another thread: WAL
        lets it read while this connection writes, and this connection (the engine's, the app's event loop)
        never waits for the read to finish."""
        reader = Store(self.path, readonly=True)
        try:
            yield reader
        finally:
            reader.close()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, for modules with tables of their own (``svgagent.core.training``); the store's
        own writes called inside it (same thread) join it."""
        with self._tx() as db:
            yield db

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        """Rows of one read-only statement (for the same modules)."""
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    def _migrate(self) -> None:
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        if version > len(MIGRATIONS):
            raise StoreError(
                f"run store {self.path} has schema v{version}, newer than this svgagent (v{len(MIGRATIONS)}): upgrade"
            )
        for target in range(version + 1, len(MIGRATIONS) + 1):
            script = f"BEGIN IMMEDIATE;\n{MIGRATIONS[target - 1]}\nPRAGMA user_version = {target};\nCOMMIT;"
            try:
                self._db.executescript(script)
            except sqlite3.DatabaseError:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise

    @property
    def schema_version(self) -> int:
        with self._lock:
            return int(self._db.execute("PRAGMA user_version").fetchone()[0])

    def integrity_ok(self) -> bool:
        with self._lock:
            return self._db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"

    # --- runs -----------------------------------------------------------------------------------------------
    def create_run(
        self,
        *,
        name: str | None,
        settings: dict[str, Any],
        dataset: dict[str, Any],
        rows: Sequence[DatasetRow],
        samples: int,
    ) -> str:
        """Create a run and all its rollouts (queued), in one transaction."""
        run_id = new_run_id()
        stamp = now_iso()
        with self._tx() as db:
            db.execute(
                "INSERT INTO runs(run_id, name, created, updated, status, settings_json, dataset_json)"
                " VALUES (?,?,?,?,?,?,?)",
                (run_id, name or run_id, stamp, stamp, "created", json.dumps(settings), json.dumps(dataset)),
            )
            db.executemany(
                "INSERT INTO rollouts(rollout_id, run_id, row_index, row_id, sample_index, status, prompt,"
                " requirements_json, total, created, updated) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                [
                    (
                        rollout_id_for(run_id, row.index, k),
                        run_id,
                        row.index,
                        row.row_id,
                        k,
                        RolloutStatus.QUEUED.value,
                        row.prompt,
                        json.dumps(list(row.requirements)),
                        len(row.requirements),
                        stamp,
                        stamp,
                    )
                    for row in rows
                    for k in range(samples)
                ],
            )
        return run_id

    def get_run(self, run_id: str) -> RunRecord:
        with self._lock:
            row = self._db.execute("SELECT * FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            raise StoreError(f"no run {run_id!r} in {self.path} (see `svgagent runs list`)")
        return RunRecord.from_row(row)

    def list_runs(self) -> list[RunRecord]:
        with self._lock:
            rows = self._db.execute("SELECT * FROM runs ORDER BY created DESC").fetchall()
        return [RunRecord.from_row(r) for r in rows]

    def set_run_status(self, run_id: str, status: str, summary: RunSummary | None = None) -> None:
        with self._tx() as db:
            if summary is None:
                db.execute("UPDATE runs SET status=?, updated=? WHERE run_id=?", (status, now_iso(), run_id))
            else:
                db.execute(
                    "UPDATE runs SET status=?, updated=?, summary_json=? WHERE run_id=?",
                    (status, now_iso(), json.dumps(summary.to_dict()), run_id),
                )

    def rename_run(self, run_id: str, name: str) -> None:
        with self._tx() as db:
            db.execute("UPDATE runs SET name=?, updated=? WHERE run_id=?", (name, now_iso(), run_id))

    # --- rollouts -------------------------------------------------------------------------------------------
    def update_rollout(self, rollout_id: str, **fields: Any) -> None:
        unknown = set(fields) - _ROLLOUT_COLUMNS
        if unknown:
            raise ValueError(f"unknown rollout columns: {sorted(unknown)}")
        values = {k: _to_db(v) for k, v in fields.items()}
        values["updated"] = now_iso()
        assignments = ", ".join(f"{k} = ?" for k in values)
        with self._lock:
            self._db.execute(
                f"UPDATE rollouts SET {assignments} WHERE rollout_id = ?", (*values.values(), rollout_id)
            )

    def get_rollout(self, rollout_id: str) -> RolloutRecord:
        with self._lock:
            row = self._db.execute("SELECT * FROM rollouts WHERE rollout_id = ?", (rollout_id,)).fetchone()
        if row is None:
            raise StoreError(f"no rollout {rollout_id!r}")
        return RolloutRecord.from_row(row)

    def get_rollouts(self, rollout_ids: Sequence[str], *, heavy: bool = False) -> list[RolloutRecord]:
        """Several rollouts by id in one query per 500 ids (light unless ``heavy``); unknown ids are skipped."""
        cols = "*" if heavy else ", ".join(LIGHT_COLUMNS)
        ids = list(dict.fromkeys(rollout_ids))
        found: list[RolloutRecord] = []
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            found.extend(self._rollouts(
                f"SELECT {cols} FROM rollouts WHERE rollout_id IN ({','.join('?' * len(chunk))})", chunk))
        return found

    def list_rollouts(
        self, run_id: str, *, heavy: bool = False, current_only: bool = True, statuses: Iterable[str] | None = None
    ) -> list[RolloutRecord]:
        """Rollouts of a run in (row, sample, attempt) order. ``heavy`` adds answers, SVG and PNG."""
        cols = "*" if heavy else ", ".join(LIGHT_COLUMNS)
        sql = f"SELECT {cols} FROM rollouts WHERE run_id = ?"
        params: list[Any] = [run_id]
        if current_only:
            sql += " AND is_current = 1"
        if statuses is not None:
            wanted = list(statuses)
            sql += f" AND status IN ({','.join('?' * len(wanted))})"
            params.extend(wanted)
        sql += " ORDER BY row_index, sample_index, attempt"
        return self._rollouts(sql, params)

    def _rollouts(self, sql: str, params: Sequence[Any]) -> list[RolloutRecord]:
        """Rollouts a query selects, read as plain tuples (a 10,000-rollout run is read on every open)."""
        with self._lock:
            cursor = self._db.cursor()
            cursor.row_factory = None
            rows = cursor.execute(sql, params).fetchall()
            columns = [d[0] for d in cursor.description]
        return RolloutRecord.from_tuples(columns, rows)

    def status_counts(self, run_id: str) -> dict[RolloutStatus, int]:
        """How many current rollouts of ``run_id`` are in each state (states with none are left out) — counted
        by SQLite, without loading the rollouts."""
        with self._lock:
            rows = self._db.execute(
                "SELECT status, COUNT(*) FROM rollouts WHERE run_id = ? AND is_current = 1 GROUP BY status", (run_id,)
            ).fetchall()
        return {RolloutStatus(status): count for status, count in rows}

    def iter_rollouts(self, run_id: str, *, current_only: bool = True) -> Iterator[RolloutRecord]:
        """Heavy rollouts one by one (exports) without holding a whole run's PNGs in memory."""
        with self._lock:
            ids = [
                r[0]
                for r in self._db.execute(
                    "SELECT rollout_id FROM rollouts WHERE run_id = ?"
                    + (" AND is_current = 1" if current_only else "")
                    + " ORDER BY row_index, sample_index, attempt",
                    (run_id,),
                ).fetchall()
            ]
        for rid in ids:
            yield self.get_rollout(rid)

    def reset_unfinished(self, run_id: str) -> list[str]:
        """Mark every current, non-terminal rollout queued again (after a crash); returns their ids."""
        terminal = (RolloutStatus.SCORED.value, RolloutStatus.FAILED.value)
        with self._tx() as db:
            ids = [
                r[0]
                for r in db.execute(
                    "SELECT rollout_id FROM rollouts WHERE run_id = ? AND is_current = 1 AND status NOT IN (?, ?)",
                    (run_id, *terminal),
                ).fetchall()
            ]
            # rows already queued are left alone: their `updated` stays, so readers comparing snapshots (the app
            # reloading a 10,000-row run) see no change where there was none
            db.execute(
                "UPDATE rollouts SET status = ?, updated = ? WHERE run_id = ? AND is_current = 1"
                " AND status NOT IN (?, ?, ?)",
                (RolloutStatus.QUEUED.value, now_iso(), run_id, *terminal, RolloutStatus.QUEUED.value),
            )
        return ids

    def new_attempts(self, run_id: str, rollout_ids: Sequence[str]) -> list[str]:
        """Queue a fresh attempt for each given rollout; the old attempt stays, no longer current."""
        created: list[str] = []
        stamp = now_iso()
        with self._tx() as db:
            for rid in rollout_ids:
                old = db.execute(
                    "SELECT * FROM rollouts WHERE rollout_id = ? AND run_id = ?", (rid, run_id)
                ).fetchone()
                if old is None:
                    raise StoreError(f"no rollout {rid!r} in run {run_id}")
                attempt = db.execute(
                    "SELECT MAX(attempt) FROM rollouts WHERE run_id=? AND row_index=? AND sample_index=?",
                    (run_id, old["row_index"], old["sample_index"]),
                ).fetchone()[0] + 1
                new_id = rollout_id_for(run_id, old["row_index"], old["sample_index"], attempt)
                db.execute(
                    "UPDATE rollouts SET is_current = 0 WHERE run_id=? AND row_index=? AND sample_index=?",
                    (run_id, old["row_index"], old["sample_index"]),
                )
                db.execute(
                    "INSERT INTO rollouts(rollout_id, run_id, row_index, row_id, sample_index, attempt, status,"
                    " prompt, requirements_json, total, created, updated) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                    (new_id, run_id, old["row_index"], old["row_id"], old["sample_index"], attempt,
                     RolloutStatus.QUEUED.value, old["prompt"], old["requirements_json"], old["total"], stamp, stamp),
                )
                created.append(new_id)
        return created

    def attempts_of(self, rollout_id: str) -> list[RolloutRecord]:
        """Every attempt at the same (row, sample) as ``rollout_id``, oldest first."""
        with self._lock:
            base = self._db.execute(
                "SELECT run_id, row_index, sample_index FROM rollouts WHERE rollout_id = ?", (rollout_id,)
            ).fetchone()
            if base is None:
                raise StoreError(f"no rollout {rollout_id!r}")
            return self._rollouts(
                f"SELECT {', '.join(LIGHT_COLUMNS)} FROM rollouts WHERE run_id=? AND row_index=? AND sample_index=?"
                " ORDER BY attempt",
                tuple(base),
            )

    def set_override(self, rollout_id: str, *, fulfilled: int | None, verdicts: Sequence[bool] | None = None) -> None:
        """Store a human verdict next to the judge's: a count, or one ✓/✗ per requirement. None clears it."""
        rec = self.get_rollout(rollout_id)
        if verdicts is not None:
            if len(verdicts) != rec.total:
                raise ValueError(f"expected {rec.total} verdicts, got {len(verdicts)}")
            fulfilled = sum(1 for v in verdicts if v)
        if fulfilled is None:
            self.update_rollout(rollout_id, override_score=None, override_fulfilled=None,
                                override_verdicts_json=None, override_at=None)
            return
        if not 0 <= fulfilled <= rec.total:
            raise ValueError(f"fulfilled must be between 0 and {rec.total}")
        self.update_rollout(
            rollout_id,
            override_fulfilled=fulfilled,
            override_score=fulfilled / rec.total if rec.total else 0.0,
            override_verdicts_json=json.dumps([bool(v) for v in verdicts]) if verdicts is not None else None,
            override_at=now_iso(),
        )

    def summarize(self, run_id: str, threshold: float) -> RunSummary:
        return summarize_rows(self.list_rollouts(run_id), threshold)

    # --- cache ----------------------------------------------------------------------------------------------
    def cache_get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute("SELECT value_json FROM cache WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def cache_put(self, key: str, kind: str, value: dict[str, Any]) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO cache(key, kind, value_json, created) VALUES (?,?,?,?)",
                (key, kind, json.dumps(value), now_iso()),
            )


    # --- RFT jobs (v3) ---------------------------------------------------------------------------------------
    def remember_job(
        self,
        *,
        job_name: str,
        base_url: str,
        account: str,
        display_name: str | None = None,
        dataset: str | None = None,
        evaluator: str | None = None,
        base_model: str | None = None,
        output_model: str | None = None,
        created: str | None = None,
        last_state: str | None = None,
        job: dict[str, Any] | None = None,
    ) -> None:
        """Record a launched RFT job (insert, or refresh everything but ``created`` when it is already known).
        ``job`` is the job resource as Fireworks returned it (no secrets in it)."""
        stamp = now_iso()
        with self._tx() as db:
            db.execute(
                "INSERT INTO rft_jobs(job_name, display_name, base_url, account, dataset, evaluator, base_model,"
                " output_model, created, last_state, last_json, updated) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)"
                " ON CONFLICT(job_name) DO UPDATE SET display_name=excluded.display_name, base_url=excluded.base_url,"
                " account=excluded.account, dataset=excluded.dataset, evaluator=excluded.evaluator,"
                " base_model=excluded.base_model, output_model=excluded.output_model,"
                " last_state=COALESCE(excluded.last_state, rft_jobs.last_state),"
                " last_json=COALESCE(excluded.last_json, rft_jobs.last_json), updated=excluded.updated",
                (job_name, display_name, base_url, account, dataset, evaluator, base_model, output_model,
                 created or stamp, last_state, json.dumps(job) if job is not None else None, stamp),
            )

    def list_jobs(self) -> list[dict[str, Any]]:
        """Remembered RFT jobs, newest first: the columns as a dict, plus ``last`` (the parsed ``last_json``)."""
        with self._lock:
            rows = self._db.execute("SELECT * FROM rft_jobs ORDER BY created DESC, job_name").fetchall()
        out = []
        for row in rows:
            item = dict(row)
            item["last"] = json.loads(item["last_json"]) if item["last_json"] else None
            out.append(item)
        return out

    def update_job_state(self, job_name: str, state: str, job: dict[str, Any] | None = None) -> bool:
        """Store the latest polled state (and job resource) of a remembered job; False when it is unknown."""
        with self._tx() as db:
            if job is None:
                cur = db.execute("UPDATE rft_jobs SET last_state=?, updated=? WHERE job_name=?",
                                 (state, now_iso(), job_name))
            else:
                output = (job.get("trainingConfig") or {}).get("outputModel")
                cur = db.execute(
                    "UPDATE rft_jobs SET last_state=?, last_json=?, output_model=COALESCE(?, output_model),"
                    " updated=? WHERE job_name=?",
                    (state, json.dumps(job), output, now_iso(), job_name),
                )
        return cur.rowcount > 0

    # --- analysis and imports -------------------------------------------------------------------------------
    def rollout_verdicts(self, run_id: str, *, current_only: bool = True) -> dict[str, list[list[Any]]]:
        """The judge's per-requirement verdicts ``[index, fulfilled, reason]`` of the rollouts of ``run_id`` that
        have them, by rollout id, without loading answers or images."""
        sql = "SELECT rollout_id, verdicts_json FROM rollouts WHERE run_id = ? AND verdicts_json IS NOT NULL"
        if current_only:
            sql += " AND is_current = 1"
        with self._lock:
            rows = self._db.execute(sql, (run_id,)).fetchall()
        return {r[0]: json.loads(r[1]) for r in rows}

    def insert_run(
        self,
        *,
        name: str | None,
        settings: dict[str, Any],
        dataset: dict[str, Any],
        rollouts: Sequence[dict[str, Any]],
        status: str = "imported",
    ) -> str:
        """Create a run whose rollouts arrive in any state (an import), in one transaction: the run and all its
        rollouts are stored, or nothing is. Each rollout needs ``row_index``, ``row_id``, ``sample_index``,
        ``prompt``, ``requirements`` (a list) and ``status``; ``attempt``, ``created`` and any column
        :meth:`update_rollout` accepts are optional. Rollout ids are assigned here."""
        run_id = new_run_id()
        stamp = now_iso()
        required = ("row_index", "row_id", "sample_index", "prompt", "requirements", "status")
        records = []
        for item in rollouts:
            missing = [k for k in required if k not in item]
            if missing:
                raise ValueError(f"rollout is missing {missing}")
            extra = {k: v for k, v in item.items() if k not in required and k not in ("attempt", "created")}
            unknown = set(extra) - _ROLLOUT_COLUMNS
            if unknown:
                raise ValueError(f"unknown rollout columns: {sorted(unknown)}")
            attempt = int(item.get("attempt") or 1)
            requirements = list(item["requirements"])
            columns = {
                "rollout_id": rollout_id_for(run_id, item["row_index"], item["sample_index"], attempt),
                "run_id": run_id, "row_index": item["row_index"], "row_id": item["row_id"],
                "sample_index": item["sample_index"], "attempt": attempt, "prompt": item["prompt"],
                "requirements_json": json.dumps(requirements), "total": len(requirements),
                "created": item.get("created") or stamp, "updated": stamp,
                **{k: _to_db(v) for k, v in extra.items()},
                "status": _to_db(item["status"]),
            }
            records.append(columns)
        with self._tx() as db:
            db.execute(
                "INSERT INTO runs(run_id, name, created, updated, status, settings_json, dataset_json)"
                " VALUES (?,?,?,?,?,?,?)",
                (run_id, name or run_id, stamp, stamp, status, json.dumps(settings), json.dumps(dataset)),
            )
            for columns in records:
                db.execute(
                    f"INSERT INTO rollouts({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                    tuple(columns.values()),
                )
        return run_id


def _to_db(value: Any) -> Any:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, RolloutStatus):
        return value.value
    return value
