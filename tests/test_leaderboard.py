"""svgagent.core.analysis.leaderboard (and themes) on runs built by hand; expected figures computed here."""

from __future__ import annotations

import csv
import io
import json
import statistics
from pathlib import Path

import pytest

from svgagent.core.analysis.leaderboard import build_leaderboard
from svgagent.core.analysis.themes import themes_of
from svgagent.core.config.prices import price_table
from svgagent.core.scoring.models import RolloutStatus
from svgagent.core.store.run_store import Store
from svgagent.tui.cli.main import main
from tests.test_compare import make_run


@pytest.fixture
def store(tmp_path: Path) -> Store:
    with Store(tmp_path / "runs.db") as s:
        yield s


# rows: (row_id, prompt, requirements, samples); a sample is the number of requirements fulfilled
ROWS_A = [("r0", "p0", 4, [4, 4]), ("r1", "p1", 4, [2, 4]), ("r2", "p2", 4, [3]), ("r3", "p3", 4, [1])]
ROWS_B = [("r0", "p0", 4, [2]), ("r1", "p1", 4, [1]), ("r2", "p2", 4, [2]), ("r4", "p4", 4, [4])]
ROWS_C = [("r0", "p0", 4, [4]), ("r1", "p1", 4, [3]), ("r2", "p2", 4, [3]), ("r3", "p3", 4, [None])]


def test_best_and_paired_differences_are_over_the_rows_every_run_shares(store: Store) -> None:
    a, b, c = make_run(store, ROWS_A, name="a"), make_run(store, ROWS_B, name="b"), make_run(store, ROWS_C, name="c")
    board = build_leaderboard(store, [b, a, c])
    assert board.shared_rows == 3  # r0, r1, r2: r3 has no valid score in c and is not in b, r4 only in b
    # per-row means on the shared rows, by hand
    shared = {"a": [1.0, 0.75, 0.75], "b": [0.5, 0.25, 0.5], "c": [1.0, 0.75, 0.75]}
    assert board.best_run in (a, c)  # a tie on the shared rows: either is the best
    rows = {r.name: r for r in board.rows}
    assert rows["a"].shared_mean == pytest.approx(statistics.mean(shared["a"]))
    deltas = [y - x for x, y in zip(shared["a"], shared["b"])]
    assert rows["b"].diff_vs_best == pytest.approx(statistics.mean(deltas))
    assert rows["b"].diff_stderr == pytest.approx(statistics.stdev(deltas) / len(deltas) ** 0.5)
    assert (rows["b"].wins, rows["b"].losses) == (0, 3)
    # the whole-run figures are stats' figures: every valid rollout, pass rate at the run's threshold
    a_scores = [1, 1, 0.5, 1, 0.75, 0.25]
    assert rows["a"].mean == pytest.approx(statistics.mean(a_scores))
    assert rows["a"].stderr == pytest.approx(statistics.stdev(a_scores) / len(a_scores) ** 0.5)
    assert rows["a"].pass_rate == pytest.approx(5 / 6)
    assert rows["a"].rows == 4 and rows["b"].rows == 4
    assert board.rows[-1].name == "b"  # ordered by the paired comparison, the best first
    assert board.summary.startswith("pick model-")


def test_no_shared_row_says_so(store: Store) -> None:
    a = make_run(store, [("x", "px", 2, [2])], name="a")
    b = make_run(store, [("y", "py", 2, [1])], name="b")
    board = build_leaderboard(store, [a, b])
    assert board.shared_rows == 0
    assert board.best_run == a  # the highest overall mean
    assert all(r.diff_vs_best is None for r in board.rows)
    assert "not a fair comparison" in board.summary


def test_cost_is_every_attempt_policy_and_judge_apart(store: Store) -> None:
    a = make_run(store, [("r0", "p0", 2, [2, 1])], name="a")  # two rollouts of 100 + 50 policy tokens each
    first = store.list_rollouts(a)[0]
    store.update_rollout(first.rollout_id, judge_prompt_tokens=1000, judge_completion_tokens=100)
    store.new_attempts(a, [first.rollout_id])  # a rerun: the first attempt was paid for, and still counts
    prices = price_table(
        {"model-a": {"input": 2.0, "output": 10.0}, "gpt-judge": {"input": 1.0, "output": 4.0, "image": 0.01}}
    )
    run = store.get_run(a)
    with store.transaction() as db:
        db.execute(
            "UPDATE runs SET settings_json = ? WHERE run_id = ?",
            (json.dumps({**run.settings, "judge_model": "gpt-judge"}), a),
        )
    row = build_leaderboard(store, [a], prices=prices).rows[0]
    attempts = store.list_rollouts(a, current_only=False)
    assert len(attempts) == 3
    policy = sum(((r.prompt_tokens or 0) * 2.0 + (r.completion_tokens or 0) * 10.0) / 1e6 for r in attempts)
    judge = (1000 * 1.0 + 100 * 4.0) / 1e6 + 0.01  # one judged attempt, one picture
    assert row.cost.policy_usd == pytest.approx(policy)
    assert row.cost.judge_usd == pytest.approx(judge)
    assert row.usd == pytest.approx(policy + judge)
    assert row.cost.judge_tokens == 1100


def test_an_unpriced_model_has_no_dollars(store: Store) -> None:
    a = make_run(store, [("r0", "p0", 2, [2])], name="unpriced")
    row = build_leaderboard(store, [a]).rows[0]
    assert row.cost.policy_usd is None and row.usd is None
    assert row.cost.policy_tokens == 150


THEMED = ("A red circle.", "Two birds in the sky.", "The word 'HELLO' at the top.", "A tree.")
# judged one by one: #2 and #3 missed
THEMED_SAMPLE = {
    "status": RolloutStatus.SCORED,
    "score": 0.5,
    "fulfilled": 2,
    "is_score_valid": True,
    "verdicts_json": json.dumps([[1, True, ""], [2, False, ""], [3, False, ""], [4, True, ""]]),
}


def test_failure_themes_from_per_requirement_verdicts(store: Store) -> None:
    sample = THEMED_SAMPLE
    a = make_run(store, [("r0", "p0", 4, [sample, sample])], requirements={"r0": THEMED}, name="a")
    themes = {t.theme: (t.failed, t.judged) for t in build_leaderboard(store, [a]).rows[0].themes}
    # colour: #1 (ok); shape: #1 (ok); count: #2 (missed); text: #3 (missed); position: #3 (missed); other: #4 (ok)
    assert themes == {
        "colour": (0, 2),
        "shape": (0, 2),
        "count": (2, 2),
        "text": (2, 2),
        "position": (2, 2),
        "other": (0, 2),
    }


def test_themes_of_requirements() -> None:
    assert themes_of("a red circle in the top-left corner") == ("colour", "position", "shape")
    assert themes_of("exactly 3 stars") == ("count", "shape")
    assert themes_of('a sign that reads "OPEN"') == ("text",)
    assert themes_of("a cat") == ("other",)


def test_sorting_by_any_column_keeps_missing_values_last(store: Store) -> None:
    a, b = make_run(store, ROWS_A, name="a"), make_run(store, ROWS_B, name="b")
    prices = price_table({"model-a": {"input": 1.0, "output": 1.0}})
    board = build_leaderboard(store, [a, b], prices=prices)
    assert [r.name for r in board.sorted("cost")] == ["a", "b"]  # b has no price: last
    assert [r.name for r in board.sorted("mean")] == ["a", "b"]
    assert [r.name for r in board.sorted("mean", reverse=True)] == ["b", "a"]
    with pytest.raises(ValueError):
        board.sorted("nope")


# --- `svgagent runs leaderboard` ----------------------------------------------------------------------------------


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["runs", "leaderboard", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_json_csv_and_table(store: Store, capsys: pytest.CaptureFixture[str], monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setenv("COLUMNS", "80")
    a, b = make_run(store, ROWS_A, name="alpha"), make_run(store, ROWS_B, name="beta")
    path = str(store.path)
    code, out, _ = _cli(capsys, a, "beta", "--json", "--store", path)  # an id and a name
    assert code == 0
    data = json.loads(out)
    assert [r["run_id"] for r in data["rows"]] == [a, b] and data["best_run"] == a
    assert data["rows"][1]["diff_vs_best"] == pytest.approx(statistics.mean([0.5 - 1.0, 0.25 - 0.75, 0.5 - 0.75]))
    assert data["summary"].startswith("pick model-alpha")
    code, out, _ = _cli(capsys, "--all", "--sort", "mean", "--reverse", "--csv", "--store", path)
    lines = list(csv.DictReader(io.StringIO(out)))
    assert [line["name"] for line in lines] == ["beta", "alpha"] and lines[1]["is_best"] == "True"
    code, out, _ = _cli(capsys, "--filter", "alph", "--store", path)
    assert code == 0 and "model-alpha" in out and "model-beta" not in out
    assert max(len(line) for line in out.splitlines()) <= 80


def test_cli_refuses_no_runs_named(store: Store, capsys: pytest.CaptureFixture[str]) -> None:
    make_run(store, ROWS_A, name="alpha")
    code, _, err = _cli(capsys, "--store", str(store.path))
    assert code == 2 and "name the runs to compare" in err
    code, _, err = _cli(capsys, "--filter", "nothing-like-it", "--store", str(store.path))
    assert code == 2 and "no run matches" in err


def test_cli_csv_cells_from_outside_are_neutralised(store: Store, capsys: pytest.CaptureFixture[str]) -> None:
    a = make_run(store, ROWS_A, name='=HYPERLINK("x")\x1b[2J')
    _, out, _ = _cli(capsys, a, "--csv", "--store", str(store.path))
    line = next(csv.DictReader(io.StringIO(out)))
    assert line["name"].startswith("'=") and "\x1b" not in out


def test_a_run_imported_from_eval_protocol_jsonl_sits_on_the_board_beside_its_original(
    store: Store, tmp_path: Path
) -> None:
    from svgagent.core.exchange.export import export_run
    from svgagent.core.exchange.import_file import import_file

    original = make_run(store, [("r0", "p0", 4, [THEMED_SAMPLE, 4]), ("r1", "p1", 4, [3])], requirements={"r0": THEMED})
    export_run(store, original, "jsonl", tmp_path / "run.jsonl")
    imported = import_file(store, tmp_path / "run.jsonl", name="from EP").run_id
    board = build_leaderboard(store, [original, imported])
    rows = {r.run_id: r for r in board.rows}
    assert board.shared_rows == 2  # the imported rows align with the original's (row id and prompt)
    assert rows[imported].mean == pytest.approx(rows[original].mean)
    assert rows[imported].model == rows[original].model == "model-run"
    best, other = board.rows
    assert other.diff_vs_best == pytest.approx(0.0) and (other.wins, other.losses) == (0, 0)
    assert rows[imported].cost.policy_tokens == rows[original].cost.policy_tokens == 3 * 150
    themes = {t.theme: (t.failed, t.judged) for t in rows[imported].themes}
    assert themes["count"] == (1, 1) and themes["colour"] == (0, 1)  # the verdicts travelled in the export
