"""One served rollout: the policy call through the request's ``model_base_url``, then what svgagent keeps of it.

1. POST ``{model_base_url}/chat/completions`` with the request's messages, model and sampling parameters, and the
   key :class:`~svgagent.core.serve.security.KeyPolicy` picks (the request's). The openai client retries 429/5xx
   with backoff; the whole call has a deadline (``rollout_timeout_s``) shorter than eval-protocol's poll timeout,
   so a stuck policy ends as DEADLINE_EXCEEDED, not as a silent poll timeout on the other side.
2. Extract the SVG and render it with the sandboxed renderer (for display: costs nothing against the API); with
   ``--judge`` also score it with the project's judge (labelled local: the evaluator scores on the platform).
3. Store the outcome, then log the terminal status to the gateway: FINISHED once the policy answered (with or
   without an SVG — scoring is the evaluator's), an error code when it did not.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from dataclasses import dataclass
from typing import Any

import openai
from openai.types.chat import ChatCompletion

from svgagent.core.engine import verdict_columns
from svgagent.core.ep_status import StatusCode
from svgagent.core.events import EventBus
from svgagent.core.policy import PolicyError, answer_from, describe_api_error
from svgagent.core.scoring.errors import RenderError, StoreError
from svgagent.core.scoring.extract import extract_svg
from svgagent.core.scoring.judge import Judge
from svgagent.core.scoring.models import RolloutStatus, RolloutUpdate
from svgagent.core.scoring.render import Renderer
from svgagent.core.serve.protocol import InitRequest, gateway_base
from svgagent.core.serve.security import KeyPolicy, url_host
from svgagent.core.serve.status_log import StatusLogger, log_record
from svgagent.core.settings import Settings
from svgagent.core.training import ServedRef, TrainingStore

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
    policy: openai.AsyncOpenAI  # one pooled client: each call gives its own absolute URL and Authorization
    judge: Judge | None = None
    gateway_url: str | None = None  # None: the gateway of each request's model_base_url
    rollout_timeout_s: float = 100.0
    bus: EventBus[RolloutUpdate] | None = None

    def gateway_for(self, req: InitRequest) -> str:
        return self.gateway_url or gateway_base(req.model_base_url)

    def publish(self, ref: ServedRef, status: RolloutStatus, total: int, **fields: Any) -> None:
        if self.bus is not None:
            self.bus.publish(RolloutUpdate(
                run_id=ref.run_id, rollout_id=ref.rollout_id, status=status, row_index=ref.row_index,
                sample_index=ref.sample_index, score=fields.get("score"), fulfilled=fields.get("fulfilled"),
                total=total, is_score_valid=fields.get("is_score_valid"), error=fields.get("error")))


def code_for(err: BaseException) -> StatusCode:
    """The eval-protocol status for a policy call that failed after its retries."""
    if isinstance(err, (openai.APITimeoutError, TimeoutError)):
        return StatusCode.DEADLINE_EXCEEDED
    if isinstance(err, openai.APIConnectionError):
        return StatusCode.UNAVAILABLE
    if isinstance(err, openai.RateLimitError):
        return StatusCode.RESOURCE_EXHAUSTED
    if isinstance(err, openai.AuthenticationError):
        return StatusCode.UNAUTHENTICATED
    if isinstance(err, openai.PermissionDeniedError):
        return StatusCode.PERMISSION_DENIED
    if isinstance(err, openai.NotFoundError):
        return StatusCode.NOT_FOUND
    if isinstance(err, openai.APIStatusError):
        if err.status_code in (400, 422):
            return StatusCode.INVALID_ARGUMENT
        if err.status_code in (502, 503, 504):
            return StatusCode.UNAVAILABLE
    return StatusCode.INTERNAL


def policy_body(req: InitRequest) -> dict[str, Any]:
    model = req.model
    if model.startswith(_FIREWORKS_PREFIX) and url_host(req.model_base_url) == "api.fireworks.ai":
        model = model[len(_FIREWORKS_PREFIX):]
    body: dict[str, Any] = {"model": model, "messages": req.chat_messages(), **req.sampling()}
    if req.tools:
        body["tools"] = req.tools
    return body


async def call_policy(ctx: ServeContext, req: InitRequest) -> ChatCompletion:
    key = ctx.keys.key_for(req.model_base_url, req.api_key)
    headers: dict[str, Any] = {"Authorization": f"Bearer {key}" if key else openai.omit}
    timeout = min(ctx.settings.request_timeout_s, ctx.rollout_timeout_s)
    async with asyncio.timeout(ctx.rollout_timeout_s):
        return await ctx.policy.post(f"{req.model_base_url}/chat/completions", body=policy_body(req),
                                     cast_to=ChatCompletion, options={"headers": headers, "timeout": timeout})


async def serve_rollout(ctx: ServeContext, req: InitRequest, ref: ServedRef, prompt: str,
                        requirements: list[str]) -> StatusCode:
    """Run one accepted rollout to its end; returns the status code that was logged."""
    ctx.publish(ref, RolloutStatus.GENERATING, len(requirements))
    started = time.perf_counter()
    try:
        answer = answer_from(await call_policy(ctx, req))
    except (openai.APIError, PolicyError, TimeoutError) as err:
        code = code_for(err)
        if isinstance(err, TimeoutError):
            message = f"policy call exceeded the rollout deadline of {ctx.rollout_timeout_s:g} s"
        else:
            message = describe_api_error(err, "policy", ctx.settings.model_copy(update={"base_url": req.model_base_url}))
        columns = dict(status=RolloutStatus.FAILED, is_score_valid=False, reason=message, error=message,
                       generation_s=time.perf_counter() - started)
        return await _conclude(ctx, req, ref, columns, code, message, len(requirements))
    columns: dict[str, Any] = dict(
        raw_answer=answer.content, finish_reason=answer.finish_reason or "unknown",
        prompt_tokens=answer.usage.prompt_tokens, completion_tokens=answer.usage.completion_tokens,
        generation_s=time.perf_counter() - started)
    columns.update(await _picture_and_score(ctx, answer.content, prompt, requirements, ref))
    return await _conclude(ctx, req, ref, columns, StatusCode.FINISHED, "Rollout finished", len(requirements))


async def _picture_and_score(ctx: ServeContext, answer: str, prompt: str, requirements: list[str],
                             ref: ServedRef) -> dict[str, Any]:
    judged = ctx.judge is not None and bool(requirements)
    extracted = extract_svg(answer)
    if extracted.svg is None:
        zero = dict(score=0.0, fulfilled=0, is_score_valid=True) if judged else {}
        return dict(status=RolloutStatus.FAILED, reason=extracted.reason, **zero)
    ctx.publish(ref, RolloutStatus.RENDERING, len(requirements))
    t0 = time.perf_counter()
    try:
        png = await ctx.renderer.render(extracted.svg, ctx.settings.render_size)
    except RenderError as err:
        zero = dict(score=0.0, fulfilled=0, is_score_valid=True) if judged else {}
        return dict(status=RolloutStatus.FAILED, svg=extracted.svg, reason=f"render failed: {err}",
                    render_s=time.perf_counter() - t0, **zero)
    columns: dict[str, Any] = dict(svg=extracted.svg, png=png, render_s=time.perf_counter() - t0)
    if not judged:
        return dict(columns, status=RolloutStatus.SCORED, reason=NOT_JUDGED)
    assert ctx.judge is not None
    ctx.publish(ref, RolloutStatus.JUDGING, len(requirements))
    t0 = time.perf_counter()
    try:
        verdict = await ctx.judge.judge(png, requirements, prompt)
    except openai.APIError as err:  # a local judge outage: the rollout itself finished
        reason = describe_api_error(err, "judge", ctx.settings)
        return dict(columns, status=RolloutStatus.FAILED, is_score_valid=False, reason=reason, error=reason,
                    judge_s=time.perf_counter() - t0)
    status, judged_columns = verdict_columns(verdict, time.perf_counter() - t0)
    return dict(columns, status=status, **judged_columns)


async def _conclude(ctx: ServeContext, req: InitRequest, ref: ServedRef, columns: dict[str, Any],
                    code: StatusCode, message: str, total: int) -> StatusCode:
    """Store first (so the rollout is in the store when eval-protocol sees its status), then log the status."""
    store_outcome(ctx, ref, columns, code, message)
    ctx.publish(ref, columns["status"], total, score=columns.get("score"), fulfilled=columns.get("fulfilled"),
                is_score_valid=columns.get("is_score_valid"), error=columns.get("error"))
    await log_status(ctx, req, code, message)
    return code


def store_outcome(ctx: ServeContext, ref: ServedRef, columns: dict[str, Any], code: StatusCode, message: str) -> bool:
    """Store a rollout's outcome; a store failure is logged, never turned into an error status (the rollout
    finished for eval-protocol, and an error would make it pay for the same answer again)."""
    try:
        ctx.training.finish(ref, columns, code, message)
    except (StoreError, sqlite3.Error) as err:
        log.warning("could not store the outcome of rollout %s: %s", ref.ep_rollout_id, err)
        return False
    return True


async def log_status(ctx: ServeContext, req: InitRequest, code: StatusCode, message: str) -> bool:
    ids = req.metadata
    record = log_record(code, message, rollout_id=ids.rollout_id, experiment_id=ids.experiment_id,
                        run_id=ids.run_id, extras={"row_id": ids.row_id, "server": "svgagent serve"})
    return await ctx.status_log.post(ctx.gateway_for(req), record, req.api_key)
