"""Pieces of the compare screen: the header text, the cells of a row (one per dataset row; the table that draws
them is ``compare_table.CompareTable``), and one run's side of the highlighted row (its picture as half blocks,
score and rationale), decoded in a thread worker."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Static

from svgagent.core.analysis.compare import Comparison, RowComparison, RowScores
from svgagent.core.store.run_store import Store
from svgagent.core.store.typed_rows import spread_text
from svgagent.core.terminal_text import clipped, one_line, visible, visible_line
from svgagent.tui.widgets.picture import Picture
from svgagent.tui.widgets.rollout_info import verdict_text
from svgagent.tui.widgets.screen_text import shown

DASH = "–"
UNPAIRED = {"only_a": "only A", "only_b": "only B", "unscored": DASH}


def fmt(value: float | None, digits: int = 3, *, sign: bool = False) -> str:
    if value is None:
        return DASH
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


def row_key(row: RowComparison) -> str:
    """A key that names the same dataset row across recomputations (row id and prompt, see core.compare)."""
    return f"{row.row_id}\x1f{row.prompt}"


def _run_label(run_id: str, name: str) -> str:
    return visible_line(run_id if name in ("", run_id) else f"{name} ({run_id})")  # a run's name: outside text


def header_text(c: Comparison, view: str = "") -> Text:
    """The comparison's headline: both means, the paired difference with its standard error, wins/losses/ties
    and the rows only one run has; ``view`` (what the table shows) on the last line."""
    text = Text()
    for side, run_id, name, mean, stderr in (
        ("A", c.run_a, c.name_a, c.mean_a, c.stderr_a),
        ("B", c.run_b, c.name_b, c.mean_b, c.stderr_b),
    ):
        if side == "B":
            text.append("\n")
        text.append(f" {side} ", style="bold reverse")
        text.append(f" mean {fmt(mean)}{spread_text(stderr)}", style="bold")
        text.append(f"  {_run_label(run_id, name)}", style="dim")
    text.append("\n")
    if c.paired_rows:
        diff_style = (
            "bold green"
            if (c.mean_diff or 0) > c.tie_tolerance
            else "bold red"
            if (c.mean_diff or 0) < -c.tie_tolerance
            else "bold"
        )
        text.append(f"paired rows {c.paired_rows}: B − A = ")
        text.append(f"{fmt(c.mean_diff, sign=True)}{spread_text(c.diff_stderr)}", style=diff_style)
        text.append(f" (A {fmt(c.paired_mean_a)}, B {fmt(c.paired_mean_b)})", style="dim")
    else:
        text.append("no row has a valid score in both runs: nothing to pair", style="italic")
    text.append(" · wins ")
    text.append(str(c.wins), style="bold green")
    text.append(" · losses ")
    text.append(str(c.losses), style="bold red")
    text.append(f" · ties {c.ties} · only in A {c.only_a} · only in B {c.only_b}")
    if c.unscored:
        text.append(f" · unscored in one run {c.unscored}")
    if c.requirements_changed:
        text.append(f" · requirements differ {c.requirements_changed}", style="yellow")
    if view:
        text.append(f"\n{view}", style="italic")
    return text


def _mean(scores: RowScores | None) -> Text:
    """A run's row mean, ``*`` when a person overrode one of its rollouts (as the rollout table marks a score)."""
    mean = scores.mean if scores else None
    return Text(fmt(mean, 2) + ("*" if scores and scores.overridden else ""), justify="right")


def row_cells(row: RowComparison, prompt_width: int) -> tuple[Text, ...]:
    """Cells of one table line: row, A, B (``*``: overridden), Δ, valid samples A/B, prompt."""
    delta = row.delta
    if delta is None:
        shown = Text(UNPAIRED.get(row.outcome, DASH), style="dim", justify="right")
    else:
        style = {"improvement": "green", "regression": "red"}.get(row.outcome, "")
        shown = Text(fmt(delta, sign=True), style=style, justify="right")
    counts = f"{len(row.a.valid_scores) if row.a else DASH}/{len(row.b.valid_scores) if row.b else DASH}"
    prompt = visible_line(row.prompt if row.same_requirements else "≠req " + row.prompt)  # before Text drops BEL
    return (
        Text(visible_line(row.row_id)),
        _mean(row.a),
        _mean(row.b),
        shown,
        Text(counts, justify="right"),
        Text(clipped(one_line(prompt), prompt_width, words=True)),
    )


class CompareSide(Vertical):
    """One run's side of the highlighted row: which sample, its picture, verdict and rationale."""

    DEFAULT_CSS = """
    CompareSide { width: 1fr; height: 100%; border: round $panel-lighten-2; padding: 0 1; }
    CompareSide.-active { border: round $accent; }
    CompareSide > .side-title { height: auto; }
    CompareSide > Horizontal { height: 1fr; }
    CompareSide .side-image { margin-right: 1; }
    CompareSide .side-text { width: 1fr; height: 100%; scrollbar-size-vertical: 1; }
    """

    def __init__(self, store: Store, side: str, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.store = store
        self.side = side
        self.scores: RowScores | None = None
        self.border_title = side
        self.picture = Picture(store, classes="side-image")

    def compose(self) -> ComposeResult:
        yield Static(classes="side-title")
        with Horizontal():
            yield self.picture
            with VerticalScroll(classes="side-text"):
                yield Static(classes="side-info")

    def show(self, scores: RowScores | None, sample: int, *, missing: str = "", reread: bool = False) -> None:
        """Show sample ``sample`` (wrapping around) of this run's rollouts of the row, or ``missing``;
        ``reread``: read the rollout again even if it is the one shown (an override may have changed it)."""
        self.scores = scores
        title = self.query_one(".side-title", Static)
        if scores is None or not scores.rollout_ids:
            title.update(Text(missing or "no rollout", style="dim italic"))
            self.picture.show(None)
            self.query_one(".side-info", Static).update("")
            return
        index = sample % scores.samples
        text = Text()
        text.append(f"row mean {fmt(scores.mean)}", style="bold")
        valid = len(scores.valid_scores)
        text.append(
            f" · {scores.samples} sample{'s' if scores.samples != 1 else ''}"
            + (f", {valid} valid" if valid != scores.samples else ""),
            style="dim",
        )
        if scores.samples > 1:
            text.append(f" · showing {index + 1}/{scores.samples}", style="dim")
        title.update(text)
        self._fit()
        self.picture.show(scores.rollout_ids[index], reread=reread)

    def _fit(self) -> None:
        """The picture as large as the side allows: its height, and at most half its width (the text beside)."""
        lines = max(3, self.query_one(Horizontal).size.height or 8)
        self.picture.fit(max(6, min((self.content_size.width or 30) // 2, lines * 2)), lines)

    @on(Picture.Shown)
    def _shown(self, message: Picture.Shown) -> None:
        message.stop()
        rec = message.record
        info = self.query_one(".side-info", Static)
        if rec is None:
            info.update(shown(message.error, style="red"))
            return
        text = verdict_text(rec)
        text.append("\n")
        if rec.rationale:
            text.append(visible(rec.rationale))
        for extra in (rec.reason if rec.reason and rec.reason != rec.rationale else None, rec.error):
            if extra:
                text.append(f"\n{visible(extra)}", style="red" if rec.error or rec.status.value == "failed" else "dim")
        info.update(text)

    def on_resize(self) -> None:
        self.call_after_refresh(self._fit)
