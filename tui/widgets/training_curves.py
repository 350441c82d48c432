"""The training view's chart: one metric per step at a time, ``m`` cycling through them.

- ``score``: svgagent's local mean score per step beside the platform's own reward and eval reward (the job's
  ``outputMetrics``, core/rft/job_metrics.py), all in 0..1;
- ``loss`` (and any other series the job reports): the platform's curve alone;
- every score component (core/scoring/components.py: SVG found, rendered, requirements, fulfilled, answer length,
  tokens): its mean per step over the step's stored rollouts (core/analysis/step_components.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from svgagent.core.analysis.step_components import PLOTTED, SCORE, StepComponents
from svgagent.core.rft.job_metrics import EVAL_REWARD, LABELS, REWARD, JobCurves
from svgagent.core.serve.training_runs import TrainingStep
from svgagent.tui.widgets.curve_chart import LOCAL_COLOUR, PLATFORM_COLOURS, ChartLine, CurveChart

_COMPONENTS = {c.key: c for c in PLOTTED}
PLATFORM_PREFIX = "platform:"


class TrainingCurves(CurveChart):
    """See the module docstring. ``set_data`` with what the view read; ``cycle`` to the next metric."""

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id, empty="no scores yet")
        self.metric = SCORE.key
        self.steps: tuple[TrainingStep, ...] = ()
        self.components: Mapping[str, StepComponents] = {}
        self.curves = JobCurves()

    def choices(self) -> list[str]:
        """The metrics there is something to draw for, ``score`` first."""
        platform = [f"{PLATFORM_PREFIX}{n}" for n in self.curves.names() if n not in (REWARD, EVAL_REWARD)]
        return [SCORE.key, *platform, *(c.key for c in PLOTTED[1:])]

    def label(self) -> str:
        if self.metric.startswith(PLATFORM_PREFIX):
            name = self.metric[len(PLATFORM_PREFIX) :]
            return f"platform {LABELS.get(name, name)}"
        return _COMPONENTS[self.metric].label

    def set_data(
        self, steps: Sequence[TrainingStep], components: Mapping[str, StepComponents], curves: JobCurves
    ) -> None:
        self.steps, self.components, self.curves = tuple(steps), dict(components), curves
        if self.metric not in self.choices():
            self.metric = SCORE.key
        self._draw()

    def cycle(self) -> str:
        """Show the next metric; its label."""
        choices = self.choices()
        self.metric = choices[(choices.index(self.metric) + 1) % len(choices)] if self.metric in choices else SCORE.key
        self._draw()
        return self.label()

    def _local(self, key: str) -> tuple[tuple[int, float], ...]:
        points = []
        for step in self.steps:
            found = self.components.get(step.run_id)
            value = found.means.get(key) if found is not None else None
            if key == SCORE.key:
                value = step.mean_local  # the view's own mean: the locally judged rollouts of the step
            if value is not None:
                points.append((step.step, float(value)))
        return tuple(points)

    def _draw(self) -> None:
        if self.metric == SCORE.key:
            lines = [ChartLine("local mean", self._local(SCORE.key), LOCAL_COLOUR)]
            for name in (REWARD, EVAL_REWARD):
                points = self.curves.series.get(name, ())
                lines.append(ChartLine(f"platform {LABELS[name]}", points, PLATFORM_COLOURS[name]))
            self.show(
                lines,
                title="score per step: local mean"
                + (" · the platform's reward" if self.curves.series.get(REWARD) else ""),
                share=True,
                empty="no scores yet: local ones need `serve --judge`; the platform's come with the job's metrics",
            )
            return
        if self.metric.startswith(PLATFORM_PREFIX):
            name = self.metric[len(PLATFORM_PREFIX) :]
            colour = PLATFORM_COLOURS.get(name, "red")
            self.show(
                [ChartLine(self.label(), self.curves.series.get(name, ()), colour)],
                title=f"{self.label()} per step",
                empty="the job reports no such curve",
            )
            return
        component = _COMPONENTS[self.metric]
        self.show(
            [ChartLine(f"local {component.label}", self._local(component.key), LOCAL_COLOUR)],
            title=f"{component.label} per step (mean of the step's rollouts)",
            share=component.share,
            empty=f"no {component.label} yet",
        )
