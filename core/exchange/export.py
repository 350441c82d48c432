"""Exports of a run: Eval Protocol ``EvaluationRow`` JSONL, a flat CSV, and the pictures as files.

Never includes keys. Every JSONL line validates under ``eval_protocol.models.EvaluationRow`` (checked in CI by
``tests/ep_validate.py`` with the real package, see ``.ci/ep_validate.sh``).

What goes where in an ``EvaluationRow``:

- ``evaluation_result.score`` is the *effective* score: a person's override when there is one, else the judge's,
  so other tools see the reviewed number; ``is_score_valid`` says whether it counts (an override always does).
- ``execution_metadata.extra["svgagent"]`` keeps what Eval Protocol has no field for (the judge's own score when a
  person overrode it, the override, stage timings, the state, reason and error), so ``svgagent import`` restores
  a run exactly. Other tools ignore it.
- ``input_metadata.session_data`` says how the scores were made: ``judge_profile`` and ``renderer``.
- PNG bytes are never in the JSONL; ``--assets DIR`` writes them (and the SVGs) as files named from rollout ids.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from svgagent.core.exchange.ep_status import STATUS_OF_FAILURE, StatusCode
from svgagent.core.named_files import STDOUT, open_output, write_output
from svgagent.core.run.prompt import format_prompt
from svgagent.core.scoring.errors import SvgAgentError
from svgagent.core.scoring.models import FailureKind, RolloutStatus
from svgagent.core.store.typed_rows import RolloutRecord, RunRecord
from svgagent.core.terminal_text import visible

if TYPE_CHECKING:
    from svgagent.core.store.run_store import Store

# rollout_status codes: eval_protocol's Status.Code (core/exchange/ep_status.py)
STATUS_FINISHED, STATUS_RUNNING = int(StatusCode.FINISHED), int(StatusCode.RUNNING)

EXTRA_KEY = "svgagent"  # execution_metadata.extra[EXTRA_KEY]
EXTRA_FORMAT = 1

CSV_COLUMNS = (
    "run_id",
    "rollout_id",
    "row_id",
    "row_index",
    "sample_index",
    "attempt",
    "status",
    "outcome",
    "score",
    "fulfilled",
    "total",
    "is_score_valid",
    "reason",
    "error",
    "generation_s",
    "render_s",
    "judge_s",
    "prompt_tokens",
    "completion_tokens",
    "override_score",
    "prompt",
    "rationale",
)
# ``reason`` is the rollout's one-line why (a judge's rationale: its first line, at most 200 characters, cut marked
# with …); ``rationale`` is the judge's whole text, as JSONL and the app have it (quoting keeps its newlines).
# A spreadsheet runs a cell starting with one of these as a formula (OWASP "CSV injection"), also after leading
# blanks (spaces, newlines), which some trim: such text cells get a leading apostrophe, shown as text and hidden.
_FORMULA_START = ("=", "+", "-", "@")


def rollout_status(rec: RolloutRecord) -> dict[str, Any]:
    if rec.status is RolloutStatus.SCORED or (rec.status is RolloutStatus.FAILED and rec.is_score_valid):
        return {
            "code": STATUS_FINISHED,
            "message": "finished" if rec.status is RolloutStatus.SCORED else (rec.reason or ""),
        }
    if rec.status is RolloutStatus.FAILED:
        text = rec.error or rec.reason or "failed"
        kind = rec.failure_kind or FailureKind.OTHER
        return {"code": int(STATUS_OF_FAILURE.get(kind, StatusCode.UNKNOWN)), "message": text}
    return {"code": STATUS_RUNNING, "message": rec.status.value}


def evaluation_result(rec: RolloutRecord) -> dict[str, Any] | None:
    if not rec.status.terminal:
        return None
    metrics: dict[str, Any] = {}
    fulfilled = rec.effective_fulfilled
    if fulfilled is not None and rec.total:
        metrics["requirements_fulfilled"] = {
            "score": fulfilled / rec.total,
            "is_score_valid": rec.counts_toward_mean,
            "reason": f"{fulfilled}/{rec.total} requirements fulfilled" + (" (human review)" if rec.overridden else ""),
        }
    if rec.override_verdicts is not None:
        for index, ok in enumerate(rec.override_verdicts, start=1):
            if ok is not None:  # None: the person left it undecided
                metrics[f"requirement_{index}"] = {
                    "score": 1.0 if ok else 0.0,
                    "is_score_valid": True,
                    "reason": "human review",
                }
    elif not rec.overridden:
        for index, ok, reason in rec.verdicts or []:
            metrics[f"requirement_{index}"] = {
                "score": 1.0 if ok else 0.0,
                "is_score_valid": True,
                "reason": str(reason or ""),
            }
    reason = rec.rationale or rec.reason or rec.error or ""
    if rec.overridden:
        metrics["judge_score"] = {
            "score": rec.score if rec.score is not None else 0.0,
            "is_score_valid": bool(rec.is_score_valid),
            "reason": "the judge's score, before a person overrode it",
        }
        judged = f"{rec.fulfilled}/{rec.total}" if rec.fulfilled is not None else "no valid score"
        note = f"human override: {rec.override_fulfilled}/{rec.total} (judge: {judged})"
        reason = f"{note}\n{reason}" if reason else note
    score = rec.effective_score
    return {
        "score": float(score) if score is not None else 0.0,
        "is_score_valid": rec.counts_toward_mean,
        "reason": reason,
        "metrics": metrics,
    }


def _extra(rec: RolloutRecord) -> dict[str, Any]:
    """What Eval Protocol has no field for, so an import can restore the rollout exactly."""
    override = None
    if rec.overridden:
        override = {
            "score": rec.override_score,
            "fulfilled": rec.override_fulfilled,
            "verdicts": rec.override_verdicts,
            "at": rec.override_at,
        }
    return {
        "format": EXTRA_FORMAT,
        "status": rec.status.value,
        "outcome": rec.outcome.value if rec.outcome is not None else None,  # scored · invalid · failed (README)
        "row_index": rec.row_index,
        "sample_index": rec.sample_index,
        "attempt": rec.attempt,
        "score": rec.score,
        "fulfilled": rec.fulfilled,
        "is_score_valid": rec.is_score_valid,
        "reason": rec.reason,
        "error": rec.error,
        "rationale": rec.rationale,
        "verdicts": rec.verdicts,
        "override": override,
        "generation_s": rec.generation_s,
        "render_s": rec.render_s,
        "judge_s": rec.judge_s,
        "judge_prompt_tokens": rec.judge_prompt_tokens,
        "judge_completion_tokens": rec.judge_completion_tokens,
        "cached_prompt_tokens": rec.cached_prompt_tokens,  # served from the provider's prompt cache
        "judge_cached_prompt_tokens": rec.judge_cached_prompt_tokens,
        "cached": rec.cached,
        "failure_kind": rec.failure_kind.value if rec.failure_kind is not None else None,
        "truncated": rec.truncated,
    }


def judge_session(run: RunRecord) -> dict[str, Any]:
    """How a run's scores were made, for ``input_metadata.session_data``: the judge profile (whose recipe the
    score follows) and the renderer that drew the pictures; ``svgagent import`` reads them back."""
    return {"judge_profile": run.judge_profile, "renderer": run.renderer}


def evaluation_row(run: RunRecord, rec: RolloutRecord) -> dict[str, Any]:
    formatted = format_prompt(rec.prompt, rec.requirements)
    messages: list[dict[str, Any]] = [{"role": "user", "content": formatted}]
    if rec.raw_answer is not None:
        messages.append({"role": "assistant", "content": rec.raw_answer})
    settings = run.settings
    duration = sum(x or 0.0 for x in (rec.generation_s, rec.render_s, rec.judge_s))
    eval_s = None if rec.render_s is None and rec.judge_s is None else (rec.render_s or 0.0) + (rec.judge_s or 0.0)
    return {
        "messages": messages,
        "input_metadata": {
            "row_id": rec.row_id,
            "completion_params": {
                "model": settings.get("model"),
                "temperature": settings.get("temperature"),
                "max_tokens": settings.get("max_tokens"),
                **({"reasoning_effort": settings["reasoning_effort"]} if settings.get("reasoning_effort") else {}),
            },
            "dataset_info": {
                "original_prompt": rec.prompt,
                "requirements": rec.requirements,
                "total_requirements": rec.total,
                "formatted_prompt": formatted,
                "sample_index": rec.sample_index,
            },
            "session_data": judge_session(run),
        },
        "evaluation_result": evaluation_result(rec),
        "rollout_status": rollout_status(rec),
        "execution_metadata": {
            "invocation_id": run.run_id,
            "experiment_id": run.name,
            "rollout_id": rec.rollout_id,
            "run_id": run.run_id,
            "usage": {
                "prompt_tokens": rec.prompt_tokens or 0,
                "completion_tokens": rec.completion_tokens or 0,
                "total_tokens": rec.tokens,
            },
            "duration_seconds": duration,  # deprecated in Eval Protocol; the two below replace it
            "rollout_duration_seconds": rec.generation_s,
            "eval_duration_seconds": eval_s,
            "finish_reason": rec.finish_reason,
            "extra": {EXTRA_KEY: _extra(rec)},
        },
        "created_at": rec.created,
    }


def iter_jsonl(run: RunRecord, rollouts: Iterable[RolloutRecord]) -> Iterator[str]:
    for rec in rollouts:
        yield json.dumps(evaluation_row(run, rec), ensure_ascii=False) + "\n"


def write_csv(rollouts: Iterable[RolloutRecord], out: TextIO) -> int:
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, extrasaction="ignore")
    writer.writeheader()
    count = 0
    for rec in rollouts:
        row = {name: neutralise_cell(getattr(rec, name, None)) for name in CSV_COLUMNS}
        row["status"] = rec.status.value
        row["outcome"] = rec.outcome.value if rec.outcome is not None else ""  # scored · invalid · failed (README)
        writer.writerow(row)
        count += 1
    return count


def neutralise_cell(value: Any) -> Any:
    """A text cell made safe for a spreadsheet and a terminal (``-o -``): control characters (ESC, C1, bidi
    controls) written as visible escapes (``core.terminal_text``; tab and newline kept, quoting holds them), and a
    cell a spreadsheet would run as a formula — its first character after any leading whitespace ``=``, ``+``,
    ``-`` or ``@``, or a leading tab or carriage return — made inert with a leading apostrophe. Anything else as it
    is (numbers stay numbers)."""
    if not isinstance(value, str):
        return value
    text = visible(value)
    if text.lstrip().startswith(_FORMULA_START) or value.startswith(("\t", "\r")):
        return "'" + text
    return text


def csv_text(rollouts: Iterable[RolloutRecord]) -> str:
    buf = io.StringIO()
    write_csv(rollouts, buf)
    return buf.getvalue()


# --- assets ---------------------------------------------------------------------------------------------------------

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
MAX_STEM = 120


def safe_stem(name: str) -> str:
    """A file name stem from ``name`` that is safe on every platform: only ``A-Z a-z 0-9 . _ -``, not starting
    with a dot or dash (no hidden files, nothing a shell tool takes for an option), at most 120 characters."""
    stem = _UNSAFE.sub("_", name).lstrip(".-")[:MAX_STEM].rstrip(".")
    return stem or "rollout"


@dataclass
class AssetWriter:
    """Writes each rollout's PNG (the exact image the judge saw) and SVG into ``directory`` as
    ``<rollout id>.png`` / ``.svg``; names are made safe and unique (``-2``, ``-3`` … on a clash)."""

    directory: Path
    pngs: int = 0
    svgs: int = 0
    _taken: set[str] = field(default_factory=set, repr=False)

    def __post_init__(self) -> None:
        self.directory = Path(self.directory)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise SvgAgentError(f"cannot create assets directory {self.directory}: {err.strerror or err}") from None

    def _stem(self, rollout_id: str) -> str:
        base = safe_stem(rollout_id)
        stem, n = base, 1
        while stem.lower() in self._taken:  # lower(): case-insensitive file systems
            n += 1
            stem = f"{base}-{n}"
        self._taken.add(stem.lower())
        return stem

    def write(self, rec: RolloutRecord) -> list[Path]:
        if rec.png is None and rec.svg is None:
            return []
        stem = self._stem(rec.rollout_id)
        try:
            return self._write_files(rec, stem)
        except OSError as err:
            raise SvgAgentError(f"cannot write assets to {self.directory}: {err.strerror or err}") from None

    def _write_files(self, rec: RolloutRecord, stem: str) -> list[Path]:
        written = []
        if rec.png is not None:
            path = self.directory / f"{stem}.png"
            write_output(path, rec.png)
            self.pngs += 1
            written.append(path)
        if rec.svg is not None:
            path = self.directory / f"{stem}.svg"
            write_output(path, rec.svg)
            self.svgs += 1
            written.append(path)
        return written

    def tee(self, rollouts: Iterable[RolloutRecord]) -> Iterator[RolloutRecord]:
        """Pass ``rollouts`` through, writing each one's assets on the way (one pass over a heavy iterator)."""
        for rec in rollouts:
            self.write(rec)
            yield rec


# --- a whole run to a file (the CLI's `svgagent export` and the TUI's export dialog) ----------------------------------

FORMATS = ("jsonl", "csv")


@dataclass(frozen=True, slots=True)
class ExportResult:
    run_id: str
    format: str
    rollouts: int
    path: Path | None  # None: written to a stream
    assets_dir: Path | None = None
    pngs: int = 0
    svgs: int = 0


def write_rollouts(fmt: str, run: RunRecord, rollouts: Iterable[RolloutRecord], out: TextIO) -> int:
    """Write ``rollouts`` as ``fmt`` (``jsonl`` or ``csv``) to ``out``; returns how many were written."""
    if fmt == "csv":
        return write_csv(rollouts, out)
    if fmt != "jsonl":
        raise SvgAgentError(f"unknown export format {fmt!r} (use {' or '.join(FORMATS)})")
    count = 0
    for line in iter_jsonl(run, rollouts):
        out.write(line)
        count += 1
    return count


def export_run(
    store: Store,
    run_id: str,
    fmt: str,
    target: Path | str | None,
    *,
    assets: Path | None = None,
    out: TextIO | None = None,
) -> ExportResult:
    """Export the current rollouts of ``run_id`` from ``store`` (a :class:`~svgagent.core.store.run_store.Store`) as ``fmt``.

    ``target`` is written with :func:`svgagent.core.named_files.open_output`: a regular file is replaced atomically, a
    FIFO or device is written through, ``-`` or None means ``out`` (default standard output); in every case
    nothing is written unless the whole export succeeded. ``assets``: also write each rollout's PNG and SVG into
    that directory (see :class:`AssetWriter`). Raises :class:`SvgAgentError` with one line when a file or
    directory cannot be written or the store cannot be read."""
    if fmt not in FORMATS:
        raise SvgAgentError(f"unknown export format {fmt!r} (use {' or '.join(FORMATS)})")
    run = store.get_run(run_id)
    rollouts: Iterable[RolloutRecord] = store.iter_rollouts(run.run_id)
    writer = AssetWriter(Path(assets)) if assets is not None else None
    if writer is not None:
        rollouts = writer.tee(rollouts)
    destination = STDOUT if target is None else target
    with open_output(destination, stdout=out) as stream:
        count = write_rollouts(fmt, run, rollouts, stream)
    path = None if str(destination) == STDOUT else Path(destination)
    return ExportResult(
        run.run_id,
        fmt,
        count,
        path,
        writer.directory if writer else None,
        writer.pngs if writer else 0,
        writer.svgs if writer else 0,
    )
