"""The leaderboard screen: marking runs in the run picker, the table's figures (the same as the core's, which
test_leaderboard checks by hand), sorting by column, the detail of the highlighted run, outside text escaped —
Pilot at 80×24 and 120×40, and snapshots of the new screen."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from test_compare import make_run
from test_leaderboard import ROWS_A, ROWS_B, ROWS_C
from textual.pilot import Pilot
from textual.widgets import OptionList
from tui_support import make_app, plain, settings_for, settle

from svgagent.core.analysis.leaderboard import build_leaderboard
from svgagent.core.config.prices import price_table, usd_text
from svgagent.core.store.run_store import Store
from svgagent.screens.leaderboard import LeaderboardScreen
from svgagent.screens.run_picker import RunPicker
from svgagent.tui.widgets.leaderboard_table import LeaderboardTable

SIZES = [(80, 24), (120, 40)]
PRICES = {"model-alpha": {"input": 1.0, "output": 4.0}, "model-beta": {"input": 0.5, "output": 1.0}}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "runs.db") as s:
        yield s


def three_runs(store: Store) -> tuple[str, str, str]:
    return (
        make_run(store, ROWS_A, name="alpha"),
        make_run(store, ROWS_B, name="beta"),
        make_run(store, ROWS_C, name="gamma \x1b]52;c;cHduZWQ=\x07[red]x[/red]"),
    )


async def highlight(pilot: Pilot, run_id: str) -> None:
    options = pilot.app.screen.query_one(OptionList)
    options.highlighted = next(i for i in range(options.option_count) if options.get_option_at_index(i).id == run_id)
    await pilot.pause()


def shown_rows(screen: LeaderboardScreen) -> list[list[str]]:
    table = screen.query_one(LeaderboardTable)
    return [[str(c) for c in table.row_cells_at(i)] for i in range(table.row_count)]


def cells_by_column(screen: LeaderboardScreen, index: int) -> dict[str, str]:
    table = screen.query_one(LeaderboardTable)
    return {c.key: str(v) for c, v in zip(table.columns, table.row_cells_at(index))}


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_marked_runs_side_by_side_sorted_by_any_column(store: Store, size: tuple[int, int]) -> None:
    alpha, beta, gamma = three_runs(store)
    app = make_app(store, run_id=alpha, settings=settings_for(store.path, prices=PRICES))
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("o")
        picker = app.screen
        assert isinstance(picker, RunPicker)
        await highlight(pilot, alpha)
        await pilot.press("space")
        await highlight(pilot, beta)
        await pilot.press("space")
        assert picker.board_marks == [alpha, beta]
        assert "●" in str(picker.query_one(OptionList).get_option(alpha).prompt)
        await pilot.press("l")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, LeaderboardScreen) and screen.board is not None
        want = build_leaderboard(store, [alpha, beta], prices=price_table(PRICES))
        rows = shown_rows(screen)
        assert [r[0] for r in rows] == ["model-alpha · alpha", "model-beta · beta"]  # only the marked runs
        best, other = want.rows
        assert cells_by_column(screen, 0)["mean"] == f"{best.mean:.2f} ±{best.stderr:.2f}"
        assert "best" in rows[0] and f"{other.diff_vs_best:+.2f} ±{other.diff_stderr:.2f}" in rows[1]
        assert usd_text(best.usd) in rows[0] and best.usd is not None and best.usd > 0
        assert len(rows[0]) == (10 if size[0] >= 110 else 6)  # the wide table has profile, data, rows, latency
        detail = plain(screen.query_one("#board-detail"), width=size[0])
        assert "model-alpha" in detail and f"policy {usd_text(best.cost.policy_usd)}" in detail
        assert plain(screen.query_one("#board-summary"), width=400).startswith("pick model-alpha (alpha)")
        table = screen.query_one(LeaderboardTable)
        # s: the next column; the cost column puts the cheaper run first, - reverses
        while table.sort_key != "cost":
            await pilot.press("s")
        assert [r.name for r in table.rows] == ["beta", "alpha"]
        assert any(label.startswith("$ ▼") for label in table.header_labels())
        await pilot.press("minus")
        assert [r.name for r in table.rows] == ["alpha", "beta"]
        assert any(label.startswith("$ ▲") for label in table.header_labels())
        await pilot.press("down")
        assert "model-beta" in plain(screen.query_one("#board-detail"), width=size[0])
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is app.dashboard


async def test_no_marks_shows_the_filtered_runs_and_outside_text_is_escaped(store: Store) -> None:
    alpha, _, _ = three_runs(store)
    app = make_app(store, run_id=alpha)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("o", "l")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, LeaderboardScreen)
        rows = shown_rows(screen)
        assert len(rows) == 3
        await pilot.press("end")  # gamma has no score on r3: the last of the paired order … wherever it is,
        for _ in range(3):
            detail = plain(screen.query_one("#board-detail"), width=120)
            if "gamma" in detail:
                break
            await pilot.press("up")
        assert "gamma \\x1b]52;c;cHduZWQ=\\x07[red]x[/red]" in detail  # shown as typed, escapes visible
        assert "?" in rows[0] or "?" in rows[1]  # unpriced models: their dollars are unknown, not $0


async def test_compare_from_the_leaderboard_opens_the_best_against_the_highlighted(store: Store) -> None:
    alpha, beta, _ = three_runs(store)
    app = make_app(store, run_id=alpha)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.push_screen(LeaderboardScreen(store, [alpha, beta]))
        await settle(pilot)
        await pilot.press("c")  # on the best: says so
        assert isinstance(app.screen, LeaderboardScreen)
        await pilot.press("down", "c")
        await settle(pilot)
        from svgagent.screens.compare import CompareScreen

        assert isinstance(app.screen, CompareScreen)
        assert (app.screen.run_a, app.screen.run_b) == (alpha, beta)


def board_ready():  # type: ignore[no-untyped-def]
    async def run_before(pilot: Pilot) -> None:
        await settle(pilot)
        await pilot.press("o", "l")
        await settle(pilot)

    return run_before


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_leaderboard_screen(snap_compare, tmp_path: Path, size: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
    from factories import build_run
    from test_tui_compare_snapshots import compare_runs_specs

    prices = {"fixture-policy": {"input": 0.2, "output": 0.8}, "fixture-judge": {"input": 2.0, "output": 8.0}}
    a, b = compare_runs_specs()
    with Store(tmp_path / "snap.db") as store:
        build_run(store, a, run_id="20260101-120000-aaaa", name="baseline")
        build_run(store, b, run_id="20260102-120000-bbbb", name="candidate")
        app = make_app(store, run_id="20260101-120000-aaaa", settings=settings_for(store.path, prices=prices))
        assert snap_compare(app, terminal_size=size, run_before=board_ready())


# --- dollars on the dashboard and the rollout detail --------------------------------------------------------------


async def test_the_summary_bar_and_the_rollout_detail_show_dollars(store: Store) -> None:
    from tui_support import burst

    from svgagent.screens.rollout_detail import RolloutDetail
    from svgagent.tui.widgets.summary_bar import SummaryBar

    alpha = make_run(store, ROWS_A, name="alpha")  # each rollout: 100 prompt + 50 completion policy tokens
    app = make_app(store, run_id=alpha, settings=settings_for(store.path, prices=PRICES))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        rollouts = store.list_rollouts(alpha)
        per_rollout = (100 * 1.0 + 50 * 4.0) / 1e6  # model-alpha's prices, by hand
        total = per_rollout * len(rollouts)
        bar = app.dashboard.query_one(SummaryBar).plain
        assert f"{usd_text(total)} (policy {usd_text(total)}, judge $0.0000)" in bar
        await burst(pilot, "enter")
        detail = app.screen
        assert isinstance(detail, RolloutDetail)
        timing = plain(detail.query_one("#info-timing"), width=200)
        assert f"{usd_text(per_rollout)} (policy {usd_text(per_rollout)} · judge $0.0000)" in timing
