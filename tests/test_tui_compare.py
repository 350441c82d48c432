"""Pilot tests of the compare screen and of picking two runs in the run picker.

The runs are built by hand (test_compare's ``make_run``, ``ROWS_A``/``ROWS_B``); expected numbers come from
test_compare's ``expected_comparison``, computed from the specs with the statistics module — not read back from
``core.compare``. Assertions read the table's cells and the header's text.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from factories import FLAG_SVG, SCENE_SVG, Spec, build_run
from test_compare import ROWS_A, ROWS_B, expected_comparison, make_run
from textual.widgets import OptionList
from tui_support import make_app, notifications, picture_colours, plain, settle

from svgagent.core.store.run_store import Store
from svgagent.screens.compare import CompareScreen
from svgagent.screens.rollout_detail import RolloutDetail
from svgagent.screens.run_picker import RunPicker
from svgagent.tui.widgets.compare_row import CompareSide
from svgagent.tui.widgets.compare_table import CompareTable


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "runs.db") as s:
        yield s


@pytest.fixture
def runs(store: Store) -> tuple[str, str]:
    return make_run(store, ROWS_A, name="baseline"), make_run(store, ROWS_B, name="candidate")


def table_rows(screen: CompareScreen) -> list[tuple[str, ...]]:
    """What the table shows, line by line (cells as plain text)."""
    table = screen.query_one(CompareTable)
    return [tuple(cell.plain for cell in table.get_row_at(i)) for i in range(table.row_count)]


async def open_compare(pilot, run_a: str, run_b: str) -> CompareScreen:  # type: ignore[no-untyped-def]
    assert pilot.app.open_compare(run_a, run_b)
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, CompareScreen)
    return screen


async def test_header_shows_the_independently_computed_numbers(store: Store, runs: tuple[str, str]) -> None:
    run_a, run_b = runs
    want = expected_comparison(ROWS_A, ROWS_B)
    app = make_app(store, run_id=run_a)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = await open_compare(pilot, run_a, run_b)
        header = plain(screen.query_one("#compare-header"), width=200)
        assert f"A  mean {want['mean_a']:.3f} ± {want['stderr_a']:.3f}  baseline ({run_a})" in header
        assert f"B  mean {want['mean_b']:.3f} ± {want['stderr_b']:.3f}  candidate ({run_b})" in header
        assert (
            f"paired rows {len(want['deltas'])}: B − A = {want['mean_diff']:+.3f} ± {want['diff_stderr']:.3f} "
            f"(A {want['paired_mean_a']:.3f}, B {want['paired_mean_b']:.3f})"
        ) in header
        assert (
            f"wins {want['wins']} · losses {want['losses']} · ties {want['ties']} · only in A {want['only_a']} "
            f"· only in B {want['only_b']} · unscored in one run {want['unscored']}"
        ) in header
        # Every row of either run is in the table; paired rows carry their delta, the others say why not.
        shown = table_rows(screen)
        assert len(shown) == len({(r[0], r[1]) for r in ROWS_A + ROWS_B}) == 9
        deltas = {(row_id, prompt): d for (row_id, prompt), d in want["deltas"].items()}
        for row, cells in zip(screen.rows, shown):
            assert cells[0] == row.row_id
            key = (row.row_id, row.prompt)
            if key in deltas:
                assert float(cells[3]) == pytest.approx(deltas[key], abs=5e-4)
            else:
                assert cells[3] in ("only A", "only B", "–")
        boat = next(c for r, c in zip(screen.rows, shown) if r.prompt == "Draw a boat")
        plane = next(c for r, c in zip(screen.rows, shown) if r.prompt == "Draw a plane")
        assert boat[1:4] == ("1.00", "–", "only A")
        assert plane[1:4] == ("–", "0.00", "only B")
        kite = next(c for r, c in zip(screen.rows, shown) if r.row_id == "row_6")
        assert kite[1:5] == (f"{(0 + 3 + 3) / 9:.2f}", f"{1 / 3:.2f}", f"{1 / 3 - 6 / 9:+.3f}", "3/2")


async def test_sort_by_delta_and_regression_and_improvement_filters(store: Store, runs: tuple[str, str]) -> None:
    run_a, run_b = runs
    deltas = expected_comparison(ROWS_A, ROWS_B)["deltas"]
    worst_first = [key for key, _ in sorted(deltas.items(), key=lambda kv: kv[1])]
    app = make_app(store, run_id=run_a)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = await open_compare(pilot, run_a, run_b)

        def keys() -> list[tuple[str, str]]:
            return [(r.row_id, r.prompt) for r in screen.rows]

        def shown_deltas() -> list[float]:
            return [float(cells[3]) for cells in table_rows(screen) if cells[3][0] in "+-"]

        assert keys()[: len(worst_first)] == worst_first  # default: delta, worst first; unpaired rows last
        assert shown_deltas() == sorted(shown_deltas())
        assert "sorted by Δ, worst first" in plain(screen.query_one("#compare-header"), width=200)
        await pilot.press("S")
        assert keys()[: len(worst_first)] == worst_first[::-1]
        assert shown_deltas() == sorted(shown_deltas(), reverse=True)
        await pilot.press("S")
        sizes = [abs(d) for d in shown_deltas()]
        assert sizes == sorted(sizes, reverse=True)
        await pilot.press("S", "S")  # back to delta, worst first
        assert keys()[: len(worst_first)] == worst_first
        await pilot.press("r")
        regressions = [k for k, d in deltas.items() if d < -1e-9]
        assert sorted(keys()) == sorted(regressions)
        assert len(regressions) == 2
        assert all(d < 0 for d in shown_deltas())
        assert len(table_rows(screen)) == 2
        assert "regressions only" in plain(screen.query_one("#compare-header"), width=200)
        await pilot.press("i")
        improvements = [k for k, d in deltas.items() if d > 1e-9]
        assert keys() == improvements
        assert all(d > 0 for d in shown_deltas())
        await pilot.press("i")
        assert len(table_rows(screen)) == 9


async def test_sides_show_both_rollouts_and_enter_opens_them(store: Store, runs: tuple[str, str]) -> None:
    run_a, run_b = runs
    app = make_app(store, run_id=run_a)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = await open_compare(pilot, run_a, run_b)
        row = screen.rows[0]  # the worst regression: row_2 (A 3/4; B 1/4 and an override to 0/4)
        assert row.row_id == "row_2"
        assert row.a is not None
        assert row.b is not None
        side_a, side_b = screen.query_one("#side-a", CompareSide), screen.query_one("#side-b", CompareSide)
        assert side_a.picture.record is not None
        assert side_a.picture.record.rollout_id == row.a.rollout_ids[0]
        assert side_b.picture.record is not None
        assert side_b.picture.record.rollout_id == row.b.rollout_ids[0]
        assert "row mean 0.750" in plain(side_a.query_one(".side-title"))
        assert "row mean 0.125 · 2 samples · showing 1/2" in plain(side_b.query_one(".side-title"))
        assert "3 of 4" in plain(side_a.query_one(".side-info"))  # the stored reason
        await pilot.press("n")  # the next sample: B's second one (overridden); A has one sample
        await settle(pilot)
        assert side_b.picture.rollout_id == row.b.rollout_ids[1]
        assert side_a.picture.rollout_id == row.a.rollout_ids[0]
        assert "you 0/4 = 0.00*" in plain(side_b.query_one(".side-info"))
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, RolloutDetail)
        assert app.screen.rollout_id == row.a.rollout_ids[0]
        await pilot.press("escape", "right", "n")  # B, back to its first sample (n wraps around)
        await settle(pilot)
        assert screen.side == "b"
        assert side_b.picture.rollout_id == row.b.rollout_ids[0]
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, RolloutDetail)
        assert app.screen.rollout_id == row.b.rollout_ids[0]
        await pilot.press("plus")  # your count: 1/4 → 2/4; B's row mean becomes (2/4 + 0/4) / 2
        await pilot.press("escape")
        await settle(pilot)
        again = next(r for r in screen.rows if r.row_id == "row_2")
        assert again.mean_b == pytest.approx((2 / 4 + 0) / 2)
        assert again.delta == pytest.approx(0.25 - 0.75)
        cells = table_rows(screen)[screen.rows.index(again)]
        assert cells[2:4] == ("0.25*", "-0.500")  # * : B has overrides (the one set here, and the 0/4)


async def test_only_in_one_run_side_says_so(store: Store, runs: tuple[str, str]) -> None:
    run_a, run_b = runs
    app = make_app(store, run_id=run_a)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = await open_compare(pilot, run_a, run_b)
        index = next(i for i, r in enumerate(screen.rows) if r.prompt == "Draw a tree")  # only in B
        screen.query_one(CompareTable).move_cursor(row=index)
        await settle(pilot)
        assert "run A has no rollout for this row" in plain(screen.query_one("#side-a .side-title"))
        assert screen.query_one("#side-b", CompareSide).picture.rollout_id is not None
        await pilot.press("enter")  # side A is selected: nothing to open
        assert isinstance(app.screen, CompareScreen)
        assert any("run A has no rollout" in n for n in notifications(app))


async def test_pictures_are_drawn_side_by_side(store: Store) -> None:
    build_run(
        store,
        [Spec(0, fulfilled=2), Spec(1, fulfilled=4, prompt="Draw a flag", svg=FLAG_SVG)],
        run_id="20260101-000000-aaaa",
        name="A",
    )
    build_run(
        store,
        [Spec(0, fulfilled=4, svg=SCENE_SVG), Spec(1, fulfilled=1, prompt="Draw a flag", svg=None, rationale=None)],
        run_id="20260101-000000-bbbb",
        name="B",
    )
    app = make_app(store, run_id="20260101-000000-aaaa")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = await open_compare(pilot, "20260101-000000-aaaa", "20260101-000000-bbbb")
        assert [r.row_id for r in screen.rows] == ["row_1", "row_0"]  # -0.75 then +0.5
        side_a, side_b = screen.query_one("#side-a", CompareSide), screen.query_one("#side-b", CompareSide)
        image = side_a.picture.image
        assert image is not None
        assert len(image.plain.splitlines()) >= 4  # vertical bands: coloured cells
        assert (0, 85, 164) in picture_colours(image)  # the flag's blue, in 24-bit colour
        assert side_b.picture.image is None
        assert "no image" in plain(side_b.query_one(".side-image"))
        await pilot.press("j")
        await settle(pilot)
        assert side_b.picture.image is not None
        assert (135, 206, 235) in picture_colours(side_b.picture.image)


async def test_run_picker_marks_a_and_b_then_compares(store: Store) -> None:
    first = make_run(store, ROWS_A, name="first")
    second = make_run(store, ROWS_B, name="second")
    third = make_run(store, ROWS_A[:2], name="third")
    app = make_app(store, run_id=first)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)

        async def highlight(run_id: str) -> None:
            options = app.screen.query_one(OptionList)
            options.highlighted = next(
                i for i in range(options.option_count) if options.get_option_at_index(i).id == run_id
            )
            await pilot.pause()

        await pilot.press("o")
        picker = app.screen
        assert isinstance(picker, RunPicker)
        await highlight(third)
        await pilot.press("a")
        await highlight(second)
        await pilot.press("a")  # a run is marked once: A moves to `second`
        assert picker.marks == {"A": second}
        await highlight(first)
        await pilot.press("b")
        assert picker.marks == {"A": second, "B": first}
        assert " A " in str(picker.query_one(OptionList).get_option(second).prompt)
        await pilot.press("c")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        assert (screen.run_a, screen.run_b) == (second, first)
        assert screen.comparison is not None
        assert screen.comparison.name_a == "second"
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is app.dashboard
        assert app.dashboard.run_id == first  # the open run is unchanged

        # Marked A only: c compares with the highlighted run; with both marked, enter compares too.
        await pilot.press("o")
        await highlight(first)
        await pilot.press("a")
        await highlight(third)
        await pilot.press("c")
        await settle(pilot)
        assert isinstance(app.screen, CompareScreen)
        assert (app.screen.run_a, app.screen.run_b) == (first, third)
        await pilot.press("escape", "o")
        await highlight(third)
        await pilot.press("a")
        await highlight(first)
        await pilot.press("b", "enter")
        await settle(pilot)
        assert isinstance(app.screen, CompareScreen)
        assert (app.screen.run_a, app.screen.run_b) == (third, first)

        # Without a mark, c says what to do; enter still opens a run.
        await pilot.press("escape", "o", "c")
        assert isinstance(app.screen, RunPicker)
        assert any("press a on the baseline run" in n for n in notifications(app))


async def test_open_compare_refuses_unknown_or_identical_runs(store: Store, runs: tuple[str, str]) -> None:
    run_a, _ = runs
    app = make_app(store, run_id=run_a)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert app.open_compare(run_a, "no-such-run") is False
        assert app.open_compare(run_a, run_a) is False
        await pilot.pause()
        assert app.screen is app.dashboard
        said = notifications(app)
        assert any("no-such-run" in n for n in said)
        assert any("two different runs" in n for n in said)
