"""N runs side by side: one row per run, the best one found on the rows every run shares, and which to pick.

Each row: the run's model, judge (model and profile), dataset and number of dataset rows; the mean of its valid
effective scores ± standard error and its pass rate (:func:`svgagent.core.analysis.stats.compute_stats`, the same
figures as ``runs stats``); its dollars and tokens, policy and judge apart (every attempt, as paid:
:func:`svgagent.core.config.prices.rollouts_cost`); the policy's latency (p50 and p90 of the generation time); and
its failure themes — how often it missed requirements about colour, position, count, text and shape
(:mod:`svgagent.core.analysis.themes`), from per-requirement verdicts (judge mode per-requirement, or a person's
marks; a run judged by count has none).

The paired comparison is only over the **shared rows**: the dataset rows (row id and prompt, as
:mod:`svgagent.core.analysis.compare` aligns them) on which every run has a valid score. The best run is the one
with the highest mean there (the highest overall mean when no row is shared); every other run gets
``diff_vs_best`` = its mean − the best's on those rows, with the standard error of the paired differences and its
wins and losses (:func:`svgagent.core.analysis.compare.compare_rollouts`, restricted to the shared rows).

:func:`build_leaderboard` reads the runs from a store; :func:`compute_leaderboard` is the pure part.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from svgagent.core.analysis.compare import compare_rollouts, group_by_row, row_key
from svgagent.core.analysis.stats import compute_stats, percentile, requirement_verdicts
from svgagent.core.analysis.themes import OTHER, THEMES, themes_of
from svgagent.core.config.prices import Cost, PriceTable, price_table, rollouts_cost, usd_text
from svgagent.core.store.run_store import Store
from svgagent.core.store.typed_rows import RolloutRecord, RunRecord, mean_text, spread_text

# Sortable columns (CLI --sort, the TUI's sort) and whether the best comes first when descending.
COLUMNS: dict[str, bool] = {
    "mean": True,
    "stderr": False,
    "pass_rate": True,
    "diff": True,
    "cost": False,
    "latency": False,
    "rows": True,
    "model": False,
    "judge_profile": False,
    "dataset": False,
    "name": False,
}
NOISE_SE = 2.0  # a paired difference within this many standard errors of 0 is called noise in the summary


@dataclass(frozen=True, slots=True)
class ThemeTally:
    """How often a run missed requirements of one theme (over rollouts with per-requirement verdicts)."""

    theme: str
    failed: int
    judged: int

    @property
    def rate(self) -> float:
        return self.failed / self.judged if self.judged else 0.0


@dataclass(frozen=True, slots=True)
class LeaderboardRow:
    run_id: str
    name: str
    status: str
    model: str
    judge_model: str
    judge_profile: str
    dataset: str
    rows: int  # dataset rows (row id and prompt) the run has
    rollouts: int  # current rollouts
    valid: int  # rollouts whose score counts
    mean: float | None
    stderr: float | None
    pass_rate: float | None
    threshold: float
    # against the best run, on the shared rows (see the module docstring); None for the best itself or no shared row
    shared_mean: float | None
    diff_vs_best: float | None
    diff_stderr: float | None
    wins: int  # shared rows where this run beats the best
    losses: int
    is_best: bool
    cost: Cost  # every attempt's dollars and tokens, policy and judge apart
    latency_p50_s: float | None  # the policy's generation time
    latency_p90_s: float | None
    themes: tuple[ThemeTally, ...] = field(default=())  # most missed first; empty: no per-requirement verdicts

    @property
    def usd(self) -> float | None:
        return self.cost.total_usd

    @property
    def usd_per_row(self) -> float | None:
        """Dollars per dataset row (all its samples): what another row of the same kind would cost."""
        return None if self.usd is None or not self.rows else self.usd / self.rows

    def theme_text(self, top: int = 2) -> str:
        """The themes missed most, e.g. ``count 62% · text 40%``; "" without verdicts."""
        missed = [t for t in self.themes if t.failed]
        return " · ".join(f"{t.theme} {100 * t.rate:.0f}%" for t in missed[:top])

    def sort_value(self, column: str) -> Any:
        return {
            "mean": self.mean,
            "stderr": self.stderr,
            "pass_rate": self.pass_rate,
            "diff": 0.0 if self.is_best else self.diff_vs_best,
            "cost": self.usd,
            "latency": self.latency_p50_s,
            "rows": self.rows,
            "model": self.model.lower(),
            "judge_profile": self.judge_profile,
            "dataset": self.dataset.lower(),
            "name": self.name.lower(),
        }[column]

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "name": self.name,
            "status": self.status,
            "model": self.model,
            "judge_model": self.judge_model,
            "judge_profile": self.judge_profile,
            "dataset": self.dataset,
            "rows": self.rows,
            "rollouts": self.rollouts,
            "valid": self.valid,
            "mean": self.mean,
            "stderr": self.stderr,
            "pass_rate": self.pass_rate,
            "threshold": self.threshold,
            "shared_mean": self.shared_mean,
            "diff_vs_best": self.diff_vs_best,
            "diff_stderr": self.diff_stderr,
            "wins": self.wins,
            "losses": self.losses,
            "is_best": self.is_best,
            "cost": self.cost.to_dict(),
            "usd_per_row": self.usd_per_row,
            "latency_p50_s": self.latency_p50_s,
            "latency_p90_s": self.latency_p90_s,
            "themes": [{"theme": t.theme, "failed": t.failed, "judged": t.judged, "rate": t.rate} for t in self.themes],
        }


@dataclass(frozen=True, slots=True)
class Leaderboard:
    rows: tuple[LeaderboardRow, ...]  # best mean on the shared rows first (sorted(): any column)
    shared_rows: int
    best_run: str | None
    summary: str  # the pick-the-base-model line
    notes: tuple[str, ...] = ()  # caveats: recipes, judges or datasets that differ between the runs

    def sorted(self, column: str = "mean", *, reverse: bool = False) -> list[LeaderboardRow]:
        """The rows by ``column`` (:data:`COLUMNS`), best first (``reverse``: worst first); rows without the
        value always last."""
        if column not in COLUMNS:
            raise ValueError(f"unknown column {column!r} (one of: {', '.join(COLUMNS)})")
        descending = COLUMNS[column] != reverse
        present = [r for r in self.rows if r.sort_value(column) is not None]
        missing = [r for r in self.rows if r.sort_value(column) is None]
        present.sort(key=lambda r: r.sort_value(column), reverse=descending)
        return present + missing

    def to_dict(self, rows: Sequence[LeaderboardRow] | None = None) -> dict[str, Any]:
        return {
            "shared_rows": self.shared_rows,
            "best_run": self.best_run,
            "summary": self.summary,
            "notes": list(self.notes),
            "rows": [r.to_dict() for r in (self.rows if rows is None else rows)],
        }


@dataclass(frozen=True, slots=True)
class RunData:
    """What the leaderboard reads of one run."""

    run: RunRecord
    rollouts: Sequence[RolloutRecord]  # current attempts
    attempts: Sequence[RolloutRecord]  # every attempt (what was paid for)
    verdicts: Mapping[str, Sequence[Sequence[Any]]]  # rollout id → the judge's per-requirement verdicts


def build_leaderboard(store: Store, run_ids: Sequence[str], *, prices: PriceTable | None = None) -> Leaderboard:
    """The leaderboard of the stored runs ``run_ids`` (ids as stored; StoreError for an unknown one)."""
    data = []
    for run_id in dict.fromkeys(run_ids):
        run = store.get_run(run_id)
        data.append(
            RunData(
                run,
                store.list_rollouts(run.run_id),
                store.list_rollouts(run.run_id, current_only=False),
                store.rollout_verdicts(run.run_id),
            )
        )
    return compute_leaderboard(data, prices=prices)


def compute_leaderboard(runs: Sequence[RunData], *, prices: PriceTable | None = None) -> Leaderboard:
    table = prices if prices is not None else price_table()
    shared = shared_rows([d.rollouts for d in runs])
    partial = [_partial_row(d, table) for d in runs]
    shared_means = {d.run.run_id: _mean_over(d.rollouts, shared) for d in runs}
    key = shared_means if shared else {p["run_id"]: p["mean"] for p in partial}
    ranked = [rid for rid in key if key[rid] is not None]
    best = max(ranked, key=lambda rid: key[rid]) if ranked else None  # type: ignore[arg-type, return-value]
    best_rollouts = next((d.rollouts for d in runs if d.run.run_id == best), ())
    rows = []
    for d, p in zip(runs, partial):
        diff = stderr = None
        wins = losses = 0
        if shared and best is not None and d.run.run_id != best:
            c = compare_rollouts(_only(best_rollouts, shared), _only(d.rollouts, shared))
            diff, stderr, wins, losses = c.mean_diff, c.diff_stderr, c.wins, c.losses
        rows.append(
            LeaderboardRow(
                **p,
                shared_mean=shared_means[d.run.run_id] if shared else None,
                diff_vs_best=diff,
                diff_stderr=stderr,
                wins=wins,
                losses=losses,
                is_best=d.run.run_id == best,
            )
        )
    board = Leaderboard(tuple(rows), len(shared), best, "", _notes(runs))
    ordered = tuple(board.sorted("diff")) if shared else tuple(board.sorted("mean"))
    return Leaderboard(ordered, len(shared), best, pick_summary(ordered, len(shared)), board.notes)


def shared_rows(runs: Sequence[Sequence[RolloutRecord]]) -> set[Any]:
    """The row keys on which every run has at least one valid score."""
    keys: set[Any] | None = None
    for rollouts in runs:
        scored = {k for k, g in group_by_row(rollouts).items() if g.mean is not None}
        keys = scored if keys is None else keys & scored
    return keys or set()


def _only(rollouts: Sequence[RolloutRecord], keys: set[Any]) -> list[RolloutRecord]:
    return [r for r in rollouts if row_key(r) in keys]


def _mean_over(rollouts: Sequence[RolloutRecord], keys: set[Any]) -> float | None:
    """The mean of per-row means over ``keys`` (each row weighs the same, as compare's paired means)."""
    means = [g.mean for k, g in group_by_row(_only(rollouts, keys)).items() if g.mean is not None]
    return sum(means) / len(means) if means else None


def _partial_row(d: RunData, table: PriceTable) -> dict[str, Any]:
    run = d.run
    stats = compute_stats(d.rollouts, run_id=run.run_id, threshold=run.threshold, verdicts={})
    generation = [r.generation_s for r in d.rollouts if r.generation_s is not None]
    model, judge = str(run.settings.get("model") or "?"), str(run.settings.get("judge_model") or "?")
    return {
        "run_id": run.run_id,
        "name": run.name,
        "status": str(run.status),
        "model": model,
        "judge_model": judge,
        "judge_profile": run.judge_profile,
        "dataset": str(run.dataset.get("name") or "?"),
        "rows": len(group_by_row(d.rollouts)),
        "rollouts": stats.rollouts,
        "valid": stats.valid,
        "mean": stats.mean,
        "stderr": stats.stderr,
        "pass_rate": stats.pass_rate,
        "threshold": stats.threshold,
        "cost": rollouts_cost(d.attempts, table, model, judge),
        "latency_p50_s": percentile(generation, 50),
        "latency_p90_s": percentile(generation, 90),
        "themes": failure_themes(d.rollouts, d.verdicts),
    }


def failure_themes(
    rollouts: Sequence[RolloutRecord], verdicts: Mapping[str, Sequence[Sequence[Any]]]
) -> tuple[ThemeTally, ...]:
    """Per theme, the requirements missed over those judged one by one (a requirement may count in several
    themes), most missed first; themes never judged are left out."""
    tally = {t: [0, 0] for t in (*THEMES, OTHER)}
    for rec in rollouts:
        if not rec.counts_toward_mean:
            continue
        flags = requirement_verdicts(rec, verdicts.get(rec.rollout_id))
        if flags is None:
            continue
        for text, ok in zip(rec.requirements, flags):
            for theme in themes_of(text):
                tally[theme][0] += not ok
                tally[theme][1] += 1
    items = [ThemeTally(t, f, n) for t, (f, n) in tally.items() if n]
    items.sort(key=lambda t: (-t.rate, -t.failed, t.theme))
    return tuple(items)


def _notes(runs: Sequence[RunData]) -> tuple[str, ...]:
    notes = []
    for label, values in (
        ("judge profiles", {d.run.judge_profile for d in runs}),
        ("judges", {str(d.run.settings.get("judge_model")) for d in runs}),
        ("renderers", {d.run.renderer for d in runs}),
        ("datasets", {str(d.run.dataset.get("name")) for d in runs}),
    ):
        if len(values) > 1:
            notes.append(f"the runs differ in {label} ({', '.join(sorted(values))}): their scores are not alike")
    return tuple(notes)


def model_label(model: str) -> str:
    """A model's name as a table shows it: ``accounts/fireworks/models/qwen3-8b`` → ``qwen3-8b`` (the last part of
    a provider path); other names as they are."""
    return model.rsplit("/models/", 1)[-1] if "/models/" in model else model


def pick_summary(rows: Sequence[LeaderboardRow], shared: int) -> str:
    """One line: which model to pick, how sure that is, and what it costs — or why nothing can be said."""
    if not rows:
        return "no runs"
    best = next((r for r in rows if r.is_best), None)
    if best is None:
        return "no run has a valid score yet: nothing to pick"
    if len(rows) == 1:
        return f"one run: {model_label(best.model)} scores {mean_text(best.mean)}{spread_text(best.stderr)}"
    if not shared:
        return (
            f"{model_label(best.model)} has the highest mean ({mean_text(best.mean)}), but no row is scored in every run: "
            "the runs cannot be paired, so this is not a fair comparison"
        )
    others = [r for r in rows if not r.is_best and r.diff_vs_best is not None]
    runner = max(others, key=lambda r: r.diff_vs_best) if others else None  # type: ignore[arg-type, return-value]
    cost = f", {usd_text(best.usd_per_row)} per row" if best.usd_per_row is not None else ""
    head = (
        f"pick {model_label(best.model)} ({best.name}): {mean_text(best.shared_mean)} on the {shared} shared rows{cost}"
    )
    if runner is None:
        return head
    diff, se = abs(max(0.0, -(runner.diff_vs_best or 0.0))), runner.diff_stderr  # never behind; abs: no "-0.000"
    gap = f"+{diff:.3f}{spread_text(se)} over {model_label(runner.model)} ({runner.name})"
    if se is not None and diff <= NOISE_SE * se:
        cheaper = runner.usd is not None and best.usd is not None and runner.usd < best.usd
        tail = f"; {model_label(runner.model)} is cheaper ({usd_text(runner.usd_per_row)} per row)" if cheaper else ""
        return f"{head} — but only {gap}, within noise: more rows would tell them apart{tail}"
    return f"{head}, {gap}"
