"""What the headless commands print, as a user's shell sees it: a reader that leaves early (`| head -1`), output
that is not a terminal, text from outside the program, and the files a command is asked to write."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from cli_process import svgagent_argv

from svgagent.core.terminal_text import clipped, one_line


def svgagent(
    *args: str,
    closed_stdout: bool = False,
    fresh: bool = False,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 180,
) -> subprocess.CompletedProcess[str]:
    """``svgagent ARGS``; with ``closed_stdout`` its standard output is a pipe nobody reads any more (the reader
    of `svgagent … | head -1` after its first line), so every write to it fails with EPIPE. ``fresh``: in an
    interpreter of its own, whose last flush of a buffered stdout decides as a user's does (a warm child's is the
    fork server's)."""
    full_env = {**os.environ, **(env or {})}
    argv = [sys.executable, "-m", "svgagent.tui.cli.main", *args] if fresh else svgagent_argv(*args)
    if not closed_stdout:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=full_env, cwd=cwd)
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            argv, stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=timeout, env=full_env, cwd=cwd
        )
    finally:
        os.close(write_end)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    h = tmp_path / "svghome"
    monkeypatch.setenv("SVGAGENT_HOME", str(h))
    monkeypatch.delenv("COLUMNS", raising=False)
    return h


@pytest.mark.parametrize("as_json", [False, True])
def test_eval_exit_status_is_the_verdict_when_the_reader_of_stdout_left(home: Path, as_json: bool) -> None:
    # rich ended a broken pipe with SystemExit(1): `eval | head -1` of a passing run exited 1, "below the
    # threshold"; and a --json run below it exited 0 (main's broken-pipe handler)
    extra = ["--json"] if as_json else []
    env = {"PYTHONUNBUFFERED": ""}  # stdout block-buffered, as usual for a pipe: the one line is written at exit
    passing = svgagent(
        "eval", "--demo", "--rows", "2", "--threshold", "0", *extra, closed_stdout=True, fresh=as_json, env=env
    )
    assert passing.returncode == 0, passing.stderr
    failing = svgagent(
        "eval", "--demo", "--rows", "2", "--threshold", "1", *extra, closed_stdout=True, fresh=as_json, env=env
    )
    assert failing.returncode == 1, failing.stderr
    for done in (passing, failing):
        assert "Traceback" not in done.stderr
        assert "Broken pipe" not in done.stderr


def test_tables_to_a_reader_that_left_exit_0_like_their_json(home: Path) -> None:
    run_id = json.loads(svgagent("eval", "--demo", "--rows", "2", "--json").stdout)["run_id"]
    for command in (
        ["runs", "list"],
        ["runs", "show", run_id],
        ["runs", "stats", run_id],
        ["runs", "compare", run_id, run_id],
        ["runs", "show", run_id, "--json"],
    ):
        done = svgagent(*command, closed_stdout=True)
        assert done.returncode == 0, (command, done.stderr)
        assert "Traceback" not in done.stderr, command


def _demo_run(name: str = "baseline for the long-named experiment") -> tuple[str, list[dict]]:
    run_id = json.loads(svgagent("eval", "--demo", "--rows", "3", "--name", name, "--json").stdout)["run_id"]
    return run_id, json.loads(svgagent("runs", "show", run_id, "--json").stdout)["rollouts"]


def _table_rows(text: str) -> list[list[str]]:
    return [
        [cell.strip() for cell in line.strip("│┃").split("│" if "│" in line else "┃")]
        for line in text.splitlines()
        if line.startswith(("│", "┃"))
    ]


def test_runs_show_keeps_every_column_whole_in_a_pipe_and_at_80_columns(home: Path) -> None:
    # at rich's 80 columns (its width for a pipe, and a common terminal) the score column was squeezed to nothing
    run_id, rollouts = _demo_run()
    scores = [f"{r['score']:.3f}" for r in rollouts]
    piped = svgagent("runs", "show", run_id)
    assert piped.returncode == 0, piped.stderr
    header, *rows = _table_rows(piped.stdout)
    assert header == ["rollout", "row", "sample", "status", "score", "ok/total", "gen s", "judge s", "$", "reason"]
    assert [row[4] for row in rows] == scores
    assert all(row[8].startswith("$") for row in rows)  # each rollout's dollars (the demo's models have prices)
    assert [row[9] for row in rows] == [clipped(one_line(r["reason"]), 60, words=True) for r in rollouts]
    narrow = svgagent("runs", "show", run_id, env={"COLUMNS": "80"})
    assert narrow.returncode == 0, narrow.stderr
    header, *rows = _table_rows(narrow.stdout)
    assert header[:8] == ["rollout", "row", "sample", "status", "score", "ok/total", "gen s", "judge s"]
    assert [row[4] for row in rows] == scores
    assert [row[3] for row in rows] == [r["status"] for r in rollouts]
    assert all(len(line) <= 80 for line in narrow.stdout.splitlines())
    assert "--json" in narrow.stdout  # where the reasons it had no room for are
    wider = svgagent("runs", "show", run_id, env={"COLUMNS": "110"})
    header, *rows = _table_rows(wider.stdout)
    assert header[-1] == "reason" and [row[4] for row in rows] == scores
    assert all(len(line) <= 110 for line in wider.stdout.splitlines())


def _ruled_rows(text: str) -> list[list[str]]:
    """The rows of a table drawn without column lines (`runs list`): cells two spaces or more apart."""
    lines = text.splitlines()
    rule = next(i for i, line in enumerate(lines) if line.startswith("─"))
    return [re.split(r" {2,}", line.strip()) for line in [lines[rule - 1], *lines[rule + 1 :]] if line.strip()]


def test_runs_list_in_a_pipe_is_not_cut_to_80_columns(home: Path) -> None:
    run_id, _ = _demo_run()
    listed = svgagent("runs", "list")
    assert listed.returncode == 0, listed.stderr
    header, row = _ruled_rows(listed.stdout)
    assert header == ["run", "name", "created", "status", "model", "done", "outcomes", "mean", "cost"]
    assert row[:4] == [run_id, "baseline for the long-named experiment", row[2], "completed"]
    assert row[4] == "accounts/fireworks/models/qwen3-0p6b"  # the model the demo policy played, whole
    assert row[-1].startswith("$")


def test_runs_list_in_an_80_column_terminal_keeps_the_counts_mean_and_dollars_whole(home: Path) -> None:
    """At 80 columns the creation time (the run's id begins with it) goes and the model shows its own name; the
    status, counts, mean and dollars are never cut (they were: "sta…", "0.5…", "$0.…")."""
    run_id, _ = _demo_run()
    shown = svgagent("runs", "list", env={"COLUMNS": "80"})
    assert shown.returncode == 0, shown.stderr
    assert all(len(line) <= 80 for line in shown.stdout.splitlines())
    header, row = _ruled_rows(shown.stdout)
    assert header == ["run", "name", "status", "model", "done", "outcomes", "mean", "cost"]
    assert row[0] == run_id and row[2] == "completed"
    assert row[1].endswith("…") and "baseline for the long-named experiment".startswith(row[1][:-1])  # one line
    assert row[3].startswith("qwen3")
    assert (
        re.fullmatch(r"\d+/\d+", row[4]) and re.fullmatch(r"0\.\d{3}", row[6]) and re.fullmatch(r"\$\d\.\d{4}", row[7])
    )


HOSTILE_ROW = "row\x1b[2J\x1b]52;c;cHduZWQ=\x07[/x]"  # clear the screen, write the clipboard (OSC 52), bad markup
HOSTILE_REASON = "fine \x1b]0;retitled\x07\x9b31m\x1b[31mred"


def test_text_from_an_imported_file_cannot_drive_the_terminal(home: Path, tmp_path: Path) -> None:
    run_id, _ = _demo_run()
    line = json.loads(svgagent("export", run_id).stdout.splitlines()[0])
    line["input_metadata"]["row_id"] = HOSTILE_ROW
    line["evaluation_result"]["reason"] = HOSTILE_REASON
    line["execution_metadata"]["extra"]["svgagent"]["reason"] = HOSTILE_REASON
    bad = tmp_path / "hostile.jsonl"
    bad.write_text(json.dumps(line) + "\n" + "{\x1b[2J\n")
    imported = svgagent("import", str(bad), "--name", "imported \x1b[2J run")
    assert imported.returncode == 0, imported.stderr
    new = imported.stdout.strip()
    for command in (
        ["runs", "show", new],
        ["runs", "list"],
        ["runs", "stats", new],
        ["runs", "compare", new, new],
        ["runs", "show", "\x1b[2Jnope"],
    ):
        shown = svgagent(*command, env={"COLUMNS": "200"})
        assert shown.returncode == (2 if "nope" in command[-1] else 0), shown.stderr
        for stream in (shown.stdout, shown.stderr):
            assert not any(c in stream for c in "\x1b\x07\x9b"), (command, stream)
        assert "Traceback" not in shown.stderr
        assert "\\x1b[2J" in shown.stdout + shown.stderr, command  # shown, not obeyed
    assert "\\x1b[2J" in svgagent("runs", "show", new, env={"COLUMNS": "200"}).stdout.split(new, 1)[1]


def test_an_export_or_render_never_replaces_the_run_store(home: Path, tmp_path: Path) -> None:
    # `export RUN -o runs.db` in the data directory replaced the store with JSONL: every run gone
    run_id, _ = _demo_run()
    store = home / "runs.db"
    before = store.read_bytes()[:16]
    picture = tmp_path / "in.svg"
    picture.write_text(
        '<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"><rect width="4" height="4"/></svg>'
    )
    link = tmp_path / "link.db"
    link.symlink_to(store)
    for command in (
        ["export", run_id, "-o", str(store)],
        ["export", run_id, "--format", "csv", "-o", str(link)],
        ["render", str(picture), "-o", str(store)],
    ):
        refused = svgagent(*command)
        assert refused.returncode == 2, (command, refused.stderr)
        assert "SQLite database" in refused.stderr and "Traceback" not in refused.stderr
    backup = svgagent("store", "backup", str(store))
    assert backup.returncode == 2 and "the run store itself" in backup.stderr
    assert store.read_bytes()[:16] == before
    assert link.is_symlink()
    assert json.loads(svgagent("runs", "show", run_id, "--json").stdout)["run"]["run_id"] == run_id
    # a backup file is replaced by a newer backup, as before; a plain file by an export
    copy = tmp_path / "copy.db"
    assert svgagent("store", "backup", str(copy)).returncode == 0
    assert svgagent("store", "backup", str(copy)).returncode == 0
    plain = tmp_path / "rows.jsonl"
    plain.write_text("old\n")
    assert svgagent("export", run_id, "-o", str(plain)).returncode == 0
    assert plain.read_text().startswith("{")


def test_a_malformed_config_file_is_named_in_its_error(home: Path, tmp_path: Path) -> None:
    # "cannot read configuration: Invalid value (at line 1, column 15)" left the user to guess which file
    project = tmp_path / "project"
    project.mkdir()
    (project / "svgagent.toml").write_text("concurrency = \n")
    done = svgagent("eval", "--demo", "--rows", "1", cwd=project)
    assert done.returncode == 2
    assert str(project / "svgagent.toml") in done.stderr and "line 1" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    config = tmp_path / "xdg"
    (config / "svgagent").mkdir(parents=True)
    (config / "svgagent" / "config.toml").write_text("[oops\n")
    (project / "svgagent.toml").write_text("concurrency = 2\n")
    done = svgagent("runs", "list", cwd=project, env={"XDG_CONFIG_HOME": str(config)})
    assert done.returncode == 2
    assert str(config / "svgagent" / "config.toml") in done.stderr


def test_a_demo_run_resumed_without_demo_is_refused_before_a_key_is_sent(home: Path) -> None:
    # the run keeps the simulator's loopback address: without --demo, FIREWORKS_API_KEY and OPENAI_API_KEY went to
    # whatever listened on that port since, and every unfinished rollout failed as "unreachable"
    from svgagent.core.scoring.models import DatasetRow
    from svgagent.core.sim.simulator import Simulator
    from svgagent.core.store.run_store import Store

    with Simulator() as squatter:  # what listens on the old simulator's port now
        home.mkdir()
        with Store(home / "runs.db") as store:
            run_id = store.create_run(
                name="demo",
                samples=1,
                dataset={"name": "builtin", "source": "builtin", "rows": 1},
                settings={
                    "model": "simulated-policy",
                    "judge_model": "simulated-judge",
                    "base_url": squatter.base_url,
                    "judge_base_url": squatter.base_url,
                },
                rows=[DatasetRow(0, "row_0", "Draw a red circle.", ("a red circle",))],
            )
            store.set_run_status(run_id, "interrupted", store.summarize(run_id, 0.5))
        done = svgagent(
            "eval",
            "--resume",
            run_id,
            "--max-retries",
            "0",
            env={"FIREWORKS_API_KEY": "fw-real-key-0123456789", "OPENAI_API_KEY": "sk-real-key-987654"},
        )
        assert done.returncode == 2, done.stderr
        assert f"svgagent eval --demo --resume {run_id}" in done.stderr
        assert squatter.stats()["total_requests"] == 0
    with Store(home / "runs.db") as store:
        assert [r.status.value for r in store.list_rollouts(run_id)] == ["queued"]


def test_serve_on_a_port_in_use_is_one_line(home: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = svgagent("serve", "--port", str(port), timeout=60)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    (line,) = [text for text in done.stderr.splitlines() if "error" in text]
    assert f"cannot listen on 127.0.0.1:{port}" in line and "--port" in line
    # the bind comes first: a failed start made the run store (and its directory) all the same
    assert "creating a new run store" not in done.stderr
    assert not home.exists()


def test_dev_stdout_is_written_through_a_pipe_and_appended_to_a_file(home: Path, tmp_path: Path) -> None:
    # README: /dev/stdout is written through. Into a pipe it resolved to /proc/PID/fd/pipe:[N] ("cannot write …: No
    # such file or directory", exit 2); into a file (`>> log`) the file behind fd 1 was replaced, the log's lines lost
    run_id, rollouts = _demo_run()
    piped = svgagent("export", run_id, "-o", "/dev/stdout")
    assert piped.returncode == 0, piped.stderr
    assert [json.loads(line)["execution_metadata"]["rollout_id"] for line in piped.stdout.splitlines()] == [
        r["rollout_id"] for r in rollouts
    ]
    log = tmp_path / "log.txt"
    log.write_text("an earlier line\n")
    picture = tmp_path / "in.svg"
    picture.write_text(
        '<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"><rect width="4" height="4"/></svg>'
    )
    for command in (
        ["export", run_id, "-o", "/dev/stdout"],
        ["render", str(picture), "-o", "/dev/stdout"],
        ["export", run_id, "--format", "csv", "-o", "/proc/self/fd/1"],
    ):
        with log.open("ab") as appended:
            done = subprocess.run(svgagent_argv(*command), stdout=appended, stderr=subprocess.PIPE, timeout=120)
        assert done.returncode == 0, done.stderr
    data = log.read_bytes()
    assert data.startswith(b"an earlier line\n{")
    jsonl, rest = data.removeprefix(b"an earlier line\n").split(b"\x89PNG", 1)
    assert len(jsonl.splitlines()) == len(rollouts)  # appended in order: the lines, the picture, the CSV
    assert b"IEND" in rest and rest.split(b"IEND", 1)[1][4:].startswith(b"run_id,rollout_id,")
    stderr_target = svgagent("export", run_id, "-o", "/dev/stderr")
    assert stderr_target.returncode == 0 and stderr_target.stdout == ""
    assert stderr_target.stderr.count('"messages"') == len(rollouts)
