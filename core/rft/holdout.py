"""Rows kept out of training (`rft create --holdout 0.2`), to evaluate the trained model on prompts it never saw.

The split is deterministic: the rows are ordered by the SHA-256 of their row id and prompt, and the first
``round(fraction × n)`` of that order are held out (at least one, and at least one left to train on); both parts
keep the dataset's order. A launch uploads the training part only; the held-out rows themselves — not a reference
to a file that may change — are kept in the run store with the job's name (``rft_holdouts``), and
:func:`holdout_dataset` turns them into the dataset an evaluation runs on.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from svgagent.core.run.dataset import FORMAT_JSONL, Dataset
from svgagent.core.scoring.errors import ConfigError
from svgagent.core.scoring.models import DatasetRow

if TYPE_CHECKING:
    from svgagent.core.store.run_store import Store

MAX_FRACTION = 0.5


def check_fraction(fraction: float | None) -> float:
    """The held-out share (0: none); ConfigError outside 0..0.5."""
    if fraction is None or fraction == 0:
        return 0.0
    if not 0 < fraction <= MAX_FRACTION:
        raise ConfigError(f"--holdout must be a share of the rows above 0 and at most {MAX_FRACTION}, got {fraction}")
    return float(fraction)


def _rank(row: DatasetRow) -> str:
    return hashlib.sha256(f"{row.row_id}\n{row.prompt}".encode()).hexdigest()


def split_rows(rows: Sequence[DatasetRow], fraction: float) -> tuple[tuple[DatasetRow, ...], tuple[DatasetRow, ...]]:
    """(rows to train on, rows held out) — see the module docstring; (rows, ()) when ``fraction`` is 0."""
    fraction = check_fraction(fraction)
    if not fraction:
        return tuple(rows), ()
    if len(rows) < 2:
        raise ConfigError(f"--holdout needs at least 2 rows (one to train on, one to hold out); there are {len(rows)}")
    count = min(len(rows) - 1, max(1, round(fraction * len(rows))))
    held = {id(row) for row in sorted(rows, key=_rank)[:count]}
    return tuple(r for r in rows if id(r) not in held), tuple(r for r in rows if id(r) in held)


@dataclass(frozen=True)
class Holdout:
    """The held-out rows of one job, as stored: the share asked for and the dataset they came from."""

    job_name: str
    fraction: float
    dataset: dict[str, Any]  # name, source, sha256 of the dataset the launch loaded
    rows: tuple[DatasetRow, ...]


def _row_json(row: DatasetRow) -> dict[str, Any]:
    return {"row_id": row.row_id, "index": row.index, "prompt": row.prompt, "requirements": list(row.requirements)}


def remember_holdout(
    store: Store, job_name: str, fraction: float, dataset: Dataset, rows: Sequence[DatasetRow]
) -> None:
    """Keep a launch's held-out rows with its job (a launch of the same job again replaces them)."""
    from svgagent.core.store.run_store import now_iso

    source = {"name": dataset.name, "source": dataset.source, "sha256": dataset.sha256}
    with store.transaction() as db:
        db.execute(
            "INSERT OR REPLACE INTO rft_holdouts(job_name, fraction, dataset_json, rows_json, created)"
            " VALUES (?,?,?,?,?)",
            (job_name, fraction, json.dumps(source), json.dumps([_row_json(r) for r in rows]), now_iso()),
        )


def load_holdout(store: Store, job_name: str) -> Holdout | None:
    """The held-out rows stored with ``job_name`` (its resource name), or None."""
    found = store.query("SELECT fraction, dataset_json, rows_json FROM rft_holdouts WHERE job_name = ?", (job_name,))
    if not found:
        return None
    fraction, dataset, rows = found[0]
    parsed = tuple(
        DatasetRow(
            index=int(item["index"]),
            row_id=str(item["row_id"]),
            prompt=str(item["prompt"]),
            requirements=tuple(str(r) for r in item["requirements"]),
        )
        for item in json.loads(rows)
    )
    return Holdout(job_name, float(fraction), json.loads(dataset), parsed)


def holdout_dataset(job_id: str, holdout: Holdout) -> Dataset:
    """The held-out rows as a dataset an evaluation runs on (its name says whose rows they are)."""
    digest = hashlib.sha256(json.dumps([_row_json(r) for r in holdout.rows], sort_keys=True).encode()).hexdigest()
    name = str(holdout.dataset.get("name") or "dataset")
    return Dataset(
        name=f"{name}, {len(holdout.rows)} rows held out of {job_id}",
        source=f"holdout:{job_id}",
        rows=holdout.rows,
        sha256=digest,
        format=FORMAT_JSONL,
    )
