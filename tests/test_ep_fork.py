"""The warm eval-protocol interpreter (tests/ep_venv.ep_command) behaves as the venv's ``python`` would for what the
tests ask of it: ``-c``, ``-m`` and a script with their argv and sys.path, the caller's environment and PYTHONPATH,
stdin/stdout/stderr, exit codes, uncaught exceptions, signals, and a timeout that stops the command."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from ep_venv import ep_command, ep_env


def run(
    args: list[str], tmp_path: Path, *, stdin: str | None = None, timeout: float = 60, **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [ep_command(), *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=ep_env(tmp_path, **env),
        timeout=timeout,
    )


def test_commands_run_as_the_venvs_python_would(tmp_path: Path) -> None:
    shadow = tmp_path / "shadow"
    (shadow / "cairocffi").mkdir(parents=True)
    (shadow / "cairocffi" / "__init__.py").write_text("WHERE = 'shadow'\n")
    probe = (
        "import os, sys, cairocffi, eval_protocol; print(sys.argv[1:], os.environ['PROBE'], repr(sys.path[0]), "
        "cairocffi.WHERE, os.getcwd() == sys.argv[1])"
    )
    proc = run(["-c", probe, str(tmp_path)], tmp_path, PROBE="yes", PYTHONPATH=str(shadow))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"[{str(tmp_path)!r}] yes '' shadow True"

    proc = run(["-c", "import sys; sys.stdout.write(sys.stdin.read().upper()); sys.exit(3)"], tmp_path, stdin="abc")
    assert (proc.returncode, proc.stdout) == (3, "ABC")

    proc = run(["-c", "raise ValueError('boom')"], tmp_path)
    assert proc.returncode == 1
    assert "ValueError: boom" in proc.stderr

    proc = run(["-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"], tmp_path)
    assert proc.returncode == -15

    script = tmp_path / "tool.py"
    script.write_text("import sys\nprint(sys.argv, sys.path[0] == sys.argv[0].rsplit('/', 1)[0])\n")
    proc = run([str(script), "--flag"], tmp_path)
    assert proc.stdout.strip() == f"[{str(script)!r}, '--flag'] True"

    (tmp_path / "test_one.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
    proc = run(["-m", "pytest", "-q", "-p", "no:cacheprovider", "test_one.py"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout


def test_a_killed_client_takes_its_command_with_it(tmp_path: Path) -> None:
    """What subprocess.run does at a timeout: SIGKILL to the client. The command it ran must not live on."""
    pid_file = tmp_path / "pid"
    code = f"import os, time, pathlib\npathlib.Path({str(pid_file)!r}).write_text(str(os.getpid()))\ntime.sleep(120)\n"
    client = subprocess.Popen(
        [ep_command(), "-c", code],
        cwd=tmp_path,
        env=ep_env(tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while not pid_file.exists() or not pid_file.read_text():
        assert time.monotonic() < deadline, "the command never started"
        time.sleep(0.02)
    pid = int(pid_file.read_text())
    client.kill()
    client.wait(timeout=10)
    deadline = time.monotonic() + 30
    while Path(f"/proc/{pid}").exists():
        assert time.monotonic() < deadline, f"the command {pid} outlived its client"
        time.sleep(0.02)
