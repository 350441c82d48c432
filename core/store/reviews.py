"""A person's review of one rollout: a mark per requirement (✓, ✗, or not decided yet) and the count it makes.

A review starts from the judge's verdict. In per-requirement mode the judge marked every requirement, so the marks
start as the judge's and a toggle flips one. In count mode the judge gave only a count ("judge 6/8"), so the marks
start undecided and the count starts as the judge's; each decision changes one mark, and the count moves only when
the marks no longer allow the judge's count: never fewer than the ✓ you gave, never more than ✓ plus undecided.
So marking one requirement ✗ on a 6/8 keeps 6/8 (the judge's six may all be among the other seven), a third ✗
makes it 5/8. A count you set yourself must be one your marks allow (:func:`count_refusal`): it never takes a mark
back. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

Mark = bool | None  # True ✓, False ✗, None not decided


def marks_of_judge(verdicts: Sequence[Sequence[Any]] | None, total: int) -> list[Mark]:
    """The judge's ✓/✗ per requirement (index i ↔ requirement i+1); None where the judge gave none (count mode)."""
    marks: list[Mark] = [None] * total
    for item in verdicts or ():
        index, fulfilled = (list(item) + [None, None])[:2]
        if isinstance(index, int) and 1 <= index <= total:
            marks[index - 1] = bool(fulfilled)
    return marks


def starting_marks(override: Sequence[Mark] | None, verdicts: Sequence[Sequence[Any]] | None, total: int) -> list[Mark]:
    """The marks a review continues from: the person's own, else the judge's (all undecided in count mode)."""
    if override is not None and len(override) == total:
        return list(override)
    return marks_of_judge(verdicts, total)


def toggled(marks: Sequence[Mark], index: int, judge: Sequence[Mark]) -> list[Mark]:
    """``marks`` with requirement ``index`` (0-based) changed and nothing else. Where the judge marked it: ✓ ↔ ✗.
    Where the judge gave only a count: undecided → ✗ → ✓ → undecided (a decision can be taken back)."""
    new = list(marks)
    current = new[index]
    if judge[index] is None:
        new[index] = {None: False, False: True, True: None}[current]
    else:
        new[index] = not (judge[index] if current is None else current)
    return new


def counted(marks: Sequence[Mark], judge_fulfilled: int | None) -> int:
    """The fulfilled count the marks make: the judge's count, kept within what the marks allow."""
    yes = sum(1 for m in marks if m is True)
    undecided = sum(1 for m in marks if m is None)
    base = yes if judge_fulfilled is None else judge_fulfilled
    return max(yes, min(base, yes + undecided))


def count_refusal(marks: Sequence[Mark], count: int) -> str | None:
    """Why your count ``count`` contradicts your marks (they allow from the ✓ given to ✓ plus undecided), None
    when they allow it."""
    total = len(marks)
    yes = sum(1 for m in marks if m is True)
    no = sum(1 for m in marks if m is False)
    if yes + no == total and count != yes:
        return f"all {total} requirements are marked: your count is {yes}/{total}; change a mark (space) to change it"
    if count > total - no:
        return f"{_marked(no)} ✗: at most {total - no}/{total}; unmark one first"
    if count < yes:
        return f"{_marked(yes)} ✓: at least {yes}/{total}; unmark one first"
    return None


def _marked(n: int) -> str:
    return f"{n} requirement{'s are' if n != 1 else ' is'} marked"


def complete(marks: Sequence[Mark] | None) -> list[bool] | None:
    """The marks as plain ✓/✗ when every requirement is decided, else None."""
    if marks is None or any(m is None for m in marks):
        return None
    return [bool(m) for m in marks]
