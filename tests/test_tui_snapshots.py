"""Snapshots of the dashboard, the rollout screen and help at 80×24 and 120×40 — fixed data, fixed clock, no
animations, a PNG rendered from a fixed SVG. Review the report before `--snapshot-update`."""

from __future__ import annotations

import pytest
from factories import RUN_ID
from textual.pilot import Pilot
from tui_support import make_app, settle

from svgagent.core.store.run_store import Store

SIZES = [(80, 24), (120, 40)]


def ready(*keys: str):  # type: ignore[no-untyped-def]
    async def run_before(pilot: Pilot) -> None:
        await settle(pilot)
        if keys:
            await pilot.press(*keys)
            await settle(pilot)

    return run_before


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_dashboard(snap_compare, store: Store, size: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(make_app(store, run_id=RUN_ID), terminal_size=size, run_before=ready())


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_rollout_screen(snap_compare, store: Store, size: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
    store.set_override(f"{RUN_ID}.0.0", fulfilled=None, verdicts=[True, True, True, True])
    assert snap_compare(make_app(store, run_id=RUN_ID), terminal_size=size, run_before=ready("enter"))


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_help(snap_compare, store: Store, size: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(make_app(store, run_id=RUN_ID), terminal_size=size, run_before=ready("question_mark"))


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_preview_tab(snap_compare, store: Store, size: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
    """The picture sized to the pane, the rationale beside it when there is room."""
    assert snap_compare(make_app(store, run_id=RUN_ID), terminal_size=size, run_before=ready("2"))


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_config_pane(snap_compare, store: Store, size: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(make_app(store, run_id=RUN_ID), terminal_size=size, run_before=ready("3", "escape"))


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_config_pane_zoomed(snap_compare, store: Store, size: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(make_app(store, run_id=RUN_ID), terminal_size=size, run_before=ready("3", "ctrl+t"))


def test_first_screen_in_demo_mode(snap_compare, store: Store) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(make_app(store, demo=True), terminal_size=(80, 24), run_before=ready())
