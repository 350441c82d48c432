"""The parts that explain a rollout's score, besides the score itself: one list, one reading.

Read by the RFT evaluator (each becomes a metric of its Eval Protocol ``EvaluateResult``, so the platform shows
them beside the reward; see ``core/rft/bundle_entry.py``) and by svgagent's own views (the training view plots
their means per step from the run store: ``core/analysis/step_components.py``). Nothing here is stored: a rollout
already keeps every part (its SVG, picture, requirements, count, verdicts, answer and tokens).

- ``svg_found``: 1 when an SVG was extracted from the answer, else 0;
- ``rendered``: 1 when that SVG became a picture, else 0 (no SVG: 0);
- ``requirement_count``: the row's numbered requirements;
- ``fulfilled``: how many of them the judge counted as fulfilled (none when it gave no usable count);
- ``answer_chars``: the answer's length in characters;
- ``completion_tokens`` / ``prompt_tokens``: the policy call's tokens, when the caller knows them;
- ``requirement_K`` (K = 1, 2, …): the judge's verdict on requirement K (1 fulfilled, 0 not), only when the judge
  mode gives one verdict per requirement.

Part of the evaluator kernel the RFT bundle copies: the standard library only, Python 3.10.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Component:
    key: str
    label: str
    share: bool  # a yes/no per rollout, so its mean is a share in 0..1; else a count


SVG_FOUND = Component("svg_found", "SVG found", True)
RENDERED = Component("rendered", "rendered", True)
REQUIREMENT_COUNT = Component("requirement_count", "requirements", False)
FULFILLED = Component("fulfilled", "requirements fulfilled", False)
ANSWER_CHARS = Component("answer_chars", "answer length (chars)", False)
COMPLETION_TOKENS = Component("completion_tokens", "completion tokens", False)
PROMPT_TOKENS = Component("prompt_tokens", "prompt tokens", False)
COMPONENTS: tuple[Component, ...] = (
    SVG_FOUND,
    RENDERED,
    REQUIREMENT_COUNT,
    FULFILLED,
    ANSWER_CHARS,
    COMPLETION_TOKENS,
    PROMPT_TOKENS,
)
BY_KEY = {c.key: c for c in COMPONENTS}
REQUIREMENT_PREFIX = "requirement_"


def requirement_key(index: int) -> str:
    """The metric of the judge's verdict on requirement ``index`` (1-based, as the prompt numbers them)."""
    return f"{REQUIREMENT_PREFIX}{index}"


def rollout_components(
    *,
    answer: str | None,
    svg_found: bool,
    rendered: bool,
    requirement_count: int,
    fulfilled: int | None,
    completion_tokens: int | None = None,
    prompt_tokens: int | None = None,
    verdicts: Iterable[tuple[int, bool]] | None = None,
) -> dict[str, float | None]:
    """Every component of one rollout (None: not known for it), then ``requirement_K`` per verdict given."""
    out: dict[str, float | None] = {
        SVG_FOUND.key: 1.0 if svg_found else 0.0,
        RENDERED.key: 1.0 if svg_found and rendered else 0.0,
        REQUIREMENT_COUNT.key: float(requirement_count),
        FULFILLED.key: None if fulfilled is None else float(fulfilled),
        ANSWER_CHARS.key: float(len(answer or "")),
        COMPLETION_TOKENS.key: None if completion_tokens is None else float(completion_tokens),
        PROMPT_TOKENS.key: None if prompt_tokens is None else float(prompt_tokens),
    }
    for index, ok in verdicts or ():
        out[requirement_key(index)] = 1.0 if ok else 0.0
    return out


def describe(key: str, value: float | None) -> str:
    """One line saying what a component's value means, for a metric's reason."""
    if value is None:
        return "not known for this rollout"
    if key.startswith(REQUIREMENT_PREFIX):
        return f"requirement {key[len(REQUIREMENT_PREFIX) :]} {'fulfilled' if value else 'not fulfilled'}"
    component = BY_KEY.get(key)
    if component is None:
        return f"{value:g}"
    if component.share:
        return f"{component.label}: {'yes' if value else 'no'}"
    return f"{component.label}: {value:g}"
