"""The stats screen's judge–human agreement panel: the judge against the review overrides of the run
(``core.analysis.agreement``, what `svgagent runs agreement` prints) and its worst disagreements as options — enter
opens one on the rollout screen, with its picture."""

from __future__ import annotations

from rich.text import Text
from textual.widgets.option_list import Option

from svgagent.core.analysis.agreement import AgreementReport, Confusion, Disagreement
from svgagent.tui.widgets.screen_text import shown_line


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _confusion(text: Text, label: str, c: Confusion) -> None:
    rate = "–" if c.rate is None else f"{100 * c.rate:.1f}%"
    text.append(f"\n{label}: ")
    text.append(f"{c.agreed}/{c.n} agreed ({rate})", style="bold")
    text.append(f" · κ {_fmt(c.kappa)}")
    text.append(f" · judge yes, you no {c.judge_only} · judge no, you yes {c.person_only}", style="dim")


def agreement_text(a: AgreementReport) -> Text:
    """The panel's numbers: pass/fail and (per-requirement mode) requirement agreement with Cohen's kappa, counts."""
    text = Text("Judge vs your review", style="bold")
    if not a.overridden:
        text.append(
            "\nno overrides yet: your ✓/✗ or count on a rollout (enter on the table) is a label to compare the "
            "judge with",
            style="dim italic",
        )
        return text
    text.append(f"\n{a.labelled} overridden rollout{'s' if a.labelled != 1 else ''} with a judge verdict", style="dim")
    if a.without_judge:
        text.append(f" ({a.without_judge} without)", style="dim")
    if not a.labelled:
        return text
    _confusion(text, f"pass/fail (≥ {a.threshold:g})", a.pass_fail)
    if a.requirements.n:
        _confusion(text, "requirements", a.requirements)
    c = a.counts
    text.append(
        f"\ncounts: equal {c.equal}/{c.n} · judge higher {c.judge_higher} · lower {c.judge_lower} · "
        f"mean |Δ| {'–' if c.mean_abs_difference is None else f'{c.mean_abs_difference:.2f}'}"
    )
    if a.worst:
        text.append(
            f"\nworst disagreements ({len(a.worst)} of {a.disagreements}): g, then enter opens one", style="dim"
        )
    return text


def disagreement_option(d: Disagreement) -> Option:
    """One worst disagreement: row and sample, the judge's count and yours, the requirements you flipped, prompt."""
    label = Text.assemble(
        shown_line(f"{d.row_id}#{d.sample_index}"[:20]),
        (f"  judge {d.judge_fulfilled}/{d.total} you {d.person_fulfilled}/{d.total}", "bold"),
    )
    if d.requirements:
        marks = " ".join(f"#{r.index}{'✓' if r.judge else '✗'}→{'✓' if r.person else '✗'}" for r in d.requirements[:6])
        label.append(f"  {marks}", style="dim")
    label.append("  ")
    label.append_text(shown_line(" ".join(d.prompt.split())[:80], style="italic"))
    return Option(label, id=d.rollout_id)
