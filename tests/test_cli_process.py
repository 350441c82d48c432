"""The warm interpreter the CLI tests run ``svgagent`` with (tests/cli_process.py): each command sees svgagent as a
fresh interpreter would (nothing of it imported before the command), the caller's environment and working
directory, and its exit status reaches the caller."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from cli_process import svgagent_argv


def test_a_command_imports_svgagent_itself_and_sees_the_callers_env_and_cwd(tmp_path: Path) -> None:
    python = svgagent_argv()[0]
    probe = (
        "import os, sys; print(sorted(m for m in sys.modules if m.startswith('svgagent.')), "
        "os.environ['PROBE'], os.getcwd())"
    )
    proc = subprocess.run(
        [python, "-c", probe],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
        env={**os.environ, "PROBE": "from-the-test"},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["[]", "from-the-test", str(tmp_path)]


def test_the_cli_runs_with_its_exit_codes() -> None:
    ok = subprocess.run(svgagent_argv("--help"), capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stderr
    assert "eval" in ok.stdout
    bad = subprocess.run(svgagent_argv("no-such-command"), capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2
    assert "no-such-command" in bad.stderr
