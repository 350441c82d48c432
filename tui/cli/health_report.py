"""Evaluator health in the headless commands (`runs stats`, `runs show`): which steps a run's health is read over,
and the report printed (core/analysis/health.py computes it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from svgagent.core.analysis.health import HealthReport, run_health
from svgagent.core.serve.training_runs import TrainingStore
from svgagent.core.store.run_store import Store

if TYPE_CHECKING:
    from rich.console import Console


def run_health_scope(store: Store, run_id: str) -> tuple[HealthReport, dict[str, Any]]:
    """The health of the training run ``run_id`` is a step of (over all its steps), else of the run alone; and
    what it was read over (``scope``: "training" or "run", ``training_id``, ``steps``)."""
    steps, training_id = TrainingStore(store).health_steps(run_id)
    scope = {"scope": "training" if training_id else "run", "training_id": training_id, "step_count": len(steps)}
    return run_health(store, steps), scope


def scope_text(scope: dict[str, Any]) -> str:
    if scope["scope"] == "training":
        return f"over the {scope['step_count']} steps of training {scope['training_id']}"
    return "over this run (one step)"


def print_health(console: Console, report: HealthReport, scope: dict[str, Any], *, brief: bool = False) -> None:
    """The warnings (or that there are none); unless ``brief``, the per-step table and the suspects' rollout ids."""
    from rich.markup import escape
    from rich.table import Table

    console.print(f"[bold]evaluator health[/] {escape(scope_text(scope))}")
    for line in report.lines():
        style = "yellow" if line.startswith("⚠") else ""
        console.print(f"[{style}]{escape(line)}[/]" if style else escape(line), highlight=False)
    if brief or not report.judged:
        return
    if len(report.steps) > 1 or report.warnings:
        table = Table("step", "finished", "invalid", "groups", "all alike", title_justify="left")
        for s in report.steps:
            share = "–" if s.flat_share is None else f"{s.flat_groups} ({s.flat_share:.0%})"
            table.add_row(str(s.step), str(s.finished), str(s.invalid), str(s.groups), share)
        console.print(table)
    for suspect in report.text_suspects[:10]:
        console.print(
            f"  suspect {suspect.rollout_id} (step {suspect.step}, {escape(suspect.row_id)}): {suspect.why}, "
            f"{suspect.chars} characters of text, {suspect.echoed} requirement words",
            highlight=False,
        )
    if len(report.text_suspects) > 10:
        console.print(f"  … and {len(report.text_suspects) - 10} more suspects (--json lists them all)")
    for same in report.same_svg[:5]:
        console.print(
            f"  the same SVG for {', '.join(escape(r) for r in same.rows)}: {', '.join(same.rollout_ids[:4])}",
            highlight=False,
        )
    for rise in report.unchanged_rises[:5]:
        console.print(
            f"  {escape(rise.row_id)}: {rise.mean_first:.2f} → {rise.mean_last:.2f} (steps {rise.first_step}→"
            f"{rise.last_step}), pictures {rise.similarity:.0%} alike: {rise.rollout_ids[0]} / {rise.rollout_ids[1]}",
            highlight=False,
        )
