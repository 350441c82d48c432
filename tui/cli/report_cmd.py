"""`svgagent runs agreement` (the judge against a person's review overrides) and `svgagent report` (runs as one
self-contained HTML file): headless, core only.

Exit status: 0 ok; 2 usage/config error (unknown run, a file that cannot be written).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from svgagent.core.store.run_refs import RUN_HELP
from svgagent.tui.cli.analysis import _fmt, _positive_int  # the analysis commands' number formats
from svgagent.tui.cli.exit_codes import EXIT_OK
from svgagent.tui.cli.flags import add_json, add_store

if TYPE_CHECKING:
    from rich.console import Console

    from svgagent.core.analysis.agreement import AgreementReport, Confusion

AGREEMENT_EPILOG = """\
The overrides people make in review (the rollout screen: a ✓/✗ per requirement, or a count) are the labels; the
judge's verdict of the same rollout is compared with them. Pass/fail: both scores against the run's threshold, with
Cohen's kappa. Per-requirement judge mode: every requirement both decided is a pair, with Cohen's kappa. Counts: the
judge's fulfilled count against the person's. Only overridden rollouts are labels (a rollout looked at and left
alone stored nothing). The worst disagreements come first: open them in the app (`i`, then `g`).

examples:
  svgagent runs agreement RUN
  svgagent runs agreement RUN --json
"""

REPORT_EPILOG = """\
One HTML file, self-contained: the pictures are inline, the charts are inline SVG, the tables sort with a few lines
of inline script, and a Content-Security-Policy lets the page load nothing else. Every text from outside (answers,
rationales, prompts, names) is escaped. Several runs get their leaderboard first (`runs leaderboard`: paired
comparison with the best on the rows all share, cost, latency, failure themes) and each run's judge–human agreement.

examples:
  svgagent report RUN -o report.html
  svgagent report BASE TRAINED -o compare.html --limit 100
"""


def add_report_parsers(sub: argparse._SubParsersAction, runs_sub: argparse._SubParsersAction) -> None:
    """Register `runs agreement` (under ``runs_sub``) and `report` (under ``sub``)."""
    fmt = argparse.RawDescriptionHelpFormatter
    p = runs_sub.add_parser(
        "agreement",
        help="how often the judge agreed with your review overrides (Cohen's kappa)",
        formatter_class=fmt,
        description="The judge's verdicts against the overrides people made in review.",
        epilog=AGREEMENT_EPILOG,
    )
    p.add_argument("run_id", metavar="RUN", help=RUN_HELP)
    p.add_argument("--threshold", type=float, help="pass threshold, 0..1 (default: the run's own)")
    p.add_argument("--top", type=_positive_int, default=10, help="worst disagreements to list (default 10)")
    add_json(p)
    add_store(p)
    p.set_defaults(report_cmd="agreement")

    p = sub.add_parser(
        "report",
        help="write runs as one self-contained HTML file",
        formatter_class=fmt,
        description="Write one HTML page of the runs: numbers, histogram, agreement, rollouts with pictures.",
        epilog=REPORT_EPILOG,
    )
    p.add_argument("run_ids", metavar="RUN", nargs="+", help=RUN_HELP)
    p.add_argument("-o", "--output", metavar="FILE", default="report.html", help="the file (default report.html)")
    p.add_argument(
        "--limit", type=_positive_int, default=500, help="rollouts listed with pictures per run (default 500)"
    )
    p.add_argument(
        "--no-draw",
        action="store_true",
        help="leave rollouts stored without a picture (imported rows) without one, instead of drawing their SVG "
        "in the renderer's sandbox",
    )
    add_store(p)
    p.set_defaults(report_cmd="report")


def cmd_report_cmd(args: argparse.Namespace) -> int:
    return {"agreement": cmd_agreement, "report": cmd_report}[args.report_cmd](args)


# --- runs agreement --------------------------------------------------------------------------------------------------


def cmd_agreement(args: argparse.Namespace) -> int:
    from svgagent.core.analysis.agreement import run_agreement
    from svgagent.core.scoring.errors import ConfigError
    from svgagent.core.store.run_refs import resolve_run
    from svgagent.tui.cli.console import cli_console
    from svgagent.tui.cli.store_cmd import open_store

    if args.threshold is not None and not 0 <= args.threshold <= 1:
        raise ConfigError(f"--threshold must be between 0 and 1, got {args.threshold:g}")
    with open_store(args) as store:
        run = resolve_run(store, args.run_id)
        report = run_agreement(store, run.run_id, threshold=args.threshold, worst=args.top)
    if args.json:
        print(json.dumps({"name": run.name, **report.to_dict()}, indent=2, ensure_ascii=False))
        return EXIT_OK
    print_agreement(cli_console(), report, run.name)
    return EXIT_OK


def _confusion_line(label: str, c: Confusion) -> str:
    rate = "–" if c.rate is None else f"{100 * c.rate:.1f}%"
    return (
        f"{label}: agreed {c.agreed}/{c.n} ({rate}) · Cohen's κ {_fmt(c.kappa)} · judge yes, person no "
        f"{c.judge_only} · judge no, person yes {c.person_only}"
    )


def print_agreement(console: Console, a: AgreementReport, name: str = "") -> None:
    from rich.markup import escape
    from rich.table import Table

    title = f"[bold]{escape(name)}[/] ({a.run_id})" if name and name != a.run_id else f"[bold]{a.run_id}[/]"
    console.print(f"{title}: judge mode {a.judge_mode}, threshold {a.threshold:g}")
    if not a.overridden:
        console.print("no review overrides in this run: no human labels to compare the judge with")
        return
    console.print(
        f"{a.overridden} rollout{'s' if a.overridden != 1 else ''} overridden in review, {a.labelled} with a judge verdict to compare"
        + (f" ({a.without_judge} without)" if a.without_judge else "")
    )
    if not a.labelled:
        return
    console.print(_confusion_line(f"pass/fail (score ≥ {a.threshold:g})", a.pass_fail), highlight=False)
    if a.requirements.n:
        console.print(_confusion_line("requirements", a.requirements), highlight=False)
    c = a.counts
    console.print(
        f"counts: equal {c.equal}/{c.n} · judge higher {c.judge_higher} · judge lower {c.judge_lower} · "
        f"mean |judge − person| {_fmt(c.mean_abs_difference, 2)} requirements",
        highlight=False,
    )
    if a.by_requirement:
        table = Table("row", "#", "disagreed", "requirement", title="requirements disagreed on", title_justify="left")
        for r in a.by_requirement:
            table.add_row(escape(r.row_id[:24]), str(r.index), f"{r.disagreed}/{r.pairs}", escape(r.text[:120]))
        console.print(table)
    if a.worst:
        table = Table(
            "rollout",
            "judge",
            "person",
            "Δ",
            "requirements",
            "prompt",
            title=f"worst disagreements ({len(a.worst)} of {a.disagreements})",
            title_justify="left",
        )
        for d in a.worst:
            marks = " ".join(f"#{r.index}{'✓' if r.judge else '✗'}→{'✓' if r.person else '✗'}" for r in d.requirements)
            table.add_row(
                escape(d.rollout_id),
                f"{d.judge_fulfilled}/{d.total}",
                f"{d.person_fulfilled}/{d.total}",
                f"{d.difference:+d}",
                marks or "–",
                escape(" ".join(d.prompt.split())[:60]),
            )
        console.print(table)


# --- report ----------------------------------------------------------------------------------------------------------


def cmd_report(args: argparse.Namespace) -> int:
    from svgagent.core.config.prices import price_table
    from svgagent.core.config.settings import load_settings
    from svgagent.core.named_files import resolve_target, write_output
    from svgagent.core.report.html_report import build_report
    from svgagent.core.store.run_refs import resolve_run
    from svgagent.tui.cli.store_cmd import open_store

    resolve_target(args.output)  # a directory or a missing one is refused before the work
    prices = price_table(load_settings(**({"store": args.store} if args.store else {})).prices)  # as `leaderboard`
    with open_store(args) as store, contextlib.ExitStack() as stack:
        runs = [resolve_run(store, ref) for ref in args.run_ids]
        draw = None if args.no_draw else _sandbox_draw(stack)
        ids = list(dict.fromkeys(r.run_id for r in runs))
        document = build_report(store, ids, limit=args.limit, draw=draw, prices=prices)
    write_output(args.output, document)
    if args.output != "-":
        print(f"wrote {args.output} ({len(document.encode()) / 1e6:.1f} MB, {len(runs)} runs)", file=sys.stderr)
    return EXIT_OK


def _sandbox_draw(stack: contextlib.ExitStack) -> Callable[[str], bytes | None]:
    """SVG → PNG with svgagent's sandboxed cairosvg workers (started at the first picture drawn), at the default
    render size; an SVG that cannot be drawn has no picture."""
    from svgagent.core.config.settings import Settings
    from svgagent.core.scoring.errors import RenderError
    from svgagent.core.scoring.renderers import make_renderer

    fields = Settings.model_fields
    choice = argparse.Namespace(
        renderer="cairosvg",
        render_size=fields["render_size"].default,
        render_timeout_s=fields["render_timeout_s"].default,
        render_memory_mb=fields["render_memory_mb"].default,
    )
    started: list[Any] = []

    def draw(svg: str) -> bytes | None:
        if not started:
            started.append(stack.enter_context(make_renderer(choice, workers=1)))
        try:
            return started[0].render_sync(svg.encode("utf-8"), choice.render_size)
        except RenderError:
            return None

    return draw
