"""Evaluator health: whether a run's rewards can be trusted, read off its rollouts, step by step.

The silent failures of RFT are the reward's, not the model's: the evaluator gives every sample of a prompt the same
score (no learning signal), fails to score at all, or is gamed. A *step* is one run (a training run's step, or any
run given as one); a *group* is the samples of one prompt (dataset row) at one step. The checks:

- ``flat_groups``: per step, the share of groups (two or more valid scores) whose scores are all equal; a warning
  for a step where it is at least :data:`FLAT_SHARE` (Fireworks ends a job ``EARLY_STOPPED`` when every rollout
  scores alike);
- ``invalid_scores``: per step, the share of finished rollouts without a valid score (an endpoint or the judge
  failed them); a warning above :data:`INVALID_SHARE`. Rollouts nobody judged (``serve`` without ``--judge``) are
  not counted;
- ``same_svg``: the same SVG (whitespace aside) returned for different prompts;
- ``text_suspects``: reward-hacking suspects, pictures that are mostly text (at least :data:`TEXT_CHARS`
  characters covering at least :data:`TEXT_AREA` of the page) or whose text repeats the requirements (at least
  :data:`ECHO_WORDS` of their words, and at least :data:`ECHO_SHARE` of them) — listed with their rollout ids, so a
  screen can show their pictures;
- ``unchanged_rise``: per prompt, between the first and the last step that scored it, the mean score rose by at
  least :data:`RISE` while the picture barely changed: each last-step picture has a first-step picture at least
  :data:`SAME_PICTURE` alike (:func:`~svgagent.core.analysis.picture_traits.similarity`), and those same pictures
  score at least :data:`RISE` more now. (A model that learned to draw its good picture more often raises the mean
  too, but its pictures keep their scores: that is not flagged.)

:class:`HealthTracker` keeps what each rollout contributes (:class:`RolloutTraits`, its SVG and PNG read once) and
reads again only the rollouts whose ``updated`` stamp changed, and decodes only the pictures the unchanged-rise
check compares (the first and last steps of a prompt whose score rose), so a served training run can be checked on
every refresh; :func:`run_health` is one pass of it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from svgagent.core.analysis.picture_traits import (
    NO_TEXT,
    TextTraits,
    similarity,
    svg_key,
    text_traits,
    thumbnail,
)
from svgagent.core.scoring.models import RolloutStatus
from svgagent.core.store.run_store import Store

FLAT_SHARE = 0.5
INVALID_SHARE = 0.1
TEXT_CHARS = 80
TEXT_AREA = 0.15
ECHO_WORDS = 6
ECHO_SHARE = 0.4
RISE = 0.15
SAME_PICTURE = 0.97
LISTED = 20  # rollout ids kept per finding (the counts stay whole)
_CHUNK = 200
_TERMINAL = (RolloutStatus.SCORED.value, RolloutStatus.FAILED.value)


@dataclass(frozen=True, slots=True)
class StepRef:
    """One step: its number and the run that holds its rollouts."""

    step: int
    run_id: str


@dataclass(frozen=True, slots=True)
class RolloutTraits:
    """What the checks need of one rollout, read once (its SVG and PNG are not kept)."""

    rollout_id: str
    run_id: str
    row_index: int
    row_id: str
    prompt: str
    terminal: bool
    judged: bool  # it has a score, or was failed without one (not a rollout nobody judged)
    valid: bool
    score: float | None  # effective (a person's override first), when valid
    svg_key: str | None
    text: TextTraits
    has_picture: bool
    thumb: bytes | None = None  # read only for a prompt whose score rose (see HealthTracker)


@dataclass(frozen=True, slots=True)
class StepHealth:
    step: int
    run_id: str
    rollouts: int
    finished: int
    invalid: int
    invalid_share: float | None  # of the finished, judged rollouts
    groups: int  # prompts with two or more valid scores at this step
    flat_groups: int
    flat_share: float | None


@dataclass(frozen=True, slots=True)
class SameSvg:
    rows: tuple[str, ...]  # the row ids (prompts) that got it
    rollouts: int
    rollout_ids: tuple[str, ...]
    steps: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TextSuspect:
    rollout_id: str
    step: int
    row_id: str
    score: float | None
    chars: int
    area_share: float
    echoed: int
    echo_share: float
    why: str  # "mostly text", "repeats the requirements", or both


@dataclass(frozen=True, slots=True)
class UnchangedRise:
    row_id: str
    prompt: str
    first_step: int
    last_step: int
    mean_first: float
    mean_last: float
    similarity: float  # of the last step's pictures to their closest first-step picture, on average
    same_picture_rise: float  # the mean score gain of those same pictures
    rollout_ids: tuple[str, str]  # a first-step picture and its last-step look-alike


@dataclass(frozen=True, slots=True)
class HealthWarning:
    check: str
    message: str
    steps: tuple[int, ...] = ()
    rollout_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class HealthReport:
    steps: tuple[StepHealth, ...]
    same_svg: tuple[SameSvg, ...]
    text_suspects: tuple[TextSuspect, ...]
    unchanged_rises: tuple[UnchangedRise, ...]
    warnings: tuple[HealthWarning, ...] = field(default=())
    judged: int = 0  # rollouts with a score or a failure to score (0: nothing to check the scores of)

    @property
    def ok(self) -> bool:
        return not self.warnings

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["ok"] = self.ok
        data["thresholds"] = {
            "flat_share": FLAT_SHARE,
            "invalid_share": INVALID_SHARE,
            "text_chars": TEXT_CHARS,
            "text_area": TEXT_AREA,
            "echo_words": ECHO_WORDS,
            "echo_share": ECHO_SHARE,
            "rise": RISE,
            "same_picture": SAME_PICTURE,
        }
        return data

    def lines(self) -> list[str]:
        """One line per warning, or one saying all is well (plain text: ids and numbers only)."""
        if not self.judged:
            return ["evaluator health: no scored rollouts yet"]
        if not self.warnings:
            return ["evaluator health: no warning"]
        return [f"⚠ {w.message}" for w in self.warnings]


# --- reading the rollouts ---------------------------------------------------------------------------------------


def _traits(row: Any) -> RolloutTraits:
    (rollout_id, run_id, row_index, row_id, status, score, override, valid, prompt, requirements, svg, has_png) = row
    terminal = status in _TERMINAL
    counts = terminal and (override is not None or (bool(valid) and score is not None))
    try:
        wanted = json.loads(requirements or "[]")
    except ValueError:
        wanted = []
    reqs = [str(r) for r in wanted] if isinstance(wanted, list) else []
    return RolloutTraits(
        rollout_id=rollout_id,
        run_id=run_id,
        row_index=row_index,
        row_id=row_id,
        prompt=(prompt or "")[:200],
        terminal=terminal,
        judged=terminal and (valid is not None or override is not None),
        valid=counts,
        score=(override if override is not None else score) if counts else None,
        svg_key=svg_key(svg) if svg else None,
        text=text_traits(svg, reqs) if svg else NO_TEXT,
        has_picture=bool(has_png),
    )


class HealthTracker:
    """The rollouts' traits across refreshes: :meth:`update` reads only what changed since the last call."""

    def __init__(self) -> None:
        self._known: dict[str, tuple[str, RolloutTraits]] = {}  # rollout id -> (its updated stamp, traits)
        self._thumbed: set[str] = set()  # rollouts whose picture was read (a thumbnail, or None: unreadable)

    def update(self, store: Store, steps: Sequence[StepRef]) -> HealthReport:
        runs = [s.run_id for s in steps]
        stamps: dict[str, str] = {}
        for start in range(0, len(runs), 500):
            chunk = runs[start : start + 500]
            for rollout_id, updated in store.query(
                "SELECT rollout_id, updated FROM rollouts WHERE is_current = 1 AND run_id IN"
                f" ({','.join('?' * len(chunk))})",
                chunk,
            ):
                stamps[rollout_id] = updated
        for gone in [k for k in self._known if k not in stamps]:
            del self._known[gone]
        stale = [k for k, stamp in stamps.items() if k not in self._known or self._known[k][0] != stamp]
        for start in range(0, len(stale), _CHUNK):
            chunk = stale[start : start + _CHUNK]
            for row in store.query(
                "SELECT rollout_id, run_id, row_index, row_id, status, score, override_score, is_score_valid,"
                " prompt, requirements_json, svg, png IS NOT NULL FROM rollouts"
                f" WHERE rollout_id IN ({','.join('?' * len(chunk))})",
                chunk,
            ):
                self._known[row[0]] = (stamps[row[0]], _traits(tuple(row)))
                self._thumbed.discard(row[0])
        self._read_pictures(store, steps)
        return assess([t for _, t in self._known.values()], steps)

    def _read_pictures(self, store: Store, steps: Sequence[StepRef]) -> None:
        """Thumbnails of the pictures the unchanged-rise check compares: the first and last steps of the prompts
        whose score rose (decoding every PNG of a long training would be most of the work)."""
        step_of = {s.run_id: s.step for s in steps}
        traits = [t for _, t in self._known.values() if t.run_id in step_of]
        wanted = [
            r.rollout_id
            for first, last in _rising_rows(traits, step_of)
            for r in (*first, *last)
            if r.has_picture and r.rollout_id not in self._thumbed
        ]
        for start in range(0, len(wanted), _CHUNK):
            chunk = wanted[start : start + _CHUNK]
            for rollout_id, png in store.query(
                f"SELECT rollout_id, png FROM rollouts WHERE rollout_id IN ({','.join('?' * len(chunk))})", chunk
            ):
                stamp, known = self._known[rollout_id]
                self._known[rollout_id] = (stamp, replace(known, thumb=thumbnail(png)))
                self._thumbed.add(rollout_id)


def run_health(store: Store, steps: Sequence[StepRef]) -> HealthReport:
    """The health of ``steps`` (runs, in step order) as the store holds them now."""
    return HealthTracker().update(store, steps)


# --- the checks ---------------------------------------------------------------------------------------------------


def _step_health(ref: StepRef, rollouts: list[RolloutTraits]) -> StepHealth:
    finished = [r for r in rollouts if r.terminal]
    judged = [r for r in finished if r.judged]
    invalid = sum(1 for r in judged if not r.valid)
    by_row: dict[int, list[float]] = {}
    for r in judged:
        if r.valid and r.score is not None:
            by_row.setdefault(r.row_index, []).append(r.score)
    groups = [scores for scores in by_row.values() if len(scores) >= 2]
    flat = sum(1 for scores in groups if max(scores) - min(scores) < 1e-9)
    return StepHealth(
        step=ref.step,
        run_id=ref.run_id,
        rollouts=len(rollouts),
        finished=len(finished),
        invalid=invalid,
        invalid_share=invalid / len(judged) if judged else None,
        groups=len(groups),
        flat_groups=flat,
        flat_share=flat / len(groups) if groups else None,
    )


def _same_svgs(traits: list[RolloutTraits], step_of: dict[str, int]) -> list[SameSvg]:
    by_key: dict[str, list[RolloutTraits]] = {}
    for r in traits:
        if r.svg_key is not None:
            by_key.setdefault(r.svg_key, []).append(r)
    found = []
    for same in by_key.values():
        rows = sorted({r.row_id for r in same})
        if len({r.row_index for r in same}) < 2:
            continue
        same.sort(key=lambda r: (step_of[r.run_id], r.row_index, r.rollout_id))
        found.append(
            SameSvg(
                rows=tuple(rows[:LISTED]),
                rollouts=len(same),
                rollout_ids=tuple(r.rollout_id for r in same[:LISTED]),
                steps=tuple(sorted({step_of[r.run_id] for r in same})),
            )
        )
    found.sort(key=lambda s: (-len(s.rows), -s.rollouts))
    return found


def _text_suspects(traits: list[RolloutTraits], step_of: dict[str, int]) -> list[TextSuspect]:
    found = []
    for r in traits:
        t = r.text
        reasons = []
        if t.chars >= TEXT_CHARS and t.area_share >= TEXT_AREA:
            reasons.append("mostly text")
        if t.echoed >= ECHO_WORDS and t.echo_share >= ECHO_SHARE:
            reasons.append("repeats the requirements")
        if reasons:
            found.append(
                TextSuspect(
                    r.rollout_id,
                    step_of[r.run_id],
                    r.row_id,
                    r.score,
                    t.chars,
                    round(t.area_share, 3),
                    t.echoed,
                    round(t.echo_share, 3),
                    " and ".join(reasons),
                )
            )
    found.sort(key=lambda s: (s.step, s.row_id, s.rollout_id))
    return found


def _mean(rollouts: list[RolloutTraits]) -> float:
    return sum(r.score or 0.0 for r in rollouts) / len(rollouts)


def _rising_rows(
    traits: list[RolloutTraits], step_of: dict[str, int]
) -> list[tuple[list[RolloutTraits], list[RolloutTraits]]]:
    """(first step's, last step's) valid rollouts of each prompt whose mean score rose by at least :data:`RISE`."""
    by_row: dict[int, dict[int, list[RolloutTraits]]] = {}
    for r in traits:
        if r.valid and r.score is not None:
            by_row.setdefault(r.row_index, {}).setdefault(step_of[r.run_id], []).append(r)
    rising = []
    for steps in by_row.values():
        if len(steps) >= 2:
            first, last = steps[min(steps)], steps[max(steps)]
            if _mean(last) - _mean(first) >= RISE:
                rising.append((first, last))
    return rising


def _unchanged_rises(traits: list[RolloutTraits], step_of: dict[str, int]) -> list[UnchangedRise]:
    found = []
    for first, last in _rising_rows(traits, step_of):
        first_step, last_step = step_of[first[0].run_id], step_of[last[0].run_id]
        mean_first, mean_last = _mean(first), _mean(last)
        before = [r for r in first if r.thumb is not None]
        after = [r for r in last if r.thumb is not None]
        if not before or not after:
            continue
        matches = []
        for r in after:
            best = max(before, key=lambda b: similarity(b.thumb or b"", r.thumb or b""))
            matches.append((similarity(best.thumb or b"", r.thumb or b""), best, r))
        alike = sum(m[0] for m in matches) / len(matches)
        gain = sum((r.score or 0.0) - (b.score or 0.0) for _, b, r in matches) / len(matches)
        if alike < SAME_PICTURE or gain < RISE:
            continue
        top = max(matches, key=lambda m: ((m[2].score or 0.0) - (m[1].score or 0.0), m[0]))
        found.append(
            UnchangedRise(
                row_id=last[0].row_id,
                prompt=last[0].prompt,
                first_step=first_step,
                last_step=last_step,
                mean_first=round(mean_first, 4),
                mean_last=round(mean_last, 4),
                similarity=round(alike, 4),
                same_picture_rise=round(gain, 4),
                rollout_ids=(top[1].rollout_id, top[2].rollout_id),
            )
        )
    found.sort(key=lambda u: u.row_id)
    return found


def _steps_text(steps: Iterable[int]) -> str:
    shown = sorted(set(steps))
    text = ", ".join(str(s) for s in shown[:8])
    return ("step " if len(shown) == 1 else "steps ") + text + (f" and {len(shown) - 8} more" if len(shown) > 8 else "")


def _warnings(
    steps: list[StepHealth], same: list[SameSvg], suspects: list[TextSuspect], rises: list[UnchangedRise]
) -> list[HealthWarning]:
    out = []
    flat = [s for s in steps if s.flat_share is not None and s.flat_share >= FLAT_SHARE]
    if flat:
        worst = max(flat, key=lambda s: (s.flat_share or 0.0, s.step))
        out.append(
            HealthWarning(
                "flat_groups",
                f"no learning signal: at {_steps_text(s.step for s in flat)} at least {FLAT_SHARE:.0%} of the"
                f" prompts' samples all scored alike (step {worst.step}: {worst.flat_groups}/{worst.groups})",
                tuple(s.step for s in flat),
            )
        )
    invalid = [s for s in steps if s.invalid_share is not None and s.invalid_share > INVALID_SHARE]
    if invalid:
        worst = max(invalid, key=lambda s: (s.invalid_share or 0.0, s.step))
        out.append(
            HealthWarning(
                "invalid_scores",
                f"invalid scores: over {INVALID_SHARE:.0%} of the finished rollouts at"
                f" {_steps_text(s.step for s in invalid)} have no valid score (step {worst.step}:"
                f" {worst.invalid}/{worst.finished})",
                tuple(s.step for s in invalid),
            )
        )
    if same:
        rollouts = [i for s in same for i in s.rollout_ids]
        out.append(
            HealthWarning(
                "same_svg",
                f"the same SVG for different prompts: {len(same)} SVG{'s' if len(same) > 1 else ''} returned for"
                f" {sum(len(s.rows) for s in same)} prompts ({sum(s.rollouts for s in same)} rollouts)",
                tuple(sorted({st for s in same for st in s.steps})),
                tuple(rollouts[:LISTED]),
            )
        )
    if suspects:
        out.append(
            HealthWarning(
                "text_suspects",
                f"reward-hacking suspects: {len(suspects)} picture{'s' if len(suspects) > 1 else ''} mostly text or"
                f" repeating the requirements as text, at {_steps_text(s.step for s in suspects)}",
                tuple(sorted({s.step for s in suspects})),
                tuple(s.rollout_id for s in suspects[:LISTED]),
            )
        )
    if rises:
        out.append(
            HealthWarning(
                "unchanged_rise",
                f"score rising while the picture barely changes: {len(rises)} prompt{'s' if len(rises) > 1 else ''}"
                f" (e.g. {rises[0].row_id}: {rises[0].mean_first:.2f} → {rises[0].mean_last:.2f} between steps"
                f" {rises[0].first_step} and {rises[0].last_step}, pictures {rises[0].similarity:.0%} alike)",
                tuple(sorted({r.last_step for r in rises})),
                tuple(i for r in rises[:LISTED] for i in r.rollout_ids),
            )
        )
    return out


def assess(traits: Iterable[RolloutTraits], steps: Sequence[StepRef]) -> HealthReport:
    """Every check over the rollouts of ``steps`` (pure: :class:`HealthTracker` reads them)."""
    step_of = {s.run_id: s.step for s in steps}
    mine = [t for t in traits if t.run_id in step_of]
    by_run: dict[str, list[RolloutTraits]] = {}
    for t in mine:
        by_run.setdefault(t.run_id, []).append(t)
    step_rows = [_step_health(ref, by_run.get(ref.run_id, [])) for ref in steps]
    same, suspects, rises = _same_svgs(mine, step_of), _text_suspects(mine, step_of), _unchanged_rises(mine, step_of)
    return HealthReport(
        steps=tuple(step_rows),
        same_svg=tuple(same),
        text_suspects=tuple(suspects),
        unchanged_rises=tuple(rises),
        warnings=tuple(_warnings(step_rows, same, suspects, rises)),
        judged=sum(1 for t in mine if t.judged),
    )
