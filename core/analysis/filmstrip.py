"""A filmstrip: one prompt (dataset row) across steps — a training run's, or any runs given in order — every
sample's picture with its score and a one-line rationale, in step order then sample order.

A row is named by its row id (``row_3``, eval-protocol's id in a training run) or, when no run has that id, by its
row index (``3``). A training run's rows keep one index and one id across its steps; across unrelated runs, the
row id is what pairs them (as ``runs compare`` pairs rows). :func:`strip_rows` lists the rows a set of runs holds,
for a picker.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from svgagent.core.scoring.errors import ConfigError
from svgagent.core.scoring.models import RolloutStatus
from svgagent.core.store.run_store import Store
from svgagent.core.store.verdict_columns import first_line

LINE = 120  # a frame's rationale line, at most
_TERMINAL = (RolloutStatus.SCORED.value, RolloutStatus.FAILED.value)


@dataclass(frozen=True, slots=True)
class StripColumn:
    """One step of the strip: a label ("step 3", a run's name) and the run that holds its rollouts."""

    label: str
    run_id: str
    step: int | None = None


@dataclass(frozen=True, slots=True)
class Frame:
    column: int  # index into Filmstrip.columns
    rollout_id: str
    sample_index: int
    status: str
    score: float | None  # the effective score (a person's override first), when it counts
    line: str  # the rationale's first line, else the reason, else the status
    has_picture: bool


@dataclass(frozen=True, slots=True)
class Filmstrip:
    row: str  # as asked
    row_id: str
    prompt: str
    columns: tuple[StripColumn, ...]
    frames: tuple[Frame, ...]  # column order, then sample order

    @property
    def samples(self) -> int:
        return max((f.sample_index for f in self.frames), default=-1) + 1

    def at(self, column: int, sample: int) -> Frame | None:
        for frame in self.frames:
            if frame.column == column and frame.sample_index == sample:
                return frame
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            "row": self.row,
            "row_id": self.row_id,
            "prompt": self.prompt,
            "columns": [asdict(c) for c in self.columns],
            "frames": [
                {**asdict(f), "label": self.columns[f.column].label, "run_id": self.columns[f.column].run_id}
                for f in self.frames
            ],
        }


@dataclass(frozen=True, slots=True)
class StripRow:
    row_id: str
    row_index: int
    prompt: str
    rollouts: int
    columns: int  # how many of the runs hold it


def _in(run_ids: Sequence[str]) -> str:
    return ",".join("?" * len(run_ids))


def strip_rows(store: Store, run_ids: Sequence[str]) -> list[StripRow]:
    """The rows the runs hold (current rollouts), in row-index order: for picking one."""
    if not run_ids:
        return []
    rows = store.query(
        "SELECT row_id, MIN(row_index), MIN(prompt), COUNT(*), COUNT(DISTINCT run_id) FROM rollouts"
        f" WHERE is_current = 1 AND run_id IN ({_in(run_ids)}) GROUP BY row_id ORDER BY MIN(row_index), row_id",
        list(run_ids),
    )
    return [StripRow(r[0], r[1], " ".join((r[2] or "").split())[:300], r[3], r[4]) for r in rows]


def _row_clause(store: Store, run_ids: Sequence[str], row: str) -> tuple[str, Any]:
    """How ``row`` is matched: by row id when a run has one so named, else by row index (a number)."""
    found = store.query(
        f"SELECT 1 FROM rollouts WHERE run_id IN ({_in(run_ids)}) AND row_id = ? LIMIT 1", [*run_ids, row]
    )
    if found:
        return "row_id = ?", row
    text = row.strip()
    if text.isdigit() and len(text) <= 9:
        return "row_index = ?", int(text)
    raise ConfigError(_no_row(store, run_ids, row))


def _no_row(store: Store, run_ids: Sequence[str], row: str) -> str:
    rows = strip_rows(store, run_ids)
    named = ", ".join(r.row_id for r in rows[:8]) + (f" and {len(rows) - 8} more" if len(rows) > 8 else "")
    return f"no row {row!r} in these runs" + (f"; their rows: {named}" if rows else " (they hold no rollouts)")


def filmstrip(store: Store, columns: Sequence[StripColumn], row: str) -> Filmstrip:
    """The frames of ``row`` in those of ``columns`` that hold it (ConfigError when none does)."""
    if not columns:
        raise ConfigError("a filmstrip needs at least one run or step")
    run_ids = [c.run_id for c in columns]
    clause, value = _row_clause(store, run_ids, row)
    index = {c.run_id: i for i, c in enumerate(columns)}
    rows = store.query(
        "SELECT run_id, rollout_id, sample_index, status, score, override_score, is_score_valid, row_id, prompt,"
        " rationale, reason, png IS NOT NULL FROM rollouts"
        f" WHERE is_current = 1 AND run_id IN ({_in(run_ids)}) AND {clause} ORDER BY sample_index, attempt",
        [*run_ids, value],
    )
    if not rows:
        raise ConfigError(_no_row(store, run_ids, row))
    frames = []
    for run_id, rollout_id, sample, status, score, override, valid, _row_id, _prompt, rationale, reason, png in rows:
        counts = status in _TERMINAL and (override is not None or (bool(valid) and score is not None))
        line = first_line(rationale, LINE) or first_line(reason, LINE) or status
        frames.append(
            Frame(
                column=index[run_id],
                rollout_id=rollout_id,
                sample_index=sample,
                status=status,
                score=(override if override is not None else score) if counts else None,
                line=line,
                has_picture=bool(png),
            )
        )
    held = sorted({f.column for f in frames})  # the steps that hold the row (a step's prompts are a chunk)
    renumber = {old: new for new, old in enumerate(held)}
    frames = [replace(f, column=renumber[f.column]) for f in frames]
    frames.sort(key=lambda f: (f.column, f.sample_index))
    first = rows[0]
    kept = tuple(columns[i] for i in held)
    return Filmstrip(row, first[7], " ".join((first[8] or "").split()), kept, tuple(frames))


def spread(columns: Sequence[StripColumn], most: int) -> list[StripColumn]:
    """At most ``most`` columns, evenly spaced, the first and the last always among them."""
    if len(columns) <= most:
        return list(columns)
    if most < 2:
        return list(columns[-1:])
    last = len(columns) - 1
    picks = sorted({round(i * last / (most - 1)) for i in range(most)})
    return [columns[i] for i in picks]


def frame_pngs(store: Store, frames: Sequence[Frame]) -> dict[str, bytes]:
    """The pictures of ``frames`` (those that have one), by rollout id."""
    ids = [f.rollout_id for f in frames if f.has_picture]
    out: dict[str, bytes] = {}
    for start in range(0, len(ids), 200):
        chunk = ids[start : start + 200]
        for rollout_id, png in store.query(
            f"SELECT rollout_id, png FROM rollouts WHERE rollout_id IN ({_in(chunk)})", chunk
        ):
            if png:
                out[rollout_id] = bytes(png)
    return out
