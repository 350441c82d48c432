"""`svgagent runs compare`, `svgagent runs stats` and `svgagent import`: headless, core only.

Exit status: 0 ok; 2 usage/config error (unknown run, bad flag, a file with no importable line).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from svgagent.core.store.run_refs import RUN_HELP
from svgagent.core.store.typed_rows import spread_text
from svgagent.core.terminal_text import clipped, one_line, visible

if TYPE_CHECKING:
    from rich.console import Console

    from svgagent.core.analysis.compare import Comparison
    from svgagent.core.analysis.stats import RunStats

from svgagent.tui.cli.exit_codes import EXIT_OK, EXIT_USAGE
from svgagent.tui.cli.flags import add_json, add_settings, add_store

COMPARE_EPILOG = """\
Rows are aligned by row id AND prompt text (a row id alone can name different prompts in different datasets).
Each run contributes, per row, the mean of its valid effective scores (human override, else judge), so several
samples per row count once. delta = B − A: positive is an improvement of B over A. The paired mean difference
and its standard error are over rows scored in both runs; wins/losses/ties count those rows by the sign of delta.

examples:
  svgagent runs compare RUN_A RUN_B
  svgagent runs compare RUN_A RUN_B --only regressions --limit 20
  svgagent runs compare RUN_A RUN_B --json
"""

STATS_EPILOG = """\
Scores are effective scores (human override, else judge) of rollouts with a valid score. Pass rate: share of
those with score >= threshold. Failures are put into one category each from their reason text. Percentiles
interpolate linearly. Requirements most often failed come from per-requirement verdicts (judge mode
per-requirement, or a person's verdicts from review). Evaluator health (the training's steps when the run is
one, else the run alone): groups of a prompt's samples that all scored alike, invalid scores, the same SVG for
different prompts, pictures that are mostly text or repeat the requirements, scores rising while the picture
barely changes (README: Evaluator health).
"""

IMPORT_EPILOG = """\
Each line is an evaluated Eval Protocol EvaluationRow (e.g. from `svgagent export` or another tool). Lines that
cannot be used are skipped, and a summary names the first few with their line numbers (--json lists up to 1000);
--strict imports nothing when any line is unusable. The run is written in one transaction. Rows without an
evaluation_result keep their answer and stay queued; --judge renders and judges them with svgagent's judge (the
policy is never called).

exit status: 0 imported, 2 no usable line (no run is created), --strict and an unusable line, or a usage error

examples:
  svgagent import results.jsonl --name "baseline from EP"
  svgagent import answers.jsonl --judge --demo
"""


def add_analysis_parsers(sub: argparse._SubParsersAction, runs_sub: argparse._SubParsersAction) -> None:
    """Register `runs compare`, `runs stats` (under ``runs_sub``) and `import` (under ``sub``)."""
    fmt = argparse.RawDescriptionHelpFormatter
    p = runs_sub.add_parser(
        "compare",
        help="compare two runs row by row",
        formatter_class=fmt,
        description="Compare run B against run A, row by row.",
        epilog=COMPARE_EPILOG,
    )
    p.add_argument("run_a", metavar="RUN_A", help=f"the baseline: {RUN_HELP}")
    p.add_argument("run_b", metavar="RUN_B", help="the run compared with it (the same forms)")
    p.add_argument(
        "--only",
        choices=["regressions", "improvements"],
        help="show only rows where B got worse/better (default: every row)",
    )
    p.add_argument(
        "--sort",
        choices=["delta", "abs", "row"],
        default="delta",
        help="delta: worst first (default); abs: biggest change first; row: dataset order",
    )
    p.add_argument("--reverse", action="store_true", help="reverse the order (delta: best first)")
    p.add_argument("--limit", type=_positive_int, metavar="N", help="show at most N rows (default: all)")
    add_json(p)
    add_store(p)
    p.set_defaults(analysis="compare")

    p = runs_sub.add_parser(
        "stats",
        help="score distribution and summary statistics of a run",
        formatter_class=fmt,
        description="Score histogram, summary statistics, failures by category, latency and "
        "token percentiles, and the requirements most often failed.",
        epilog=STATS_EPILOG,
    )
    p.add_argument("run_id", metavar="RUN", help=RUN_HELP)
    p.add_argument("--bins", type=_bins, default=10, help="histogram bins, 1..100 (default 10)")
    p.add_argument("--threshold", type=float, help="pass threshold, 0..1 (default: the run's own)")
    p.add_argument("--top", type=_positive_int, default=10, help="requirements to list (default 10)")
    p.add_argument("--width", type=_positive_int, default=40, help="histogram bar width in cells (default 40)")
    add_json(p)
    add_store(p)
    p.set_defaults(analysis="stats")

    from svgagent.tui.cli.filmstrip_cmd import add_filmstrip_parser  # runs filmstrip

    add_filmstrip_parser(runs_sub)

    p = sub.add_parser(
        "import",
        help="import evaluated Eval Protocol JSONL as a run",
        formatter_class=fmt,
        description="Turn evaluated Eval Protocol rows into a run in the store, reviewable and "
        "comparable like one made here.",
        epilog=IMPORT_EPILOG,
    )
    p.add_argument("file", metavar="FILE.jsonl")
    p.add_argument("--name", help="a name for the run (default: 'import of FILE')")
    p.add_argument("--judge", action="store_true", help="judge rows that have no score with svgagent's judge")
    p.add_argument("--strict", action="store_true", help="all or nothing: import nothing when any line is unusable")
    p.add_argument("--demo", action="store_true", help="with --judge: use the built-in simulator as judge (no keys)")
    add_settings(p, ("judge_model", "judge_base_url", "judge_mode"), title="judge (with --judge)")
    add_settings(p, ("threshold",))
    add_json(p)
    add_store(p)
    p.set_defaults(analysis="import")


def cmd_analysis(args: argparse.Namespace) -> int:
    if args.analysis == "filmstrip":
        from svgagent.tui.cli.filmstrip_cmd import cmd_filmstrip

        return cmd_filmstrip(args)
    return {"compare": cmd_compare, "stats": cmd_stats, "import": cmd_import}[args.analysis](args)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _bins(text: str) -> int:
    value = _positive_int(text)
    if value > 100:
        raise argparse.ArgumentTypeError(f"at most 100 bins, got {value}")
    return value


def _fmt(value: float | None, digits: int = 3, *, sign: bool = False) -> str:
    if value is None:
        return "–"
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


def _rest(console: Console, widths: tuple[int, ...]) -> int:
    """Cells left for a last column after fixed ``widths`` in a default rich Table (padding 1 + borders)."""
    columns = len(widths) + 1
    return max(console.width - sum(widths) - 2 * columns - (columns + 1), 12)


# --- compare ---------------------------------------------------------------------------------------------------------


def cmd_compare(args: argparse.Namespace) -> int:
    from svgagent.core.analysis.compare import compare_runs
    from svgagent.core.store.run_refs import resolve_run
    from svgagent.tui.cli.console import cli_console
    from svgagent.tui.cli.store_cmd import open_store

    with open_store(args) as store:
        run_a, run_b = resolve_run(store, args.run_a), resolve_run(store, args.run_b)
        comparison = compare_runs(store, run_a.run_id, run_b.run_id)
    for name in ("judge_profile", "renderer"):  # scores made by other recipes: said, not refused
        if getattr(run_a, name) != getattr(run_b, name):
            print(
                f"svgagent: note: A is scored with {name} {getattr(run_a, name)}, B with {getattr(run_b, name)}: "
                "their scores follow different recipes",
                file=sys.stderr,
            )
    sort = "abs_delta" if args.sort == "abs" else args.sort
    rows = comparison.select(args.only, sort, descending=args.reverse, limit=args.limit)
    if args.json:
        print(json.dumps(comparison.to_dict(rows), indent=2, ensure_ascii=False))
        return EXIT_OK
    print_comparison(cli_console(), comparison, rows)
    return EXIT_OK


def print_comparison(console: Console, c: Comparison, rows: list[Any]) -> None:
    from rich.markup import escape
    from rich.table import Table

    name_a = "" if c.name_a in ("", c.run_a) else escape(c.name_a[:40]) + " "
    name_b = "" if c.name_b in ("", c.run_b) else escape(c.name_b[:40]) + " "
    console.print(f"[bold]A[/] {c.run_a} {name_a} mean {_fmt(c.mean_a)}{spread_text(c.stderr_a)}")
    console.print(f"[bold]B[/] {c.run_b} {name_b} mean {_fmt(c.mean_b)}{spread_text(c.stderr_b)}")
    if c.paired_rows:
        console.print(
            f"paired rows {c.paired_rows}: B − A = [bold]{_fmt(c.mean_diff, sign=True)}[/]"
            f"{spread_text(c.diff_stderr)}  (A {_fmt(c.paired_mean_a)}, B {_fmt(c.paired_mean_b)})"
        )
    else:
        console.print("no row has a valid score in both runs: nothing to pair")
    notes = [
        f"wins [green]{c.wins}[/]",
        f"losses [red]{c.losses}[/]",
        f"ties {c.ties}",
        f"only in A: {c.only_a}",
        f"only in B: {c.only_b}",
    ]
    if c.unscored:
        notes.append(f"no valid score in one run: {c.unscored}")
    if c.requirements_changed:
        notes.append(f"[yellow]requirements differ: {c.requirements_changed}[/]")
    console.print(" · ".join(notes))
    if not rows:
        console.print("no rows to show")
        return
    table = Table("row", "A", "B", "Δ", "n A/B", "prompt")
    widths = (min(max(len(r.row_id) for r in rows), 24), 5, 5, 6, 5)
    for column, width in zip(table.columns, widths):
        column.min_width = column.max_width = width
        column.no_wrap = True
    table.columns[0].overflow = "ellipsis"
    prompt_width = _rest(console, widths)
    for r in rows:
        delta = r.delta
        style = "green" if r.outcome == "improvement" else "red" if r.outcome == "regression" else ""
        shown = (
            _fmt(delta, sign=True)
            if delta is not None
            else {"only_a": "only A", "only_b": "only B"}.get(r.outcome, "–")
        )
        counts = f"{len(r.a.valid_scores) if r.a else '–'}/{len(r.b.valid_scores) if r.b else '–'}"
        table.add_row(
            escape(r.row_id),
            _fmt(r.mean_a),
            _fmt(r.mean_b),
            f"[{style}]{shown}[/]" if style else shown,
            counts,
            escape(clipped(one_line(r.prompt), prompt_width, words=True)),
        )
    console.print(table)


# --- stats -----------------------------------------------------------------------------------------------------------


def cmd_stats(args: argparse.Namespace) -> int:
    from svgagent.core.analysis.stats import run_stats
    from svgagent.core.analysis.step_components import step_components
    from svgagent.core.scoring.errors import ConfigError
    from svgagent.core.store.run_refs import resolve_run
    from svgagent.tui.cli.console import cli_console
    from svgagent.tui.cli.health_report import print_health, run_health_scope
    from svgagent.tui.cli.store_cmd import open_store

    if args.threshold is not None and not 0 <= args.threshold <= 1:
        raise ConfigError(f"--threshold must be between 0 and 1, got {args.threshold:g}")
    with open_store(args) as store:
        run = resolve_run(store, args.run_id)
        stats = run_stats(store, run.run_id, threshold=args.threshold, bins=args.bins, top=args.top)
        found = step_components(store, [run.run_id]).get(run.run_id)
        health, scope = run_health_scope(store, run.run_id)
    components = found.means if found is not None else {}  # the means of the parts that explain the scores
    if args.json:
        data = {
            "name": run.name,
            **stats.to_dict(),
            "components": components,
            "health": {**scope, **health.to_dict()},
        }
        print(json.dumps(data, indent=2, ensure_ascii=False))
        return EXIT_OK
    console = cli_console()
    print_stats(console, stats, run.name, width=args.width)
    print_components(console, components)
    console.print()
    print_health(console, health, scope)
    return EXIT_OK


def print_components(console: Console, means: dict[str, float | None]) -> None:
    """One line per score component (core/scoring/components.py): its mean over the run's rollouts."""
    from rich.table import Table

    from svgagent.core.analysis.step_components import PLOTTED

    table = Table("component", "mean", title="what explains the scores (means)", title_justify="left")
    for component in PLOTTED:
        value = means.get(component.key)
        if value is None:
            shown = "–"
        elif component.key == "score":
            shown = f"{value:.3f}"
        else:
            shown = f"{100 * value:.1f}%" if component.share else f"{value:,.1f}"
        table.add_row(component.label, shown)
    console.print(table)


def print_stats(console: Console, s: RunStats, name: str = "", *, width: int = 40) -> None:
    from rich.markup import escape
    from rich.table import Table

    title = f"[bold]{escape(name)}[/] ({s.run_id})" if name and name != s.run_id else f"[bold]{s.run_id}[/]"
    console.print(f"{title}: {s.rollouts} rollouts, {s.terminal} finished: {s.outcomes.text(all_three=True)}")
    if s.valid:
        console.print(
            f"mean {_fmt(s.mean)}{spread_text(s.stderr)} · median {_fmt(s.median)} · pass rate (score ≥ "
            f"{s.threshold:g}) {100 * (s.pass_rate or 0):.1f}% ({s.passed}/{s.valid})"
        )
        console.print()
        for line in s.histogram_lines(width):
            console.print(escape(line), highlight=False)
    else:
        console.print("no valid scores yet")
    console.print()
    table = Table("failure", "count", title="failures by category", title_justify="left")
    for category, count in s.failures.items():
        table.add_row(category, str(count))
    console.print(table)
    if s.by_requirement_count:
        table = Table(
            "requirements", "n", "mean", "± stderr", title="score by number of requirements", title_justify="left"
        )
        for g in s.by_requirement_count:
            table.add_row(str(g.key), str(g.n), _fmt(g.mean), _fmt(g.stderr))
        console.print(table)
    table = Table("", "n", "p50", "p90", "p99", title="latency and tokens", title_justify="left")
    for label, p in s.percentiles.items():
        digits = 0 if label == "tokens" else 2
        table.add_row(label, str(p.n), _fmt(p.p50, digits), _fmt(p.p90, digits), _fmt(p.p99, digits))
    console.print(table)
    report = s.requirements
    if report.most_failed:
        table = Table(
            "row",
            "#",
            "failed",
            "rate",
            "requirement",
            title=(
                f"requirements most often failed ({report.rollouts_with_verdicts} rollouts with verdicts, "
                f"{report.from_overrides} from human review)"
            ),
            title_justify="left",
        )
        widths = (
            min(max(len(r.row_id) for r in report.most_failed), 24),
            2,
            max(len(f"{r.failed}/{r.judged}") for r in report.most_failed),
            4,
        )
        for column, cells in zip(table.columns, widths):
            column.min_width = column.max_width = max(cells, len(str(column.header)))
            column.no_wrap = True
        table.columns[0].overflow = "ellipsis"
        text_width = _rest(console, tuple(c.min_width or 0 for c in table.columns[:-1]))
        for r in report.most_failed:
            table.add_row(
                escape(r.row_id),
                str(r.index),
                f"{r.failed}/{r.judged}",
                f"{100 * r.failure_rate:.0f}%",
                escape(clipped(one_line(r.text), text_width, words=True)),
            )
        console.print(table)
    else:
        console.print("no per-requirement verdicts (judge mode per-requirement, or review verdicts, provide them)")
    if report.count_only_overrides:
        console.print(
            f"{report.count_only_overrides} rollouts overridden with a count only are not in the requirement table"
        )


# --- import ----------------------------------------------------------------------------------------------------------


def cmd_import(args: argparse.Namespace) -> int:
    import contextlib

    from svgagent.core.config.project_trust import require_trusted
    from svgagent.core.config.settings import load_settings
    from svgagent.core.demo import demo_overrides, demo_simulator
    from svgagent.core.exchange.import_file import NothingImported, NotJsonLines, import_file, judge_imported
    from svgagent.core.scoring.errors import ConfigError
    from svgagent.tui.cli.interrupts import run_stoppable
    from svgagent.tui.cli.store_cmd import open_store_for_writing

    if args.demo and not args.judge:
        raise ConfigError("--demo only applies with --judge (it makes the simulator the judge)")
    overrides: dict[str, Any] = {
        k: getattr(args, k) for k in ("judge_model", "judge_base_url", "judge_mode", "threshold", "store")
    }
    err = sys.stderr
    with contextlib.ExitStack() as stack:
        if args.judge and args.demo:
            sim = stack.enter_context(demo_simulator(policy_latency_s=0.0, judge_latency_s=0.05))
            demo = demo_overrides(sim.base_url)
            overrides.update({k: v for k, v in demo.items() if k.startswith("judge") or k == "openai_api_key"})
        settings = load_settings(**overrides)
        if args.judge and settings.openai_api_key is None:
            raise ConfigError("--judge needs OPENAI_API_KEY (in .env or the environment) — or add --demo")
        if args.judge:
            require_trusted(settings, ("judge_base_url",))
        store = stack.enter_context(open_store_for_writing(settings.store_path()))
        try:
            result = import_file(store, args.file, name=args.name, settings=settings.public_dict(), strict=args.strict)
        except NothingImported as exc:
            if not isinstance(exc, NotJsonLines):  # a file that is not JSONL gets one message, not one per line
                _report_skipped(exc.skipped, exc.skipped_count, err)
            if args.json:
                print(
                    json.dumps(
                        {
                            "run_id": None,
                            "imported": 0,
                            "error": str(exc),
                            "skipped_count": exc.skipped_count,
                            "skipped": [{"line": s.line, "reason": s.reason} for s in exc.skipped],
                        }
                    )
                )
            print(f"svgagent: error: {exc}", file=err)
            return EXIT_USAGE
        _report_skipped(result.skipped, result.skipped_count, err)
        print(
            f"imported {result.imported} rollouts ({result.rows} rows) as run {result.run_id}: "
            f"{result.scored} scored, {result.failed} failed, {result.queued} without a score; "
            f"{result.skipped_count} lines skipped",
            file=err,
        )
        data: dict[str, Any] = result.to_dict()
        if result.queued and args.judge:
            print(f"judging {result.queued} rollouts with {settings.judge_model}…", file=err)
            summary = run_stoppable(lambda: judge_imported(store, result.run_id, settings))
            data["summary"] = summary.to_dict()
            print(
                f"judged: mean {_fmt(summary.mean_score)}{spread_text(summary.stderr)} over {summary.done} finished "
                f"rollouts ({summary.outcomes.text(all_three=True)})",
                file=err,
            )
        elif result.queued:
            print(f"{result.queued} rollouts have no score: import the file again with --judge to judge them", file=err)
        if args.json:
            print(json.dumps(data, indent=2))
        else:
            print(result.run_id)
    return EXIT_OK


SHOW_SKIPPED = 5


def _report_skipped(skipped: Any, count: int, out: Any) -> None:
    """The first few skipped lines and how many more: a bad file never floods the terminal."""
    for item in skipped[:SHOW_SKIPPED]:
        print(f"line {item.line}: skipped: {visible(item.reason)}", file=out)
    if count > SHOW_SKIPPED:
        print(f"… and {count - SHOW_SKIPPED} more skipped lines (--json lists up to 1000)", file=out)
