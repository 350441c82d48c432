"""One served rollout: the policy call through the request's ``model_base_url``, then what svgagent keeps of it.

1. POST ``{model_base_url}/chat/completions`` with the request's messages, model and sampling parameters, and the
   key :class:`~svgagent.core.serve.security.KeyPolicy` picks (the request's), retrying 429/5xx with backoff
   (:mod:`.policy_call`); the whole call has a deadline (``rollout_timeout_s``) shorter than eval-protocol's poll
   timeout, so a stuck policy ends as DEADLINE_EXCEEDED, not as a silent poll timeout on the other side.
2. Extract the SVG and render it with the sandboxed renderer (for display: costs nothing against the API); with
   ``--judge`` also score it with the project's judge (labelled local: the evaluator scores on the platform).
3. Store the outcome (in one transaction with the rollouts that end near it: :mod:`.recorder`), then log the
   terminal status to the gateway: FINISHED once the policy answered (with or without an SVG — scoring is the
   evaluator's), an error code when it did not.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from dataclasses import dataclass, field
from typing import Any

from svgagent.core.ep_status import StatusCode
from svgagent.core.events import EventBus
from svgagent.core.policy import api_errors, classify_api_error
from svgagent.core.scoring.errors import RenderError, StoreError
from svgagent.core.scoring.extract import extract_svg
from svgagent.core.scoring.judge import Judge
from svgagent.core.scoring.models import FailureKind, RolloutStatus, RolloutUpdate
from svgagent.core.scoring.render import Renderer
from svgagent.core.serve.policy_call import PolicyCallError, RetryPolicy, post_chat
from svgagent.core.serve.protocol import InitRequest, gateway_base
from svgagent.core.serve.recorder import Recorder
from svgagent.core.serve.security import KeyPolicy, url_host
from svgagent.core.serve.status_log import StatusLogger, log_record
from svgagent.core.settings import Settings
from svgagent.core.training import Placement, Served, ServedRef, TrainingStore
from svgagent.core.verdicts import verdict_columns

log = logging.getLogger("svgagent.serve")
NOT_JUDGED = "not judged here (the evaluator scores it on the platform; `svgagent serve --judge` scores locally)"
_FIREWORKS_PREFIX = "fireworks_ai/"  # eval-protocol's LiteLLM routing prefix; the Fireworks API itself wants none


@dataclass
class ServeContext:
    """What every rollout of one server shares."""

    settings: Settings
    keys: KeyPolicy
    training: TrainingStore
    status_log: StatusLogger
    renderer: Renderer
    http: Any  # the openai client of the policy calls and status posts (policy_call.serve_client)
    judge: Judge | None = None
    gateway_url: str | None = None  # None: the gateway of each request's model_base_url
    rollout_timeout_s: float = 100.0
    bus: EventBus[RolloutUpdate] | None = None
    recorder: Recorder = field(init=False)  # the store writes of ended rollouts, batched

    def __post_init__(self) -> None:
        self.recorder = Recorder(self.training)

    @property
    def retry(self) -> RetryPolicy:
        return RetryPolicy(
            max_retries=self.settings.max_retries,
            request_timeout_s=self.settings.request_timeout_s,
            deadline_s=self.rollout_timeout_s,
        )

    def gateway_for(self, req: InitRequest) -> str:
        return self.gateway_url or gateway_base(req.model_base_url)

    def publish(self, ref: ServedRef, status: RolloutStatus) -> None:
        """A stored rollout, on the bus (``svgagent tui --serve`` shows it as it arrives)."""
        if self.bus is not None:
            self.bus.publish(RolloutUpdate(ref.run_id, ref.rollout_id, status))


def policy_body(req: InitRequest) -> dict[str, Any]:
    model = req.model
    if model.startswith(_FIREWORKS_PREFIX) and url_host(req.model_base_url) == "api.fireworks.ai":
        model = model[len(_FIREWORKS_PREFIX) :]
    body: dict[str, Any] = {"model": model, "messages": req.chat_messages(), **req.sampling()}
    if req.tools:
        body["tools"] = req.tools
    return body


@dataclass
class Job:
    """One accepted rollout: the request, where it will be stored, the prompt and requirements read from it,
    and (for eval-protocol's retry of a rollout that ended in an error) the earlier attempt."""

    req: InitRequest
    place: Placement
    prompt: str
    requirements: list[str]
    previous: ServedRef | None = None


async def serve_rollout(ctx: ServeContext, job: Job) -> StatusCode:
    """Run one accepted rollout to its end; returns the status code that was logged."""
    req = job.req
    started = time.perf_counter()
    try:
        answer = await post_chat(
            ctx.http,
            f"{req.model_base_url}/chat/completions",
            policy_body(req),
            ctx.keys.key_for(req.model_base_url, req.api_key),
            ctx.retry,
        )
    except PolicyCallError as err:
        message = str(err)
        columns = dict(
            status=RolloutStatus.FAILED,
            is_score_valid=False,
            reason=message,
            error=message,
            failure_kind=err.kind,
            generation_s=time.perf_counter() - started,
        )
        return await conclude(ctx, job, columns, err.code, message)
    columns: dict[str, Any] = dict(
        raw_answer=answer.content,
        finish_reason=answer.finish_reason or "unknown",
        prompt_tokens=answer.usage.prompt_tokens,
        completion_tokens=answer.usage.completion_tokens,
        generation_s=time.perf_counter() - started,
    )
    columns.update(await _picture_and_score(ctx, answer.content, job.prompt, job.requirements))
    return await conclude(ctx, job, columns, StatusCode.FINISHED, "Rollout finished")


async def _picture_and_score(ctx: ServeContext, answer: str, prompt: str, requirements: list[str]) -> dict[str, Any]:
    judged = ctx.judge is not None and bool(requirements)
    extracted = extract_svg(answer)
    if extracted.svg is None:
        zero = dict(score=0.0, fulfilled=0, is_score_valid=True) if judged else {}
        return dict(status=RolloutStatus.FAILED, reason=extracted.reason, failure_kind=FailureKind.NO_SVG, **zero)
    t0 = time.perf_counter()
    try:
        png = await ctx.renderer.render(extracted.svg, ctx.settings.render_size)
    except RenderError as err:
        zero = dict(score=0.0, fulfilled=0, is_score_valid=True) if judged else {}
        return dict(
            status=RolloutStatus.FAILED,
            svg=extracted.svg,
            reason=f"render failed: {err}",
            failure_kind=FailureKind.RENDER,
            render_s=time.perf_counter() - t0,
            **zero,
        )
    columns: dict[str, Any] = dict(svg=extracted.svg, png=png, render_s=time.perf_counter() - t0)
    if not judged:
        return dict(columns, status=RolloutStatus.SCORED, reason=NOT_JUDGED)
    assert ctx.judge is not None
    t0 = time.perf_counter()
    try:
        verdict = await ctx.judge.judge(png, requirements, prompt)
    except api_errors() as err:  # a local judge outage: the rollout itself finished
        kind, reason = classify_api_error(err, "judge", ctx.settings)
        return dict(
            columns,
            status=RolloutStatus.FAILED,
            is_score_valid=False,
            reason=reason,
            error=reason,
            failure_kind=kind,
            judge_s=time.perf_counter() - t0,
        )
    status, judged_columns = verdict_columns(verdict, time.perf_counter() - t0)
    return dict(columns, status=status, **judged_columns)


async def conclude(ctx: ServeContext, job: Job, columns: dict[str, Any], code: StatusCode, message: str) -> StatusCode:
    """Store first (so the rollout is in the store when eval-protocol sees its status), then log the status.
    A store failure is logged, never turned into an error status: the rollout finished for eval-protocol, and an
    error would make it pay for the same answer again."""
    req = job.req
    try:
        ref = await ctx.recorder.record(
            Served(
                job.place,
                req.metadata,
                req.model,
                job.prompt,
                job.requirements,
                ctx.judge is not None,
                columns,
                code,
                message,
                job.previous,
            )
        )
    except (StoreError, sqlite3.Error) as err:
        log.warning("could not store rollout %s: %s", req.metadata.rollout_id, err)
    else:
        ctx.publish(ref, columns["status"])
    await log_status(ctx, req, code, message)
    return code


async def log_status(ctx: ServeContext, req: InitRequest, code: StatusCode, message: str) -> bool:
    ids = req.metadata
    record = log_record(
        code,
        message,
        rollout_id=ids.rollout_id,
        experiment_id=ids.experiment_id,
        run_id=ids.run_id,
        extras={"row_id": ids.row_id, "server": "svgagent serve"},
    )
    return await ctx.status_log.post(ctx.gateway_for(req), record, req.api_key)
