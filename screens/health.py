"""Evaluator health in full (``w`` in the training view): each warning with its message, the rollouts behind it —
reward-hacking suspects, the same SVG for different prompts, pictures whose score rose while they stayed the same —
and the highlighted rollout's picture beside the list; ``enter`` opens it on the rollout screen. Below, per step:
finished rollouts, invalid scores and groups whose samples all scored alike."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from svgagent.core.analysis.health import HealthReport
from svgagent.core.store.run_store import Store
from svgagent.screens.keys_first import AppKeysFirst
from svgagent.tui.widgets.keys_footer import KeysFooter
from svgagent.tui.widgets.picture import Picture, PictureShown
from svgagent.tui.widgets.screen_text import shown, shown_line


def finding_options(report: HealthReport) -> list[Option]:
    """A heading per warning (not selectable), then one option per rollout behind it (its id is the option's)."""
    options: list[Option] = []
    seen: set[str] = set()

    def rollout(rollout_id: str, text: str) -> None:
        key = rollout_id if rollout_id not in seen else f"{rollout_id}#{len(options)}"
        seen.add(rollout_id)
        options.append(Option(shown_line(f"  {text}"), id=key))

    for n, warning in enumerate(report.warnings):
        options.append(Option(Text.assemble(("⚠ ", "bold yellow"), shown(warning.message, "bold")), disabled=True))
        if warning.check == "text_suspects":
            for s in report.text_suspects:
                score = "–" if s.score is None else f"{s.score:.2f}"
                rollout(s.rollout_id, f"step {s.step} · {s.row_id} · {score} · {s.why}")
        elif warning.check == "same_svg":
            for same in report.same_svg:
                for rid in same.rollout_ids:
                    rollout(rid, f"{rid} · one SVG for {', '.join(same.rows[:3])}")
        elif warning.check == "unchanged_rise":
            for r in report.unchanged_rises:
                rollout(r.rollout_ids[0], f"{r.row_id} · step {r.first_step}: {r.mean_first:.2f}")
                rollout(
                    r.rollout_ids[1], f"{r.row_id} · step {r.last_step}: {r.mean_last:.2f} ({r.similarity:.0%} alike)"
                )
        if n < len(report.warnings) - 1:
            options.append(Option("", disabled=True))
    return options


def steps_table(report: HealthReport) -> Table:
    table = Table("step", "finished", "invalid", "groups", "all alike", box=None, padding=(0, 1))
    for s in report.steps:
        share = "–" if s.flat_share is None else f"{s.flat_groups} ({s.flat_share:.0%})"
        table.add_row(str(s.step), str(s.finished), str(s.invalid), str(s.groups), share)
    return table


class HealthScreen(AppKeysFirst, Screen[None]):
    SCOPED_CSS = False
    DEFAULT_CSS = """
    HealthScreen #health-header { height: auto; padding: 0 1; background: $panel; }
    HealthScreen #health-body { height: 1fr; }
    HealthScreen #health-left { width: 1fr; height: 1fr; }
    HealthScreen #health-findings { height: 1fr; border: none; }
    HealthScreen #health-steps { height: auto; max-height: 10; }
    HealthScreen #health-side { width: 45%; height: 1fr; padding: 0 1; }
    HealthScreen #health-caption { height: auto; color: $text-muted; }
    """
    BINDINGS = [
        Binding("escape,q", "close", "Back", id="health.back"),
        Binding("enter", "open", "Open", id="health.open", tooltip="Open the highlighted rollout"),
    ]

    def __init__(self, store: Store, report: HealthReport, *, title: str = "") -> None:
        super().__init__()
        self.store = store
        self.report = report
        self.title_text = title

    def compose(self) -> ComposeResult:
        yield Static(id="health-header")
        with Horizontal(id="health-body"):
            with Vertical(id="health-left"):
                yield OptionList(*finding_options(self.report), id="health-findings")
                with VerticalScroll(id="health-steps"):
                    yield Static(steps_table(self.report))
            with Vertical(id="health-side"):
                yield Static("", id="health-caption", markup=False)
                yield Picture(self.store, id="health-picture", on_shown=self._shown)
        yield KeysFooter()

    def on_mount(self) -> None:
        report = self.report
        count = len(report.warnings)
        state = "no warning" if report.ok else f"{count} warning{'s' if count > 1 else ''}"
        self.query_one("#health-header", Static).update(
            Text.assemble(
                shown_line(f"Evaluator health · {self.title_text}" if self.title_text else "Evaluator health"),
                f" · {len(report.steps)} steps · {state}",
            )
        )
        findings = self.query_one("#health-findings", OptionList)
        findings.focus()
        first = next((i for i, o in enumerate(findings.options) if not o.disabled), None)
        if first is not None:
            findings.highlighted = first

    def on_resize(self) -> None:
        side = self.query_one("#health-side")
        self.query_one("#health-picture", Picture).fit(side.size.width - 2, side.size.height - 2)

    def highlighted_rollout(self) -> str | None:
        findings = self.query_one("#health-findings", OptionList)
        if findings.highlighted is None:
            return None
        option = findings.get_option_at_index(findings.highlighted)
        return option.id.split("#", 1)[0] if option.id and not option.disabled else None

    @on(OptionList.OptionHighlighted, "#health-findings")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        rollout_id = self.highlighted_rollout()
        picture = self.query_one("#health-picture", Picture)
        if rollout_id is None:
            picture.show(None)
            self.query_one("#health-caption", Static).update("")
        else:
            picture.show(rollout_id)

    def _shown(self, event: PictureShown) -> None:
        record = event.record
        if record is None:
            return
        score = "–" if record.effective_score is None else f"{record.effective_score:.2f}"
        self.query_one("#health-caption", Static).update(
            shown_line(f"{record.row_id} · score {score} · {' '.join(record.prompt.split())[:80]}")
        )

    @on(OptionList.OptionSelected, "#health-findings")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.action_open()

    def action_open(self) -> None:
        from svgagent.screens.rollout_detail import RolloutDetail

        rollout_id = self.highlighted_rollout()
        if rollout_id is not None:
            self.app.push_screen(RolloutDetail(self.store, rollout_id))

    def action_close(self) -> None:
        self.app.pop_screen()
