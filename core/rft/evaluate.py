"""Evaluating what an RFT job trained: its output model against its base model, on the rows training never saw.

`svgagent rft evaluate JOB` and `v` in the Jobs pane walk the same steps (each blocking: the app runs them in a
thread, the command in order):

1. the job (:func:`evaluation_target`): COMPLETED, with an output model and a base model, and the rows its launch
   held out (`rft create --holdout`, stored with the job);
2. the base model's run on those rows — a finished run of it on the same rows with the same judge and sampling
   settings is reused (:func:`reusable_run`): nothing bills while it runs;
3. a deployment of the output model (`svgagent.core.rft.deployments`: quoted, asked for, made, waited for);
4. the trained model's run on the same rows with the same settings (:func:`run_settings`);
5. the comparison of the two (`svgagent.core.analysis.compare`), and the deployment deleted when the person agrees.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from svgagent.core.rft.holdout import Holdout, holdout_dataset, load_holdout
from svgagent.core.rft.job_states import short_state
from svgagent.core.run.dataset import Dataset
from svgagent.core.scoring.errors import ConfigError

if TYPE_CHECKING:
    from svgagent.core.config.settings import Settings
    from svgagent.core.rft.fireworks_api import ControlPlane
    from svgagent.core.store.run_store import Store

# What a reusable run of the base model must share with the evaluation (with the model and the rows): how it is
# judged and how the policy samples.
MATCHED = ("judge_model", "judge_mode", "render_size", "samples", "temperature", "max_tokens", "reasoning_effort")


@dataclass(frozen=True)
class EvaluationTarget:
    """A completed job, its two models and the rows to evaluate them on."""

    job: dict[str, Any]
    job_name: str
    job_id: str
    output_model: str
    base_model: str
    holdout: Holdout
    dataset: Dataset

    def run_name(self, side: str) -> str:
        model = self.base_model if side == "base" else self.output_model
        return f"{self.job_id} · {side} {model.rsplit('/', 1)[-1]} · held out"


def evaluation_target(
    cp: ControlPlane, store: Store, job: str, *, hint: str = "", demo: bool = False
) -> EvaluationTarget:
    """The job ``job`` (id or name) ready to be evaluated; ConfigError saying what is missing otherwise. ``hint``:
    the command that launches a job with held-out rows, for the message when this one has none; ``demo``: the
    commands it suggests carry ``--demo``."""
    data = cp.get_job(job)
    name = str(data.get("name") or job)
    job_id = name.rsplit("/", 1)[-1]
    state = short_state(data.get("state")) if data.get("state") else "UNKNOWN"
    config = data.get("trainingConfig") or {}
    output, base = config.get("outputModel"), config.get("baseModel") or config.get("warmStartFrom")
    if state != "COMPLETED":
        raise ConfigError(f"job {job_id} is {state}: only a COMPLETED job has a trained model to evaluate")
    if not output or not base:
        raise ConfigError(f"job {job_id} names no output model (or no base model): nothing to evaluate")
    holdout = load_holdout(store, name)
    if holdout is None:
        raise ConfigError(
            f"no held-out rows are stored for job {job_id}: it was launched without --holdout (or elsewhere), so "
            "every row it has was trained on. Launch with --holdout 0.2 to keep rows out"
            + (f" ({hint})" if hint else "")
            + ", or evaluate its model on a dataset of your own once deployed: svgagent eval "
            + ("--demo " if demo else "")
            + f"--model {output}"
        )
    return EvaluationTarget(data, name, job_id, str(output), str(base), holdout, holdout_dataset(job_id, holdout))


def run_settings(settings: Settings, model: str) -> Settings:
    """The evaluation's settings for ``model``: everything else as the person's (every held-out row)."""
    return settings.model_copy(update={"model": model, "rows": None})


def reusable_run(store: Store, settings: Settings, dataset: Dataset) -> str | None:
    """A completed run of ``settings.model`` on exactly ``dataset``'s rows, judged and sampled as ``settings``
    say (:data:`MATCHED`); the newest, or None."""
    wanted = settings.public_dict()
    for run in store.list_runs():  # newest first
        ref = run.dataset
        if run.status.value != "completed" or run.settings.get("model") != settings.model:
            continue
        if ref.get("source") != dataset.source or ref.get("sha256") != dataset.sha256:
            continue
        if all(run.settings.get(key) == wanted.get(key) for key in MATCHED):
            return run.run_id
    return None
