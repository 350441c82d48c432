"""`svgagent trust`: list the settings this directory's project files decide, and confirm them.

The rule and where confirmations live: :mod:`svgagent.core.config.project_trust`. What would be trusted — the file, the
setting and its value (an endpoint's host) — is printed on standard output, one line each; then, on a terminal, the
question (y/N); ``--yes`` confirms without asking (for scripts); neither a terminal nor ``--yes``: nothing is
confirmed, and one line says so. `svgagent tui` asks the same question before it starts.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from svgagent.core.config.project_trust import ProjectSetting, forget, remember, trusted_entries
from svgagent.core.config.settings import ENV_FILE, PROJECT_CONFIG_FILE, read_settings, trust_file
from svgagent.core.scoring.errors import ConfigError
from svgagent.core.terminal_text import visible
from svgagent.tui.cli.exit_codes import EXIT_OK, EXIT_USAGE


def on_terminal() -> bool:
    return sys.stdin.isatty() and sys.stderr.isatty()


def ask(pending: Sequence[ProjectSetting], out=sys.stderr) -> bool:  # noqa: ANN001 - a text stream
    """Show ``pending`` and ask on the terminal whether to trust them; remembered when the answer is yes."""
    print("The project files here set:", file=out)
    for setting in pending:
        print(f"  {visible(setting.describe())}", file=out)
    out.write("Trust these settings? Remembered for these files and values [y/N] ")
    out.flush()
    answer = sys.stdin.readline()
    if answer.strip().lower() not in ("y", "yes"):
        return False
    remember(pending, trust_file())
    return True


def cmd_trust(args: argparse.Namespace) -> int:
    files = [Path.cwd() / ENV_FILE, Path.cwd() / PROJECT_CONFIG_FILE]
    if args.list:
        entries = trusted_entries(trust_file())
        for entry in entries:
            print(visible(entry))
        if not entries:
            print("no setting confirmed yet", file=sys.stderr)
        return EXIT_OK
    if args.forget:
        count = forget(files, trust_file())
        print(f"withdrew {count} confirmation(s) for {' and '.join(str(f.resolve()) for f in files)}", file=sys.stderr)
        return EXIT_OK
    if not any(file.exists() or file.is_symlink() for file in files):
        print(
            f"svgagent: error: there is no {PROJECT_CONFIG_FILE} or {ENV_FILE} here: nothing to confirm",
            file=sys.stderr,
        )
        return EXIT_USAGE
    pending = read_settings().pending
    if not pending:
        print(
            f"nothing to confirm: {PROJECT_CONFIG_FILE} and {ENV_FILE} here set no endpoint, raised limit or store "
            "that is not confirmed yet",
            file=sys.stderr,
        )
        return EXIT_OK
    if args.yes:
        for setting in pending:
            print(visible(setting.describe()))
        remember(pending, trust_file())
    elif not on_terminal():
        raise ConfigError(
            f"not confirmed: {len(pending)} setting(s) of the project files here need your confirmation and there is "
            "no terminal to ask on; run `svgagent trust` on a terminal to see them, or `svgagent trust --yes`"
        )
    elif not ask(pending):
        print("nothing confirmed", file=sys.stderr)
        return EXIT_USAGE
    print(f"confirmed {len(pending)} setting(s); remembered in {trust_file()}", file=sys.stderr)
    return EXIT_OK
