"""What calls cost in dollars: the price table and the one function that turns a rollout's tokens into dollars.

The table ships with the package (``core/data/prices.json``: USD per 1,000,000 input, cached-input and output
tokens, and per image where a provider bills a picture apart from its tokens); the ``prices`` setting overrides or
adds models (``[prices."MODEL"]`` in ``svgagent.toml`` or the user config file: ``input``, ``output``,
``cached_input``, ``image``). A model name in the table may be a glob pattern (``accounts/me/models/*``); the
setting's names are looked up before the shipped ones, and within each an exact name wins over a pattern, a longer
pattern over a shorter one.

:func:`rollout_cost` is the one place a rollout's dollars are computed — the run and leaderboard totals, the CLI,
the app and the engine's budget all add up its results — policy and judge apart. A model the table does not know
has no price: its dollars are ``None`` (shown as "?"), never a guessed 0 — unless it made no call (no tokens
recorded on that side: nothing to pay). A policy answer taken from the response cache was paid for by an earlier
run: it costs nothing here.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from svgagent.core.scoring.errors import SvgAgentError
from svgagent.core.store.run_store import Store
from svgagent.core.store.typed_rows import RolloutRecord, TokenGroup

PER_TOKENS = 1_000_000  # the table's prices are per this many tokens
PRICE_KEYS = ("input", "output", "cached_input", "image")
MAX_PRICE = 1_000_000.0  # per unit, in the table or an override: anything above is a typo


@dataclass(frozen=True, slots=True)
class Price:
    """USD per :data:`PER_TOKENS` tokens; ``image`` USD per picture attached to a call."""

    input: float
    output: float
    cached_input: float | None = None  # None: cached input tokens cost as much as the others
    image: float = 0.0

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> Price:
        unknown = set(data) - set(PRICE_KEYS)
        if unknown:
            raise ValueError(f"unknown price field {sorted(unknown)[0]!r} (allowed: {', '.join(PRICE_KEYS)})")
        values: dict[str, float] = {}
        for key, value in data.items():
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= MAX_PRICE:
                raise ValueError(f"{key} must be a number of dollars from 0 to {MAX_PRICE:g}, not {value!r}")
            values[key] = float(value)
        if "input" not in values or "output" not in values:
            raise ValueError("a price needs input and output (USD per 1M tokens)")
        return cls(**values)

    def call_usd(self, prompt_tokens: int, completion_tokens: int, cached_tokens: int = 0, images: int = 0) -> float:
        """One call's dollars; ``cached_tokens`` are the part of ``prompt_tokens`` the provider served from its
        prompt cache."""
        cached = min(max(cached_tokens, 0), max(prompt_tokens, 0))
        fresh = max(prompt_tokens, 0) - cached
        cached_rate = self.input if self.cached_input is None else self.cached_input
        return (fresh * self.input + cached * cached_rate + max(completion_tokens, 0) * self.output) / PER_TOKENS + max(
            images, 0
        ) * self.image


@dataclass(frozen=True, slots=True)
class ExpectedTokens:
    """What a dry run assumes per call when no finished rollout of the model says better."""

    policy_prompt_extra: int = 60  # tokens around the prompt's text (roles, the instructions)
    policy_completion: int = 1200
    judge_prompt: int = 1100  # the question, the requirements and the picture
    judge_completion: int = 150


@dataclass(frozen=True, slots=True)
class PriceTable:
    models: Mapping[str, Price]
    expected: ExpectedTokens = field(default_factory=ExpectedTokens)
    as_of: str = ""
    overridden: frozenset[str] = frozenset()  # the names the ``prices`` setting gave: looked up first

    def price_of(self, model: str | None) -> Price | None:
        """The price of ``model``: among the setting's names first, then the shipped ones — its exact name, else
        the longest glob pattern matching it; None: unknown."""
        if not model:
            return None
        for names in (self.overridden, self.models.keys() - self.overridden):
            if model in names:
                return self.models[model]
            patterns = [p for p in names if any(c in p for c in "*?[") and fnmatch.fnmatchcase(model, p)]
            if patterns:
                return self.models[max(patterns, key=len)]
        return None


@dataclass(frozen=True, slots=True)
class Cost:
    """Dollars and tokens, policy and judge apart. A side's dollars are None when its model has no price."""

    policy_usd: float | None = 0.0
    judge_usd: float | None = 0.0
    policy_tokens: int = 0
    judge_tokens: int = 0

    @property
    def total_usd(self) -> float | None:
        """Both sides' dollars; None when either side's model has no price (a part is not the total)."""
        if self.policy_usd is None or self.judge_usd is None:
            return None
        return self.policy_usd + self.judge_usd

    @property
    def known_usd(self) -> float:
        """The dollars that are known (what a budget counts: an unpriced side adds nothing)."""
        return (self.policy_usd or 0.0) + (self.judge_usd or 0.0)

    def __add__(self, other: Cost) -> Cost:
        def add(a: float | None, b: float | None) -> float | None:
            return None if a is None or b is None else a + b

        return Cost(
            add(self.policy_usd, other.policy_usd),
            add(self.judge_usd, other.judge_usd),
            self.policy_tokens + other.policy_tokens,
            self.judge_tokens + other.judge_tokens,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "policy_usd": self.policy_usd,
            "judge_usd": self.judge_usd,
            "total_usd": self.total_usd,
            "policy_tokens": self.policy_tokens,
            "judge_tokens": self.judge_tokens,
        }


def group_cost(group: TokenGroup, table: PriceTable, policy_model: str | None, judge_model: str | None) -> Cost:
    """THE cost of rollouts alike (one rollout, or a run's attempts grouped by the store): their policy calls and
    their judge calls, in dollars and tokens. Prices are linear in tokens, so a group costs its rollouts' sum."""
    policy_price, judge_price = table.price_of(policy_model), table.price_of(judge_model)
    if group.cached or not group.answered:  # from the response cache (an earlier run paid), or no call recorded
        policy_usd: float | None = 0.0
    else:
        policy_usd = (
            None
            if policy_price is None
            else policy_price.call_usd(group.prompt_tokens, group.completion_tokens, group.cached_prompt_tokens)
        )
    if not group.judged:  # no judge call recorded: nothing to pay, whatever the judge's price
        judge_usd: float | None = 0.0
    else:
        judge_usd = (
            None
            if judge_price is None
            else judge_price.call_usd(
                group.judge_prompt_tokens,
                group.judge_completion_tokens,
                group.judge_cached_prompt_tokens,
                images=group.count,
            )
        )
    return Cost(
        policy_usd,
        judge_usd,
        group.prompt_tokens + group.completion_tokens,
        group.judge_prompt_tokens + group.judge_completion_tokens,
    )


def rollout_cost(rec: RolloutRecord, table: PriceTable, policy_model: str | None, judge_model: str | None) -> Cost:
    """The cost of one rollout (one attempt): its policy call and its judge call, in dollars and tokens."""
    return group_cost(TokenGroup.of(rec), table, policy_model, judge_model)


def run_cost(store: Store, run_id: str, table: PriceTable, policy_model: str | None, judge_model: str | None) -> Cost:
    """What the whole run cost — every attempt, reruns' replaced ones too — from one grouped query (no rollout is
    read whole: ``runs list`` prices every run)."""
    total = Cost()
    for group in store.token_groups(run_id):
        total = total + group_cost(group, table, policy_model, judge_model)
    return total


def rollouts_cost(
    rollouts: Iterable[RolloutRecord], table: PriceTable, policy_model: str | None, judge_model: str | None
) -> Cost:
    """The sum of :func:`rollout_cost` (a run's: pass every attempt, reruns' replaced ones too — they were paid),
    priced a group of alike rollouts at a time (10,000 rollouts one by one took 75 – 130 ms: the open run's
    dollars, on the app's thread)."""
    total = Cost()
    for group in TokenGroup.add_up(rollouts):
        total = total + group_cost(group, table, policy_model, judge_model)
    return total


class RolloutPricer:
    """:func:`rollout_cost` of any rollout of ``store``, with its run's policy and judge models (read once per
    run): what a screen showing one rollout at a time needs."""

    def __init__(self, store: Store, table: PriceTable) -> None:
        self.store, self.table = store, table
        self._models: dict[str, tuple[str | None, str | None]] = {}

    def __call__(self, rec: RolloutRecord) -> Cost | None:
        models = self._models.get(rec.run_id)
        if models is None:
            try:
                run = self.store.get_run(rec.run_id)
            except SvgAgentError:  # gone meanwhile: no dollars to show
                return None
            models = self._models[rec.run_id] = (run.settings.get("model"), run.settings.get("judge_model"))
        return rollout_cost(rec, self.table, *models)


def usd_text(usd: float | None) -> str:
    """Dollars to print: "?" when unknown, cents to 4 decimals below a dollar ("$0.0123"), else 2 ("$12.34")."""
    if usd is None:
        return "?"
    return f"${usd:.4f}" if abs(usd) < 1 else f"${usd:,.2f}"


MAX_OVERRIDES = 500  # a project's svgagent.toml is untrusted text: the [prices] table is capped
MAX_NAME = 200


def check_overrides(table: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """The ``prices`` setting checked (ValueError naming the first problem): at most :data:`MAX_OVERRIDES` models,
    each with some of :data:`PRICE_KEYS` as dollars; a model the shipped table does not know needs input and
    output."""
    if len(table) > MAX_OVERRIDES:
        raise ValueError(f"at most {MAX_OVERRIDES} models")
    known = _shipped()["models"]
    out: dict[str, dict[str, float]] = {}
    for name, fields in table.items():
        if not name.strip() or len(name) > MAX_NAME:
            raise ValueError(f"a model name of 1 to {MAX_NAME} characters, not {name[:40]!r}")
        if not isinstance(fields, Mapping):
            raise ValueError(f"{name}: a table of prices (input, output, cached_input, image)")
        try:
            price = Price.from_mapping({**known.get(name, {}), **fields})
        except ValueError as err:
            raise ValueError(f"{name}: {err}") from None
        out[name] = {k: getattr(price, k) for k in fields}
    return out


def cost_text(cost: Cost) -> str:
    """``$0.0123 (policy $0.0100 · judge $0.0023)``: every place that shows a run's or a rollout's dollars."""
    return f"{usd_text(cost.total_usd)} (policy {usd_text(cost.policy_usd)} · judge {usd_text(cost.judge_usd)})"


@cache
def _shipped() -> dict[str, Any]:
    text = resources.files("svgagent.core").joinpath("data", "prices.json").read_text(encoding="utf-8")
    return json.loads(text)


def price_table(overrides: Mapping[str, Mapping[str, Any]] | None = None) -> PriceTable:
    """The shipped table with ``overrides`` (the ``prices`` setting: model → price fields) on top; an override may
    give only some fields of a model the table knows (``{"output": 0.5}``)."""
    data = _shipped()
    raw: dict[str, dict[str, Any]] = {name: dict(fields) for name, fields in data["models"].items()}
    for name, fields in (overrides or {}).items():
        raw[name] = {**raw.get(name, {}), **fields}
    expected = {k: v for k, v in data.get("expected_tokens", {}).items() if k != "about"}
    return PriceTable(
        {name: Price.from_mapping(fields) for name, fields in raw.items()},
        ExpectedTokens(**expected),
        str(data.get("as_of", "")),
        frozenset(overrides or ()),
    )
