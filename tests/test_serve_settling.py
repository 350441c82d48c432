"""`svgagent serve` settles every rollout: hostile answers cannot jam the store writes, every stage has a deadline,
the gateway hears FINISHED only for a stored rollout, and /init is bounded in bytes and by the disk's free space.

The policy is a loopback endpoint that answers as a hostile one would (tests/hostile_policy.py), behind the
tracing-gateway simulator; the server runs in this process on a tmp store."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from hostile_policy import HostilePolicy, hostile_policy
from serve_support import init_body, post_init, serving

from svgagent.core.exchange.ep_status import StatusCode
from svgagent.core.scoring.models import FailureKind, RolloutStatus
from svgagent.core.scoring.render import Renderer
from svgagent.core.serve.admission import MB
from svgagent.core.serve.server import RolloutServer
from svgagent.core.sim.tracing_gateway import TracingGateway
from svgagent.core.store.run_store import Store

SETTLE_S = 30.0  # bounds a broken server's hang; a settled batch takes well under a second


@pytest.fixture(scope="module")
def renderer() -> Iterator[Renderer]:
    shared = Renderer(size=64, workers=1)
    yield shared
    shared.close()


@dataclass
class Rig:
    server: RolloutServer
    gateway: TracingGateway
    policy: HostilePolicy
    store: Store
    session: aiohttp.ClientSession
    # for each status the gateway received: (rollout id, code, whether another connection read the rollout then)
    heard: list[tuple[str, int, bool]]

    async def init(self, rollout_id: str, model: str = "good", **kw: Any) -> tuple[int, dict[str, Any], Any]:
        return await post_init(
            self.session, self.server.url, init_body(self.gateway.base_url, rollout_id, model=model, **kw)
        )

    async def settle(self) -> None:
        await asyncio.wait_for(self.server.wait_idle(), SETTLE_S)

    async def health(self) -> dict[str, Any]:
        async with self.session.get(f"{self.server.url}/") as resp:
            return await resp.json()

    async def status(self, rollout_id: str) -> tuple[int, dict[str, Any]]:
        async with self.session.get(f"{self.server.url}/status", params={"rollout_id": rollout_id}) as resp:
            return resp.status, await resp.json()

    def codes(self, rollout_id: str) -> list[int]:
        return [e["status"]["code"] for e in self.gateway.logs(rollout_id) if e["status"]]

    def stored(self, rollout_id: str) -> Any:
        ref = self.server.ctx.training.served(rollout_id)
        return None if ref is None else self.store.get_rollout(ref.rollout_id)


@asynccontextmanager
async def rig(tmp_path: Path, renderer: Renderer, **options: Any) -> AsyncIterator[Rig]:
    heard: list[tuple[str, int, bool]] = []
    path = tmp_path / "runs.db"

    def on_log(entry: dict[str, Any]) -> None:  # on the gateway's thread, as the status arrives
        rollout_id = next(t for t in entry["tags"] if t.startswith("rollout_id:")).removeprefix("rollout_id:")
        with sqlite3.connect(path) as other:
            found = other.execute(
                "SELECT COUNT(*) FROM served_rollouts WHERE ep_rollout_id = ?", (rollout_id,)
            ).fetchone()[0]
        heard.append((rollout_id, entry["status"]["code"], found == 1))

    async with hostile_policy() as policy:
        with TracingGateway(policy.url, on_log=on_log) as gateway, Store(path) as store:
            async with serving(store, renderer, **options) as server, aiohttp.ClientSession() as session:
                yield Rig(server, gateway, policy, store, session, heard)
                policy.release()


async def test_sixteen_hostile_answers_then_a_good_one_all_settle_and_are_stored(
    tmp_path: Path, renderer: Renderer
) -> None:
    """An answer whose usage holds 10**30 (no SQLite integer) used to raise OverflowError in the batch's store
    write, out of the recorder's timer: every rollout batched with it, and every later one, waited for good."""
    async with rig(tmp_path, renderer) as r:
        for i in range(16):
            assert (await r.init(f"hostile-{i}", "overflow"))[0] == 200
        assert (await r.init("good"))[0] == 200
        await r.settle()
        health = await r.health()
        assert (health["running"], health["queued"], health["finished"], health["stored"]) == (0, 0, 17, 17)
        for rid in [f"hostile-{i}" for i in range(16)] + ["good"]:
            assert r.codes(rid) == [StatusCode.FINISHED], rid
            rec = r.stored(rid)
            assert rec is not None and rec.raw_answer and rec.status is RolloutStatus.SCORED, rid
        hostile = r.stored("hostile-0")
        assert (hostile.prompt_tokens, hostile.completion_tokens) == (0, 0)  # not counts: read as 0
        assert r.stored("good").prompt_tokens == 12


async def test_a_dict_finish_reason_is_stored_as_its_json_text(tmp_path: Path, renderer: Renderer) -> None:
    """A JSON object as finish_reason (SQLite binds no dict) made its rollout fail to store, while FINISHED was
    logged for it (its /status then answered 404)."""
    async with rig(tmp_path, renderer) as r:
        await r.init("dict-finish", "dict-finish")
        await r.settle()
        assert json.loads(r.stored("dict-finish").finish_reason) == {"type": "stop", "nested": {"x": [1, 2, 3]}}
        assert r.codes("dict-finish") == [StatusCode.FINISHED]
        status, answer = await r.status("dict-finish")
        assert status == 200 and answer["status"]["code"] == StatusCode.FINISHED


async def test_a_lone_surrogate_in_the_answer_or_the_prompt_is_stored(tmp_path: Path, renderer: Renderer) -> None:
    """JSON may say \\ud800, UTF-8 cannot: such a string raised UnicodeEncodeError in the store write (and jammed
    the batch as the overflow did). It is stored with U+FFFD in its place."""
    async with rig(tmp_path, renderer) as r:
        await r.init("surrogate", "surrogate")
        body = init_body(r.gateway.base_url, "prompt-surrogate", model="good")
        raw = json.dumps(body).replace("A red fox", "A red \\udc00 fox").encode()
        assert (await post_init(r.session, r.server.url, None, raw=raw))[0] == 200
        await r.settle()
        assert "\ufffd" in r.stored("surrogate").raw_answer
        assert "\ufffd" in r.stored("prompt-surrogate").prompt
        for rid in ("surrogate", "prompt-surrogate"):
            assert r.codes(rid) == [StatusCode.FINISHED]


async def test_the_gateway_hears_finished_only_for_a_rollout_already_stored(tmp_path: Path, renderer: Renderer) -> None:
    """Every status the gateway receives is for a rollout another connection already reads in the store — the
    hostile answers' too, and one whose own rows cannot be written (stored again without them, failed, with the
    reason)."""
    async with rig(tmp_path, renderer) as r:
        training = r.server.ctx.training
        insert = training._insert

        def poisoned(db: Any, one: Any, *args: Any) -> Any:
            if one.ids.rollout_id == "poisoned" and "raw_answer" in one.columns:
                raise RuntimeError("this rollout's rows cannot be written")
            return insert(db, one, *args)

        training._insert = poisoned  # type: ignore[method-assign]
        for rid, model in [("ok-0", "good"), ("overflow", "overflow"), ("dict", "dict-finish"), ("poisoned", "good")]:
            await r.init(rid, model)
        await r.settle()
        assert sorted(r.heard) == sorted(
            (rid, int(StatusCode.FINISHED), True) for rid in ("ok-0", "overflow", "dict", "poisoned")
        )
        poisoned_rec = r.stored("poisoned")
        assert poisoned_rec.status is RolloutStatus.FAILED
        assert poisoned_rec.failure_kind is FailureKind.INTERNAL
        assert "RuntimeError: this rollout's rows cannot be written" in poisoned_rec.reason
        assert (await r.status("poisoned"))[1]["status"]["code"] == StatusCode.FINISHED


async def test_a_store_that_takes_nothing_still_answers_status_and_logs_finished(
    tmp_path: Path, renderer: Renderer
) -> None:
    """The store write has a deadline too: a write that never settles ends the store stage; the rollout's status
    is logged (never an error: eval-protocol would pay for the answer again) and /status answers it, not 404."""
    async with rig(tmp_path, renderer) as r:
        r.server.ctx.deadlines = replace(r.server.ctx.deadlines, store_s=0.2)
        r.server.ctx.recorder.flush = lambda: None  # type: ignore[method-assign] - the commit never comes
        r.server.ctx.recorder.window_s = 3600
        await r.init("never-stored")
        await r.settle()
        assert r.codes("never-stored") == [StatusCode.FINISHED]
        status, answer = await r.status("never-stored")
        assert status == 200
        assert answer["terminated"] is True and answer["status"]["code"] == StatusCode.FINISHED
        assert r.server.ctx.training.served("never-stored") is None


async def test_a_rollout_waits_for_a_slot_at_most_the_queue_deadline(tmp_path: Path, renderer: Renderer) -> None:
    """A rollout behind a stuck one used to stay queued for good: now it ends DEADLINE_EXCEEDED (eval-protocol
    retries that code) without its policy ever being called, stored with the reason."""
    async with rig(tmp_path, renderer, concurrency=1, queue_timeout_s=0.3, rollout_timeout_s=60) as r:
        await r.init("stuck", "silent")
        await asyncio.wait_for(_until(lambda: r.policy.requests["silent"] == 1), SETTLE_S)
        await r.init("waiting", "good")
        await asyncio.wait_for(_until(lambda: r.codes("waiting") != []), SETTLE_S)
        assert r.codes("waiting") == [StatusCode.DEADLINE_EXCEEDED]
        assert r.policy.requests["good"] == 0
        waited = r.stored("waiting")
        assert waited.failure_kind is FailureKind.TIMEOUT and "for a free slot" in waited.reason
        r.policy.release()
        await r.settle()


async def test_the_render_and_judge_stages_have_deadlines(tmp_path: Path, renderer: Renderer) -> None:
    """A judge that never answers (and a render that never ends) cost the rollout its picture or verdict, not its
    end: it is stored with its answer, failed as a timeout (no verdict on the SVG), and logged FINISHED."""
    async with hostile_policy() as judge_endpoint:
        judge = {"openai_api_key": "judge-key", "judge_base_url": judge_endpoint.url, "judge_model": "silent"}
        async with rig(tmp_path, renderer, settings=judge, judge=True) as r:
            r.server.ctx.deadlines = replace(r.server.ctx.deadlines, judge_s=0.3)
            await r.init("judge-stuck")
            await r.settle()
            rec = r.stored("judge-stuck")
            assert rec.status is RolloutStatus.FAILED and rec.failure_kind is FailureKind.TIMEOUT
            assert rec.is_score_valid is False and rec.png is not None and "judge did not answer" in rec.reason
            assert r.codes("judge-stuck") == [StatusCode.FINISHED]

            r.server.ctx.deadlines = replace(r.server.ctx.deadlines, render_s=0.2)
            render = r.server.ctx.renderer.render

            async def stuck_render(*args: Any, **kwargs: Any) -> bytes:
                await asyncio.sleep(3600)
                return await render(*args, **kwargs)

            r.server.ctx.renderer.render = stuck_render  # type: ignore[method-assign]
            try:
                await r.init("render-stuck")
                await r.settle()
            finally:
                del r.server.ctx.renderer.render
            rec = r.stored("render-stuck")
            assert rec.failure_kind is FailureKind.TIMEOUT and rec.svg and rec.raw_answer
            assert "not rendered within" in rec.reason
            assert r.codes("render-stuck") == [StatusCode.FINISHED]
            judge_endpoint.release()


async def test_an_unexpected_error_after_the_answer_keeps_the_answer_and_logs_finished(
    tmp_path: Path, renderer: Renderer
) -> None:
    """A bug after the policy answered used to be logged INTERNAL (eval-protocol pays for the answer again)."""
    async with rig(tmp_path, renderer) as r:

        async def broken(*args: Any, **kwargs: Any) -> bytes:
            raise RuntimeError("a bug in the picture stage")

        r.server.ctx.renderer.render = broken  # type: ignore[method-assign]
        try:
            await r.init("bug")
            await r.settle()
        finally:
            del r.server.ctx.renderer.render
        rec = r.stored("bug")
        assert (
            rec.raw_answer and rec.failure_kind is FailureKind.INTERNAL and "a bug in the picture stage" in rec.reason
        )
        assert r.codes("bug") == [StatusCode.FINISHED]


async def test_init_bodies_are_bounded_in_bytes_with_429_and_retry_after(tmp_path: Path, renderer: Renderer) -> None:
    """The count limit alone let 4096 + 16 bodies of ~1 MB each be held; the bytes they hold are bounded too."""
    async with rig(tmp_path, renderer, queue_mb=1, rollout_timeout_s=60) as r:
        padded = []
        for i in range(3):
            body = init_body(r.gateway.base_url, f"big-{i}", model="silent")
            body["messages"].insert(0, {"role": "system", "content": "x" * 190_000})
            body["messages"].insert(0, {"role": "system", "content": "y" * 190_000})
            padded.append(body)
        first = await post_init(r.session, r.server.url, padded[0])
        second = await post_init(r.session, r.server.url, padded[1])
        third = await post_init(r.session, r.server.url, padded[2])
        assert (first[0], second[0], third[0]) == (200, 200, 429)
        assert third[2]["Retry-After"] == "1"
        assert "MB of /init bodies" in third[1]["error"]["message"]
        health = await r.health()
        assert health["busy"] == 1 and 760_000 < health["held_bytes"] <= 1 * MB
        r.policy.release()
        await r.settle()
        assert (await r.health())["held_bytes"] == 0
        assert (await post_init(r.session, r.server.url, padded[2]))[0] == 200  # room again once they ended
        await r.settle()


async def test_init_is_refused_with_507_while_the_stores_disk_is_low(tmp_path: Path, renderer: Renderer) -> None:
    """The free-space reading is injected (no disk is filled): under the floor, /init gets 507 with Retry-After
    and nothing is stored; above it again, it is accepted."""
    async with rig(tmp_path, renderer, min_free_mb=100) as r:
        free = {"bytes": 99 * MB}
        r.server.admission.free_bytes = lambda: free["bytes"]
        status, answer, headers = await r.init("low-disk")
        assert status == 507 and headers["Retry-After"] == "60"
        assert "99 MB free" in answer["error"]["message"]
        assert (await r.health())["low_disk"] == 1
        await r.settle()
        assert r.server.ctx.training.served("low-disk") is None and r.policy.requests["good"] == 0
        free["bytes"] = 100 * MB
        assert (await r.init("enough-disk"))[0] == 200
        await r.settle()
        assert r.stored("enough-disk") is not None


async def _until(predicate: Any) -> None:
    while not predicate():
        await asyncio.sleep(0.01)
