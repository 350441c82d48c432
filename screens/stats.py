"""The stats screen (key ``i`` on the dashboard): the score histogram and summary statistics of the open run.

Mean ± stderr, median, pass rate against the run's threshold, failures by category, score by number of
requirements, token and latency percentiles and — when per-requirement verdicts exist — the requirements most
often failed; all from ``core.stats`` (what ``svgagent runs stats`` prints). ←/→ pick a histogram bin; enter goes
back to the dashboard with the table filtered to that bin's rollouts (the screen is dismissed with the filter).
Below, the judge against your review overrides (``screens.agreement_panel``, what ``svgagent runs agreement``
prints): ``g`` focuses its worst disagreements, enter opens one on the rollout screen.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.events import Resize
from textual.message import Message
from textual.screen import Screen
from textual.widgets import OptionList, Static

from svgagent.core.analysis.agreement import AgreementReport, run_agreement
from svgagent.core.analysis.stats import DEFAULT_BINS, RunStats, bin_edges, run_stats
from svgagent.core.store.run_store import Store
from svgagent.core.store.typed_rows import spread_text
from svgagent.core.terminal_text import visible_line
from svgagent.screens.agreement_panel import agreement_text, disagreement_option
from svgagent.screens.keys_first import AppKeysFirst
from svgagent.tui.widgets.health_summary import HealthSummary
from svgagent.tui.widgets.histogram import Histogram, bin_query
from svgagent.tui.widgets.keys_footer import KeysFooter
from svgagent.tui.widgets.screen_text import shown, shown_line

BIN_CHOICES = (10, 20, 5)
WIDE_FROM = 110
BIN_KEYS = Binding.Group("Bin", compact=True)


def _fmt(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def summary_text(s: RunStats, name: str) -> Text:
    """The headline numbers: counts, mean ± stderr, median, pass rate against the threshold."""
    text = Text()
    text.append(visible_line(name or s.run_id), style="bold")  # a run's name: outside text
    if name and name != s.run_id:
        text.append(f"  {s.run_id}", style="dim")
    text.append(f"\n{s.rollouts} rollouts · {s.terminal} finished: {s.outcomes.text(all_three=True)}")
    if not s.valid:
        text.append("\nno valid scores yet", style="italic")
        return text
    text.append("\nmean ")
    text.append(f"{_fmt(s.mean)}{spread_text(s.stderr)}", style="bold")
    text.append(f" · median {_fmt(s.median)}")
    rate = 100 * (s.pass_rate or 0.0)
    text.append(f"\npass rate (score ≥ {s.threshold:g}) ")
    text.append(f"{rate:.1f}%", style="bold")
    text.append(f" ({s.passed}/{s.valid})")
    return text


def bin_text(s: RunStats, index: int) -> Text:
    edges = bin_edges(s.bins)
    count = s.histogram[index]
    share = f"{100 * count / s.valid:.1f}%" if s.valid else "–"
    digits = 1 if s.bins <= 10 else 2
    closing = "]" if index == s.bins - 1 else ")"
    text = Text()
    text.append(f"bin [{edges[index]:.{digits}f}, {edges[index + 1]:.{digits}f}{closing}: ", style="bold")
    text.append(f"{count} rollouts ({share})")
    text.append(" · enter: filter the table", style="dim")
    return text


def _table(*headers: str, title: str) -> Table:
    table = Table(
        *headers,
        title=title,
        title_justify="left",
        title_style="bold",
        box=None,
        pad_edge=False,
        header_style="bold dim",
        expand=False,
    )
    for column in table.columns[1:]:
        column.justify = "right"
    return table


def detail_tables(s: RunStats) -> list[RenderableType]:
    """Failures by category, score by number of requirements, percentiles, requirements most often failed."""
    parts: list[RenderableType] = []
    failures = _table("failure", "count", title="Failures by reason")
    for category, count in s.failures.items():
        failures.add_row(category, str(count), style="" if count else "dim")
    failures.add_row("total", str(sum(s.failures.values())), style="bold")
    parts += [failures, Text("")]
    if s.by_requirement_count:
        groups = _table("requirements", "n", "mean", "± stderr", title="Score by number of requirements")
        for g in s.by_requirement_count:
            groups.add_row(str(g.key), str(g.n), _fmt(g.mean), _fmt(g.stderr))
        parts += [groups, Text("")]
    pct = _table("", "n", "p50", "p90", "p99", title="Latency (s) and tokens")
    labels = {"generation_s": "generation", "render_s": "render", "judge_s": "judge", "tokens": "tokens"}
    for key, p in s.percentiles.items():
        digits = 0 if key == "tokens" else 2
        pct.add_row(labels.get(key, key), str(p.n), _fmt(p.p50, digits), _fmt(p.p90, digits), _fmt(p.p99, digits))
    parts += [pct, Text("")]
    report = s.requirements
    if report.most_failed:
        reqs = Table(
            "row",
            "#",
            "failed",
            "requirement",
            box=None,
            pad_edge=False,
            header_style="bold dim",
            title="Requirements most often failed",
            title_justify="left",
            title_style="bold",
            caption=f"{report.rollouts_with_verdicts} rollouts with verdicts, {report.from_overrides} of "
            "them from your review",
            caption_justify="left",
            caption_style="dim",
            expand=True,
        )
        reqs.columns[0].no_wrap = True
        reqs.columns[0].max_width = 12
        reqs.columns[0].overflow = "ellipsis"
        reqs.columns[2].justify = "right"
        for r in report.most_failed:
            reqs.add_row(shown_line(r.row_id), str(r.index), f"{r.failed}/{r.judged}", shown(r.text))
        parts.append(reqs)
    else:
        parts.append(
            Text(
                "Requirements most often failed: no per-requirement verdicts (judge mode per-requirement, "
                "or your ✓/✗ in review, provide them)",
                style="dim italic",
            )
        )
    if report.count_only_overrides:
        n = report.count_only_overrides
        parts.append(
            Text(
                f"{n} rollout{'s' if n != 1 else ''} overridden with a count only {'are' if n != 1 else 'is'} left out",
                style="dim",
            )
        )
    return parts


class StatsScreen(AppKeysFirst, Screen[str | None]):
    """Statistics of ``run_id``; dismissed with the filter of the chosen bin (enter) or None (escape)."""

    SCOPED_CSS = False
    DEFAULT_CSS = """
    StatsScreen #stats-body { padding: 0 1; }
    StatsScreen #stats-left { height: auto; margin-bottom: 1; }
    StatsScreen #stats-summary { height: auto; margin-bottom: 1; }
    StatsScreen #stats-hist { height: 9; }
    StatsScreen #stats-bin { height: auto; }
    StatsScreen #stats-tables { height: auto; }
    StatsScreen #stats-agreement { height: auto; margin-top: 1; }
    StatsScreen #stats-disagreements { height: auto; max-height: 12; border: none; }
    StatsScreen #stats-disagreements.-empty { display: none; }
    StatsScreen.-wide #stats-body { layout: horizontal; }
    StatsScreen.-wide #stats-left { width: 64; margin-right: 2; }
    StatsScreen.-wide #stats-hist { height: 14; }
    StatsScreen.-wide #stats-tables { width: 1fr; }
    """

    BINDINGS = [
        Binding("escape,q", "close", "Back", id="stats.back"),
        Binding("left,h", "bin(-1)", "Previous bin", key_display="←", id="stats.bin_prev", group=BIN_KEYS),
        Binding("right,l", "bin(1)", "Next bin", key_display="→", id="stats.bin_next", group=BIN_KEYS),
        Binding(
            "enter",
            "filter_bin",
            "Show bin",
            id="stats.filter",
            tooltip="Back to the rollout table, filtered to this bin's rollouts",
        ),
        Binding("b", "cycle_bins", "Bins", id="stats.bins", tooltip="Histogram bins: 10, 20 or 5"),
        Binding(
            "g",
            "disagreements",
            "Disagreements",
            id="stats.disagreements",
            tooltip="The judge's worst disagreements with your review: enter opens one",
        ),
        Binding("j,down", "scroll(1)", "Down", show=False, id="stats.down"),
        Binding("k,up", "scroll(-1)", "Up", show=False, id="stats.up"),
    ]

    class Ready(Message):
        def __init__(self, stats: RunStats | None, error: str = "", agreement: AgreementReport | None = None) -> None:
            super().__init__()
            self.stats, self.error, self.agreement = stats, error, agreement

    def __init__(self, store: Store, run_id: str, *, name: str = "") -> None:
        super().__init__()
        self.store = store
        self.run_id = run_id
        self.run_name = name
        self.bins = DEFAULT_BINS
        self.stats: RunStats | None = None
        self.selected = 0
        self._first = True
        self.changed: set[str] = set()  # rollouts whose override changed here (the dashboard reads them again)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="stats-body"):
            with Vertical(id="stats-left"):
                yield Static(Text("computing…", style="dim italic"), id="stats-summary")
                yield HealthSummary(self.store, key="", full=True, id="stats-health")
                yield Histogram(id="stats-hist")
                yield Static(id="stats-bin")
                yield Static(id="stats-agreement")
                yield OptionList(id="stats-disagreements", classes="-empty")
            yield Static(id="stats-tables")
        yield KeysFooter()

    def on_mount(self) -> None:
        self._layout(self.app.size.width)
        self.query_one("#stats-body").focus()
        self._compute(self.bins)
        self.query_one(HealthSummary).check_run(self.run_id)

    def on_resize(self, event: Resize) -> None:
        self._layout(event.size.width)

    def _layout(self, width: int) -> None:
        self.set_class(width >= WIDE_FROM, "-wide")

    @work(thread=True, exclusive=True, group="stats", exit_on_error=False)
    def _compute(self, bins: int) -> None:
        try:
            stats = run_stats(self.store, self.run_id, bins=bins)
            agreement = run_agreement(self.store, self.run_id)
        except Exception as err:  # noqa: BLE001 - shown on the screen
            self.post_message(self.Ready(None, f"{type(err).__name__}: {err}"))
            return
        self.post_message(self.Ready(stats, agreement=agreement))

    def on_stats_screen_ready(self, message: Ready) -> None:
        if message.stats is None:
            self.query_one("#stats-summary", Static).update(shown(message.error, style="red"))
            return
        s = self.stats = message.stats
        self.bins = s.bins
        if not s.valid:
            self.selected = 0
        elif self._first or self.selected >= s.bins:
            self.selected = max(range(s.bins), key=lambda i: (s.histogram[i], -i))  # the fullest bin
        self._first = False
        self.query_one("#stats-summary", Static).update(summary_text(s, self.run_name))
        self.query_one("#stats-tables", Static).update(Group(*detail_tables(s)))
        if message.agreement is not None:
            self._show_agreement(message.agreement)
        self._show_bin()

    def _show_agreement(self, agreement: AgreementReport) -> None:
        self.query_one("#stats-agreement", Static).update(agreement_text(agreement))
        options = self.query_one("#stats-disagreements", OptionList)
        highlighted = options.highlighted
        options.clear_options()
        options.add_options([disagreement_option(d) for d in agreement.worst])
        options.set_class(not agreement.worst, "-empty")
        if agreement.worst:
            options.highlighted = min(highlighted or 0, len(agreement.worst) - 1)

    def _show_bin(self) -> None:
        s = self.stats
        if s is None:
            return
        self.query_one(Histogram).show(s.histogram, selected=self.selected if s.valid else None)
        self.query_one("#stats-bin", Static).update(bin_text(s, self.selected) if s.valid else "")

    # --- actions ------------------------------------------------------------------------------------------
    def action_bin(self, step: int) -> None:
        if self.stats is None or not self.stats.valid:
            return
        self.selected = max(0, min(self.stats.bins - 1, self.selected + step))
        self._show_bin()

    def action_cycle_bins(self) -> None:
        following = (
            BIN_CHOICES[(BIN_CHOICES.index(self.bins) + 1) % len(BIN_CHOICES)]
            if self.bins in BIN_CHOICES
            else DEFAULT_BINS
        )
        if self.stats is not None:  # keep the selection at about the same score
            self.selected = min(following - 1, int(self.selected * following / self.stats.bins))
        self._compute(following)

    def selected_query(self) -> str | None:
        if self.stats is None or not self.stats.valid:
            return None
        return bin_query(self.selected, self.stats.bins)

    def action_filter_bin(self) -> None:
        query = self.selected_query()
        if query is None:
            self.notify("no valid scores to filter by", severity="warning")
            return
        self.dismiss(query)

    def action_disagreements(self) -> None:
        options = self.query_one("#stats-disagreements", OptionList)
        if not options.option_count:
            self.notify("no disagreements with your review in this run", severity="warning")
            return
        options.focus()
        options.scroll_visible()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        rollout_id = event.option.id
        if not rollout_id:
            return
        from svgagent.screens.rollout_detail import RolloutDetail

        def closed(changed: bool | None) -> None:
            if changed:  # your override changed: the numbers, and maybe the list, too
                self.changed.add(rollout_id)
                self._compute(self.bins)

        self.app.push_screen(RolloutDetail(self.store, rollout_id), closed)

    def action_scroll(self, step: int) -> None:
        self.query_one("#stats-body", VerticalScroll).scroll_relative(y=step, animate=False)

    def action_close(self) -> None:
        self.dismiss(None)
