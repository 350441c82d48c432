"""`svgagent trust`: confirm the endpoints a project's ./svgagent.toml sets, so keys may be sent there.

The rule and where confirmations live: :mod:`svgagent.core.endpoint_trust`. `svgagent tui` asks the same question
on a terminal; every headless command refuses until this command (or a flag choosing the endpoint) settles it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from svgagent.core.endpoint_trust import ENDPOINTS, ProjectEndpoint, forget, remember
from svgagent.core.settings import PROJECT_CONFIG_FILE, load_settings, trust_file
from svgagent.tui.cli.exit_codes import EXIT_OK, EXIT_USAGE


def describe(endpoint: ProjectEndpoint) -> str:
    what, key, _ = ENDPOINTS[endpoint.field]
    return f"{what} endpoint {endpoint.url} (host {endpoint.host}, receives {key})"


def ask(endpoints: tuple[ProjectEndpoint, ...]) -> bool:
    """Ask on the terminal whether to trust ``endpoints``; remembered when the answer is yes."""
    for endpoint in endpoints:
        print(f"{endpoint.file} sets the {describe(endpoint)}.", file=sys.stderr)
    try:
        answer = input("Send your keys there? Remembered for this file and host [y/N] ")
    except EOFError:
        return False
    if answer.strip().lower() not in ("y", "yes"):
        return False
    remember(list(endpoints), trust_file())
    return True


def cmd_trust(args: argparse.Namespace) -> int:
    file = Path.cwd() / PROJECT_CONFIG_FILE
    if args.list:
        import json

        try:
            entries = json.loads(trust_file().read_text(encoding="utf-8")).get("trusted", [])
        except (OSError, ValueError):
            entries = []
        for entry in entries:
            print(f"{entry.get('file')}  {entry.get('host')}")
        if not entries:
            print("no endpoint confirmed yet", file=sys.stderr)
        return EXIT_OK
    if args.forget:
        print(f"withdrew {forget(file, trust_file())} confirmation(s) for {file.resolve()}", file=sys.stderr)
        return EXIT_OK
    if not file.is_file():
        print(f"svgagent: error: there is no {PROJECT_CONFIG_FILE} here: nothing to confirm", file=sys.stderr)
        return EXIT_USAGE
    pending = load_settings().untrusted_endpoints
    if not pending:
        print(f"nothing to confirm: {file} sets no endpoint that is unconfirmed and not the default", file=sys.stderr)
        return EXIT_OK
    remember(list(pending), trust_file())
    for endpoint in pending:
        print(f"confirmed: {describe(endpoint)} for {endpoint.file}")
    return EXIT_OK
