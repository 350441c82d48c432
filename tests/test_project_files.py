"""A cloned project's files are untrusted input (issue 31, item 4): ./svgagent.toml and ./.env cannot hang, crash
or slow a command, and cannot send keys elsewhere, raise a safety limit or move the store until the person
confirmed it once (`svgagent trust`, which lists what it would trust and asks on a terminal)."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import time
from pathlib import Path

import pytest
from cli_process import svgagent_argv

from svgagent.core.config.settings import load_settings, read_settings, trust_file, user_config_file
from svgagent.core.scoring.errors import ConfigError
from svgagent.core.sim.simulator import Simulator

KEYS = {"FIREWORKS_API_KEY": "FAKEFW-project-0123456789", "OPENAI_API_KEY": "FAKEOA-project-9876543210"}
BOUND_S = 5.0  # a generous bound: each of these ends in milliseconds (the figures: bench/project_files.py)


def svgagent(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        svgagent_argv(*args),
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env={**os.environ, **KEYS, **(env or {})},
        stdin=subprocess.DEVNULL,
    )


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    return lines[0]


def timed_refusal(match: str) -> tuple[str, float]:
    start = time.monotonic()
    with pytest.raises(ConfigError, match=match) as refused:
        load_settings()
    return str(refused.value), time.monotonic() - start


# --- the shape of a TOML file, before it is parsed -----------------------------------------------------------


def test_a_project_file_nested_deep_is_refused_at_once_with_one_line(isolated_env: Path) -> None:
    """``x = [[[…`` under the cap raised RecursionError (a traceback) in every command run in the directory."""
    project = isolated_env / "svgagent.toml"
    project.write_text("x = " + "[" * 60_000)  # under the 64 KiB cap
    message, took = timed_refusal("nests deeper than 32 levels")
    assert str(project) in message and "\n" not in message
    assert took < BOUND_S
    line = one_line(svgagent("runs", "list", cwd=isolated_env))
    assert str(project) in line and "nests deeper" in line
    project.write_text("x = " + "[" * 200_000)  # the red team's file: over the project file's cap now
    message, took = timed_refusal("svgagent.toml is too large for a config file")
    assert took < BOUND_S


def test_the_user_config_nested_deep_is_refused_at_once_with_one_line(isolated_env: Path) -> None:
    user = user_config_file()
    user.parent.mkdir(parents=True)
    user.write_text("x = " + "[" * 200_000)  # under the user config file's cap
    message, took = timed_refusal("nests deeper than 32 levels")
    assert str(user) in message
    assert took < BOUND_S
    user.write_text('x = { a = { b = [ { c = "' + "[" * 50 + '" } ] } }\n')  # brackets in a string count for nothing
    assert load_settings().model


@pytest.mark.parametrize(
    "text",
    [
        "a." * 20_000 + "k = 1\n",  # one key: tomllib's time grows with the square of its length (40 KB took 6.6 s)
        "".join("a." * 39 + f"k{i} = 1\n" for i in range(700)),  # 700 keys of 40 parts, 60 KB
        "".join(f'"q".b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r{i} = 1\n' for i in range(1000)),  # quoted parts count too
        "[" + ".".join(["t"] * 100) + "]\nk = 1\n",  # a table header
    ],
    ids=["one-key", "many-keys", "quoted", "header"],
)
def test_deep_dotted_keys_are_refused_at_once_with_one_line(isolated_env: Path, text: str) -> None:
    project = isolated_env / "svgagent.toml"
    project.write_text(text)
    message, took = timed_refusal("has a dotted key of more than 16 parts")
    assert str(project) in message and "line 1" in message
    assert took < BOUND_S


def test_thousands_of_dotted_keys_within_the_bounds_load_quickly(isolated_env: Path) -> None:
    """As many keys of 15 parts as the project cap holds: within the bounds every parse is linear."""
    lines, size, n = [], 0, 0
    while size < 60_000:
        lines.append(".".join(["p"] * 14) + f".k{n} = {n}\n")
        size += len(lines[-1])
        n += 1
    (isolated_env / "svgagent.toml").write_text('model = "m"\n' + "".join(lines))
    start = time.monotonic()
    assert load_settings().model == "m"
    assert time.monotonic() - start < BOUND_S
    assert n > 1000


def test_too_many_keys_are_refused(isolated_env: Path) -> None:
    (isolated_env / "svgagent.toml").write_text("".join(f"k{i} = {i}\n" for i in range(5000)))
    timed_refusal("has more than 4096 keys, array elements and tables")


# --- .env ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["fifo", "directory", "device"])
def test_a_dotenv_that_is_not_a_regular_file_is_refused_with_one_line(isolated_env: Path, kind: str) -> None:
    """A FIFO named .env hung `eval --demo` for good (python-dotenv waited on it); a directory or a device is no
    settings file either."""
    env = isolated_env / ".env"
    if kind == "fifo":
        os.mkfifo(env)
    elif kind == "directory":
        env.mkdir()
    else:
        env.symlink_to("/dev/zero")  # a device that never ends
    line = one_line(svgagent("eval", "--demo", "--rows", "1", cwd=isolated_env, timeout=60))
    assert f"{env} is not a regular file" in line


def test_a_project_dotenv_endpoint_receives_no_key_until_confirmed(isolated_env: Path, tmp_path: Path) -> None:
    """.env in the working directory may hold the person's keys (no question about those) and settings: an
    endpoint it sets is under the same one-time confirmation as one svgagent.toml sets."""
    home = {"SVGAGENT_HOME": str(tmp_path / "home")}
    with Simulator() as sim:
        assert sim.base_url is not None
        env = isolated_env / ".env"
        env.write_text(
            "".join(f"{k}={v}\n" for k, v in KEYS.items())
            + f"SVGAGENT_BASE_URL={sim.base_url}\nSVGAGENT_JUDGE_BASE_URL={sim.base_url}\n"
            + "SVGAGENT_MODEL=simulated-policy\nSVGAGENT_JUDGE_MODEL=simulated-judge\nSVGAGENT_RENDER_SIZE=64\n"
        )
        line = one_line(svgagent("eval", "--rows", "1", cwd=isolated_env, env=home))
        assert str(env) in line and "svgagent trust" in line and "127.0.0.1" in line
        assert sim.stats()["total_requests"] == 0  # not one request, so no key, went there
        confirmed = svgagent("trust", "--yes", cwd=isolated_env, env=home)
        assert confirmed.returncode == 0, confirmed.stderr
        assert f"{env}: base_url = {sim.base_url}" in confirmed.stdout
        ran = svgagent("eval", "--rows", "1", cwd=isolated_env, env=home)
        assert ran.returncode in (0, 1), ran.stderr
        assert sim.stats()["requests"]["policy"] == 1
    env.write_text("".join(f"{k}={v}\n" for k, v in KEYS.items()))  # keys only: nothing to confirm
    nothing = svgagent("trust", cwd=isolated_env, env=home)
    assert nothing.returncode == 0 and "nothing to confirm" in nothing.stderr


# --- safety limits and the store -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "field"),
    [
        ("render_memory_mb = 16384", "render_memory_mb"),
        ("render_timeout_s = 600", "render_timeout_s"),
        ("render_size = 4096", "render_size"),
        ("concurrency = 1024", "concurrency"),
        ("workers = 64", "workers"),
        ("request_timeout_s = 3600", "request_timeout_s"),
        ('store = "runs-in-the-repo.db"', "store"),
        ('home = "data-in-the-repo"', "home"),
        ('chromium_path = "./run-me.sh"', "chromium_path"),  # a program --renderer chromium would start
    ],
)
def test_a_project_file_may_not_raise_a_limit_or_move_the_store_unasked(
    isolated_env: Path, written: str, field: str
) -> None:
    project = isolated_env / "svgagent.toml"
    project.write_text(f"{written}  # from the project\n")
    with pytest.raises(ConfigError, match="svgagent trust") as refused:
        load_settings()
    message = str(refused.value)
    assert str(project) in message and field in message and "\n" not in message
    (pending,) = read_settings().pending
    assert pending.field == field


def test_a_raised_limit_and_a_moved_store_refuse_the_cli_until_confirmed(isolated_env: Path) -> None:
    project = isolated_env / "svgagent.toml"
    project.write_text('render_memory_mb = 16384\nrender_timeout_s = 600\nstore = "runs-in-the-repo.db"\n')
    line = one_line(svgagent("eval", "--demo", "--rows", "1", cwd=isolated_env))
    assert str(project) in line and "svgagent trust" in line
    assert one_line(svgagent("runs", "list", cwd=isolated_env)) == line
    assert not (isolated_env / "runs-in-the-repo.db").exists()
    tui = one_line(svgagent("tui", "--demo", cwd=isolated_env))  # no terminal to ask on: the same refusal
    assert "svgagent trust" in tui
    listed = svgagent("trust", "--yes", cwd=isolated_env)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == [
        f"{project}: render_timeout_s = 600.0 (raises a safety limit; yours: 20.0)",
        f"{project}: render_memory_mb = 16384 (raises a safety limit; yours: 1024)",
        f"{project}: store = runs-in-the-repo.db (the run store moves there; yours: not set)",
    ]
    ran = svgagent("eval", "--demo", "--rows", "1", cwd=isolated_env)
    assert ran.returncode in (0, 1), ran.stderr
    assert (isolated_env / "runs-in-the-repo.db").exists()
    project.write_text('render_memory_mb = 8192\nrender_timeout_s = 600\nstore = "runs-in-the-repo.db"\n')
    assert "raises render_memory_mb to 8192" in one_line(svgagent("runs", "list", cwd=isolated_env))  # asked again


def test_a_project_file_may_lower_limits_and_the_person_may_raise_them(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (isolated_env / "svgagent.toml").write_text("render_timeout_s = 5\nrender_memory_mb = 512\nconcurrency = 2\n")
    (isolated_env / ".env").write_text("SVGAGENT_RENDER_SIZE=256\n")
    settings = load_settings()
    assert (settings.render_timeout_s, settings.render_memory_mb, settings.concurrency) == (5, 512, 2)
    assert settings.render_size == 256 and settings.pending == ()
    (isolated_env / "svgagent.toml").write_text("render_memory_mb = 4096\n")
    user = user_config_file()
    user.parent.mkdir(parents=True)
    user.write_text("render_memory_mb = 8192\n")  # the person's own file: the project's 4096 lowers it
    assert load_settings().render_memory_mb == 4096
    user.unlink()
    monkeypatch.setenv("SVGAGENT_RENDER_MEMORY_MB", "4096")  # the person's environment beats the project file
    (isolated_env / "svgagent.toml").write_text("render_memory_mb = 16384\n")
    assert load_settings(render_timeout_s=300).render_memory_mb == 4096


def test_a_value_the_config_pane_saved_is_the_person_s_own(isolated_env: Path) -> None:
    """The Config pane writes svgagent.toml for the person: what it saved needs no confirmation at the next start."""
    from svgagent.core.config.form_fields import save_project_config

    save_project_config({"concurrency": 64, "render_timeout_s": 60.0, "base_url": "http://127.0.0.1:9/v1"})
    settings = load_settings()
    assert (settings.concurrency, settings.render_timeout_s) == (64, 60.0)
    assert settings.pending == ()
    (isolated_env / "svgagent.toml").write_text("concurrency = 128\n")  # changed by hand since: asked again
    assert [s.field for s in read_settings().pending] == ["concurrency"]


# --- svgagent trust --------------------------------------------------------------------------------------------


def _on_a_terminal(args: list[str], cwd: Path, answer: bytes) -> tuple[int, str]:
    """Run ``svgagent ARGS`` with a pseudo-terminal as stdin, stdout and stderr; answer the question once it is
    asked. Returns the exit status and everything the terminal showed."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        svgagent_argv(*args), stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env={**os.environ, **KEYS}
    )
    os.close(slave)
    shown, answered = b"", False
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(master, 4096)
                except OSError:  # the other side closed: the command ended
                    break
                if not chunk:
                    break
                shown += chunk
            if not answered and b"[y/N]" in shown:
                os.write(master, answer)
                answered = True
            if proc.poll() is not None and not ready:
                break
        return proc.wait(timeout=30), shown.decode(errors="replace")
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()


def test_trust_lists_what_it_would_trust_and_asks_on_a_terminal(isolated_env: Path) -> None:
    project, env = isolated_env / "svgagent.toml", isolated_env / ".env"
    project.write_text('judge_base_url = "http://judge.example:8080/v1"\nrender_memory_mb = 4096\n')
    env.write_text("SVGAGENT_BASE_URL=http://policy.example/v1\n")
    status, shown = _on_a_terminal(["trust"], isolated_env, b"n\n")
    assert status == 2, shown
    for needed in (
        f"{env}: base_url = http://policy.example/v1",
        "policy.example:80",
        f"{project}: judge_base_url = http://judge.example:8080/v1",
        "judge.example:8080",
        f"{project}: render_memory_mb = 4096",
        "[y/N]",
        "nothing confirmed",
    ):
        assert needed in shown, shown
    assert not trust_file().exists()
    assert len(read_settings().pending) == 3

    status, shown = _on_a_terminal(["trust"], isolated_env, b"y\n")
    assert status == 0, shown
    assert "confirmed 3 setting(s)" in shown
    assert read_settings().pending == ()
    kept = json.loads(trust_file().read_text())["trusted"]
    assert {"file": str(env), "host": "policy.example:80"} in kept
    assert {"file": str(project), "setting": "render_memory_mb", "value": "4096"} in kept
    listed = svgagent("trust", "--list", cwd=isolated_env)
    assert f"{project}  render_memory_mb = 4096" in listed.stdout
    forgot = svgagent("trust", "--forget", cwd=isolated_env)
    assert forgot.returncode == 0 and "withdrew 3 confirmation(s)" in forgot.stderr
    assert len(read_settings().pending) == 3


def test_trust_without_a_terminal_or_yes_confirms_nothing(isolated_env: Path) -> None:
    (isolated_env / "svgagent.toml").write_text("render_memory_mb = 4096\n")
    line = one_line(svgagent("trust", cwd=isolated_env))
    assert "--yes" in line
    assert not trust_file().exists()
    (isolated_env / "svgagent.toml").unlink()
    nothing_here = one_line(svgagent("trust", cwd=isolated_env))
    assert "nothing to confirm" in nothing_here
