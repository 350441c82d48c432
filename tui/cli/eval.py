"""`svgagent eval`: a whole run headless, with a progress bar on stderr and a summary at the end."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shlex
import signal
import sys
import time
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from svgagent.core.config.prices import Cost, cost_text, price_table, run_cost
from svgagent.core.config.project_trust import require_trusted
from svgagent.core.config.settings import Settings, load_settings
from svgagent.core.run.budget import BudgetReached
from svgagent.core.run.dataset import load_dataset
from svgagent.core.run.engine import Engine
from svgagent.core.run.follow import LiveRows, RunFollower
from svgagent.core.scoring.errors import ConfigError, RunBusy, StoreError
from svgagent.core.startup_gc import long_run_heap
from svgagent.core.store.run_refs import resolve_run
from svgagent.core.store.run_store import Store
from svgagent.core.store.typed_rows import RunSummary, mean_text, spread_text
from svgagent.core.terminal_text import visible
from svgagent.tui.cli.exit_codes import EXIT_BELOW, EXIT_BUDGET, EXIT_INCOMPLETE, EXIT_OK, EXIT_USAGE
from svgagent.tui.cli.flags import explicit_settings, flag_name
from svgagent.tui.cli.interrupts import Stopped, run_stoppable
from svgagent.tui.cli.store_cmd import open_store_for_writing

if TYPE_CHECKING:
    from rich.console import Console


def require_keys(settings: Settings) -> None:
    missing = settings.missing_keys()
    if missing:
        names = " and ".join(missing)
        raise ConfigError(
            f"{names} {'is' if len(missing) == 1 else 'are'} not set: add {'it' if len(missing) == 1 else 'them'}"
            " to .env in this directory (see .env.example) or the environment — or try --demo"
        )


def cmd_eval(args: argparse.Namespace) -> int:
    flags = explicit_settings(args)  # what the person typed (demo mode adds its endpoints and models below)
    overrides = dict(flags)
    with contextlib.ExitStack() as stack:
        if args.demo:
            from svgagent.core.demo import demo_overrides, demo_policy_knobs, demo_simulator  # only for --demo

            # the simulated policy plays the settings' model: its name, temperature and training change the answers
            sim = stack.enter_context(demo_simulator(**demo_policy_knobs(load_settings(**overrides))))
            overrides.update(demo_overrides(sim.base_url, model=None))
        settings = load_settings(**overrides)
        if getattr(args, "dry_run", False):
            from svgagent.tui.cli.dry_run import cmd_dry_run

            return cmd_dry_run(args, settings)
        if args.resume:
            if not settings.store_path().exists():
                raise StoreError(f"no run {args.resume!r}: there is no run store at {settings.store_path()} yet")
            store = stack.enter_context(Store(settings.store_path()))
            run = resolve_run(store, args.resume)
            store.check_not_leased(run.run_id)  # another worker on it: say so before printing anything
            stored = run.measured_settings  # its judge profile and renderer included, whatever the config says now
            refuse_changes_on_resume(run.run_id, stored, run.dataset, flags, args)
            # a run stored without a threshold keeps the one every summary of it uses (a flag still wins)
            settings = load_settings(**{**stored, "threshold": run.threshold, **overrides})
            run_id, dataset = run.run_id, None
            require_keys(settings)
            require_trusted(settings)
        else:
            run_id = None
            dataset = load_dataset(settings.dataset)  # bad data or keys: fail before anything is written
            if settings.rows is not None and settings.rows > len(dataset.rows):  # capped, and said so
                given = f"--rows {settings.rows}" if "rows" in flags else f"rows = {settings.rows} (from the settings)"
                print(
                    f"svgagent: {given}: the dataset has {len(dataset.rows)} rows; running {len(dataset.rows)}",
                    file=sys.stderr,
                )
            require_keys(settings)
            require_trusted(settings)
            store = stack.enter_context(open_store_for_writing(settings.store_path()))
        return _execute(args, settings, store, dataset, run_id)


def refuse_other_cache_choice(run_id: str, stored: dict[str, Any], overrides: dict[str, Any]) -> None:
    """A resume keeps the run's cache choice (the engine holds to it): a flag saying otherwise is refused rather
    than ignored."""
    chosen = stored.get("cache")
    if "cache" in overrides and isinstance(chosen, bool) and overrides["cache"] is not chosen:
        raise ConfigError(
            f"run {run_id} was started {'with' if chosen else 'without'} the response cache and a "
            f"resume keeps that choice: drop --{'no-' if chosen else ''}cache (or start a new run)"
        )


# The settings that decide what a run measures: a resume finishes the run as it was started, so a flag giving one
# of them another value than the run stored is refused, not obeyed for the rest of the rollouts.
MEASURED = (
    "model",
    "judge_model",
    "judge_mode",
    "judge_profile",
    "render_size",
    "renderer",
    "dataset",
    "rows",
    "samples",
    "temperature",
    "max_tokens",
)  # how the policy samples is part of what is measured


def refuse_changes_on_resume(
    run_id: str, stored: dict[str, Any], dataset: dict[str, Any], flags: dict[str, Any], args: argparse.Namespace
) -> None:
    """Everything a resume (``flags``: the settings the person typed) may not change about the run it continues,
    ``stored`` its settings and ``dataset`` its dataset reference: demo mode either way, the cache choice, what the
    run measures (:data:`MEASURED`), and a threshold it stored (a run stored without one takes the flag's)."""
    refuse_other_cache_choice(run_id, stored, flags)
    if not args.demo and made_with_demo(stored, flags):
        # the simulator's loopback address is long gone: resumed without --demo, your keys went to whatever listens
        # on that port now, and every unfinished rollout failed as unreachable
        words = resume_command(args, run_id).replace("svgagent eval ", "svgagent eval --demo ", 1)
        raise ConfigError(f"run {run_id} was made with the built-in simulator (--demo); continue it with: {words}")
    if args.demo and not made_with_demo(stored):
        raise ConfigError(
            f"--demo: run {run_id} was not made with the built-in simulator (its policy is "
            f"{stored.get('model')!r}): a resume keeps what the run measures; drop --demo"
        )
    for name in (*MEASURED, "threshold"):
        if name not in flags or name not in stored or (stored[name] is None and name != "rows"):
            continue  # not given, or the run stored no value: the flag's is the run's from now on
        new, old = flags[name], stored[name]
        if new == old or (name == "dataset" and _same_dataset_file(str(new), dataset)):
            continue
        shown = "unset (all of the dataset's)" if name == "rows" and old is None else repr(old)
        why = "the stored threshold is the run's" if name == "threshold" else "a resume keeps what the run measures"
        raise ConfigError(
            f"{flag_name(name)} {new!r}: run {run_id} was stored with {name} {shown} ({why}); drop "
            f"{flag_name(name)} (or start a new run)"
        )


def _same_dataset_file(given: str, dataset: dict[str, Any]) -> bool:
    """``--dataset given`` names the dataset the run was made from (its stored ``source``)."""
    from svgagent.core.run.dataset import dataset_source

    try:
        return dataset_source(given) == str(dataset.get("source"))
    except (OSError, RuntimeError, ValueError):  # a path that cannot be resolved names no stored file
        return False


def made_with_demo(stored: dict[str, Any], overrides: Collection[str] = ()) -> bool:
    """Whether a run with ``stored`` settings has the built-in simulator as its policy or judge, on a loopback
    address that none of ``overrides`` (setting names given as flags) replaces."""
    from urllib.parse import urlsplit

    from svgagent.core.demo import DEMO_JUDGE_MODEL, DEMO_POLICY_MODEL
    from svgagent.core.urls import is_loopback_host

    def simulated(model: str, url: str) -> bool:
        if stored.get(model) not in (DEMO_POLICY_MODEL, DEMO_JUDGE_MODEL) or url in overrides:
            return False
        try:
            return is_loopback_host(urlsplit(str(stored.get(url))).hostname or "")
        except ValueError:
            return False

    return simulated("model", "base_url") or simulated("judge_model", "judge_base_url")


def resume_command(args: argparse.Namespace, run_id: str) -> str:
    """The command that continues ``run_id`` as this one was started (demo mode and store kept)."""
    words = ["svgagent", "eval"]
    if args.demo:
        words.append("--demo")
    if getattr(args, "store", None):
        words += ["--store", str(args.store)]
    words += ["--resume", run_id]
    return shlex.join(words)


def _execute(args: argparse.Namespace, settings: Settings, store: Store, dataset: Any, resume_id: str | None) -> int:
    started = time.monotonic()
    holder: dict[str, str] = {}

    async def main() -> tuple[str, RunSummary]:
        engine = Engine(settings, store)
        try:
            run_id = resume_id or engine.create_run(dataset, name=args.name)
            holder["run_id"] = run_id
            header = f"run [bold]{run_id}[/] → {settings.model} judged by {settings.judge_model}"
            summary = await with_progress(engine, run_id, header, always_header=not args.json)
            return run_id, summary
        finally:
            await engine.aclose()

    try:
        run_id, summary = run_stoppable(main)
    except Stopped as stop:
        if "run_id" not in holder:
            print(f"\nsvgagent: stopped ({stop}) before the run was created", file=sys.stderr)
            return stop.exit_code
        what = "interrupted" if stop.signum == signal.SIGINT else "terminated"
        print(
            f"\n{what}: finished rollouts are saved. Continue with: {resume_command(args, holder['run_id'])}",
            file=sys.stderr,
        )
        return stop.exit_code
    except BudgetReached as stop:
        if args.json:
            data = {"run_id": stop.run_id, "budget_reached": True, "spent_usd": stop.spent, "budget_usd": stop.budget}
            print(json.dumps(data))
        print(f"\nsvgagent: {stop}. Continue with: {resume_command(args, stop.run_id)} --budget MORE", file=sys.stderr)
        return EXIT_BUDGET
    except RunBusy:
        raise
    except StoreError as exc:
        if "run_id" not in holder:
            raise
        print(
            f"\nsvgagent: error: {exc}: run {holder['run_id']} stopped, every stored result is kept; fix that, "
            f"then continue with: {resume_command(args, holder['run_id'])}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    duration = time.monotonic() - started
    from svgagent.tui.cli.console import cli_console, stdout_gone

    # the run's dollars and tokens, every attempt, at the price table's rates (``prices`` setting on top)
    cost = run_cost(store, run_id, price_table(settings.prices), settings.model, settings.judge_model)
    try:
        if args.json:
            print(json.dumps({**summary_json(run_id, summary, duration), "cost": cost.to_dict()}))
        _print_summary(cli_console(stderr=args.json), run_id, summary, duration, cost)
        sys.stdout.flush()
    except BrokenPipeError:  # the reader of stdout left (`| head -1`): the exit status still gives the verdict
        stdout_gone()
    unreachable = connectivity_lines(store, run_id)
    for line in unreachable:
        print(line, file=sys.stderr)
    if summary.mean_score is None and unreachable:
        return EXIT_USAGE  # no verdict at all, because of the endpoints: not "below the threshold"
    unscored = summary.outcomes.unscored
    if summary.passed and unscored:  # a pass of the rollouts that got through is not a clean success
        print(
            f"svgagent: {unscored} of {summary.rollouts} rollouts have no valid score ({summary.outcomes.text()}; "
            f"`svgagent runs stats {run_id}` says why): the mean is of the scored ones, so exit status "
            f"{EXIT_INCOMPLETE}, not a pass",
            file=sys.stderr,
        )
        return EXIT_INCOMPLETE
    return EXIT_OK if summary.passed else EXIT_BELOW


def connectivity_lines(store: Store, run_id: str) -> list[str]:
    """One line per kind of endpoint trouble (timeouts, unreachable, rejected keys, rate limits) in the run, the
    most frequent first: the app's summary bar and notification name the first of them the same way."""
    from svgagent.core.analysis.failure_causes import failure_causes

    return [
        f"cannot reach an endpoint: {visible(cause.line)}"
        for cause in failure_causes(store, run_id)
        if cause.kind.is_connectivity
    ]


PROGRESS_EVERY_S = 0.1


class _ProgressDisplay:
    """The run's header line and progress bar on stderr, built when first shown: rich (a tenth of a second of
    start-up) is imported then, after the engine's first requests are out, not before them."""

    def __init__(self, header: str, always_header: bool, total: int, completed: int, mean: str) -> None:
        self._header, self._always_header = header, always_header
        self._start = (total, completed, mean)
        self._progress: Any = None
        self._task: Any = None

    def show(self) -> None:
        if self._progress is not None:
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        console = Console(stderr=True)
        if self._always_header or console.is_terminal:
            console.print(self._header)
        self._progress = Progress(
            TextColumn("[bold]eval"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("mean {task.fields[mean]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=console,
            transient=False,
        )
        self._progress.start()
        total, completed, mean = self._start
        self._task = self._progress.add_task("eval", total=total, completed=completed, mean=mean)

    def update(self, completed: int, mean: str) -> None:
        if self._progress is None:
            self._start = (self._start[0], completed, mean)
        else:
            self._progress.update(self._task, completed=completed, mean=mean)

    def close(self) -> None:
        self.show()
        self._progress.stop()


async def with_progress(engine: Engine, run_id: str, header: str, *, always_header: bool = True) -> RunSummary:
    """Run ``run_id`` with ``header`` (rich markup; printed unless stderr is not a terminal and ``always_header`` is
    off) and a progress bar. The bar follows the run as the TUI does (``RunFollower``): the engine says which
    rollouts changed, their scores are read from the store, ten times a second at most. Both appear at the first
    tick, so the engine's first requests go out before the display is built."""
    live = LiveRows(engine.store.list_rollouts(run_id))
    follower = RunFollower(engine.store, engine.bus.subscribe(), run_id)

    display = _ProgressDisplay(header, always_header, live.tally.rollouts, live.tally.done, mean_text(live.tally.mean))

    def refresh() -> None:
        changed = follower.changed()
        if changed:
            live.apply(changed)
            display.update(live.tally.done, mean_text(live.tally.mean))

    async def follow() -> None:
        while True:
            await asyncio.sleep(PROGRESS_EVERY_S)
            display.show()
            refresh()

    ticker = asyncio.create_task(follow())
    try:
        with long_run_heap():  # the run is this process's job: the collector set for it (core/startup_gc.py)
            return await engine.run(run_id)
    finally:
        ticker.cancel()
        await asyncio.gather(ticker, return_exceptions=True)
        refresh()
        display.close()
        follower.close()


def summary_json(run_id: str, s: RunSummary, duration: float) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "rollouts": s.rollouts,
        "scored": s.scored,  # the outcomes of the finished rollouts (README: scored · invalid · failed)
        "invalid": s.invalid,
        "failed": s.failed,
        "mean_score": s.mean_score,
        "stderr": s.stderr,
        "threshold": s.threshold,
        "passed": s.passed,
        "duration_s": round(duration, 3),
    }


def _print_summary(console: Console, run_id: str, s: RunSummary, duration: float, cost: Cost | None = None) -> None:
    from rich.table import Table

    table = Table(title=f"run {run_id}", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    mean = "–" if s.mean_score is None else f"{mean_text(s.mean_score, s.threshold)}{spread_text(s.stderr)}"
    verdict = "[green]PASS[/]" if s.passed else "[red]FAIL[/]"
    table.add_row("rollouts", f"{s.done}/{s.rollouts} done")
    table.add_row("outcomes", s.outcomes.text(all_three=True))
    table.add_row("mean score", f"{mean}  {verdict} (threshold {s.threshold:g})")
    table.add_row("tokens", f"{s.prompt_tokens:,} prompt + {s.completion_tokens:,} completion")
    if cost is not None:
        table.add_row("cost", f"{cost_text(cost)}; judge tokens {cost.judge_tokens:,}")
    table.add_row("duration", f"{duration:.1f} s")
    console.print(table)
