"""Everything written about one rollout — verdict, requirements ✓/✗, rationale, prompt, error, timings, SVG —
as Rich renderables (pure functions; :func:`info_sections` all of them in order, which the preview draws by line)
and one widget that shows them in widgets of their own (the rollout screen)."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Group, RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical

from svgagent.core.config.prices import Cost, cost_text
from svgagent.core.scoring.models import FailureKind, RolloutStatus
from svgagent.core.store.typed_rows import RolloutRecord
from svgagent.core.terminal_text import visible
from svgagent.tui.widgets.rollout_cells import state_label
from svgagent.tui.widgets.screen_text import shown
from svgagent.tui.widgets.text_box import TextBox

SVG_PREVIEW_LINES = 400


def judge_marks(rec: RolloutRecord) -> dict[int, tuple[bool, str]]:
    """Per-requirement verdicts of the judge, 1-based index → (fulfilled, reason); empty in count mode."""
    marks: dict[int, tuple[bool, str]] = {}
    for item in rec.verdicts or ():
        index, fulfilled, reason = (list(item) + [None, None, ""])[:3]
        if isinstance(index, int):
            marks[index] = (bool(fulfilled), str(reason or ""))
    return marks


def _mark(value: bool | None) -> tuple[str, str]:
    if value is None:
        return "·", "dim"
    return ("✓", "green") if value else ("✗", "red")


NOT_JUDGED = {FailureKind.NO_SVG: "no SVG in the answer", FailureKind.RENDER: "the SVG could not be rendered"}


def not_judged(rec: RolloutRecord) -> str | None:
    """Why the judge never saw ``rec``'s picture (its score is a valid 0 without a verdict), None when it did."""
    return NOT_JUDGED.get(rec.failure_kind)


def verdict_text(rec: RolloutRecord) -> Text:
    """``judge 3/4 = 0.75 · you 2/4 = 0.50*`` or what is missing."""
    text = Text()
    text.append(state_label(rec), style="bold")
    why = not_judged(rec)
    if why is not None:
        if rec.score is not None:
            text.append(f"  score {rec.score:.2f}")
        text.append(f"  the judge did not see it: {why}", style="red")
    elif rec.score is not None:
        text.append(f"  judge {rec.fulfilled if rec.fulfilled is not None else '–'}/{rec.total} = {rec.score:.2f}")
    elif rec.status.terminal:
        text.append("  no valid score", style="red")
    if rec.overridden:
        text.append(f"  you {rec.override_fulfilled}/{rec.total} = {rec.override_score:.2f}*", style="bold yellow")
    if rec.attempt > 1:
        text.append(f"  attempt {rec.attempt}", style="dim")
    return text


def requirements_text(rec: RolloutRecord, human: list[bool] | None = None) -> Text:
    """One line per requirement: the judge's ✓/✗ (per-requirement mode), the human's when overridden."""
    marks = judge_marks(rec)
    human = human if human is not None else rec.override_verdicts
    text = Text()
    if not_judged(rec) is not None:
        text.append(f"not judged: the score is a valid 0 of {rec.total}\n", style="italic")
    elif not marks and rec.fulfilled is not None:
        text.append(f"judge counted {rec.fulfilled} of {rec.total} fulfilled (count mode)\n", style="italic")
    if rec.override_fulfilled is not None and human is None:
        text.append(f"you counted {rec.override_fulfilled} of {rec.total}\n", style="yellow")
    for i, requirement in enumerate(rec.requirements, start=1):
        if marks:
            icon, style = _mark(marks[i][0] if i in marks else None)
            text.append(f"{icon} ", style=style)
        if human is not None:
            icon, style = _mark(human[i - 1] if i - 1 < len(human) else None)
            text.append(f"you {icon} ", style=f"bold {style}")
        text.append(f"{i}. {visible(requirement)}")
        if marks.get(i, (True, ""))[1]:
            text.append(f"\n     {visible(marks[i][1])}", style="dim")
        text.append("\n")
    text.rstrip()
    return text


def error_text(rec: RolloutRecord) -> Text | None:
    parts = []
    if rec.error:
        parts.append(rec.error)
    if rec.reason and rec.status is RolloutStatus.FAILED and rec.reason != rec.error:
        parts.append(rec.reason)
    return shown("\n".join(parts), style="red") if parts else None


def timing_text(rec: RolloutRecord, cost: Cost | None = None) -> Text:
    def sec(v: float | None) -> str:
        return "–" if v is None else f"{v:.2f} s"

    text = Text(
        f"generation {sec(rec.generation_s)} · render {sec(rec.render_s)} · judge {sec(rec.judge_s)} · "
        f"tokens {rec.prompt_tokens or 0} + {rec.completion_tokens or 0}"
        + (f" · judge {(rec.judge_prompt_tokens or 0) + (rec.judge_completion_tokens or 0)}")
        + (f" · {cost_text(cost)}" if cost is not None else "")
        + (" · cached answer" if rec.cached else ""),
        style="dim",
    )
    return text


def svg_renderable(svg: str | None, *, max_lines: int | None = SVG_PREVIEW_LINES) -> RenderableType:
    if not svg:
        return Text("no SVG", style="dim")
    lines = svg.splitlines()
    source = visible("\n".join(lines[:max_lines]) if max_lines else svg)
    from rich.syntax import Syntax  # with Pygments ≈55 ms of CPU: paid at the first SVG shown, not at start-up

    syntax = Syntax(source, "xml", line_numbers=True, word_wrap=True, theme="ansi_dark", background_color="default")
    if max_lines and len(lines) > max_lines:
        return Group(
            syntax, Text(f"… {len(lines) - max_lines} more lines: press enter for the rollout screen", style="dim")
        )
    return syntax


def _heading(title: str) -> Text:
    return Text(title, style="bold underline")


def _section(title: str, rec: RolloutRecord, column: str, kept: str, body: RenderableType) -> Group:
    """A heading and ``body``; between them, when the store cut ``column`` to its size cap (svgagent.core.store.size_caps),
    a line saying how much of it was kept."""
    length = (rec.truncated or {}).get(column)
    note = [Text(f"(stored cut: {len(kept):,} of {length:,} characters kept)", style="italic")] if length else []
    return Group(_heading(title), *note, body)


SECTIONS = ("verdict", "error", "rationale", "requirements", "prompt", "timing", "svg")


def info_sections(
    rec: RolloutRecord | None,
    *,
    full: bool = False,
    show_requirements: bool = True,
    show_verdict: bool = True,
    cost: Cost | None = None,
    show_svg: bool = True,
) -> dict[str, RenderableType | None]:
    """Each of :data:`SECTIONS` of ``rec`` in order, None where it has nothing to show (all of them for None);
    ``full``: the whole SVG, not its first :data:`SVG_PREVIEW_LINES` lines; ``show_svg``: the SVG at all."""
    sections: dict[str, RenderableType | None] = dict.fromkeys(SECTIONS)
    if rec is None:
        return sections
    error = error_text(rec)
    sections.update(
        verdict=verdict_text(rec) if show_verdict else None,
        error=Group(_heading("Error"), error) if error else None,
        requirements=Group(_heading("Requirements"), requirements_text(rec)) if show_requirements else None,
        rationale=_section("Judge's rationale", rec, "rationale", rec.rationale, shown(rec.rationale))
        if rec.rationale
        else None,
        prompt=Group(_heading("Prompt"), shown(rec.prompt)),
        timing=timing_text(rec, cost),
        svg=_section(
            "SVG source", rec, "svg", rec.svg, svg_renderable(rec.svg, max_lines=None if full else SVG_PREVIEW_LINES)
        )
        if rec.svg and show_svg
        else None,
    )
    return sections


class RolloutInfo(Vertical):
    """The written part of a rollout. ``show(record)`` fills it; ``full`` shows the whole SVG; ``show_svg`` False
    leaves the SVG out (the rollout screen adds it once its picture is drawn: highlighting a long SVG is most of
    what laying the screen out costs).

    The same record again does nothing, and of a new state only the sections whose text changed are redrawn,
    each laying the screen out again only when its height changes (:class:`TextBox`)."""

    DEFAULT_CSS = """
    RolloutInfo { height: auto; }
    RolloutInfo > TextBox { height: auto; margin-bottom: 1; }
    RolloutInfo > .-hidden { display: none; }
    """

    def __init__(
        self, *, full: bool = False, show_requirements: bool = True, show_verdict: bool = True, id: str | None = None
    ) -> None:
        super().__init__(id=id)
        self.full = full
        self.show_requirements = show_requirements
        self.show_verdict = show_verdict
        self.show_svg = True
        self._shown: tuple[RolloutRecord | None, bool, bool, bool, bool] | None = None
        self.cost_of: Callable[[RolloutRecord], Cost | None] | None = None  # a rollout's dollars (the screen sets it)

    def compose(self) -> ComposeResult:
        for name in SECTIONS:
            yield TextBox(id=f"info-{name}")

    def show(self, rec: RolloutRecord | None) -> None:
        shown = (rec, self.full, self.show_requirements, self.show_verdict, self.show_svg)
        if shown == self._shown:
            return
        self._shown = shown
        sections = info_sections(
            rec,
            full=self.full,
            show_requirements=self.show_requirements,
            show_verdict=self.show_verdict,
            cost=self.cost_of(rec) if self.cost_of is not None and rec is not None else None,
            show_svg=self.show_svg,
        )
        for name, renderable in sections.items():
            widget = self.query_one(f"#info-{name}", TextBox)
            widget.set_class(renderable is None, "-hidden")
            widget.show(renderable if renderable is not None else "")
