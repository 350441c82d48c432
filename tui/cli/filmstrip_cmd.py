"""`svgagent runs filmstrip ROW (--job JOB | RUN...)`: one prompt's pictures at every step, as a PNG contact sheet
(core/analysis/filmstrip.py reads them, contact_sheet.py draws them). Headless, core only."""

from __future__ import annotations

import argparse
import json
import re
import sys

from svgagent.core.analysis.filmstrip import StripColumn, filmstrip, frame_pngs, spread
from svgagent.core.store.run_refs import RUN_HELP
from svgagent.tui.cli.exit_codes import EXIT_OK

FILMSTRIP_EPILOG = """\
ROW is a row id (row_3; in a training run, eval-protocol's row id) or, when no run has that id, a row index (3).
With --job, the columns are the steps of the job's training run (as `svgagent serve --job` stored them) that hold
the row; with RUNs, the runs in the order given. Each picture is printed with its score (a person's override
first; "invalid" for a rollout that could not be scored) and the first words of its rationale.

examples:
  svgagent runs filmstrip row_3 --job svgagent-rft-1a2b3c -o row3.png
  svgagent runs filmstrip 0 BASE_RUN TRAINED_RUN --json
"""

MAX_COLUMNS = 40


def add_filmstrip_parser(runs_sub: argparse._SubParsersAction) -> None:
    from svgagent.tui.cli.flags import add_json, add_store

    p = runs_sub.add_parser(
        "filmstrip",
        help="one prompt's pictures at every step, as a PNG contact sheet",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Write a PNG contact sheet of one dataset row: a column per step (or run), a line per sample, "
        "each picture with its score and one line of rationale.",
        epilog=FILMSTRIP_EPILOG,
    )
    p.add_argument("row", metavar="ROW", help="a row id, or a row index")
    p.add_argument("runs", metavar="RUN", nargs="*", help=f"runs, as columns in this order: {RUN_HELP}")
    p.add_argument("--job", help="an RFT job (its name or id): the steps of its training run")
    p.add_argument("-o", "--output", metavar="FILE.png", help="where to write the sheet (default: filmstrip-ROW.png)")
    p.add_argument("--cell", type=int, default=160, help="a picture's side in pixels, 48..512 (default 160)")
    p.add_argument(
        "--columns",
        type=int,
        default=MAX_COLUMNS,
        help=f"at most this many steps, evenly spaced (default {MAX_COLUMNS})",
    )
    add_json(p)
    add_store(p)
    p.set_defaults(analysis="filmstrip")


def _columns(store, args: argparse.Namespace) -> list[StripColumn]:  # type: ignore[no-untyped-def]
    from svgagent.core.scoring.errors import ConfigError
    from svgagent.core.serve.training_runs import TrainingStore
    from svgagent.core.store.run_refs import resolve_run

    if bool(args.job) == bool(args.runs):
        raise ConfigError("name the steps: --job JOB, or one or more RUNs (not both)")
    if args.job:
        training = TrainingStore(store)
        found = training.trainings(args.job) or [  # a job's short id names it too
            t for t in training.trainings() if (t.job_name or "").rsplit("/", 1)[-1] == args.job
        ]
        if not found:
            raise ConfigError(f"no served rollouts for job {args.job!r} (`svgagent serve --job` stores them)")
        return [StripColumn(f"step {s.step}", s.run_id, s.step) for s in training.step_refs(found[0].training_id)]
    columns = []
    for ref in args.runs:
        run = resolve_run(store, ref)
        step = run.settings.get("step") if isinstance(run.settings.get("step"), int) else None
        columns.append(StripColumn(f"step {step}" if step is not None else run.name[:40], run.run_id, step))
    return columns


def _default_name(row: str) -> str:
    return f"filmstrip-{re.sub(r'[^A-Za-z0-9_.-]+', '_', row)[:60]}.png"


def cmd_filmstrip(args: argparse.Namespace) -> int:
    from svgagent.core.analysis.contact_sheet import contact_sheet
    from svgagent.core.named_files import STDOUT, resolve_target, write_output
    from svgagent.core.scoring.errors import ConfigError
    from svgagent.core.terminal_text import visible_line
    from svgagent.tui.cli.store_cmd import open_store

    if not 48 <= args.cell <= 512:
        raise ConfigError(f"--cell must be between 48 and 512 pixels, got {args.cell}")
    if args.columns < 1:
        raise ConfigError(f"--columns must be at least 1, got {args.columns}")
    output = args.output or _default_name(args.row)
    if output == STDOUT and args.json:
        raise ConfigError("-o - writes the PNG to standard output: --json cannot share it")
    resolve_target(output)  # a directory or a missing directory: said before reading the store
    with open_store(args) as store:
        strip = filmstrip(store, _columns(store, args), args.row)
        if len(strip.columns) > args.columns:
            kept = spread(strip.columns, args.columns)
            print(f"{len(strip.columns)} steps hold the row: {len(kept)} of them shown", file=sys.stderr)
            strip = filmstrip(store, kept, args.row)
        png = contact_sheet(strip, frame_pngs(store, strip.frames), cell=args.cell)
    write_output(output, png)
    if args.json:
        print(json.dumps({**strip.to_dict(), "output": output}, indent=2, ensure_ascii=False))
    if output != STDOUT:
        print(
            f"wrote {output}: {visible_line(strip.row_id)} at {len(strip.columns)} steps, {len(strip.frames)} pictures",
            file=sys.stderr,
        )
    return EXIT_OK
