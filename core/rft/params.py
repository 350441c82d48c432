"""The RFT hyperparameters: one pydantic model with ranges, checked before anything is sent.

Only what the person sets is sent: a field left at None is left out of the job, and Fireworks applies its own
default (eval-protocol's `ep create rft` does the same: it sends only the flags given). Fireworks documents
defaults such as epochs 1, learning rate 1e-4, LoRA rank 8, temperature 0.7 and n 4 (the hints show them), but
svgagent never sends them on its own. Every field knows its CLI flag, so a range error names the flag the user typed
(`--learning-rate 0.1: allowed from 1e-05 to 0.0005`). `RftParams.job_kwargs()` builds the arguments of the
fireworks-ai client's `reinforcement_fine_tuning_jobs.create` (its snake_case TypedDicts; the client turns them into
the camelCase wire body).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from svgagent.core.config.field_limits import numeric_range
from svgagent.core.scoring.errors import ConfigError

if TYPE_CHECKING:  # the client's own TypedDicts (types only: importing fireworks takes most of a second)
    from fireworks.types.reinforcement_fine_tuning_job_create_params import InferenceParameters
    from fireworks.types.shared_params.reinforcement_learning_loss_config import ReinforcementLearningLossConfig
    from fireworks.types.shared_params.training_config import TrainingConfig

_MODEL_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,127}$", re.IGNORECASE)
_RESOURCE_ID = re.compile(r"^[a-z][a-z0-9-]{0,62}$")
_MODEL_NAME = re.compile(r"^accounts/[a-z0-9][a-z0-9-]*/models/[A-Za-z0-9][A-Za-z0-9._-]*$")
_JOB_NAME = re.compile(r"^accounts/[a-z0-9][a-z0-9-]*/reinforcementFineTuningJobs/(?P<id>[^/]+)$")
ID_RULE = "lowercase letters, digits and '-', starting with a letter, at most 63 characters"
# Fireworks' documented defaults, shown as hints only: svgagent sends a hyperparameter only when it is set.
PLATFORM_DEFAULTS: dict[str, Any] = {
    "epochs": 1,
    "learning_rate": 1e-4,
    "lora_rank": 8,
    "max_context_length": 8192,
    "temperature": 0.7,
    "top_p": 1.0,
    "max_output_tokens": 2048,
    "n": 4,
}

# What `ep create rft` sends whatever the flags: its boolean flags default to false and are sent as false. Sent the
# same way, so svgagent's job body is the one known to work on the real service (docs/rft.md).
EP_ALWAYS_SENT: dict[str, Any] = {"eval_auto_carveout": False, "wandb_config": {"enabled": False}}
# RftParams field -> key of the client's TypedDict, for the nested parts of the job
_TRAINING = (
    ("output_model", "output_model"),
    ("epochs", "epochs"),
    ("learning_rate", "learning_rate"),
    ("lora_rank", "lora_rank"),
    ("batch_size", "batch_size"),
    ("max_context_length", "max_context_length"),
)
_INFERENCE = (
    ("temperature", "temperature"),
    ("top_p", "top_p"),
    ("max_output_tokens", "max_output_tokens"),
    ("n", "response_candidates_count"),
)

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

    base_model: str = Field(
        ...,
        min_length=1,
        description="model to fine-tune, e.g. "
        "accounts/fireworks/models/qwen3-0p6b (a bare id means accounts/fireworks/models/<id>)",
    )
    chunk_size: int | None = Field(None, ge=1, le=10_000, description="dataset rows per rollout chunk")
    epochs: int | None = Field(None, ge=1, le=10, description="passes over the dataset")
    learning_rate: float | None = Field(None, ge=1e-5, le=5e-4, description="optimizer step size")
    lora_rank: int | None = Field(None, ge=4, le=128, description="LoRA adapter rank, a power of two")
    batch_size: int | None = Field(None, ge=1_024, le=1_048_576, description="training batch size in tokens")
    max_context_length: int | None = Field(None, ge=512, le=262_144, description="longest sequence in tokens")
    temperature: float | None = Field(None, gt=0.0, le=2.0, description="rollout sampling temperature")
    top_p: float | None = Field(None, gt=0.0, le=1.0, description="rollout nucleus sampling")
    max_output_tokens: int | None = Field(
        None, ge=16, le=131_072, description="rollout completion token limit (SVG answers often need 4096)"
    )
    n: int | None = Field(None, ge=2, le=64, description="responses sampled per prompt (responseCandidatesCount)")
    loss: Literal["grpo", "dapo"] | None = Field(None, description="policy-optimization loss")
    kl_beta: float | None = Field(None, ge=0.0, le=10.0, description="KL penalty weight")
    display_name: str | None = Field(None, max_length=128, description="job name shown in the dashboard")
    output_model: str | None = Field(None, description="id of the trained model")

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
            raise ValueError(f"must be a model id: {ID_RULE} (or accounts/<account>/models/<id>)")
        return value

    @model_validator(mode="after")
    def _output_fits_context(self) -> RftParams:
        if self.max_output_tokens is None or self.max_context_length is None:
            return self  # one of them is Fireworks' to choose
        if self.max_output_tokens >= self.max_context_length:
            raise ValueError(
                f"--max-output-tokens ({self.max_output_tokens}) must be smaller than "
                f"--max-context-length ({self.max_context_length}): the prompt needs room too"
            )
        return self

    # ---- the client's arguments ----------------------------------------------------------------------------
    def set_fields(self) -> dict[str, Any]:
        """The hyperparameters the person set (None: left to Fireworks), base model included."""
        return {name: value for name, value in self.model_dump().items() if value is not None}

    def _given(self, fields: tuple[tuple[str, str], ...]) -> dict[str, Any]:
        """{client key: value} for the (field, client key) pairs whose field is set."""
        return {key: getattr(self, name) for name, key in fields if getattr(self, name) is not None}

    def training_config(self) -> TrainingConfig:
        return cast("TrainingConfig", {"base_model": self.base_model, **self._given(_TRAINING)})

    def inference_parameters(self) -> InferenceParameters | None:
        return cast("InferenceParameters", self._given(_INFERENCE)) or None

    def loss_config(self) -> ReinforcementLearningLossConfig | None:
        lc = self._given((("kl_beta", "kl_beta"),))
        if self.loss is not None:
            lc["method"] = "GRPO" if self.loss == "grpo" else "DAPO"
        return cast("ReinforcementLearningLossConfig", lc) or None

    def job_kwargs(self, dataset: str, evaluator: str, *, display_name: str | None = None) -> dict[str, Any]:
        """Keyword arguments of `reinforcement_fine_tuning_jobs.create` (`dataset` / `evaluator` as resource names):
        the client's snake_case keys, only what is set (plus `EP_ALWAYS_SENT`, as eval-protocol sends it)."""
        kwargs: dict[str, Any] = {"dataset": dataset, "evaluator": evaluator, **EP_ALWAYS_SENT}
        name = self.display_name or display_name
        if name:
            kwargs["display_name"] = name
        if self.chunk_size is not None:
            kwargs["chunk_size"] = self.chunk_size
        kwargs["training_config"] = self.training_config()
        if (ip := self.inference_parameters()) is not None:
            kwargs["inference_parameters"] = ip
        if (lc := self.loss_config()) is not None:
            kwargs["loss_config"] = lc
        return kwargs


def check_job_id(value: str | None, flag: str = "--job-id") -> str | None:
    """A job id (or `accounts/<a>/reinforcementFineTuningJobs/<id>`) as the output model is checked: ConfigError
    naming the flag for anything else (`../../etc` must never reach a request path)."""
    if value is None:
        return None
    text = value.strip()
    match = _JOB_NAME.match(text)
    bare = match["id"] if match else text
    if not _RESOURCE_ID.match(bare):
        raise ConfigError(
            f"{flag} {value!r}: must be a job id: {ID_RULE} (or accounts/<account>/reinforcementFineTuningJobs/<id>)"
        )
    return text


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
        super().__init__(
            "invalid hyperparameter" + ("s" if len(problems) > 1 else "") + ": " + "; ".join(str(p) for p in problems)
        )


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


def default_hint(field: str) -> str:
    """What happens when `field` is left unset: `Fireworks' default (1)`, or "" for a required field."""
    info = RftParams.model_fields.get(field)
    if info is None or info.is_required():
        return ""
    if field in PLATFORM_DEFAULTS:
        return (
            f"Fireworks' default ({PLATFORM_DEFAULTS[field]:g})"
            if isinstance(PLATFORM_DEFAULTS[field], float)
            else f"Fireworks' default ({PLATFORM_DEFAULTS[field]})"
        )
    return {
        "display_name": "derived from the dataset and model",
        "output_model": "the job id (Fireworks' default)",
    }.get(field, "Fireworks' default")


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
