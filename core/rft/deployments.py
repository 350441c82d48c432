"""Serving an RFT job's output model to evaluate it: an on-demand deployment with live merge (the deployment's base
model is the LoRA model itself), what it costs an hour, and waiting until it is READY.

Facts (docs/rft.md, "Deployments"): a LoRA output model is served only from a dedicated deployment — serverless does
not serve LoRA models — and a deployment bills by the GPU-second while it has replicas. So svgagent first asks the
server which accelerator it would pick (``validateOnly``), quotes the hourly rate, and only after a yes creates one
replica (``minReplicaCount`` = ``maxReplicaCount`` = 1: serving at once, at one fixed rate), waits for READY, and
offers to delete it once the evaluation is done. Inference on it uses the model's name, as on any model.

The rates are no API: :data:`HOURLY_USD` holds the per-GPU prices found published (sources in docs/rft.md), and a
quote says so; ``--hourly-rate`` gives the current one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from svgagent.core.rft.fireworks_api import FireworksError

if TYPE_CHECKING:
    from svgagent.core.rft.fireworks_api import ControlPlane

PRICING_URL = "https://fireworks.ai/pricing"
# USD per GPU-hour of an on-demand deployment, as published (docs/rft.md says where each was read): assumed
HOURLY_USD = {"NVIDIA_A100_80GB": 3.89, "NVIDIA_H100_80GB": 7.00}
# What a deployment for an evaluation asks for: one replica, up at once; the shape the server picks for the model
DEPLOY_FIELDS: dict[str, Any] = {"min_replica_count": 1, "max_replica_count": 1, "deployment_shape": "default"}
LIVE = ("CREATING", "READY", "UPDATING")  # states that bill (or are about to)
Progress = Callable[[str], None]


def deployment_id_for(job_id: str) -> str:
    """The deployment an evaluation of ``job_id`` makes: ``<job id>-eval`` (within the 63 characters of an id)."""
    return f"{job_id[:58].rstrip('-')}-eval"


@dataclass(frozen=True)
class Quote:
    """What a deployment costs: ``replicas`` × ``count`` ``accelerator``s at ``hourly_usd`` each (None: unknown)."""

    accelerator: str
    count: int
    replicas: int
    hourly_usd: float | None
    assumed: bool = True  # the rate is from the published list, not from the server

    @property
    def per_hour(self) -> float | None:
        return None if self.hourly_usd is None else self.hourly_usd * self.count * self.replicas

    def text(self) -> str:
        gpus = f"{self.replicas} replica × {self.count} {self.accelerator}"
        if self.per_hour is None:
            return f"{gpus}: its hourly rate is unknown here (see {PRICING_URL})"
        where = f", as published at {PRICING_URL}" if self.assumed else ""
        return f"{gpus}: about ${self.per_hour:.2f} an hour while it is up{where}"


def quote(deployment: Mapping[str, Any], hourly_usd: float | None = None) -> Quote:
    """The cost of ``deployment`` (a deployment as the API returns it); ``hourly_usd``: a rate per GPU-hour that
    overrides the published one."""
    accelerator = str(deployment.get("acceleratorType") or "an accelerator the server picks")
    count = int(deployment.get("acceleratorCount") or 1)
    replicas = max(int(deployment.get("maxReplicaCount") or deployment.get("minReplicaCount") or 1), 1)
    rate = hourly_usd if hourly_usd is not None else HOURLY_USD.get(accelerator)
    return Quote(accelerator, count, replicas, rate, assumed=hourly_usd is None)


def deployment_id(deployment: Mapping[str, Any]) -> str:
    return str(deployment.get("name") or "").rsplit("/", 1)[-1]


def serving(cp: ControlPlane, model: str) -> dict[str, Any] | None:
    """A deployment of ``model`` that is up or coming up, READY first; None when there is none."""
    found = [d for d in cp.list_deployments() if d.get("baseModel") == model and d.get("state") in LIVE]
    found.sort(key=lambda d: d.get("state") != "READY")
    return found[0] if found else None


def up(cp: ControlPlane) -> list[dict[str, Any]]:
    """The account's deployments that bill (or are about to): not deleting, deleted or failed."""
    return [d for d in cp.list_deployments() if d.get("state") in LIVE]


def plan_deployment(cp: ControlPlane, model: str, did: str, display_name: str) -> dict[str, Any]:
    """The deployment that would serve ``model`` (the accelerator the server picks), making none."""
    return cp.create_deployment(model, did, validate_only=True, display_name=display_name[:63], **DEPLOY_FIELDS)


def deploy(
    cp: ControlPlane,
    model: str,
    did: str,
    display_name: str,
    *,
    poll_s: float = 10.0,
    timeout_s: float = 1800.0,
    on_progress: Progress | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> dict[str, Any]:
    """Create the deployment ``did`` of ``model`` (one that exists already is used) and wait until it is READY.
    FireworksError when it fails, times out or ``should_stop`` says so — then it may still be billing, and the
    message says how to delete it."""
    notify = on_progress or (lambda _text: None)
    try:
        made = cp.create_deployment(model, did, display_name=display_name[:63], **DEPLOY_FIELDS)
    except FireworksError as err:
        if err.kind != "conflict":
            raise
        made = cp.get_deployment(did) or {}
    started = time.monotonic()
    delete = f"`svgagent rft deployments --delete {did}`"
    while True:
        state = str(made.get("state") or "")
        notify(f"deployment {did} is {state or 'being created'} ({time.monotonic() - started:.0f} s)")
        if state == "READY":
            return made
        if state in ("FAILED", "DELETING", "DELETED"):
            message = (made.get("status") or {}).get("message") or "no reason given"
            raise FireworksError(f"deployment {did} is {state}: {message}", kind="deployment")
        if time.monotonic() - started > timeout_s or (should_stop is not None and should_stop()):
            raise FireworksError(
                f"deployment {did} is still {state} after {time.monotonic() - started:.0f} s: it may bill while it "
                f"comes up; delete it with {delete} or wait and evaluate again (it is reused)",
                kind="timeout",
            )
        time.sleep(poll_s)
        made = cp.get_deployment(did) or {}
