"""Pilot tests of the rollout screen's override: a count key never takes back a mark of yours (a count the marks
rule out is refused, saying why), marks back at the judge's verdict are no override, a rollout the judge never saw
does not read as judged, and the compare table marks an overridden score as the rollout table does."""

from __future__ import annotations

from pathlib import Path

from factories import RUN_ID, Spec, build_run
from test_compare import ROWS_A, ROWS_B, make_run
from tui_support import burst, make_app, notifications, plain, preview_of, rows, settle

from svgagent.core.scoring.models import FailureKind, RolloutStatus
from svgagent.core.store.run_store import Store
from svgagent.screens.compare import CompareScreen
from svgagent.screens.rollout_detail import RolloutDetail
from svgagent.tui.widgets.compare_table import CompareTable
from svgagent.tui.widgets.summary_bar import SummaryBar

EIGHT = tuple(f"requirement {i}" for i in range(1, 9))
RID = f"{RUN_ID}.0.0"


async def open_first(pilot) -> RolloutDetail:  # type: ignore[no-untyped-def]
    await settle(pilot)
    await burst(pilot, "enter")
    detail = pilot.app.screen
    assert isinstance(detail, RolloutDetail)
    return detail


def header(detail: RolloutDetail) -> str:
    return plain(detail.query_one("#detail-verdict"), width=200)


async def test_count_mode_plus_refuses_a_count_the_marks_rule_out(tmp_path: Path) -> None:
    with Store(tmp_path / "runs.db") as store:
        build_run(store, [Spec(0, fulfilled=4, requirements=EIGHT, verdicts=None)])
        app = make_app(store, run_id=RUN_ID)
        async with app.run_test(size=(120, 40)) as pilot:
            detail = await open_first(pilot)
            await burst(pilot, "space", "j", "space", "j", "space", "j", "space", "j", "space")  # 1–5 ✗
            marks = [False] * 5 + [None] * 3
            assert store.get_rollout(RID).override_verdicts == marks
            assert "judge 4/8 = 0.50  you 3/8 = 0.38*" in header(detail)
            await burst(pilot, "plus")
            rec = store.get_rollout(RID)
            assert rec.override_verdicts == marks  # kept
            assert rec.override_fulfilled == 3
            assert "you 3/8 = 0.38*" in header(detail)
            assert "5 requirements are marked ✗: at most 3/8; unmark one first" in notifications(app)
            await burst(pilot, "minus")  # a count the marks allow: taken, marks kept
            rec = store.get_rollout(RID)
            assert (rec.override_fulfilled, rec.override_verdicts) == (2, marks)


async def test_per_requirement_count_keys_never_drop_the_marks(tmp_path: Path) -> None:
    verdicts = [[i, i <= 6, ""] for i in range(1, 9)]  # judge 6/8: ✓ 1–6, ✗ 7–8
    with Store(tmp_path / "runs.db") as store:
        build_run(store, [Spec(0, fulfilled=6, requirements=EIGHT, verdicts=verdicts)], judge_mode="per-requirement")
        app = make_app(store, run_id=RUN_ID)
        async with app.run_test(size=(120, 40)) as pilot:
            detail = await open_first(pilot)
            await burst(pilot, "space")  # requirement 1: ✗
            marks = [False] + [True] * 5 + [False, False]
            assert store.get_rollout(RID).override_verdicts == marks
            await burst(pilot, "plus", "minus")
            rec = store.get_rollout(RID)
            assert (rec.override_fulfilled, rec.override_verdicts) == (5, marks)
            assert "you 5/8 = 0.62*" in header(detail)
            said = [n for n in notifications(app) if "marked" in n]
            assert said == ["all 8 requirements are marked: your count is 5/8; change a mark (space) to change it"] * 2


async def test_per_requirement_marks_back_at_the_judges_are_no_override(tmp_path: Path) -> None:
    verdicts = [[i, i <= 6, ""] for i in range(1, 9)]
    with Store(tmp_path / "runs.db") as store:
        build_run(store, [Spec(0, fulfilled=6, requirements=EIGHT, verdicts=verdicts)], judge_mode="per-requirement")
        app = make_app(store, run_id=RUN_ID)
        async with app.run_test(size=(120, 40)) as pilot:
            detail = await open_first(pilot)
            await burst(pilot, *"jjjjjj", "space")  # requirement 7: the judge's ✗ becomes ✓
            assert store.get_rollout(RID).override_fulfilled == 7
            await burst(pilot, "space")  # and back to ✗: the judge's verdict again
            rec = store.get_rollout(RID)
            assert not rec.overridden
            assert rec.override_verdicts is None
            assert "you" not in header(detail)
            await burst(pilot, "escape")
            assert rows(app)[0][5] == "0.75"
            assert "0 overridden" in app.dashboard.query_one(SummaryBar).plain


async def test_count_keys_back_at_the_judges_count_are_no_override(tmp_path: Path) -> None:
    with Store(tmp_path / "runs.db") as store:
        build_run(store, [Spec(0, fulfilled=4, requirements=EIGHT, verdicts=None)])
        app = make_app(store, run_id=RUN_ID)
        async with app.run_test(size=(120, 40)) as pilot:
            await open_first(pilot)
            await burst(pilot, "plus")
            assert store.get_rollout(RID).override_fulfilled == 5
            await burst(pilot, "minus")
            assert not store.get_rollout(RID).overridden


async def test_a_rollout_without_svg_says_the_judge_did_not_see_it(tmp_path: Path) -> None:
    nine = tuple(f"requirement {i}" for i in range(1, 10))
    with Store(tmp_path / "runs.db") as store:
        build_run(
            store,
            [
                Spec(
                    0,
                    status=RolloutStatus.FAILED,
                    fulfilled=0,
                    requirements=nine,
                    svg=None,
                    rationale=None,
                    reason="no SVG found in the answer",
                    judge_s=None,
                    extra={"failure_kind": FailureKind.NO_SVG},
                )
            ],
        )
        app = make_app(store, run_id=RUN_ID)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            preview = " ".join(plain(preview_of(app).picture, width=200).split())  # as wrapped in the pane
            assert "the judge did not see it: no SVG in the answer" in preview
            assert "judge 0/9" not in preview
            assert "judge counted" not in preview
            detail = await open_first(pilot)
            shown = header(detail)
            assert "the judge did not see it: no SVG in the answer" in shown
            assert "judge 0/9" not in shown


async def test_the_compare_table_marks_an_overridden_score(tmp_path: Path) -> None:
    with Store(tmp_path / "runs.db") as store:
        run_a, run_b = make_run(store, ROWS_A, name="baseline"), make_run(store, ROWS_B, name="candidate")
        app = make_app(store, run_id=run_a)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            assert app.open_compare(run_a, run_b)
            await settle(pilot)
            screen = app.screen
            assert isinstance(screen, CompareScreen)
            table = screen.query_one(CompareTable)
            cells = {row.row_id: tuple(c.plain for c in table.get_row_at(i)) for i, row in enumerate(table.rows)}
            assert cells["row_2"][1:3] == ("0.75", "0.12*")  # B: 1/4 and a sample a person set to 0/4
            assert not any(c.endswith("*") for row_id, line in cells.items() if row_id != "row_2" for c in line[1:3])
