"""Evaluator health on a screen, as one line (or every warning in full): the warnings of :mod:`svgagent.core.analysis.health` (or that there
are none), checked in a thread worker whenever the screen says its steps changed. The tracker it keeps reads
again only the rollouts that changed since, so a served training run can be checked on every refresh."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from rich.text import Text
from textual import work
from textual.widgets import Static

from svgagent.core.analysis.health import HealthReport, HealthTracker, StepRef
from svgagent.core.serve.training_runs import TrainingStore
from svgagent.core.store.run_store import Store
from svgagent.core.terminal_text import cells, clipped

SHORT = {
    "flat_groups": "no learning signal",
    "invalid_scores": "invalid scores",
    "same_svg": "same SVG for different prompts",
    "text_suspects": "reward-hacking suspects",
    "unchanged_rise": "score up, picture unchanged",
}


def summary_text(report: HealthReport | None, key: str = "w", width: int | None = None) -> Text:
    """One line: each warning's short name and its steps, or that all is well. ``width``: the line's room — the
    warnings are cut (with …, between words) before the key that shows them in full is."""
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
    tail = f" · {key}: details" if key else ""
    warnings = "; ".join(parts)
    if width is not None:
        warnings = clipped(warnings, max(1, width - 2 - cells(tail)), words=True)
    return Text.assemble(("⚠ ", "bold yellow"), (warnings, "yellow"), (tail, "dim"))


def full_text(report: HealthReport | None) -> Text:
    """Every warning's whole message, one per line (or the line of :func:`summary_text` when there is none)."""
    if report is None or not report.judged or report.ok:
        return summary_text(report, "")
    return Text("\n").join(Text.assemble(("⚠ ", "bold yellow"), (w.message, "yellow")) for w in report.warnings)


class HealthSummary(Static):
    DEFAULT_CSS = """
    HealthSummary { height: 1; padding: 0 1; }
    HealthSummary.-full { height: auto; padding: 0; margin-top: 1; }
    """

    def __init__(self, store: Store, *, key: str = "w", full: bool = False, id: str | None = None) -> None:
        """``key``: the key that shows the details (named on the line); ``full``: every warning's whole message."""
        super().__init__(summary_text(None, key), id=id, classes="-full" if full else None)
        self.store = store
        self.key = key
        self.full = full
        self.report: HealthReport | None = None
        self._tracker = HealthTracker()
        self._lock = threading.Lock()  # one update of the tracker at a time (a newer worker may start meanwhile)

    def check(self, steps: Sequence[StepRef]) -> None:
        """Check ``steps`` again (in a thread); the line changes when the report does."""
        self._check(list(steps), None)

    def check_run(self, run_id: str) -> None:
        """Check the run's training (all its steps) when it is a step of one, else the run alone (in a thread)."""
        self._check(None, run_id)

    @work(thread=True, exclusive=True, group="health-check", exit_on_error=False)
    def _check(self, steps: list[StepRef] | None, run_id: str | None) -> None:
        with self._lock, self.store.reader() as reader:
            if steps is None and run_id is not None:
                steps, _ = TrainingStore(reader).health_steps(run_id)
            report = self._tracker.update(reader, steps or [])
        self.app.call_from_thread(self._show, report)

    def _show(self, report: HealthReport) -> None:
        if report == self.report:
            return
        self.report = report
        self._draw()

    def _draw(self) -> None:
        width = self.content_size.width or None  # not laid out yet: the next resize draws it to its width
        self.update(full_text(self.report) if self.full else summary_text(self.report, self.key, width))

    def on_resize(self) -> None:
        if self.report is not None and not self.full:
            self._draw()
