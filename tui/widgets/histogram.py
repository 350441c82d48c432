"""A score histogram drawn with block characters: bins across, bars up, an optional highlighted bin.

The dashboard shows a compact one (one line when narrow, a few when wide) under the rollout table; the stats
screen a tall one whose bin moves with ←/→. Drawing is a pure function (:func:`histogram_text`) so tests read it.
A bin maps to a filter of the query language (:func:`bin_query`), which selects exactly the rollouts the bin
counts: valid scores in ``[lo, hi)`` (the last bin includes 1.0), the same rule as ``core.stats.histogram_counts``.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence

from rich.style import Style
from rich.text import Text
from textual.widget import Widget

from svgagent.tui.widgets.screen_text import escaped, shown_line

# svgagent.core.analysis.stats (≈10 ms of CPU to import: its report dataclasses) and statistics are imported at the first
# scores drawn: the dashboard's first frame, with no run open, has none.

# One eighth of a cell each, bottom up: a bar's top is drawn to 1/8 of a line.
_RISING = (" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█")


def _edge(value: float) -> str:
    return f"{round(value, 6):g}"


def bin_query(index: int, bins: int, lo: float = 0.0, hi: float = 1.0) -> str:
    """The filter that selects the rollouts of bin ``index`` (0-based) of ``bins``: ``valid score>=0.3 score<0.4``;
    the last bin ends with ``score<=1``."""
    from svgagent.core.analysis.stats import bin_edges

    edges = bin_edges(bins, lo, hi)
    upper = f"score<={_edge(edges[index + 1])}" if index == bins - 1 else f"score<{_edge(edges[index + 1])}"
    return f"valid score>={_edge(edges[index])} {upper}"


_BIN_QUERY = re.compile(r"^valid score>=([0-9.]+) score(<=?)([0-9.]+)$")


def bin_of_query(text: str, bins: int) -> int | None:
    """The bin index whose :func:`bin_query` is ``text``, or None (any other filter)."""
    match = _BIN_QUERY.match(text.strip())
    if not match:
        return None
    for index in range(bins):
        if bin_query(index, bins) == text.strip():
            return index
    return None


def _label_digits(bins: int) -> int:
    return 1 if bins <= 10 else 2


def histogram_text(
    counts: Sequence[int],
    width: int,
    height: int,
    *,
    selected: int | None = None,
    lo: float = 0.0,
    hi: float = 1.0,
    max_cell: int = 6,
    show_counts: bool = False,
    caption: Sequence[Text] = (),
    bar_style: Style | str = "",
    selected_style: Style | str = "reverse",
    axis_style: Style | str = "dim",
) -> Text:
    """The histogram as ``height`` lines of at most ``width`` cells.

    ``height == 1``: a one-line strip ``0 ▁▂▅█▃▁ 1`` followed by ``caption[0]``. Taller: bar lines (plus a line of
    counts on top with ``show_counts``) and an axis line of bin edges; caption lines go to the right of the bars,
    top down. Each bin is a column up to ``max_cell`` cells wide; bars are scaled to the fullest bin."""
    bins = len(counts)
    lines: list[Text] = []
    biggest = max(counts) if counts else 0
    if height <= 1:
        caption = [Text(" · ", style=axis_style).join(caption)] if caption else []
        room = max(bins, width - 4 - (caption[0].cell_len + 2 if caption else 0))
        cell = max(1, min(max_cell, room // max(bins, 1)))
        line = Text("0 ", style=axis_style)
        line.append_text(_strip(counts, biggest, cell, 1, 0, selected, bar_style, selected_style))
        line.append(f" {_edge(hi)}", style=axis_style)
        if caption:
            line.append("  ")
            line.append_text(caption[0])
        line.truncate(width)
        return line
    caption_width = max((c.cell_len for c in caption), default=0)
    room = width - (caption_width + 2 if caption else 0)
    cell = max(1, min(max_cell, room // max(bins, 1)))
    bar_rows = max(1, height - 1 - (1 if show_counts else 0))
    if show_counts:
        row = Text()
        for i, count in enumerate(counts):
            style = selected_style if i == selected else axis_style
            row.append(_centre(str(count), cell), style=style)
        lines.append(row)
    for r in range(bar_rows):
        lines.append(_strip(counts, biggest, cell, bar_rows, bar_rows - 1 - r, selected, bar_style, selected_style))
    lines.append(_axis(bins, cell, lo, hi, selected, axis_style, selected_style))
    out = Text()
    for i, line in enumerate(lines[:height]):
        if caption and i < len(caption):
            line.append(" " * max(0, bins * cell - line.cell_len + 2))
            line.append_text(caption[i])
        line.truncate(width)
        if i:
            out.append("\n")
        out.append_text(line)
    return out


def _centre(text: str, cell: int) -> str:
    if len(text) > cell:
        return (text[: cell - 1] + "+") if cell > 1 else "+"
    return text.center(cell)


def _strip(
    counts: Sequence[int],
    biggest: int,
    cell: int,
    rows: int,
    level: int,
    selected: int | None,
    bar_style: Style | str,
    selected_style: Style | str,
) -> Text:
    """Line ``level`` (0: bottom) of the bars."""
    text = Text()
    for i, count in enumerate(counts):
        eighths = 0
        if biggest > 0 and count > 0:
            eighths = max(1, round(count / biggest * rows * 8))  # a non-zero count is never invisible
        filled = min(8, max(0, eighths - level * 8))
        glyph = _RISING[filled]
        chars = glyph * (cell - 1) + " " if cell >= 3 else glyph * cell  # a gap between wide bars
        text.append(chars, style=selected_style if i == selected else bar_style)
    return text


def _label_style(style: Style | str) -> Style:
    """The selected bin's label: its style, reversed, so the choice shows without colour too."""
    return (Style.parse(style) if isinstance(style, str) else style) + Style(reverse=True)


def _axis(
    bins: int,
    cell: int,
    lo: float,
    hi: float,
    selected: int | None,
    axis_style: Style | str,
    selected_style: Style | str,
) -> Text:
    from svgagent.core.analysis.stats import bin_edges

    edges = bin_edges(bins, lo, hi)
    digits = _label_digits(bins)
    labels = [f"{edges[i]:.{digits}f}" for i in range(bins)]
    text = Text()
    if cell >= max(len(s) for s in labels) + 1:
        for i, label in enumerate(labels):
            if i == selected:
                text.append(label, style=_label_style(selected_style))
                text.append(" " * (cell - len(label)), style=axis_style)
            else:
                text.append(label.ljust(cell), style=axis_style)
        return text
    total = bins * cell
    left, right = _edge(lo), _edge(hi)
    middle = _edge((lo + hi) / 2)
    line = [" "] * total
    for pos, label in ((0, left), (total // 2 - len(middle) // 2, middle), (total - len(right), right)):
        for k, ch in enumerate(label):
            if 0 <= pos + k < total:
                line[pos + k] = ch
    text.append("".join(line), style=axis_style)
    if selected is not None:
        text.stylize(_label_style(selected_style), selected * cell, selected * cell + max(1, cell - 1))
    return text


class Histogram(Widget):
    """Shows :func:`histogram_text` for the counts it was given, sized to the widget; ``selected`` highlights a
    bin. ``compact``: no count line (the dashboard's); otherwise counts are drawn above the bars."""

    COMPONENT_CLASSES = {"histogram--bar", "histogram--selected", "histogram--axis"}
    DEFAULT_CSS = """
    Histogram { height: 8; }
    Histogram > .histogram--bar { color: $primary-lighten-1; }
    Histogram > .histogram--selected { color: $warning; text-style: bold; }
    Histogram > .histogram--axis { color: $text-muted; }
    """

    def __init__(
        self, *, compact: bool = False, max_cell: int = 6, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(id=id, classes=classes)
        self.compact = compact
        self.max_cell = max_cell
        self.counts: tuple[int, ...] = ()
        self.selected: int | None = None
        self.caption: tuple[Text, ...] = ()
        if compact:
            self.display = False  # until there are scores to count

    @property
    def bins(self) -> int:
        return len(self.counts)

    def show(self, counts: Sequence[int], *, selected: int | None = None, caption: Sequence[Text | str] = ()) -> None:
        """Draw ``counts`` (repaints only when something changed: the dashboard calls this on every update).
        A compact histogram is hidden while there are no counts."""
        new_counts = tuple(counts)
        new_caption = tuple(shown_line(c) if isinstance(c, str) else escaped(c, one_line=True) for c in caption)
        if (new_counts, selected, [c.plain for c in new_caption]) == (
            self.counts,
            self.selected,
            [c.plain for c in self.caption],
        ):
            return
        self.counts, self.selected, self.caption = new_counts, selected, new_caption
        if self.compact:
            self.display = bool(new_counts)  # the dashboard's: no line at all before there are scores
        self.refresh()

    def show_scores(
        self, scores: Iterable[float], bins: int, *, selected: int | None = None, caption: Sequence[Text | str] = ()
    ) -> None:
        from svgagent.core.analysis.stats import histogram_counts

        self.show(histogram_counts(scores, bins), selected=selected, caption=caption)

    def render(self) -> Text:
        if not self.counts:
            return Text(
                "" if self.compact else "no valid scores yet", style=self.get_component_rich_style("histogram--axis")
            )
        return histogram_text(
            self.counts,
            self.content_size.width,
            self.content_size.height,
            selected=self.selected,
            max_cell=self.max_cell,
            show_counts=not self.compact and self.content_size.height >= 4,
            caption=self.caption,
            bar_style=self.get_component_rich_style("histogram--bar"),
            selected_style=self.get_component_rich_style("histogram--selected"),
            axis_style=self.get_component_rich_style("histogram--axis"),
        )

    def show_sorted(self, scores: Sequence[float], *, bins: int = 10, filter_text: str = "") -> None:
        """The dashboard's use: the distribution of a run's valid scores (sorted, as ``RunTally`` keeps them), the
        bin a stats-screen filter chose highlighted, and a caption with the median and the keys (one line when the
        widget is one line high). Counted per distinct score: a 10,000-rollout run has a few dozen."""
        if not scores:
            self.show((), caption=())
            return
        import statistics

        from svgagent.core.analysis.stats import histogram_counts

        median = statistics.median(scores)  # sorted already: linear
        counts = [0] * bins
        for score, same in itertools.groupby(scores):
            counts[histogram_counts([score], bins).index(1)] += sum(1 for _ in same)
        caption = [
            Text("scores", style="bold"),
            Text(f"n {len(scores)} · median {median:.2f}"),
            Text("i stats · x export", style="dim"),
        ]
        self.show(counts, selected=bin_of_query(filter_text, bins), caption=caption)
