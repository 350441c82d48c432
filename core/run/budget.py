"""A run's dollars before and while it runs: the dry run's estimate and the budget that stops a run.

**Expected cost of a call.** A policy call is expected to cost what the model's calls cost on average in the
store (finished rollouts of any run of the same model, answers from the cache left out); with no such rollout,
its prompt's length (4 characters a token, plus :attr:`ExpectedTokens.policy_prompt_extra`) and
:attr:`ExpectedTokens.policy_completion` tokens of answer (at most ``max_tokens``). A judge call likewise, from the
judge model's stored calls or :attr:`ExpectedTokens.judge_prompt` / ``judge_completion``, plus its picture.

**The budget** (``--budget`` / the ``budget`` setting, dollars, policy and judge together): before each paid call
the engine asks :class:`BudgetGate` whether the run's dollars so far (every attempt of the run, earlier sessions
included), the calls in flight and this call's expected cost stay within it. The first call that would pass it is
not made: its rollout stays queued, no new rollout starts, the calls in flight finish and are stored, and the run
ends ``interrupted`` with :class:`BudgetReached` — ``eval --resume`` (with a larger ``--budget``, or none)
continues it. A model without a price counts nothing towards the budget (the dry run says so).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from svgagent.core.config.prices import PriceTable, run_cost, usd_text
from svgagent.core.scoring.errors import SvgAgentError
from svgagent.core.scoring.models import DatasetRow
from svgagent.core.store.run_store import Store

CHARS_PER_TOKEN = 4


class BudgetReached(SvgAgentError):
    """The run stopped before a call that would have passed its budget (it is interrupted, and resumable)."""

    def __init__(self, run_id: str, spent: float, budget: float, next_usd: float = 0.0) -> None:
        super().__init__(
            f"budget reached: run {run_id} spent {usd_text(spent)} of its {usd_text(budget)} and stopped: the "
            f"next rollout (~{usd_text(next_usd)}), with the calls in flight then, would have passed it"
        )
        self.run_id, self.spent, self.budget = run_id, spent, budget


@dataclass(frozen=True, slots=True)
class TokensPerCall:
    prompt: float
    completion: float
    measured: int = 0  # the stored calls this average is of (0: the table's expectation)


@dataclass(frozen=True, slots=True)
class Estimate:
    """What a run is expected to cost (``eval --dry-run``)."""

    rows: int
    samples: int
    policy: TokensPerCall
    judge: TokensPerCall
    policy_usd: float | None  # None: the model has no price
    judge_usd: float | None

    @property
    def calls(self) -> int:
        return self.rows * self.samples

    @property
    def total_usd(self) -> float | None:
        return None if self.policy_usd is None or self.judge_usd is None else self.policy_usd + self.judge_usd

    def to_dict(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "samples": self.samples,
            "rollouts": self.calls,
            "policy_tokens_per_call": {"prompt": self.policy.prompt, "completion": self.policy.completion},
            "policy_tokens_from_stored_calls": self.policy.measured,
            "judge_tokens_per_call": {"prompt": self.judge.prompt, "completion": self.judge.completion},
            "judge_tokens_from_stored_calls": self.judge.measured,
            "policy_usd": self.policy_usd,
            "judge_usd": self.judge_usd,
            "total_usd": self.total_usd,
        }


def stored_tokens_per_call(store: Store | None, model: str, side: str) -> TokensPerCall | None:
    """The mean tokens of the stored calls of ``model`` as policy (``side`` "policy") or judge ("judge")."""
    if store is None:
        return None
    setting, prompt, completion = (
        ("model", "prompt_tokens", "completion_tokens")
        if side == "policy"
        else ("judge_model", "judge_prompt_tokens", "judge_completion_tokens")
    )
    cached = " AND r.cached = 0" if side == "policy" else ""
    rows = store.query(
        f"SELECT AVG(r.{prompt}), AVG(r.{completion}), COUNT(*) FROM rollouts r JOIN runs u ON r.run_id = u.run_id"
        f" WHERE json_extract(u.settings_json, '$.{setting}') = ? AND r.{completion} IS NOT NULL{cached}",
        (model,),
    )
    if not rows or not rows[0][2]:
        return None
    return TokensPerCall(float(rows[0][0] or 0), float(rows[0][1] or 0), int(rows[0][2]))


def expected_tokens(
    table: PriceTable, store: Store | None, settings: Any, rows: Sequence[DatasetRow]
) -> tuple[TokensPerCall, TokensPerCall]:
    """(policy, judge) tokens per call (see the module docstring)."""
    e = table.expected
    policy = stored_tokens_per_call(store, settings.model, "policy")
    if policy is None:
        chars = sum(len(r.prompt) + sum(len(q) for q in r.requirements) for r in rows) / max(len(rows), 1)
        policy = TokensPerCall(
            chars / CHARS_PER_TOKEN + e.policy_prompt_extra, min(e.policy_completion, settings.max_tokens)
        )
    judge = stored_tokens_per_call(store, settings.judge_model, "judge") or TokensPerCall(
        e.judge_prompt, e.judge_completion
    )
    return policy, judge


def estimate_run(
    table: PriceTable, store: Store | None, settings: Any, rows: Sequence[DatasetRow], samples: int
) -> Estimate:
    """rows × samples × expected tokens per call → dollars, policy and judge apart."""
    policy, judge = expected_tokens(table, store, settings, rows)
    calls = len(rows) * samples
    p, j = table.price_of(settings.model), table.price_of(settings.judge_model)
    return Estimate(
        len(rows),
        samples,
        policy,
        judge,
        None if p is None else calls * p.call_usd(round(policy.prompt), round(policy.completion)),
        None if j is None else calls * j.call_usd(round(judge.prompt), round(judge.completion), images=1),
    )


class BudgetGate:
    """Whether the next paid call of a run may start (see the module docstring). Used on the engine's loop only.

    A rollout admitted for its policy call also reserves its judge call, so a rollout that starts can finish:
    the budget stops runs between rollouts, not between a paid answer and its verdict (a resumed rollout, whose
    answer was stored, asks for its judge call alone)."""

    def __init__(
        self, budget: float | None, spent: float, policy_call_usd: float, judge_call_usd: float, run_id: str = ""
    ) -> None:
        self.budget = budget
        self.spent = spent  # dollars of the calls that ended (earlier sessions included)
        self.reserved = 0.0  # the expected dollars of the calls in flight or reserved
        self.expected = {"policy": policy_call_usd, "judge": judge_call_usd}
        self.run_id = run_id
        self.stopped = False
        self._judge_reserved: set[str] = set()  # rollouts whose judge call is reserved

    @classmethod
    def for_run(
        cls, settings: Any, table: PriceTable, store: Store, run_id: str, rows: Sequence[DatasetRow]
    ) -> BudgetGate:
        spent = run_cost(store, run_id, table, settings.model, settings.judge_model).known_usd
        policy, judge = expected_tokens(table, store, settings, rows)
        p, j = table.price_of(settings.model), table.price_of(settings.judge_model)
        return cls(
            settings.budget,
            spent,
            0.0 if p is None else p.call_usd(round(policy.prompt), round(policy.completion)),
            0.0 if j is None else j.call_usd(round(judge.prompt), round(judge.completion), images=1),
            run_id,
        )

    def _fits(self, usd: float) -> bool:
        if self.budget is None:
            return True
        if self.stopped or self.spent + self.reserved + usd > self.budget:
            self.stopped = True
            return False
        return True

    def admit_rollout(self, rollout_id: str) -> bool:
        """Reserve a rollout's policy call and its judge call, or — when they would pass the budget — stop."""
        both = self.expected["policy"] + self.expected["judge"]
        if not self._fits(both):
            return False
        self.reserved += both
        self._judge_reserved.add(rollout_id)
        return True

    def admit_judge(self, rollout_id: str) -> bool:
        """A rollout's judge call: reserved with its policy call, or (a resumed answer) reserved now if it fits."""
        if rollout_id in self._judge_reserved:
            return True
        if not self._fits(self.expected["judge"]):
            return False
        self.reserved += self.expected["judge"]
        self._judge_reserved.add(rollout_id)
        return True

    def settle(self, side: str, usd: float, rollout_id: str = "") -> None:
        """A call of ``side`` ("policy" | "judge") ended, costing ``usd`` (0 for one that failed)."""
        self.spent += usd
        self.reserved = max(0.0, self.reserved - self.expected[side])
        if side == "judge":
            self._judge_reserved.discard(rollout_id)

    def release(self, rollout_id: str) -> None:
        """A rollout ended without its judge call (no SVG, a failed call, a render error): its reservation goes."""
        if rollout_id in self._judge_reserved:
            self._judge_reserved.discard(rollout_id)
            self.reserved = max(0.0, self.reserved - self.expected["judge"])

    def reached(self) -> BudgetReached:
        return BudgetReached(
            self.run_id, self.spent, self.budget or 0.0, self.expected["policy"] + self.expected["judge"]
        )
