"""The ``execution_metadata.extra["svgagent"]`` block of an imported row, validated before anything is used.

The block comes from a file, so it is untrusted: every field has its type and range (counts within ``0..total``,
scores within ``0..1``, one verdict per requirement index at most, finite non-negative timings, token counts below
``MAX_TOKEN_COUNT``). A block that does not fit is refused as a whole, with the first problem named; the line is
then skipped rather than imported with a made-up state.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from svgagent.core.scoring.models import MAX_TOKEN_COUNT, FailureKind, RolloutStatus
from svgagent.core.store.size_caps import CAPPED_COLUMNS

MAX_SECONDS = 10_000_000.0

Score = Annotated[float, Field(strict=True, ge=0.0, le=1.0, allow_inf_nan=False)]
Seconds = Annotated[float, Field(strict=True, ge=0.0, le=MAX_SECONDS, allow_inf_nan=False)]
Tokens = Annotated[StrictInt, Field(ge=0, le=MAX_TOKEN_COUNT)]
Index = Annotated[StrictInt, Field(ge=0, le=10_000_000)]
Text = Annotated[StrictStr, Field(max_length=10_000_000)]


def _total(info: ValidationInfo) -> int:
    return int((info.context or {}).get("total", 0))


def _within_total(value: int, info: ValidationInfo) -> int:
    if not 0 <= value <= _total(info):
        raise ValueError(f"must be between 0 and {_total(info)} (the number of requirements)")
    return value


Count = Annotated[StrictInt, AfterValidator(_within_total)]  # a number of fulfilled requirements


class ExtraOverride(BaseModel):
    model_config = ConfigDict(extra="ignore")

    score: Score
    fulfilled: Count | None = None
    verdicts: list[StrictBool | None] | None = None  # None: a mark the person left undecided (core.review)
    at: Annotated[StrictStr, Field(max_length=64)] | None = None

    @field_validator("verdicts")
    @classmethod
    def _one_per_requirement(cls, value: list[bool | None] | None, info: ValidationInfo) -> list[bool | None] | None:
        if value is not None and len(value) != _total(info):
            raise ValueError(f"must hold one verdict per requirement ({_total(info)}), not {len(value)}")
        return value

    @model_validator(mode="after")
    def _agree(self) -> ExtraOverride:
        if self.verdicts is not None and self.fulfilled is not None:
            yes = sum(1 for v in self.verdicts if v is True)
            if not yes <= self.fulfilled <= yes + sum(1 for v in self.verdicts if v is None):
                raise ValueError("override fulfilled does not match its verdicts")
        return self


class SvgagentExtra(BaseModel):
    """What an svgagent export keeps next to the Eval Protocol fields (see ``core/exchange/export.py``)."""

    model_config = ConfigDict(extra="ignore")

    format: Literal[1]
    status: RolloutStatus
    row_index: Index | None = None
    sample_index: Index | None = None
    attempt: Annotated[StrictInt, Field(ge=1, le=100_000)] | None = None
    score: Score | None = None
    fulfilled: Count | None = None
    is_score_valid: StrictBool | None = None
    reason: Text | None = None
    error: Text | None = None
    rationale: Text | None = None
    verdicts: list[tuple[StrictInt, StrictBool, StrictStr]] | None = None
    override: ExtraOverride | None = None
    generation_s: Seconds | None = None
    render_s: Seconds | None = None
    judge_s: Seconds | None = None
    judge_prompt_tokens: Tokens | None = None
    judge_completion_tokens: Tokens | None = None
    cached_prompt_tokens: Tokens | None = None
    judge_cached_prompt_tokens: Tokens | None = None
    cached: StrictBool = False
    failure_kind: FailureKind | None = None
    truncated: dict[StrictStr, Annotated[StrictInt, Field(ge=0)]] | None = None

    @field_validator("verdicts")
    @classmethod
    def _indexes(cls, value: list[tuple[int, bool, str]] | None, info: ValidationInfo) -> Any:
        if value is None:
            return None
        indexes = [index for index, _, _ in value]
        if sorted(indexes) != list(range(1, _total(info) + 1)):
            raise ValueError(f"must hold exactly one verdict for each requirement 1..{_total(info)}")
        return value

    @field_validator("truncated")
    @classmethod
    def _columns(cls, value: dict[str, int] | None) -> dict[str, int] | None:
        if value is not None and not set(value) <= CAPPED_COLUMNS:
            raise ValueError(f"names columns that are never cut: {sorted(set(value) - CAPPED_COLUMNS)}")
        return value


def validate_extra(block: Any, total: int) -> SvgagentExtra:
    """The validated block; raises ``ValueError`` naming the first problem (``field: message``)."""
    try:
        return SvgagentExtra.model_validate(block, context={"total": total})
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(part) for part in first.get("loc", ())) or "block"
        raise ValueError(f"{where}: {first.get('msg', 'invalid')}") from None
