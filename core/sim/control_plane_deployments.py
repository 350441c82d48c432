"""Deployments in the simulated Fireworks control plane: a model served on dedicated GPUs, e.g. an RFT job's LoRA
output model with live merge (the deployment's ``baseModel`` is the LoRA model itself).

Fields and states follow fireworks-ai 1.2.30's ``Deployment`` type: CREATING → READY after
``deployment_ready_steps``; a delete goes DELETING → DELETED, after which GET still answers (with ``deleteTime``)
and the list shows it only with ``showDeleted``. A model of the account (``accounts/{a}/models/{id}``) exists once
the RFT job that outputs it has COMPLETED; anything else under the account is 404, as an unknown model is.
``validateOnly`` answers the deployment that would be made (with the accelerator the server picks) and makes none.
"""

from __future__ import annotations

import secrets as _secrets
from dataclasses import dataclass, field
from typing import Any

from svgagent.core.sim.control_plane_state import Clock, SimError, check_id, now_iso, paginate

ACCELERATORS = frozenset(
    {
        "NVIDIA_A100_80GB", "NVIDIA_H100_80GB", "AMD_MI300X_192GB", "NVIDIA_A10G_24GB", "NVIDIA_A100_40GB",
        "NVIDIA_L4_24GB", "NVIDIA_H200_141GB", "NVIDIA_B200_180GB", "AMD_MI325X_256GB", "AMD_MI350X_288GB",
    }
)  # fmt: skip
DEFAULT_ACCELERATOR = "NVIDIA_H100_80GB"  # what the simulated server picks when the request names none
_NEXT = {"CREATING": "READY", "DELETING": "DELETED"}
_READ_ONLY = ("name", "state", "status", "createTime", "updateTime", "deleteTime", "replicaCount")


@dataclass
class _Deployment:
    id: str
    spec: dict[str, Any]
    created: str
    updated: str
    state: str = "CREATING"
    left: int | None = None  # steps to the next state
    deleted: str | None = None
    clock: Clock = field(default_factory=Clock)


class DeploymentState:
    """The deployments of the simulated account (mixed into ``SimState``: it brings ``config``, ``jobs``,
    ``name`` and ``_drive``)."""

    deployments: dict[str, _Deployment]
    config: Any
    jobs: dict[str, Any]
    name: Any
    _drive: Any

    def _deployment_out(self, d: _Deployment) -> dict[str, Any]:
        up = d.state == "READY"
        wanted = max(int(d.spec.get("minReplicaCount") or 0), 1) if d.state in ("CREATING", "READY") else 0
        out = {
            **d.spec,
            "name": self.name("deployments", d.id),
            "state": d.state,
            "status": {"code": "OK", "message": ""},
            "createTime": d.created,
            "updateTime": d.updated,
            "replicaCount": wanted if up else 0,
            "desiredReplicaCount": wanted,
        }
        if d.deleted:
            out["deleteTime"] = d.deleted
        return out

    def _deployment_step(self, d: _Deployment) -> bool:
        if d.left is None:
            return False
        d.left -= 1
        if d.left > 0:
            return True
        d.left, d.state, d.updated = None, _NEXT.get(d.state, d.state), now_iso()
        if d.state == "DELETED":
            d.deleted = d.updated
        return False

    def _deployment(self, did: str, polled: bool = False) -> _Deployment:
        d = self.deployments.get(did)
        if d is None:
            raise SimError(404, f"deployment {self.name('deployments', did)} not found")
        self._drive(d, self._deployment_step, polled)
        return d

    def _check_model(self, model: Any) -> str:
        if not isinstance(model, str) or not model.startswith("accounts/") or "/models/" not in model:
            raise SimError(400, f"baseModel must be a model name like accounts/<account>/models/<id>, got {model!r}")
        prefix = f"accounts/{self.config.account_id}/models/"
        if model.startswith(prefix):
            outputs = {(j.spec.get("trainingConfig") or {}).get("outputModel"): j.state for j in self.jobs.values()}
            if outputs.get(model) != "JOB_STATE_COMPLETED":
                raise SimError(404, f"model {model} not found")
        return model

    def _deployment_spec(self, body: dict[str, Any]) -> dict[str, Any]:
        spec = {k: v for k, v in body.items() if k not in _READ_ONLY}
        spec["baseModel"] = self._check_model(body.get("baseModel"))
        accelerator = spec.get("acceleratorType") or DEFAULT_ACCELERATOR
        if accelerator not in ACCELERATORS:
            raise SimError(400, f"acceleratorType {accelerator!r} is not one of {', '.join(sorted(ACCELERATORS))}")
        counts = {}
        for key, default in (("acceleratorCount", 1), ("minReplicaCount", 0), ("maxReplicaCount", None)):
            value = spec.get(key, default)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
                raise SimError(400, f"{key} must be a non-negative integer")
            counts[key] = value
        low = counts["minReplicaCount"]
        high = counts["maxReplicaCount"] if counts["maxReplicaCount"] is not None else max(low, 1)
        if high < low:
            raise SimError(400, "maxReplicaCount must not be below minReplicaCount")
        if len(str(spec.get("displayName") or "")) >= 64:
            raise SimError(400, "displayName must be fewer than 64 characters long")
        return {**spec, "acceleratorType": accelerator, **counts, "maxReplicaCount": high}

    def deployment_create(self, body: dict[str, Any], query: dict[str, str]) -> dict[str, Any]:
        did = check_id("deployment", query.get("deploymentId") or "d" + _secrets.token_hex(6))
        spec = self._deployment_spec(body)
        stamp = now_iso()
        d = _Deployment(did, spec, stamp, stamp)
        if query.get("validateOnly", "").lower() == "true":
            return {**self._deployment_out(d), "state": "STATE_UNSPECIFIED"}
        if did in self.deployments and self.deployments[did].state != "DELETED":
            raise SimError(409, f"deployment {self.name('deployments', did)} already exists")
        d.left = max(self.config.deployment_ready_steps, 0)
        if d.left == 0:
            d.left = 1
            self._deployment_step(d)
        self.deployments[did] = d
        return self._deployment_out(d)

    def deployment_get(self, did: str) -> dict[str, Any]:
        return self._deployment_out(self._deployment(did, polled=True))

    def deployment_list(self, query: dict[str, str]) -> dict[str, Any]:
        show_deleted = query.get("showDeleted", "").lower() == "true"
        items = [self._deployment_out(self._deployment(i)) for i in sorted(self.deployments)]
        items = [d for d in items if show_deleted or d["state"] != "DELETED"]
        return paginate(items, query, "deployments")

    def deployment_delete(self, did: str) -> dict[str, Any]:
        d = self._deployment(did)
        if d.state == "DELETED":
            raise SimError(404, f"deployment {self.name('deployments', did)} not found")
        if d.state != "DELETING":
            d.state, d.left, d.updated = "DELETING", 1, now_iso()
            d.clock.restart()
        return {}
