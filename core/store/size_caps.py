"""Size caps on the untrusted text the run store keeps (model answers, judge text, reasons).

A column longer than its cap keeps its first ``cap`` characters; the rollout's ``truncated`` map records the
column's original length, so every reader can say "cut at N of M characters". One answer can never fill the disk,
and the response cache never holds an answer over the cap (such an answer is not cached at all).

The SVG cap equals the renderer's input limit (``render_worker.DEFAULT_MAX_BYTES``): an SVG that had to be cut was
one the renderer refuses anyway. An answer may hold that SVG and some prose, hence twice as much.
"""

from __future__ import annotations

import json
from typing import Any

from svgagent.core.scoring.render_worker import DEFAULT_MAX_BYTES

SVG_CAP = DEFAULT_MAX_BYTES  # characters
ANSWER_CAP = 2 * DEFAULT_MAX_BYTES
JUDGE_TEXT_CAP = 100_000
LINE_CAP = 2_000  # reason, error
FINISH_REASON_CAP = 200  # an endpoint's finish_reason ("stop", "length"; anything else is kept as its JSON text)
VERDICT_REASON_CAP = 500
VERDICTS_CAP = 200_000  # a verdicts list longer than this (as JSON) has its reasons cut to VERDICT_REASON_CAP
# prompts and requirements of imported rows (a person's own datasets are theirs to size)
PROMPT_CAP = 100_000
MAX_REQUIREMENTS = 1_000
REQUIREMENT_CAP = 10_000

TEXT_CAPS: dict[str, int] = {
    "raw_answer": ANSWER_CAP,
    "svg": SVG_CAP,
    "judge_raw": JUDGE_TEXT_CAP,
    "rationale": JUDGE_TEXT_CAP,
    "reason": LINE_CAP,
    "error": LINE_CAP,
    "finish_reason": FINISH_REASON_CAP,
}
JSON_CAPS: dict[str, int] = {"verdicts_json": VERDICTS_CAP}
CAPPED_COLUMNS: frozenset[str] = frozenset(TEXT_CAPS) | frozenset(JSON_CAPS)


def fits(column: str, text: str) -> bool:
    """Whether ``text`` is stored whole in ``column`` (what may go into the response cache)."""
    return len(text) <= TEXT_CAPS.get(column, len(text))


def cap_text(text: str, cap: int) -> tuple[str, int | None]:
    """(``text`` cut to ``cap`` characters, its original length) — or (``text``, None) when it fits."""
    if len(text) <= cap:
        return text, None
    return text[:cap], len(text)


def _cap_verdicts(text: str) -> tuple[str, int | None]:
    if len(text) <= VERDICTS_CAP:
        return text, None
    try:
        items = json.loads(text)
        cut = [[item[0], item[1], str(item[2])[:VERDICT_REASON_CAP]] for item in items]
    except (ValueError, TypeError, IndexError, KeyError, RecursionError):
        return "[]", len(text)
    return json.dumps(cut), len(text)


def stored_whole(column: str, value: Any) -> bool:
    """Whether :func:`cap_column` keeps ``value`` as it is (the caps as they are now)."""
    if not isinstance(value, str):
        return True
    cap = TEXT_CAPS.get(column)
    if cap is None:
        cap = VERDICTS_CAP if column in JSON_CAPS else len(value)
    return len(value) <= cap


def cap_column(column: str, value: Any) -> tuple[Any, int | None]:
    """The value to store in ``column`` and the original length when it was cut (None: stored whole)."""
    if not isinstance(value, str):
        return value, None
    if column in TEXT_CAPS:
        return cap_text(value, TEXT_CAPS[column])
    if column in JSON_CAPS:
        return _cap_verdicts(value)
    return value, None
