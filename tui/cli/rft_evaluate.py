"""`svgagent rft evaluate JOB` and `svgagent rft deployments`: the trained model against its base model on the rows
the job never trained on, and the deployments that bill meanwhile (svgagent.core.rft.evaluate, .deployments).

The base model's run first (reused when one on the same rows and settings exists: nothing bills meanwhile), then
the deployment — quoted and asked for —, the trained model's run, the comparison, and the deployment deleted unless
the person keeps it. Nothing is ever left billing without a line saying so and how to stop it.
"""

from __future__ import annotations

import argparse
import contextlib
import shlex
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from svgagent.core.scoring.errors import ConfigError
from svgagent.tui.cli.flags import add_settings, explicit_settings

if TYPE_CHECKING:
    from svgagent.core.config.settings import Settings
    from svgagent.core.rft.fireworks_api import ControlPlane
    from svgagent.core.run.dataset import Dataset
    from svgagent.core.store.run_store import Store

EXIT_OK, EXIT_FAILED = 0, 1
EVAL_SETTINGS = (
    "samples", "temperature", "max_tokens", "judge_model", "judge_base_url", "judge_mode", "render_size", "concurrency",
)  # fmt: skip


def add_evaluate_parsers(sub: Any, formatter: type[argparse.HelpFormatter], common: Any) -> None:
    p = sub.add_parser(
        "evaluate",
        help="deploy a completed job's trained model and compare it with its base model on the held-out rows",
        formatter_class=formatter,
        description="Evaluate what a job trained, on the rows its launch kept out of training (rft create "
        "--holdout): the base model's run (reused when one on the same rows and settings exists), an on-demand "
        "deployment of the output model (its hourly cost said and asked for first; live merge), the trained "
        "model's run, the before/after comparison, then the deployment deleted (unless --keep-deployment).",
    )
    p.add_argument("job", metavar="JOB", help="job id or accounts/…/reinforcementFineTuningJobs/ID")
    p.add_argument("-y", "--yes", action="store_true", help="do not ask before deploying or before deleting")
    p.add_argument("--keep-deployment", action="store_true", help="leave the deployment up after the evaluation")
    p.add_argument(
        "--hourly-rate", type=float, metavar="USD", help="the price of one GPU-hour, for the quote (default: published)"
    )
    p.add_argument(
        "--poll-interval", type=float, metavar="SECONDS", help="seconds between polls of the deployment (default 10)"
    )
    add_settings(p, EVAL_SETTINGS, title="how both models are run and judged (the same for both)")
    common(p, json_help="print {job, base_run, trained_run, deployment, comparison} as JSON")

    p = sub.add_parser(
        "deployments",
        help="the account's deployments that bill, with their hourly rates",
        formatter_class=formatter,
        description="List the deployments that are up (or coming up) — each bills while it has replicas — "
        "with what it costs an hour; --delete ID deletes one.",
    )
    p.add_argument("--delete", metavar="ID", help="delete this deployment (asks first unless --yes)")
    p.add_argument("-y", "--yes", action="store_true", help="do not ask before deleting")
    common(p, json_help="print a JSON list of deployments, each with its hourly cost")


# ---- connecting ---------------------------------------------------------------------------------------------------
@contextlib.contextmanager
def _connected(args: argparse.Namespace, out: Any, names: tuple[str, ...]) -> Iterator[tuple[ControlPlane, Settings]]:
    """(control plane, the settings runs use): the demo world and its simulated policy and judge with --demo."""
    from svgagent.core.config.settings import load_settings

    flags = explicit_settings(args, names)
    if not args.demo:
        from svgagent.core.config.project_trust import require_trusted
        from svgagent.core.rft.fireworks_api import ControlPlane

        settings = load_settings(**flags)
        key = settings.fireworks_api_key.get_secret_value() if settings.fireworks_api_key else ""
        with ControlPlane(key, account_id=settings.fireworks_account_id, max_retries=settings.max_retries) as cp:
            require_trusted(settings)
            yield cp, settings
        return
    from svgagent.core.demo import (
        demo_control_plane,
        demo_overrides,
        demo_policy_knobs,
        demo_simulator,
        demo_world_dir,
    )

    first = load_settings(**flags)
    world = demo_world_dir(first)
    with (
        demo_control_plane(world_dir=world) as (_, cp),
        demo_simulator(**demo_policy_knobs(first)) as policy,
    ):
        out.err(f"demo mode: the demo world in {world}, its simulated policy and judge; nothing is sent anywhere")
        yield cp, load_settings(**{**flags, **demo_overrides(str(policy.base_url), model=None)})


def _confirm(question: str, args: argparse.Namespace, out: Any, *, default: bool = False) -> bool:
    if args.yes:
        return True
    if not sys.stdin or not sys.stdin.isatty():
        raise ConfigError(f"stdin is not a terminal, so I cannot ask: {question} — pass --yes to go ahead")
    out.err_inline(f"{question} [{'Y/n' if default else 'y/N'}] ")
    answer = sys.stdin.readline().strip().lower()
    return default if not answer else answer in ("y", "yes")


# ---- evaluate -----------------------------------------------------------------------------------------------------
def _run(settings: Settings, store: Store, dataset: Dataset, name: str, header: str) -> str:
    """One evaluation run to its end (headless, with the eval command's progress bar); its run id."""
    from svgagent.core.run.engine import Engine
    from svgagent.tui.cli.eval import with_progress
    from svgagent.tui.cli.interrupts import run_stoppable

    async def main() -> str:
        engine = Engine(settings, store)
        try:
            run_id = engine.create_run(dataset, name=name)
            await with_progress(engine, run_id, f"{header}: run [bold]{run_id}[/]")
            return run_id
        finally:
            await engine.aclose()

    return run_stoppable(main)


def cmd_evaluate(args: argparse.Namespace, out: Any) -> int:
    from svgagent.core.analysis.compare import compare_runs
    from svgagent.core.rft import deployments as dep
    from svgagent.core.rft.evaluate import evaluation_target, reusable_run, run_settings
    from svgagent.tui.cli.analysis import print_comparison
    from svgagent.tui.cli.console import cli_console
    from svgagent.tui.cli.store_cmd import open_store_for_writing

    with _connected(args, out, EVAL_SETTINGS) as (cp, settings), open_store_for_writing(settings.store_path()) as store:
        hint = shlex.join(["svgagent", "rft", "create", "--holdout", "0.2", *(["--demo"] if args.demo else [])])
        target = evaluation_target(cp, store, args.job, hint=hint, demo=args.demo)
        out.err(
            f"{target.job_id}: {target.base_model} → {target.output_model}, on {len(target.dataset.rows)} held-out rows"
        )
        base_settings = run_settings(settings, target.base_model)
        base_run = reusable_run(store, base_settings, target.dataset)
        if base_run is not None:
            out.err(f"base model: reusing run {base_run} (same rows, judge and sampling)")
        else:
            base_run = _run(base_settings, store, target.dataset, target.run_name("base"), "base model")
        did = dep.deployment_id_for(target.job_id)
        deployment = dep.serving(cp, target.output_model)
        made_here = deployment is None
        if deployment is None:
            planned = dep.plan_deployment(cp, target.output_model, did, f"eval of {target.job_id}")
            cost = dep.quote(planned, args.hourly_rate)
            if not _confirm(f"Deploy {target.output_model} on {cost.text()}?", args, out):
                out.err(f"not deployed: nothing bills. The base model's run is {base_run}.")
                return EXIT_FAILED
            deployment = dep.deploy(
                cp, target.output_model, did, f"eval of {target.job_id}", poll_s=_poll(args), on_progress=_changes(out)
            )
        did = dep.deployment_id(deployment)
        cost = dep.quote(deployment, args.hourly_rate)
        out.err(f"deployment {did} is READY ({cost.text()})")
        try:
            trained_run = _run(
                run_settings(settings, target.output_model),
                store,
                target.dataset,
                target.run_name("trained"),
                "trained",
            )
            comparison = compare_runs(store, base_run, trained_run)
        finally:
            kept = _offer_delete(cp, args, out, did, cost, made_here)
        if args.json:
            report = {
                "job": target.job_name,
                "base_run": base_run,
                "trained_run": trained_run,
                "deployment": {"id": did, "kept": kept, "hourly_usd": cost.per_hour},
                "comparison": comparison.to_dict([]),
            }
            out.json(report)
        else:
            print_comparison(cli_console(), comparison, comparison.select(None, "delta", descending=False, limit=20))
            out.out(
                f"pictures side by side: svgagent tui, then o, mark the two runs (a, b) and c — or `svgagent runs compare {base_run} {trained_run}`"
            )
    return EXIT_OK


def _changes(out: Any) -> Any:
    """A progress callback that prints a line when the deployment's state changes, not on every poll."""
    shown: list[str] = []

    def say(text: str) -> None:
        state = text.split(" (", 1)[0]
        if not shown or shown[-1] != state:
            shown.append(state)
            out.err(text)

    return say


def _poll(args: argparse.Namespace) -> float:
    return args.poll_interval or (0.1 if args.demo else 10.0)


def _offer_delete(cp: ControlPlane, args: argparse.Namespace, out: Any, did: str, cost: Any, made_here: bool) -> bool:
    """Delete the deployment unless kept; True when it stays up (said, with how to delete it)."""
    again = shlex.join(["svgagent", "rft", "deployments", "--delete", did, *(["--demo"] if args.demo else [])])
    keep = args.keep_deployment
    if not keep and not args.yes and sys.stdin and sys.stdin.isatty():
        keep = not _confirm(f"Delete deployment {did} now ({cost.text()})?", args, out, default=True)
    if keep:
        why = "kept (--keep-deployment)" if args.keep_deployment else ("kept" if made_here else "was up before: kept")
        out.err(f"deployment {did} {why}: it bills while it is up ({cost.text()}); delete it with: {again}")
        return True
    cp.delete_deployment(did)
    out.err(f"deployment {did} deleted: it no longer bills")
    return False


# ---- deployments --------------------------------------------------------------------------------------------------
def cmd_deployments(args: argparse.Namespace, out: Any) -> int:
    from svgagent.core.rft import deployments as dep

    with _connected(args, out, ()) as (cp, _):
        if args.delete:
            if not _confirm(f"Delete deployment {args.delete}?", args, out):
                raise ConfigError("not confirmed: nothing was deleted")
            cp.delete_deployment(args.delete)
            out.err(f"deployment {args.delete} deleted: it no longer bills")
            return EXIT_OK
        live = dep.up(cp)
        if args.json:
            out.json([{**d, "hourly_usd": dep.quote(d).per_hour} for d in live])
            return EXIT_OK
        if not live:
            out.out("no deployment is up: nothing bills")
            return EXIT_OK
        for d in live:
            out.out(f"{dep.deployment_id(d):<40} {d.get('state', ''):<9} {d.get('baseModel', '')}")
            out.out(f"{'':40} {dep.quote(d).text()}")
        return EXIT_OK
