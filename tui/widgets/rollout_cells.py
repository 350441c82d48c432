"""What each column of the rollout table shows for one rollout: fixed widths, plain text plus a style name."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from svgagent.core.scoring.models import RolloutStatus
from svgagent.core.records import RolloutRecord

DASH = "–"


@dataclass(frozen=True, slots=True)
class Column:
    key: str  # also the sort field (svgagent.core.query.SORT_FIELDS), except "mark"
    label: str
    width: int
    justify: Literal["left", "right"] = "left"


COLUMNS: tuple[Column, ...] = (
    Column("mark", "", 1),
    Column("rollout", "rollout", 8),
    Column("row", "row", 8),
    Column("sample", "sample", 6, "right"),
    Column("status", "status", 12),
    Column("score", "score", 6, "right"),
    Column("fulfilled", "fulfilled", 9, "right"),
    Column("gen", "gen s", 5, "right"),
    Column("judge", "judge s", 7, "right"),
    Column("tokens", "tokens", 6, "right"),
)
COLUMN_KEYS = tuple(c.key for c in COLUMNS)
SORTABLE = tuple(c.key for c in COLUMNS if c.key != "mark")
GAP = 1
TABLE_WIDTH = sum(c.width for c in COLUMNS) + GAP * (len(COLUMNS) - 1)

STATUS_ICONS: dict[RolloutStatus, str] = {
    RolloutStatus.QUEUED: "·",
    RolloutStatus.GENERATING: "◔",
    RolloutStatus.RENDERING: "◑",
    RolloutStatus.JUDGING: "◕",
    RolloutStatus.SCORED: "✓",
    RolloutStatus.FAILED: "✗",
}
# component-class suffix of the style each status is drawn with
STATUS_STYLES: dict[RolloutStatus, str] = {
    RolloutStatus.QUEUED: "queued",
    RolloutStatus.GENERATING: "busy",
    RolloutStatus.RENDERING: "busy",
    RolloutStatus.JUDGING: "busy",
    RolloutStatus.SCORED: "scored",
    RolloutStatus.FAILED: "failed",
}


def short_id(rollout_id: str, run_id: str) -> str:
    """The rollout id without its run id prefix: ``3.0`` or ``3.0.a2``."""
    prefix = run_id + "."
    return rollout_id[len(prefix):] if rollout_id.startswith(prefix) else rollout_id


def _seconds(value: float | None) -> str:
    return DASH if value is None else f"{value:.1f}"


def format_score(rec: RolloutRecord) -> str:
    score = rec.effective_score
    if score is None:
        return DASH
    return f"{score:.2f}" + ("*" if rec.overridden else "")


def cells_for(rec: RolloutRecord) -> tuple[str, ...]:
    """The text of every column (``COLUMNS`` order) for one rollout; the mark column is filled by the table."""
    fulfilled = rec.effective_fulfilled
    tokens = rec.tokens if (rec.prompt_tokens is not None or rec.completion_tokens is not None) else None
    return (
        "",
        short_id(rec.rollout_id, rec.run_id),
        rec.row_id,
        str(rec.sample_index),
        f"{STATUS_ICONS[rec.status]} {rec.status.value}",
        format_score(rec),
        f"{DASH if fulfilled is None else fulfilled}/{rec.total}",
        _seconds(rec.generation_s),
        _seconds(rec.judge_s),
        DASH if tokens is None else str(tokens),
    )
