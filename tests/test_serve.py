"""`svgagent serve` through real HTTP: eval-protocol-shaped /init bodies, the tracing-gateway simulator in front
of the policy simulator, the run store. Faults come from the simulator's knobs."""

from __future__ import annotations

import asyncio
import codecs
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
from serve_support import REQUEST_KEY, init_body, post_init, serving, wait_for

from svgagent.core.exchange.ep_status import StatusCode
from svgagent.core.scoring.models import RolloutStatus
from svgagent.core.scoring.render import Renderer
from svgagent.core.serve.access_log import ROLLOUT_ID, JsonAccessLogger, access_log
from svgagent.core.serve.server import STOPPED
from svgagent.core.serve.training_runs import TrainingStore
from svgagent.core.sim.simulator import SimConfig, Simulator
from svgagent.core.sim.tracing_gateway import TracingGateway
from svgagent.core.store.run_store import Store

OWN_KEY = "own-fw-key-never-to-strangers"


@pytest.fixture(scope="module")
def sim() -> Iterator[Simulator]:
    with Simulator(SimConfig(seed=3)) as running:
        yield running


@pytest.fixture(scope="module")
def gateway(sim: Simulator) -> Iterator[TracingGateway]:
    assert sim.base_url is not None
    with TracingGateway(sim.base_url) as running:
        yield running


@pytest.fixture(scope="module")
def renderer() -> Iterator[Renderer]:
    shared = Renderer(size=64, workers=2)
    yield shared
    shared.close()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "runs.db") as opened:
        yield opened


@pytest.fixture(autouse=True)
def calm_simulator(sim: Simulator) -> Iterator[None]:
    sim.configure(policy_latency_s=0.0, rate_limit_every=0, error_5xx_every=0, timeout_every=0)
    sim.reset_stats()
    yield
    sim.configure(policy_latency_s=0.0, rate_limit_every=0, error_5xx_every=0, timeout_every=0)


def codes(gateway: TracingGateway, rollout_id: str) -> list[int]:
    return [e["status"]["code"] for e in gateway.logs(rollout_id) if e["status"]]


async def test_a_rollout_is_served_stored_with_its_picture_and_logged_finished(
    store: Store, gateway: TracingGateway, sim: Simulator, renderer: Renderer
) -> None:
    async with serving(store, renderer) as server, aiohttp.ClientSession() as session:
        bodies = [init_body(gateway.base_url, f"basic-{i}", row=i) for i in range(3)]
        for body in bodies:
            status, answer, _ = await post_init(session, server.url, body)
            assert status == 200
            assert answer["status"] == "accepted"
        await server.wait_idle()
        async with session.get(f"{server.url}/status", params={"rollout_id": "basic-0"}) as resp:
            assert resp.status == 200
            assert await resp.json() == {
                "terminated": True,
                "info": {"state": "done"},
                "status": {"code": 100, "message": "Rollout finished", "details": []},
            }
        async with session.get(f"{server.url}/") as resp:
            health = await resp.json()
        for i in range(3):
            logs = gateway.logs(f"basic-{i}")
            assert [e["status"]["code"] for e in logs] == [StatusCode.FINISHED]
            assert set(logs[0]["tags"]) == {f"rollout_id:basic-{i}", "experiment_id:exp-1", "run_id:run-1"}
            (trace,) = gateway.traces(f"basic-{i}")  # the policy was called through the gateway
            assert trace["input"]["messages"] == bodies[i]["messages"]
    assert health["accepted"] == 3
    assert health["finished"] == 3
    assert health["status"] == "ok"
    assert sim.stats()["requests"]["policy"] == 3
    training = TrainingStore(store)
    (run,) = training.trainings()
    assert run.experiment_id == "exp-1"
    assert run.rollouts == 3
    (step,) = training.steps("exp-1")
    assert step.step == 1
    assert step.source == "run order"
    assert step.rollouts == 3
    assert step.judged == 0
    rollouts = {r.row_id: r for r in store.list_rollouts(step.run_id, heavy=True)}
    assert sorted(rollouts) == ["row_0", "row_1", "row_2"]
    for rec in rollouts.values():
        assert rec.raw_answer
        assert rec.prompt in {p for p, _ in __import__("serve_support").ROWS}
        assert rec.status.terminal
        assert rec.score is None  # not judged here: the evaluator scores
        if rec.svg is not None and rec.status is RolloutStatus.SCORED:
            assert rec.png is not None
            assert rec.png.startswith(b"\x89PNG")
    assert any(r.png for r in rollouts.values())
    assert store.get_run(step.run_id).status == "served"  # closed when the server stopped


async def test_the_policy_call_and_the_status_carry_any_text_as_sent(
    store: Store, gateway: TracingGateway, renderer: Renderer
) -> None:
    """The two bodies the server writes (JSON by the openai client) reach the gateway as eval-protocol sent them."""
    body = init_body(gateway.base_url, "unicode-1", row=0)
    body["messages"][0]["content"] += ' caf\u00e9 \u2615 \u2028 \U0001f600 "quoted" \\ \x00'
    async with serving(store, renderer) as server, aiohttp.ClientSession() as session:
        status, _, _ = await post_init(session, server.url, body)
        assert status == 200
        await server.wait_idle()
    (trace,) = gateway.traces("unicode-1")
    assert trace["input"]["messages"] == body["messages"]
    (log,) = gateway.logs("unicode-1")
    assert log["status"]["code"] == StatusCode.FINISHED and "rollout_id:unicode-1" in log["tags"]


@pytest.mark.parametrize("rollout_id", ["r-1", 'q"uote\\d', "caf\u00e9-\u2028-\U0001f600"])
@pytest.mark.parametrize("retry", [False, True])
def test_the_accepted_answer_is_what_json_response_wrote(rollout_id: str, retry: bool) -> None:
    from aiohttp import web

    from svgagent.core.serve.server import _accepted

    ours, theirs = (
        _accepted(rollout_id, retry),
        web.json_response({"status": "accepted", "rollout_id": rollout_id, "retry": retry}),
    )
    assert (ours.body, ours.status, dict(ours.headers)) == (theirs.body, theirs.status, dict(theirs.headers))


def test_a_prompt_is_read_once_per_text_as_parse_formatted_prompt_reads_it() -> None:
    from svgagent.core.exchange.import_row import parse_formatted_prompt
    from svgagent.core.run.prompt import format_prompt
    from svgagent.core.serve.server import _prompt_of

    text = format_prompt("A red fox.", ["a fox", "it is red"])
    _prompt_of.cache_clear()
    assert _prompt_of(text) == parse_formatted_prompt(text) == ("A red fox.", ("a fox", "it is red"))
    assert _prompt_of(text) is _prompt_of(text) and _prompt_of.cache_info().hits == 2
    assert _prompt_of("Draw a cat.") == ("Draw a cat.", ())  # not a formatted prompt: the whole text, no requirements


async def test_a_repeated_init_is_the_same_rollout(
    store: Store, gateway: TracingGateway, sim: Simulator, renderer: Renderer
) -> None:
    sim.configure(policy_latency_s=0.3)
    body = init_body(gateway.base_url, "dup-1")
    async with serving(store, renderer) as server, aiohttp.ClientSession() as session:
        first = await post_init(session, server.url, body)
        second = await post_init(session, server.url, body)  # while it runs
        await server.wait_idle()
        third = await post_init(session, server.url, body)  # after it finished
        await server.wait_idle()
        served = server.ctx.training.served("dup-1")
    assert first[1] == {"status": "accepted", "rollout_id": "dup-1", "retry": False}
    assert second[1] == {"status": "running", "rollout_id": "dup-1", "duplicate": True}
    assert third[1] == {"status": "finished", "rollout_id": "dup-1", "duplicate": True}
    assert sim.stats()["requests"]["policy"] == 1  # one rollout, one policy call
    assert served is not None
    assert len(store.list_rollouts(served.run_id, current_only=False)) == 1
    assert set(codes(gateway, "dup-1")) == {StatusCode.FINISHED}


async def test_a_retry_after_an_error_is_a_new_attempt(
    store: Store, gateway: TracingGateway, sim: Simulator, renderer: Renderer
) -> None:
    sim.configure(error_5xx_every=1)
    body = init_body(gateway.base_url, "retry-1")
    async with serving(store, renderer) as server, aiohttp.ClientSession() as session:
        await post_init(session, server.url, body)
        await server.wait_idle()
        assert gateway.status_code("retry-1") == StatusCode.INTERNAL
        sim.configure(error_5xx_every=0)
        status, answer, _ = await post_init(session, server.url, body)  # eval-protocol retrying the same id
        await server.wait_idle()
        served = server.ctx.training.served("retry-1")
    assert status == 200
    assert answer["status"] == "accepted"
    assert codes(gateway, "retry-1") == [StatusCode.INTERNAL, StatusCode.RUNNING, StatusCode.FINISHED]
    assert served is not None
    assert served.status_code == StatusCode.FINISHED
    attempts = store.attempts_of(served.rollout_id)
    assert [a.attempt for a in attempts] == [1, 2]
    assert attempts[0].status is RolloutStatus.FAILED
    assert "HTTP 500" in (attempts[0].error or "")
    assert attempts[1].rollout_id == served.rollout_id
    assert store.get_rollout(served.rollout_id).raw_answer


@pytest.mark.parametrize(
    ("knobs", "code", "words"),
    [
        ({"rate_limit_every": 1}, StatusCode.RESOURCE_EXHAUSTED, "rate-limited (HTTP 429)"),
        ({"error_5xx_every": 1}, StatusCode.INTERNAL, "HTTP 500"),
        ({"timeout_every": 1, "timeout_hang_s": 30.0}, StatusCode.DEADLINE_EXCEEDED, "rollout deadline of 0.5 s"),
    ],
    ids=["429", "500", "timeout"],
)
async def test_a_policy_fault_ends_in_an_error_status_not_a_poll_timeout(
    store: Store,
    gateway: TracingGateway,
    sim: Simulator,
    renderer: Renderer,
    knobs: dict[str, object],
    code: StatusCode,
    words: str,
) -> None:
    sim.configure(**knobs)
    async with serving(store, renderer, rollout_timeout_s=0.5) as server, aiohttp.ClientSession() as session:
        await post_init(session, server.url, init_body(gateway.base_url, f"fault-{code.name}"))
        await server.wait_idle()
        served = server.ctx.training.served(f"fault-{code.name}")
        assert served is not None
        rec = store.get_rollout(served.rollout_id)
    (entry,) = gateway.logs(f"fault-{code.name}")
    assert entry["status"]["code"] == code
    assert words in entry["status"]["message"]
    assert entry["severity"] == "ERROR"
    assert rec.status is RolloutStatus.FAILED
    assert rec.is_score_valid is False
    assert words in (rec.error or "")


async def test_a_burst_of_1000_inits_all_finish_with_16_at_a_time(
    store: Store, gateway: TracingGateway, sim: Simulator, renderer: Renderer
) -> None:
    sim.configure(policy_latency_s=0.005)
    async with serving(store, renderer, settings={"render_size": 32}, concurrency=16) as server:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
            bodies = [init_body(gateway.base_url, f"burst-{i}", row=i % 3, row_id=f"row_{i % 50}") for i in range(1000)]
            answers = await asyncio.gather(*(post_init(session, server.url, b) for b in bodies))
            await server.wait_idle()
        stats = server.stats
        (step,) = server.ctx.training.steps("exp-1")
    assert [a[0] for a in answers] == [200] * 1000
    assert stats.accepted == stats.finished == 1000
    assert stats.errors == 0
    assert stats.max_running == 16
    assert sim.stats()["max_in_flight"]["policy"] <= 16
    assert all(codes(gateway, f"burst-{i}") == [StatusCode.FINISHED] for i in range(1000))
    assert step.rollouts == 1000
    assert step.done == 1000
    assert len({r.rollout_id for r in store.list_rollouts(step.run_id)}) == 1000


async def test_a_full_server_answers_429_with_retry_after_and_nothing_is_lost(
    store: Store, gateway: TracingGateway, sim: Simulator, renderer: Renderer
) -> None:
    sim.configure(policy_latency_s=0.2)
    async with serving(store, renderer, concurrency=2, queue_limit=1) as server, aiohttp.ClientSession() as session:
        bodies = [init_body(gateway.base_url, f"full-{i}") for i in range(6)]
        first = [await post_init(session, server.url, b) for b in bodies]
        busy = [i for i, (status, _, _) in enumerate(first) if status == 429]
        assert [s for s, _, _ in first[:3]] == [200, 200, 200]
        assert busy == [3, 4, 5]
        assert first[3][2]["Retry-After"] == "1"
        assert "3 rollouts" not in first[3][1]["error"]["message"]
        pending = list(busy)
        while pending:  # what a client does with 429: try again later
            await server.wait_idle()
            pending = [i for i in pending if (await post_init(session, server.url, bodies[i]))[0] == 429]
        await server.wait_idle()
    assert all(codes(gateway, f"full-{i}") == [StatusCode.FINISHED] for i in range(6))
    assert server.stats.busy == 3
    assert server.stats.finished == 6


@pytest.mark.parametrize(
    ("mutate", "words"),
    [
        (lambda b: b.pop("metadata"), "metadata: Field required"),
        (lambda b: b["metadata"].update(rollout_id="a/b"), "metadata.rollout_id"),
        (lambda b: b.update(model_base_url="file:///etc/passwd"), "model_base_url: must be an http:// or https:// URL"),
        (lambda b: b.update(model_base_url="http://user:pw@localhost:1"), "must not carry credentials"),
        (lambda b: b.update(messages=[]), "messages"),
        (lambda b: b.update(completion_params={}), "needs 'model'"),
        (lambda b: b["messages"].append({"role": "wizard", "content": "x"}), "messages.1.role"),
    ],
    ids=["no-metadata", "id-with-slash", "file-url", "url-credentials", "no-messages", "no-model", "bad-role"],
)
async def test_invalid_bodies_get_a_400_naming_the_field(
    store: Store, gateway: TracingGateway, renderer: Renderer, mutate: object, words: str
) -> None:
    body = init_body(gateway.base_url, "bad-1")
    mutate(body)  # type: ignore[operator]
    async with serving(store, renderer) as server, aiohttp.ClientSession() as session:
        status, answer, _ = await post_init(session, server.url, body)
        assert server.stats.accepted == 0
    assert status == 400
    assert words in answer["error"]["message"]
    assert REQUEST_KEY not in json.dumps(answer)


async def test_oversized_and_non_json_bodies_get_a_400(
    store: Store, gateway: TracingGateway, renderer: Renderer
) -> None:
    huge = init_body(gateway.base_url, "big-1")
    huge["messages"][0]["content"] += "x" * 20_000
    async with serving(store, renderer, max_body_bytes=8192) as server, aiohttp.ClientSession() as session:
        too_big = await post_init(session, server.url, huge)
        not_json = await post_init(session, server.url, None, raw=b"{not json")
        not_object = await post_init(session, server.url, [1, 2])
        not_utf8 = await post_init(session, server.url, None, raw=b'{"a": "\xff"}')
        too_deep = await post_init(session, server.url, None, raw=b"[" * 5000)  # json.loads: RecursionError
        assert server.stats.accepted == 0
        assert server.stats.bad_requests == 5
    assert too_big[0] == 400
    assert "larger than 8192 bytes" in too_big[1]["error"]["message"]
    assert not_json[0] == 400
    assert not_json[1]["error"]["message"] == "the body is not valid JSON"
    assert not_object[0] == 400
    assert "JSON object" in not_object[1]["error"]["message"]
    assert not_utf8[0] == 400
    assert too_deep[0] == 400 and too_deep[1]["error"]["message"] == "the body is not valid JSON"


def test_a_raw_body_is_accepted_or_refused_as_json_loads_and_validation_did() -> None:
    """parse_init_body reads the bytes with pydantic's JSON parser (cheaper): the same requests, the same 400s."""

    from svgagent.core.serve.protocol import RequestError, parse_init, parse_init_body

    def outcome(parse: object, raw: bytes) -> object:
        try:
            return parse(raw)  # type: ignore[operator]
        except RequestError as err:
            return str(err)
        except (ValueError, RecursionError):
            return "the body is not valid JSON"

    def old(raw: bytes) -> object:
        return parse_init(json.loads(raw))

    good = init_body("http://127.0.0.1:9", "raw-1", row=1)
    encoded = json.dumps(good)
    bodies = [
        encoded.encode(),
        codecs.BOM_UTF8 + encoded.encode(),
        encoded.encode("utf-16"),
        b"{not json",
        b"[1, 2]",
        b"null",
        b'{"a": "\xff"}',
        b"",
        json.dumps({**good, "metadata": {}}).encode(),
        json.dumps({**good, "messages": [{"role": "wizard"}]}).encode(),
        json.dumps({**good, "extra": 1}).encode(),
    ]
    for raw in bodies:
        assert outcome(parse_init_body, raw) == outcome(old, raw), raw[:40]
    assert isinstance(parse_init_body(encoded.encode("utf-16")), type(parse_init(good)))
    assert outcome(parse_init_body, b"[" * 5000) == "the body is not valid JSON"


async def test_the_servers_own_key_goes_only_to_allowlisted_hosts(
    store: Store, sim: Simulator, renderer: Renderer, tmp_path: Path
) -> None:
    assert sim.base_url is not None
    with TracingGateway(sim.base_url) as stranger:  # a loopback host that is not on the allowlist
        async with (
            serving(store, renderer, settings={"fireworks_api_key": OWN_KEY}) as server,
            aiohttp.ClientSession() as session,
        ):
            await post_init(session, server.url, init_body(stranger.base_url, "keyless", api_key=None))
            await post_init(session, server.url, init_body(stranger.base_url, "keyed"))
            await server.wait_idle()
        seen = stranger.stats()["authorizations"]
        assert not any(OWN_KEY in value for value in seen)
        assert seen == [f"Bearer {REQUEST_KEY}"]  # the request's own key, to the request's own URLs
        assert stranger.status_code("keyed") == StatusCode.FINISHED
        assert stranger.status_code("keyless") is None  # nothing to authenticate with: the gateway refused

    with TracingGateway(sim.base_url) as allowed, Store(tmp_path / "other.db") as other_store:
        # the same request once the host is allowlisted
        async with (
            serving(
                other_store, renderer, settings={"fireworks_api_key": OWN_KEY}, allow_hosts=("localhost",)
            ) as server,
            aiohttp.ClientSession() as session,
        ):
            await post_init(session, server.url, init_body(allowed.base_url, "keyless", api_key=None))
            await server.wait_idle()
        assert allowed.stats()["authorizations"] == [f"Bearer {OWN_KEY}"]
        assert allowed.status_code("keyless") == StatusCode.FINISHED


async def test_shutdown_lets_running_rollouts_finish_then_logs_the_rest_unavailable(
    store: Store, gateway: TracingGateway, sim: Simulator, renderer: Renderer
) -> None:
    sim.configure(timeout_every=2, timeout_hang_s=60.0)  # every second policy call hangs
    async with serving(store, renderer, grace_s=0.5) as server, aiohttp.ClientSession() as session:
        await post_init(session, server.url, init_body(gateway.base_url, "quick"))  # policy call 1: answered
        await server.wait_idle()
        await post_init(session, server.url, init_body(gateway.base_url, "stuck"))  # policy call 2: hangs
        await wait_for(lambda: sim.stats()["in_flight"]["policy"] == 1)
        training = server.ctx.training
        stopping = asyncio.create_task(server.stop())
        await asyncio.sleep(0)
        refused = await post_init(session, server.url, init_body(gateway.base_url, "late"))
        await stopping
    assert refused[0] == 503
    assert refused[2]["Retry-After"] == "5"
    assert codes(gateway, "quick") == [StatusCode.FINISHED]
    (entry,) = gateway.logs("stuck")
    assert entry["status"] == {"code": StatusCode.UNAVAILABLE, "message": STOPPED, "details": []}
    stuck = training.served("stuck")
    assert stuck is not None
    assert store.get_rollout(stuck.rollout_id).reason == STOPPED
    assert training.served("late") is None


async def test_a_store_failure_never_becomes_an_error_status(
    store: Store, gateway: TracingGateway, renderer: Renderer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from svgagent.core.scoring.errors import StoreError

    async with serving(store, renderer) as server, aiohttp.ClientSession() as session:

        def broken(*args: object, **kwargs: object) -> None:
            raise StoreError("disk full")

        monkeypatch.setattr(server.ctx.training, "record_many", broken)
        await post_init(session, server.url, init_body(gateway.base_url, "disk-full"))
        await server.wait_idle()
    assert codes(gateway, "disk-full") == [StatusCode.FINISHED]  # eval-protocol must not pay for it again


async def test_a_finished_status_is_posted_only_once_its_rollout_is_committed(
    store: Store, gateway: TracingGateway, renderer: Renderer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store writes are batched (core/serve/recorder.py): still, when the gateway hears FINISHED, another
    connection to the store (eval-protocol's user opening the TUI) already reads the rollout."""
    import sqlite3

    committed: dict[str, bool] = {}
    async with serving(store, renderer) as server, aiohttp.ClientSession() as session:
        post = server.ctx.status_log.post

        async def checked(gateway_url: str, record: dict[str, object], key: str | None) -> bool:
            rollout_id = str(record["tags"][0]).removeprefix("rollout_id:")  # type: ignore[index]
            with sqlite3.connect(store.path) as other:
                committed[rollout_id] = (
                    other.execute(
                        "SELECT COUNT(*) FROM served_rollouts s JOIN rollouts r ON r.rollout_id = s.rollout_id"
                        " WHERE s.ep_rollout_id = ? AND r.raw_answer IS NOT NULL",
                        (rollout_id,),
                    ).fetchone()[0]
                    == 1
                )
            return await post(gateway_url, record, key)

        monkeypatch.setattr(server.ctx.status_log, "post", checked)
        for i in range(4):
            await post_init(session, server.url, init_body(gateway.base_url, f"durable-{i}", row=i))
        await server.wait_idle()
    assert committed == {f"durable-{i}": True for i in range(4)}
    assert all(codes(gateway, f"durable-{i}") == [StatusCode.FINISHED] for i in range(4))


async def test_the_access_log_is_one_json_line_per_request_without_keys(
    store: Store, gateway: TracingGateway, renderer: Renderer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="svgagent.serve.access")
    async with serving(store, renderer) as server, aiohttp.ClientSession() as session:
        await post_init(session, server.url, init_body(gateway.base_url, "logged"))
        await post_init(session, server.url, None, raw=b"nope")
        await server.wait_idle()
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "svgagent.serve.access"]
    assert [(x["method"], x["path"], x["status"]) for x in lines] == [("POST", "/init", 200), ("POST", "/init", 400)]
    assert lines[0]["rollout_id"] == "logged"
    assert lines[0]["ms"] >= 0
    assert REQUEST_KEY not in caplog.text


def test_an_access_log_line_is_json_whatever_its_path_and_rollout_id(caplog: pytest.LogCaptureFixture) -> None:
    """The line is written out by hand (cheaper than json.dumps of a dict): quotes, backslashes and non-ASCII in
    the path or the id still make one JSON object, the one json.dumps would make."""
    from aiohttp import web
    from aiohttp.test_utils import make_mocked_request

    caplog.set_level(logging.INFO, logger="svgagent.serve.access")
    request = make_mocked_request("POST", "/a%22b%5Cc/%C3%A9%0A?q=1")
    request[ROLLOUT_ID] = 'id"with\\quote\u00e9'
    JsonAccessLogger(access_log, "").log(request, web.Response(status=404), 0.0012345)
    request = make_mocked_request("GET", "/")
    JsonAccessLogger(access_log, "").log(request, web.Response(status=200), 0.5)
    first, second = (json.loads(r.getMessage()) for r in caplog.records if r.name == "svgagent.serve.access")
    assert {k: v for k, v in first.items() if k != "ts"} == {
        "remote": None,
        "method": "POST",
        "path": '/a"b\\c/\u00e9\n',
        "status": 404,
        "ms": 1.23,
        "bytes": 0,
        "rollout_id": 'id"with\\quote\u00e9',
    }
    assert isinstance(first["ts"], float) and "rollout_id" not in second and second["ms"] == 500.0


async def test_a_served_rollout_is_judged_locally_only_with_judge(
    store: Store, gateway: TracingGateway, sim: Simulator, renderer: Renderer
) -> None:
    judge = {"openai_api_key": "judge-key", "judge_base_url": sim.base_url, "judge_model": "simulated-judge"}
    async with serving(store, renderer, settings=judge, judge=True) as server, aiohttp.ClientSession() as session:
        for i in range(6):
            await post_init(session, server.url, init_body(gateway.base_url, f"judged-{i}", row=i))
        await server.wait_idle()
        (step,) = server.ctx.training.steps("exp-1")
    rollouts = store.list_rollouts(step.run_id)
    assert step.judged == sum(1 for r in rollouts if r.is_score_valid) > 0
    assert step.mean_local is not None
    assert 0.0 <= step.mean_local <= 1.0
    assert store.get_run(step.run_id).settings["judge"] == "local"
    assert sim.stats()["requests"]["judge"] >= 1


def test_store_reopens_at_the_new_schema(tmp_path: Path) -> None:
    with Store(tmp_path / "runs.db") as store:
        assert store.schema_version >= 4
        assert store.query("SELECT COUNT(*) FROM served_rollouts")[0][0] == 0


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (["--max-body", "10"], "--max-body must be from 1024"),
        (["--rollout-timeout", "0"], "--rollout-timeout must be more than 0"),
        (["--gateway-url", "ftp://x"], "--gateway-url must be an http:// or https:// URL"),
        (["--judge"], "--judge needs OPENAI_API_KEY"),
    ],
    ids=["max-body", "rollout-timeout", "gateway-url", "judge-without-key"],
)
def test_serve_refuses_bad_options_with_one_line(
    flags: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from svgagent.tui.cli.main import main

    assert main(["serve", "--port", "0", *flags]) == 2
    err = capsys.readouterr().err
    assert words in err
    assert len(err.strip().splitlines()) == 1


def test_serve_demo_prints_its_startup_line_serves_and_stops_on_sigint(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys
    import urllib.request

    env = {**os.environ, "SVGAGENT_HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "svgagent.tui.cli.main", "serve", "--demo", "--json", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    try:
        assert proc.stdout is not None
        line = json.loads(proc.stdout.readline())
        assert line["event"] == "listening"
        assert line["url"].startswith("http://127.0.0.1:")
        import importlib.util

        # uvloop where it is installed (a dependency off Windows; a venv made before it was one falls back)
        assert line["event_loop"] == ("uvloop" if importlib.util.find_spec("uvloop") else "asyncio")
        gateway = line["demo_model_base_url"]
        assert gateway.startswith("http://localhost:")  # what eval-protocol's path encoding needs
        body = json.dumps(init_body(gateway, "demo-1")).encode()
        request = urllib.request.Request(line["url"] + "/init", data=body, headers={"Content-Type": "application/json"})
        assert json.loads(urllib.request.urlopen(request, timeout=30).read())["status"] == "accepted"
        proc.send_signal(signal.SIGINT)  # the rollout is running (the demo policy takes 0.4 s): it may finish
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0
    events = [json.loads(x) for x in err.splitlines() if x.startswith("{")]
    stopped = [e for e in events if e.get("event") == "stopped"]
    assert stopped
    assert stopped[0]["accepted"] == 1
    assert stopped[0]["finished"] + stopped[0]["stopped_unfinished"] == 1  # finished in the grace period, or logged
    assert any(e.get("path") == "/init" and e.get("status") == 200 for e in events)
