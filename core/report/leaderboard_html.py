"""The report's leaderboard when it holds several runs: :mod:`..analysis.leaderboard` (what `svgagent runs
leaderboard` prints) as a sortable table, with its pick-the-base-model line, its caveats and each run's judge–human
agreement. Every string from a run (names, models, datasets, the summary) is escaped."""

from __future__ import annotations

from collections.abc import Mapping

from svgagent.core.analysis.agreement import AgreementReport
from svgagent.core.analysis.leaderboard import Leaderboard
from svgagent.core.config.prices import usd_text
from svgagent.core.report.svg_charts import text
from svgagent.core.store.typed_rows import mean_text, spread_text

HEADERS = (
    ("rank", "num"),
    ("run", "text"),
    ("model", "text"),
    ("judge profile", "text"),
    ("dataset", "text"),
    ("rows", "num"),
    ("mean ± stderr", "num"),
    ("pass rate", "num"),
    ("vs best (shared rows)", "num"),
    ("wins/losses", "text"),
    ("cost", "num"),
    ("policy / judge", "text"),
    ("latency p50", "num"),
    ("misses most", "text"),
    ("judge–human agreement", "num"),
)


def _num(shown: str, value: float | None) -> str:
    return f'<td class="num" data-v="{"" if value is None else f"{value:.6f}"}">{text(shown)}</td>'


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def leaderboard_html(board: Leaderboard, agreements: Mapping[str, AgreementReport]) -> str:
    """The section: summary line, notes, and one row per run, best first (click a header to sort)."""
    rows = []
    for rank, row in enumerate(board.rows, start=1):
        if row.is_best:
            diff, diff_value = "best", 0.0
        elif row.diff_vs_best is None:
            diff, diff_value = "–", None
        else:
            diff, diff_value = f"{row.diff_vs_best:+.3f}{spread_text(row.diff_stderr)}", row.diff_vs_best
        agreement = agreements.get(row.run_id)
        rate = agreement.pass_fail.rate if agreement is not None else None
        labels = f" ({agreement.labelled})" if agreement is not None and agreement.labelled else ""
        latency = None if row.latency_p50_s is None else f"{row.latency_p50_s:.2f} s"
        rows.append(
            f"<tr{' class=best' if row.is_best else ''}>{_num(str(rank), rank)}"
            f'<td><a href="#run-{text(row.run_id)}">{text(row.name[:120])}</a></td>'
            f"<td>{text(row.model)}</td><td>{text(row.judge_profile)}</td><td>{text(row.dataset)}</td>"
            f"{_num(str(row.rows), row.rows)}"
            f"{_num(mean_text(row.mean) + spread_text(row.stderr), row.mean)}"
            f"{_num(_pct(row.pass_rate), row.pass_rate)}{_num(diff, diff_value)}"
            f"<td>{'' if row.is_best else f'{row.wins}/{row.losses}'}</td>"
            f"{_num(usd_text(row.usd), row.usd)}"
            f"<td>{text(usd_text(row.cost.policy_usd))} / {text(usd_text(row.cost.judge_usd))}</td>"
            f"{_num(latency or '–', row.latency_p50_s)}<td>{text(row.theme_text()) or '–'}</td>"
            f"{_num(_pct(rate) + labels, rate)}</tr>"
        )
    head = "".join(
        f'<th data-type="{kind}"{" class=num" if kind == "num" else ""}>{text(label)}</th>' for label, kind in HEADERS
    )
    notes = "".join(f'<li class="note">{text(note)}</li>' for note in board.notes)
    return (
        '<section id="leaderboard"><h2>Leaderboard</h2>'
        f"<p><b>{text(board.summary)}</b></p>"
        f'<p class="note">{board.shared_rows} dataset rows have a valid score in every run: the paired comparison '
        "with the best run is over those.</p>"
        + (f"<ul>{notes}</ul>" if notes else "")
        + f'<table class="sortable leaderboard"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
        "</section>"
    )
