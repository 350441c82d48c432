"""`svgagent serve`: the remote rollout server for Eval Protocol (headless; see svgagent.core.serve).

Prints one startup line (``--json``: ``{"event": "listening", "url": …}``), one JSON access-log line per request on
stderr (stderr is JSON lines, whatever writes to it: :mod:`.serve_log`), and serves until SIGINT/SIGTERM; a second
signal stops at once (in-flight rollouts are then stored with what they had and logged). ``--demo`` starts the tracing-gateway and policy simulators too and prints the
gateway URL to use as eval-protocol's ``model_base_url``.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import logging
import os
import signal
import sys
from typing import TYPE_CHECKING, Any

from svgagent.core.scoring.errors import ConfigError
from svgagent.core.serve.security import DEFAULT_ALLOWED_HOSTS
from svgagent.core.startup_gc import long_run_heap
from svgagent.core.urls import is_loopback_host
from svgagent.tui.cli.exit_codes import EXIT_OK
from svgagent.tui.cli.flags import add_setting, add_store, defer, explicit_settings
from svgagent.tui.cli.serve_log import StderrLines, configure_logging, log_line, loop_exception

if TYPE_CHECKING:  # the server (aiohttp, the openai types) is imported when `serve` runs, not for `svgagent --help`
    import socket

    from svgagent.core.config.settings import Settings
    from svgagent.core.serve.wiring import ServeOptions
    from svgagent.core.store.run_store import Store

SERVE_SETTINGS = (
    "concurrency",
    "request_timeout_s",
    "max_retries",
    "render_size",
    "judge_model",
    "judge_base_url",
    "judge_mode",
    "judge_profile",
    "renderer",
    "chromium_path",
)


def add_serve_parser(sub: Any, formatter: type[argparse.HelpFormatter]) -> None:
    p = sub.add_parser(
        "serve",
        help="run the remote rollout server for Eval Protocol / Fireworks RFT",
        formatter_class=formatter,
        description="Serve eval-protocol's /init protocol: each rollout calls the policy through the request's\n"
        "model_base_url (the tracing proxy), stores prompt, answer, SVG and picture as part of a training run,\n"
        "and logs its terminal status to the tracing gateway.\n\n"
        "The server's own FIREWORKS_API_KEY only ever goes to allowlisted hosts "
        f"({', '.join(DEFAULT_ALLOWED_HOSTS)}, plus --allow-host).",
        epilog="examples:\n  svgagent serve --port 3000\n  svgagent serve --demo --json\n"
        "  svgagent serve --host 0.0.0.0 --job accounts/me/reinforcementFineTuningJobs/abc --judge",
    )
    defer(p, functools.partial(_serve_arguments, p))


def _serve_arguments(p: argparse.ArgumentParser) -> None:
    from svgagent.core.serve.admission import DEFAULT_MIN_FREE_MB, DEFAULT_QUEUE_MB
    from svgagent.core.serve.rollout import QUEUE_TIMEOUT_S
    from svgagent.core.serve.server import DEFAULT_MAX_BODY_BYTES

    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=3000, help="port (default 3000; 0 picks a free one)")
    p.add_argument(
        "--queue-limit",
        type=int,
        default=4096,
        metavar="N",
        help="rollouts that may wait for a slot; past that /init answers 429 (default 4096)",
    )
    p.add_argument(
        "--queue-mb",
        type=int,
        default=DEFAULT_QUEUE_MB,
        metavar="MB",
        help="how many MB of /init bodies the accepted, unfinished rollouts may hold; past that /init answers 429 "
        f"(default {DEFAULT_QUEUE_MB})",
    )
    p.add_argument(
        "--queue-timeout",
        type=float,
        default=QUEUE_TIMEOUT_S,
        metavar="S",
        help="how long a rollout may wait for a free slot; then it ends DEADLINE_EXCEEDED without calling the "
        f"policy (default {QUEUE_TIMEOUT_S:g}: eval-protocol's poll timeout)",
    )
    p.add_argument(
        "--min-free-mb",
        type=int,
        default=DEFAULT_MIN_FREE_MB,
        metavar="MB",
        help="refuse /init (507) while the store's file system has less free than this "
        f"(default {DEFAULT_MIN_FREE_MB}; 0: never)",
    )
    p.add_argument(
        "--max-body",
        type=int,
        default=DEFAULT_MAX_BODY_BYTES,
        metavar="BYTES",
        help=f"largest /init body accepted (default {DEFAULT_MAX_BODY_BYTES})",
    )
    p.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="HOST",
        help="another host the server's own key may be sent to (repeatable; .example.com: subdomains)",
    )
    p.add_argument(
        "--gateway-url",
        metavar="URL",
        help="where statuses are logged (default: $FW_TRACING_GATEWAY_BASE_URL, else the gateway of "
        "each request's model_base_url)",
    )
    p.add_argument("--judge", action="store_true", help="also score each rollout with the local judge (labelled local)")
    p.add_argument("--job", metavar="NAME", help="the RFT job these rollouts train (names the training run)")
    p.add_argument(
        "--rollout-timeout",
        type=float,
        default=100.0,
        metavar="S",
        help="deadline of one rollout's policy call, retries included (default 100; keep it under "
        "eval-protocol's 120 s poll timeout)",
    )
    p.add_argument(
        "--grace",
        type=float,
        default=30.0,
        metavar="S",
        help="on SIGINT/SIGTERM, how long running rollouts may finish (default 30)",
    )
    p.add_argument(
        "--demo",
        action="store_true",
        help="also start the tracing-gateway and policy simulators; the simulated judge scores each rollout",
    )
    p.add_argument("--json", action="store_true", help="print the startup line as JSON")
    for name in SERVE_SETTINGS:
        add_setting(p, name)
    add_store(p)


def cmd_serve(args: argparse.Namespace) -> int:
    from svgagent.core.config.settings import load_settings
    from svgagent.core.serve.wiring import ServeOptions
    from svgagent.tui.cli.store_cmd import open_store_for_writing

    overrides = explicit_settings(args, SERVE_SETTINGS)
    gateway = args.gateway_url or os.environ.get("FW_TRACING_GATEWAY_BASE_URL") or None
    with contextlib.ExitStack() as stack:
        demo: dict[str, str] = {}
        if args.demo:
            from svgagent.core.demo import demo_overrides, demo_policy_knobs, demo_tracing_gateway

            knobs = demo_policy_knobs(load_settings(**overrides))
            sim_url, gateway_demo = stack.enter_context(demo_tracing_gateway(**knobs))
            demo = {"gateway": gateway_demo, "policy": sim_url}
            overrides = {**demo_overrides(sim_url, model=None), **overrides}
        settings = load_settings(**overrides)
        options = ServeOptions(
            host=args.host,
            port=args.port,
            concurrency=settings.concurrency,
            queue_limit=args.queue_limit,
            max_body_bytes=args.max_body,
            allow_hosts=tuple(args.allow_host),
            gateway_url=gateway,
            judge=args.judge or args.demo,  # demo mode: the simulated judge scores every rollout, at no cost
            job_name=args.job,
            rollout_timeout_s=args.rollout_timeout,
            queue_timeout_s=args.queue_timeout,
            queue_mb=args.queue_mb,
            min_free_mb=args.min_free_mb,
            grace_s=args.grace,
        )
        problems = options.problems()
        if problems:
            raise ConfigError("; ".join(problems))
        if args.judge and settings.openai_api_key is None:
            raise ConfigError("--judge needs OPENAI_API_KEY (the judge's key) in .env or the environment — or --demo")
        from svgagent.core.serve.server import bind_socket

        # bound before the store is made: a port in use leaves no new store behind
        sock = stack.enter_context(contextlib.closing(bind_socket(options.host, options.port)))
        store = stack.enter_context(open_store_for_writing(settings.store_path(), announce=log_line))
        access = StderrLines()
        configure_logging(access)
        from svgagent.core.event_loop import run  # uvloop's loop where installed

        try:
            return run(_serve(settings, store, options, args, demo, access, sock))
        finally:
            access.flush()
    return EXIT_OK  # pragma: no cover - the with block returns


async def _serve(
    settings: Settings,
    store: Store,
    options: ServeOptions,
    args: argparse.Namespace,
    demo: dict[str, str],
    access: StderrLines,
    sock: socket.socket,
) -> int:
    import asyncio

    stop = asyncio.Event()
    holder: dict[str, Any] = {"signals": 0, "server": None}

    def on_signal() -> None:  # the first stops gracefully, a second one cuts the grace period short
        holder["signals"] += 1
        stop.set()
        if holder["signals"] > 1 and holder["server"] is not None:
            holder["server"].cut_grace()

    loop = asyncio.get_running_loop()
    loop.set_exception_handler(loop_exception)
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal)
    from svgagent.core.serve.wiring import rollout_server

    async with rollout_server(settings, store, options, access=access, sock=sock) as server:
        holder["server"] = server
        with long_run_heap():  # serving is this process's job: the collector set for it (core/startup_gc.py)
            line = {
                "event": "listening",
                "url": server.url,
                "store": str(store.path),
                "concurrency": options.concurrency,
                "event_loop": type(loop).__module__.partition(".")[0],
                "judge": "local" if options.judge else "off",
                "gateway": options.gateway_url or "per request",
                **({"demo_model_base_url": demo["gateway"]} if demo else {}),
            }
            if args.json:
                print(json.dumps(line), flush=True)
            else:
                print(f"svgagent serve listening on {server.url} (store {store.path})", flush=True)
                if demo:
                    print(f"demo: point eval-protocol's model_base_url at {demo['gateway']}", flush=True)
            if not is_loopback_host(options.host):
                logging.getLogger("svgagent.serve").warning(
                    "bound to %s: anyone who can reach it can make it call the URLs their requests name", options.host
                )
            await stop.wait()
            await server.stop()
            stats = server.stats
            access.flush()
            print(
                json.dumps(
                    {
                        "event": "stopped",
                        "accepted": stats.accepted,
                        "finished": stats.finished,
                        "errors": stats.errors,
                        "stopped_unfinished": stats.stopped,
                    }
                ),
                file=sys.stderr,
                flush=True,
            )
    return EXIT_OK
