"""What a person may type for a run: its id, a unique prefix of it, its name, or ``latest`` — one resolver for every
command and the TUI.

In that order: an exact id wins; ``latest`` is the newest run; then a name held by exactly one run; then an id
prefix held by exactly one run. Anything else is a one-line error that says what matched (or that nothing did).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from svgagent.core.scoring.errors import StoreError

if TYPE_CHECKING:  # only annotations: `svgagent --help` imports this module for RUN_HELP
    from svgagent.core.store.typed_rows import RunRecord

LATEST = "latest"
RUN_HELP = "a run id, a unique prefix of one, a run's name, or latest"  # for every RUN argument
SHOWN = 5  # candidates named in an "ambiguous" error


class RunSource(Protocol):
    path: object

    def list_runs(self) -> list[RunRecord]: ...


class RunNotFound(StoreError):
    """No run, or more than one, answers to what was typed."""


def _names(runs: Sequence[RunRecord]) -> str:
    shown = ", ".join(f"{r.run_id} ({r.name})" if r.name != r.run_id else r.run_id for r in runs[:SHOWN])
    return shown + (f" and {len(runs) - SHOWN} more" if len(runs) > SHOWN else "")


def match_runs(runs: Sequence[RunRecord], ref: str) -> list[RunRecord]:
    """The runs ``ref`` names under the rules above (newest first; one run when it is unambiguous)."""
    ref = ref.strip()
    exact = [r for r in runs if r.run_id == ref]
    if exact:
        return exact
    if ref.lower() == LATEST:
        return list(runs[:1])
    named = [r for r in runs if r.name == ref]
    if named:
        return named
    return [r for r in runs if r.run_id.startswith(ref)] if ref else []


def resolve_run(store: RunSource, ref: str) -> RunRecord:
    """The one run ``ref`` names in ``store`` (runs newest first); raises RunNotFound with what matched."""
    runs = store.list_runs()
    found = match_runs(runs, ref)
    if len(found) == 1:
        return found[0]
    if not found:
        if not runs:
            raise RunNotFound(f"no run {ref!r}: {store.path} holds no runs yet")
        raise RunNotFound(
            f"no run {ref!r} in {store.path}: give an id, a unique prefix of one, a name or "
            f"{LATEST!r} (see `svgagent runs list`)"
        )
    what = "are named" if found[0].name == ref.strip() else "start with"
    raise RunNotFound(f"{len(found)} runs {what} {ref!r}: {_names(found)} — type more of the id")


def filter_runs(runs: Sequence[RunRecord], text: str) -> list[RunRecord]:
    """The runs (newest first) in which every word of ``text`` occurs — in the id, name, model, dataset or status,
    case-insensitively; the word ``latest`` keeps the newest run. A blank text keeps them all."""
    words = text.lower().split()
    kept = list(runs)
    for word in words:
        if word == LATEST:
            kept = kept[:1]
            continue
        kept = [r for r in kept if word in _searchable(r)]
    return kept


def _searchable(run: RunRecord) -> str:
    return " ".join(
        (run.run_id, run.name, str(run.settings.get("model", "")), str(run.dataset.get("name", "")), str(run.status))
    ).lower()
