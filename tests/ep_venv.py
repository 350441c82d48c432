"""The eval-protocol virtualenv the tests run eval-protocol's own code in (it is not a dependency of svgagent).

`.ci/run` makes it with `.ci/ep_venv.sh` before pytest and exports EP_VENV; a test run without it (or with a stale
one) makes it through the same script at the script's cached location (~1.5 min once, then reused). Never skipped:
a missing eval-protocol is a failure, not a reason to test less.

Tests run eval-protocol through ``ep_command()``: the venv's interpreter, but each command forked from one that has
imported eval-protocol already (tests/warm_python.py), since that import is ~7 s of CPU and the suite runs about
ten such commands (SVGAGENT_EP_FORK=0: a fresh interpreter for each).
"""

from __future__ import annotations

import os
import subprocess
from functools import lru_cache
from pathlib import Path

from warm_python import warm_python

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / ".ci" / "ep_venv.sh"
EP_VERSION = "0.3.33"
# Read at import, before the tests' autouse fixture points HOME and XDG_* into a temporary directory.
_REAL_ENV = {
    name: os.environ[name] for name in ("EP_VENV", "HOME", "XDG_CACHE_HOME", "PATH", "PYTHON") if name in os.environ
}
_FORK_OFF = os.environ.get("SVGAGENT_EP_FORK") == "0"  # read now: the tests' isolation clears SVGAGENT_* later


@lru_cache(maxsize=1)
def ep_venv() -> Path:
    """The venv's directory: $EP_VENV or the script's cached one, made or refreshed by .ci/ep_venv.sh."""
    proc = subprocess.run(["bash", str(SCRIPT)], env=_REAL_ENV, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise RuntimeError(f"{SCRIPT} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    venv = Path(proc.stdout.strip().splitlines()[-1])
    if not (venv / "bin" / "python").is_file():
        raise RuntimeError(f"{SCRIPT} printed {venv}, which holds no bin/python")
    return venv


def ep_python() -> str:
    return str(ep_venv() / "bin" / "python")


def ep_env(home: Path, **extra: str) -> dict[str, str]:
    """An environment for eval-protocol subprocesses: offline (no uploads, no browser, litellm's bundled cost map),
    a scratch HOME, none of the user's keys."""
    env = {
        "PATH": _REAL_ENV.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "EP_NO_UPLOAD": "1",
        "EP_DISABLE_AUTO_BROWSER": "1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    env.update(extra)
    return env


# --- one warm eval-protocol interpreter per test process (tests/warm_python.py) ------------------------------------
EP_WARM = (
    "pytest",
    "eval_protocol",
    "eval_protocol.models",
    "eval_protocol.pytest",
    "eval_protocol.pytest.remote_rollout_processor",
)


def ep_command() -> str:
    """An executable that behaves as the venv's ``python`` (``-m``, ``-c``, a script; stdin, stdout, stderr, exit
    status), each command run in a child forked from an interpreter that has imported eval-protocol already: the
    ~7 s of CPU that import costs is paid once per test process, not once per command. SVGAGENT_EP_FORK=0 gives
    the plain interpreter."""
    python = ep_python()
    if _FORK_OFF:
        return python
    return warm_python(python, EP_WARM, ep_env, "ep")
