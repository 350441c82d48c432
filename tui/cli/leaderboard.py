"""`svgagent runs leaderboard [RUN…|--all|--filter TEXT]`: N runs side by side (core/analysis/leaderboard.py),
as a table, JSON or CSV. Headless, core only."""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from typing import TYPE_CHECKING

from svgagent.core.store.run_refs import RUN_HELP
from svgagent.tui.cli.exit_codes import EXIT_OK
from svgagent.tui.cli.flags import add_store

if TYPE_CHECKING:
    from rich.console import Console

    from svgagent.core.analysis.leaderboard import Leaderboard, LeaderboardRow

EPILOG = """\
One row per run: model, judge profile, dataset, dataset rows, mean ± standard error of the valid effective
scores, pass rate (score ≥ the run's threshold), Δ best: the paired difference from the best run over the rows
every run scored (± its standard error), dollars (policy + judge, every attempt, at the price table's rates:
the `prices` setting overrides them), the policy's median latency, and the kinds of requirement it misses most
(colour, position, count, text, shape — from per-requirement verdicts: judge mode per-requirement or review).
The last line says which model to pick.

examples:
  svgagent runs leaderboard RUN_A RUN_B RUN_C
  svgagent runs leaderboard --filter qwen --sort cost
  svgagent runs leaderboard --all --csv > board.csv
"""

SORTS = ("mean", "stderr", "pass_rate", "diff", "cost", "latency", "rows", "model", "judge_profile", "dataset", "name")


def add_leaderboard_parser(runs_sub: argparse._SubParsersAction) -> None:
    p = runs_sub.add_parser(
        "leaderboard",
        help="N runs side by side: mean, pass rate, paired Δ from the best, cost, latency, failure themes",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Compare any number of runs and pick a base model.",
        epilog=EPILOG,
    )
    p.add_argument("runs", nargs="*", metavar="RUN", help=f"runs to compare: {RUN_HELP} (each)")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--all", action="store_true", help="every stored run")
    which.add_argument(
        "--filter", metavar="TEXT", help="the runs whose id, name, model, dataset or status hold every word of TEXT"
    )
    p.add_argument("--sort", choices=SORTS, help="order by this column, best first (default: Δ from the best)")
    p.add_argument("--reverse", action="store_true", help="worst first")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print one JSON object to stdout")
    out.add_argument("--csv", action="store_true", help="print CSV to stdout (one line per run)")
    add_store(p)
    p.set_defaults(board=True)


def cmd_leaderboard(args: argparse.Namespace) -> int:
    from svgagent.core.analysis.leaderboard import build_leaderboard
    from svgagent.core.config.prices import price_table
    from svgagent.core.config.settings import load_settings
    from svgagent.core.scoring.errors import ConfigError
    from svgagent.core.store.run_refs import filter_runs, resolve_run
    from svgagent.tui.cli.console import cli_console
    from svgagent.tui.cli.store_cmd import open_store

    given = bool(args.runs) + bool(args.all) + (args.filter is not None)
    if given != 1:
        raise ConfigError("name the runs to compare: RUN… (two or more), --all, or --filter TEXT")
    prices = price_table(load_settings(**({"store": args.store} if args.store else {})).prices)
    with open_store(args) as store:
        if args.runs:
            ids = [resolve_run(store, ref).run_id for ref in args.runs]
        else:
            ids = [r.run_id for r in filter_runs(store.list_runs(), "" if args.all else args.filter)]
        if not ids:
            raise ConfigError(f"no run matches {args.filter!r}" if args.filter else "no runs stored yet")
        board = build_leaderboard(store, ids, prices=prices)
    rows = board.sorted(args.sort, reverse=args.reverse) if args.sort else list(board.rows)
    if args.sort is None and args.reverse:
        rows.reverse()
    if args.json:
        print(json.dumps(board.to_dict(rows), indent=2, ensure_ascii=False))
    elif args.csv:
        sys.stdout.write(leaderboard_csv(rows))
    else:
        print_leaderboard(cli_console(), board, rows)
    return EXIT_OK


CSV_COLUMNS = (
    "rank",
    "run_id",
    "name",
    "model",
    "judge_model",
    "judge_profile",
    "dataset",
    "rows",
    "rollouts",
    "valid",
    "mean",
    "stderr",
    "pass_rate",
    "shared_mean",
    "diff_vs_best",
    "diff_stderr",
    "wins",
    "losses",
    "is_best",
    "policy_usd",
    "judge_usd",
    "total_usd",
    "policy_tokens",
    "judge_tokens",
    "latency_p50_s",
    "latency_p90_s",
    "themes",
)


def leaderboard_csv(rows: list[LeaderboardRow]) -> str:
    """One line per run; text cells neutralised as every CSV svgagent writes (core/exchange/export.py)."""
    from svgagent.core.exchange.export import neutralise_cell

    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(CSV_COLUMNS)
    for rank, r in enumerate(rows, start=1):
        data = r.to_dict()
        cost = data.pop("cost")
        data.update(cost)
        data["rank"] = rank
        data["themes"] = "; ".join(f"{t.theme} {t.failed}/{t.judged}" for t in r.themes)
        writer.writerow([neutralise_cell("" if data[c] is None else data[c]) for c in CSV_COLUMNS])
    return buf.getvalue()


def _num(value: float | None, digits: int = 3, *, sign: bool = False) -> str:
    if value is None:
        return "–"
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


WIDE = 140  # below this many columns the table leaves out judge profile, dataset, rows and latency


def print_leaderboard(console: Console, board: Leaderboard, rows: list[LeaderboardRow]) -> None:
    from rich.markup import escape
    from rich.table import Table

    from svgagent.core.analysis.leaderboard import model_label
    from svgagent.core.config.prices import usd_text
    from svgagent.core.terminal_text import visible_line

    def cell(text: str, width: int = 40) -> str:
        flat = visible_line(text)
        return escape(flat if len(flat) <= width else flat[: width - 1] + "…")

    wide = console.width >= WIDE
    headers = [
        *(("#",) if wide else ()),
        "model / run",
        *(("profile", "data", "rows") if wide else ()),
        "mean ± se",
        "pass",
        "Δ best",
    ]
    headers += ["$", *(("p50 s",) if wide else ()), "misses most"]
    table = Table(*headers)
    for column in table.columns:
        column.no_wrap = column.header not in ("model / run", "misses most")
        if column.header in ("#", "rows", "mean ± se", "pass", "Δ best", "$", "p50 s"):
            column.justify = "right"
    table.columns[1 if wide else 0].min_width = 14
    digits = 3 if wide else 2
    for rank, r in enumerate(rows, start=1):
        name = "" if r.name == r.run_id else f"\n[dim]{cell(r.name, 30)}[/]"
        diff = (
            "[bold]best[/]"
            if r.is_best
            else f"{_num(r.diff_vs_best, digits, sign=True)}"
            + ("" if r.diff_stderr is None else f" ±{r.diff_stderr:.2f}")
        )
        mean = _num(r.mean, digits) + ("" if r.stderr is None else f" ±{r.stderr:.2f}")
        cells = [*((str(rank),) if wide else ()), cell(model_label(r.model), 40) + name]
        if wide:
            cells += [cell(r.judge_profile, 14), cell(r.dataset, 18), str(r.rows)]
        cells += [mean, "–" if r.pass_rate is None else f"{100 * r.pass_rate:.0f}%", diff, usd_text(r.usd)]
        if wide:
            cells.append(_num(r.latency_p50_s, 1))
        cells.append(escape(r.theme_text(2 if wide else 1)) or "[dim]–[/]")
        table.add_row(*cells)
    console.print(table)
    if board.shared_rows:
        console.print(f"Δ best: paired over the {board.shared_rows} rows every run scored")
    for note in board.notes:
        console.print(f"[yellow]note:[/] {cell(note, 400)}")
    console.print(f"[bold]{cell(board.summary, 600)}[/]")
