"""Judge profiles: each the whole recipe of a score, declared once as data.

A :class:`JudgeProfile` says how the picture is sized and on what background, which answer form(s) the judge is
asked for (:mod:`.judge_forms`: schema, question, reader), the sampling temperature, how the image is attached,
and what a failure scores. The judge (:class:`svgagent.core.scoring.judge.Judge`), the engine, the rollout server
and the RFT evaluator bundle read these fields; none of them branches on a profile's name.

* ``svgagent`` — the default: the PNG's longest side is the ``render_size`` setting; svgagent's strict question and
  schemas (count or per-requirement); temperature 0; an unusable answer is asked again once, saying what was
  wrong, then the score is invalid; a render failure is a valid 0.
* ``ep-quickstart`` — Eval Protocol's quickstart evaluator (the reward its RFT example trains on): the page the SVG
  sizes itself (:mod:`.picture_size`) on white; the ``SVGBenchResponse`` form; temperature 0; PNG data URL with no
  ``detail``; no second ask; count clamped to 0..N; a render failure or an unusable answer is an invalid 0.
* ``svgbench`` — SVGBench's leaderboard: the same page; a number-only form; no temperature sent; the PNG labelled
  ``image/jpeg``; three tries in all, each the same request; after them an unusable answer scores 0 (valid).

Everywhere: no SVG in the answer is a valid 0, and an endpoint outage is an invalid score (never a data verdict).
The judge model is the ``judge_model`` setting's whatever the profile; ``reference_judge`` names the one each
source uses, for comparing like with like.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from svgagent.core.scoring.errors import ConfigError
from svgagent.core.scoring.judge_forms import (
    EP_QUICKSTART_COUNT,
    SVGAGENT_COUNT,
    SVGAGENT_VERDICTS,
    SVGBENCH_COUNT,
    JudgeForm,
)
from svgagent.core.scoring.models import JudgeMode, JudgeProfileName, _StrEnum
from svgagent.core.scoring.picture_size import OWN_SIZE

__all__ = ["PROFILES", "JudgeProfile", "PictureRule", "profile_named", "recipe_line"]


class PictureRule(_StrEnum):
    LONGEST_SIDE = "longest-side"  # scaled so its longest side is the render_size setting
    OWN_SIZE = "own-size"  # the page the SVG sizes itself (picture_size.own_size)


@dataclass(frozen=True)
class JudgeProfile:
    name: JudgeProfileName
    title: str  # one line, for the Config pane and `runs show`
    source: str  # where the recipe comes from
    reference_judge: str  # the judge model that source uses (the judge_model setting still decides)
    picture: PictureRule
    background: str  # the page / canvas colour behind the SVG
    forms: Mapping[JudgeMode, JudgeForm]
    temperature: float | None  # None: not sent (the endpoint's default)
    image_type: str  # the media type the PNG's data URL is labelled with
    image_detail: str | None  # the image part's "detail" (None: not sent)
    format_retries: int  # extra asks after an unusable answer
    retry_says_why: bool  # a retry adds a note saying what was wrong (else: the same request again)
    render_failure_valid: bool  # a render failure is a valid 0 (else an invalid score)
    unusable_scores_zero: bool  # an answer still unusable after the retries is a valid 0 (else an invalid score)

    def form(self, mode: JudgeMode | str = JudgeMode.COUNT) -> JudgeForm:
        """The answer form for ``mode``; ConfigError when this profile has none for it."""
        found = self.forms.get(JudgeMode(mode))
        if found is None:
            modes = ", ".join(m.value for m in self.forms)
            raise ConfigError(f"judge profile {self.name.value} judges by {modes} only, not {JudgeMode(mode).value}")
        return found

    def render_size(self, longest_side: int) -> int:
        """The size a render is asked for: ``longest_side`` (the render_size setting), or OWN_SIZE."""
        return OWN_SIZE if self.picture is PictureRule.OWN_SIZE else longest_side

    def describe(self) -> dict[str, object]:
        """The recipe as plain values (for `runs show`, exports and docs)."""
        return {
            "profile": self.name.value,
            "picture": self.picture.value,
            "background": self.background,
            "forms": {mode.value: form.name for mode, form in self.forms.items()},
            "temperature": self.temperature,
            "image_type": self.image_type,
            "format_retries": self.format_retries,
            "render_failure": "valid 0" if self.render_failure_valid else "invalid",
            "unusable_answer": "valid 0" if self.unusable_scores_zero else "invalid",
            "reference_judge": self.reference_judge,
        }


_SVGAGENT = JudgeProfile(
    name=JudgeProfileName.SVGAGENT,
    title="svgagent's own: longest side = render_size, strict schema, one re-ask, render failure = valid 0",
    source="svgagent",
    reference_judge="gpt-4.1",
    picture=PictureRule.LONGEST_SIDE,
    background="white",
    forms=MappingProxyType({JudgeMode.COUNT: SVGAGENT_COUNT, JudgeMode.PER_REQUIREMENT: SVGAGENT_VERDICTS}),
    temperature=0,
    image_type="image/png",
    image_detail=None,
    format_retries=1,
    retry_says_why=True,
    render_failure_valid=True,
    unusable_scores_zero=False,
)
_EP_QUICKSTART = JudgeProfile(
    name=JudgeProfileName.EP_QUICKSTART,
    title="Eval Protocol quickstart: the SVG's own page size, count clamped to 0..N, any failure = invalid 0",
    source="eval-protocol quickstart/svg_agent/evaluator",
    reference_judge="gpt-4.1",
    picture=PictureRule.OWN_SIZE,
    background="white",
    forms=MappingProxyType({JudgeMode.COUNT: EP_QUICKSTART_COUNT}),
    temperature=0,
    image_type="image/png",
    image_detail=None,
    format_retries=0,
    retry_says_why=False,
    render_failure_valid=False,
    unusable_scores_zero=False,
)
_SVGBENCH = JudgeProfile(
    name=JudgeProfileName.SVGBENCH,
    title="SVGBench: the SVG's own page size, a number only, 3 tries then 0",
    source="SVGBench src/benchmark/benchmark.py",
    reference_judge="google/gemini-2.5-flash (OpenRouter)",
    picture=PictureRule.OWN_SIZE,
    background="white",
    forms=MappingProxyType({JudgeMode.COUNT: SVGBENCH_COUNT}),
    temperature=None,
    image_type="image/jpeg",
    image_detail=None,
    format_retries=2,
    retry_says_why=False,
    render_failure_valid=True,
    unusable_scores_zero=True,
)
PROFILES: Mapping[JudgeProfileName, JudgeProfile] = MappingProxyType(
    {p.name: p for p in (_SVGAGENT, _EP_QUICKSTART, _SVGBENCH)}
)


def profile_named(name: JudgeProfileName | str) -> JudgeProfile:
    """The profile called ``name``; ConfigError naming the choices for any other name."""
    try:
        return PROFILES[JudgeProfileName(name)]
    except ValueError:
        choices = ", ".join(p.value for p in JudgeProfileName)
        raise ConfigError(f"unknown judge profile {name!r} (choose one of: {choices})") from None


def recipe_line(name: JudgeProfileName | str) -> str:
    """The one-line recipe of the profile called ``name`` ("an unknown profile" for a name from elsewhere)."""
    try:
        return PROFILES[JudgeProfileName(name)].title
    except ValueError:
        return "an unknown profile"
