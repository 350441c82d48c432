"""`svgagent report`: stored runs as one self-contained HTML page.

For each run: what it measured (model, judge, profile, renderer, dataset), its headline numbers, the score
histogram (inline SVG), how often the judge agreed with the people who reviewed it (:mod:`..analysis.agreement`)
and a sortable table of its rollouts with their pictures (``data:`` PNG thumbnails), prompts, rationales and answers.
Several runs get the leaderboard of them first (:mod:`.leaderboard_html`); a run that is a training step (`svgagent serve`) gets its training
run's score per step as a line chart, several runs that are not get their means in the order given.

Every piece of outside text (answers, rationales, prompts, requirements, run and model names, errors) goes through
:func:`..svg_charts.text` (control characters made visible, then ``html.escape``) and is cut to a cap; the page
loads nothing (:mod:`.page`'s Content-Security-Policy).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from svgagent.core.analysis.agreement import AgreementReport, Confusion, run_agreement
from svgagent.core.analysis.leaderboard import build_leaderboard
from svgagent.core.analysis.stats import RunStats, bin_edges, run_stats
from svgagent.core.config.prices import PriceTable
from svgagent.core.report.leaderboard_html import leaderboard_html
from svgagent.core.report.page import page
from svgagent.core.report.svg_charts import Point, histogram_svg, line_chart_svg, text
from svgagent.core.report.thumbnails import thumbnail_uri
from svgagent.core.scoring.models import FailureKind, RolloutStatus
from svgagent.core.serve.training_runs import TrainingStore
from svgagent.core.store.run_store import Store
from svgagent.core.store.typed_rows import RolloutRecord, RunRecord, mean_text, spread_text

DEFAULT_LIMIT = 500  # rollouts listed (with their pictures) per run
PROMPT_CAP = 600
RATIONALE_CAP = 3_000
ANSWER_CAP = 6_000
NAME_CAP = 120


def capped(value: str | None, cap: int) -> str:
    """``value`` cut to ``cap`` characters (with how much more there was), escaped for HTML."""
    if not value:
        return ""
    if len(value) <= cap:
        return text_block(value)
    return text_block(value[:cap]) + f" <i>… {len(value) - cap} more characters</i>"


def text_block(value: str) -> str:
    """Outside text that may span lines, escaped (newlines kept: shown in a ``<pre>``)."""
    return "\n".join(text(line) for line in value.split("\n"))


def _fmt(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


@dataclass
class RunSection:
    run: RunRecord
    stats: RunStats
    agreement: AgreementReport
    rollouts: list[RolloutRecord]  # heavy, at most the limit
    pictures: dict[str, str] = field(default_factory=dict)  # rollout id → data: URI
    total_rollouts: int = 0


Draw = Callable[[str], "bytes | None"]  # an SVG drawn to PNG in the sandbox (None: it could not be)


def gather(store: Store, run_id: str, *, limit: int = DEFAULT_LIMIT, draw: Draw | None = None) -> RunSection:
    """What the report shows of one run, read from ``store``. A rollout with an SVG and no stored picture (an
    imported Eval Protocol row carries none) is drawn with ``draw`` when given."""
    run = store.get_run(run_id)
    stats = run_stats(store, run.run_id)
    agreement = run_agreement(store, run.run_id)
    rollouts: list[RolloutRecord] = []
    pictures: dict[str, str] = {}
    for rec in store.iter_rollouts(run.run_id):
        if len(rollouts) >= limit:
            break
        uri = _picture(rec, draw)
        if uri:
            pictures[rec.rollout_id] = uri
        rec.png = None  # the thumbnail is what the page needs
        rollouts.append(rec)
    missing = [d.rollout_id for d in agreement.worst if d.rollout_id not in pictures]
    for rec in store.get_rollouts(missing, heavy=True):
        uri = _picture(rec, draw)
        if uri:
            pictures[rec.rollout_id] = uri
    return RunSection(run, stats, agreement, rollouts, pictures, stats.rollouts)


def _picture(rec: RolloutRecord, draw: Draw | None) -> str | None:
    """The thumbnail of a rollout's stored picture, else of its SVG drawn now (not one the renderer already failed)."""
    png = rec.png
    if png is None and rec.svg and draw is not None and rec.failure_kind is not FailureKind.RENDER:
        png = draw(rec.svg)
    return thumbnail_uri(png)


# --- sections ---------------------------------------------------------------------------------------------------------


def _facts(pairs: Sequence[tuple[str, object]]) -> str:
    items = "".join(f"<dt>{text(k)}</dt><dd>{text(v)}</dd>" for k, v in pairs if v not in (None, ""))
    return f'<dl class="facts">{items}</dl>'


def _sortable(headers: Sequence[tuple[str, str]], rows: Sequence[str], *, cls: str = "") -> str:
    """A table sorted by a click on its header; ``headers`` are (label, "num" | "text")."""
    head = "".join(
        f'<th data-type="{kind}"{" class=num" if kind == "num" else ""}>{text(label)}</th>' for label, kind in headers
    )
    return f'<table class="sortable {cls}"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _num_cell(shown: str, value: float | None) -> str:
    sort = "" if value is None else f"{value:.6f}"
    return f'<td class="num" data-v="{sort}">{text(shown)}</td>'


def run_name(run: RunRecord) -> str:
    return (run.name or run.run_id)[:NAME_CAP]


def _confusion_row(label: str, c: Confusion) -> str:
    return (
        f"<tr><td>{text(label)}</td>{_num_cell(str(c.n), c.n)}{_num_cell(str(c.agreed), c.agreed)}"
        f"{_num_cell(_pct(c.rate), c.rate)}{_num_cell(_fmt(c.kappa), c.kappa)}"
        f"{_num_cell(str(c.judge_only), c.judge_only)}{_num_cell(str(c.person_only), c.person_only)}</tr>"
    )


def agreement_html(a: AgreementReport, pictures: dict[str, str]) -> str:
    """The judge against the people who reviewed the run: tables and the worst disagreements, with pictures."""
    out = ["<h3>Judge–human agreement</h3>"]
    if not a.overridden:
        out.append('<p class="note">No review overrides in this run: no human labels to compare the judge with.</p>')
        return "".join(out)
    out.append(
        f"<p>{a.labelled} rollout{'s' if a.labelled != 1 else ''} overridden in review and judged (judge mode {text(a.judge_mode)}; "
        f"{a.without_judge} overridden without a valid judge verdict). Only overridden rollouts are labels.</p>"
    )
    rows = [_confusion_row(f"pass/fail (score ≥ {a.threshold:g})", a.pass_fail)]
    if a.requirements.n:
        rows.append(_confusion_row("requirements (✓/✗ each)", a.requirements))
    head = "".join(
        f"<th>{h}</th>"
        for h in (
            "compared",
            "pairs",
            "agreed",
            "agreement",
            "Cohen's κ",
            "judge yes, person no",
            "judge no, person yes",
        )
    )
    out.append(f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>")
    c = a.counts
    out.append(
        f"<p>Counts of fulfilled requirements: equal {c.equal}/{c.n}, judge higher {c.judge_higher}, judge lower "
        f"{c.judge_lower}, mean |judge − person| {_fmt(c.mean_abs_difference, 2)} requirements.</p>"
    )
    if a.by_requirement:
        rows = [
            f"<tr><td>{text(r.row_id)}</td>{_num_cell(str(r.index), r.index)}"
            f"{_num_cell(f'{r.disagreed}/{r.pairs}', r.disagreed / r.pairs)}<td>{capped(r.text, 300)}</td></tr>"
            for r in a.by_requirement
        ]
        headers = [("row", "text"), ("#", "num"), ("disagreed", "num"), ("requirement", "text")]
        out.append("<h4>Requirements judged otherwise most often</h4>")
        out.append(_sortable(headers, rows, cls="requirements"))
    if a.worst:
        rows = []
        for d in a.worst:
            picture = pictures.get(d.rollout_id)
            img = f'<img class="thumb" alt="picture" src="{picture}">' if picture else "–"
            reqs = "<br>".join(
                f"#{r.index} judge {'✓' if r.judge else '✗'} person {'✓' if r.person else '✗'}: {text(r.text[:200])}"
                for r in d.requirements
            )
            rows.append(
                f'<tr><td>{img}</td><td><a href="#r-{text(d.rollout_id)}">{text(d.row_id)}</a> #{d.sample_index}'
                f"</td>{_num_cell(f'{d.judge_fulfilled}/{d.total}', d.judge_fulfilled / max(d.total, 1))}"
                f"{_num_cell(f'{d.person_fulfilled}/{d.total}', d.person_fulfilled / max(d.total, 1))}"
                f"{_num_cell(f'{d.difference:+d}', d.difference)}"
                f'<td class="prompt">{capped(d.prompt, 200)}</td>'
                + (f'<td class="text">{reqs}</td>' if a.requirements.n else "")
                + "</tr>"
            )
        headers = [
            ("picture", "text"),
            ("row", "text"),
            ("judge", "num"),
            ("person", "num"),
            ("judge − person", "num"),
            ("prompt", "text"),
            *([("requirements they disagree on", "text")] if a.requirements.n else []),
        ]
        out.append(f"<h4>Worst disagreements ({len(a.worst)} of {a.disagreements})</h4>")
        out.append(_sortable(headers, rows, cls="disagreements"))
    return "".join(out)


def _details(summary: str, body: str) -> str:
    return f"<details><summary>{summary}</summary><pre>{body}</pre></details>" if body else "–"


def rollout_row(rec: RolloutRecord, picture: str | None) -> str:
    img = f'<img class="thumb" alt="picture" src="{picture}">' if picture else "–"
    judge = f"{rec.fulfilled}/{rec.total}" if rec.fulfilled is not None else "–"
    person = f"{rec.override_fulfilled}/{rec.total}" if rec.override_fulfilled is not None else "–"
    status = text(rec.status.value)
    if rec.reason:
        status += f"<br><small>{capped(rec.reason, 200)}</small>"
    rationale = rec.rationale or ""
    answer = rec.raw_answer or ""
    failed = ' class="failed"' if rec.status is RolloutStatus.FAILED else ""
    return (
        f'<tr id="r-{text(rec.rollout_id)}"{failed}><td>{img}</td><td>{text(rec.row_id)}</td>'
        f"{_num_cell(str(rec.sample_index), rec.sample_index)}<td>{status}</td>"
        f"{_num_cell(_fmt(rec.effective_score), rec.effective_score)}{_num_cell(judge, rec.score)}"
        f"{_num_cell(person, rec.override_score)}"
        f'<td class="prompt">{capped(rec.prompt, PROMPT_CAP)}</td>'
        f'<td class="text">{_details(text(rationale[:80]) + ("…" if len(rationale) > 80 else ""), capped(rationale, RATIONALE_CAP))}</td>'
        f'<td class="text">{_details(f"{len(answer)} characters", capped(answer, ANSWER_CAP))}</td></tr>'
    )


def run_html(s: RunSection) -> str:
    run, st = s.run, s.stats
    settings = run.settings
    out = [f'<section class="run" id="run-{text(run.run_id)}"><h2>{text(run_name(run))}</h2>']
    out.append(
        _facts(
            [
                ("run", run.run_id),
                ("status", run.status.value),
                ("created", run.created),
                ("model", settings.get("model")),
                ("judge", settings.get("judge_model")),
                ("judge mode", settings.get("judge_mode")),
                ("judge profile", run.judge_profile),
                ("renderer", run.renderer),
                ("dataset", f"{run.dataset.get('name', '')} ({run.dataset.get('rows', '?')} rows)"),
                ("samples", settings.get("samples")),
            ]
        )
    )
    if st.valid:
        out.append(
            f'<p class="headline">mean <b>{mean_text(st.mean)}{spread_text(st.stderr)}</b> · median '
            f"{_fmt(st.median)} · pass rate (score ≥ {st.threshold:g}) <b>{_pct(st.pass_rate)}</b> "
            f"({st.passed}/{st.valid})</p>"
        )
    out.append(f"<p>{st.rollouts} rollouts · {st.terminal} finished · {st.valid} with a valid score</p>")
    failures = ", ".join(f"{text(k)} {v}" for k, v in st.failures.items() if v)
    if failures:
        out.append(f"<p>failures: {failures}</p>")
    out.append(
        f"<figure>{histogram_svg(st.histogram, bin_edges(st.bins))}<figcaption>score histogram ({st.valid} valid "
        "scores: a person's override, else the judge's)</figcaption></figure>"
    )
    out.append(agreement_html(s.agreement, s.pictures))
    shown = len(s.rollouts)
    more = f" (the first {shown} of {s.total_rollouts})" if shown < s.total_rollouts else ""
    out.append(f"<h3>Rollouts{more}</h3>")
    headers = [
        ("picture", "text"),
        ("row", "text"),
        ("sample", "num"),
        ("status", "text"),
        ("score", "num"),
        ("judge", "num"),
        ("person", "num"),
        ("prompt", "text"),
        ("rationale", "text"),
        ("answer", "text"),
    ]
    out.append(_sortable(headers, [rollout_row(r, s.pictures.get(r.rollout_id)) for r in s.rollouts], cls="rollouts"))
    out.append("</section>")
    return "".join(out)


def step_charts(store: Store, sections: Sequence[RunSection]) -> str:
    """The score per step of each training run a given run is a step of; else, for several runs, each run's mean."""
    training = TrainingStore(store)
    seen: list[str] = []
    for s in sections:
        found = training.training_of(s.run.run_id)
        if found is not None and found not in seen:
            seen.append(found)
    out = []
    for training_id in seen:
        steps = training.steps(training_id)
        judged = any(step.mean_local is not None for step in steps)
        if judged:
            points = [Point(f"step {step.step}", step.mean_local) for step in steps]
            title, hi = "mean local score per step", 1.0
        else:
            points = [Point(f"step {step.step}", float(step.rollouts)) for step in steps]
            title, hi = "rollouts per step (scores come from the platform; `serve --judge` adds local ones)", None
        out.append(
            f"<figure>{line_chart_svg(points, title=title, hi=hi)}<figcaption>training {text(training_id)}: "
            f"{text(title)}</figcaption></figure>"
        )
    if not out and len(sections) > 1:
        points = [Point(run_name(s.run), s.stats.mean, s.stats.stderr) for s in sections]
        title = "mean score ± stderr per run, in the order given"
        out.append(f"<figure>{line_chart_svg(points, title=title)}<figcaption>{text(title)}</figcaption></figure>")
    heading = "Score per step" if seen else "Score per run"
    return f'<section id="steps"><h2>{heading}</h2>' + "".join(out) + "</section>" if out else ""


def build_report(
    store: Store,
    run_ids: Sequence[str],
    *,
    limit: int = DEFAULT_LIMIT,
    now: datetime | None = None,
    draw: Draw | None = None,
    prices: PriceTable | None = None,
) -> str:
    """The HTML document of ``run_ids`` (resolved ids) from ``store``; ``draw``: see :func:`gather`; ``prices``:
    the price table the leaderboard's dollars come from (default: the shipped one)."""
    sections = [gather(store, run_id, limit=limit, draw=draw) for run_id in run_ids]
    stamp = (now or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    names = ", ".join(run_name(s.run) for s in sections)
    body = [
        "<header><h1>svgagent report</h1>",
        f'<p class="meta">{len(sections)} run{"s" if len(sections) != 1 else ""} · generated {stamp} · '
        "self-contained: this file loads nothing</p></header>",
    ]
    if len(sections) > 1:
        board = build_leaderboard(store, [s.run.run_id for s in sections], prices=prices)
        body.append(leaderboard_html(board, {s.run.run_id: s.agreement for s in sections}))
    body.append(step_charts(store, sections))
    body.extend(run_html(s) for s in sections)
    return page(f"svgagent report: {names}"[:200], "\n".join(body))
