"""Following a run while the engine works: which rollouts changed, as the store has them now.

The engine publishes only "rollout X is now in state S" (``RolloutUpdate``); what a person sees — score, verdict,
timings — is read back from the store here, in one query per batch. The TUI's live feed and the headless
``svgagent eval`` progress both follow a run through :class:`RunFollower`, so they read the score from the same
place (the stored record, whose ``effective_score`` also honours a person's override), and count it with the same
rule (``core.records.RunTally``).
"""

from __future__ import annotations

from collections.abc import Iterable

from svgagent.core.run.events import Subscription
from svgagent.core.scoring.models import RolloutUpdate
from svgagent.core.store.run_store import Store
from svgagent.core.store.typed_rows import RolloutRecord, RunTally


def changed_ids(events: list[RolloutUpdate], run_id: str | None) -> list[str]:
    """The rollouts of ``run_id`` named by ``events``, each once, in the order they first changed."""
    return list(dict.fromkeys(e.rollout_id for e in events if e.run_id == run_id))


class RunFollower:
    """The rollouts of ``run_id`` (settable: a new run's id is known only once it is created) that changed since
    the last :meth:`changed`, read from ``store``. Safe to call from any thread: the subscription and the store
    are thread-safe."""

    def __init__(self, store: Store, subscription: Subscription[RolloutUpdate], run_id: str | None = None) -> None:
        self.store = store
        self.subscription = subscription
        self.run_id = run_id

    def changed(self) -> list[RolloutRecord]:
        ids = changed_ids(self.subscription.drain(), self.run_id)
        return self.store.get_rollouts(ids) if ids else []

    def close(self) -> None:
        self.subscription.close()


class LiveRows:
    """The current rollouts of a run by id and their :class:`RunTally`, kept up to date from changed records (the
    headless progress bar's; the TUI's table keeps its own rows the same way)."""

    def __init__(self, records: Iterable[RolloutRecord]) -> None:
        self.records = {r.rollout_id: r for r in records if r.is_current}
        self.tally = RunTally(self.records.values())

    def apply(self, changed: Iterable[RolloutRecord]) -> None:
        for rec in changed:
            old = self.records.pop(rec.rollout_id, None)
            if rec.is_current:
                self.records[rec.rollout_id] = rec
            self.tally.replace(old, rec if rec.is_current else None)
