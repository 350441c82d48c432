"""Judge–human agreement (core/analysis/agreement.py, `svgagent runs agreement`): review overrides in hand-built
stores (tests/factories.py) whose confusion tables and Cohen's kappa are worked out by hand below."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from factories import Spec, build_run

from svgagent.core.analysis.agreement import Confusion, cohen_kappa, run_agreement
from svgagent.core.scoring.models import FailureKind, RolloutStatus
from svgagent.core.store.run_store import Store
from svgagent.tui.cli.main import main


@pytest.fixture
def store(tmp_path: Path) -> Store:
    with Store(tmp_path / "runs.db") as s:
        yield s


def test_kappa_by_hand() -> None:
    # 20 items: both yes 10, judge only 5, person only 0, both no 5 -> p_o 0.75, p_e 0.75*0.5+0.25*0.5=0.5, k=0.5
    assert cohen_kappa(10, 5, 0, 5) == pytest.approx(0.5)
    assert cohen_kappa(3, 0, 0, 3) == pytest.approx(1.0)  # perfect agreement
    assert cohen_kappa(0, 3, 3, 0) == pytest.approx(-1.0)  # always opposite, balanced
    assert cohen_kappa(4, 0, 0, 0) is None  # chance agreement is 1: undefined, not 1.0
    assert cohen_kappa(0, 0, 0, 0) is None
    c = Confusion.of([(True, True), (True, False), (False, False), (False, False)])
    assert (c.both_yes, c.judge_only, c.person_only, c.both_no, c.n, c.agreed) == (1, 1, 0, 2, 4, 3)
    # p_o 0.75; judge yes 0.5, person yes 0.25; p_e 0.125+0.375=0.5; kappa 0.5
    assert c.kappa == pytest.approx(0.5)


def test_count_mode_pass_fail_and_counts(store: Store) -> None:
    # four requirements, threshold 0.5: (judge count, person count) per rollout
    specs = [
        Spec(0, fulfilled=4, override=3),  # pass/pass
        Spec(1, fulfilled=3, override=1),  # judge pass, person fail
        Spec(2, fulfilled=1, override=3),  # judge fail, person pass
        Spec(3, fulfilled=0, override=1),  # fail/fail
        Spec(4, fulfilled=4, override=4),  # pass/pass, equal
        Spec(5, fulfilled=1, override=0),  # fail/fail
        Spec(6, fulfilled=2),  # not reviewed: no label
        Spec(  # reviewed, but the judge gave no valid verdict: nothing to compare
            7,
            status=RolloutStatus.FAILED,
            fulfilled=None,
            valid=False,
            override=2,
            extra={"failure_kind": FailureKind.UNREACHABLE},
        ),
    ]
    run = build_run(store, specs, judge_mode="count")
    a = run_agreement(store, run)
    assert (a.judge_mode, a.overridden, a.labelled, a.without_judge) == ("count", 7, 6, 1)
    pf = a.pass_fail
    assert (pf.both_yes, pf.judge_only, pf.person_only, pf.both_no) == (2, 1, 1, 2)
    # p_o = 4/6; judge passes 3/6, person 3/6: p_e = 0.5; kappa = (2/3 - 1/2) / (1/2) = 1/3
    assert pf.kappa == pytest.approx(1 / 3)
    assert pf.rate == pytest.approx(4 / 6)
    assert a.requirements.n == 0  # count mode: no per-requirement pairs
    c = a.counts
    assert (c.n, c.equal, c.judge_higher, c.judge_lower, c.abs_difference) == (6, 1, 3, 2, 7)
    assert c.mean_abs_difference == pytest.approx(7 / 6)
    # worst first: |score difference| 0.5 (rows 1, 2), then 0.25 (rows 0, 3, 5); row 4 agreed
    assert [d.row_id for d in a.worst] == ["row_1", "row_2", "row_0", "row_3", "row_5"]
    assert a.disagreements == 5
    assert (a.worst[0].judge_fulfilled, a.worst[0].person_fulfilled, a.worst[0].difference) == (3, 1, 2)


def _verdicts(marks: list[bool]) -> list[list[object]]:
    return [[i + 1, ok, "why"] for i, ok in enumerate(marks)]


def test_per_requirement_pairs_and_kappa(store: Store) -> None:
    judge_a, person_a = [True, True, True, False], [True, False, True, False]
    judge_b, person_b = [False, False, True, True], [True, False, True, True]
    specs = [
        Spec(0, fulfilled=3, verdicts=_verdicts(judge_a)),
        Spec(1, fulfilled=2, verdicts=_verdicts(judge_b)),
        Spec(2, fulfilled=4, verdicts=_verdicts([True] * 4)),  # not reviewed
    ]
    run = build_run(store, specs, judge_mode="per-requirement")
    store.set_override(f"{run}.0.0", fulfilled=None, verdicts=person_a)
    store.set_override(f"{run}.1.0", fulfilled=None, verdicts=person_b)
    a = run_agreement(store, run)
    assert a.judge_mode == "per-requirement"
    r = a.requirements
    # pairs: A ✓✓ ✓✗ ✓✓ ✗✗, B ✗✓ ✗✗ ✓✓ ✓✓ -> both yes 4, judge only 1, person only 1, both no 2
    assert (r.both_yes, r.judge_only, r.person_only, r.both_no) == (4, 1, 1, 2)
    # p_o = 6/8; judge yes 5/8, person yes 5/8: p_e = 25/64 + 9/64 = 34/64; kappa = (48-34)/(64-34) = 7/15
    assert r.kappa == pytest.approx(7 / 15)
    # pass/fail: A judge 3/4 pass, person 2/4 pass; B judge 2/4 pass, person 3/4 pass -> both yes 2: kappa undefined
    assert (a.pass_fail.both_yes, a.pass_fail.n) == (2, 2)
    assert a.pass_fail.kappa is None
    by_index = {d.row_id: [p.index for p in d.requirements] for d in a.worst}
    assert by_index == {"row_0": [2], "row_1": [1]}
    assert sorted((d.row_id, d.index, d.disagreed, d.pairs) for d in a.by_requirement) == [
        ("row_0", 2, 1, 1),
        ("row_1", 1, 1, 1),
    ]


def test_a_run_without_overrides_says_so(store: Store, capsys: pytest.CaptureFixture[str]) -> None:
    run = build_run(store, [Spec(0, fulfilled=2), Spec(1, fulfilled=3)])
    a = run_agreement(store, run)
    assert (a.overridden, a.labelled, a.pass_fail.n, a.worst) == (0, 0, 0, ())
    assert main(["runs", "agreement", run, "--store", str(store.path)]) == 0
    assert "no review overrides" in capsys.readouterr().out


def test_cli_agreement_json_and_text(store: Store, capsys: pytest.CaptureFixture[str]) -> None:
    hostile = "row \x1b]52;c;aGk=\x07 <b>"
    run = build_run(
        store,
        [Spec(0, fulfilled=4, override=1, prompt=hostile), Spec(1, fulfilled=1, override=1)],
        name="review \x1b[31mrun",
    )
    db = str(store.path)
    assert main(["runs", "agreement", run, "--json", "--store", db]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["pass_fail"]["n"] == 2 and data["pass_fail"]["agreed"] == 1
    assert data["counts"]["equal"] == 1
    assert data["worst"][0]["rollout_id"] == f"{run}.0.0" and data["worst"][0]["difference"] == 3
    assert math.isclose(data["pass_fail"]["rate"], 0.5)
    assert main(["runs", "agreement", run, "--store", db]) == 0
    out = capsys.readouterr().out
    assert "agreed 1/2" in out and "worst disagreements" in out
    assert "\x1b" not in out  # the run's name and the prompt are shown, not obeyed
