"""The RFT hyperparameters: one pydantic model with ranges and defaults, checked before anything is sent.

Defaults follow Fireworks' published RFT defaults (epochs 1, learning rate 1e-4, LoRA rank 8, batch 32k tokens,
context 8192, temperature 0.7, top-p 1, n 4), except `max_output_tokens`: an SVG answer needs more room than
2048 tokens, so it matches `svgagent eval`'s 4096. Every field knows its CLI flag, so a range error names the
flag the user typed (`--learning-rate 0.1: allowed from 1e-05 to 0.0005`). `RftParams.job_body()` builds the
camelCase body of `POST .../reinforcementFineTuningJobs`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from svgagent.core.scoring.errors import ConfigError
from svgagent.core.field_limits import numeric_range

_MODEL_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,127}$", re.IGNORECASE)
_RESOURCE_ID = re.compile(r"^[a-z][a-z0-9-]{0,62}$")
_MODEL_NAME = re.compile(r"^accounts/[a-z0-9][a-z0-9-]*/models/[A-Za-z0-9][A-Za-z0-9._-]*$")

# field name -> the CLI flag that sets it (the TUI form can show the same names)
FLAGS: dict[str, str] = {
    "base_model": "--base-model",
    "chunk_size": "--chunk-size",
    "epochs": "--epochs",
    "learning_rate": "--learning-rate",
    "lora_rank": "--lora-rank",
    "batch_size": "--batch-size",
    "max_context_length": "--max-context-length",
    "temperature": "--temperature",
    "top_p": "--top-p",
    "max_output_tokens": "--max-output-tokens",
    "n": "--n",
    "loss": "--loss",
    "kl_beta": "--kl-beta",
    "display_name": "--display-name",
    "output_model": "--output-model",
}


class RftParams(BaseModel):
    """Everything that shapes an RFT job besides the dataset and the evaluator."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    base_model: str = Field(..., min_length=1, description="model to fine-tune, e.g. "
                            "accounts/fireworks/models/qwen3-0p6b (a bare id means accounts/fireworks/models/<id>)")
    chunk_size: int = Field(100, ge=1, le=10_000, description="dataset rows per rollout chunk")
    epochs: int = Field(1, ge=1, le=10, description="passes over the dataset")
    learning_rate: float = Field(1e-4, ge=1e-5, le=5e-4, description="optimizer step size")
    lora_rank: int = Field(8, ge=4, le=128, description="LoRA adapter rank, a power of two")
    batch_size: int = Field(32_768, ge=1_024, le=1_048_576, description="training batch size in tokens")
    max_context_length: int = Field(8_192, ge=512, le=262_144, description="longest sequence in tokens")
    temperature: float = Field(0.7, gt=0.0, le=2.0, description="rollout sampling temperature")
    top_p: float = Field(1.0, gt=0.0, le=1.0, description="rollout nucleus sampling")
    max_output_tokens: int = Field(4_096, ge=16, le=131_072, description="rollout completion token limit")
    n: int = Field(4, ge=2, le=64, description="responses sampled per prompt (responseCandidatesCount)")
    loss: Literal["grpo", "dapo"] = Field("grpo", description="policy-optimization loss")
    kl_beta: float | None = Field(None, ge=0.0, le=10.0, description="KL penalty weight (None: Fireworks' default)")
    display_name: str | None = Field(None, max_length=128, description="job name shown in the dashboard")
    output_model: str | None = Field(None, description="id of the trained model (None: Fireworks picks one)")

    @field_validator("base_model", mode="before")
    @classmethod
    def _full_model_name(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        value = value.strip()
        if value and "/" not in value:
            if not _MODEL_ID.match(value):
                raise ValueError("is not a model id")
            return f"accounts/fireworks/models/{value}"
        if value and not _MODEL_NAME.match(value):
            raise ValueError("must look like accounts/<account>/models/<model> (or a bare model id)")
        return value

    @field_validator("loss", mode="before")
    @classmethod
    def _lower_loss(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("lora_rank")
    @classmethod
    def _power_of_two(cls, value: int) -> int:
        if value & (value - 1):
            raise ValueError("must be a power of two (4, 8, 16, 32, 64 or 128)")
        return value

    @field_validator("display_name", mode="before")
    @classmethod
    def _blank_display_name(cls, value: Any) -> Any:
        return (value.strip() or None) if isinstance(value, str) else value

    @field_validator("output_model", mode="before")
    @classmethod
    def _output_model_id(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        value = value.strip()
        if not value:
            return None
        bare = value.rsplit("/", 1)[-1] if value.startswith("accounts/") else value
        if not _RESOURCE_ID.match(bare) or (value.startswith("accounts/") and not _MODEL_NAME.match(value)):
            raise ValueError("must be a model id: lowercase letters, digits and '-', starting with a letter, at "
                             "most 63 characters (or accounts/<account>/models/<id>)")
        return value

    @model_validator(mode="after")
    def _output_fits_context(self) -> RftParams:
        if self.max_output_tokens >= self.max_context_length:
            raise ValueError(f"--max-output-tokens ({self.max_output_tokens}) must be smaller than "
                             f"--max-context-length ({self.max_context_length}): the prompt needs room too")
        return self

    # ---- wire format ---------------------------------------------------------------------------------------
    def training_config(self) -> dict[str, Any]:
        tc: dict[str, Any] = {"baseModel": self.base_model, "epochs": self.epochs,
                              "learningRate": self.learning_rate, "loraRank": self.lora_rank,
                              "batchSize": self.batch_size, "maxContextLength": self.max_context_length}
        if self.output_model:
            tc["outputModel"] = self.output_model
        return tc

    def inference_parameters(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "topP": self.top_p, "maxOutputTokens": self.max_output_tokens,
                "responseCandidatesCount": self.n}

    def loss_config(self) -> dict[str, Any]:
        out: dict[str, Any] = {"method": self.loss.upper()}
        if self.kl_beta is not None:
            out["klBeta"] = self.kl_beta
        return out

    def job_body(self, dataset: str, evaluator: str, *, display_name: str | None = None) -> dict[str, Any]:
        """The camelCase body of the job-create request (`dataset` / `evaluator` as resource names)."""
        body: dict[str, Any] = {"dataset": dataset, "evaluator": evaluator}
        name = self.display_name or display_name
        if name:
            body["displayName"] = name
        body["chunkSize"] = self.chunk_size
        body["trainingConfig"] = self.training_config()
        body["inferenceParameters"] = self.inference_parameters()
        body["lossConfig"] = self.loss_config()
        return body


# ---- errors that name the flag -------------------------------------------------------------------------------
@dataclass(frozen=True)
class ParamProblem:
    field: str
    flag: str
    value: Any
    message: str

    def __str__(self) -> str:
        if not self.flag:
            return self.message
        shown = "" if self.value is None or isinstance(self.value, dict) else f" {self.value}"
        return f"{self.flag}{shown}: {self.message}"


class ParamsError(ConfigError):
    """One or more hyperparameters are out of range; `problems` lists them (field, flag, value, message)."""

    def __init__(self, problems: list[ParamProblem]) -> None:
        self.problems = problems
        super().__init__("invalid hyperparameter" + ("s" if len(problems) > 1 else "") + ": "
                         + "; ".join(str(p) for p in problems))


def allowed_range(field: str) -> str:
    """A human description of what `field` accepts, e.g. 'an integer from 1 to 10'."""
    info = RftParams.model_fields.get(field)
    if info is None:
        return ""
    if field == "loss":
        return "one of: grpo, dapo"
    if field == "lora_rank":
        return "a power of two from 4 to 128"
    return numeric_range(info)


def _problem(item: dict[str, Any]) -> ParamProblem:
    loc = [str(p) for p in item.get("loc", ())]
    field = loc[0] if loc else ""
    msg = str(item.get("msg", "invalid")).removeprefix("Value error, ")
    if not field:  # a model-level check: its message names the flags itself
        return ParamProblem("", "", None, msg)
    kind = item.get("type", "")
    limits = allowed_range(field)
    if kind in ("greater_than_equal", "less_than_equal", "greater_than", "less_than") and limits:
        msg = f"out of range: allowed {limits}"
    elif kind in ("int_parsing", "float_parsing", "int_from_float", "literal_error") and limits:
        msg = f"not a valid value: allowed {limits}"
    elif kind == "missing":
        msg = "is required" + (" (e.g. accounts/fireworks/models/qwen3-0p6b)" if field == "base_model" else "")
    return ParamProblem(field, FLAGS.get(field, f"--{field.replace('_', '-')}"), item.get("input"), msg)


def parse_params(**values: Any) -> RftParams:
    """Validate hyperparameters (None means: use the default). Raises `ParamsError` naming the flags."""
    clean = {k: v for k, v in values.items() if v is not None}
    try:
        return RftParams(**clean)
    except ValidationError as err:
        raise ParamsError([_problem(dict(item)) for item in err.errors()]) from None


def defaults() -> dict[str, Any]:
    """Field name -> default (fields without a default are left out)."""
    return {name: info.default for name, info in RftParams.model_fields.items() if not info.is_required()}
