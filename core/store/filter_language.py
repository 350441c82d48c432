"""A small query language for picking rollouts, shared by the TUI's filter and (later) the CLI.

A query is a list of terms separated by spaces; every term must hold (AND). Put ``-`` in front of a term to
negate it. Terms:

- comparisons ``FIELD OP NUMBER`` with OP one of ``< <= > >= = !=``: ``score<0.5``, ``score>=0.8``,
  ``tokens>2000``, ``gen>10``. Fields: ``score`` (the human override when there is one), ``judge_score``
  (always the judge's), ``fulfilled``, ``total``, ``gen`` / ``judge`` / ``render`` (seconds), ``tokens``,
  ``row``, ``sample``, ``attempt``. A rollout without the value (not scored yet) never matches a comparison.
- ``status:NAME`` (a prefix is enough: ``status:fail``) — the word the table shows: queued, generating, rendering,
  judging, then the outcome scored · invalid · failed (core/store/outcomes.py) —, ``row:3`` (row index, or row id ``row:row_3``),
  ``sample:1``, ``attempt:2``, ``id:TEXT`` (the rollout's id, or the eval-protocol rollout id a served rollout came
  with), ``prompt:TEXT``, ``error:TEXT`` (error or reason contains TEXT).
- keywords: ``invalid`` (the outcome: finished without a valid score, nothing broke), ``valid`` (scored), ``overridden``, ``cached``, ``marked``.
- anything else is free text, matched case-insensitively against the prompt, the row id and a served rollout's
  eval-protocol rollout id (so the id the Fireworks dashboard shows finds its rollout); quote it to keep
  spaces: ``"red circle"``.

Pure: no I/O, no UI. ``parse_query`` raises :class:`QueryError` with one line saying what is wrong.
"""

from __future__ import annotations

import difflib
import operator
import re
import shlex
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field

from svgagent.core.scoring.errors import SvgAgentError
from svgagent.core.scoring.models import RolloutStatus
from svgagent.core.store.outcomes import STATE_WORDS, Outcome
from svgagent.core.store.typed_rows import RolloutRecord

Predicate = Callable[[RolloutRecord, Collection[str]], bool]


class QueryError(SvgAgentError):
    """The filter text cannot be understood; the message names the term."""


def _effective_fulfilled(r: RolloutRecord) -> float | None:
    return r.effective_fulfilled


NUMERIC_FIELDS: dict[str, Callable[[RolloutRecord], float | int | None]] = {
    "score": lambda r: r.effective_score,
    "judge_score": lambda r: r.score,
    "fulfilled": _effective_fulfilled,
    "total": lambda r: r.total,
    "gen": lambda r: r.generation_s,
    "judge": lambda r: r.judge_s,
    "render": lambda r: r.render_s,
    "tokens": lambda r: r.tokens if (r.prompt_tokens is not None or r.completion_tokens is not None) else None,
    "row": lambda r: r.row_index,
    "sample": lambda r: r.sample_index,
    "attempt": lambda r: r.attempt,
}

KEYWORDS: dict[str, Predicate] = {
    "invalid": lambda r, m: r.outcome is Outcome.INVALID,  # scored · invalid · failed: core/store/outcomes.py
    "valid": lambda r, m: r.counts_toward_mean,
    "overridden": lambda r, m: r.overridden,
    "cached": lambda r, m: r.cached,
    "marked": lambda r, m: r.rollout_id in m,
}

_OPS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le,
    ">=": operator.ge,
    "!=": lambda a, b: abs(a - b) > 1e-9,
    "==": lambda a, b: abs(a - b) <= 1e-9,
    "=": lambda a, b: abs(a - b) <= 1e-9,
    "<": operator.lt,
    ">": operator.gt,
}
_OPERATORS = r"(<=|>=|!=|==|=|<|>)"
_COMPARISON = re.compile(rf"^([a-z_]+)\s*{_OPERATORS}\s*(.+)$")
_PAIR = re.compile(r"^([a-z_]+):(.+)$")
_OPEN_COMPARISON = re.compile(rf"^([a-z_]+)\s*{_OPERATORS}$")  # as typed so far: the value still to come
_OPEN_PAIR = re.compile(r"^([a-z_]+):$")


@dataclass(frozen=True)
class Query:
    """A parsed query; ``matches`` tells whether one rollout satisfies every term."""

    text: str
    terms: tuple[str, ...] = ()
    free_text: tuple[str, ...] = ()  # the terms read as free text (not a keyword, field or comparison)
    _predicates: tuple[Predicate, ...] = field(default=(), repr=False, compare=False)

    @property
    def empty(self) -> bool:
        return not self._predicates

    def matches(self, record: RolloutRecord, marked: Collection[str] = frozenset()) -> bool:
        return all(p(record, marked) for p in self._predicates)

    def filter(self, records: Iterable[RolloutRecord], marked: Collection[str] = frozenset()) -> list[RolloutRecord]:
        return [r for r in records if self.matches(r, marked)]


def parse_query(text: str) -> Query:
    """Parse ``text`` (see the module docstring). An empty or blank text matches everything."""
    try:
        words = shlex.split(text)
    except ValueError as err:
        raise QueryError(f"cannot read the filter: {err}") from None
    predicates: list[Predicate] = []
    free: list[str] = []
    for word in words:
        negate = word.startswith("-") and len(word) > 1 and not _is_number(word)
        body = word[1:] if negate else word
        pred = _term(body)
        if pred is None:
            free.append(body)
            pred = _free_text(body)
        predicates.append(_negated(pred) if negate else pred)
    return Query(text=text, terms=tuple(words), free_text=tuple(free), _predicates=tuple(predicates))


def unmatched_terms(query: Query, records: Iterable[RolloutRecord]) -> list[str]:
    """One line for each free-text term that no rollout's prompt or row id contains — most often a filter term
    mistyped (``failed`` for ``status:failed``, ``overriden``): say so, with the closest term, rather than show
    an empty table without a word."""
    if not query.free_text:
        return []
    haystacks = [_free_haystack(r) for r in records]
    notes = []
    for word in query.free_text:
        needle = word.lower()
        if any(needle in text for text in haystacks):
            continue
        unfinished = _unfinished_term(needle)
        if unfinished is not None:
            notes.append(unfinished)
            continue
        hint = suggest_term(word)
        notes.append(
            f"{word!r} is not a filter term and no prompt or row id contains it"
            + (f" — did you mean {hint}?" if hint else "")
        )
    return notes


def _unfinished_term(word: str) -> str | None:
    """What a term still lacks when it is a field and an operator or a colon with nothing after (``score<``,
    ``status:``, as the filter reads it while the person types); None when it is not such a term."""
    comparison = _OPEN_COMPARISON.match(word)
    if comparison and comparison.group(1) in NUMERIC_FIELDS:
        return f"{word!r} needs a number after it, e.g. {word}0.5"
    pair = _OPEN_PAIR.match(word)
    if pair and pair.group(1) in _PAIR_TERMS:
        if pair.group(1) == "status":
            return f"{word!r} needs a status: {', '.join(STATE_WORDS)}"
        return f"{word!r} needs a value after it"
    if pair:
        return f"{word!r}: no such field (known: {', '.join(f'{k}:' for k in _PAIR_TERMS)})"
    return None


def suggest_term(word: str) -> str | None:
    """The filter term ``word`` was most likely meant to be (None when nothing is close)."""
    lowered = word.lower()
    if lowered in NUMERIC_FIELDS:
        return f"a comparison such as {lowered}>=1"
    statuses = [
        s
        for s in STATE_WORDS
        if s not in KEYWORDS and len(lowered) >= 3 and (s.startswith(lowered) or lowered.startswith(s))
    ]  # `invalid` is a keyword of its own: suggested as it is
    if statuses:
        return f"status:{statuses[0]}"
    vocabulary = [
        *KEYWORDS,
        *(f"{name}:" for name in _PAIR_TERMS),
        *(f"{name}<" for name in NUMERIC_FIELDS),
        *(f"status:{s}" for s in STATE_WORDS),
    ]
    close = difflib.get_close_matches(lowered, vocabulary, n=1, cutoff=0.75)
    return close[0] if close else None


def _negated(pred: Predicate) -> Predicate:
    return lambda r, m: not pred(r, m)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _term(word: str) -> Predicate | None:
    """The predicate of a filter term (None: ``word`` is free text)."""
    lowered = word.lower()
    if lowered in KEYWORDS:
        return KEYWORDS[lowered]
    comparison = _COMPARISON.match(lowered)
    if comparison and comparison.group(1) in NUMERIC_FIELDS:
        return _comparison(*comparison.groups(), word)
    if comparison and not _PAIR.match(lowered):
        raise QueryError(f"unknown field {comparison.group(1)!r} in {word!r} (fields: {', '.join(NUMERIC_FIELDS)})")
    pair = _PAIR.match(word)
    if pair and pair.group(1).lower() in _PAIR_TERMS:
        return _PAIR_TERMS[pair.group(1).lower()](pair.group(2), word)
    if pair:
        known = ", ".join(f"{k}:" for k in _PAIR_TERMS)
        raise QueryError(f"unknown field {pair.group(1)!r} in {word!r} (known: {known})")
    return None


def _free_haystack(r: RolloutRecord) -> str:
    """What free text is matched against: the prompt, the row id, the eval-protocol rollout id."""
    return f"{r.prompt}\n{r.row_id}\n{r.ep_rollout_id or ''}".lower()


def _free_text(word: str) -> Predicate:
    needle = word.lower()
    return lambda r, m: (
        needle in r.prompt.lower() or needle in r.row_id.lower() or needle in (r.ep_rollout_id or "").lower()
    )


def _comparison(name: str, op: str, raw: str, word: str) -> Predicate:
    try:
        bound = float(raw)
    except ValueError:
        raise QueryError(f"{word!r}: {raw!r} is not a number") from None
    getter, compare = NUMERIC_FIELDS[name], _OPS[op]

    def pred(r: RolloutRecord, m: Collection[str]) -> bool:
        value = getter(r)
        return value is not None and compare(float(value), bound)

    return pred


def _status(value: str, word: str) -> Predicate:
    wanted = {s for s in STATE_WORDS if s.startswith(value.lower())}  # the word the table shows: scored, not failed,
    if not wanted:  # for the model's valid 0
        raise QueryError(f"{word!r}: no status starts with {value!r} ({', '.join(STATE_WORDS)})")
    return lambda r, m: r.state in wanted


def _int_field(name: str) -> Callable[[str, str], Predicate]:
    getter = NUMERIC_FIELDS[name]

    def build(value: str, word: str) -> Predicate:
        try:
            wanted = int(value)
        except ValueError:
            if name == "row":
                text = value.lower()
                return lambda r, m: r.row_id.lower() == text
            raise QueryError(f"{word!r}: {value!r} is not a whole number") from None
        return lambda r, m: getter(r) == wanted

    return build


def _contains(*getters: Callable[[RolloutRecord], str | None]) -> Callable[[str, str], Predicate]:
    def build(value: str, word: str) -> Predicate:
        text = value.lower()
        return lambda r, m: any(text in (g(r) or "").lower() for g in getters)

    return build


_PAIR_TERMS: dict[str, Callable[[str, str], Predicate]] = {
    "status": _status,
    "row": _int_field("row"),
    "sample": _int_field("sample"),
    "attempt": _int_field("attempt"),
    "id": _contains(lambda r: r.rollout_id, lambda r: r.ep_rollout_id),
    "prompt": _contains(lambda r: r.prompt),
    "error": _contains(lambda r: r.error, lambda r: r.reason if r.status is RolloutStatus.FAILED else None),
}


# --- sorting -------------------------------------------------------------------------------------------------
_STATUS_ORDER = {s: i for i, s in enumerate(RolloutStatus)}

SORT_FIELDS: dict[str, Callable[[RolloutRecord], object]] = {
    "rollout": lambda r: (r.row_index, r.sample_index, r.attempt),
    "prompt": lambda r: " ".join(r.prompt.split()).casefold(),
    "row": lambda r: (r.row_index, r.sample_index),
    "sample": lambda r: (r.sample_index, r.row_index),
    "status": lambda r: _STATUS_ORDER[r.status],
    "score": lambda r: r.effective_score,
    "fulfilled": lambda r: r.effective_fulfilled,
    "gen": lambda r: r.generation_s,
    "judge": lambda r: r.judge_s,
    "tokens": NUMERIC_FIELDS["tokens"],
}


def sort_records(records: Sequence[RolloutRecord], by: str, *, reverse: bool = False) -> list[RolloutRecord]:
    """Records ordered by a ``SORT_FIELDS`` key; rows without the value go last in either direction.

    Ties keep (row, sample) order, so the result is stable and deterministic.
    """
    key = SORT_FIELDS[by]
    base = sorted(records, key=lambda r: (r.row_index, r.sample_index))
    present = [r for r in base if key(r) is not None]
    missing = [r for r in base if key(r) is None]
    return sorted(present, key=key, reverse=reverse) + missing  # type: ignore[arg-type]
