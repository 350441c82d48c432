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

Every stage has a deadline (:class:`Deadlines`: the wait for a slot, the policy call, the picture, the local judge,
the store write), so no rollout stays queued or running for good. Once the policy answered, what the rollout would
store if it were stopped now is kept on its :class:`Job` (``outcome``): a shutdown then stores it as answered and
logs it FINISHED (eval-protocol would otherwise pay for the same answer again). The status is logged only after the
store write has settled: a rollout whose own rows cannot be stored is stored again without them (failed, with the
reason); should the store take nothing at all, the status is still logged (a store failure never becomes an error
status) and kept in memory for ``/status``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from svgagent.core.config.settings import Settings
from svgagent.core.exchange.ep_status import StatusCode
from svgagent.core.run.events import EventBus
from svgagent.core.run.policy import api_errors, classify_api_error
from svgagent.core.scoring.errors import RenderError, StoreError
from svgagent.core.scoring.extract import extract_svg
from svgagent.core.scoring.judge import Judge
from svgagent.core.scoring.judge_profiles import profile_named
from svgagent.core.scoring.models import FailureKind, RolloutStatus, RolloutUpdate
from svgagent.core.scoring.render import Renderer
from svgagent.core.serve.policy_call import PolicyCallError, RetryPolicy, post_chat
from svgagent.core.serve.protocol import InitRequest, gateway_base
from svgagent.core.serve.recorder import Recorder
from svgagent.core.serve.security import KeyPolicy, url_host
from svgagent.core.serve.status_log import StatusLogger, log_record
from svgagent.core.serve.training_runs import Placement, Served, ServedRef, TrainingStore
from svgagent.core.store.verdict_columns import verdict_columns

log = logging.getLogger("svgagent.serve")
NOT_JUDGED = "not judged here (the evaluator scores it on the platform; `svgagent serve --judge` scores locally)"
STOPPED_ANSWERED = "svgagent serve stopped before the picture was made (the policy's answer is stored)"
STOPPED_JUDGING = "svgagent serve stopped before the local judge answered (the answer and picture are stored)"
_FIREWORKS_PREFIX = "fireworks_ai/"  # eval-protocol's LiteLLM routing prefix; the Fireworks API itself wants none
QUEUE_TIMEOUT_S = 120.0  # eval-protocol's RemoteRolloutProcessor stops polling a rollout after 120 s by default
STORE_TIMEOUT_S = 30.0
POLICY_BACKSTOP_S = 5.0  # past the policy call's own deadline, the stage is ended whatever the transport does
UNSTORED_KEPT = 10_000  # statuses remembered for rollouts the store could not take (the oldest are forgotten)


@dataclass(frozen=True)
class Deadlines:
    """How long each stage of one rollout may take, in seconds."""

    queue_s: float = QUEUE_TIMEOUT_S  # waiting for a free slot (--queue-timeout)
    policy_s: float = 100.0  # the policy call, retries included (--rollout-timeout)
    render_s: float = 35.0  # the picture, the wait for a render worker included
    judge_s: float = 100.0  # the local judge (--judge)
    store_s: float = STORE_TIMEOUT_S  # the store write

    @classmethod
    def of(cls, settings: Settings, *, rollout_timeout_s: float, queue_timeout_s: float) -> Deadlines:
        """The render stage may wait for about two renders ahead of its own; the judge gets the policy's time."""
        return cls(
            queue_s=queue_timeout_s,
            policy_s=rollout_timeout_s,
            render_s=3 * settings.render_timeout_s + 5.0,
            judge_s=rollout_timeout_s,
        )


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
    deadlines: Deadlines = field(default_factory=Deadlines)
    bus: EventBus[RolloutUpdate] | None = None
    recorder: Recorder = field(init=False)  # the store writes of ended rollouts, batched
    # the statuses logged for rollouts the store could not take, so /status still answers them (newest last)
    unstored: OrderedDict[str, tuple[int, str]] = field(init=False, default_factory=OrderedDict)

    def __post_init__(self) -> None:
        self.recorder = Recorder(self.training)

    @property
    def retry(self) -> RetryPolicy:
        return RetryPolicy(
            max_retries=self.settings.max_retries,
            request_timeout_s=self.settings.request_timeout_s,
            deadline_s=self.deadlines.policy_s,
        )

    def gateway_for(self, req: InitRequest) -> str:
        return self.gateway_url or gateway_base(req.model_base_url)

    def publish(self, ref: ServedRef, status: RolloutStatus) -> None:
        """A stored rollout, on the bus (``svgagent tui --serve`` shows it as it arrives)."""
        if self.bus is not None:
            self.bus.publish(RolloutUpdate(ref.run_id, ref.rollout_id, status))

    def remember_unstored(self, rollout_id: str, code: StatusCode, message: str) -> None:
        self.unstored.pop(rollout_id, None)
        self.unstored[rollout_id] = (int(code), message)
        while len(self.unstored) > UNSTORED_KEPT:
            self.unstored.popitem(last=False)


def policy_body(req: InitRequest) -> dict[str, Any]:
    model = req.model
    if model.startswith(_FIREWORKS_PREFIX) and url_host(req.model_base_url) == "api.fireworks.ai":
        model = model[len(_FIREWORKS_PREFIX) :]
    body: dict[str, Any] = {"model": model, "messages": req.chat_messages(), **req.sampling()}
    if req.tools:
        body["tools"] = req.tools
    return body


@dataclass(frozen=True)
class Outcome:
    """What a rollout stores and logs: its columns, the status code and message."""

    columns: dict[str, Any]
    code: StatusCode
    message: str


@dataclass
class Job:
    """One accepted rollout: the request, where it will be stored, the prompt and requirements read from it,
    and (for eval-protocol's retry of a rollout that ended in an error) the earlier attempt. While it runs:
    ``outcome``, what it would store were it stopped now (set once the policy answered), and ``stored``, where it
    was stored (set at the commit)."""

    req: InitRequest
    place: Placement
    prompt: str
    requirements: list[str]
    previous: ServedRef | None = None
    outcome: Outcome | None = None
    stored: ServedRef | None = None


FINISHED = "Rollout finished"


async def serve_rollout(ctx: ServeContext, job: Job) -> StatusCode:
    """Run one accepted rollout to its end; returns the status code that was logged."""
    req = job.req
    started = time.perf_counter()
    try:
        async with asyncio.timeout(ctx.deadlines.policy_s + POLICY_BACKSTOP_S):
            answer = await post_chat(
                ctx.http,
                f"{req.model_base_url}/chat/completions",
                policy_body(req),
                ctx.keys.key_for(req.model_base_url, req.api_key),
                ctx.retry,
            )
    except (PolicyCallError, TimeoutError) as err:
        if isinstance(err, TimeoutError):  # the backstop: post_chat ends the call at its own deadline first
            err = PolicyCallError(
                StatusCode.DEADLINE_EXCEEDED,
                f"policy call exceeded the rollout deadline of {ctx.deadlines.policy_s:g} s",
            )
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
    _answered(job, columns, STOPPED_ANSWERED)
    judged = ctx.judge is not None and bool(job.requirements)
    columns.update(await _picture(ctx, answer.content, judged))
    if "png" in columns:
        if judged:
            _answered(job, columns, STOPPED_JUDGING)
            columns.update(await _judge(ctx, columns["png"], job))
        else:
            columns.update(status=RolloutStatus.SCORED, reason=NOT_JUDGED)
    return await conclude(ctx, job, columns, StatusCode.FINISHED, FINISHED)


def _answered(job: Job, columns: dict[str, Any], reason: str) -> None:
    """The policy answered: were the rollout stopped now, it would be stored with ``columns`` (failed, ``reason``)
    and logged FINISHED."""
    stopped = dict(status=RolloutStatus.FAILED, is_score_valid=False, reason=reason, failure_kind=FailureKind.OTHER)
    job.outcome = Outcome({**columns, **stopped}, StatusCode.FINISHED, FINISHED)


async def _picture(ctx: ServeContext, answer: str, judged: bool) -> dict[str, Any]:
    """The SVG and its picture (``png``), or the status and reason of a rollout that has none."""
    extracted = extract_svg(answer)
    zero = dict(score=0.0, fulfilled=0, is_score_valid=True) if judged else {}  # no usable SVG: a valid 0
    profile = profile_named(ctx.settings.judge_profile)
    if extracted.svg is None:
        return dict(status=RolloutStatus.FAILED, reason=extracted.reason, failure_kind=FailureKind.NO_SVG, **zero)
    t0 = time.perf_counter()
    try:
        async with asyncio.timeout(ctx.deadlines.render_s):
            png = await ctx.renderer.render(extracted.svg, profile.render_size(ctx.settings.render_size))
    except RenderError as err:
        failed = zero if profile.render_failure_valid or not judged else dict(is_score_valid=False)
        return dict(
            status=RolloutStatus.FAILED,
            svg=extracted.svg,
            reason=f"render failed: {err}",
            failure_kind=FailureKind.RENDER,
            render_s=time.perf_counter() - t0,
            **failed,
        )
    except TimeoutError:  # the render workers were all busy: no verdict on the SVG
        reason = f"not rendered within {ctx.deadlines.render_s:g} s (the render workers were busy)"
        return dict(
            status=RolloutStatus.FAILED,
            svg=extracted.svg,
            is_score_valid=False,
            reason=reason,
            error=reason,
            failure_kind=FailureKind.TIMEOUT,
            render_s=time.perf_counter() - t0,
        )
    return dict(svg=extracted.svg, png=png, render_s=time.perf_counter() - t0)


async def _judge(ctx: ServeContext, png: bytes, job: Job) -> dict[str, Any]:
    """The local judge's verdict columns; a judge outage (or one past its deadline) fails the rollout's score, not
    the rollout: it finished."""
    assert ctx.judge is not None
    t0 = time.perf_counter()
    try:
        async with asyncio.timeout(ctx.deadlines.judge_s):
            verdict = await ctx.judge.judge(png, job.requirements, job.prompt)
    except TimeoutError:
        kind, reason = FailureKind.TIMEOUT, f"the local judge did not answer within {ctx.deadlines.judge_s:g} s"
    except api_errors() as err:
        kind, reason = classify_api_error(err, "judge", ctx.settings)
    else:
        status, judged_columns = verdict_columns(verdict, time.perf_counter() - t0)
        return dict(status=status, **judged_columns)
    return dict(
        status=RolloutStatus.FAILED,
        is_score_valid=False,
        reason=reason,
        error=reason,
        failure_kind=kind,
        judge_s=time.perf_counter() - t0,
    )


async def conclude(ctx: ServeContext, job: Job, columns: dict[str, Any], code: StatusCode, message: str) -> StatusCode:
    """Store first (so the rollout is in the store when eval-protocol sees its status), then log the status.

    A rollout whose rows cannot be stored is stored again as failed with the reason, without the columns it
    carried; a store that takes nothing at all is logged, never turned into an error status (the rollout finished
    for eval-protocol, and an error would make it pay for the same answer again), and its status is kept for
    ``/status``."""
    req = job.req
    job.outcome = Outcome(columns, code, message)
    try:
        ref = await _store(ctx, job, columns, code, message)
    except StoreError as err:
        log.warning("could not store rollout %s: %s", req.metadata.rollout_id, err)
        problem = f"svgagent serve could not store this rollout: {err}"
        bare = dict(
            status=RolloutStatus.FAILED,
            is_score_valid=False,
            reason=problem,
            error=problem,
            failure_kind=FailureKind.INTERNAL,
            generation_s=columns.get("generation_s"),
        )
        try:
            ref = await _store(ctx, job, bare, code, message)
        except StoreError as again:
            log.warning("could not store rollout %s at all: %s", req.metadata.rollout_id, again)
            ctx.remember_unstored(req.metadata.rollout_id, code, message)
            ref = None
        else:
            columns = bare
    if ref is not None:
        ctx.publish(ref, columns["status"])
    await log_status(ctx, req, code, message)
    return code


async def _store(ctx: ServeContext, job: Job, columns: dict[str, Any], code: StatusCode, message: str) -> ServedRef:
    """One store write through the recorder, within the store stage's deadline; StoreError when it failed."""
    req = job.req
    served = Served(
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
    try:
        async with asyncio.timeout(ctx.deadlines.store_s):
            return await ctx.recorder.record(served, on_commit=_stored_to(job))
    except TimeoutError:
        raise StoreError(f"not stored within {ctx.deadlines.store_s:g} s") from None


def _stored_to(job: Job) -> Callable[[ServedRef], None]:
    def stored(ref: ServedRef) -> None:
        job.stored = ref

    return stored


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
