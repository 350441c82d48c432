"""Importing evaluated Eval Protocol rows (JSONL) as a run, reviewable and comparable like one made here.

One line → one rollout, mapped by :mod:`svgagent.core.exchange.import_row`. Lines with the same row id, prompt and
requirements are samples of one row, numbered in file order. Rows that come without a verdict are queued with
their answer for :func:`judge_imported`, which renders and judges them without calling the policy.

A line that cannot be used is skipped and reported with its line number; the run and all its rollouts are written
in one transaction, so a failure leaves nothing behind. A file with no usable line raises :class:`NothingImported`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from svgagent.core.exchange.import_row import (
    IMPORTED_FINISH_REASON,
    LineError,
    ParsedRollout,
    kind_of,
    parse_evaluation_row,
    parse_formatted_prompt,
)
from svgagent.core.scoring.errors import SvgAgentError
from svgagent.core.scoring.models import RolloutStatus
from svgagent.core.store.run_store import Store
from svgagent.core.store.typed_rows import RunSummary, run_threshold
from svgagent.core.urls import strip_userinfo

if TYPE_CHECKING:
    from svgagent.core.config.settings import Settings

__all__ = [
    "FORMAT_EVALUATED",
    "IMPORTED_FINISH_REASON",
    "ImportResult",
    "LineError",
    "NotJsonLines",
    "NothingImported",
    "ParsedRollout",
    "SkippedLine",
    "import_file",
    "judge_imported",
    "parse_evaluation_row",
    "parse_formatted_prompt",
    "read_evaluation_rows",
    "read_rows",
]

FORMAT_EVALUATED = "eval-protocol-evaluated"


class NothingImported(SvgAgentError):
    """No line of the file could be imported (no run was created)."""

    def __init__(self, message: str, skipped: Sequence[SkippedLine] = (), skipped_count: int | None = None) -> None:
        super().__init__(message)
        self.skipped = tuple(skipped)
        self.skipped_count = len(self.skipped) if skipped_count is None else skipped_count


@dataclass(frozen=True, slots=True)
class SkippedLine:
    line: int
    reason: str


@dataclass(frozen=True, slots=True)
class ImportResult:
    run_id: str
    name: str
    imported: int
    rows: int
    scored: int
    failed: int
    queued: int  # no score yet: answer stored, waiting for the judge
    skipped: tuple[SkippedLine, ...]  # the first KEEP_SKIPPED
    skipped_count: int = 0  # all of them

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "name": self.name,
            "imported": self.imported,
            "rows": self.rows,
            "scored": self.scored,
            "failed": self.failed,
            "queued": self.queued,
            "skipped_count": self.skipped_count,
            "skipped": [{"line": s.line, "reason": s.reason} for s in self.skipped],
        }


# --- reading ---------------------------------------------------------------------------------------------------------


MAX_LINE_BYTES = 64 * 1024 * 1024  # a longer line is skipped without being read into memory
KEEP_SKIPPED = 1000  # skipped lines whose reasons are kept (all are counted)
NOT_JSONL_AFTER = 20  # that many lines that are not JSON objects, and none usable: not a JSON Lines file


class NotJsonLines(NothingImported):
    """The file is not JSON Lines at all (one message for the whole file, not one per line)."""


def _lines(handle: Any) -> Any:
    """(line number, bytes or None when the line was longer than ``MAX_LINE_BYTES``)."""
    lineno = 0
    while True:
        raw = handle.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        lineno += 1
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            while raw and not raw.endswith(b"\n"):  # skip the rest of the line, a block at a time
                raw = handle.readline(MAX_LINE_BYTES)
            yield lineno, None
            continue
        yield lineno, raw


def _decode(raw: bytes | None, lineno: int) -> tuple[Any, str | None]:
    """(the line's JSON value, None) or (None, why it is not JSON)."""
    if raw is None:
        return None, f"longer than {MAX_LINE_BYTES // (1024 * 1024)} MiB"
    try:
        text = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
    except UnicodeDecodeError as err:
        return None, f"not valid UTF-8 (byte offset {err.start})"
    if not text.strip():
        return None, ""
    try:
        return json.loads(text), None
    except json.JSONDecodeError as err:
        return None, f"invalid JSON ({err.msg}, column {err.colno})"
    except RecursionError:
        return None, "invalid JSON (nested too deeply)"
    except ValueError as err:  # e.g. an integer with more digits than Python converts
        return None, f"invalid JSON ({str(err)[:80]})"


@dataclass
class _Skips:
    kept: list[SkippedLine] = field(default_factory=list)
    count: int = 0

    def add(self, line: int, reason: str) -> None:
        self.count += 1
        if len(self.kept) < KEEP_SKIPPED:
            self.kept.append(SkippedLine(line, reason))


def read_evaluation_rows(path: Path | str) -> tuple[list[ParsedRollout], list[SkippedLine]]:
    """Parse every line of ``path``: the usable rollouts and the skipped lines with their reasons (the first
    ``KEEP_SKIPPED``; see :func:`read_rows` for the count). Raises :class:`SvgAgentError` when the file cannot be
    read at all and :class:`NotJsonLines` when it is not JSON Lines."""
    parsed, skips = read_rows(path)
    return parsed, skips.kept


def read_rows(path: Path | str) -> tuple[list[ParsedRollout], _Skips]:
    path = Path(path).expanduser()
    try:
        handle = path.open("rb")
    except OSError as err:
        raise SvgAgentError(f"{path}: cannot read ({err.strerror or err})") from None
    parsed: list[ParsedRollout] = []
    skips = _Skips()
    not_json = 0
    first_problem = ""
    with handle:
        for lineno, raw in _lines(handle):
            obj, problem = _decode(raw, lineno)
            if problem == "":
                continue  # a blank line
            if problem is None and not isinstance(obj, dict):
                problem = f"expected a JSON object, got {kind_of(obj)}"  # not an EvaluationRow line at all
            if problem is not None:
                skips.add(lineno, problem)
                not_json += 1
                first_problem = first_problem or f"line {lineno}: {problem}"
                if not parsed and not_json >= NOT_JSONL_AFTER and not_json == skips.count:
                    raise NotJsonLines(
                        f"{path} is not JSON Lines ({first_problem}); nothing was imported", skips.kept, skips.count
                    )
                continue
            try:
                parsed.append(parse_evaluation_row(obj, lineno))
            except LineError as err:
                skips.add(lineno, str(err))
            except Exception as err:  # noqa: BLE001 - one bad line is that line's problem, never the file's
                skips.add(lineno, f"unusable ({type(err).__name__}: {str(err)[:120]})")
    if not parsed and skips.count and not_json == skips.count:
        raise NotJsonLines(f"{path} is not JSON Lines ({first_problem}); nothing was imported", skips.kept, skips.count)
    return parsed, skips


# --- writing ---------------------------------------------------------------------------------------------------------


def import_file(
    store: Store,
    path: Path | str,
    *,
    name: str | None = None,
    settings: dict[str, Any] | None = None,
    strict: bool = False,
) -> ImportResult:
    """Import ``path`` into ``store`` as a new run, in one transaction. Unusable lines are skipped (``strict``:
    any unusable line imports nothing). ``settings`` (no secrets: e.g. ``Settings.public_dict()``) is stored with
    the run, overlaid with the model and sampling parameters found in the rows. Raises :class:`NothingImported`
    when no line is usable (or, ``strict``, when one is not)."""
    path = Path(path).expanduser()
    parsed, skips = read_rows(path)
    skipped = skips.kept
    if not parsed:
        what = "is empty" if not skips.count else f"has no importable line ({skips.count} skipped)"
        raise NothingImported(f"{path}: {what}; nothing was imported", skipped, skips.count)
    if strict and skips.count:
        raise NothingImported(
            f"{path}: {skips.count} of {skips.count + len(parsed)} lines cannot be imported "
            "(--strict: all or nothing); nothing was imported",
            skipped,
            skips.count,
        )
    groups: dict[tuple[str, str, tuple[str, ...]], list[ParsedRollout]] = {}
    for item in parsed:
        groups.setdefault((item.row_id, item.prompt, item.requirements), []).append(item)
    rollouts = []
    for row_index, ((row_id, prompt, requirements), items) in enumerate(groups.items()):
        for sample_index, item in enumerate(items):
            rollouts.append(
                {
                    "row_index": row_index,
                    "row_id": row_id,
                    "sample_index": sample_index,
                    "prompt": prompt,
                    "requirements": list(requirements),
                    **item.columns,
                }
            )
    run_settings = dict(settings or {})
    models = list(dict.fromkeys(str(p.completion_params["model"]) for p in parsed if p.completion_params.get("model")))
    first = next((p.completion_params for p in parsed if p.completion_params), {})
    # The policy side is whatever the file says, or unknown: never this machine's default model.
    for key in ("model", "temperature", "max_tokens", "reasoning_effort"):
        run_settings[key] = first.get(key)
    # The file's endpoint is a note, never where this machine sends a key (a rerun uses the person's own).
    run_settings["base_url"] = None
    imported_url = first.get("base_url")
    run_settings["imported_base_url"] = strip_userinfo(imported_url) if isinstance(imported_url, str) else None
    if len(models) > 1:
        run_settings["models"] = models
    run_settings["imported_from"] = path.name
    for key in ("judge_profile", "renderer"):  # how the file's scores were made, if all rows agree
        said = {p.recipe[key] for p in parsed if key in p.recipe}
        if len(said) == 1:
            run_settings[key] = said.pop()
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        digest = None
    dataset = {
        "name": path.name,
        "source": str(path.resolve()),
        "sha256": digest,
        "rows": len(groups),
        "format": FORMAT_EVALUATED,
    }
    run_id = store.insert_run(
        name=name or f"import of {path.name}",
        settings=run_settings,
        dataset=dataset,
        rollouts=rollouts,
        status="imported",
    )
    threshold = run_threshold(run_settings)
    store.set_run_status(run_id, "imported", store.summarize(run_id, threshold))
    statuses = [p.status for p in parsed]
    return ImportResult(
        run_id=run_id,
        name=store.get_run(run_id).name,
        imported=len(parsed),
        rows=len(groups),
        scored=statuses.count(RolloutStatus.SCORED),
        failed=statuses.count(RolloutStatus.FAILED),
        queued=statuses.count(RolloutStatus.QUEUED),
        skipped=tuple(skipped),
        skipped_count=skips.count,
    )


async def judge_imported(store: Store, run_id: str, settings: Settings, **engine_kwargs: Any) -> RunSummary:
    """Render and judge the queued rollouts of an imported run with svgagent's judge (``settings``: a
    :class:`~svgagent.core.config.settings.Settings`). Their answers are stored, so the policy is never called: the
    engine gets a placeholder policy client that points nowhere."""
    from svgagent.core.run.engine import Engine
    from svgagent.core.scoring.endpoint import endpoint_client

    placeholder = endpoint_client("http://127.0.0.1:9/v1", "unused-for-imports", timeout_s=10, max_retries=0)
    try:
        async with Engine(settings, store, policy=engine_kwargs.pop("policy", placeholder), **engine_kwargs) as engine:
            return await engine.run(run_id)
    finally:
        await placeholder.close()
