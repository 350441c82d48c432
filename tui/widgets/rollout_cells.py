"""What each column of the rollout table shows for one rollout: fixed widths (the prompt takes what is left),
plain text plus a style name.

A rollout is named the way a person remembers it — by what it was asked to draw ("mobile app login screen"), its
row and its sample (``#2``, with ``↻2`` for a second attempt) — not by its id ("32.0.a2"), which reads like a score.
"""

from __future__ import annotations

import re

from svgagent.core.scoring.models import RolloutStatus
from svgagent.core.store.outcomes import Outcome
from svgagent.core.store.typed_rows import RolloutRecord
from svgagent.tui.widgets.line_table import Column

DASH = "–"
PROMPT_MIN = 12  # the prompt column never gets narrower than this (the table scrolls sideways instead)

COLUMNS: tuple[Column, ...] = (
    Column("mark", "", 1),
    Column("prompt", "prompt", 0),  # the width left over (see RolloutTable.widths), at least PROMPT_MIN
    Column("row", "row", 7),
    Column("sample", "#", 4, "right"),
    Column("status", "status", 12),
    Column("score", "score", 6, "right"),
    Column("fulfilled", "ok", 5, "right"),
    Column("gen", "gen", 5, "right"),
    Column("judge", "judge", 6, "right"),
    Column("tokens", "tokens", 7, "right"),
)
COLUMN_KEYS = tuple(c.key for c in COLUMNS)
SORTABLE = tuple(c.key for c in COLUMNS if c.key != "mark")
GAP = 1
FIXED_WIDTH = sum(c.width for c in COLUMNS) + GAP * (len(COLUMNS) - 1)  # everything but the prompt
TABLE_WIDTH = FIXED_WIDTH + PROMPT_MIN  # the narrowest the table draws without scrolling sideways

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

# a finished rollout shows its outcome (core/store/outcomes.py): the model's valid 0 is "✓ scored", not "✗ failed"
OUTCOME_ICONS: dict[Outcome, str] = {Outcome.SCORED: "✓", Outcome.INVALID: "○", Outcome.FAILED: "✗"}


def state_label(rec: RolloutRecord) -> str:
    """``✓ scored`` · ``○ invalid`` · ``✗ failed`` once finished, else where it is (``◔ generating``)."""
    outcome = rec.outcome
    if outcome is None:
        return f"{STATUS_ICONS[rec.status]} {rec.status.value}"
    return f"{OUTCOME_ICONS[outcome]} {outcome.value}"


def state_style(rec: RolloutRecord) -> str:
    """The component-class suffix ``state_label`` is drawn with."""
    outcome = rec.outcome
    return STATUS_STYLES[rec.status] if outcome is None else outcome.value


# "Write `svg` code to draw a …", "Draw an …", "Create an SVG of the …": the words every prompt starts with
_BOILERPLATE = re.compile(
    r"^\s*(?:please\s+)?"
    r"(?:(?:write|generate|create|produce|make|output)\s+(?:an?\s+)?(?:`?svg`?\s*)?"
    r"(?:code|image|drawing|illustration|picture|file|markup)?\s*(?:to\s+|that\s+|of\s+|for\s+|showing\s+)?)?"
    r"(?:(?:draw|depict|show|illustrate|render|sketch)s?\s+)?"
    r"(?:an?\s+|the\s+)?",
    re.IGNORECASE,
)


def prompt_topic(prompt: str) -> str:
    """What the prompt asks to draw, without the words all prompts share: "mobile app login screen mock-up"."""
    flat = " ".join(prompt.split())
    topic = _BOILERPLATE.sub("", flat, count=1).rstrip(" .!")
    return topic or flat


def short_id(rollout_id: str, run_id: str) -> str:
    """The rollout id without its run id prefix: ``3.0`` or ``3.0.a2`` (for titles, next to the topic)."""
    prefix = run_id + "."
    return rollout_id[len(prefix) :] if rollout_id.startswith(prefix) else rollout_id


def sample_label(rec: RolloutRecord) -> str:
    """``#0``, or ``#0↻2`` for the second attempt at that sample."""
    return f"{rec.sample_index}" + (f"↻{rec.attempt}" if rec.attempt > 1 else "")


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
        prompt_topic(rec.prompt),
        rec.row_id,
        sample_label(rec),
        state_label(rec),
        format_score(rec),
        f"{DASH if fulfilled is None else fulfilled}/{rec.total}",
        _seconds(rec.generation_s),
        _seconds(rec.judge_s),
        DASH if tokens is None else str(tokens),
    )
