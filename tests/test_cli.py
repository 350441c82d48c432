"""The headless CLI, run as a user runs it: a real `svgagent` process."""

from __future__ import annotations

import csv
import io
import json
import os
import shlex
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_process import svgagent_argv

from svgagent.core.sim.simulator import Simulator
from svgagent.core.store.run_store import Store

RUN_KEYS = {
    "run_id",
    "rollouts",
    "scored",
    "failed",
    "invalid",
    "mean_score",
    "stderr",
    "threshold",
    "passed",
    "duration_s",
    "cost",
}
ROLLOUT_KEYS = {
    "rollout_id",
    "row_id",
    "sample_index",
    "status",
    "score",
    "fulfilled",
    "total",
    "is_score_valid",
    "reason",
    "error",
    "generation_s",
    "render_s",
    "judge_s",
    "prompt_tokens",
    "completion_tokens",
}


def svgagent(*args: str, env: dict[str, str] | None = None, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        svgagent_argv(*args), capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})}
    )


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    h = tmp_path / "svghome"
    monkeypatch.setenv("SVGAGENT_HOME", str(h))
    return h


def test_eval_demo_json_and_stored_run(home: Path) -> None:
    out = svgagent("eval", "--demo", "--rows", "3", "--runs", "2", "--json")
    assert out.returncode in (0, 1), out.stderr
    data = json.loads(out.stdout)
    assert set(data) == RUN_KEYS
    assert data["rollouts"] == 6
    assert data["scored"] + data["failed"] == 6
    assert out.returncode == (0 if data["passed"] else 1)
    assert data["passed"] == (data["mean_score"] >= data["threshold"])
    shown = json.loads(svgagent("runs", "show", data["run_id"], "--json").stdout)
    assert shown["run"]["run_id"] == data["run_id"]
    assert len(shown["rollouts"]) == 6
    assert ROLLOUT_KEYS <= set(shown["rollouts"][0])
    listed = json.loads(svgagent("runs", "list", "--json").stdout)
    assert listed[0]["run_id"] == data["run_id"]
    assert {"run_id", "name", "created", "status", "rollouts", "mean_score"} <= set(listed[0])
    assert listed[0]["mean_score"] == pytest.approx(data["mean_score"])


def test_rows_beyond_the_dataset_are_capped_with_a_note(home: Path) -> None:
    # the cap was silent: `--rows 500` ran 33 rollouts and said nothing about the other 467
    out = svgagent("eval", "--demo", "--rows", "500", "--json")
    assert out.returncode in (0, 1), out.stderr
    assert json.loads(out.stdout)["rollouts"] == 33
    assert "svgagent: --rows 500: the dataset has 33 rows; running 33" in out.stderr.splitlines()
    exact = svgagent("eval", "--demo", "--rows", "33", "--json")
    assert "the dataset has" not in exact.stderr


def test_help_says_what_an_option_left_out_does(home: Path) -> None:
    # `--rows N  use the first N rows` left the default (all of them) to guess; so did a few others
    shown = {
        command: " ".join(svgagent(*command, "--help").stdout.split())
        for command in (("eval",), ("rft", "create"), ("runs", "compare"))
    }
    assert "--rows N use the first N rows; an integer from 1 to 1000000 (default all rows)" in shown[("eval",)]
    assert "reasoning models (default none: not sent)" in shown[("eval",)]
    assert "(default 0.8)" in shown[("eval",)] and "(default 0.5)" in shown[("eval",)]  # as before
    assert "--rows N use only the first N rows (default: all rows)" in shown[("rft", "create")]
    assert "got worse/better (default: every row)" in shown[("runs", "compare")]
    assert "show at most N rows (default: all)" in shown[("runs", "compare")]


def test_a_one_score_summary_prints_no_spread(home: Path) -> None:
    # "mean score │ 0.750 ± 0.000": one score has no standard error (None in --json, as for no score)
    out = svgagent("eval", "--demo", "--rows", "1", "--threshold", "0", env={"COLUMNS": "100"})
    assert out.returncode == 0, out.stderr
    (line,) = [text for text in out.stdout.splitlines() if "mean score" in text]
    assert "±" not in line and "PASS" in line
    run_id = out.stdout.split("run ", 1)[1].split()[0]
    assert json.loads(svgagent("runs", "show", run_id, "--json").stdout)["run"]["summary"]["stderr"] is None
    shown = svgagent("runs", "show", run_id, env={"COLUMNS": "200"}).stdout.splitlines()[0]
    assert "1/1 done (1 scored · 0 invalid · 0 failed), mean " in shown and "±" not in shown
    stats = svgagent("runs", "stats", run_id, env={"COLUMNS": "200"}).stdout
    assert "mean " in stats and "±" not in stats.split("· median", 1)[0]


def test_a_pass_with_rollouts_failed_by_an_endpoint_exits_3(home: Path) -> None:
    # half the requests answered HTTP 500: most rollouts failed without a score, the mean of the rest passed, and
    # the exit status said 0, a clean success. A missing SVG (the model's valid 0) is no such failure.
    from svgagent.core.sim.wire import SimConfig

    keys = {"FIREWORKS_API_KEY": "fw-test", "OPENAI_API_KEY": "sk-test"}
    with Simulator(SimConfig(error_5xx_every=2, seed=1)) as sim:
        out = svgagent(
            "eval",
            "--base-url",
            sim.base_url,
            "--judge-base-url",
            sim.base_url,
            "--model",
            "simulated-policy",
            "--judge-model",
            "simulated-judge",
            "--rows",
            "8",
            "--max-retries",
            "0",
            "--threshold",
            "0",
            "--json",
            env=keys,
        )
    summary = json.loads(out.stdout)
    assert summary["passed"] and summary["failed"] > 0
    assert out.returncode == 3, out.stderr
    unscored = summary["failed"] + summary["invalid"]
    outcomes = f"{summary['scored']} scored" + (f" · {summary['invalid']} invalid" if summary["invalid"] else "")
    assert (
        f"svgagent: {unscored} of 8 rollouts have no valid score ({outcomes} · {summary['failed']} failed; "
        f"`svgagent runs stats {summary['run_id']}` says why): the mean is of the scored ones, so exit status 3, "
        "not a pass"
    ) in out.stderr.splitlines()
    clean = svgagent("eval", "--demo", "--rows", "8", "--threshold", "0", "--json")  # the demo's no-SVG answers too
    clean_summary = json.loads(clean.stdout)
    assert clean_summary["failed"] == 0 and clean_summary["invalid"] == 0
    assert clean_summary["scored"] == 8  # its no-SVG answers among them: the model's valid 0s
    shown = json.loads(svgagent("runs", "show", clean_summary["run_id"], "--json").stdout)["rollouts"]
    assert any(r["failure_kind"] == "no_svg" for r in shown)
    assert clean.returncode == 0, clean.stderr


def test_eval_threshold_decides_exit_code(home: Path) -> None:
    assert svgagent("eval", "--demo", "--rows", "2", "--threshold", "0").returncode == 0
    assert svgagent("eval", "--demo", "--rows", "2", "--threshold", "1").returncode == 1


def test_export_jsonl_and_csv(home: Path, tmp_path: Path) -> None:
    run_id = json.loads(svgagent("eval", "--demo", "--rows", "2", "--json").stdout)["run_id"]
    lines = svgagent("export", run_id, "--format", "jsonl").stdout.splitlines()
    assert len(lines) == 2
    row = json.loads(lines[0])
    assert row["messages"][0]["role"] == "user"
    assert row["messages"][-1]["role"] == "assistant"
    assert row["input_metadata"]["dataset_info"]["total_requirements"] == len(
        row["input_metadata"]["dataset_info"]["requirements"]
    )
    assert row["rollout_status"]["code"] == 100
    assert row["evaluation_result"] is not None
    target = tmp_path / "out.csv"
    assert svgagent("export", run_id, "--format", "csv", "-o", str(target)).returncode == 0
    rows = list(csv.DictReader(io.StringIO(target.read_text())))
    assert [r["rollout_id"] for r in rows] == [json.loads(x)["execution_metadata"]["rollout_id"] for x in lines]


def test_missing_key_names_variable_and_writes_nothing(home: Path) -> None:
    out = svgagent("eval", "--rows", "1")
    assert out.returncode == 2
    assert "FIREWORKS_API_KEY" in out.stderr
    assert ".env" in out.stderr
    assert "Traceback" not in out.stderr
    assert not home.exists()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--concurrency", "0"], "concurrency"),
        (["--temperature", "9"], "temperature"),
        (["--dataset", "nope.json"], "nope.json"),
        (["--resume", "no-such-run"], "no-such-run"),
    ],
)
def test_bad_input_is_one_line_exit_2(home: Path, args: list[str], needle: str) -> None:
    out = svgagent("eval", "--demo", *args)
    assert out.returncode == 2, out.stderr
    assert needle in out.stderr
    assert "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


BAD_DATASETS = {
    "empty-requirements": b'[{"prompt": "Draw a cat.", "requirements": []}]',
    "missing-prompt": b'[{"requirements": ["A cat."]}]',
    "wrong-types": b'[{"prompt": "Draw a cat.", "requirements": "a cat"}]',
    "not-utf8": b'[{"prompt": "Draw a \xff\xfe cat.", "requirements": ["A cat."]}]',
    "not-json": b"[{prompt: nope",
    "empty-array": b"[]",
    "jsonl-bad-line": b'{"messages": [], "input_metadata": {"dataset_info": {"original_prompt": "x", '
    b'"requirements": ["y"]}}}\n{broken\n',
}


@pytest.mark.parametrize("case", sorted(BAD_DATASETS))
def test_bad_dataset_file_is_one_clear_line_and_writes_nothing(home: Path, tmp_path: Path, case: str) -> None:
    bad = tmp_path / f"{case}.data"
    bad.write_bytes(BAD_DATASETS[case])
    out = svgagent("eval", "--demo", "--dataset", str(bad))
    assert out.returncode == 2, out.stderr
    assert bad.name in out.stderr
    assert "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert not home.exists()


def test_huge_dataset_is_refused_without_reading_it(home: Path, tmp_path: Path) -> None:
    huge = tmp_path / "huge.json"
    with huge.open("wb") as f:  # sparse: large on paper, cheap to make
        f.truncate(60 * 1024 * 1024)
    out = svgagent("eval", "--demo", "--dataset", str(huge))
    assert out.returncode == 2
    assert "huge.json" in out.stderr
    assert "large" in out.stderr
    assert not home.exists()


def test_render_command(tmp_path: Path) -> None:
    good = tmp_path / "in.svg"
    good.write_text(
        '<svg xmlns="http://www.w3.org/2000/svg" width="20" height="10"><rect width="20" height="10" fill="red"/></svg>'
    )
    out_png = tmp_path / "out.png"
    ok = svgagent("render", str(good), "-o", str(out_png), "--size", "64")
    assert ok.returncode == 0, ok.stderr
    from PIL import Image

    with Image.open(out_png) as img:
        assert img.size == (64, 32)
    hostile = tmp_path / "evil.svg"
    hostile.write_text(
        '<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]>'
        '<svg xmlns="http://www.w3.org/2000/svg"><text>&b;</text></svg>'
    )
    bad = svgagent("render", str(hostile), "-o", str(tmp_path / "evil.png"))
    assert bad.returncode != 0
    assert len(bad.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "evil.png").exists()


def test_render_reads_standard_input_for_a_dash_capped_as_a_file_is(tmp_path: Path) -> None:
    # `render - -o out.png` said "cannot read -"; and no input was capped as it was read: a 50 MB file was read
    # whole before the renderer refused it, /dev/zero ran out of memory
    from PIL import Image

    svg = '<svg xmlns="http://www.w3.org/2000/svg" width="20" height="10"><rect width="20" height="10"/></svg>'
    out_png = tmp_path / "out.png"
    ok = subprocess.run(
        svgagent_argv("render", "-", "-o", str(out_png), "--size", "64"),
        input=svg.encode(),
        capture_output=True,
        timeout=60,
    )
    assert ok.returncode == 0, ok.stderr
    with Image.open(out_png) as img:
        assert img.size == (64, 32)
    to_stdout = subprocess.run(
        svgagent_argv("render", "-", "-o", "-"), input=svg.encode(), capture_output=True, timeout=60
    )
    assert to_stdout.returncode == 0 and to_stdout.stdout.startswith(b"\x89PNG")
    for name, stdin in (("-", "/dev/zero"), ("/dev/zero", "/dev/null")):
        with open(stdin, "rb") as source:
            endless = subprocess.run(
                svgagent_argv("render", name, "-o", str(tmp_path / "z.png")),
                stdin=source,
                capture_output=True,
                text=True,
                timeout=60,
            )
        shown = "standard input" if name == "-" else name
        assert endless.returncode == 2
        assert endless.stderr.strip().splitlines() == [
            f"svgagent: error: {shown} is too large to render: over 1,000,000 bytes (the renderer's limit)"
        ]
    assert not (tmp_path / "z.png").exists()


def _wait_for(predicate, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


def _terminal_count(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        n = con.execute("SELECT COUNT(*) FROM rollouts WHERE status IN ('scored','failed')").fetchone()[0]
        con.close()
        return n
    except sqlite3.OperationalError:
        return 0


def _spawn_eval(sim: Simulator, home: Path, *extra: str) -> subprocess.Popen[str]:
    env = {**os.environ, "SVGAGENT_HOME": str(home), "FIREWORKS_API_KEY": "fw-test", "OPENAI_API_KEY": "sk-test"}
    args = [
        "eval",
        "--base-url",
        sim.base_url,
        "--judge-base-url",
        sim.base_url,
        "--model",
        "simulated-policy",
        "--judge-model",
        "simulated-judge",
        "--concurrency",
        "2",
        "--judge-concurrency",
        "2",
        *extra,
    ]
    return subprocess.Popen(
        [sys.executable, "-m", "svgagent.tui.cli.main", *args],
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


@pytest.mark.parametrize("kill_signal", [signal.SIGKILL, signal.SIGINT])
def test_killed_run_resumes_without_loss_or_regeneration(home: Path, kill_signal: signal.Signals) -> None:
    db = home / "runs.db"
    with Simulator(policy_latency_s=0.1, judge_latency_s=0.1) as sim:
        proc = _spawn_eval(sim, home, "--rows", "12", "--runs", "2", "--json")
        _wait_for(lambda: _terminal_count(db) >= 5)
        sim.hold()  # no answer completes from now on: the signal finds the run unfinished, however loaded the machine
        proc.send_signal(kill_signal)
        _, err = proc.communicate(timeout=60)
        sim.release()
        if kill_signal is signal.SIGINT:
            assert proc.returncode == 130, err
            assert "--resume" in err
        else:
            assert proc.returncode == -signal.SIGKILL
        with Store(db) as store:
            (run,) = store.list_runs()
            finished = {r.rollout_id: r.updated for r in store.list_rollouts(run.run_id) if r.status.terminal}
            assert run.status == ("interrupted" if kill_signal is signal.SIGINT else "running")
        generated = sim.stats()["requests"]["policy"]
        assert 5 <= len(finished) < 24
        resume = _spawn_eval(sim, home, "--resume", run.run_id, "--json")
        out, err = resume.communicate(timeout=120)
        assert resume.returncode in (0, 1), err
        summary = json.loads(out)
        assert summary["run_id"] == run.run_id
        assert summary["rollouts"] == 24
        with Store(db) as store:
            rollouts = store.list_rollouts(run.run_id, current_only=False)
            assert len(rollouts) == 24
            assert all(r.status.terminal for r in rollouts)
            assert len({(r.row_index, r.sample_index) for r in rollouts}) == 24
            for r in rollouts:
                if r.rollout_id in finished:
                    assert r.updated == finished[r.rollout_id]  # a finished rollout is never redone
            assert store.integrity_ok()
            assert store.get_run(run.run_id).status == "completed"
        # only the rollouts still unanswered at the kill were generated again (cache + stored answers)
        assert sim.stats()["requests"]["policy"] <= 24 + 2
        assert sim.stats()["requests"]["policy"] - generated <= 24 - len(finished)


def test_ctrl_c_stops_a_run_started_with_sigint_ignored(home: Path) -> None:
    """A process can start with SIGINT ignored (a shell's background job; a parent that ignored it while spawning):
    asyncio.run then installs no handler of its own and Ctrl-C did nothing — the run went on to its end, or hung
    on answers that never came. The command's loop handles SIGINT itself."""
    db = home / "runs.db"
    with Simulator(policy_latency_s=0.1, judge_latency_s=0.1) as sim:
        env = {**os.environ, "SVGAGENT_HOME": str(home), "FIREWORKS_API_KEY": "fw-test", "OPENAI_API_KEY": "sk-test"}
        args = [
            "eval",
            "--base-url",
            sim.base_url,
            "--judge-base-url",
            sim.base_url,
            "--model",
            "simulated-policy",
            "--judge-model",
            "simulated-judge",
            "--concurrency",
            "2",
            "--judge-concurrency",
            "2",
            "--rows",
            "12",
        ]
        proc = subprocess.Popen(
            [sys.executable, "-m", "svgagent.tui.cli.main", *args],
            env=env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
        )
        _wait_for(lambda: _terminal_count(db) >= 2)
        sim.hold()  # nothing completes from now on: only the signal can end the run
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=60)
        finally:
            proc.kill()
            sim.release()
    assert proc.returncode == 130, err
    assert "--resume" in err
    with Store(db) as store:
        (run,) = store.list_runs()
        assert run.status == "interrupted"


def test_the_resume_command_printed_after_ctrl_c_in_demo_mode_works(home: Path, tmp_path: Path) -> None:
    # issue 11: `svgagent eval --resume RUN` failed for lack of keys after `eval --demo`; the printed command keeps
    # --demo (and the store).
    db = tmp_path / "demo.db"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "svgagent.tui.cli.main",
            "eval",
            "--demo",
            "--rows",
            "6",
            "--concurrency",
            "1",
            "--store",
            str(db),
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # wait for the run to be under way (not a timing assertion)
        try:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
                if con.execute("SELECT COUNT(*) FROM runs WHERE status = 'running'").fetchone()[0]:
                    break
        except sqlite3.Error:
            pass
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    command = stderr.split("Continue with: ", 1)[1].strip().splitlines()[0]
    assert command.startswith("svgagent eval --demo --store ")
    assert "--resume" in command
    args = shlex.split(command)[1:]
    again = svgagent(*args)
    assert again.returncode in (0, 1), again.stderr
    with Store(db) as store:
        (run,) = store.list_runs()
        assert run.status == "completed"
        assert len(store.list_rollouts(run.run_id)) == 6


def _stored_run(db: Path, *, without: tuple[str, ...] = (), **settings: object) -> str:
    """An interrupted run of 2 rows × 1 sample, nothing done, stored with a real run's settings and ``settings``
    (``without``: settings it stored no value for, as an older svgagent)."""
    from svgagent.core.config.settings import Settings
    from svgagent.core.run.dataset import load_dataset

    base = {
        "model": "accounts/acme/models/policy-v1",
        "judge_model": "judge-v1",
        "rows": 2,
        "threshold": 0.6,
        "base_url": "http://127.0.0.1:9",
        "judge_base_url": "http://127.0.0.1:9",
    }  # nothing leaves the machine
    stored = {**Settings.model_validate({**base, **settings}).public_dict(), "cache": False}
    for name in without:
        del stored[name]
    dataset = load_dataset("builtin")
    ref = {"name": dataset.name, "source": dataset.source, "sha256": dataset.sha256, "rows": 2}
    db.parent.mkdir(parents=True, exist_ok=True)
    with Store(db) as store:
        run_id = store.create_run(name=None, settings=stored, dataset=ref, rows=list(dataset.rows[:2]), samples=1)
        store.set_run_status(run_id, "interrupted", store.summarize(run_id, 0.6))
    return run_id


@pytest.mark.parametrize(
    ("flag", "stored", "why"),
    [
        (["--model", "accounts/acme/models/policy-v2"], "model 'accounts/acme/models/policy-v1'", "measures"),
        (["--judge-model", "judge-v2"], "judge_model 'judge-v1'", "measures"),
        (["--judge-mode", "per-requirement"], "judge_mode 'count'", "measures"),
        (["--render-size", "64"], "render_size 512", "measures"),
        (["--rows", "3"], "rows 2", "measures"),
        (["--rows", "33"], "rows unset (all of the dataset's)", "measures"),
        (["--samples", "2"], "samples 1", "measures"),
        (["--dataset", "other.json"], "dataset 'builtin'", "measures"),
        (["--threshold", "0.9"], "threshold 0.6", "the stored threshold is the run's"),
        (["--temperature", "0.2"], "temperature 0.8", "measures"),
        (["--max-tokens", "512"], "max_tokens 4096", "measures"),
    ],
)
def test_a_resume_refuses_a_flag_that_changes_what_the_run_measures(
    home: Path, flag: list[str], stored: str, why: str
) -> None:
    # such a flag was obeyed for the rest of the rollouts: one run, two models (or sizes, modes, thresholds)
    run_id = _stored_run(home / "runs.db", **({"rows": None} if "unset" in stored else {}))
    done = svgagent(
        "eval",
        "--resume",
        run_id,
        *flag,
        "--max-retries",
        "0",
        env={"FIREWORKS_API_KEY": "fw-k", "OPENAI_API_KEY": "sk-k"},
    )
    assert done.returncode == 2
    given = repr(
        float(flag[1])
        if flag[0] in ("--threshold", "--temperature")
        else int(flag[1])
        if flag[1].isdigit()
        else flag[1]
    )
    assert done.stderr.strip().splitlines() == [
        f"svgagent: error: {flag[0]} {given}: run {run_id} was stored with {stored} "
        f"({'a resume keeps what the run ' + why if why == 'measures' else why}); drop {flag[0]} (or start a new run)"
    ]
    with Store(home / "runs.db", readonly=True) as store:
        assert [r.status.value for r in store.list_rollouts(run_id)] == ["queued", "queued"]


def test_a_resume_takes_flags_equal_to_the_stored_values_and_a_threshold_for_a_run_without_one(home: Path) -> None:
    from svgagent.core.demo import DEMO_JUDGE_MODEL, DEMO_POLICY_MODEL

    db = home / "runs.db"
    demo = {"model": DEMO_POLICY_MODEL, "judge_model": DEMO_JUDGE_MODEL}
    run_id = _stored_run(db, **demo)
    same = svgagent(
        "eval",
        "--demo",
        "--resume",
        run_id,
        "--model",
        DEMO_POLICY_MODEL,
        "--rows",
        "2",
        "--samples",
        "1",
        "--threshold",
        "0.6",
        "--render-size",
        "512",
        "--judge-mode",
        "count",
        "--dataset",
        "builtin",
        "--json",
    )
    assert same.returncode in (0, 1), same.stderr
    assert json.loads(same.stdout)["threshold"] == 0.6
    run_id = _stored_run(db, without=("threshold",), **demo)  # as an older svgagent stored it
    flagged = svgagent("eval", "--demo", "--resume", run_id, "--threshold", "0", "--json")
    assert flagged.returncode == 0, flagged.stderr
    assert json.loads(flagged.stdout)["threshold"] == 0.0


def test_a_resume_with_demo_of_a_run_made_without_it_is_refused(home: Path) -> None:
    # the simulator answered the rest of a real model's run: a run of two models, the second one made up
    run_id = _stored_run(home / "runs.db")
    done = svgagent("eval", "--demo", "--resume", run_id)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"svgagent: error: --demo: run {run_id} was not made with the built-in simulator (its policy is "
        "'accounts/acme/models/policy-v1'): a resume keeps what the run measures; drop --demo"
    ]
    with Store(home / "runs.db", readonly=True) as store:
        assert [r.status.value for r in store.list_rollouts(run_id)] == ["queued", "queued"]
