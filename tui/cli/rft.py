"""`svgagent rft …`: launch a Fireworks RFT job with the svgagent judge, and monitor, cancel or resume jobs.

Progress goes to stderr, results to stdout (`--json`: one JSON document). Exit status: 0 ok, 1 the control plane
failed (message says what to do) or a watched job did not complete, 2 usage/config error (bad flag, missing key,
refused confirmation), 130 interrupted.

(Over 400 lines: the parser and the five actions of one command group, which share its output and confirmation.)
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import json
import os
import re
import shlex
import sys
import textwrap
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from svgagent.core.rft.demo_identity import DEMO_ACCOUNT, DEMO_FIREWORKS_KEY, DEMO_JOB_ID, DEMO_OPENAI_KEY
from svgagent.core.scoring.errors import ConfigError
from svgagent.core.terminal_text import visible
from svgagent.tui.cli.flags import add_settings, add_store, defer

# Everything else is imported when an rft command runs: the fireworks client takes most of a second to import,
# and building the parser happens for every svgagent command.
if TYPE_CHECKING:
    from svgagent.core.rft.fireworks_api import ControlPlane
    from svgagent.core.rft.launch import PlannedRequest
    from svgagent.core.rft.monitor import JobView
    from svgagent.core.rft.params import RftParams
    from svgagent.core.store.run_store import Store

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
DEMO_POLL_S = 0.25
TAG = "[simulated] "
_CONFIG_KINDS = frozenset({"missing_key", "auth"})

# the judge settings `rft create` bakes into the evaluator bundle (its profile and renderer included)
RFT_JUDGE_SETTINGS = ("judge_model", "judge_base_url", "judge_mode", "judge_profile", "renderer")


def _wrap(text: str) -> str:
    return "\n".join(textwrap.fill(part, 100) for part in text.split("\n"))


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Shows `(default: X)` for options that have a real default (not None/False)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if (
            "%(default)" not in text
            and action.default not in (None, False, argparse.SUPPRESS)
            and action.option_strings
        ):
            text += " (default: %(default)s)"
        return text


def _demo_flags(args: argparse.Namespace) -> list[str]:
    """What a command this one prints must carry to reach the same world: ``--demo`` (and ``--store``)."""
    flags = ["--demo"] if getattr(args, "demo", False) else []
    return [*flags, "--store", str(args.store)] if getattr(args, "store", None) else flags


# ---- parser --------------------------------------------------------------------------------------------------
def _common(p: argparse.ArgumentParser, *, json_help: str = "print JSON to stdout") -> None:
    p.add_argument(
        "--demo",
        action="store_true",
        help="use a simulated Fireworks control plane on 127.0.0.1 with fake keys (nothing is sent)",
    )
    p.add_argument("--json", action="store_true", help=json_help)
    add_store(p)


def add_rft_parser(subparsers: Any) -> None:
    rft = subparsers.add_parser(
        "rft",
        help="launch and monitor Fireworks reinforcement fine-tuning jobs",
        formatter_class=_Formatter,
        description=_wrap(
            "Reinforcement fine-tuning on Fireworks with the svgagent judge as the reward.\n\n"
            "keys: FIREWORKS_API_KEY (control plane) and OPENAI_API_KEY (the judge, uploaded as a "
            "Fireworks secret); optional FIREWORKS_ACCOUNT_ID and FIREWORKS_BASE_URL. Read from the "
            "environment or ./.env."
        ),
        epilog="examples:\n  svgagent rft create --demo --rows 8 --yes --watch\n"
        "  svgagent rft create --base-model accounts/fireworks/models/qwen3-0p6b --rows 64 --dry-run\n"
        "  svgagent rft status JOB --watch\n  svgagent rft list --json\n"
        "  svgagent rft evaluate JOB            # the trained model against its base model, held-out rows\n"
        "  svgagent rft deployments             # what is up, and what it costs an hour",
    )
    sub = rft.add_subparsers(dest="rft_command", metavar="ACTION", required=True)

    p = sub.add_parser(
        "create",
        help="upload evaluator, secrets and dataset, then start an RFT job",
        formatter_class=_Formatter,
        description=_wrap(
            "Resolve the account, store the judge key as a secret, build and upload "
            "the evaluator bundle (reused when Fireworks already built this code), "
            "upload the dataset (reused when identical), then create the job. "
            "Re-running after a failure continues where it stopped; the same settings "
            "give the same job id, so a finished launch is reported, not repeated."
        ),
    )
    g = p.add_argument_group("model and data")
    g.add_argument(
        "--base-model", help="model to fine-tune, e.g. accounts/fireworks/models/qwen3-0p6b (required unless --demo)"
    )
    g.add_argument(
        "--dataset",
        help="'builtin', an SVGBench questions.json or an Eval Protocol JSONL file "
        "(default: the settings' dataset, builtin)",
    )
    g.add_argument("--rows", type=int, metavar="N", help="use only the first N rows (default: all rows)")
    g.add_argument(
        "--holdout",
        type=float,
        metavar="SHARE",
        help="keep this share of the rows out of training (e.g. 0.2): only the rest is uploaded, and the held-out "
        "rows are kept with the job in the run store for `svgagent rft evaluate JOB`",
    )
    g.add_argument("--output-model", help="id of the trained model (default: Fireworks picks one)")
    g.add_argument("--display-name", help="job name in the dashboard (default: derived from dataset and model)")
    defer(p, functools.partial(_hyperparameter_flags, p))  # defaults from the pydantic model in core.rft.params
    add_settings(p, RFT_JUDGE_SETTINGS, title="judge (baked into the evaluator)")
    g = p.add_argument_group("rollouts (baked into the evaluator)")
    g.add_argument(
        "--rollouts",
        choices=("single-turn", "remote"),
        default="single-turn",
        help="single-turn: eval-protocol calls the policy (default); remote: every rollout is an /init to "
        "your rollout server (svgagent serve), as the SVG-agent quickstart does",
    )
    g.add_argument(
        "--remote-url",
        metavar="URL",
        help="the rollout server for --rollouts remote; it must be reachable from the Fireworks platform",
    )
    g = p.add_argument_group("launch")
    g.add_argument("--job-id", help="job id (default: derived from dataset, evaluator and hyperparameters)")
    g.add_argument("--force", action="store_true", help="rebuild the evaluator even if Fireworks has this code")
    g.add_argument("--dry-run", action="store_true", help="print every request that would be sent; send nothing")
    g.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
    g.add_argument("--watch", action="store_true", help="after the launch, follow the job until it ends")
    g.add_argument(
        "--poll-interval",
        type=float,
        metavar="SECONDS",
        help="seconds between polls of the evaluator build / the job (default: 10 / 5; demo 0.25)",
    )
    _common(p, json_help="print {job, evaluator, dataset, links} (with --dry-run: the plan) as JSON")

    p = sub.add_parser(
        "status",
        help="one job's state and progress",
        formatter_class=_Formatter,
        description=_wrap(
            "Show a job's state. With --watch, refresh until it ends (exit 0 when "
            "it completed, 1 otherwise); when polls fail the last known state stays "
            "shown with its age while polling backs off."
        ),
    )
    p.add_argument(
        "job",
        metavar="JOB",
        nargs="?",
        help="job id or accounts/…/reinforcementFineTuningJobs/ID (optional with --demo)",
    )
    p.add_argument(
        "--watch", action="store_true", help="refresh until the job ends (or is paused: then it says so and stops)"
    )
    p.add_argument(
        "--poll-interval", type=float, metavar="SECONDS", help="seconds between polls (default: 5; demo 0.25)"
    )
    _common(
        p,
        json_help="print {name, display_name, state, status, percent, epoch, processed, failed, total, "
        "created, completed, output_model, links}",
    )

    p = sub.add_parser("list", help="the account's RFT jobs, newest first", formatter_class=_Formatter)
    p.add_argument("--limit", type=int, default=50, help="at most this many jobs")
    _common(p, json_help="print a JSON list of job objects (the status --json shape)")

    p = sub.add_parser("cancel", help="cancel a job (asks first unless --yes)", formatter_class=_Formatter)
    p.add_argument("job", metavar="JOB", nargs="?", help="job id or resource name (optional with --demo)")
    p.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
    _common(p, json_help="print the job's status JSON after cancelling")

    p = sub.add_parser("resume", help="resume a cancelled, failed or paused job", formatter_class=_Formatter)
    p.add_argument("job", metavar="JOB", nargs="?", help="job id or resource name (optional with --demo)")
    _common(p, json_help="print the job's status JSON after resuming")

    from svgagent.tui.cli.rft_evaluate import add_evaluate_parsers

    add_evaluate_parsers(sub, _Formatter, _common)


# ---- output helpers ------------------------------------------------------------------------------------------
class _Out:
    """Plain text to stderr (progress) and stdout (results); every line tagged in demo mode."""

    def __init__(self, demo: bool) -> None:
        self.demo = demo

    def _tag(self, text: str) -> str:
        text = visible(text)  # job names, states and errors come from the control plane
        return "\n".join(TAG + line for line in text.splitlines()) if self.demo else text

    def err(self, text: str = "") -> None:
        print(self._tag(text), file=sys.stderr, flush=True)

    def out(self, text: str = "") -> None:
        print(self._tag(text), flush=True)

    def err_inline(self, text: str) -> None:
        """A question on stderr, the answer typed after it on the same line."""
        sys.stderr.write(self._tag(text))
        sys.stderr.flush()

    def json(self, data: Any) -> None:
        if self.demo:
            data = [{**d, "simulated": True} for d in data] if isinstance(data, list) else {**data, "simulated": True}
        print(json.dumps(data, indent=2, ensure_ascii=False), flush=True)


def _confirm(question: str, out: _Out, hint: str = "") -> None:
    """Ask on the terminal; refuse (ConfigError, exit 2) when stdin is not a terminal."""
    if not sys.stdin or not sys.stdin.isatty():
        raise ConfigError(
            f"stdin is not a terminal, so the confirmation cannot be asked: pass --yes to go ahead without it{hint}"
        )
    sys.stderr.write((TAG if out.demo else "") + question + " [y/N] ")
    sys.stderr.flush()
    answer = sys.stdin.readline().strip().lower()
    if answer not in ("y", "yes"):
        raise ConfigError("not confirmed: nothing was sent")


def _print_plan(steps: list[PlannedRequest], base_url: str, write: Any) -> None:
    write(f"Plan: {len(steps)} requests to {base_url} (secrets masked)")
    for number, step in enumerate(steps, start=1):
        query = "?" + "&".join(f"{k}={v}" for k, v in step.query.items()) if step.query else ""
        write(f"{number:>3}. {step.step:<9} {step.method} {step.path}{query}")
        if step.body is not None:
            write(f"{'':15}body: {json.dumps(step.body, ensure_ascii=False)}")
        if step.note:
            write(f"{'':15}({step.note})")


def _base_url(explicit: str | None) -> str:
    from svgagent.core.rft.fireworks_api import DEFAULT_BASE_URL

    return (explicit or os.environ.get("FIREWORKS_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")


def _hyperparameter_flags(p: argparse.ArgumentParser) -> None:
    from svgagent.core.rft.params import default_hint

    g = p.add_argument_group(
        "hyperparameters (checked locally before anything is sent; only those given are sent, "
        "Fireworks chooses the rest)"
    )
    for flag, name, kind, text in (
        ("--epochs", "epochs", int, "passes over the dataset, 1..10"),
        ("--learning-rate", "learning_rate", float, "1e-05..0.0005"),
        ("--lora-rank", "lora_rank", int, "4..128, a power of two"),
        ("--batch-size", "batch_size", int, "training batch in tokens"),
        ("--max-context-length", "max_context_length", int, "tokens per sequence"),
        ("--chunk-size", "chunk_size", int, "rows per rollout chunk, 1..10000"),
        ("--temperature", "temperature", float, "rollout temperature, >0..2"),
        ("--top-p", "top_p", float, "rollout top-p, >0..1"),
        (
            "--max-output-tokens",
            "max_output_tokens",
            int,
            "rollout completion token limit (SVG answers often need 4096)",
        ),
        ("--n", "n", int, "responses per prompt (responseCandidatesCount), 2..64"),
        ("--kl-beta", "kl_beta", float, "KL penalty weight, 0..10"),
    ):
        g.add_argument(flag, type=kind, help=f"{text} (default: {default_hint(name)})")
    g.add_argument("--loss", metavar="{grpo,dapo}", help=f"policy-optimization loss (default: {default_hint('loss')})")


# ---- create --------------------------------------------------------------------------------------------------
def _params(args: argparse.Namespace) -> RftParams:
    from svgagent.core.rft.params import FLAGS, parse_params

    values = {name: getattr(args, name, None) for name in FLAGS}
    if args.demo and not values.get("base_model"):
        values["base_model"] = "accounts/fireworks/models/qwen3-0p6b"
    return parse_params(**values)


def _rollouts(args: argparse.Namespace) -> dict[str, str]:
    """The bundle's rollout mode: {} for single-turn (the bundle stays byte for byte what it was)."""
    from svgagent.core.serve.security import check_http_url

    if args.rollouts != "remote":
        if args.remote_url:
            raise ConfigError("--remote-url needs --rollouts remote")
        return {}
    if not args.remote_url:
        raise ConfigError("--rollouts remote needs --remote-url URL: the rollout server Fireworks will call")
    problem = check_http_url(args.remote_url)
    if problem:
        raise ConfigError(f"--remote-url {problem}")
    return {"rollouts": "remote", "remote_url": args.remote_url.rstrip("/")}


def _create(args: argparse.Namespace, out: _Out) -> int:
    from svgagent.core.config.settings import load_settings
    from svgagent.core.demo import demo_control_plane, demo_world_dir
    from svgagent.core.rft.holdout import check_fraction, remember_holdout
    from svgagent.core.rft.launch import (
        LaunchEvent,
        LaunchRequest,
        check_keys,
        launch,
        open_control_plane,
        plan,
        prepare_launch,
    )
    from svgagent.core.rft.monitor import JobView
    from svgagent.core.rft.params import check_job_id
    from svgagent.tui.cli.store_cmd import open_store_for_writing

    params = _params(args)  # ParamsError (exit 2) before anything else
    check_job_id(args.job_id)
    judge = {name: getattr(args, name) for name in RFT_JUDGE_SETTINGS}
    rollouts = _rollouts(args)
    with contextlib.ExitStack() as stack:
        if args.demo:  # the demo world; this process trains its jobs while it watches one
            world = demo_world_dir(load_settings(store=args.store))
            sim, _ = stack.enter_context(demo_control_plane(world_dir=world, train=args.watch))
            settings = load_settings(
                **judge, store=args.store, fireworks_api_key=DEMO_FIREWORKS_KEY, openai_api_key=DEMO_OPENAI_KEY
            )
            base_url: str | None = sim.base_url
        else:
            settings = load_settings(**judge, store=args.store)
            base_url = None
        poll = args.poll_interval or (DEMO_POLL_S if args.demo else 10.0)
        request = LaunchRequest.from_settings(
            settings,
            params,
            dataset=args.dataset,
            rows=args.rows,
            base_url=base_url,
            force_evaluator=args.force,
            job_id=args.job_id,
            evaluator_poll_s=poll,
            dataset_poll_s=min(poll, 2.0),
            holdout=check_fraction(args.holdout),
        )
        if rollouts:
            request = dataclasses.replace(request, judge_config={**(request.judge_config or {}), **rollouts})
        if args.demo:  # the simulator's own account, never the user's
            request = dataclasses.replace(request, account_id=None)
        prepared = prepare_launch(request)
        steps = plan(prepared)
        target = _base_url(request.base_url)
        if args.demo:
            out.err(
                f"demo mode: the demo world's simulated Fireworks control plane at {target} (account "
                f"{DEMO_ACCOUNT}); nothing is sent to Fireworks"
            )
        if args.dry_run:
            for name in request.missing_keys():
                out.err(f"warning: {name} is not set: the launch would stop before sending anything")
            if args.json:
                out.json(
                    {
                        "dry_run": True,
                        "base_url": target,
                        "evaluator": prepared.evaluator_id,
                        "dataset": prepared.dataset_id,
                        "job": prepared.job_id,
                        "heldout_rows": len(prepared.heldout),
                        "plan": [s.to_dict() for s in steps],
                    }
                )
            else:
                _print_plan(steps, target, out.out)
                out.out("dry run: nothing was sent")
            return EXIT_OK
        check_keys(request)
        from svgagent.core.config.project_trust import require_trusted

        require_trusted(settings, ("judge_base_url",))  # the evaluator sends OPENAI_API_KEY to the judge endpoint
        if not args.yes:
            _print_plan(steps, target, out.err)
            _confirm(
                f"Launch RFT job {prepared.job_id} ({len(prepared.rows)} rows, {params.base_model})?",
                out,
                " (or --dry-run to only see the plan)",
            )
        cp = stack.enter_context(open_control_plane(request))
        store = None if args.demo else stack.enter_context(open_store_for_writing(settings.store_path()))
        if prepared.heldout and store is None:  # demo mode: the store only keeps the held-out rows
            holdout_store = stack.enter_context(open_store_for_writing(settings.store_path()))
        else:
            holdout_store = store

        shown: dict[str, str] = {}

        def show(event: LaunchEvent) -> None:
            if event.status == "start":
                return
            if event.status == "progress":  # "BUILDING (12 s elapsed)": print when more than the number changed
                key = re.sub(r"\d+", "#", event.message)
                if shown.get(event.step) == key:
                    return
                shown[event.step] = key
            mark = {"done": "✓", "reused": "✓", "failed": "✗"}.get(event.status, " ")
            out.err(f"[{event.index}/{event.total}] {mark} {event.step}: {event.message}")

        result = launch(prepared, cp, on_event=show, store=store)
        if prepared.heldout and holdout_store is not None:
            remember_holdout(holdout_store, result.job_name, request.holdout, prepared.dataset, prepared.heldout)
        if args.json:
            out.json({**result.to_json(), **({"heldout_rows": len(prepared.heldout)} if prepared.heldout else {})})
        else:
            view = JobView.from_job(result.job, cp.base_url)
            out.out(
                f"job        {result.job_name}  ({view.phase}{', already existed' if result.reused.get('job') else ''})"
            )
            out.out(
                f"evaluator  {result.evaluator.get('name')}  ({result.evaluator.get('state')}"
                f"{', reused' if result.reused.get('evaluator') else ''})"
            )
            out.out(
                f"dataset    {result.dataset.get('name')}  ({result.dataset.get('state')}, "
                f"{len(prepared.rows)} rows{', reused' if result.reused.get('dataset') else ''})"
            )
            if prepared.heldout:
                evaluate = shlex.join(["svgagent", "rft", "evaluate", result.job_id, *_demo_flags(args)])
                out.out(
                    f"held out   {len(prepared.heldout)} rows, kept in the run store: once it completes, {evaluate}"
                )
            for kind, link in result.links.items():
                out.out(f"{kind + ' link':<10} {link}")
            if not args.watch:
                follow = ["svgagent", "rft", "status", result.job_id, "--watch", *_demo_flags(args)]
                out.out(
                    f"follow it: {shlex.join(follow)}"
                    + (" (the demo world's jobs move while a command or the app watches them)" if args.demo else "")
                )
        if args.watch:
            return _watch(
                result.job_id,
                lambda: cp.get_job(result.job_name),
                cp.base_url,
                poll if args.demo else (args.poll_interval or 5.0),
                out,
                None if args.demo else store,
                as_json=False,
            )
        return EXIT_OK


# ---- monitor -------------------------------------------------------------------------------------------------
@contextlib.contextmanager
def _monitor_plane(args: argparse.Namespace, out: _Out) -> Iterator[tuple[ControlPlane, str, Any]]:
    """(control plane, job name or id, store or None) for status/list/cancel/resume."""
    from svgagent.core.demo import demo_control_plane
    from svgagent.core.rft.fireworks_api import ControlPlane

    if args.demo:
        from svgagent.core.config.settings import load_settings
        from svgagent.core.demo import demo_world_dir

        world = demo_world_dir(load_settings(store=args.store))
        train = bool(getattr(args, "watch", False))  # a watching command moves the world's jobs
        with demo_control_plane(world_dir=world, train=train, seed_job=True) as (sim, cp):
            job = getattr(args, "job", None) or DEMO_JOB_ID
            out.err(f"demo mode: the demo world in {world} (its own job: {DEMO_JOB_ID}); nothing is sent to Fireworks")
            if args.rft_command == "resume" and not getattr(args, "job", None):
                # the demo's own job, paused first when it is not, so there is something to resume
                with sim.world_session():
                    if sim.state.jobs[DEMO_JOB_ID].state not in ("JOB_STATE_PAUSED", "JOB_STATE_CANCELLED"):
                        sim.state.set_job_state(DEMO_JOB_ID, "JOB_STATE_PAUSED", "paused (simulated)")
            yield cp, job, None
        return
    from svgagent.core.config.settings import load_settings
    from svgagent.core.rft.params import check_job_id
    from svgagent.tui.cli.store_cmd import open_store_for_writing

    if hasattr(args, "job") and not args.job:
        raise ConfigError(
            "JOB is required (a job id or accounts/…/reinforcementFineTuningJobs/ID; see `svgagent rft list`)"
        )
    check_job_id(getattr(args, "job", None), "JOB")
    settings = load_settings(store=args.store)
    key = settings.fireworks_api_key.get_secret_value() if settings.fireworks_api_key else ""
    with (
        ControlPlane(key, account_id=settings.fireworks_account_id, max_retries=settings.max_retries) as cp,
        open_store_for_writing(settings.store_path()) as store,
    ):
        yield cp, getattr(args, "job", None) or "", store


def _remember_state(store: Store, view: JobView, job: dict[str, Any] | None = None) -> None:
    if store is not None and view.name:
        store.update_job_state(view.name, view.state, job)


def _show_view(view: JobView, out: _Out) -> None:
    from svgagent.core.rft.job_metrics import curves_line

    out.out(f"{view.job_id}  {view.display_name}".rstrip())
    out.out(f"  state     {view.summary_line()}")
    if view.output_model:
        out.out(f"  output    {view.output_model}")
    out.out(f"  created   {view.created or '–'}" + (f"   completed {view.completed}" if view.completed else ""))
    curves = curves_line(view.curves)  # the platform's own per-step metrics, when the job reports them
    if curves:
        out.out(f"  curves    {curves}")
    for kind, link in view.links.items():
        out.out(f"  {kind:<9} {link}")


def _watch(job: str, fetch: Any, base_url: str, interval: float, out: _Out, store: Store, *, as_json: bool) -> int:
    """Follow ``job`` (its id or resource name, as the person gave it) until it ends."""
    from rich.markup import escape
    from rich.progress import BarColumn, Progress, TextColumn

    from svgagent.core.rft.job_states import COMPLETED_OK
    from svgagent.core.rft.monitor import JobPoller, PollOutcome, format_duration, watch_job
    from svgagent.tui.cli.console import CliConsole

    jobs: dict[str, Any] = {}

    def fetch_and_keep() -> dict[str, Any]:
        jobs["last"] = fetch()
        return jobs["last"]

    poller = JobPoller(fetch_and_keep, base_url, interval=interval, max_interval=max(60.0, interval))
    console = CliConsole(stderr=True, highlight=False)  # job names and errors from the control plane: shown inert
    prefix = escape(TAG) if out.demo else ""
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TextColumn("{task.fields[detail]}"),
        console=console,
        transient=False,
    )
    seen: dict[str, str] = {}

    def update(outcome: PollOutcome) -> None:
        view = outcome.view
        if outcome.error is not None:
            wait = f"{outcome.delay:.1f} s" if outcome.delay < 10 else format_duration(outcome.delay)
            retry = "" if outcome.fatal else f"; retrying in {wait}"
            line = (
                f"{view.phase} {view.percent or 0}% — last known state, {format_duration(view.age())} old: "
                if view is not None
                else "no state yet: "
            ) + f"{outcome.error}{retry}"
            progress.console.print(prefix + escape(line), markup=True, soft_wrap=True)
            if view is not None:
                progress.update(task, detail=escape(f"(stale, {format_duration(view.age())} old)"))
            return
        assert view is not None
        _remember_state(store, view, jobs.get("last"))
        progress.update(
            task,
            completed=view.percent or 0,
            description=prefix + escape(f"{view.job_id} {view.phase}"),
            detail=escape(view.progress_text()),
        )
        line = view.summary_line()
        key = f"{view.phase}|{view.percent}|{view.processed}"
        if seen.get("key") != key:
            seen["key"] = key
            progress.console.print(prefix + escape(line), markup=True, soft_wrap=True)

    try:
        with progress:
            task = progress.add_task(prefix + "waiting for the job", total=100, detail="")
            final = watch_job(poller, update)
    except KeyboardInterrupt:
        if out.demo:
            again = shlex.join(["svgagent", "rft", "status", job, "--watch", "--demo"])
            out.err(f"stopped watching; the simulated job waits in the demo world ({again} to go on)")
        else:
            again = shlex.join(["svgagent", "rft", "status", job, "--watch"])
            out.err(f"stopped watching; the job keeps running ({again} to follow it again)")
        return EXIT_INTERRUPTED
    if final.fatal and final.error is not None:
        raise final.error
    view = final.view
    assert view is not None
    why = view.why_stopped()  # PAUSED: the job waits for a resume; polling it would never end
    if as_json:
        out.json({**view.to_json(), "stopped_because": why} if why else view.to_json())
    elif why:
        out.err(f"stopped watching: {why}" + (f" ({view.status})" if view.status else ""))
    else:
        out.err(f"{view.job_id} ended {view.state}" + (f": {view.status}" if view.status else ""))
    return EXIT_OK if view.state in COMPLETED_OK else EXIT_FAILED


def _status(args: argparse.Namespace, out: _Out) -> int:
    from svgagent.core.rft.monitor import JobView

    with _monitor_plane(args, out) as (cp, job, store):
        if args.watch:
            interval = args.poll_interval or (DEMO_POLL_S if args.demo else 5.0)
            return _watch(job, lambda: cp.get_job(job), cp.base_url, interval, out, store, as_json=args.json)
        data = cp.get_job(job)
        view = JobView.from_job(data, cp.base_url)
        _remember_state(store, view, data)
        out.json(view.to_json()) if args.json else _show_view(view, out)
        return EXIT_OK


def _list(args: argparse.Namespace, out: _Out) -> int:
    from svgagent.core.rft.monitor import job_views

    if args.limit < 1:
        raise ConfigError("--limit must be at least 1")
    with _monitor_plane(args, out) as (cp, _, store):
        views = job_views(cp, limit=args.limit)
        if args.json:
            out.json([v.to_json() for v in views])
            return EXIT_OK
        if not views:
            out.out("no RFT jobs in this account yet (svgagent rft create starts one)")
            return EXIT_OK
        for v in views:
            progress = f"{v.percent}%" if v.percent is not None else ""
            out.out(f"{v.job_id:<28} {v.phase:<14} {progress:>4}  {(v.created or '')[:19]:<19}  {v.display_name}")
        return EXIT_OK


def _cancel(args: argparse.Namespace, out: _Out) -> int:
    from svgagent.core.rft.monitor import JobView

    with _monitor_plane(args, out) as (cp, job, store):
        if not args.yes:
            _confirm(f"Cancel RFT job {job}? Its progress stops (resume continues it later).", out)
        cp.cancel_job(job)
        data = cp.get_job(job)
        view = JobView.from_job(data, cp.base_url)
        _remember_state(store, view, data)
        out.json(view.to_json()) if args.json else out.out(f"cancel requested: {view.job_id} is {view.phase}")
        return EXIT_OK


def _resume(args: argparse.Namespace, out: _Out) -> int:
    from svgagent.core.rft.monitor import JobView

    with _monitor_plane(args, out) as (cp, job, store):
        data = cp.resume_job(job)
        view = JobView.from_job(data, cp.base_url)
        _remember_state(store, view, data)
        out.json(view.to_json()) if args.json else out.out(f"resumed: {view.job_id} is {view.phase}")
        return EXIT_OK


def cmd_rft(args: argparse.Namespace) -> int:
    from svgagent.core.rft.fireworks_api import FireworksError

    out = _Out(getattr(args, "demo", False))
    from svgagent.tui.cli.rft_evaluate import cmd_deployments, cmd_evaluate

    action = {
        "create": _create,
        "status": _status,
        "list": _list,
        "cancel": _cancel,
        "resume": _resume,
        "evaluate": cmd_evaluate,
        "deployments": cmd_deployments,
    }
    try:
        return action[args.rft_command](args, out)
    except FireworksError as err:
        out.err(f"svgagent: error: {err}")
        if getattr(err, "step", None) and err.kind not in _CONFIG_KINDS:
            out.err(
                "Run the same command again to continue: finished steps are reused (no duplicate evaluator, "
                "dataset or job)."
            )
        return EXIT_USAGE if err.kind in _CONFIG_KINDS else EXIT_FAILED
    except ConfigError as err:
        out.err(f"svgagent: error: {err}")
        return EXIT_USAGE


__all__ = ["add_rft_parser", "cmd_rft"]
