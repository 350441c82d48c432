"""An executable that behaves as ``python`` (``-m``, ``-c``, a script; argv, working directory, environment, stdin,
stdout, stderr, exit status or signal) but runs each command in a child forked from one interpreter per test process
that has imported some modules already (tests/fork_server.py; tests/fork_client.py sends it the command).

Used for commands the tests start by the hundred: eval-protocol's (tests/ep_venv.py, ~7 s of CPU saved per command)
and svgagent's own CLI (tests/cli_process.py, ~0.5 s). The server is stopped when the test process ends.
"""

from __future__ import annotations

import atexit
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_SERVERS: dict[tuple[str, tuple[str, ...]], tuple[subprocess.Popen[str], Path, str]] = {}


def _stop_all() -> None:
    for server, folder, _ in _SERVERS.values():
        if server.poll() is None:
            server.kill()
            server.wait(timeout=10)  # its children's CPU is counted in this process's (reaped by it)
        shutil.rmtree(folder, ignore_errors=True)
    _SERVERS.clear()


def warm_python(python: str, modules: tuple[str, ...], env: Callable[[Path], dict[str, str]], name: str) -> str:
    """The path of a ``python``-like executable whose commands start with ``modules`` imported (one server per
    interpreter and module list in this process). ``env(home)`` is the server's own environment: a command gets the
    caller's, but what the modules read at import comes from this one."""
    known = _SERVERS.get((python, modules))
    if known is not None and known[0].poll() is None:
        return known[2]
    folder = Path(tempfile.mkdtemp(prefix=f"svgagent-{name}-fork-"))
    socket_path = folder / "s"
    (folder / "home").mkdir()
    server = subprocess.Popen(
        [python, str(REPO / "tests" / "fork_server.py"), str(socket_path), *modules],
        env=env(folder / "home"),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=(folder / "server.log").open("w"),
        text=True,
    )
    if not _SERVERS:
        atexit.register(_stop_all)
    assert server.stdout is not None
    line = server.stdout.readline()
    if line.strip() != "ready":
        log = (folder / "server.log").read_text(errors="replace")[-2000:]
        raise RuntimeError(f"the {name} fork server did not start (exit {server.poll()}): {line!r}\n{log}")
    wrapper = folder / "python"
    client = REPO / "tests" / "fork_client.py"
    wrapper.write_text(
        f'#!/bin/sh\nexec {shlex.quote(python)} -I -S {shlex.quote(str(client))} {shlex.quote(str(socket_path))} "$@"\n'
    )
    wrapper.chmod(0o755)
    _SERVERS[(python, modules)] = (server, folder, str(wrapper))
    return str(wrapper)
