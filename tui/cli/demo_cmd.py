"""`svgagent demo …`: the demo world (the simulated Fireworks account, its jobs and deployments) kept in the data
directory, which every `--demo` command and the app in demo mode share. `svgagent demo reset` starts it afresh."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from svgagent.tui.cli.exit_codes import EXIT_OK
from svgagent.tui.cli.flags import add_store


def add_demo_parser(sub: Any, formatter: type[argparse.HelpFormatter]) -> None:
    p = sub.add_parser(
        "demo",
        help="the demo world every --demo command shares (reset it)",
        formatter_class=formatter,
        description="Demo mode's simulated Fireworks account — its datasets, evaluators, RFT jobs (with what the\n"
        "simulated trainer did) and deployments — lives in the data directory's demo/, so `rft create --demo`,\n"
        "`rft status --demo`, `rft evaluate --demo`, `serve --demo`, `eval --demo` and the app see the same\n"
        "jobs. Its jobs move while a command watches them or the app is open.",
        epilog="examples:\n  svgagent demo reset",
    )
    actions = p.add_subparsers(dest="demo_command", metavar="ACTION", required=True)
    reset = actions.add_parser("reset", help="remove the demo world: every simulated job, dataset and deployment")
    add_store(reset)
    where = actions.add_parser("path", help="print where the demo world is kept")
    add_store(where)


def cmd_demo(args: argparse.Namespace) -> int:
    from svgagent.core.config.settings import load_settings
    from svgagent.core.demo import demo_world_dir, reset_world

    world = demo_world_dir(load_settings(store=args.store))
    if args.demo_command == "path":
        print(world)
        return EXIT_OK
    if reset_world(world):
        print(f"the demo world in {world} is gone: the next --demo command starts a fresh one", file=sys.stderr)
    else:
        print(f"no demo world in {world}: nothing to reset", file=sys.stderr)
    return EXIT_OK
