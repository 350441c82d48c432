"""`svgagent serve`'s policy call on the engine's client stack, against a hostile policy endpoint: an answer's numbers
are made sane where the engine's are (one reading of an answer), an answer past the cap or the deadline ends its
rollout with one line, and the server goes on serving."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
from loopback_servers import SVG, ScriptedEndpoint
from serve_support import init_body, post_init, serving

from svgagent.core.exchange.ep_status import StatusCode
from svgagent.core.scoring.models import FailureKind, RolloutStatus
from svgagent.core.scoring.render import Renderer
from svgagent.core.store.run_store import Store


@pytest.fixture(scope="module")
def endpoint() -> Iterator[ScriptedEndpoint]:
    with ScriptedEndpoint() as server:
        yield server


@pytest.fixture(scope="module")
def renderer() -> Iterator[Renderer]:
    with Renderer(size=64, workers=1) as shared:
        yield shared


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "runs.db") as opened:
        yield opened


async def _serve_one(store: Store, renderer: Renderer, endpoint: ScriptedEndpoint, case: str, **settings: object):
    """Serve one rollout whose policy is ``case``; (the stored rollout, the server's stats)."""
    # the status goes to the endpoint too (its /logs answers as the case does): a lost status is only a warning
    async with serving(store, renderer, settings=settings) as server, aiohttp.ClientSession() as session:
        status, _, _ = await post_init(session, server.url, init_body(endpoint.url(case), f"{case}-1"))
        assert status == 200
        await server.wait_idle()
        served = server.ctx.training.served(f"{case}-1")
        assert served is not None
        return store.get_rollout(served.rollout_id), server.stats


async def test_absurd_numbers_in_an_answer_are_stored_sane(store: Store, renderer: Renderer, endpoint) -> None:
    """usage.prompt_tokens = 10**30 as an integer, completion_tokens = -5, finish_reason a dict: read as the engine
    reads them (0, 0, its JSON text), so the store gets values it can hold."""
    rec, stats = await _serve_one(store, renderer, endpoint, "numbers")
    assert rec.status is RolloutStatus.SCORED
    assert (rec.prompt_tokens, rec.completion_tokens) == (0, 0)
    assert rec.finish_reason == '{"a": [1, 2]}'
    assert rec.raw_answer == SVG
    assert stats.finished == 1


@pytest.mark.parametrize(
    ("case", "settings", "code", "words"),
    [
        ("gzip-bomb", {}, StatusCode.INTERNAL, "policy endpoint: the answer is larger than 4 MiB"),
        ("padded", {}, StatusCode.INTERNAL, "policy endpoint: the answer is larger than 4 MiB"),
        ("endless-chunked", {}, StatusCode.INTERNAL, "policy endpoint: the answer is larger than 4 MiB"),
        ("huge-headers", {}, StatusCode.INTERNAL, "policy endpoint sent an unreadable answer"),
        ("slow-drip", {"request_timeout_s": 1}, StatusCode.DEADLINE_EXCEEDED, "policy request timed out after 1 s"),
    ],
)
async def test_a_hostile_answer_ends_its_rollout_with_one_line(
    store: Store, renderer: Renderer, endpoint, case: str, settings: dict[str, object], code: StatusCode, words: str
) -> None:
    rec, stats = await _serve_one(store, renderer, endpoint, case, **settings)
    assert rec.status is RolloutStatus.FAILED
    assert rec.is_score_valid is False
    assert words in (rec.error or "")
    assert "\n" not in (rec.error or "")
    assert rec.failure_kind in (FailureKind.BAD_RESPONSE, FailureKind.TIMEOUT)
    assert stats.errors == 1
