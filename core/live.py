"""Following a run while the engine works: which rollouts changed, as the store has them now.

The engine publishes only "rollout X is now in state S" (``RolloutUpdate``); what a person sees — score, verdict,
timings — is read back from the store here, in one query per batch. The TUI's live feed and the headless
``svgagent eval`` progress both follow a run through :class:`RunFollower`, so they read the score from the same
place (the stored record, whose ``effective_score`` also honours a person's override).
"""

from __future__ import annotations

from svgagent.core.events import Subscription
from svgagent.core.records import RolloutRecord
from svgagent.core.scoring.models import RolloutUpdate
from svgagent.core.store import Store


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


class Tally:
    """Done count and mean score of a run kept up to date from changed records (the headless progress bar): the
    same rule as the run summary — a rollout counts toward the mean when ``counts_toward_mean``, with its
    ``effective_score``."""

    def __init__(self, records: list[RolloutRecord]) -> None:
        self._done: dict[str, bool] = {}
        self._scores: dict[str, float] = {}
        self.update(records)

    def update(self, records: list[RolloutRecord]) -> None:
        for rec in records:
            if not rec.is_current:
                self._done.pop(rec.rollout_id, None)
                self._scores.pop(rec.rollout_id, None)
                continue
            self._done[rec.rollout_id] = rec.status.terminal
            if rec.counts_toward_mean and rec.effective_score is not None:
                self._scores[rec.rollout_id] = float(rec.effective_score)
            else:
                self._scores.pop(rec.rollout_id, None)

    @property
    def done(self) -> int:
        return sum(self._done.values())

    @property
    def mean(self) -> float | None:
        return sum(self._scores.values()) / len(self._scores) if self._scores else None
