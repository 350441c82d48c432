"""The run store: SQLite in WAL mode, one file, readable by a second process while the engine writes.

Tables: ``runs`` (settings without secrets, dataset reference, status, summary), ``rollouts`` (everything about
one attempt at one (row, sample), including the exact PNG the judge saw) and ``cache`` (model answers keyed by a
hash of the request). The schema version lives in ``PRAGMA user_version``; ``MIGRATIONS`` upgrades old files.

Every read goes through ``_read()`` and every write through ``_tx()``: SQLite errors come out as one-line
:class:`StoreError` subclasses (damaged file, cannot write), never as raw ``sqlite3`` tracebacks. The file is created
0600 in a 0700 directory. (Over 400 lines: it is the one class every reader and writer of the file goes through;
the pure parts — caps, leases, records, schema — live in their own modules.)
"""

from __future__ import annotations

import json
import os
import secrets as _random
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import quote

from svgagent.core.scoring.errors import RunBusy, StoreDamaged, StoreError, StoreOutdated, StoreWriteError
from svgagent.core.scoring.models import DatasetRow, FailureKind, RolloutStatus
from svgagent.core.store.leases import LeaseOwner, lease_is_live, this_host
from svgagent.core.store.migrations import MIGRATIONS
from svgagent.core.store.outcomes import OUTCOMES, OutcomeCounts, outcome_of
from svgagent.core.store.reviews import counted
from svgagent.core.store.size_caps import ANSWER_CAP, CAPPED_COLUMNS, cap_column, stored_whole
from svgagent.core.store.sqlite_values import as_text, storable
from svgagent.core.store.typed_rows import (
    LIGHT_COLUMNS,
    RolloutRecord,
    RunRecord,
    RunStatus,
    RunSummary,
    TokenGroup,
    public_settings,
    recipe_columns,
    summarize_rows,
)

_FAILURE_KINDS = {kind.value: kind for kind in FailureKind}

_ROLLOUT_COLUMNS: frozenset[str] = frozenset(
    """raw_answer finish_reason svg png judge_raw rationale verdicts_json score fulfilled total is_score_valid
    reason error generation_s render_s judge_s prompt_tokens completion_tokens judge_prompt_tokens
    judge_completion_tokens cached_prompt_tokens judge_cached_prompt_tokens cached status is_current override_score override_fulfilled override_verdicts_json
    override_at failure_kind""".split()
)
# SQLite primary result codes (the low byte of an extended code) and what each means for the person
_DAMAGED_CODES = frozenset({11, 26})  # SQLITE_CORRUPT, SQLITE_NOTADB
_WRITE_CODES = frozenset({3, 8, 10, 13, 14})  # SQLITE_PERM, _READONLY, _IOERR, _FULL, _CANTOPEN
CACHE_VALUE_CAP = ANSWER_CAP + 10_000  # one capped answer and its metadata, as JSON
FILE_MODE = 0o600  # the store holds prompts and answers: readable by its owner only
DIR_MODE = 0o700


def store_failure(err: sqlite3.Error, path: Path) -> StoreError:
    """One line for a person, typed by what went wrong (damaged file, cannot write, anything else)."""
    code = getattr(err, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    detail = str(err).splitlines()[0] if str(err) else type(err).__name__
    if primary in _DAMAGED_CODES:
        return StoreDamaged(
            f"the run store {path} is damaged ({detail}): check it with `svgagent store check`, or restore it "
            "from a backup (`svgagent store backup` makes one)"
        )
    if primary in _WRITE_CODES:
        return StoreWriteError(f"cannot write the run store {path}: {detail}")
    return StoreError(f"run store {path}: {detail}")


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + _random.token_hex(2)


def rollout_id_for(run_id: str, row_index: int, sample_index: int, attempt: int = 1) -> str:
    return f"{run_id}.{row_index}.{sample_index}" + (f".a{attempt}" if attempt > 1 else "")


class Store:
    """Thread-safe access to one store file. Cheap to open; opening creates or migrates the schema."""

    def __init__(self, path: Path | str, *, readonly: bool = False, create: bool = True) -> None:
        """Open (``create``: or create, with a private directory and file) the store at ``path``. ``readonly``
        opens an existing file for reading only: no migration, no write, also on a read-only file system."""
        self.path = Path(path)
        self.readonly = readonly
        self._lock = threading.RLock()
        if not self.path.exists() and (readonly or not create):
            raise StoreError(f"no run store at {self.path}")
        try:
            if readonly:
                self._db = _connect_readonly(self.path)
            else:
                _create_private(self.path)
                self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
            self._db.row_factory = sqlite3.Row
            self._db.execute("PRAGMA busy_timeout = 30000")
            if readonly:
                self._check_version()
            else:
                # 16 KiB pages for a new file (a no-op on one with tables): a rollout's answer, SVG and PNG span ~8
                # pages, not ~32 -- the engine's commits write a quarter of the WAL frames (its writer thread's CPU
                # 0.72 -> 0.55 ms a rollout) and a run's light view walks fewer overflow pages (bench/store.py).
                self._db.execute("PRAGMA page_size = 16384")
                self._db.execute("PRAGMA journal_mode = WAL")
                self._db.execute("PRAGMA synchronous = NORMAL")
                self._db.execute("PRAGMA foreign_keys = ON")
                self._migrate()
        except sqlite3.Error as err:
            raise store_failure(err, self.path) from None
        except OSError as err:
            raise StoreWriteError(f"cannot create the run store {self.path}: {err.strerror or err}") from None

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
        """The one way to write: a transaction under the lock; SQLite errors become one-line StoreErrors."""
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    yield self._db
                except BaseException:
                    if self._db.in_transaction:
                        self._db.execute("ROLLBACK")
                    raise
                self._db.execute("COMMIT")
            except sqlite3.Error as err:
                if self._db.in_transaction:
                    try:
                        self._db.execute("ROLLBACK")
                    except sqlite3.Error:
                        pass
                raise store_failure(err, self.path) from None

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """The one way to read: the connection under the lock; SQLite errors become one-line StoreErrors."""
        with self._lock:
            try:
                yield self._db
            except sqlite3.Error as err:
                raise store_failure(err, self.path) from None

    @contextmanager
    def snapshot(self) -> Iterator[Store]:
        """One read transaction: every read inside it (this thread) sees the file as it was at its first read,
        whatever other connections commit meanwhile — e.g. a summary's current rollouts and the tokens of the
        attempts reruns replaced, which a rerun committed between two separate reads would count twice or not at
        all. Inside a write transaction (or another snapshot) it simply joins that one."""
        with self._read() as db:
            if db.in_transaction:
                yield self
                return
            db.execute("BEGIN")  # deferred: WAL takes the snapshot at the first read, and writers are not blocked
            try:
                yield self
            finally:
                if db.in_transaction:
                    db.execute("COMMIT")  # nothing written: it only ends the read

    def _check_version(self) -> None:
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        if version != len(MIGRATIONS):
            newer = version > len(MIGRATIONS)
            raise (StoreError if newer else StoreOutdated)(
                f"run store {self.path} has schema v{version}, "
                + (
                    f"newer than this svgagent (v{len(MIGRATIONS)}): upgrade svgagent"
                    if newer
                    else f"older than this svgagent (v{len(MIGRATIONS)}): any writing command (e.g. `svgagent eval`) "
                    "upgrades it"
                )
            )

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, for modules with tables of their own (``svgagent.core.serve.training_runs``); the store's
        own writes called inside it (same thread) join it."""
        with self._tx() as db:
            yield db

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        """Rows of one read-only statement (for the same modules)."""
        with self._read() as db:
            return db.execute(sql, params).fetchall()

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
        with self._read() as db:
            return int(db.execute("PRAGMA user_version").fetchone()[0])

    def integrity_ok(self) -> bool:
        return self.integrity_problems() == []

    def integrity_problems(self, limit: int = 20) -> list[str]:
        """SQLite's ``integrity_check``: [] when the file is sound, else up to ``limit`` problems it found."""
        try:
            with self._lock:
                rows = self._db.execute(f"PRAGMA integrity_check({int(limit)})").fetchall()
        except sqlite3.DatabaseError as err:
            return [str(err).splitlines()[0] if str(err) else type(err).__name__]
        found = [
            line.strip()
            for r in rows
            for line in str(r[0]).splitlines()
            if line.strip() and not line.startswith("*** in database")
        ]
        return [] if found == ["ok"] else found

    def backup_to(self, target: Path) -> None:
        """Copy the whole store into the new file ``target`` with SQLite's online backup API (consistent while
        other connections write). The copy is one self-contained file (rollback journal, not WAL), so reading it
        leaves no -wal/-shm files beside it; opening it as a store switches it back to WAL."""
        try:
            with self._lock:
                dest = sqlite3.connect(target)
                try:
                    self._db.backup(dest)
                    dest.execute("PRAGMA journal_mode = DELETE")
                finally:
                    dest.close()
        except sqlite3.Error as err:
            raise store_failure(err, self.path) from None

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
                "INSERT INTO runs(run_id, name, created, updated, status, settings_json, dataset_json, judge_profile,"
                " renderer) VALUES (?,?,?,?,?,?,?,?,?)",
                (
                    run_id,
                    name or run_id,
                    stamp,
                    stamp,
                    RunStatus.CREATED.value,
                    json.dumps(public_settings(settings)),
                    json.dumps(dataset),
                    *recipe_columns(settings),
                ),
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
        with self._read() as db:
            row = db.execute("SELECT * FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            if row is None:
                raise StoreError(f"no run {run_id!r} in {self.path} (see `svgagent runs list`)")
            return RunRecord.from_row(row)

    def list_runs(self) -> list[RunRecord]:
        with self._read() as db:
            rows = db.execute("SELECT * FROM runs ORDER BY created DESC, rowid DESC").fetchall()  # ties: made later
            return [RunRecord.from_row(r) for r in rows]

    def set_run_status(self, run_id: str, status: RunStatus, summary: RunSummary | None = None) -> None:
        status = RunStatus(status)
        with self._tx() as db:
            if summary is None:
                db.execute("UPDATE runs SET status=?, updated=? WHERE run_id=?", (status.value, now_iso(), run_id))
            else:
                db.execute(
                    "UPDATE runs SET status=?, updated=?, summary_json=? WHERE run_id=?",
                    (status.value, now_iso(), json.dumps(summary.to_dict()), run_id),
                )

    def add_worked(self, run_id: str, seconds: float) -> None:
        """An engine's session on the run lasted ``seconds``: add them to the run's ``worked_s``."""
        with self._tx() as db:
            db.execute(
                "UPDATE runs SET worked_s = COALESCE(worked_s, 0) + ? WHERE run_id = ?", (max(0.0, seconds), run_id)
            )

    def rename_run(self, run_id: str, name: str) -> None:
        with self._tx() as db:
            db.execute("UPDATE runs SET name=?, updated=? WHERE run_id=?", (name, now_iso(), run_id))

    # --- leases (core/store/leases.py) -----------------------------------------------------------------------------
    def _live_lease(
        self, db: sqlite3.Connection, run_id: str, now: float | None = None
    ) -> tuple[LeaseOwner, float] | None:
        row = db.execute("SELECT lease_owner, lease_heartbeat FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            raise StoreError(f"no run {run_id!r} in {self.path} (see `svgagent runs list`)")
        owner = LeaseOwner.from_json(row[0]) if row[0] else None
        if owner is None or row[1] is None or not lease_is_live(owner, float(row[1]), now):
            return None
        return owner, float(row[1])

    def _refuse_if_leased(
        self, db: sqlite3.Connection, run_id: str, mine: LeaseOwner | None, now: float | None = None
    ) -> None:
        held = self._live_lease(db, run_id, now)
        if held is None or (mine is not None and held[0].token == mine.token):
            return
        owner, beat = held
        if mine is None and owner.pid == os.getpid() and owner.host == this_host():
            return  # this process's own engine: it coordinates itself (one run at a time in the app)
        age = max(0.0, (time.time() if now is None else now) - beat)
        raise RunBusy(
            f"run {run_id} is being processed by {owner.describe()} (last heartbeat {age:.0f} s ago): "
            "wait for it to finish, or stop that process first"
        )

    def acquire_lease(self, run_id: str, owner: LeaseOwner, now: float | None = None) -> None:
        """Take ``run_id`` for ``owner``, unless another live owner holds it (:class:`RunBusy`)."""
        with self._tx() as db:
            self._refuse_if_leased(db, run_id, owner, now)
            db.execute(
                "UPDATE runs SET lease_owner=?, lease_heartbeat=? WHERE run_id=?",
                (owner.to_json(), time.time() if now is None else now, run_id),
            )

    def renew_lease(self, run_id: str, owner: LeaseOwner, now: float | None = None) -> bool:
        """Refresh the heartbeat; False when ``owner`` no longer holds the lease (another worker took it)."""
        with self._tx() as db:
            cur = db.execute(
                "UPDATE runs SET lease_heartbeat=? WHERE run_id=? AND lease_owner=?",
                (time.time() if now is None else now, run_id, owner.to_json()),
            )
            return cur.rowcount > 0

    def release_lease(self, run_id: str, owner: LeaseOwner) -> None:
        with self._tx() as db:
            db.execute(
                "UPDATE runs SET lease_owner=NULL, lease_heartbeat=NULL WHERE run_id=? AND lease_owner=?",
                (run_id, owner.to_json()),
            )

    def check_not_leased(self, run_id: str) -> None:
        """Raise :class:`RunBusy` when another process holds a live lease on ``run_id``."""
        with self._read() as db:
            self._refuse_if_leased(db, run_id, None)

    # --- rollouts -------------------------------------------------------------------------------------------
    def update_rollout(self, rollout_id: str, **fields: Any) -> None:
        """Set columns of one rollout. Text over its size cap is cut (see :mod:`svgagent.core.store.size_caps`) and the
        original length noted in ``truncated_json``."""
        sql, params = _rollout_update(rollout_id, fields)
        with self._tx() as db:
            db.execute(sql, params)

    def write_batch(
        self, rollouts: Sequence[tuple[str, dict[str, Any]]], cache: Sequence[tuple[str, str, dict[str, Any]]] = ()
    ) -> None:
        """Several rollout updates (as :meth:`update_rollout`, in order) and cache entries (as :meth:`cache_put`)
        in one transaction: all of them are stored, or none (the engine's writer, :mod:`svgagent.core.store.batch_writer`).
        Updates of different rollouts that set the same columns go as one ``executemany`` (a batch of the engine's
        has a handful of such shapes); a rollout named twice keeps its updates in order."""
        stamp = now_iso()  # one transaction, one time
        statements = [_rollout_update(rollout_id, fields, stamp) for rollout_id, fields in rollouts]
        groups: list[tuple[str, list[tuple[Any, ...]]]]
        if len({rollout_id for rollout_id, _ in rollouts}) == len(rollouts):
            shapes: dict[str, list[tuple[Any, ...]]] = {}
            for sql, params in statements:
                shapes.setdefault(sql, []).append(params)
            groups = list(shapes.items())
        else:  # a rollout named twice: its updates one at a time, in order
            groups = [(sql, [params]) for sql, params in statements]
        entries = [
            (key, kind, text, stamp)
            for key, kind, text in ((key, kind, json.dumps(value)) for key, kind, value in cache)
            if len(text) <= CACHE_VALUE_CAP
        ]
        with self._tx() as db:
            for sql, rows in groups:
                db.executemany(sql, rows)
            if entries:
                db.executemany("INSERT OR REPLACE INTO cache(key, kind, value_json, created) VALUES (?,?,?,?)", entries)

    def get_rollout(self, rollout_id: str) -> RolloutRecord:
        with self._read() as db:
            row = db.execute("SELECT * FROM rollouts WHERE rollout_id = ?", (rollout_id,)).fetchone()
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
            found.extend(
                self._rollouts(f"SELECT {cols} FROM rollouts WHERE rollout_id IN ({','.join('?' * len(chunk))})", chunk)
            )
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
        with self._read() as db:
            cursor = db.cursor()
            cursor.row_factory = None
            rows = cursor.execute(sql, params).fetchall()
            columns = [d[0] for d in cursor.description]
        return RolloutRecord.from_tuples(columns, rows)

    def status_counts(self, run_id: str) -> dict[RolloutStatus, int]:
        """How many current rollouts of ``run_id`` are in each state (states with none are left out) — counted
        by SQLite, without loading the rollouts."""
        with self._read() as db:
            rows = db.execute(
                "SELECT status, COUNT(*) FROM rollouts WHERE run_id = ? AND is_current = 1 GROUP BY status", (run_id,)
            ).fetchall()
        return {RolloutStatus(status): count for status, count in rows}

    def failure_kinds(self, run_id: str, *, invalid_only: bool = False) -> dict[FailureKind, tuple[int, str]]:
        """For the current failed rollouts of ``run_id``: each failure kind, how many, and one reason
        (``invalid_only``: only those without a valid score, not the model's valid 0s)."""
        invalid = (
            " AND (is_score_valid IS NULL OR is_score_valid = 0) AND override_score IS NULL" if invalid_only else ""
        )
        with self._read() as db:
            rows = db.execute(
                "SELECT failure_kind, COUNT(*), MIN(reason) FROM rollouts WHERE run_id = ? AND is_current = 1"
                " AND status = ? AND failure_kind IS NOT NULL" + invalid + " GROUP BY failure_kind",
                (run_id, RolloutStatus.FAILED.value),
            ).fetchall()
        return {FailureKind(kind): (count, reason or "") for kind, count, reason in rows}

    def outcome_counts(self, run_id: str) -> tuple[int, OutcomeCounts]:
        """The run's current rollouts: how many, and the outcomes of the finished ones (scored · invalid · failed,
        classified by :func:`~svgagent.core.store.outcomes.outcome_of` — one query, no rollout read whole)."""
        with self._read() as db:
            rows = db.execute(
                "SELECT status, is_score_valid, score IS NOT NULL, override_score IS NOT NULL, failure_kind, COUNT(*)"
                " FROM rollouts WHERE run_id = ? AND is_current = 1 GROUP BY 1, 2, 3, 4, 5",
                (run_id,),
            ).fetchall()
        total, counts = 0, dict.fromkeys(OUTCOMES, 0)
        for status, valid, has_score, overridden, kind, n in rows:
            total += n
            outcome = outcome_of(
                RolloutStatus(status),
                score_valid=None if valid is None else bool(valid),
                score=0.0 if has_score else None,
                overridden=bool(overridden),
                failure_kind=None if kind is None else _FAILURE_KINDS.get(kind, FailureKind.OTHER),  # as typed_rows
            )
            if outcome is not None:
                counts[outcome] += n
        return total, OutcomeCounts(*(counts[o] for o in OUTCOMES))

    def token_groups(self, run_id: str, *, current: bool | None = None) -> list[TokenGroup]:
        """Every attempt of the run (reruns' replaced ones too: they were paid), grouped by what decides their price
        (taken from the response cache, a policy call recorded, a judge call recorded) with their tokens summed —
        what :func:`svgagent.core.config.prices.run_cost` prices, one query, no rollout read whole. ``current``:
        only the current attempts (True) or only those reruns replaced (False)."""
        where = "" if current is None else f" AND is_current = {int(current)}"
        with self._read() as db:
            rows = db.execute(
                "SELECT cached, prompt_tokens IS NOT NULL OR completion_tokens IS NOT NULL,"
                " judge_prompt_tokens IS NOT NULL OR judge_completion_tokens IS NOT NULL, COUNT(*),"
                " SUM(COALESCE(prompt_tokens, 0)), SUM(COALESCE(completion_tokens, 0)),"
                " SUM(COALESCE(judge_prompt_tokens, 0)), SUM(COALESCE(judge_completion_tokens, 0)),"
                " SUM(COALESCE(cached_prompt_tokens, 0)), SUM(COALESCE(judge_cached_prompt_tokens, 0))"
                f" FROM rollouts WHERE run_id = ?{where} GROUP BY 1, 2, 3",
                (run_id,),
            ).fetchall()
        return [TokenGroup(bool(c), bool(a), bool(j), *sums) for c, a, j, *sums in rows]

    def iter_rollouts(self, run_id: str, *, current_only: bool = True) -> Iterator[RolloutRecord]:
        """Heavy rollouts one by one (exports) without holding a whole run's PNGs in memory."""
        with self._read() as db:
            ids = [
                r[0]
                for r in db.execute(
                    "SELECT rollout_id FROM rollouts WHERE run_id = ?"
                    + (" AND is_current = 1" if current_only else "")
                    + " ORDER BY row_index, sample_index, attempt",
                    (run_id,),
                ).fetchall()
            ]
        for rid in ids:
            yield self.get_rollout(rid)

    def reset_unfinished(self, run_id: str, owner: LeaseOwner | None = None) -> list[str]:
        """Mark every current, non-terminal rollout queued again (after a crash); returns their ids. Refused
        (:class:`RunBusy`) while another process holds the run's lease."""
        terminal = (RolloutStatus.SCORED.value, RolloutStatus.FAILED.value)
        with self._tx() as db:
            self._refuse_if_leased(db, run_id, owner)
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
        """Queue a fresh attempt for each given rollout; the old attempt stays, no longer current. Refused
        (:class:`RunBusy`) while another process holds the run's lease."""
        created: list[str] = []
        stamp = now_iso()
        with self._tx() as db:
            self._refuse_if_leased(db, run_id, None)
            for rid in rollout_ids:
                old = db.execute("SELECT * FROM rollouts WHERE rollout_id = ? AND run_id = ?", (rid, run_id)).fetchone()
                if old is None:
                    raise StoreError(f"no rollout {rid!r} in run {run_id}")
                attempt = (
                    db.execute(
                        "SELECT MAX(attempt) FROM rollouts WHERE run_id=? AND row_index=? AND sample_index=?",
                        (run_id, old["row_index"], old["sample_index"]),
                    ).fetchone()[0]
                    + 1
                )
                new_id = rollout_id_for(run_id, old["row_index"], old["sample_index"], attempt)
                db.execute(
                    "UPDATE rollouts SET is_current = 0 WHERE run_id=? AND row_index=? AND sample_index=?",
                    (run_id, old["row_index"], old["sample_index"]),
                )
                db.execute(
                    "INSERT INTO rollouts(rollout_id, run_id, row_index, row_id, sample_index, attempt, status,"
                    " prompt, requirements_json, total, created, updated) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        new_id,
                        run_id,
                        old["row_index"],
                        old["row_id"],
                        old["sample_index"],
                        attempt,
                        RolloutStatus.QUEUED.value,
                        old["prompt"],
                        old["requirements_json"],
                        old["total"],
                        stamp,
                        stamp,
                    ),
                )
                created.append(new_id)
        return created

    def attempts_of(self, rollout_id: str) -> list[RolloutRecord]:
        """Every attempt at the same (row, sample) as ``rollout_id``, oldest first."""
        with self._read() as db:
            base = db.execute(
                "SELECT run_id, row_index, sample_index FROM rollouts WHERE rollout_id = ?", (rollout_id,)
            ).fetchone()
        if base is None:
            raise StoreError(f"no rollout {rollout_id!r}")
        return self._rollouts(
            f"SELECT {', '.join(LIGHT_COLUMNS)} FROM rollouts WHERE run_id=? AND row_index=? AND sample_index=?"
            " ORDER BY attempt",
            tuple(base),
        )

    def set_override(
        self, rollout_id: str, *, fulfilled: int | None, verdicts: Sequence[bool | None] | None = None
    ) -> None:
        """Store a human verdict next to the judge's: a count, marks per requirement (✓, ✗ or undecided), or both.
        Marks without a count make the judge's count, kept within what they allow (``core.review``); a count given
        with marks must agree with them. No count and no decided mark clears the override."""
        rec = self.get_rollout(rollout_id)
        if verdicts is not None:
            if len(verdicts) != rec.total:
                raise ValueError(f"expected {rec.total} verdicts, got {len(verdicts)}")
            if fulfilled is None and any(v is not None for v in verdicts):
                fulfilled = counted(verdicts, rec.fulfilled)
            elif fulfilled is not None and counted(verdicts, fulfilled) != fulfilled:
                raise ValueError(f"{fulfilled} fulfilled contradicts the marks")
        if fulfilled is None:
            self.update_rollout(
                rollout_id, override_score=None, override_fulfilled=None, override_verdicts_json=None, override_at=None
            )
        else:
            if not 0 <= fulfilled <= rec.total:
                raise ValueError(f"fulfilled must be between 0 and {rec.total}")
            marks = [v if v is None else bool(v) for v in verdicts] if verdicts is not None else None
            self.update_rollout(
                rollout_id,
                override_fulfilled=fulfilled,
                override_score=fulfilled / rec.total if rec.total else 0.0,
                override_verdicts_json=json.dumps(marks) if marks is not None else None,
                override_at=now_iso(),
            )
        self.refresh_summary(rec.run_id)

    def refresh_summary(self, run_id: str) -> None:
        """Recompute a finished run's stored summary (an override changed a score): `runs list`, the run picker
        and the dashboard then show the same mean. A run without one yet gets it when it ends.

        Read and written in one write transaction: computed outside it, a summary could be stored over a newer one
        that another process (a second app reviewing the same run) computed from a later override."""
        with self._tx() as db:
            run = self.get_run(run_id)
            if run.summary is None:
                return
            summary = self.summarize(run_id, run.threshold)  # its snapshot joins this transaction
            db.execute(
                "UPDATE runs SET summary_json=? WHERE run_id=? AND summary_json IS NOT NULL",
                (json.dumps(summary.to_dict()), run_id),
            )

    def summarize(self, run_id: str, threshold: float) -> RunSummary:
        """The summary of the run's current rollouts; its tokens count every attempt (what the run spent)."""
        rows, earlier = self.current_and_earlier_tokens(run_id)  # one snapshot: a rerun is counted once
        return summarize_rows(rows, threshold, earlier)

    def current_and_earlier_tokens(self, run_id: str) -> tuple[list[RolloutRecord], tuple[TokenGroup, ...]]:
        """The run's current rollouts (light) and the tokens of the attempts reruns replaced, read in one snapshot:
        a rerun committed meanwhile is in both or in neither, so what the run paid is counted once."""
        with self.snapshot():
            return self.list_rollouts(run_id), tuple(self.token_groups(run_id, current=False))

    # --- cache ----------------------------------------------------------------------------------------------
    def cache_get(self, key: str) -> dict[str, Any] | None:
        with self._read() as db:
            row = db.execute("SELECT value_json FROM cache WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def cache_put(self, key: str, kind: str, value: dict[str, Any]) -> bool:
        """Remember a model answer; an answer over the size cap is not cached (False): the cache never holds
        more than one capped answer's worth per request."""
        text = json.dumps(value)
        if len(text) > CACHE_VALUE_CAP:
            return False
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO cache(key, kind, value_json, created) VALUES (?,?,?,?)",
                (key, kind, text, now_iso()),
            )
        return True

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
                (
                    job_name,
                    display_name,
                    base_url,
                    account,
                    dataset,
                    evaluator,
                    base_model,
                    output_model,
                    created or stamp,
                    last_state,
                    json.dumps(job) if job is not None else None,
                    stamp,
                ),
            )

    def list_jobs(self) -> list[dict[str, Any]]:
        """Remembered RFT jobs, newest first: the columns as a dict, plus ``last`` (the parsed ``last_json``)."""
        with self._read() as db:
            rows = db.execute("SELECT * FROM rft_jobs ORDER BY created DESC, job_name").fetchall()
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
                cur = db.execute(
                    "UPDATE rft_jobs SET last_state=?, updated=? WHERE job_name=?", (state, now_iso(), job_name)
                )
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
        with self._read() as db:
            rows = db.execute(sql, (run_id,)).fetchall()
        return {r[0]: json.loads(r[1]) for r in rows}

    def insert_run(
        self,
        *,
        name: str | None,
        settings: dict[str, Any],
        dataset: dict[str, Any],
        rollouts: Sequence[dict[str, Any]],
        status: RunStatus = RunStatus.IMPORTED,
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
                "run_id": run_id,
                "row_index": item["row_index"],
                "row_id": item["row_id"],
                "sample_index": item["sample_index"],
                "attempt": attempt,
                "prompt": item["prompt"],
                "requirements_json": json.dumps(requirements),
                "total": len(requirements),
                "created": item.get("created") or stamp,
                "updated": stamp,
                **rollout_values(extra),
                "status": _to_db(item["status"]),
            }
            records.append(columns)
        with self._tx() as db:
            db.execute(
                "INSERT INTO runs(run_id, name, created, updated, status, settings_json, dataset_json, judge_profile,"
                " renderer) VALUES (?,?,?,?,?,?,?,?,?)",
                (
                    run_id,
                    name or run_id,
                    stamp,
                    stamp,
                    RunStatus(status).value,
                    json.dumps(public_settings(settings)),
                    json.dumps(dataset),
                    *recipe_columns(settings),
                ),
            )
            for columns in records:
                db.execute(
                    f"INSERT INTO rollouts({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                    tuple(columns.values()),
                )
        return run_id


_AS_IS = frozenset({str, int, float, bytes, type(None)})  # what SQLite takes unchanged (most values: checked first)


def _to_db(value: Any) -> Any:
    kind = type(value)
    if kind in _AS_IS:
        return value
    if kind is bool:
        return int(value)
    if kind is RolloutStatus or kind is FailureKind:  # enums with members cannot be subclassed
        return value.value
    if kind is dict or kind is list:  # e.g. an endpoint's finish_reason: SQLite binds no JSON value
        return as_text(value)
    return value


def rollout_values(fields: dict[str, Any]) -> dict[str, Any]:
    """Columns for a new rollout row written by another module's own SQL (``core.training``, imports): each value
    made one its column keeps whatever it is (:func:`~svgagent.core.store.sqlite_values.storable`: no value from outside
    can make the statement fail), text cut to its cap and ``truncated_json`` noting what was cut."""
    values, cut = _capped({k: storable(k, v) for k, v in fields.items()})
    values["truncated_json"] = json.dumps(cut) if cut else None
    return values


def _rollout_update(rollout_id: str, fields: dict[str, Any], stamp: str | None = None) -> tuple[str, tuple[Any, ...]]:
    """The UPDATE statement and parameters that set ``fields`` of one rollout (caps applied, cut lengths noted in
    ``truncated_json``, columns stored whole again forgotten there); ``stamp``: its ``updated`` time (default now).
    Nothing to cut (the usual case): the statement of these columns, built once (:func:`_update_plan`)."""
    sql, capped = _update_plan(tuple(fields))
    values = [value if type(value) in _AS_IS else _to_db(value) for value in fields.values()]
    if not all(stored_whole(column, values[i]) for i, column in capped):
        return _cut_update(rollout_id, fields, stamp)
    return sql, (*values, stamp or now_iso(), rollout_id)


@lru_cache(maxsize=512)
def _update_plan(columns: tuple[str, ...]) -> tuple[str, tuple[tuple[int, str], ...]]:
    """For an update of ``columns`` (in this order): its statement when nothing is cut, and the position of each
    capped column (a value over its cap takes :func:`_cut_update`)."""
    unknown = set(columns) - _ROLLOUT_COLUMNS
    if unknown:
        raise ValueError(f"unknown rollout columns: {sorted(unknown)}")
    touched = tuple(sorted(set(columns) & CAPPED_COLUMNS))
    return (
        _update_sql((*columns, "updated"), touched, ()),
        tuple((i, column) for i, column in enumerate(columns) if column in CAPPED_COLUMNS),
    )


def _cut_update(rollout_id: str, fields: dict[str, Any], stamp: str | None) -> tuple[str, tuple[Any, ...]]:
    """:func:`_rollout_update` when some value is over its cap: cut, and its original length noted."""
    values, cut = _capped({k: _to_db(v) for k, v in fields.items()})
    values["updated"] = stamp or now_iso()
    touched = tuple(sorted(fields.keys() & CAPPED_COLUMNS))
    was_cut = tuple(column for column in touched if column in cut)
    return (
        _update_sql(tuple(values), touched, was_cut),
        (*values.values(), *(cut[column] for column in was_cut), rollout_id),
    )


@lru_cache(maxsize=512)
def _update_sql(columns: tuple[str, ...], touched: tuple[str, ...], was_cut: tuple[str, ...]) -> str:
    """The UPDATE of :func:`_rollout_update` for these columns (a handful of shapes: built once each)."""
    assignments = [f"{k} = ?" for k in columns]
    if touched:  # note each cut column's original length; forget columns now stored whole
        expr = "COALESCE(truncated_json, '{}')"
        for column in touched:
            if column in was_cut:
                expr = f"json_set({expr}, '$.{column}', ?)"
            else:
                expr = f"json_remove({expr}, '$.{column}')"
        assignments.append(f"truncated_json = NULLIF({expr}, '{{}}')")
    return f"UPDATE rollouts SET {', '.join(assignments)} WHERE rollout_id = ?"


def _capped(values: dict[str, Any]) -> tuple[dict[str, Any], dict[str, int]]:
    """``values`` with text over its cap cut, and the original length of each column that was cut."""
    cut: dict[str, int] = {}
    out = dict(values)
    for column in CAPPED_COLUMNS & values.keys():
        out[column], length = cap_column(column, values[column])
        if length is not None:
            cut[column] = length
    return out, cut


def _create_private(path: Path) -> None:
    """Create the store's directory (0700) and file (0600) when they do not exist yet; existing ones keep their
    permissions. SQLite gives the -wal and -shm files the database file's permissions."""
    if not path.parent.exists():
        path.parent.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
        os.close(fd)


def _connect_readonly(path: Path) -> sqlite3.Connection:
    """A read-only connection. On a read-only file system (or a file the user may only read) SQLite cannot make
    the WAL's shared-memory file; nothing can write there either, so the file is read as immutable."""
    uri = f"file:{quote(str(path))}?mode=ro"
    db = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
    try:
        db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        return db
    except sqlite3.OperationalError as err:
        if (getattr(err, "sqlite_errorcode", 0) & 0xFF) not in (8, 14) or os.access(path.parent, os.W_OK):
            raise
        db.close()
    return sqlite3.connect(uri + "&immutable=1", uri=True, check_same_thread=False, isolation_level=None)
