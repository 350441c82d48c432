"""The asynchronous evaluation engine: many rollouts at once, every state change stored and published.

A rollout goes ``queued → generating → rendering → judging → scored``, or ``failed`` with a reason, a typed
:class:`FailureKind` and a flag saying whether its score is a valid measurement (a missing or broken SVG is a valid
0; an endpoint outage is not). Policy and judge calls have separate concurrency limits; renders run in the
sandboxed worker pool.

A run is processed under a lease (:mod:`svgagent.core.store.leases`): a second worker on the same run is refused. A
storage error (disk full, damaged file) never becomes a rollout's verdict: the run stops as ``interrupted`` and the
:class:`StoreError` propagates, so a resume redoes exactly the rollouts whose results were not stored, reusing
every answer that was.

(Over 400 lines: a rollout's stages and the slots, commits and failures around them share the run's state.)
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from svgagent.core.config.prices import price_table
from svgagent.core.config.settings import Settings
from svgagent.core.run.budget import BudgetGate
from svgagent.core.run.dataset import Dataset
from svgagent.core.run.events import EventBus
from svgagent.core.run.policy import (
    PolicyAnswer,
    api_errors,
    classify_api_error,
    generate,
    judge_client,
    policy_client,
    request_params,
)
from svgagent.core.run.prompt import format_prompt
from svgagent.core.run.rollout_pool import RolloutPool
from svgagent.core.run.setup import create_run
from svgagent.core.scoring.errors import ConfigError, RenderError, RunBusy, StoreError
from svgagent.core.scoring.judge import Judge
from svgagent.core.scoring.judge_profiles import profile_named
from svgagent.core.scoring.models import (
    FailureKind,
    RolloutStatus,
    RolloutUpdate,
    Usage,
)
from svgagent.core.scoring.render import Renderer, usable_cpus
from svgagent.core.scoring.renderers import make_renderer
from svgagent.core.store.batch_writer import RolloutWriter
from svgagent.core.store.leases import HEARTBEAT_S, LeaseOwner
from svgagent.core.store.run_store import Store
from svgagent.core.store.size_caps import fits
from svgagent.core.store.typed_rows import RolloutRecord, RunRecord, RunStatus, RunSummary
from svgagent.core.store.verdict_columns import (
    cache_key,
    profile_key,
    verdict_columns,
    verdict_from_cache,
    verdict_to_cache,
)

if TYPE_CHECKING:
    import openai

log = logging.getLogger(__name__)
T = TypeVar("T")


LOOP_CONCURRENCY = 128  # policy calls in flight one event loop keeps up with (bench/engine.py: ~3 ms CPU/rollout)


def engine_workers(settings: Settings) -> int:
    """How many engine processes share a run: the ``workers`` setting, else as many as the concurrency needs
    (one per LOOP_CONCURRENCY calls in flight), at most half the CPUs (the render workers need the rest)."""
    if settings.budget is not None:  # one process keeps the run's dollars (core/run/budget.py)
        return 1
    if settings.workers is not None:
        return settings.workers
    return max(1, min(usable_cpus() // 2, math.ceil(settings.concurrency / LOOP_CONCURRENCY)))


def refuse_other_recipe(run: RunRecord, settings: Settings) -> None:
    """A run is finished with the judge profile and renderer it was stored with: ConfigError for settings naming
    others (their scores would not be comparable with the ones it already has)."""
    for name, stored in (("judge_profile", run.judge_profile), ("renderer", run.renderer)):
        given = getattr(settings, name).value
        if given != stored:
            raise ConfigError(
                f"run {run.run_id} is scored with {name} {stored}, not {given}: a resume keeps what the run measures "
                f"(start a new run for {given})"
            )


class Engine:
    """Runs rollouts of runs held in ``store``. Construct, then ``create_run`` and ``await run(run_id)``.

    Collaborators (clients, renderer) may be injected for tests; those the engine creates it also closes
    (``await engine.aclose()`` or ``async with``).
    """

    def __init__(
        self,
        settings: Settings,
        store: Store,
        *,
        bus: EventBus[RolloutUpdate] | None = None,
        renderer: Renderer | None = None,
        policy: openai.AsyncOpenAI | None = None,
        judge: openai.AsyncOpenAI | None = None,
        use_cache: bool | None = None,
        rollouts: Sequence[str] | None = None,
        render_workers: int | None = None,
    ) -> None:
        """``rollouts``: this engine is one of a run's worker processes (svgagent.core.run.engine_workers) and
        processes only these rollouts of it; the parent holds the lease and sets the run's status."""
        self.settings = settings
        self.store = store
        self.bus: EventBus[RolloutUpdate] = bus or EventBus()
        self._shard = list(rollouts) if rollouts is not None else None
        self._own_renderer = renderer is None
        self._renderer = renderer or make_renderer(settings, workers=render_workers)
        self._own_policy = policy is None
        self._policy = policy or policy_client(settings)
        self._own_judge = judge is None
        self._judge_client = judge or judge_client(settings)
        self._profile = profile_named(settings.judge_profile)  # the score's recipe: picture, question, failures
        self._judge = Judge(self._judge_client, settings.judge_model, settings.judge_mode, profile=self._profile)
        self.use_cache = settings.cache if use_cache is None else use_cache
        self._pool: RolloutPool[RolloutRecord] | None = None  # the policy slots of the latest run (each makes its own)
        self._judge_sem = asyncio.Semaphore(settings.judge_concurrency)
        self._params = request_params(settings)
        self._prices = price_table(settings.prices)
        self._gate = BudgetGate(None, 0.0, 0.0, 0.0)  # the run's budget, set when a run starts
        # the policy request's messages of each dataset row: every sample sends the same
        self._requests: dict[tuple[str, tuple[str, ...]], list[dict[str, Any]]] = {}
        self.heartbeat_s = HEARTBEAT_S

    async def aclose(self) -> None:
        if self._own_renderer:
            self._renderer.close()
        if self._own_policy:
            await self._policy.close()
        if self._own_judge:
            await self._judge_client.close()

    async def __aenter__(self) -> Engine:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # --- runs -----------------------------------------------------------------------------------------------
    def create_run(self, dataset: Dataset, *, name: str | None = None) -> str:
        return create_run(self.settings, self.store, dataset, name=name, cache=self.use_cache)

    async def run(self, run_id: str) -> RunSummary:
        """Process every current rollout of ``run_id`` that is not finished; safe to call again (resume).
        Raises :class:`RunBusy` when another live worker holds the run, :class:`StoreError` when the store
        cannot be written (the run is then stopped as interrupted)."""
        if self._shard is not None:
            return await self._run_shard(run_id, self._shard)
        owner = LeaseOwner.this_process()
        self.store.acquire_lease(run_id, owner)
        started = time.monotonic()
        try:
            return await self._run_leased(run_id, owner)
        finally:
            try:  # the run's elapsed time is what its sessions worked, summed
                self.store.add_worked(run_id, time.monotonic() - started)
            except StoreError:
                log.warning("could not store the time worked on run %s", run_id)
            try:
                self.store.release_lease(run_id, owner)
            except StoreError:  # the store cannot be written: the lease ends with this process
                log.warning("could not release the lease on run %s", run_id)

    async def _run_leased(self, run_id: str, owner: LeaseOwner) -> RunSummary:
        self.store.reset_unfinished(run_id, owner)
        run = self.store.get_run(run_id)
        refuse_other_recipe(run, self.settings)
        chosen = run.settings.get("cache")
        if isinstance(chosen, bool):  # the run's own cache choice (core/run/setup.py), whoever resumes it
            self.use_cache = chosen
        workers = engine_workers(self.settings)
        if workers > 1:
            from svgagent.core.run.engine_workers import run_with_workers

            return await run_with_workers(self, run_id, owner, workers)
        # heavy: a resumed rollout brings its stored answer, so it is not generated again. Read in a thread: the
        # engine may share its event loop with the app, and 10,000 rollouts take a few hundred milliseconds.
        pending = await asyncio.to_thread(
            self._read, lambda store: store.list_rollouts(run_id, heavy=True, statuses=[RolloutStatus.QUEUED.value])
        )
        self._gate = BudgetGate(None, 0.0, 0.0, 0.0)
        if self.settings.budget is not None:
            self._gate = await asyncio.to_thread(
                self._read, lambda store: BudgetGate.for_run(self.settings, self._prices, store, run_id, pending)
            )
        self.store.set_run_status(run_id, RunStatus.RUNNING)
        try:
            await self._process(pending, self._keep_lease(run_id, owner))
        except BaseException:
            self._mark(run_id, RunStatus.INTERRUPTED)
            raise
        if self._gate.stopped:  # the budget stopped it before a call: resumable, like an interruption
            self._mark(run_id, RunStatus.INTERRUPTED)
            raise self._gate.reached()
        return await self._finish(run_id)

    async def _run_shard(self, run_id: str, rollout_ids: Sequence[str]) -> RunSummary:
        """As one of a run's worker processes: the given rollouts that are still queued, nothing else (no lease,
        no run status: the parent process does those)."""
        records = await asyncio.to_thread(self._read, lambda store: store.get_rollouts(rollout_ids, heavy=True))
        await self._process([r for r in records if r.status is RolloutStatus.QUEUED], None)
        return await asyncio.to_thread(self._read, lambda store: store.summarize(run_id, self.settings.threshold))

    async def _process(self, pending: Sequence[RolloutRecord], heartbeat: Any) -> None:
        """Every rollout of ``pending``, their changes through one RolloutWriter, until all are done; raises what
        stopped them (the heartbeat coroutine only ends by raising: lease lost or store unwritable)."""
        self._requests.clear()
        if pending:
            self._renderer.start()  # the workers boot while the first policy calls are out
        run_id = pending[0].run_id if pending else ""
        async with RolloutWriter(self.store, committed=self._publisher(run_id)) as self._writer:
            # a task per rollout as a policy slot frees up (core/run/rollout_pool.py); a resumed answer needs none. Each
            # run makes a pool of its own (a stopped one starts nothing more); its commits' callbacks reach it through
            # self._pool, which stays until the next run (a late callback of a failed run finds it stopped).
            self._pool = pool = RolloutPool(self._rollout, self.settings.concurrency)
            work = pool.start(
                [r for r in pending if self._has_answer(r)], [r for r in pending if not self._has_answer(r)]
            )
            beat = asyncio.create_task(heartbeat) if heartbeat is not None else None
            try:
                done, _ = await asyncio.wait({work} | ({beat} if beat else set()), return_when=asyncio.FIRST_COMPLETED)
                if work not in done and beat is not None:
                    beat.result()
                work.result()
                await self._writer.flush()
            except BaseException:
                for task in (work, *((beat,) if beat else ())):
                    task.cancel()
                await pool.stop()
                await asyncio.gather(work, *((beat,) if beat else ()), return_exceptions=True)
                await asyncio.shield(asyncio.to_thread(self._writer.close))  # what was queued is kept
                raise
            if beat is not None:
                beat.cancel()

    async def _finish(self, run_id: str) -> RunSummary:
        try:
            summary = await asyncio.to_thread(
                self._read, lambda store: store.summarize(run_id, self.settings.threshold)
            )
        except asyncio.CancelledError:  # stopped just as it finished: it did finish
            self._mark(run_id, RunStatus.COMPLETED)
            raise
        self.store.set_run_status(run_id, RunStatus.COMPLETED, summary)
        return summary

    def _mark(self, run_id: str, status: RunStatus) -> None:
        """Best effort on the way out: with the disk full even this may fail; the run then stays ``running``
        and its expired lease tells the next worker it is free."""
        try:
            self.store.set_run_status(run_id, status, self.store.summarize(run_id, self.settings.threshold))
        except StoreError as err:
            log.warning("could not mark run %s %s: %s", run_id, status.value, err)

    async def _keep_lease(self, run_id: str, owner: LeaseOwner) -> None:
        while True:
            await asyncio.sleep(self.heartbeat_s)
            if not self.store.renew_lease(run_id, owner):
                raise RunBusy(f"run {run_id} was taken over by another worker (this one missed its heartbeats)")

    def _read(self, query: Callable[[Store], T]) -> T:
        """Run a big read on a connection of its own (call it in a thread: the shared one stays free for writes)."""
        with self.store.reader() as store:
            return query(store)

    # --- one rollout ----------------------------------------------------------------------------------------
    # Every change goes through the run's RolloutWriter (svgagent.core.store.batch_writer): batched, published once
    # committed. A paid answer (policy answer, judge verdict) keeps the slot of its call until it is committed
    # (the slot is handed on by the commit's callback, while the rollout goes on), so a crash can cost at most
    # the answers of the calls in flight.
    def _emit(self, rec: RolloutRecord, status: RolloutStatus, **fields: Any) -> None:
        self._writer.submit(rec.rollout_id, {"status": status, **fields})

    def _commit_then(
        self,
        rec: RolloutRecord,
        status: RolloutStatus,
        then: Callable[[asyncio.Future[None]], None],
        cache: tuple[str, str, dict[str, Any]] | None,
        fields: dict[str, Any],
        *,
        urgent: bool,
    ) -> None:
        """Queue a paid answer's change (``urgent``: another call waits for its slot); ``then`` runs on the loop
        once it is committed (or failed)."""
        self._writer.commit_soon(
            rec.rollout_id, {"status": status, **fields}, cache=cache, urgent=urgent
        ).add_done_callback(then)

    def _publisher(self, run_id: str) -> Callable[[Any], None]:
        def committed(changes: Any) -> None:  # on the writer's thread (the bus is thread-safe), after each commit
            if self.bus.listened:  # nobody to tell (a headless run without a follower): no event objects
                for rollout_id, fields in changes:
                    self.bus.publish(RolloutUpdate(run_id, rollout_id, fields["status"]))

        return committed

    def _verdict_stored(self, stored: asyncio.Future[None]) -> None:
        self._judge_sem.release()
        self._pool.check_stored(stored)

    @staticmethod
    def _has_answer(rec: RolloutRecord) -> bool:
        """A resumed rollout that stored its policy answer: nothing to pay for, so no policy slot."""
        return rec.raw_answer is not None and rec.finish_reason is not None

    async def _rollout(self, rec: RolloutRecord) -> None:
        rollout_id = rec.rollout_id
        stage = "policy"
        drawn: dict[str, Any] = {}  # the PNG, once rendered: stored with the rollout's end (see _verdict)
        try:
            svg = await self._answer(rec)
            if svg is None:
                return
            t0 = time.perf_counter()
            try:
                png = await self._renderer.render(svg, self._profile.render_size(self.settings.render_size))
            except RenderError as err:
                valid = self._profile.render_failure_valid  # a valid 0, or (ep-quickstart) an invalid score
                self._emit(
                    rec,
                    RolloutStatus.FAILED,
                    score=0.0 if valid else None,
                    fulfilled=0 if valid else None,
                    is_score_valid=valid,
                    reason=f"render failed: {err}",
                    failure_kind=FailureKind.RENDER,
                    render_s=time.perf_counter() - t0,
                )
                return
            self._emit(rec, RolloutStatus.JUDGING, render_s=time.perf_counter() - t0)
            stage = "judge"
            drawn["png"] = png
            await self._verdict(rec, png)
        except asyncio.CancelledError:
            raise
        except StoreError:
            raise  # never a rollout's verdict: the run stops (see the module docstring)
        except api_errors() as err:
            kind, reason = classify_api_error(err, stage, self.settings)
            self._emit(
                rec,
                RolloutStatus.FAILED,
                score=None,
                is_score_valid=False,
                reason=reason,
                error=reason,
                failure_kind=kind,
                **drawn,
            )
        except Exception as err:  # a bug must not take the run down: record it on the rollout
            log.exception("rollout %s failed unexpectedly", rollout_id)
            reason = f"internal error in {stage} stage: {type(err).__name__}: {str(err)[:200]}"
            self._emit(
                rec,
                RolloutStatus.FAILED,
                score=None,
                is_score_valid=False,
                reason=reason,
                error=reason,
                failure_kind=FailureKind.INTERNAL,
                **drawn,
            )
        finally:
            self._gate.release(rollout_id)  # a rollout that ended before its judge call frees what it reserved

    @staticmethod
    def _svg_of(rec: RolloutRecord, content: str) -> tuple[str | None, str, FailureKind]:
        """The SVG to render, or None with the reason and kind. A resumed rollout renders the SVG it stored: its
        answer may have been cut to the size cap, and its SVG, when cut, was one the renderer refuses anyway."""
        truncated = rec.truncated or {}
        if rec.svg is not None and rec.raw_answer is not None:
            if "svg" in truncated:
                return (
                    None,
                    (f"render failed: the SVG is {truncated['svg']:,} characters, more than the renderer accepts"),
                    FailureKind.RENDER,
                )
            return rec.svg, "", FailureKind.RENDER
        from svgagent.core.scoring.extract import extract_svg  # its patterns compile after the first requests are out

        extracted = extract_svg(content)
        return extracted.svg, extracted.reason or "", FailureKind.NO_SVG

    async def _answer(self, rec: RolloutRecord) -> str | None:
        """Get the policy's answer — from the rollout itself (resume), the cache, or a new request — and store it
        with the rollout's next state (rendering its SVG, or failed without one). Returns the SVG to render.

        A new answer is committed before its policy slot is released, and cached in the same transaction (only
        whole answers: one cut to its cap is not), so a crash after a paid answer never pays for it again."""
        if self._has_answer(rec):
            answer = PolicyAnswer(
                rec.raw_answer, rec.finish_reason, Usage(rec.prompt_tokens or 0, rec.completion_tokens or 0)
            )
            svg, state, fields = self._next_state(rec, answer, {})
            self._emit(rec, state, **fields)  # nothing new to pay for: no need to wait for the commit
            return svg
        # This rollout holds a policy slot of the pool (it was started with it). A rollout waiting for one stays
        # queued: on a 10,000-rollout run, marking (and storing, and publishing) every rollout "generating" at once
        # froze the app for a second or more.
        held = True
        try:
            self._emit(rec, RolloutStatus.GENERATING)
            messages = self._request(rec)
            # the attempt is part of the key: a rerun is a new sample, never the previous attempt's answer
            key = (
                cache_key(
                    "policy",
                    self.settings.base_url,
                    self.settings.model,
                    self._params,
                    messages,
                    rec.sample_index,
                    rec.attempt,
                )
                if self.use_cache
                else ""
            )
            cached = self.store.cache_get(key) if self.use_cache else None
            if cached is None and not self._gate.admit_rollout(rec.rollout_id):  # it would pass the budget: not made
                self._emit(rec, RolloutStatus.QUEUED)
                self._pool.drain()
                return None
            t0 = time.perf_counter()
            if cached is not None:
                answer = PolicyAnswer.from_cache(cached)
            else:
                try:
                    answer = await generate(self._policy, self.settings.model, messages, self._params)
                except BaseException:
                    self._gate.settle("policy", 0.0)
                    raise
                self._gate.settle("policy", self._call_usd("policy", answer.usage))
            answered = dict(
                raw_answer=answer.content,
                finish_reason=answer.finish_reason or "unknown",
                prompt_tokens=answer.usage.prompt_tokens,
                completion_tokens=answer.usage.completion_tokens,
                cached_prompt_tokens=answer.usage.cached_prompt_tokens,
                generation_s=time.perf_counter() - t0,
                cached=cached is not None,
            )
            remember = self.use_cache and cached is None and fits("raw_answer", answer.content)
            svg, state, fields = self._next_state(rec, answer, answered)
            if cached is not None:  # paid for before: nothing to wait for
                self._emit(rec, state, **fields)
            else:  # the slot goes to the next rollout once the answer is committed; this one renders meanwhile
                self._commit_then(
                    rec,
                    state,
                    self._pool.release_when_stored,
                    (key, "policy", answer.to_cache()) if remember else None,
                    fields,
                    urgent=self._pool.waiting,
                )
                held = False
            return svg
        finally:
            if held:  # nothing paid for is waiting to be stored (cached, or the call failed): hand it on now
                self._pool.release()

    def _call_usd(self, side: str, usage: Usage, images: int = 0) -> float:
        """One call's dollars at the price table's rate (0 for a model without a price)."""
        price = self._prices.price_of(self.settings.model if side == "policy" else self.settings.judge_model)
        if price is None:
            return 0.0
        return price.call_usd(usage.prompt_tokens, usage.completion_tokens, usage.cached_prompt_tokens, images=images)

    def _request(self, rec: RolloutRecord) -> list[dict[str, Any]]:
        """The policy request's messages of ``rec``'s dataset row, built on its first sample (callers do not
        mutate them)."""
        key = (rec.prompt, tuple(rec.requirements))
        messages = self._requests.get(key)
        if messages is None:
            messages = self._requests[key] = [{"role": "user", "content": format_prompt(rec.prompt, rec.requirements)}]
        return messages

    def _next_state(
        self, rec: RolloutRecord, answer: PolicyAnswer, answered: dict[str, Any]
    ) -> tuple[str | None, RolloutStatus, dict[str, Any]]:
        """(SVG to render or None, the state the answer takes the rollout to, the columns to store with it)."""
        svg, why_not, kind = self._svg_of(rec, answer.content)
        if svg is None:
            return (
                None,
                RolloutStatus.FAILED,
                dict(score=0.0, fulfilled=0, is_score_valid=True, reason=why_not, failure_kind=kind, **answered),
            )
        return svg, RolloutStatus.RENDERING, dict(svg=svg, **answered)

    async def _verdict(self, rec: RolloutRecord, png: bytes) -> None:
        """Judge ``png`` (or take the cached verdict) and store the rollout's end; a new verdict is committed, and
        cached in the same transaction, before its judge slot is released.

        The PNG is stored with the verdict, not with ``judging``: SQLite rewrites a whole row on every UPDATE, so a
        PNG stored one state earlier had its ~12 kB of overflow pages written twice (bench/engine.py). A crash
        while judging loses nothing paid for: the resume renders the stored SVG again."""
        s = self.settings
        key = (
            cache_key(
                "judge",
                s.judge_base_url,
                s.judge_model,
                s.judge_mode.value,
                *profile_key(self._profile),
                hashlib.sha256(png).hexdigest(),
                rec.requirements,
                rec.attempt,
            )
            if self.use_cache
            else ""
        )
        cached = self.store.cache_get(key) if self.use_cache else None
        t0 = time.perf_counter()
        if cached is not None:
            status, judged = verdict_columns(verdict_from_cache(cached), time.perf_counter() - t0)
            self._emit(rec, status, png=png, **judged)
            return
        await self._judge_sem.acquire()
        held = True
        try:
            if not self._gate.admit_judge(rec.rollout_id):  # it would pass the budget: not made; a resume judges it
                self._emit(rec, RolloutStatus.QUEUED)
                self._pool.drain()
                return
            try:
                verdict = await self._judge.judge(png, rec.requirements, rec.prompt)
            except BaseException:
                self._gate.settle("judge", 0.0, rec.rollout_id)
                raise
            status, judged = verdict_columns(verdict, time.perf_counter() - t0)
            self._gate.settle(
                "judge",
                self._call_usd("judge", verdict.usage, images=1),
                rec.rollout_id,
            )
            remember = (
                verdict.valid
                and not verdict.unusable  # a failure scored 0 (svgbench) is asked again next time, not cached
                and self.use_cache
                and fits("judge_raw", verdict.raw)
                and fits("rationale", verdict.rationale)
            )
            self._commit_then(
                rec,
                status,
                self._verdict_stored,
                (key, "judge", verdict_to_cache(verdict)) if remember else None,
                dict(png=png, **judged),
                urgent=self._judge_sem.locked(),
            )
            held = False  # released by _verdict_stored once the verdict is committed
        finally:
            if held:
                self._judge_sem.release()
