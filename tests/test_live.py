"""Following a run off the UI loop: the thread-safe bus, the store-backed follower the TUI and CLI share, the
dashboard's live feed (one batch in flight, coalesced), and the engine in a process of its own."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from factories import RUN_ID, build_run
from textual.app import App, ComposeResult
from textual.widgets import Static
from tui_support import make_app, settle, table_of, wait_until

from svgagent.core.run.events import EventBus
from svgagent.core.run.follow import LiveRows, RunFollower, changed_ids
from svgagent.core.scoring.models import RolloutStatus, RolloutUpdate
from svgagent.core.store.run_store import Store
from svgagent.core.store.typed_rows import RunSummary, RunTally, summarize_rows
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


def test_cli_rows_count_like_the_run_summary(store: Store) -> None:
    """The headless progress bar's mean is the dashboard's: the override of row 4 counts, invalid rows do not."""
    rows = store.list_rollouts(RUN_ID)
    live = LiveRows(rows)
    summary = summarize_rows(rows, 0.5)
    assert live.tally.done == summary.done == 5
    assert live.tally.mean == pytest.approx(summary.mean_score)
    judge_only = [r.score for r in rows if r.is_score_valid and r.score is not None]
    assert live.tally.mean != pytest.approx(sum(judge_only) / len(judge_only))  # the old CLI's figure
    store.set_override(f"{RUN_ID}.0.0", fulfilled=0)
    live.apply(store.get_rollouts([f"{RUN_ID}.0.0"]))
    assert live.tally.summary(0.5) == summarize_rows(store.list_rollouts(RUN_ID), 0.5)


def test_tally_follows_replacements_to_the_same_summary_as_a_full_pass(store: Store) -> None:
    rows = store.list_rollouts(RUN_ID)
    tally = RunTally(rows[:2])
    for rec in rows[2:]:
        tally.replace(None, rec)
    assert tally.summary(0.5) == summarize_rows(rows, 0.5)
    scored = store.get_rollout(f"{RUN_ID}.0.0")
    rerun = replace(scored, rollout_id=f"{RUN_ID}.0.0.a2", status=RolloutStatus.QUEUED, score=None)
    tally.replace(scored, None)  # a rerun: the old attempt leaves, the new one is queued
    tally.replace(None, rerun)
    assert tally.summary(0.5) == summarize_rows([rerun, *rows[1:]], 0.5)
    assert tally.scores == sorted(tally.scores)


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


# --- the engine's own process --------------------------------------------------------------------------------
class ProbeEngine:
    """Stands in for core.engine.Engine inside the engine process: notes its process id on row 5, publishes one
    change, then waits to be stopped (``PROBE_HOLD=1``) or finishes; a stop is noted on the run's status."""

    def __init__(self, settings: Any, store: Store, *, bus: EventBus[RolloutUpdate]) -> None:
        self.store, self.bus = store, bus

    async def run(self, run_id: str) -> RunSummary:
        import os

        self.store.update_rollout(f"{run_id}.5.0", status=RolloutStatus.GENERATING, reason=f"pid {os.getpid()}")
        self.bus.publish(RolloutUpdate(run_id, f"{run_id}.5.0", RolloutStatus.GENERATING))
        try:
            while os.environ.get("PROBE_HOLD") == "1":
                await asyncio.sleep(0.01)
        except asyncio.CancelledError:
            self.store.set_run_status(run_id, "interrupted")
            raise
        return self.store.summarize(run_id, 0.5)

    async def aclose(self) -> None:
        pass


def probe_app(store: Store, monkeypatch: pytest.MonkeyPatch, *, hold: bool) -> Any:
    monkeypatch.setenv("PROBE_HOLD", "1" if hold else "0")
    app = make_app(store, run_id=RUN_ID, demo=True)  # demo: no keys needed to resume
    app.control.engine_factory = f"{__name__}:ProbeEngine"
    app.control.engine_path = [str(Path(__file__).parent)]
    return app


def probe_pid(store: Store) -> int | None:
    reason = store.get_rollout(f"{RUN_ID}.5.0").reason or ""
    return int(reason.removeprefix("pid ")) if reason.startswith("pid ") else None


async def test_engine_runs_in_its_own_process_and_stops_there(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    app = probe_app(store, monkeypatch, hold=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("c")  # resume the queued row 5
        await wait_until(pilot, lambda: table_of(app).records[f"{RUN_ID}.5.0"].status is RolloutStatus.GENERATING)
        child = app.control.engine_process
        assert probe_pid(store) == child.pid
        assert child.pid != os.getpid()
        assert app.control.running
        await pilot.press("s")
        await settle(pilot)
        assert not app.control.running
        assert not child.thread.is_alive()
        assert store.get_run(RUN_ID).status == "interrupted"  # the engine saw the stop
        assert store.get_rollout(f"{RUN_ID}.5.0").status is RolloutStatus.QUEUED  # back in the queue
        assert table_of(app).records[f"{RUN_ID}.5.0"].status is RolloutStatus.QUEUED


async def test_closing_the_app_stops_the_engine_process(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    app = probe_app(store, monkeypatch, hold=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("c")
        await wait_until(pilot, lambda: probe_pid(store) is not None)
        child = app.control.engine_process
    assert not child.thread.is_alive()
    assert store.get_run(RUN_ID).status == "interrupted"


async def test_a_finished_engine_ends_the_feed(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    app = probe_app(store, monkeypatch, hold=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("c")
        await settle(pilot)
        assert not app.control.running
        assert not app.dashboard.feed.following
        assert probe_pid(store) is not None
        assert not app.control.engine_process.thread.is_alive()


async def test_an_engine_that_dies_is_reported_and_its_run_interrupted(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tui_support import notifications

    app = probe_app(store, monkeypatch, hold=False)
    app.control.engine_factory = "svgagent.core.no_such_module:Engine"
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("c")
        await wait_until(pilot, lambda: not app.control.running)
        await pilot.pause()
        assert any("ModuleNotFoundError" in n or "no_such_module" in n for n in notifications(app)), notifications(app)
        assert store.get_run(RUN_ID).status == "interrupted"


# --- reloads read one snapshot ------------------------------------------------------------------------------------
def _paid(store: Store) -> int:
    return sum(r.tokens for r in store.list_rollouts(RUN_ID, current_only=False))


@pytest.fixture
def rerun_after_next_read(store: Store, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """``arm()``: the next read of the run's current rollouts, on any connection, is followed at once by a rerun of
    row 0 that another connection commits (the app's `R` while a reload reads) — before the replaced attempts'
    tokens are read. Returns the new attempts' ids (filled once the rerun landed)."""
    other = Store(store.path)
    read = Store.list_rollouts

    def arm() -> list[str]:
        done: list[str] = []

        def read_then_rerun(self: Store, *args: Any, **kwargs: Any) -> list:
            rows = read(self, *args, **kwargs)
            if not done and kwargs.get("current_only", True):
                done.extend(other.new_attempts(RUN_ID, [f"{RUN_ID}.0.0"]))
                monkeypatch.setattr(Store, "list_rollouts", read)
            return rows

        monkeypatch.setattr(Store, "list_rollouts", read_then_rerun)
        return done

    yield arm
    other.close()


def test_a_big_runs_reload_counts_a_rerun_committed_meanwhile_once(store: Store, rerun_after_next_read: Any) -> None:
    paid = _paid(store)
    posted: list[Any] = []

    class Target:
        def post_message(self, message: Any) -> None:
            posted.append(message)

    rerun = rerun_after_next_read()
    LiveFeed(None, store, EventBus())._reload(RUN_ID, {}, Target())  # type: ignore[arg-type]
    assert rerun
    (reloaded,) = posted
    earlier = sum(g.prompt_tokens + g.completion_tokens for g in reloaded.earlier)
    assert sum(r.tokens for r in reloaded.changed) + earlier == paid


@pytest.mark.parametrize("when", ["open", "reload"])
async def test_the_open_runs_tokens_count_a_rerun_committed_meanwhile_once(
    store: Store, rerun_after_next_read: Any, when: str
) -> None:
    paid = _paid(store)
    app = make_app(store, run_id=RUN_ID)
    rerun = rerun_after_next_read() if when == "open" else []
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        opened = app.dashboard.run
        if when == "reload":
            rerun = rerun_after_next_read()
            opened.reload()
        assert rerun
        summary = opened.table.tally.summary(opened.threshold, opened.earlier)  # what the summary bar shows
        assert summary.prompt_tokens + summary.completion_tokens == paid


async def test_the_open_runs_dollars_count_the_attempts_a_rerun_replaced(store: Store) -> None:
    """The summary bar's dollars are the run's whole cost, as `runs show` gives it (the README: every attempt counts)
    — they were the current rollouts' alone, so a rerun made the run look cheaper than it was."""
    from tui_support import settings_for

    from svgagent.core.config.prices import price_table, run_cost, usd_text

    prices = {"fixture-policy": {"input": 1.0, "output": 2.0}, "fixture-judge": {"input": 3.0, "output": 4.0}}
    with store._tx() as db:  # the judge's calls too, so both sides cost something
        db.execute(
            "UPDATE rollouts SET judge_prompt_tokens = 500, judge_completion_tokens = 40 WHERE score IS NOT NULL"
        )
    store.new_attempts(RUN_ID, [f"{RUN_ID}.0.0"])  # row 0's scored attempt is replaced: it was paid for
    app = make_app(store, run_id=RUN_ID, settings=settings_for(store.path, prices=prices))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        whole = run_cost(store, RUN_ID, price_table(prices), "fixture-policy", "fixture-judge")
        shown = str(app.dashboard.query_one("#summary").render())
        assert f"{usd_text(whole.total_usd)} (policy {usd_text(whole.policy_usd)}" in shown
    replaced = store.token_groups(RUN_ID, current=False)
    assert replaced and sum(g.prompt_tokens for g in replaced) > 0  # the replaced attempt had a price of its own
