"""The demo world's simulated RFT trainer: it trains the jobs whose evaluator rolls out remotely, posting
eval-protocol ``/init`` requests to the rollout server the job names (``svgagent serve``), step by step.

A job it drives (``_Job.driven``: created in a world whose simulator has ``trainer_drives_remote_jobs``) is
RUNNING only as far as this trainer got. For each such job, one step at a time:

1. its plan, made once: the training rows (the job's dataset), the responses per prompt
   (``inferenceParameters.responseCandidatesCount``, else 4), the prompts per step (``chunkSize``, else 4), the
   epochs (``trainingConfig.epochs``, else 1), so steps = epochs × ⌈rows / prompts per step⌉, and the
   reward-hacking window (:class:`TrainerPace`);
2. a step K: one ``/init`` per (prompt, sample), shaped as eval-protocol's ``RemoteRolloutProcessor`` sends it —
   ``completion_params`` names the checkpoint ``<output model>-step-K`` with ``step`` and ``epoch``;
   ``model_base_url`` is this process's tracing-gateway simulator with the rollout's ids in its path (in front of a
   policy simulator that draws as the checkpoint was trained, :mod:`~svgagent.core.sim.policy_skill`); the ids are
   ``experiment_id`` = the job id, ``run_id`` = ``<job>-step-K``, ``invocation_id`` = the job id;
3. it waits until the gateway holds a status for every rollout (the server logs one when a rollout ended), as
   eval-protocol polls ``/v1/status``;
4. it records the step on the job (done, epoch, rollouts finished and failed); after the last one the job is
   COMPLETED, and its output model is in the world's trained-models file.

A rollout server that cannot be reached (or answers 429/503/507) leaves the job RUNNING with a status message
saying so, and the step is tried again. One process trains at a time (``trainer.lock``); the others only serve the
state it writes.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import math
import os
import time
from dataclasses import dataclass
from typing import Any

import aiohttp

from svgagent.core.sim.background import BackgroundLoop
from svgagent.core.sim.control_plane import FireworksSim
from svgagent.core.sim.control_plane_state import TERMINAL_JOB_STATES
from svgagent.core.sim.platform_metrics import step_metrics
from svgagent.core.sim.policy_skill import load_trained
from svgagent.core.sim.simulator import SimConfig, Simulator
from svgagent.core.sim.tracing_gateway import TAG_NAMES, TracingGateway
from svgagent.core.sim.world import TRAINED_MODELS_FILE, TRAINER_LOCK_FILE

DEFAULT_SAMPLES = 4
DEFAULT_PROMPTS_PER_STEP = 4
RETRY_STATUSES = (429, 503, 507)
FINISHED = 100
DEMO_KEY = "simulated-key"


@dataclass(frozen=True)
class TrainerPace:
    """How fast the simulated trainer goes: ``step_s`` at least between two steps of a job (0: at once),
    ``policy_latency_s`` of each policy answer, ``rollout_timeout_s`` a step waits for its statuses (then the
    missing ones count as failed), ``retry_s`` before trying an unreachable server again, and ``hack``: the
    reward-hacking window, "auto" (a step or two in the middle of a run of at least 5 steps), "off", or
    "FIRST-LAST" (steps)."""

    step_s: float = 1.5
    policy_latency_s: float = 0.2
    rollout_timeout_s: float = 150.0
    retry_s: float = 3.0
    hack: str = "auto"

    def window(self, steps: int) -> list[int] | None:
        text = self.hack.strip().lower()
        if text == "off":
            return None
        if text == "auto":
            if steps < 5:
                return None
            first = max(2, round(steps * 0.4))
            return [first, min(steps - 1, first + max(0, steps // 8))]
        low, sep, high = text.partition("-")
        if sep and low.isdigit() and high.isdigit() and 1 <= int(low) <= int(high):
            return [int(low), int(high)]
        raise ValueError(f"hack must be auto, off or FIRST-LAST (steps), got {self.hack!r}")


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else default


def _prompt_text(messages: Any) -> str:
    """The last user message's text (what the policy simulator reads as the prompt)."""
    for message in reversed(messages if isinstance(messages, list) else []):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else json.dumps(content)
    return ""


def dataset_rows(data: bytes) -> list[dict[str, Any]]:
    """The Eval Protocol rows of a dataset's JSONL (lines that are not rows with messages are skipped)."""
    rows = []
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and isinstance(row.get("messages"), list):
            rows.append(row)
    return rows


class Trainer:
    """Trains the driven jobs of the world ``sim`` serves (see the module docstring); ``start`` / ``stop``."""

    def __init__(self, sim: FireworksSim, pace: TrainerPace | None = None) -> None:
        if sim.world is None:
            raise ValueError("the simulated trainer needs a demo world (FireworksSim(world_dir=…))")
        self.sim = sim
        self.pace = pace or TrainerPace()
        self.world_dir = sim.world.dir
        self._background = BackgroundLoop("svgagent-demo-trainer")
        self._task: asyncio.Task[None] | None = None
        self._lease: int | None = None
        self._policy: Simulator | None = None
        self._gateway: TracingGateway | None = None
        self._http: aiohttp.ClientSession | None = None
        self._next_due: dict[str, float] = {}
        self._alive = False  # whether the last look found a job this trainer drives that has not ended
        self.steps_done = 0  # steps this trainer finished (for the tests)

    # ---- lifecycle -----------------------------------------------------------------------------------------
    def start(self) -> None:
        async def setup() -> None:
            self._task = asyncio.get_running_loop().create_task(self._main())

        self._background.start(setup, self._teardown, timeout_s=10)

    def stop(self) -> None:
        loop = self._background.loop
        if loop is not None and self._task is not None:
            loop.call_soon_threadsafe(self._task.cancel)
        self._background.stop(timeout_s=10)

    async def _teardown(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
        if self._http is not None:
            await self._http.close()
        if self._gateway is not None:
            await self._gateway.stop_async()
        if self._policy is not None:
            await self._policy.stop_async()
        if self._lease is not None:
            os.close(self._lease)
            self._lease = None

    def _leased(self) -> bool:
        """Whether this process holds the world's trainer lease (taken when free; kept until stop)."""
        if self._lease is not None:
            return True
        self.world_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.world_dir / TRAINER_LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self._lease = fd
        return True

    async def _main(self) -> None:
        while True:
            try:
                if not self._leased():
                    await asyncio.sleep(1.0)
                    continue
                work = self._next()
                if work is None:  # a job's step comes due soon; with none alive a new one is looked for less often
                    await asyncio.sleep(0.1 if self._alive else max(0.1, self.pace.step_s))
                    continue
                await self._step(*work)
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - the demo's trainer keeps going; the job shows what it last did
                await asyncio.sleep(self.pace.retry_s)

    # ---- choosing the next step ------------------------------------------------------------------------------
    def _next(self) -> tuple[str, int, list[dict[str, Any]], dict[str, Any]] | None:
        """(job id, step, the step's rows, the plan) of the next step due, planning a job first seen."""
        now = time.monotonic()
        self._alive = False
        with self.sim.world_session():
            state = self.sim.state
            for jid in sorted(state.jobs):
                j = state._job(jid)  # its lifecycle applied (provisioning ends with time)
                self._alive = self._alive or (j.driven and j.state not in TERMINAL_JOB_STATES)
                if not j.driven or j.state != "JOB_STATE_RUNNING" or j.provisioning:
                    continue
                if self._next_due.get(jid, 0.0) > now:
                    continue
                rows = self._rows(state, j)
                if not j.trainer.get("steps"):
                    j.trainer = self._plan(state, j, rows)
                plan = j.trainer
                if plan["done"] >= plan["steps"]:
                    continue
                step = plan["done"] + 1
                first = ((step - 1) % plan["per_epoch"]) * plan["per_step"]
                return jid, step, rows[first : first + plan["per_step"]], dict(plan)
        return None

    def _rows(self, state: Any, j: Any) -> list[dict[str, Any]]:
        dataset = state.datasets.get(str(j.spec.get("dataset") or "").rsplit("/", 1)[-1])
        return dataset_rows(b"".join(dataset.files.values())) if dataset is not None else []

    def _plan(self, state: Any, j: Any, rows: list[dict[str, Any]]) -> dict[str, Any]:
        spec = j.spec
        samples = _int((spec.get("inferenceParameters") or {}).get("responseCandidatesCount"), DEFAULT_SAMPLES)
        per_step = _int(spec.get("chunkSize"), DEFAULT_PROMPTS_PER_STEP)
        epochs = _int((spec.get("trainingConfig") or {}).get("epochs"), 1)
        count = max(1, len(rows))
        per_epoch = max(1, math.ceil(count / per_step))
        steps = epochs * per_epoch
        return {
            "steps": steps,
            "per_step": per_step,
            "per_epoch": per_epoch,
            "samples": samples,
            "epochs": epochs,
            "rollouts": epochs * count * samples,
            "remote_url": state._remote(spec) or "",
            "hack": self.pace.window(steps),
            "done": 0,
            "epoch": 0,
            "finished": 0,
            "failed": 0,
            "waiting": "",
        }

    # ---- one step --------------------------------------------------------------------------------------------
    async def _services(self) -> tuple[str, aiohttp.ClientSession]:
        """This process's gateway (in front of a policy that draws as trained) and HTTP session, started once."""
        if self._gateway is None:
            policy = Simulator(
                SimConfig(
                    policy_latency_s=self.pace.policy_latency_s,
                    policy_follows_settings=True,
                    trained_models_file=str(self.world_dir / TRAINED_MODELS_FILE),
                )
            )
            policy_url = await policy.start_async()
            self._policy = policy
            gateway = TracingGateway(policy_url)
            await gateway.start_async()
            self._gateway = gateway
            self._http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30))
        assert self._gateway is not None and self._gateway.base_url is not None and self._http is not None
        return self._gateway.base_url, self._http

    def _init_body(
        self, jid: str, step: int, epoch: int, row: dict[str, Any], sample: int, gateway: str, output: str, spec: Any
    ) -> dict[str, Any]:
        meta = row.get("input_metadata") if isinstance(row.get("input_metadata"), dict) else {}
        row_id = str(meta.get("row_id") or "row")
        ids = {
            "invocation_id": jid,
            "experiment_id": jid,
            "rollout_id": f"{jid}-s{step}-{row_id}-n{sample}",
            "run_id": f"{jid}-step-{step}",
            "row_id": row_id,
        }
        inference = spec.get("inferenceParameters") or {}
        params: dict[str, Any] = {"model": f"{output}-step-{step}", "step": step, "epoch": epoch}
        params["temperature"] = inference.get("temperature", 1.0)
        if inference.get("maxOutputTokens"):
            params["max_tokens"] = inference["maxOutputTokens"]
        return {
            "completion_params": params,
            "messages": row["messages"],
            "tools": None,
            "model_base_url": gateway + "".join(f"/{name}/{ids[name]}" for name in TAG_NAMES),
            "metadata": ids,
            "api_key": DEMO_KEY,
        }

    async def _post(self, http: aiohttp.ClientSession, url: str, body: dict[str, Any]) -> int | str:
        """The /init's HTTP status, or why it could not be sent."""
        try:
            async with http.post(f"{url.rstrip('/')}/init", json=body) as response:
                await response.read()
                return response.status
        except (aiohttp.ClientError, TimeoutError, OSError) as err:
            return f"{type(err).__name__}: {err}"[:200]

    async def _step(self, jid: str, step: int, rows: list[dict[str, Any]], plan: dict[str, Any]) -> None:
        gateway, http = await self._services()
        with self.sim.world_session():
            j = self.sim.state.jobs.get(jid)
            if j is None:
                return
            spec = j.spec
            output = str((spec.get("trainingConfig") or {}).get("outputModel") or jid)
        epoch = (step - 1) // plan["per_epoch"]
        url = plan["remote_url"]
        bodies = [
            self._init_body(jid, step, epoch, row, sample, gateway, output, spec)
            for row in rows
            for sample in range(plan["samples"])
        ]
        answers = await asyncio.gather(*(self._post(http, url, body) for body in bodies))
        refused = [a for a in answers if isinstance(a, str) or a in RETRY_STATUSES]
        if refused:
            why = refused[0] if isinstance(refused[0], str) else f"HTTP {refused[0]}"
            self._record(jid, waiting=f"waiting for the rollout server at {url} ({why}); trying again")
            self._next_due[jid] = time.monotonic() + self.pace.retry_s
            return
        sent = [b["metadata"]["rollout_id"] for b, a in zip(bodies, answers) if a == 200]
        codes = await self._statuses(sent)
        finished = sum(1 for code in codes.values() if code == FINISHED)
        failed = len(bodies) - finished
        trained = load_trained(str(self.world_dir / TRAINED_MODELS_FILE))
        prompts = [_prompt_text(b["messages"]) for b in bodies]
        curves = step_metrics(jid, step, epoch, f"{output}-step-{step}", prompts, trained, last=step >= plan["steps"])
        self._record(jid, step=step, epoch=epoch, finished=finished, failed=failed, metrics=curves)
        self._next_due[jid] = time.monotonic() + self.pace.step_s
        self.steps_done += 1

    async def _statuses(self, rollout_ids: list[str]) -> dict[str, int | None]:
        """The status the gateway holds for each rollout, waiting for them up to the pace's rollout timeout."""
        assert self._gateway is not None
        deadline = time.monotonic() + self.pace.rollout_timeout_s
        codes: dict[str, int | None] = {rid: None for rid in rollout_ids}
        while True:
            for rid, code in codes.items():
                if code is None:
                    codes[rid] = self._gateway.status_code(rid)
            if all(code is not None for code in codes.values()) or time.monotonic() > deadline:
                return codes
            await asyncio.sleep(0.05)

    def _record(self, jid: str, *, waiting: str = "", metrics: dict[str, Any] | None = None, **done: int) -> None:
        """Write what the trainer did onto the job; the last step completes it (unless it was cancelled meanwhile)."""
        from svgagent.core.sim.control_plane_state import now_iso

        with self.sim.world_session():
            j = self.sim.state.jobs.get(jid)
            if j is None or not j.trainer:
                return
            plan = dict(j.trainer)
            plan["waiting"] = waiting
            if done:
                plan["done"], plan["epoch"] = done["step"], done["epoch"]
                plan["finished"] += done["finished"]
                plan["failed"] += done["failed"]
            if metrics is not None:  # the platform's own curves, one row per step (core/sim/platform_metrics.py)
                plan["metrics"] = [*plan.get("metrics", []), metrics]
            j.trainer = plan
            if done and j.state == "JOB_STATE_RUNNING" and plan["done"] >= plan["steps"]:
                j.state, j.completed, j.status = "JOB_STATE_COMPLETED", now_iso(), ("OK", "")
