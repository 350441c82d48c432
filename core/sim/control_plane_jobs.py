"""Reinforcement fine-tuning jobs in the simulated Fireworks control plane (lifecycle and validation).

CREATING → PENDING → VALIDATING → RUNNING (first step provisioning: totalInputRequests 0; then progress)
→ COMPLETED, or FAILED (knob); cancel: CANCELLING → CANCELLED; resume of CANCELLED/FAILED/PAUSED → RUNNING.
A job is refused when its dataset is not an Eval Protocol dataset (created with `evalProtocol: {}`).
"""

from __future__ import annotations

import secrets as _secrets
from dataclasses import dataclass, field
from typing import Any

from svgagent.core.rft.job_states import STATES, wire_state
from svgagent.core.sim.control_plane_build import bundle_config
from svgagent.core.sim.control_plane_deployments import DeploymentState
from svgagent.core.sim.control_plane_state import (
    RESUMABLE_JOB_STATES,
    TERMINAL_JOB_STATES,
    Clock,
    ResourceState,
    SimError,
    check_id,
    now_iso,
    paginate,
)
from svgagent.core.sim.platform_metrics import modelled_steps, output_metrics

_KNOWN_STATES = frozenset(wire_state(state) for state in STATES)
_NEXT = {"JOB_STATE_CREATING": "JOB_STATE_PENDING", "JOB_STATE_PENDING": "JOB_STATE_VALIDATING"}


@dataclass
class _Job:
    id: str
    spec: dict[str, Any]
    created: str
    examples: int
    state: str = "JOB_STATE_CREATING"
    status: tuple[str, str] = ("OK", "")
    completed: str | None = None
    started: bool = False
    provisioning: bool = True
    run_step: int = 0
    failure_used: bool = False
    clock: Clock = field(default_factory=Clock)
    steps: int = 0  # training steps in all (a remote job's: the trainer's plan)
    driven: bool = False  # its evaluator rolls out remotely: it moves as the simulated trainer trains it
    trainer: dict[str, Any] = field(default_factory=dict)  # the trainer's record (core/sim/trainer.py)


class SimState(ResourceState, DeploymentState):
    """The whole simulated account: secrets, datasets, evaluators, RFT jobs and deployments."""

    jobs: dict[str, _Job]

    # ---- rendering -------------------------------------------------------------------------------------------
    def _epochs(self, j: _Job) -> int:
        try:
            return max(int(j.spec.get("trainingConfig", {}).get("epochs") or 1), 1)
        except (TypeError, ValueError):
            return 1

    def _job_out(self, j: _Job) -> dict[str, Any]:
        out = {
            **j.spec,
            "name": self.name("reinforcementFineTuningJobs", j.id),
            "state": j.state,
            "createTime": j.created,
            "status": {"code": j.status[0], "message": j.status[1]},
        }
        if j.completed:
            out["completedTime"] = j.completed
        if j.started and j.driven:
            out["jobProgress"] = self._trained_progress(j)
            if j.trainer.get("metrics"):
                out["outputMetrics"] = output_metrics(j.trainer["metrics"])
            waiting = str(j.trainer.get("waiting") or "")
            if waiting and j.state == "JOB_STATE_RUNNING":
                out["status"] = {"code": "OK", "message": waiting}
        elif j.started:
            steps, epochs = max(self.config.job_running_steps, 1), self._epochs(j)
            total = 0 if j.provisioning else j.examples * epochs
            done = total * j.run_step // steps
            failed = int(done * self.config.job_failed_ratio)
            out["jobProgress"] = {
                "percent": 0 if j.provisioning else j.run_step * 100 // steps,
                "epoch": min(epochs - 1, j.run_step * epochs // steps),
                "totalInputRequests": total,
                "totalProcessedRequests": done,
                "successfullyProcessedRequests": done - failed,
                "failedRequests": failed,
                "inputTokens": done * 350,
                "outputTokens": done * 900,
            }
            if j.run_step and not j.provisioning:
                base = str((j.spec.get("trainingConfig") or {}).get("baseModel") or "")
                out["outputMetrics"] = output_metrics(modelled_steps(j.id, base, steps, j.run_step, epochs))
        return out

    def _trained_progress(self, j: _Job) -> dict[str, Any]:
        """jobProgress of a job the trainer drives: what it did (steps, rollouts finished and failed)."""
        t = j.trainer
        steps, done = int(t.get("steps") or 0), int(t.get("done") or 0)
        finished, failed = int(t.get("finished") or 0), int(t.get("failed") or 0)
        return {
            "percent": done * 100 // steps if steps else 0,
            "epoch": int(t.get("epoch") or 0),
            "totalInputRequests": int(t.get("rollouts") or 0),
            "totalProcessedRequests": finished + failed,
            "successfullyProcessedRequests": finished,
            "failedRequests": failed,
            "inputTokens": (finished + failed) * 350,
            "outputTokens": finished * 900,
        }

    # ---- lifecycle -------------------------------------------------------------------------------------------
    def _job_step(self, j: _Job) -> bool:
        cfg = self.config
        if j.state == "JOB_STATE_RUNNING" and j.driven and not j.provisioning:
            return False  # the trainer moves it (and completes it)
        if j.state in _NEXT:
            j.state = _NEXT[j.state]
        elif j.state == "JOB_STATE_VALIDATING":
            j.state, j.started, j.provisioning = "JOB_STATE_RUNNING", True, True
        elif j.state == "JOB_STATE_RUNNING" and j.provisioning:
            j.provisioning = False
        elif j.state == "JOB_STATE_RUNNING":
            steps = max(cfg.job_running_steps, 1)
            j.run_step = min(j.run_step + 1, steps)
            if cfg.job_failure and not j.failure_used and j.run_step * 100 // steps >= cfg.job_fail_at_percent:
                j.failure_used = True
                j.state, j.status = "JOB_STATE_FAILED", ("INTERNAL", cfg.job_failure)
                return False
            if j.run_step >= steps:
                j.state, j.completed, j.status = "JOB_STATE_COMPLETED", now_iso(), ("OK", "")
                return False
        elif j.state == "JOB_STATE_CANCELLING":
            j.state, j.status = "JOB_STATE_CANCELLED", ("CANCELLED", "cancelled by user")
            return False
        else:
            return False
        return True

    def _job(self, jid: str, polled: bool = False) -> _Job:
        j = self.jobs.get(jid)
        if j is None:
            raise SimError(
                404, f"reinforcement fine-tuning job {self.name('reinforcementFineTuningJobs', jid)} not found"
            )
        self._drive(j, self._job_step, polled)
        return j

    # ---- validation ------------------------------------------------------------------------------------------
    def _ref(self, body: dict[str, Any], key: str, collection: str, required: bool) -> str | None:
        value = body.get(key)
        if not value:
            if required:
                raise SimError(400, f"{key} is required")
            return None
        prefix = f"accounts/{self.config.account_id}/{collection}/"
        if not isinstance(value, str) or not value.startswith(prefix):
            raise SimError(400, f"{key} must be a resource name like {prefix}<id>, got {value!r}")
        return value.removeprefix(prefix)

    def _check_refs(self, body: dict[str, Any]) -> int:
        examples = 0
        for key in ("dataset", "evaluationDataset"):
            did = self._ref(body, key, "datasets", required=key == "dataset")
            if did is None:
                continue
            d = self.datasets.get(did)
            if d is None:
                raise SimError(400, f"{key} {body[key]} does not exist")
            self._drive(d, self._dataset_step, False)
            if d.state != "READY":
                raise SimError(400, f"{key} {body[key]} is {d.state}, not READY", "FAILED_PRECONDITION")
            if "evalProtocol" not in d.spec:  # a CHAT dataset may keep only `messages`: the evaluator needs more
                raise SimError(
                    400,
                    f"{key} {body[key]} is not an Eval Protocol dataset (format "
                    f"{d.spec.get('format', 'FORMAT_UNSPECIFIED')}): an RFT job with an evaluator "
                    "needs one created with evalProtocol {}",
                    "FAILED_PRECONDITION",
                )
            examples = examples or d.example_count
        eid = self._ref(body, "evaluator", "evaluators", required=True)
        e = self.evaluators.get(eid or "")
        if e is None:
            raise SimError(400, f"evaluator {body['evaluator']} does not exist")
        self._drive(e, self._evaluator_step, False)
        if e.state != "ACTIVE":
            raise SimError(400, f"evaluator {body['evaluator']} is {e.state}, not ACTIVE", "FAILED_PRECONDITION")
        return examples

    def _training_config(self, body: dict[str, Any], jid: str) -> dict[str, Any]:
        tc = body.get("trainingConfig")
        if not isinstance(tc, dict) or not (tc.get("baseModel") or tc.get("warmStartFrom")):
            raise SimError(400, "trainingConfig.baseModel (or trainingConfig.warmStartFrom) is required")
        if tc.get("baseModel") and tc.get("warmStartFrom"):
            raise SimError(400, "only one of trainingConfig.baseModel and trainingConfig.warmStartFrom may be set")
        prefix = f"accounts/{self.config.account_id}/models/"
        out = str(tc.get("outputModel") or jid)
        check_id("output model", out.removeprefix(prefix))
        return {**tc, "outputModel": out if out.startswith(prefix) else prefix + out}

    # ---- API -------------------------------------------------------------------------------------------------
    def job_create(self, body: dict[str, Any], query: dict[str, str]) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise SimError(400, "request body must be a JSON object")
        jid = check_id("job", query.get("reinforcementFineTuningJobId") or "rft" + _secrets.token_hex(5))
        if jid in self.jobs:
            raise SimError(
                409, f"reinforcement fine-tuning job {self.name('reinforcementFineTuningJobs', jid)} already exists"
            )
        examples = self._check_refs(body)
        spec = {**body, "trainingConfig": self._training_config(body, jid)}
        chunk = spec.get("chunkSize")
        if chunk is not None and not (isinstance(chunk, int) and 1 <= chunk <= 10_000):
            raise SimError(400, "chunkSize must be between 1 and 10000")
        for key in ("name", "state", "status", "createTime", "completedTime", "jobProgress"):
            spec.pop(key, None)
        j = _Job(jid, spec, now_iso(), examples=examples, steps=max(self.config.job_running_steps, 1))
        if self.config.trainer_drives_remote_jobs:
            j.driven = self._remote(spec) is not None
        self.jobs[jid] = j
        return self._job_out(j)

    def _remote(self, spec: dict[str, Any]) -> str | None:
        """The rollout server a job's evaluator sends every rollout to (``--rollouts remote``), or None."""
        e = self.evaluators.get(str(spec.get("evaluator") or "").rsplit("/", 1)[-1])
        archive = next(iter(e.files.values()), b"") if e is not None else b""
        config = bundle_config(archive) if archive else {}
        url = config.get("remote_url")
        return url if config.get("rollouts") == "remote" and isinstance(url, str) and url else None

    def job_get(self, jid: str) -> dict[str, Any]:
        return self._job_out(self._job(jid, polled=True))

    def job_list(self, query: dict[str, str]) -> dict[str, Any]:
        items = [self._job_out(self._job(i)) for i in sorted(self.jobs)]
        return paginate(items, query, "reinforcementFineTuningJobs")

    def job_cancel(self, jid: str) -> dict[str, Any]:
        j = self._job(jid)
        if j.state in TERMINAL_JOB_STATES or j.state == "JOB_STATE_CANCELLING":
            raise SimError(400, f"job {jid} is {j.state} and cannot be cancelled", "FAILED_PRECONDITION")
        j.state = "JOB_STATE_CANCELLING"
        j.clock.restart()
        return {}

    def job_resume(self, jid: str) -> dict[str, Any]:
        j = self._job(jid)
        if j.state not in RESUMABLE_JOB_STATES:
            raise SimError(
                400,
                f"job {jid} is {j.state}; only cancelled, failed or paused jobs can be resumed",
                "FAILED_PRECONDITION",
            )
        j.state, j.status, j.completed = "JOB_STATE_RUNNING", ("OK", ""), None
        j.started, j.provisioning = True, not j.run_step
        j.clock.restart()
        return self._job_out(j)

    def job_delete(self, jid: str) -> dict[str, Any]:
        self._job(jid)
        del self.jobs[jid]
        return {}

    def set_job_state(self, jid: str, state: str, message: str = "") -> None:
        """Test hook: force a job into any state (e.g. JOB_STATE_PAUSED)."""
        if state not in _KNOWN_STATES:
            raise ValueError(f"unknown job state {state!r}")
        j = self._job(jid)
        j.state, j.status = state, (("OK" if not message else "UNKNOWN"), message)
        j.started = j.started or state == "JOB_STATE_RUNNING"
        j.clock.restart()
