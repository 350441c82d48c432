"""Evaluator health as one line on a screen: the warnings of :mod:`svgagent.core.analysis.health` (or that there
are none), checked in a thread worker whenever the screen says its steps changed. The tracker it keeps reads
again only the rollouts that changed since, so a served training run can be checked on every refresh."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from rich.text import Text
from textual import work
from textual.widgets import Static

from svgagent.core.analysis.health import HealthReport, HealthTracker, StepRef
from svgagent.core.store.run_store import Store

SHORT = {
    "flat_groups": "no learning signal",
    "invalid_scores": "invalid scores",
    "same_svg": "same SVG for different prompts",
    "text_suspects": "reward-hacking suspects",
    "unchanged_rise": "score up, picture unchanged",
}


def summary_text(report: HealthReport | None, key: str = "w") -> Text:
    """One line: each warning's short name and its steps, or that all is well."""
    if report is None or not report.judged:
        return Text("evaluator health: no scored rollouts yet", style="dim")
    if report.ok:
        return Text("evaluator health: no warning", style="green")
    parts = []
    for w in report.warnings:
        count = f" {len(w.rollout_ids)}" if w.check == "text_suspects" else ""
        steps = f" (step{'s' if len(w.steps) > 1 else ''} {','.join(str(s) for s in w.steps[:4])}" + (
            "…)" if len(w.steps) > 4 else ")"
        )
        parts.append(f"{SHORT.get(w.check, w.check)}{count}{steps if w.steps else ''}")
    return Text.assemble(("⚠ ", "bold yellow"), ("; ".join(parts), "yellow"), (f" · {key}: details", "dim"))


class HealthSummary(Static):
    DEFAULT_CSS = """
    HealthSummary { height: 1; padding: 0 1; }
    """

    def __init__(self, store: Store, *, key: str = "w", id: str | None = None) -> None:
        super().__init__(summary_text(None, key), id=id)
        self.store = store
        self.key = key
        self.report: HealthReport | None = None
        self._tracker = HealthTracker()
        self._lock = threading.Lock()  # one update of the tracker at a time (a newer worker may start meanwhile)

    def check(self, steps: Sequence[StepRef]) -> None:
        """Check ``steps`` again (in a thread); the line changes when the report does."""
        self._check(list(steps))

    @work(thread=True, exclusive=True, group="health-check", exit_on_error=False)
    def _check(self, steps: list[StepRef]) -> None:
        with self._lock, self.store.reader() as reader:
            report = self._tracker.update(reader, steps)
        self.app.call_from_thread(self._show, report)

    def _show(self, report: HealthReport) -> None:
        if report == self.report:
            return
        self.report = report
        self.update(summary_text(report, self.key))
