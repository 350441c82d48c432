"""The dashboard's live feed: what the engine changed, delivered to the screen as coalesced batches.

The engine runs on a thread of its own (``tui.run_control``) and publishes "rollout X changed" on the app's
thread-safe bus. A thread worker here wakes every ``FEED_INTERVAL_S``, drains the subscription, reads the changed
rollouts from the store (``core.live.RunFollower``: the same read as the headless CLI's progress) and posts one
:class:`LiveBatch` to the screen. At most one batch is in flight: until the screen has applied it, further changes
wait in the subscription and are coalesced into the next batch, so a slow frame never builds a queue — the UI
applies at most ~10 batches a second, whatever the engine's rate. The app's loop never drains, reads or coalesces.

Big reloads (stop, resume, rerun, the run's end) are read in a thread too and handed over as :class:`RunReloaded`:
only the rows that differ from what the table shows.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from functools import partial

from textual.message import Message
from textual.message_pump import MessagePump
from textual.widget import Widget
from textual.worker import get_current_worker

from svgagent.core.run.events import EventBus
from svgagent.core.run.follow import RunFollower
from svgagent.core.scoring.models import RolloutUpdate
from svgagent.core.store.run_store import Store
from svgagent.core.store.typed_rows import RolloutRecord, TokenGroup

FEED_INTERVAL_S = 0.1
ACK_POLL_S = 0.1  # how often a feed waiting for its batch to be applied checks that it is still wanted


class LiveBatch(Message):
    """The latest stored state of the rollouts of ``run_id`` that changed since the last batch. Call
    :meth:`done` once applied (or dropped): the feed sends the next batch only then."""

    def __init__(self, run_id: str, records: list[RolloutRecord], generation: int) -> None:
        super().__init__()
        self.run_id, self.records, self.generation = run_id, records, generation
        self.held = 0  # frames it waited for a key to be shown first (the screen's count)
        self._applied = threading.Event()

    def done(self) -> None:
        self._applied.set()

    def wait_done(self, timeout: float) -> bool:
        return self._applied.wait(timeout)


class RunReloaded(Message):
    """A big run read again in a thread: the rows that differ from what the table showed, and those now gone."""

    def __init__(
        self, run_id: str, changed: list[RolloutRecord], removed: list[str], earlier: tuple[TokenGroup, ...] = ()
    ) -> None:
        """``earlier``: the tokens of the run's attempts reruns replaced, read in the same thread."""
        super().__init__()
        self.run_id, self.changed, self.removed = run_id, changed, removed
        self.earlier = earlier


class LiveFeed:
    """Follows one run at a time for ``screen`` (which handles :class:`LiveBatch` and :class:`RunReloaded`).

    ``subscribe()`` before the engine starts (so no event is missed), ``follow(run_id)`` once its id is known,
    ``stop()`` when the engine has stopped — then reload: a batch still in flight is from an older
    ``generation`` and the screen drops it (:meth:`is_current`)."""

    def __init__(
        self, screen: Widget, store: Store, bus: EventBus[RolloutUpdate], *, interval: float = FEED_INTERVAL_S
    ) -> None:
        self.screen = screen
        self.store = store
        self.bus = bus
        self.interval = interval
        self.generation = 0
        self.batches = 0  # batches applied (benchmarks and tests read it)
        self._follower: RunFollower | None = None
        self._stop = threading.Event()

    @property
    def following(self) -> bool:
        return self._follower is not None

    def subscribe(self) -> None:
        """Start collecting events (call before the engine starts); stops following any earlier run."""
        self.stop()
        self._follower = RunFollower(self.store, self.bus.subscribe())

    def follow(self, run_id: str) -> None:
        """Deliver the changes of ``run_id`` (subscribing now if :meth:`subscribe` was not called)."""
        if self._follower is None:
            self.subscribe()
        assert self._follower is not None
        self._follower.run_id = run_id
        self._stop = threading.Event()
        self.screen.run_worker(
            partial(self._deliver, self._follower, self._stop, self.generation, self.screen),
            name="live feed",
            description="live feed",
            group="live-feed",
            thread=True,
            exclusive=True,
            exit_on_error=False,
        )

    def stop(self) -> None:
        """Stop following (the engine has stopped; the caller reloads the run)."""
        self.generation += 1
        self._stop.set()
        if self._follower is not None:
            self._follower.close()
            self._follower = None

    def is_current(self, batch: LiveBatch) -> bool:
        return batch.generation == self.generation

    def applied(self, batch: LiveBatch) -> None:
        self.batches += 1
        batch.done()

    def _deliver(self, follower: RunFollower, stop: threading.Event, generation: int, target: MessagePump) -> None:
        """The feed's thread: drain, read, post one batch, wait until it is applied, again."""
        worker = get_current_worker()
        while not stop.wait(self.interval) and not worker.is_cancelled:
            records = follower.changed()
            if not records or follower.run_id is None:
                continue
            batch = LiveBatch(follower.run_id, records, generation)
            target.post_message(batch)
            while not batch.wait_done(ACK_POLL_S):
                if stop.is_set() or worker.is_cancelled:
                    return

    # --- reloads ------------------------------------------------------------------------------------------
    def reload(self, run_id: str, shown: Mapping[str, RolloutRecord]) -> None:
        """Read ``run_id`` again in a thread and post :class:`RunReloaded` with what differs from ``shown``."""
        # a description of our own: Textual's default is the repr of the work, here 10,000 records (0.3 s)
        self.screen.run_worker(
            partial(self._reload, run_id, dict(shown), self.screen),
            name="reload run",
            description=f"reload run {run_id}",
            group="reload",
            thread=True,
            exclusive=True,
            exit_on_error=False,
        )

    def _reload(self, run_id: str, shown: dict[str, RolloutRecord], target: MessagePump) -> None:
        # its own read-only connection: WAL lets it read while the engine writes, and the engine's writes never
        # wait for this read to release the shared connection
        with self.store.reader() as reader:
            records, earlier = reader.current_and_earlier_tokens(run_id)  # one snapshot: a rerun counted once
        current = {r.rollout_id for r in records}
        changed = [r for r in records if shown.get(r.rollout_id) != r]
        target.post_message(RunReloaded(run_id, changed, [rid for rid in shown if rid not in current], earlier))
