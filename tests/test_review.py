"""A person's review of a rollout starts from the judge's verdict and each toggle changes one mark (core.review)."""

from __future__ import annotations

from pathlib import Path

import pytest
from factories import RUN_ID, Spec, build_run

from svgagent.core.store.reviews import complete, count_refusal, counted, marks_of_judge, starting_marks, toggled
from svgagent.core.store.run_store import Store

EIGHT = tuple(f"requirement {i}" for i in range(1, 9))


def test_count_mode_marks_start_undecided_and_the_count_is_the_judges() -> None:
    judge = marks_of_judge(None, 8)
    assert judge == [None] * 8
    marks = toggled(starting_marks(None, None, 8), 2, judge)  # requirement 3: ✗
    assert marks == [None, None, False, None, None, None, None, None]  # only that one changed
    assert counted(marks, 6) == 6  # the judge's six may all be among the other seven
    marks = toggled(toggled(marks, 3, judge), 4, judge)  # two more ✗: five left undecided
    assert counted(marks, 6) == 5


def test_count_mode_toggle_cycles_through_undecided() -> None:
    judge = [None] * 3
    marks = [None] * 3
    marks = toggled(marks, 0, judge)
    assert marks[0] is False
    marks = toggled(marks, 0, judge)
    assert marks[0] is True
    assert counted(marks, 0) == 1  # a ✓ counts even where the judge counted none
    marks = toggled(marks, 0, judge)
    assert marks[0] is None


def test_per_requirement_marks_start_as_the_judges_and_flip_one() -> None:
    verdicts = [[1, True, ""], [2, False, ""], [3, True, ""]]
    judge = marks_of_judge(verdicts, 3)
    assert judge == [True, False, True]
    marks = toggled(starting_marks(None, verdicts, 3), 1, judge)
    assert marks == [True, True, True]
    assert counted(marks, 2) == 3
    assert complete(marks) == [True, True, True]
    assert complete([True, None, False]) is None


def test_a_count_the_marks_rule_out_is_refused_with_the_reason() -> None:
    marks = [True, True, False, None]
    assert count_refusal(marks, 2) is None and count_refusal(marks, 3) is None  # ✓ given … ✓ plus undecided
    assert count_refusal(marks, 1) == "2 requirements are marked ✓: at least 2/4; unmark one first"
    assert count_refusal(marks, 4) == "1 requirement is marked ✗: at most 3/4; unmark one first"
    assert count_refusal([True, False], 2) == (
        "all 2 requirements are marked: your count is 1/2; change a mark (space) to change it"
    )
    assert count_refusal([True, False], 1) is None


@pytest.fixture
def count_store(tmp_path: Path) -> Store:
    with Store(tmp_path / "runs.db") as s:
        build_run(s, [Spec(0, fulfilled=6, requirements=EIGHT, verdicts=None)])
        yield s


def test_store_keeps_undecided_marks_and_the_count_they_allow(count_store: Store) -> None:
    rid = f"{RUN_ID}.0.0"
    count_store.set_override(rid, fulfilled=None, verdicts=[None, None, False, None, None, None, None, None])
    rec = count_store.get_rollout(rid)
    assert rec.override_verdicts == [None, None, False, None, None, None, None, None]
    assert rec.override_fulfilled == 6
    assert rec.fulfilled == 6  # the judge's count is kept
    with pytest.raises(ValueError, match="contradicts the marks"):
        count_store.set_override(rid, fulfilled=8, verdicts=[None, None, False, None, None, None, None, None])
    count_store.set_override(rid, fulfilled=None, verdicts=[None] * 8)  # nothing decided: no override
    assert not count_store.get_rollout(rid).overridden


def test_an_override_updates_the_mean_runs_list_and_the_run_picker_show(store: Store, capsys) -> None:  # type: ignore[no-untyped-def]
    import json

    from svgagent.screens.run_picker import run_line
    from svgagent.tui.cli.main import main

    before = store.get_run(RUN_ID).summary["mean_score"]
    store.set_override(f"{RUN_ID}.2.0", fulfilled=4)  # the failed 0/4 picture: a person says 4/4
    live = store.summarize(RUN_ID, 0.5).mean_score  # what the dashboard and the stats screen compute
    assert live != before
    assert store.get_run(RUN_ID).summary["mean_score"] == live
    assert main(["runs", "list", "--json", "--store", str(store.path)]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed[0]["mean_score"] == live
    assert f"mean {live:.3f}" in run_line(store.get_run(RUN_ID)).plain


def test_undecided_marks_survive_an_export_and_import(count_store: Store, tmp_path: Path) -> None:
    import json

    from svgagent.core.exchange.export import export_run
    from svgagent.core.exchange.import_file import import_file

    marks = [None, None, False, None, None, None, None, None]
    count_store.set_override(f"{RUN_ID}.0.0", fulfilled=None, verdicts=marks)
    target = tmp_path / "run.jsonl"
    export_run(count_store, RUN_ID, "jsonl", target)
    row = json.loads(target.read_text().splitlines()[0])
    metrics = row["evaluation_result"]["metrics"]
    assert "requirement_3" in metrics  # the person's ✗
    assert "requirement_1" not in metrics  # undecided: no verdict claimed
    assert metrics["requirements_fulfilled"]["score"] == 0.75
    result = import_file(count_store, target)
    back = count_store.list_rollouts(result.run_id)[0]
    assert back.override_verdicts == marks
    assert back.override_fulfilled == 6
