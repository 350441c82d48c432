"""A private tmux server for the tests that drive the app in a real terminal (the ``tmux`` fixture in conftest)."""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path


class Tmux:
    """One private tmux server (its own socket), so the test never touches the user's sessions."""

    def __init__(self, socket: str, env: dict[str, str]) -> None:
        self.socket = socket
        self.env = env

    def run(self, *args: str) -> str:
        result = subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        return result.stdout

    def capture(self, *, escapes: bool = False) -> str:
        return self.run("capture-pane", "-p", *(["-e"] if escapes else []), "-t", "app")

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", "app", *keys)

    def wait_for(self, what: str, check: Callable[[str], bool], timeout: float = 60.0, *, escapes: bool = False) -> str:
        """The screen once ``check`` accepts it (``escapes``: with its colours, as escape sequences)."""
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.capture(escapes=escapes)
            if check(screen):
                return screen
            time.sleep(0.2)
        raise AssertionError(f"timed out waiting for {what}; the screen was:\n{screen}")


@contextmanager
def private_tmux(tmp_path: Path) -> Iterator[Tmux]:
    """A tmux server of its own (its own socket, the user's sessions untouched), killed afterwards."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TMUX")}
    env.update(
        TERM="xterm-256color",
        COLORTERM="truecolor",
        SVGAGENT_HOME=str(tmp_path / "svgagent-home"),
        LANG="C.UTF-8",
        LC_ALL="C.UTF-8",
    )
    # a socket of its own per test: reusing one name right after the last test's kill-server could reach that
    # server while it was still exiting (new-session then failed with status 1)
    server = Tmux(f"svgagent-test-{os.getpid()}-{uuid.uuid4().hex[:8]}", env)
    try:
        yield server
    finally:
        subprocess.run(["tmux", "-L", server.socket, "kill-server"], env=env, capture_output=True, timeout=30)
