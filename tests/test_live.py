"""Following a run off the UI loop: the thread-safe bus, the store-backed follower the TUI and CLI share, the
dashboard's live feed (one batch in flight, coalesced), and the engine on a thread of its own."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from factories import RUN_ID, build_run
from textual.app import App, ComposeResult
from textual.widgets import Static
from tui_support import make_app, settle, table_of, wait_until

from svgagent.core.events import EventBus
from svgagent.core.live import RunFollower, Tally, changed_ids
from svgagent.core.records import RunSummary, summarize_rows
from svgagent.core.scoring.models import RolloutStatus, RolloutUpdate
from svgagent.core.store import Store
from svgagent.tui.live_feed import LiveBatch, LiveFeed


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "runs.db") as s:
        build_run(s)  # rollouts .0.0 … .5.0: scored, failed, invalid, overridden (row 4), queued (row 5)
        yield s


def update(row: int, status: RolloutStatus = RolloutStatus.SCORED, run_id: str = RUN_ID) -> RolloutUpdate:
    return RolloutUpdate(run_id, f"{run_id}.{row}.0", status)


# --- the bus -------------------------------------------------------------------------------------------------
async def test_events_published_on_another_thread_wake_an_async_reader_in_order() -> None:
    bus: EventBus[RolloutUpdate] = EventBus()
    sub = bus.subscribe()

    def engine_thread() -> None:
        for row in range(50):
            bus.publish(update(row % 6, RolloutStatus.GENERATING))
        sub.close()

    async def read_all() -> list[RolloutUpdate]:
        return [event async for event in sub]

    reader = asyncio.create_task(read_all())
    await asyncio.sleep(0)  # the reader is waiting before the first event is published
    thread = threading.Thread(target=engine_thread)
    thread.start()
    got = await asyncio.wait_for(reader, timeout=10)  # an un-woken reader would hang here
    thread.join()
    assert [e.rollout_id for e in got] == [f"{RUN_ID}.{row % 6}.0" for row in range(50)]


def test_drain_from_another_thread_takes_each_event_once() -> None:
    bus: EventBus[RolloutUpdate] = EventBus()
    sub = bus.subscribe()
    drained: list[RolloutUpdate] = []
    stop = threading.Event()

    def drainer() -> None:
        while not stop.is_set():
            drained.extend(sub.drain())

    thread = threading.Thread(target=drainer)
    thread.start()
    for i in range(2_000):
        bus.publish(RolloutUpdate(RUN_ID, str(i), RolloutStatus.QUEUED))
    stop.set()
    thread.join()
    drained.extend(sub.drain())
    assert [e.rollout_id for e in drained] == [str(i) for i in range(2_000)]


# --- one place to read scores ----------------------------------------------------------------------------------
def test_update_names_the_rollout_and_its_state_only() -> None:
    """The event carries no score: the TUI and the CLI both read it from the store."""
    assert set(RolloutUpdate.__dataclass_fields__) == {"run_id", "rollout_id", "status"}


def test_changed_ids_are_coalesced_in_first_change_order_for_one_run() -> None:
    events = [update(1), update(0), update(1), update(2, run_id="other-run"), update(0)]
    assert changed_ids(events, RUN_ID) == [f"{RUN_ID}.1.0", f"{RUN_ID}.0.0"]


def test_follower_reads_what_the_store_holds_including_an_override(store: Store) -> None:
    bus: EventBus[RolloutUpdate] = EventBus()
    follower = RunFollower(store, bus.subscribe(), RUN_ID)
    bus.publish(update(4))
    bus.publish(update(0, run_id="other-run"))
    bus.publish(update(4))
    records = follower.changed()
    assert [r.rollout_id for r in records] == [f"{RUN_ID}.4.0"]
    assert records[0].effective_score == store.get_rollout(f"{RUN_ID}.4.0").override_score == 0.75
    assert follower.changed() == []


def test_cli_tally_matches_the_run_summary(store: Store) -> None:
    """The headless progress bar's mean is the dashboard's: the override of row 4 counts, invalid rows do not."""
    rows = store.list_rollouts(RUN_ID)
    tally = Tally(rows)
    summary = summarize_rows(rows, 0.5)
    assert tally.done == summary.done == 5
    assert tally.mean == pytest.approx(summary.mean_score)
    judge_only = [r.score for r in rows if r.is_score_valid and r.score is not None]
    assert tally.mean != pytest.approx(sum(judge_only) / len(judge_only))  # the old CLI's figure
    store.set_override(f"{RUN_ID}.0.0", fulfilled=0)
    tally.update(store.get_rollouts([f"{RUN_ID}.0.0"]))
    assert tally.mean == pytest.approx(summarize_rows(store.list_rollouts(RUN_ID), 0.5).mean_score)


# --- the dashboard's feed --------------------------------------------------------------------------------------
class Sink(Static):
    """Receives a feed's batches; applies them only when told to."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[LiveBatch] = []
        self.ack = False
        self.feed: LiveFeed | None = None

    def on_live_batch(self, batch: LiveBatch) -> None:
        self.batches.append(batch)
        if self.ack and self.feed is not None:
            self.feed.applied(batch)


class SinkApp(App[None]):
    def compose(self) -> ComposeResult:
        yield Sink()


async def test_feed_keeps_one_batch_in_flight_and_coalesces_what_comes_meanwhile(store: Store) -> None:
    bus: EventBus[RolloutUpdate] = EventBus()
    app = SinkApp()
    async with app.run_test() as pilot:
        sink = app.query_one(Sink)
        feed = LiveFeed(sink, store, bus, interval=0.02)
        sink.feed = feed
        feed.subscribe()
        bus.publish(update(0))  # before the run id is known: kept, as an engine starting early would
        feed.follow(RUN_ID)
        bus.publish(update(1))
        bus.publish(update(0))
        await wait_until(pilot, lambda: len(sink.batches) == 1)
        assert [r.rollout_id for r in sink.batches[0].records] == [f"{RUN_ID}.0.0", f"{RUN_ID}.1.0"]
        for row in (2, 3, 2, 4):  # the screen has not applied the first batch: these wait
            bus.publish(update(row))
        await pilot.pause(0.2)  # ten feed intervals
        assert len(sink.batches) == 1
        sink.ack = True
        feed.applied(sink.batches[0])
        await wait_until(pilot, lambda: len(sink.batches) == 2)
        assert [r.rollout_id for r in sink.batches[1].records] == [f"{RUN_ID}.{i}.0" for i in (2, 3, 4)]
        assert feed.is_current(sink.batches[1])
        feed.stop()
        assert not feed.is_current(sink.batches[1])  # a batch still in flight after a stop is dropped
        assert not bus._subscribers
        await settle(pilot)


# --- the engine's own thread -----------------------------------------------------------------------------------
class ThreadProbeEngine:
    """Stands in for core.engine.Engine: records where it runs, publishes one change, then waits to be stopped
    (``hold``) or finishes."""

    ran_on: list[tuple[int, asyncio.AbstractEventLoop]] = []
    hold = True
    cancelled = threading.Event()

    def __init__(self, settings: Any, store: Store, *, bus: EventBus[RolloutUpdate]) -> None:
        self.store, self.bus = store, bus

    async def run(self, run_id: str) -> RunSummary:
        type(self).ran_on.append((threading.get_ident(), asyncio.get_running_loop()))
        self.store.update_rollout(f"{run_id}.5.0", status=RolloutStatus.GENERATING)
        self.bus.publish(RolloutUpdate(run_id, f"{run_id}.5.0", RolloutStatus.GENERATING))
        try:
            while type(self).hold:
                await asyncio.sleep(0.01)
        except asyncio.CancelledError:
            type(self).cancelled.set()
            raise
        return self.store.summarize(run_id, 0.5)

    async def aclose(self) -> None:
        pass


@pytest.fixture
def probe_engine() -> Iterator[type[ThreadProbeEngine]]:
    ThreadProbeEngine.ran_on, ThreadProbeEngine.hold = [], True
    ThreadProbeEngine.cancelled = threading.Event()
    with mock.patch("svgagent.core.engine.Engine", ThreadProbeEngine):
        yield ThreadProbeEngine


async def test_engine_runs_on_its_own_thread_and_loop_and_stops_there(store: Store, probe_engine: Any) -> None:
    app = make_app(store, run_id=RUN_ID, demo=True)  # demo: no keys needed to resume
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("c")  # resume the queued row 5
        await wait_until(pilot, lambda: table_of(app).records[f"{RUN_ID}.5.0"].status is RolloutStatus.GENERATING)
        (thread_id, loop), = probe_engine.ran_on
        assert thread_id != threading.get_ident() and loop is not asyncio.get_running_loop()
        assert app.control.running
        await pilot.press("s")
        await settle(pilot)
        assert probe_engine.cancelled.is_set() and not app.control.running
        assert not app.control.engine_thread.thread.is_alive()
        assert store.get_rollout(f"{RUN_ID}.5.0").status is RolloutStatus.QUEUED  # back in the queue
        assert table_of(app).records[f"{RUN_ID}.5.0"].status is RolloutStatus.QUEUED


async def test_closing_the_app_stops_the_engine_thread(store: Store, probe_engine: Any) -> None:
    app = make_app(store, run_id=RUN_ID, demo=True)  # demo: no keys needed to resume
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("c")
        await wait_until(pilot, lambda: bool(probe_engine.ran_on))
        thread = app.control.engine_thread.thread
    assert probe_engine.cancelled.is_set() and not thread.is_alive()


async def test_a_finished_engine_ends_the_feed_and_reloads(store: Store, probe_engine: Any) -> None:
    probe_engine.hold = False
    app = make_app(store, run_id=RUN_ID, demo=True)  # demo: no keys needed to resume
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("c")
        await settle(pilot)
        assert not app.control.running and not app.dashboard.feed.following
        assert probe_engine.ran_on and not app.control.engine_thread.thread.is_alive()
