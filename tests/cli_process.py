"""The ``svgagent`` command as the CLI tests run it: ``python -m svgagent.tui.cli.main ARGS`` in a process of its
own, started warm (tests/warm_python.py): forked from one interpreter per test process that has imported the
command's libraries already, since a fresh one spends ~0.5 s of CPU on that and the suite runs hundreds of commands.
The command still runs in a process of its own, with the test's argv, working directory, environment, stdin,
stdout and stderr, and its exit status; svgagent itself is imported afresh by each command (the server never
imports it). What only a fresh interpreter shows — start-up time, which modules a command imports, signals sent to
a running command — the tests of that start ``sys.executable`` themselves (tests/test_startup_imports.py,
tests/test_cli.py's Ctrl-C tests, tests/test_crash_resume.py). SVGAGENT_CLI_FORK=0: a fresh interpreter for each.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from warm_python import warm_python

# Third-party libraries that do nothing at import but define things (none reads the environment at import that
# svgagent depends on: openai reads only its module-level client's Azure settings, a client svgagent never uses).
CLI_WARM = (
    "aiohttp",
    "aiohttp.web",
    "yarl",
    "multidict",
    "httpx2",
    "openai",
    "uvloop",
    "pydantic",
    "pydantic_settings",
    "dotenv",
    "platformdirs",
    "rich.console",
    "rich.table",
    "rich.text",
    "rich.progress",
    "PIL.Image",
    "PIL.PngImagePlugin",
    "defusedxml.ElementTree",
    "sqlite3",
    "asyncio",
    "json",
    "email.message",
)
_FORK_OFF = os.environ.get("SVGAGENT_CLI_FORK") == "0"  # read now: the tests' isolation clears SVGAGENT_* later
_PATH = os.environ.get("PATH", "/usr/bin:/bin")


def _server_env(home: Path) -> dict[str, str]:
    return {"PATH": _PATH, "HOME": str(home), "PYTHONDONTWRITEBYTECODE": "1"}


def svgagent_argv(*args: str) -> list[str]:
    """The command line of ``svgagent ARGS`` for subprocess.run / Popen."""
    python = sys.executable if _FORK_OFF else warm_python(sys.executable, CLI_WARM, _server_env, "cli")
    return [python, "-m", "svgagent.tui.cli.main", *args]
