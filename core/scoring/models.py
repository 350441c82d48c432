"""Plain data shared by the pipeline: dataset rows, rollout states, judge verdicts, engine events."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class _StrEnum(str, Enum):
    """`enum.StrEnum` without Python 3.11: members are their values (`str()`, f-strings, `==`). The RFT evaluator
    bundle copies this module and must run on Python 3.10, the floor of eval-protocol."""

    def __str__(self) -> str:
        return str.__str__(self)

    def __format__(self, spec: str) -> str:
        return str.__format__(self, spec)


class RolloutStatus(_StrEnum):
    QUEUED = "queued"
    GENERATING = "generating"
    RENDERING = "rendering"
    JUDGING = "judging"
    SCORED = "scored"
    FAILED = "failed"

    @property
    def terminal(self) -> bool:
        return self in (RolloutStatus.SCORED, RolloutStatus.FAILED)


MAX_TOKEN_COUNT = 10**9  # a token count above this is not a count: read as 0 (scoring.chat, imports, the store)


class FailureKind(_StrEnum):
    """Why a rollout failed, as a type stored with it (its reason says the same in words). Exports map kinds to
    Eval Protocol status codes; the CLI tells infrastructure faults (never a data verdict) from model faults."""

    NO_SVG = "no_svg"  # the answer holds no usable SVG: a valid 0
    RENDER = "render"  # the SVG could not be rendered safely: a valid 0
    TIMEOUT = "timeout"  # an endpoint took longer than the request timeout
    UNREACHABLE = "unreachable"  # connection refused, unknown host, connection reset
    AUTH = "auth"  # the key was rejected (HTTP 401/403)
    RATE_LIMIT = "rate_limit"  # HTTP 429 after the retries
    HTTP_ERROR = "http_error"  # another HTTP error status
    BAD_RESPONSE = "bad_response"  # the body is not a chat completion (SSE, invalid UTF-8, wrong shape, no choices)
    JUDGE_UNUSABLE = "judge_unusable"  # the judge answered outside its schema, also after the format retry
    INTERNAL = "internal"  # a bug in svgagent
    OTHER = "other"  # an imported failure whose cause is not known

    @property
    def is_model_fault(self) -> bool:
        """The policy's answer itself is at fault: the rollout has a valid score of 0."""
        return self in (FailureKind.NO_SVG, FailureKind.RENDER)

    @property
    def is_connectivity(self) -> bool:
        """The endpoint could not be reached or refused the key: worth one line at the end of a run."""
        return self in (FailureKind.TIMEOUT, FailureKind.UNREACHABLE, FailureKind.AUTH, FailureKind.RATE_LIMIT)


class JudgeMode(_StrEnum):
    COUNT = "count"
    PER_REQUIREMENT = "per-requirement"


class JudgeProfileName(_StrEnum):
    """Whose recipe a score follows (the profiles themselves: :mod:`svgagent.core.scoring.judge_profiles`)."""

    SVGAGENT = "svgagent"
    EP_QUICKSTART = "ep-quickstart"
    SVGBENCH = "svgbench"


class RendererName(_StrEnum):
    """What draws the SVG: cairosvg in sandboxed workers (the default), or a headless Chromium (for parity with
    evaluators that screenshot a browser page)."""

    CAIROSVG = "cairosvg"
    CHROMIUM = "chromium"


# The judge's answer formats (JSON schema names and the count's key), shared by the judge and the simulator —
# here rather than in judge.py so the simulator (demo mode) starts without importing the openai client.
COUNT_SCHEMA_NAME = "svg_requirements_count"
PER_REQUIREMENT_SCHEMA_NAME = "svg_requirements_verdicts"
COUNT_KEY = "number_of_fulfilled_requirements"


@dataclass(frozen=True, slots=True)
class DatasetRow:
    """One prompt with its numbered visual requirements. ``index`` is its identity in the dataset."""

    index: int
    row_id: str
    prompt: str
    requirements: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0  # the part of prompt_tokens the provider served from its prompt cache

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True, slots=True)
class RequirementVerdict:
    index: int  # 1-based, as the requirements are numbered in the prompt
    fulfilled: bool
    reason: str = ""


@dataclass(frozen=True, slots=True)
class JudgeVerdict:
    """What the judge concluded about one image.

    ``valid`` is False when the judge could not give a usable answer (outage, garbage twice); the score is then
    not a measurement and must not enter means. ``raw`` keeps the judge's last answer text.
    """

    total: int
    fulfilled: int | None
    score: float | None
    valid: bool
    rationale: str
    verdicts: tuple[RequirementVerdict, ...] | None = None
    raw: str = ""
    usage: Usage = field(default_factory=Usage)
    attempts: int = 1
    unusable: bool = False  # no usable answer came back (a profile may still score that: svgbench's 0)


@dataclass(frozen=True, slots=True)
class RolloutUpdate:
    """Published by the engine after each state change of a rollout has been written to the store: "rollout X of
    run Y is now in state S". Everything else (score, verdict, errors) is read from the store, by the TUI and the
    headless CLI alike (``core.live.RunFollower``), so both show the same numbers."""

    run_id: str
    rollout_id: str
    status: RolloutStatus
