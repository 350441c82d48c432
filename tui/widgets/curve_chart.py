"""Per-step curves as a terminal chart (textual-plotext, braille lines): the training view's and the Jobs pane's.

``CurveChart.show(lines, title=…, unit=…)`` replaces what it draws; a chart with nothing to draw says ``empty``
instead of drawing bare axes. Labels come from svgagent (fixed names, or metric names the job reader cleaned to
``[a-z0-9_./-]``), never raw outside text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text
from textual.app import RenderResult
from textual_plotext import PlotextPlot

PLATFORM_COLOURS = {"reward": "orange", "eval_reward": "magenta", "loss": "red"}
LOCAL_COLOUR = "cyan"
ROOMY_ROWS = 12  # below this height the chart has no title and no axis label


@dataclass(frozen=True)
class ChartLine:
    label: str
    points: tuple[tuple[int, float], ...]  # (step, value), in step order
    colour: str = LOCAL_COLOUR


class CurveChart(PlotextPlot):
    """Lines over training steps (see the module docstring)."""

    DEFAULT_CSS = """
    CurveChart { width: 1fr; height: 1fr; }
    """

    def __init__(self, *, empty: str = "no curves yet", id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id)
        self.empty = empty
        self.lines: tuple[ChartLine, ...] = ()
        self.title_text = ""
        self.share = False

    def show(
        self, lines: Sequence[ChartLine], *, title: str = "", share: bool = False, empty: str | None = None
    ) -> None:
        """Draw ``lines`` (those without points are left out); ``share``: values are in 0..1 (the y axis too)."""
        drawn = tuple(line for line in lines if line.points)
        if empty is not None:
            self.empty = empty
        if (drawn, title, share) == (self.lines, self.title_text, self.share):
            return
        self.lines, self.title_text, self.share = drawn, title, share
        plt = self.plt
        plt.clear_figure()
        steps = sorted({step for line in drawn for step, _ in line.points})
        for line in drawn:
            xs = [step for step, _ in line.points]
            ys = [value for _, value in line.points]
            if len(xs) == 1:
                plt.scatter(xs, ys, label=line.label, color=line.colour, marker="dot")
            else:
                plt.plot(xs, ys, label=line.label, color=line.colour, marker="braille")
        if steps:
            ticks = steps if len(steps) <= 8 else steps[:: max(1, len(steps) // 6)]
            plt.xticks(ticks)
            plt.xlim(steps[0] - 0.2 if len(steps) == 1 else steps[0], steps[-1] + (0.2 if len(steps) == 1 else 0))
        if share:
            plt.ylim(0, 1)
        self.refresh()

    def render(self) -> RenderResult:
        if not self.lines:
            return Text(self.empty, style="dim")
        roomy = self.size.height >= ROOMY_ROWS  # a short chart keeps its rows for the lines (the hint names it)
        self.plt.title(self.title_text if roomy else "")
        self.plt.xlabel("step" if roomy else "")
        return super().render()
