"""A served rollout is found by the ids eval-protocol gave it (the /init metadata's rollout_id and row_id): in the
rollout filter, in `svgagent runs show` (also given the eval-protocol id instead of a run) and on the training view
and the rollout screen. Driven through a real `svgagent serve` with the tracing gateway in front of the policy
simulator (issue 34, item 7)."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
from serve_support import init_body, post_init, serving
from textual.widgets import Input, Static
from tui_support import make_app, settle, wait_until

from svgagent.core.scoring.render import Renderer
from svgagent.core.serve.training_runs import TrainingStore
from svgagent.core.sim.simulator import SimConfig, Simulator
from svgagent.core.sim.tracing_gateway import TracingGateway
from svgagent.core.store.filter_language import parse_query
from svgagent.core.store.migrations import MIGRATIONS
from svgagent.core.store.run_store import Store
from svgagent.screens.rollout_detail import RolloutDetail
from svgagent.screens.training import TrainingScreen
from svgagent.tui.widgets.rollout_table import RolloutTable

# what a Fireworks dashboard shows for a rollout: nothing like svgagent's own "<run>.<row>.<sample>" ids
EP_IDS = {"fw-rollout-7c1e9a": "svgbench-row-0012", "fw-rollout-52bd03": "svgbench-row-0345"}


@pytest.fixture(scope="module")
def served_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A store in which `svgagent serve` recorded two rollouts sent with the ids above."""
    import asyncio

    path = tmp_path_factory.mktemp("ep-ids") / "runs.db"

    async def drive() -> None:
        with (
            Simulator(SimConfig(seed=5)) as sim,
            TracingGateway(str(sim.base_url)) as gateway,
            Store(path) as store,
        ):
            renderer = Renderer(size=64, workers=1)
            try:
                async with serving(store, renderer) as server, aiohttp.ClientSession() as session:
                    for i, (ep_id, row_id) in enumerate(EP_IDS.items()):
                        body = init_body(str(gateway.base_url), ep_id, row=i, row_id=row_id)
                        status, _, _ = await post_init(session, server.url, body)
                        assert status == 200
                    await server.wait_idle()
            finally:
                renderer.close()

    asyncio.run(drive())
    return path


@pytest.fixture
def store(served_store: Path) -> Iterator[Store]:
    with Store(served_store) as opened:
        yield opened


def test_each_rollout_keeps_the_ids_it_was_sent_with_and_the_filter_finds_it_by_either(store: Store) -> None:
    (step,) = TrainingStore(store).steps("exp-1")
    records = store.list_rollouts(step.run_id)
    assert {r.ep_rollout_id: r.row_id for r in records} == EP_IDS
    for ep_id, row_id in EP_IDS.items():
        for text in (f"id:{ep_id}", ep_id, ep_id.upper()[3:], f"row:{row_id}", row_id):
            found = parse_query(text).filter(records)
            assert [(r.ep_rollout_id, r.row_id) for r in found] == [(ep_id, row_id)], text
    assert parse_query("id:fw-rollout").filter(records) == records
    assert parse_query("-id:fw-rollout-7c1e9a").filter(records)[0].ep_rollout_id == "fw-rollout-52bd03"


def test_runs_show_lists_the_ep_ids_and_takes_an_ep_rollout_id_for_the_run(
    served_store: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from svgagent.tui.cli.main import main

    monkeypatch.setenv("COLUMNS", "160")
    with Store(served_store) as store:
        (step,) = TrainingStore(store).steps("exp-1")
    assert main(["runs", "show", step.run_id, "--store", str(served_store)]) == 0
    out = capsys.readouterr().out
    assert "ep rollout" in out
    for ep_id, row_id in EP_IDS.items():
        (line,) = [line for line in out.splitlines() if ep_id in line]
        assert row_id in line
    assert main(["runs", "show", "fw-rollout-52bd03", "--store", str(served_store)]) == 0
    out = capsys.readouterr().out
    assert "eval-protocol rollout fw-rollout-52bd03 is rollout " in out
    assert f"({step.run_id})" in out.splitlines()[0]  # the run that holds it
    assert main(["runs", "show", "fw-rollout-52bd03", "--store", str(served_store), "--json"]) == 0
    import json

    shown = json.loads(capsys.readouterr().out)
    assert {r["ep_rollout_id"]: r["row_id"] for r in shown["rollouts"]} == EP_IDS
    assert main(["runs", "show", "fw-rollout-nope", "--store", str(served_store)]) == 2
    assert "no run 'fw-rollout-nope'" in capsys.readouterr().err


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=lambda s: f"{s[0]}x{s[1]}")
async def test_the_dashboard_filter_and_the_screens_show_the_ep_ids(store: Store, size: tuple[int, int]) -> None:
    (step,) = TrainingStore(store).steps("exp-1")
    app = make_app(store, run_id=step.run_id)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        table = app.dashboard.query_one(RolloutTable)
        assert len(table.visible_ids) == 2
        await pilot.press("slash")
        app.dashboard.query_one("#filter", Input).value = "fw-rollout-52bd03"
        await pilot.press("enter")
        await settle(pilot)
        (wanted,) = table.visible_ids
        assert store.get_rollout(wanted).ep_rollout_id == "fw-rollout-52bd03"
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, RolloutDetail)
        title = app.screen.query_one("#detail-title", Static)
        assert "eval-protocol rollout fw-rollout-52bd03" in str(title.render())
        await pilot.press("escape")
        await settle(pilot)
        app.push_screen(TrainingScreen(store, training_id="exp-1"))
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TrainingScreen)
        caption = screen.query_one("#training-caption", Static)
        await wait_until(pilot, lambda: "eval-protocol rollout" in str(caption.render()))
        text = str(caption.render())
        ep_id = next(e for e in EP_IDS if e in text)  # the step's picture: its first row's rollout
        assert f"row {EP_IDS[ep_id]}" in text


def test_a_store_from_before_gets_the_ep_ids_of_its_served_rollouts(store: Store, tmp_path: Path) -> None:
    """A v8 store (served rollouts without the column) migrated: each rollout gets its eval-protocol id."""
    old = tmp_path / "old.db"
    store.backup_to(old)
    v9 = next(i for i, step in enumerate(MIGRATIONS) if "ADD COLUMN ep_rollout_id" in step)  # adds the column
    later = "".join(MIGRATIONS[v9 + 1 :])  # their columns go too: the store is as v9 left it
    with sqlite3.connect(old) as db:
        for column in ["ep_rollout_id", *re.findall(r"ALTER TABLE rollouts ADD COLUMN (\w+)", later)]:
            db.execute(f"ALTER TABLE rollouts DROP COLUMN {column}")
        db.execute(f"PRAGMA user_version = {v9}")
    with Store(old) as migrated:
        (step,) = TrainingStore(migrated).steps("exp-1")
        assert {r.ep_rollout_id: r.row_id for r in migrated.list_rollouts(step.run_id)} == EP_IDS
