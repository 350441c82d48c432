"""`svgagent runs list|show`, `svgagent export` and `svgagent render`: headless, core only."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rich import box
from rich.cells import cell_len
from rich.markup import escape
from rich.table import Table

from svgagent.core.config.field_limits import bounds, numeric_range
from svgagent.core.config.prices import PriceTable, cost_text, price_table, rollout_cost, run_cost, usd_text
from svgagent.core.config.settings import Settings
from svgagent.core.exchange.export import export_run
from svgagent.core.named_files import STDOUT, TargetKind, resolve_target, write_output
from svgagent.core.scoring.errors import ConfigError, RenderError
from svgagent.core.scoring.judge_profiles import recipe_line
from svgagent.core.scoring.picture_size import OWN_SIZE
from svgagent.core.scoring.render import DEFAULT_MAX_BYTES
from svgagent.core.scoring.renderers import make_renderer
from svgagent.core.serve.training_runs import ServedRef, TrainingStore
from svgagent.core.store.outcomes import OutcomeCounts
from svgagent.core.store.run_refs import RunNotFound, resolve_run
from svgagent.core.store.run_store import Store
from svgagent.core.store.typed_rows import RunRecord, mean_text, spread_text
from svgagent.core.terminal_text import clipped, one_line
from svgagent.tui.cli.console import WIDE, cli_console
from svgagent.tui.cli.exit_codes import EXIT_OK
from svgagent.tui.cli.health_report import print_health, run_health_scope
from svgagent.tui.cli.store_cmd import open_store, store_path

_fmt = mean_text  # "–" for none, else the given decimals


def cmd_runs(args: argparse.Namespace) -> int:
    if args.runs_command == "list" and not (path := store_path(args)).exists():  # a fresh machine: nothing to list,
        print("[]" if args.json else f"no runs yet (the run store will be {path}): try `svgagent eval --demo`")
        return EXIT_OK  # and no store made just to say so
    with open_store(args) as store:
        if args.runs_command == "list":
            runs = store.list_runs()
            prices = run_prices(args)
            items = []
            for run in runs:
                model, judge = run.settings.get("model"), run.settings.get("judge_model")
                summary = run.summary or store.summarize(run.run_id, run.threshold).to_dict()
                rollouts, outcomes = store.outcome_counts(run.run_id)  # a served run has no stored summary
                items.append(
                    {
                        "run_id": run.run_id,
                        "name": run.name,
                        "created": run.created,
                        "status": run.status,
                        "model": model,
                        "dataset": run.dataset.get("name"),
                        "rollouts": rollouts,
                        "done": outcomes.scored + outcomes.unscored,
                        **outcomes.to_dict(),  # scored · invalid · failed (README)
                        "mean_score": summary["mean_score"],
                        "cost": run_cost(store, run.run_id, prices, model, judge).to_dict(),  # every attempt
                    }
                )
            if args.json:
                print(json.dumps(items, indent=2))
                return EXIT_OK
            # done/rollouts next to the mean: a stopped run's mean is of its finished rollouts only
            console = cli_console()
            console.print(_runs_table(items, console.width, fit=console.width < WIDE) if items else NO_RUNS)
            return EXIT_OK
        run, served = _run_or_served(store, args.run_id)
        rollouts = store.list_rollouts(run.run_id)
        summary = store.summarize(run.run_id, run.threshold)
        prices = run_prices(args)
        model, judge = run.settings.get("model"), run.settings.get("judge_model")
        cost = run_cost(store, run.run_id, prices, model, judge)
        health, scope = run_health_scope(store, run.run_id)
        if args.json:
            data = {
                "run": {
                    **run.public_dict(),
                    "summary": summary.to_dict(),
                    "cost": cost.to_dict(),
                    "health": {**scope, **health.to_dict()},
                },
                "rollouts": [
                    {**r.public_dict(), "cost": rollout_cost(r, prices, model, judge).to_dict()} for r in rollouts
                ],
            }
            print(json.dumps(data, indent=2))
            return EXIT_OK
        console = cli_console()
        console.print(
            f"[bold]{escape(run.name)}[/] ({run.run_id}) {run.status} — {escape(str(run.settings.get('model')))} on "
            f"{escape(str(run.dataset.get('name')))}; {summary.done}/{summary.rollouts} done "
            f"({summary.outcomes.text(all_three=True)}), mean {_fmt(summary.mean_score)}{spread_text(summary.stderr)}"
        )
        console.print(
            f"judged by {escape(str(run.settings.get('judge_model')))} with the {escape(run.judge_profile)} profile"
            f" ({escape(recipe_line(run.judge_profile))}); drawn by {escape(run.renderer)}"
        )
        console.print(
            f"cost {cost_text(cost)}; tokens: policy {cost.policy_tokens:,}, judge {cost.judge_tokens:,}",
            highlight=False,
        )
        print_health(console, health, scope, brief=True)
        if served is not None:
            console.print(
                f"eval-protocol rollout {escape(served.ep_rollout_id)} is rollout {served.rollout_id} of this run"
                f" (training {escape(served.training_id)}, step {served.step})"
            )
        ep_ids = any(r.ep_rollout_id for r in rollouts)  # a served run: eval-protocol's ids beside ours
        header = ("rollout", "ep rollout", *ROLLOUT_COLUMNS[1:]) if ep_ids else ROLLOUT_COLUMNS
        cells = [
            (
                r.rollout_id.removeprefix(run.run_id + "."),
                *((r.ep_rollout_id or "–",) if ep_ids else ()),
                r.row_id,
                str(r.sample_index),
                r.outcome.value if r.outcome is not None else r.status.value,  # scored · invalid · failed
                _fmt(r.score),
                f"{r.fulfilled if r.fulfilled is not None else '–'}/{r.total}",
                _fmt(r.generation_s, 1),
                _fmt(r.judge_s, 1),
                usd_text(rollout_cost(r, prices, model, judge).total_usd),
            )
            for r in rollouts
        ]
        if reason_room(console.width, header, cells) is None:  # no room for the dollars too: --json has them
            header, cells = header[:-1], [row[:-1] for row in cells]
        table = Table(*header)
        for column in table.columns:
            column.no_wrap = True
        room = reason_room(console.width, header, cells)
        # a reason's first words (its whole text: --json), cut between words and marked "…"
        reasons = [clipped(one_line(r.reason), min(REASON_CHARS, room or REASON_CHARS), words=True) for r in rollouts]
        if room is not None:  # else there is no room for it: every other column stays whole (the score above all)
            table.add_column("reason", no_wrap=True, overflow="ellipsis", max_width=room)
        for row, reason in zip(cells, reasons):
            table.add_row(*(escape(cell) for cell in row), *([escape(reason)] if room is not None else []))
        console.print(table)
        if room is None and any(reasons):
            console.print("(no room for the reasons: see them in a wider terminal or with --json)")
        return EXIT_OK


def run_prices(args: argparse.Namespace) -> PriceTable:
    """The price table with the ``prices`` setting on top (as the settings read it for this store)."""
    from svgagent.core.config.settings import load_settings

    return price_table(load_settings(**({"store": args.store} if getattr(args, "store", None) else {})).prices)


def _run_or_served(store: Store, ref: str) -> tuple[RunRecord, ServedRef | None]:
    """The run ``ref`` names; failing that, the run holding the served rollout whose eval-protocol rollout id is
    ``ref`` (the id the Fireworks dashboard shows), with where that rollout is."""
    try:
        return resolve_run(store, ref), None
    except RunNotFound:
        served = TrainingStore(store).served(ref.strip())
        if served is None:
            raise
        return store.get_run(served.run_id), served


ROLLOUT_COLUMNS = ("rollout", "row", "sample", "status", "score", "ok/total", "gen s", "judge s", "$")
REASON_CHARS = 60  # a reason's first characters (its whole text: --json)
MIN_REASON = 10


RUNS_WIDE = 100  # narrower than this, `runs list` leaves out what it can say otherwise
NO_RUNS = "no runs yet: try `svgagent eval --demo`"


def _runs_table(items: list[dict[str, Any]], width: int, *, fit: bool) -> Table:
    """The runs, a line each: the name column only when some run has a name of its own, the creation time only
    when there is room (a run's id begins with it: 20261207-160156-…); the status, counts, mean and dollars are
    never cut — the run's name and the model's give way (narrow: the model's last part, "qwen3-0p6b"). ``fit``: a
    width to fill (a terminal's, or COLUMNS; in a pipe nothing is cut: the table is as wide as its text)."""
    named = any(it["name"] != it["run_id"] for it in items)
    wide = width >= RUNS_WIDE
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True, expand=fit)
    table.add_column("run", no_wrap=True)
    if named:
        table.add_column("name", overflow="ellipsis", no_wrap=True, ratio=1)
    if wide:
        table.add_column("created", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("model", overflow="ellipsis", no_wrap=True, ratio=1)
    for name in ("done", "outcomes", "mean", "cost"):
        table.add_column(name, no_wrap=name != "outcomes", justify="right" if name in ("mean", "cost") else "left")
    for it in items:
        table.add_row(
            it["run_id"],
            *(["" if it["name"] == it["run_id"] else escape(it["name"])] if named else []),  # no name of its own
            *([it["created"][:16].replace("T", " ")] if wide else []),  # to the minute, as the app shows times
            it["status"],
            escape(str(it["model"]) if wide else str(it["model"]).rsplit("/", 1)[-1]),  # narrow: the model's own name
            f"{it['done']}/{it['rollouts']}",
            OutcomeCounts(it["scored"], it["invalid"], it["failed"]).text(),
            _fmt(it["mean_score"]),
            usd_text(it["cost"]["total_usd"]),
        )
    return table


def reason_room(width: int, header: tuple[str, ...], cells: list[tuple[str, ...]]) -> int | None:
    """The cells a last column (the reason) can have in a rich Table of ``width`` whose other columns keep their
    whole ``header`` and ``cells``; None below :data:`MIN_REASON` (rich would squeeze every column to fit it,
    down to nothing)."""
    natural = [max([cell_len(h), *(cell_len(row[i]) for row in cells)]) for i, h in enumerate(header)]
    columns = len(header) + 1
    room = width - sum(natural) - 2 * columns - (columns + 1)  # a space each side of a cell, a border between
    return room if room >= MIN_REASON else None


def cmd_export(args: argparse.Namespace) -> int:
    target = args.output if args.output not in (None, STDOUT) else None
    if target is not None:
        resolve_target(target)  # a directory or a missing directory: say so before reading the store
    with open_store(args) as store:
        result = export_run(
            store,
            resolve_run(store, args.run_id).run_id,
            args.format,
            target,
            assets=Path(args.assets) if getattr(args, "assets", None) else None,
            out=sys.stdout,
        )
    if result.path is not None:
        print(f"exported {result.rollouts} rollouts of {result.run_id} to {result.path}", file=sys.stderr)
    if result.assets_dir is not None:
        print(f"wrote {result.pngs} PNGs and {result.svgs} SVGs to {result.assets_dir}", file=sys.stderr)
    return EXIT_OK


def _render_size(size: int) -> int:
    """``--size`` within the render_size setting's range (one declaration of it)."""
    info = Settings.model_fields["render_size"]
    low, high, _ = bounds(info)
    if (low is not None and size < low) or (high is not None and size > high):
        raise ConfigError(f"--size {size}: the longest side must be {numeric_range(info)} pixels")
    return size


def read_svg_input(name: str, limit: int = DEFAULT_MAX_BYTES) -> bytes:
    """The SVG file ``name`` or, for ``-``, standard input (as ``-o -`` is standard output), read up to the
    renderer's ``limit``: a larger file or an endless stream is refused after ``limit + 1`` bytes, never read
    whole (`render /dev/zero` ran out of memory)."""
    shown = "standard input" if name == STDOUT else name
    try:
        if name == STDOUT:
            data = sys.stdin.buffer.read(limit + 1)
        else:
            with open(name, "rb") as source:
                data = source.read(limit + 1)
    except OSError as err:
        raise ConfigError(f"cannot read {shown}: {err.strerror or err}") from None
    if len(data) > limit:
        raise ConfigError(f"{shown} is too large to render: over {limit:,} bytes (the renderer's limit)")
    return data


def cmd_render(args: argparse.Namespace) -> int:
    """Render one SVG file (``-``: standard input); every error is one line and exit status 2; ``-o -`` writes the
    PNG to stdout."""
    size = _render_size(args.size)
    kind, _ = resolve_target(args.output)  # refuse a directory / missing directory before rendering
    data = read_svg_input(args.input)
    choice = argparse.Namespace(
        renderer=getattr(args, "renderer", "cairosvg"),
        chromium_path=getattr(args, "chromium", None),
        render_size=size,
        render_timeout_s=Settings.model_fields["render_timeout_s"].default,
        render_memory_mb=Settings.model_fields["render_memory_mb"].default,
    )
    try:
        with make_renderer(choice, workers=1) as renderer:
            png = renderer.render_sync(data, OWN_SIZE if getattr(args, "own_size", False) else size)
    except RenderError as err:
        raise ConfigError(f"render failed: {err}") from None
    write_output(args.output, png)
    if kind is not TargetKind.STDOUT:
        print(f"wrote {args.output} ({len(png):,} bytes)", file=sys.stderr)
    return EXIT_OK
