"""How often the judge agreed with a person: a run's review overrides read as human labels.

A rollout a person overrode in review (``RolloutRecord.override_*``) is a label; the judge's own verdict of the same
rollout (its count, its per-requirement marks in judge mode ``per-requirement``) is the prediction. Compared:

- **pass/fail**: the judge's score and the person's against the run's threshold (score ≥ threshold passes), a 2×2
  table and Cohen's kappa — every labelled rollout, in either judge mode;
- **requirements** (per-requirement mode): each requirement the judge marked and the person decided (✓/✗) is one
  pair, a 2×2 table and Cohen's kappa; also per requirement of the dataset, which ones they disagree on most;
- **counts** (count mode, and every labelled rollout): the judge's fulfilled count against the person's — equal,
  judge higher, judge lower, mean absolute difference in requirements. A count is not binary: no kappa.

Only overrides are labels: a rollout a person looked at and left alone stored nothing, so these numbers describe the
rollouts people corrected or confirmed by overriding, not a random sample. An overridden rollout whose judge gave no
valid verdict (an endpoint or an unusable answer) has nothing to compare: counted in ``without_judge``.

Cohen's kappa = (p_o − p_e) / (1 − p_e), p_o the share of pairs that agree, p_e the agreement expected by chance
from each side's own rates; undefined (None) with no pairs or when p_e = 1 (both sides said the same thing always).
Pure except :func:`run_agreement`, which reads a stored run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from svgagent.core.store.reviews import marks_of_judge
from svgagent.core.store.run_store import Store
from svgagent.core.store.typed_rows import DEFAULT_THRESHOLD, RolloutRecord

DEFAULT_WORST = 10


def cohen_kappa(both_yes: int, judge_only: int, person_only: int, both_no: int) -> float | None:
    """Cohen's kappa of a 2×2 table (judge ✓ person ✓, judge ✓ person ✗, judge ✗ person ✓, judge ✗ person ✗)."""
    n = both_yes + judge_only + person_only + both_no
    if n == 0:
        return None
    observed = (both_yes + both_no) / n
    judge_yes = (both_yes + judge_only) / n
    person_yes = (both_yes + person_only) / n
    chance = judge_yes * person_yes + (1 - judge_yes) * (1 - person_yes)
    if chance >= 1 - 1e-12:
        return None
    return (observed - chance) / (1 - chance)


@dataclass(frozen=True, slots=True)
class Confusion:
    """Binary verdicts of the judge against a person's: the four cells of the 2×2 table."""

    both_yes: int = 0
    judge_only: int = 0  # the judge said yes (pass / ✓), the person no
    person_only: int = 0  # the person said yes, the judge no
    both_no: int = 0

    @classmethod
    def of(cls, pairs: Iterable[tuple[bool, bool]]) -> Confusion:
        cells = [0, 0, 0, 0]
        for judge, person in pairs:
            cells[(0 if judge else 2) + (0 if person else 1)] += 1
        return cls(*cells)

    @property
    def n(self) -> int:
        return self.both_yes + self.judge_only + self.person_only + self.both_no

    @property
    def agreed(self) -> int:
        return self.both_yes + self.both_no

    @property
    def rate(self) -> float | None:
        return self.agreed / self.n if self.n else None

    @property
    def kappa(self) -> float | None:
        return cohen_kappa(self.both_yes, self.judge_only, self.person_only, self.both_no)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "n": self.n, "agreed": self.agreed, "rate": self.rate, "kappa": self.kappa}


@dataclass(frozen=True, slots=True)
class CountAgreement:
    """The judge's fulfilled count against the person's, over the labelled rollouts."""

    n: int = 0
    equal: int = 0
    judge_higher: int = 0
    judge_lower: int = 0
    abs_difference: int = 0  # the sum of |judge − person| in requirements

    @property
    def mean_abs_difference(self) -> float | None:
        return self.abs_difference / self.n if self.n else None

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "mean_abs_difference": self.mean_abs_difference}


@dataclass(frozen=True, slots=True)
class RequirementPair:
    """One requirement of a labelled rollout: the judge's mark and the person's (None: not decided)."""

    index: int  # 1-based, as numbered in the prompt
    text: str
    judge: bool | None
    person: bool | None

    @property
    def disagrees(self) -> bool:
        return self.judge is not None and self.person is not None and self.judge != self.person


@dataclass(frozen=True, slots=True)
class RequirementDisagreement:
    """One requirement of the dataset (row and index) over every labelled rollout of its row."""

    row_id: str
    index: int
    text: str
    pairs: int
    disagreed: int


@dataclass(frozen=True, slots=True)
class Disagreement:
    """A labelled rollout where the judge and the person differ (score, pass/fail or a requirement's mark)."""

    rollout_id: str
    row_id: str
    sample_index: int
    prompt: str
    total: int
    judge_fulfilled: int
    person_fulfilled: int
    judge_passed: bool
    person_passed: bool
    requirements: tuple[RequirementPair, ...]  # only those where both decided and differ

    @property
    def difference(self) -> int:
        """Judge minus person, in requirements."""
        return self.judge_fulfilled - self.person_fulfilled

    def to_dict(self) -> dict[str, Any]:
        return {
            **{k: v for k, v in asdict(self).items() if k != "requirements"},
            "difference": self.difference,
            "requirements": [asdict(r) for r in self.requirements],
        }


@dataclass(frozen=True, slots=True)
class AgreementReport:
    run_id: str
    judge_mode: str
    threshold: float
    overridden: int  # rollouts a person overrode
    labelled: int  # of those, with a valid judge verdict to compare
    without_judge: int
    pass_fail: Confusion
    counts: CountAgreement
    requirements: Confusion  # per-requirement pairs (empty in count mode)
    by_requirement: tuple[RequirementDisagreement, ...]  # the dataset's requirements most disagreed on
    worst: tuple[Disagreement, ...]
    disagreements: int  # labelled rollouts with any disagreement (``worst`` holds the first few)

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "judge_mode": self.judge_mode,
            "threshold": self.threshold,
            "overridden": self.overridden,
            "labelled": self.labelled,
            "without_judge": self.without_judge,
            "pass_fail": self.pass_fail.to_dict(),
            "counts": self.counts.to_dict(),
            "requirements": self.requirements.to_dict(),
            "by_requirement": [asdict(r) for r in self.by_requirement],
            "disagreements": self.disagreements,
            "worst": [d.to_dict() for d in self.worst],
        }


def _judged(rec: RolloutRecord) -> bool:
    """The judge gave this rollout a verdict to compare: a valid score with its count."""
    return bool(rec.is_score_valid) and rec.score is not None and rec.fulfilled is not None


def requirement_pairs(rec: RolloutRecord, judge_verdicts: Sequence[Sequence[Any]] | None) -> list[RequirementPair]:
    """Each requirement of an overridden rollout with the judge's mark and the person's."""
    judge = marks_of_judge(judge_verdicts, rec.total)
    person = list(rec.override_verdicts or [])
    person += [None] * (rec.total - len(person))
    texts = list(rec.requirements) + [""] * rec.total
    return [RequirementPair(i + 1, texts[i], judge[i], person[i]) for i in range(rec.total)]


def compute_agreement(
    rollouts: Iterable[RolloutRecord],
    verdicts: Mapping[str, Sequence[Sequence[Any]]],
    *,
    run_id: str = "",
    judge_mode: str = "count",
    threshold: float = DEFAULT_THRESHOLD,
    worst: int = DEFAULT_WORST,
) -> AgreementReport:
    """The judge against the people who overrode it, over ``rollouts`` (current ones; see the module docstring)."""
    overridden = without_judge = 0
    pass_pairs: list[tuple[bool, bool]] = []
    requirement_cells: list[tuple[bool, bool]] = []
    counts = [0, 0, 0, 0, 0]  # n, equal, judge higher, judge lower, |difference|
    tally: dict[tuple[str, str, int], list[int]] = {}
    texts: dict[tuple[str, str, int], str] = {}
    found: list[tuple[float, int, int, int, Disagreement]] = []
    for rec in rollouts:
        if not rec.overridden or not rec.status.terminal:
            continue
        overridden += 1
        if not _judged(rec):
            without_judge += 1
            continue
        judge_score, person_score = float(rec.score or 0.0), float(rec.override_score or 0.0)
        judge_passed, person_passed = judge_score >= threshold, person_score >= threshold
        pass_pairs.append((judge_passed, person_passed))
        judge_n, person_n = int(rec.fulfilled or 0), int(rec.override_fulfilled or 0)
        counts[0] += 1
        counts[1] += judge_n == person_n
        counts[2] += judge_n > person_n
        counts[3] += judge_n < person_n
        counts[4] += abs(judge_n - person_n)
        pairs = requirement_pairs(rec, verdicts.get(rec.rollout_id))
        for pair in pairs:
            if pair.judge is None or pair.person is None:
                continue
            requirement_cells.append((pair.judge, pair.person))
            key = (rec.row_id, rec.prompt, pair.index)
            cell = tally.setdefault(key, [0, 0])
            cell[0] += 1
            cell[1] += pair.disagrees
            texts.setdefault(key, pair.text)
        differing = tuple(p for p in pairs if p.disagrees)
        if judge_n != person_n or judge_passed != person_passed or differing:
            item = Disagreement(
                rec.rollout_id,
                rec.row_id,
                rec.sample_index,
                rec.prompt,
                rec.total,
                judge_n,
                person_n,
                judge_passed,
                person_passed,
                differing,
            )
            found.append((-abs(judge_score - person_score), -len(differing), rec.row_index, rec.sample_index, item))
    found.sort(key=lambda t: t[:4])
    by_requirement = sorted(
        (RequirementDisagreement(k[0], k[2], texts[k], c[0], c[1]) for k, c in tally.items() if c[1]),
        key=lambda r: (-r.disagreed, -r.disagreed / r.pairs, r.row_id, r.index),
    )
    return AgreementReport(
        run_id=run_id,
        judge_mode=judge_mode,
        threshold=threshold,
        overridden=overridden,
        labelled=len(pass_pairs),
        without_judge=without_judge,
        pass_fail=Confusion.of(pass_pairs),
        counts=CountAgreement(*counts),
        requirements=Confusion.of(requirement_cells),
        by_requirement=tuple(by_requirement[:worst]),
        worst=tuple(t[-1] for t in found[:worst]),
        disagreements=len(found),
    )


def run_judge_mode(settings: Mapping[str, Any], verdicts: Mapping[str, Any]) -> str:
    """The judge mode a run was scored in: its stored setting, else per-requirement when the judge left marks."""
    mode = settings.get("judge_mode")
    if isinstance(mode, str) and mode in ("count", "per-requirement"):
        return mode
    return "per-requirement" if verdicts else "count"


def run_agreement(
    store: Store, run_id: str, *, threshold: float | None = None, worst: int = DEFAULT_WORST
) -> AgreementReport:
    """:func:`compute_agreement` for a stored run (its own threshold unless ``threshold`` says otherwise)."""
    run = store.get_run(run_id)
    verdicts = store.rollout_verdicts(run.run_id)
    return compute_agreement(
        store.list_rollouts(run.run_id),
        verdicts,
        run_id=run.run_id,
        judge_mode=run_judge_mode(run.settings, verdicts),
        threshold=run.threshold if threshold is None else threshold,
        worst=worst,
    )
