"""Snapshots of the Jobs pane (live, then stale after failed polls), the cancel confirmation and the RFT launch
screen at 80×24 and 120×40: fixed jobs from an in-memory control plane, a fixed wall clock, no animations.
Review the report before `--snapshot-update`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from job_fakes import NOW, fake_source, sample_jobs
from textual.pilot import Pilot
from tui_support import make_app, settle, wait_until

from svgagent.core.rft.fireworks_api import FireworksError
from svgagent.core.store.run_store import Store
from svgagent.tui.widgets.job_panel import JobPanel

SIZES = [(80, 24), (120, 40)]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "runs.db") as s:
        yield s


def jobs_app(store: Store, clock: list[float] | None = None):  # type: ignore[no-untyped-def]
    now = clock or [NOW]
    return make_app(store, job_source=fake_source(sample_jobs()), wall_clock=lambda: now[0])


def ready(*keys: str):  # type: ignore[no-untyped-def]
    async def run_before(pilot: Pilot) -> None:
        await settle(pilot)
        await pilot.press("5")
        panel = pilot.app.dashboard.query_one(JobPanel)
        await wait_until(pilot, lambda: panel.polls >= 1)
        await settle(pilot)
        if keys:
            await pilot.press(*keys)
            await settle(pilot)

    return run_before


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_jobs_pane(snap_compare, store: Store, size: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(jobs_app(store), terminal_size=size, run_before=ready())


def test_jobs_pane_stale_after_failed_polls(snap_compare, store: Store) -> None:  # type: ignore[no-untyped-def]
    clock = [NOW]

    async def run_before(pilot: Pilot) -> None:
        await ready()(pilot)
        panel = pilot.app.dashboard.query_one(JobPanel)
        panel.source.fake.fail = FireworksError(  # type: ignore[union-attr]
            "cannot reach api.fireworks.ai while listing RFT jobs: check your network connection", kind="network"
        )
        for polls in (2, 3):
            clock[0] += 45
            panel.poll()
            await wait_until(pilot, lambda: panel.polls >= polls)  # noqa: B023
        await settle(pilot)

    assert snap_compare(jobs_app(store, clock), terminal_size=(80, 24), run_before=run_before)


def test_cancel_asks_first(snap_compare, store: Store) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(jobs_app(store), terminal_size=(80, 24), run_before=ready("K"))


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_launch_screen(snap_compare, store: Store, size: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(jobs_app(store), terminal_size=size, run_before=ready("n", "tab", "tab", "backspace", "0"))
