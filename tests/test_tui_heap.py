"""The app's garbage collector (tui/heap): full collections wait until nobody types, the heap that start-up and the
panes' first imports built is frozen, and everything is handed back when the app ends. Counted, not timed: the
stalls are bench/tui.py's."""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

from tui_support import make_app, settle

from svgagent.core.store.run_store import Store
from svgagent.tui.idle_gc import DEFERRED_IMPORTS, FULL_EVERY_GEN1, IDLE_S, HeapPolicy


@contextmanager
def full_collections() -> Iterator[list[int]]:
    """The generation-2 collections that start meanwhile (automatic or not)."""
    seen: list[int] = []

    def callback(phase: str, info: dict[str, Any]) -> None:
        if phase == "start" and info["generation"] == 2:
            seen.append(2)

    gc.callbacks.append(callback)
    try:
        yield seen
    finally:
        gc.callbacks.remove(callback)


def make_full_collection_due(policy: HeapPolicy) -> None:
    """As many young collections as the default thresholds allow before a full one."""
    assert policy._due_every is not None
    for _ in range(policy._due_every - gc.get_count()[2]):
        gc.collect(1)


async def test_a_full_collection_waits_until_nobody_has_typed_for_a_second(tmp_path: Path) -> None:
    before = gc.get_threshold()
    now = [100.0]
    with Store(tmp_path / "runs.db") as store:
        app = make_app(store, clock=lambda: now[0])
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            assert app.heap.started
            assert gc.get_threshold()[2] >= FULL_EVERY_GEN1  # no automatic full collection while it runs
            await pilot.press("down")  # a key at t=100
            make_full_collection_due(app.heap)
            with full_collections() as seen:
                now[0] = 100.0 + IDLE_S / 2
                assert not app.heap.collect_if_idle()  # a key half a second ago: not now
                assert seen == [] and app.heap.full_collections == 0
                now[0] = 100.0 + IDLE_S
                assert app.heap.collect_if_idle()
                assert seen == [2] and app.heap.full_collections == 1
                assert not app.heap.collect_if_idle()  # done: not due again yet
                assert seen == [2]
    assert gc.get_threshold() == before  # handed back when the app ends


async def test_the_panes_first_imports_are_frozen_with_the_rest_of_the_heap(tmp_path: Path) -> None:
    calls: list[str] = []
    freeze, import_deferred = HeapPolicy.freeze, HeapPolicy.import_deferred

    def recording_freeze() -> None:
        calls.append("freeze")
        freeze()

    def recording_imports() -> None:
        calls.append("import")
        import_deferred()

    with (
        Store(tmp_path / "runs.db") as store,
        mock.patch.object(HeapPolicy, "freeze", staticmethod(recording_freeze)),
        mock.patch.object(HeapPolicy, "import_deferred", staticmethod(recording_imports)),
    ):
        app = make_app(store)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            app._warm_up()  # what the timer does FREEZE_AGAIN_S after the first frame
            await settle(pilot)
            assert calls[0] == "freeze"  # at the first frame
            assert "freeze" in calls[calls.index("import") + 1 :]  # and again after the imports
            assert all(name in sys.modules for name in DEFERRED_IMPORTS)
            frozen = {id(obj) for obj in gc.get_objects()}  # every object the collector still walks
            assert not any(id(sys.modules[name]) in frozen for name in DEFERRED_IMPORTS)
    assert gc.get_freeze_count() == 0  # everything handed back


def test_the_policy_does_nothing_before_it_starts() -> None:
    now = [0.0]
    policy = HeapPolicy(lambda: now[0])
    now[0] = 10 * IDLE_S
    with full_collections() as seen:
        assert not policy.collect_if_idle()
    assert seen == []
    policy.stop()
    assert gc.get_freeze_count() == 0
