"""Pilot tests of the stats screen's judge–human agreement panel: the numbers of `svgagent runs agreement` (hand-built
stores, kappa known by hand in test_agreement), the worst disagreements listed, `g` + enter opening one on the rollout
screen with its picture, and an override changed there read again by the panel and by the dashboard."""

from __future__ import annotations

import pytest
from factories import Spec, build_run
from textual.widgets import OptionList
from tui_support import make_app, plain, settle, table_of

from svgagent.core.store.run_store import Store
from svgagent.screens.rollout_detail import RolloutDetail
from svgagent.screens.stats import StatsScreen
from svgagent.tui.widgets.picture import Picture


@pytest.fixture
def store(tmp_path):  # type: ignore[no-untyped-def]
    with Store(tmp_path / "runs.db") as s:
        yield s


def count_mode_run(store: Store) -> str:
    """test_agreement's count-mode run: pass/fail kappa 1/3, five disagreements, worst rows 1 and 2."""
    specs = [
        Spec(0, fulfilled=4, override=3),
        Spec(1, fulfilled=3, override=1),
        Spec(2, fulfilled=1, override=3, prompt="Draw \x1b]52;c;aGk=\x07 a kite"),
        Spec(3, fulfilled=0, override=1),
        Spec(4, fulfilled=4, override=4),
        Spec(5, fulfilled=1, override=0),
        Spec(6, fulfilled=2),
    ]
    return build_run(store, specs, judge_mode="count")


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_panel_lists_the_worst_disagreements_and_opens_them(store: Store, size: tuple[int, int]) -> None:
    run = count_mode_run(store)
    app = make_app(store, run_id=run)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("i")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, StatsScreen)
        panel = plain(screen.query_one("#stats-agreement"), width=size[0])
        assert "6 overridden rollouts with a judge verdict" in panel
        assert "4/6 agreed (66.7%) · κ 0.333" in " ".join(panel.split())
        options = screen.query_one("#stats-disagreements", OptionList)
        assert [options.get_option_at_index(i).id for i in range(options.option_count)] == [
            f"{run}.{row}.0" for row in (1, 2, 0, 3, 5)
        ]
        shown = str(options.get_option_at_index(1).prompt)
        assert "\x1b" not in shown and "judge 1/4 you 3/4" in shown
        await pilot.press("g", "down", "enter")
        await settle(pilot)
        detail = app.screen
        assert isinstance(detail, RolloutDetail) and detail.rollout_id == f"{run}.2.0"
        assert detail.query(Picture)  # the picture the judge saw
        await pilot.press("u")  # back to the judge's verdict: no longer a label
        await settle(pilot)
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is screen
        panel = plain(screen.query_one("#stats-agreement"), width=size[0])
        assert "5 overridden rollouts with a judge verdict" in panel
        assert options.option_count == 4 and f"{run}.2.0" in screen.changed
        await pilot.press("escape")
        await settle(pilot)
        row = table_of(app).records[f"{run}.2.0"]
        assert not row.overridden  # the dashboard read it again


async def test_a_run_without_overrides_says_how_to_make_labels(store: Store) -> None:
    run = build_run(store, [Spec(0, fulfilled=2), Spec(1, fulfilled=3)])
    app = make_app(store, run_id=run)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("i")
        await settle(pilot)
        assert "no overrides yet" in plain(app.screen.query_one("#stats-agreement"), width=120)
        await pilot.press("g")
        await settle(pilot)
        assert isinstance(app.screen, StatsScreen)
        assert not app.screen.query_one("#stats-disagreements", OptionList).has_focus
