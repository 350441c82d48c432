"""`svgagent eval --dry-run`: what the run would cost — rows × samples × expected tokens → dollars — calling nothing
and writing nothing (core/run/budget.py says where the expected tokens come from)."""

from __future__ import annotations

import argparse
import contextlib
import json
from typing import Any

from svgagent.core.config.prices import price_table, usd_text
from svgagent.core.config.settings import Settings
from svgagent.core.run.budget import Estimate, TokensPerCall, estimate_run
from svgagent.core.run.dataset import load_dataset
from svgagent.core.scoring.errors import StoreError
from svgagent.core.scoring.models import DatasetRow
from svgagent.core.store.run_refs import resolve_run
from svgagent.core.store.run_store import Store
from svgagent.core.terminal_text import visible
from svgagent.tui.cli.exit_codes import EXIT_OK


def cmd_dry_run(args: argparse.Namespace, settings: Settings) -> int:
    table = price_table(settings.prices)
    path = settings.store_path()
    with contextlib.ExitStack() as stack:
        store = stack.enter_context(Store(path, readonly=True)) if path.exists() else None
        if args.resume:
            if store is None:
                raise StoreError(f"no run {args.resume!r}: there is no run store at {path} yet")
            run = resolve_run(store, args.resume)
            settings = settings.model_copy(
                update={k: v for k, v in run.settings.items() if k in ("model", "judge_model")}
            )
            left = [r for r in store.list_rollouts(run.run_id) if not r.status.terminal]
            rows: list[Any] = [DatasetRow(r.row_index, r.row_id, r.prompt, tuple(r.requirements)) for r in left]
            estimate = estimate_run(table, store, settings, rows, 1)
            what = f"the {len(left)} unfinished rollouts of run {run.run_id}"
        else:
            dataset = load_dataset(settings.dataset)
            rows = list(dataset.rows[: settings.rows] if settings.rows else dataset.rows)
            estimate = estimate_run(table, store, settings, rows, settings.samples)
            what = f"{estimate.rows} rows × {estimate.samples} samples = {estimate.calls} rollouts of {dataset.name}"
    if args.json:
        print(
            json.dumps({"dry_run": True, **estimate.to_dict(), "budget": settings.budget, "prices_as_of": table.as_of})
        )
        return EXIT_OK
    for line in dry_run_lines(estimate, settings, what, table.as_of):
        print(visible(line))
    return EXIT_OK


def _tokens(t: TokensPerCall) -> str:
    where = f"the mean of {t.measured:,} stored calls" if t.measured else "the price table's expectation"
    return f"~{t.prompt:,.0f} prompt + {t.completion:,.0f} completion tokens a call ({where})"


def dry_run_lines(e: Estimate, settings: Settings, what: str, as_of: str) -> list[str]:
    lines = [
        f"dry run: {what}",
        f"  policy {settings.model}: {_tokens(e.policy)} → {usd_text(e.policy_usd)}",
        f"  judge  {settings.judge_model}: {_tokens(e.judge)}, one picture → {usd_text(e.judge_usd)}",
        f"  expected total {usd_text(e.total_usd)} (list prices{f' as of {as_of}' if as_of else ''}; nothing was "
        "called)",
    ]
    for side, usd, model in (("policy", e.policy_usd, settings.model), ("judge", e.judge_usd, settings.judge_model)):
        if usd is None:
            lines.append(
                f'  the {side} model {model} has no price: add it to your config ([prices."{model}"] input, output)'
            )
    if settings.budget is not None and e.total_usd is not None:
        if e.total_usd <= settings.budget:
            lines.append(f"  within the budget of {usd_text(settings.budget)}")
        else:
            per = e.total_usd / max(e.calls, 1)
            lines.append(
                f"  over the budget of {usd_text(settings.budget)}: the run would stop after about "
                f"{int(settings.budget / per) if per else e.calls} of {e.calls} rollouts (resumable)"
            )
    return lines
