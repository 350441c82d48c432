"""One vocabulary for what became of a rollout — scored · invalid · failed — defined once (core/store/outcomes.py,
and in the README's words), used by every surface: the store's counts, `eval`'s summary and `--json`, `runs
list/show/stats`, the exports and the run picker (issue 34, item 3)."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import sqlite3
import subprocess
from pathlib import Path

import pytest
from cli_process import svgagent_argv
from factories import RUN_ID, build_run

from svgagent.core.scoring.models import FailureKind, RolloutStatus
from svgagent.core.store.outcomes import MEANINGS, OUTCOMES, Outcome, OutcomeCounts, outcome_of
from svgagent.core.store.run_store import Store

README = Path(__file__).resolve().parents[1] / "README.md"
SCORED, FAILED = RolloutStatus.SCORED, RolloutStatus.FAILED


@pytest.mark.parametrize(
    ("status", "valid", "score", "overridden", "kind", "expected"),
    [
        (SCORED, True, 0.75, False, None, Outcome.SCORED),  # the judge's verdict
        (FAILED, True, 0.0, False, FailureKind.NO_SVG, Outcome.SCORED),  # the model's valid 0: not "failed"
        (FAILED, True, 0.0, False, FailureKind.RENDER, Outcome.SCORED),  # svgagent's profile: a valid 0 too
        (FAILED, False, None, True, FailureKind.UNREACHABLE, Outcome.SCORED),  # a person's override counts
        (FAILED, False, None, False, FailureKind.RENDER, Outcome.INVALID),  # ep-quickstart: an invalid 0
        (FAILED, False, 0.0, False, FailureKind.JUDGE_UNUSABLE, Outcome.INVALID),  # the judge answered nonsense
        (SCORED, None, None, False, None, Outcome.INVALID),  # served without --judge: nobody judged it
        (FAILED, False, None, False, FailureKind.UNREACHABLE, Outcome.FAILED),
        (FAILED, False, None, False, FailureKind.TIMEOUT, Outcome.FAILED),
        (FAILED, False, None, False, FailureKind.INTERNAL, Outcome.FAILED),
        (FAILED, False, None, False, None, Outcome.FAILED),  # a failure stored without a kind
        (RolloutStatus.JUDGING, None, None, False, None, None),  # not finished: no outcome yet
    ],
)
def test_outcome_of_each_kind_of_rollout(
    status: RolloutStatus,
    valid: bool | None,
    score: float | None,
    overridden: bool,
    kind: FailureKind | None,
    expected: Outcome | None,
) -> None:
    assert outcome_of(status, score_valid=valid, score=score, overridden=overridden, failure_kind=kind) is expected


def test_the_readme_defines_each_word_once() -> None:
    text = " ".join(README.read_text().split())
    for outcome in OUTCOMES:
        assert len(re.findall(rf"\*\*{outcome.value}\*\*", text)) == 1, outcome  # one definition, in bold
    assert set(MEANINGS) == set(OUTCOMES)


def test_outcome_counts_text() -> None:
    assert OutcomeCounts(30, 2, 1).text() == "30 scored · 2 invalid · 1 failed"
    assert OutcomeCounts(4, 0, 1).text() == "4 scored · 1 failed"
    assert OutcomeCounts(4, 0, 0).text(all_three=True) == "4 scored · 0 invalid · 0 failed"


@pytest.fixture
def fixture_store(tmp_path: Path) -> Path:
    """The fixture run — row 2 a no-SVG 0, row 3 a judge outage, row 5 queued — and a served-like run stored
    without a summary, whose rollouts were not judged."""
    path = tmp_path / "runs.db"
    with Store(path) as store:
        build_run(store)
        build_run(store, run_id="20250101-000000-serv", name="served step 1")
        for rec in store.list_rollouts("20250101-000000-serv"):
            store.update_rollout(
                rec.rollout_id, status=SCORED, score=None, is_score_valid=None, failure_kind=None, override_score=None
            )
    with sqlite3.connect(path) as db:  # the rollout server stores no run summary
        db.execute("UPDATE runs SET summary_json = NULL WHERE run_id = ?", ("20250101-000000-serv",))
    return path


def test_the_store_counts_outcomes_as_the_records_say(fixture_store: Path) -> None:
    with Store(fixture_store) as store:
        rollouts, counts = store.outcome_counts(RUN_ID)
        records = store.list_rollouts(RUN_ID)
        assert rollouts == len(records) == 6
        assert counts == OutcomeCounts(*(sum(1 for r in records if r.outcome is o) for o in OUTCOMES))
        assert counts == OutcomeCounts(scored=4, invalid=0, failed=1)
        assert store.summarize(RUN_ID, 0.5).outcomes == counts
        assert store.outcome_counts("20250101-000000-serv") == (6, OutcomeCounts(0, 6, 0))


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(svgagent_argv(*args), capture_output=True, text=True, timeout=120, env={**os.environ})


def test_runs_list_show_stats_and_exports_say_the_same_words(fixture_store: Path, tmp_path: Path) -> None:
    store = str(fixture_store)
    listed = {r["run_id"]: r for r in json.loads(_cli("runs", "list", "--json", "--store", store).stdout)}
    assert {k: listed[RUN_ID][k] for k in ("rollouts", "done", "scored", "invalid", "failed")} == {
        "rollouts": 6,
        "done": 5,
        "scored": 4,
        "invalid": 0,
        "failed": 1,
    }
    served = listed["20250101-000000-serv"]
    assert (served["rollouts"], served["invalid"]) == (6, 6)
    text = subprocess.run(
        svgagent_argv("runs", "list", "--store", store),
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "200"},
    ).stdout
    assert "4 scored · 1 failed" in text and "0 scored · 6 invalid" in text

    shown = json.loads(_cli("runs", "show", RUN_ID, "--json", "--store", store).stdout)
    outcomes = {r["rollout_id"].rsplit(".", 2)[-2]: r["outcome"] for r in shown["rollouts"]}
    assert outcomes == {"0": "scored", "1": "scored", "2": "scored", "3": "failed", "4": "scored", "5": None}
    assert shown["run"]["summary"]["scored"] == 4 and shown["run"]["summary"]["failed"] == 1
    show_text = subprocess.run(
        svgagent_argv("runs", "show", RUN_ID, "--store", store),
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "200"},
    ).stdout
    assert "(4 scored · 0 invalid · 1 failed)" in show_text
    cells = {line.split("│")[1].strip(): line.split("│")[4].strip() for line in show_text.splitlines() if "│" in line}
    assert cells == {
        "0.0": "scored",
        "1.0": "scored",
        "2.0": "scored",
        "3.0": "failed",
        "4.0": "scored",
        "5.0": "queued",
    }

    stats = _cli("runs", "stats", RUN_ID, "--store", store).stdout
    assert "5 finished: 4 scored · 0 invalid · 1 failed" in stats

    out = tmp_path / "run.csv"
    assert _cli("export", RUN_ID, "--format", "csv", "-o", str(out), "--store", store).returncode == 0
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert [r["outcome"] for r in rows] == ["scored", "scored", "scored", "failed", "scored", ""]
    jsonl = tmp_path / "run.jsonl"
    assert _cli("export", RUN_ID, "--format", "jsonl", "-o", str(jsonl), "--store", store).returncode == 0
    extras = [json.loads(line)["execution_metadata"]["extra"]["svgagent"] for line in jsonl.read_text().splitlines()]
    assert [e["outcome"] for e in extras] == ["scored", "scored", "scored", "failed", "scored", None]


def test_the_run_picker_counts_a_served_run_it_has_no_summary_for(fixture_store: Path) -> None:
    from svgagent.screens.run_picker import run_line

    with Store(fixture_store) as store:
        served = store.get_run("20250101-000000-serv")
        assert served.summary is None
        line = run_line(served, counts=store.outcome_counts(served.run_id)).plain
    assert "6/6 done: 0 scored · 6 invalid" in line
    assert "?" not in line.split("·", 3)[-1]


def test_the_filter_reads_the_words_the_table_shows() -> None:
    from svgagent.core.store.filter_language import parse_query
    from svgagent.core.store.typed_rows import RolloutRecord

    def rec(row: int, status: RolloutStatus, **columns: object) -> RolloutRecord:
        return RolloutRecord(
            rollout_id=f"run.{row}.0",
            run_id="run",
            row_index=row,
            row_id=f"row_{row}",
            sample_index=0,
            status=status,
            prompt="p",
            requirements=["a"],
            total=1,
            **columns,  # type: ignore[arg-type]
        )

    rows = [
        rec(0, SCORED, score=1.0, is_score_valid=True),
        rec(1, FAILED, score=0.0, is_score_valid=True, failure_kind=FailureKind.NO_SVG),
        rec(2, FAILED, is_score_valid=False, failure_kind=FailureKind.JUDGE_UNUSABLE),
        rec(3, FAILED, is_score_valid=False, failure_kind=FailureKind.TIMEOUT),
        rec(4, RolloutStatus.QUEUED),
    ]

    def matching(text: str) -> list[int]:
        query = parse_query(text)
        return [r.row_index for r in rows if query.matches(r, marked=set())]

    assert [r.state for r in rows] == ["scored", "scored", "invalid", "failed", "queued"]
    assert matching("status:scored") == [0, 1]
    assert matching("status:invalid") == matching("invalid") == [2]
    assert matching("status:failed") == [3]
    assert matching("valid") == [0, 1]


def test_evals_summary_and_json_count_outcomes(tmp_path: Path) -> None:
    """The demo's policy leaves some answers without an SVG: scored (the model's valid 0), never "failed"."""
    env = {**os.environ, "SVGAGENT_HOME": str(tmp_path / "home"), "COLUMNS": "120"}
    run = subprocess.run(
        svgagent_argv("eval", "--demo", "--rows", "6", "--threshold", "0", "--json"),
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
    )
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    assert (data["scored"], data["invalid"], data["failed"]) == (6, 0, 0)
    assert re.search(r"outcomes\s*│\s*6 scored · 0 invalid · 0 failed", run.stderr)  # the summary (on stderr)
