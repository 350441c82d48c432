"""The simulated OpenAI-compatible server, driven through the real openai client on 127.0.0.1."""

from __future__ import annotations

import asyncio
import base64
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from typing import Any

import aiohttp
import openai
import pytest
from openai.types.chat import ChatCompletion

from svgagent.core.sim.content import QUALITIES, choose_quality, parse_requirements
from svgagent.core.sim.simulator import SimConfig, Simulator

REQUIREMENTS = ["A lighthouse", "A rocky cliff", "Waves", "A seagull", "A sunset sky", "A small boat"]


def make_prompt(i: int, n: int = len(REQUIREMENTS)) -> str:
    reqs = "\n".join(f"{k}. {text}" for k, text in enumerate((REQUIREMENTS * 3)[:n], start=1))
    return f"Draw scene number {i}: a lighthouse at dusk. Wrap the SVG in a fence.\n\nRequirements:\n{reqs}"


def user(text: str) -> list[dict[str, object]]:
    return [{"role": "user", "content": text}]


def classify(text: str) -> str:
    """The quality class of a policy answer, judged from its text alone."""
    if "```svg" not in text:
        assert "<svg" not in text
        return "no_svg"
    body = text.split("```svg\n", 1)[1]
    if "```" not in body:
        return "truncated"
    svg = body.split("```", 1)[0]
    try:
        root = ET.fromstring(svg)
    except ET.ParseError:
        return "broken"
    groups = [el for el in root.iter() if el.tag.endswith("}g")]
    return "good" if len(groups) == len(REQUIREMENTS) else "partial"


@pytest.fixture
def sim() -> Iterator[Simulator]:
    with Simulator(SimConfig(seed=3)) as server:
        yield server


async def ask(api: openai.AsyncOpenAI, prompt: str, **params: Any) -> ChatCompletion:
    messages: Any = user(prompt)
    return await api.chat.completions.create(model="whatever", messages=messages, **params)


def test_parse_requirements_takes_the_last_numbered_block() -> None:
    text = "Intro\n1. not this\n\nRequirements:\n1. first\n2) second\n\n3. third\nAnswer with JSON.\n4. stray"
    assert parse_requirements(text) == ["first", "second", "third"]
    assert parse_requirements("1. a\n2. b") == ["a", "b"]
    assert parse_requirements("no list here") == []


def test_quality_mix_is_roughly_as_specified() -> None:
    picks = [choose_quality(0, make_prompt(i), 0) for i in range(2000)]
    shares = {q: picks.count(q) / len(picks) for q in QUALITIES}
    for quality, expected in {"good": 0.5, "partial": 0.25, "broken": 0.10, "no_svg": 0.08, "truncated": 0.07}.items():
        assert abs(shares[quality] - expected) < 0.04, shares


async def test_policy_answers_cover_every_quality_class(sim: Simulator, client: openai.AsyncOpenAI) -> None:
    seen: dict[str, int] = {}
    for i in range(40):
        prompt = make_prompt(i)
        answer = await ask(client, prompt)
        text = answer.choices[0].message.content or ""
        kind = classify(text)
        seen[kind] = seen.get(kind, 0) + 1
        assert answer.model == "simulated-policy"
        assert "simulated" in text
        if kind != "no_svg":
            assert "<!-- simulated" in text
        assert answer.choices[0].finish_reason == ("length" if kind == "truncated" else "stop")
        assert answer.usage is not None
        assert abs(answer.usage.prompt_tokens - len(prompt) / 4) <= 1
        assert abs(answer.usage.completion_tokens - len(text) / 4) <= 1
    assert set(seen) == set(QUALITIES), seen
    stats = sim.stats()
    assert stats["policy_quality"] == {q: seen.get(q, 0) for q in QUALITIES}
    assert stats["requests"]["policy"] == 40
    assert stats["requests"]["judge"] == 0
    assert len(stats["by_prompt"]) == 40


async def test_same_seed_gives_the_same_answers_in_two_instances() -> None:
    async def run(seed: int) -> list[str]:
        with Simulator(SimConfig(seed=seed)) as server:
            assert server.base_url is not None
            async with openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0) as api:
                out = []
                for i in range(12):
                    for _ in range(2):  # the 1st and 2nd sample of each prompt
                        answer = await ask(api, make_prompt(i))
                        out.append(answer.choices[0].message.content or "")
                return out

    first, second, other = await run(5), await run(5), await run(6)
    assert first == second
    assert first != other
    assert any(first[2 * i] != first[2 * i + 1] for i in range(12))  # samples of one prompt differ


async def test_temperature_zero_repeats_the_same_answer(client: openai.AsyncOpenAI) -> None:
    answers = {(await ask(client, make_prompt(1), temperature=0)).choices[0].message.content for _ in range(4)}
    assert len(answers) == 1


async def test_max_tokens_cuts_the_answer(client: openai.AsyncOpenAI) -> None:
    answer = await ask(client, make_prompt(0), max_tokens=20)
    assert answer.choices[0].finish_reason == "length"
    assert len(answer.choices[0].message.content or "") <= 80
    assert answer.usage is not None
    assert answer.usage.completion_tokens <= 20


async def test_rate_limit_is_retried_by_the_client_after_retry_after(sim: Simulator) -> None:
    sim.configure(rate_limit_every=2, retry_after_s=0.02)
    assert sim.base_url is not None
    async with openai.AsyncOpenAI(base_url=sim.base_url, api_key="k", max_retries=2) as api:
        first = await ask(api, make_prompt(0))
        second = await ask(api, make_prompt(1))  # request #2 gets 429, the client's retry (#3) succeeds
    assert first.choices
    assert second.choices
    stats = sim.stats()
    assert stats["faults"]["rate_limit"] == 1
    assert stats["requests"]["policy"] == 3
    assert stats["by_prompt"]
    assert sorted(v["policy"] for v in stats["by_prompt"].values()) == [1, 2]


async def test_rate_limit_answer_carries_retry_after_headers(sim: Simulator, client: openai.AsyncOpenAI) -> None:
    sim.configure(rate_limit_every=1, retry_after_s=0.25)
    with pytest.raises(openai.RateLimitError) as caught:
        await ask(client, make_prompt(0))
    headers = caught.value.response.headers
    assert headers["retry-after-ms"] == "250"
    assert headers["retry-after"] == "1"


async def test_server_errors(sim: Simulator, client: openai.AsyncOpenAI) -> None:
    sim.configure(error_5xx_every=1)
    with pytest.raises(openai.InternalServerError) as caught:
        await ask(client, make_prompt(0))
    assert caught.value.status_code == 500
    sim.configure(error_5xx_status=503)
    with pytest.raises(openai.InternalServerError) as caught:
        await ask(client, make_prompt(0))
    assert caught.value.status_code == 503
    assert sim.stats()["faults"]["error_5xx"] == 2


async def _wait_idle(sim: Simulator) -> None:
    for _ in range(200):
        if sim.stats()["in_flight"] == {"policy": 0, "judge": 0}:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"requests still in flight: {sim.stats()['in_flight']}")


async def test_timeout_fault_hangs_past_the_client_timeout(sim: Simulator, client: openai.AsyncOpenAI) -> None:
    sim.configure(timeout_every=1)
    started = time.monotonic()
    with pytest.raises(openai.APITimeoutError):
        await ask(client.with_options(timeout=0.2), make_prompt(0))
    assert time.monotonic() - started < 5
    assert sim.stats()["faults"]["timeout"] == 1
    await _wait_idle(sim)  # the abandoned request does not stay in flight


async def test_timeout_ends_at_once_when_the_simulator_stops() -> None:
    server = Simulator(SimConfig(timeout_every=1))
    url = server.start()
    async with openai.AsyncOpenAI(base_url=url, api_key="k", max_retries=0, timeout=10) as api:
        task = asyncio.create_task(ask(api, make_prompt(0)))
        for _ in range(200):
            if server.stats()["faults"]["timeout"]:
                break
            await asyncio.sleep(0.01)
        started = time.monotonic()
        await asyncio.to_thread(server.stop)
        assert time.monotonic() - started < 3
        with pytest.raises(openai.APIError):
            await task


async def test_connection_reset(sim: Simulator, client: openai.AsyncOpenAI) -> None:
    sim.configure(reset_every=1)
    with pytest.raises(openai.APIConnectionError):
        await ask(client, make_prompt(0))
    sim.configure(reset_every=0)
    assert (await ask(client, make_prompt(0))).choices  # the server carries on
    assert sim.stats()["faults"]["reset"] == 1


async def test_empty_choices(sim: Simulator, client: openai.AsyncOpenAI) -> None:
    sim.configure(empty_choices_every=1)
    answer = await ask(client, make_prompt(0))
    assert answer.choices == []
    assert sim.stats()["faults"]["empty_choices"] == 1


async def test_models_endpoint_and_key_rejection(sim: Simulator, client: openai.AsyncOpenAI) -> None:
    ids = [model.id async for model in client.models.list()]
    assert ids == ["simulated-policy", "simulated-judge"]
    assert sim.base_url is not None
    async with openai.AsyncOpenAI(base_url=sim.base_url, api_key="rejected-key", max_retries=0) as bad:
        with pytest.raises(openai.AuthenticationError):
            await bad.models.list()
        with pytest.raises(openai.AuthenticationError):
            await ask(bad, make_prompt(0))
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{sim.base_url}/models") as response:  # no Authorization header at all
            assert response.status == 401
    stats = sim.stats()
    assert stats["faults"]["auth_rejected"] == 2
    assert stats["requests"]["models"] == 3


async def test_max_in_flight_is_recorded(sim: Simulator, client: openai.AsyncOpenAI) -> None:
    # Driven by events, not latencies: requests are held at the server until as many as the test expects are in
    # flight, then released (a busy machine can no longer make them miss each other).
    limit = asyncio.Semaphore(5)

    async def limited(i: int) -> None:
        async with limit:
            await ask(client, make_prompt(i))

    sim.hold()
    tasks = [asyncio.create_task(limited(i)) for i in range(12)]
    assert await asyncio.to_thread(sim.wait_for_in_flight, "policy", 5)
    sim.release()
    await asyncio.gather(*tasks)
    assert sim.stats()["max_in_flight"]["policy"] == 5  # the client's limit, reached and never passed
    sim.reset_stats()
    sim.hold()
    tasks = [asyncio.create_task(ask(client, make_prompt(i))) for i in range(12)]
    assert await asyncio.to_thread(sim.wait_for_in_flight, "policy", 12)
    sim.release()
    await asyncio.gather(*tasks)
    stats = sim.stats()
    assert stats["max_in_flight"] == {"policy": 12, "judge": 0}
    assert stats["in_flight"] == {"policy": 0, "judge": 0}
    assert stats["total_requests"] == 12


async def test_answers_are_made_while_the_latency_elapses(monkeypatch: pytest.MonkeyPatch) -> None:
    """A latency runs from the request, as a remote model's does: the answer is made first and sent when the
    latency is over (made after it, a burst of answers due at once left late by the making of those before)."""
    from svgagent.core.sim import simulator as simulator_module

    judged: list[int] = []
    real_judge = simulator_module.judge_answer

    def judge_answer(*args: Any) -> str:
        judged.append(1)
        return real_judge(*args)

    monkeypatch.setattr(simulator_module, "judge_answer", judge_answer)
    png = base64.b64encode(b"not really a png").decode()
    image = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}"}}
    judge_messages: Any = [{"role": "user", "content": [{"type": "text", "text": make_prompt(0)}, image]}]
    with Simulator(SimConfig(seed=3, policy_latency_s=60, judge_latency_s=60, judge_pixel_analysis=False)) as server:
        api = openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        policy = asyncio.create_task(ask(api, make_prompt(1)))
        judge = asyncio.create_task(api.chat.completions.create(model="j", messages=judge_messages))
        deadline = time.monotonic() + 20
        while (sum(server.stats()["policy_quality"].values()) < 1 or not judged) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert sum(server.stats()["policy_quality"].values()) == 1 and judged == [1]  # both made ...
        assert not policy.done() and not judge.done()  # ... and neither sent: the latency has a minute to go
        policy.cancel()
        judge.cancel()
        await asyncio.gather(policy, judge, return_exceptions=True)
        server.configure(policy_latency_s=0.3, judge_latency_s=0.3)
        started = time.monotonic()
        await ask(api, make_prompt(2))
        await api.chat.completions.create(model="j", messages=judge_messages)
        assert time.monotonic() - started >= 0.6  # never sooner than the latency
        await api.close()


async def test_huge_answer(sim: Simulator, client: openai.AsyncOpenAI) -> None:
    sim.configure(policy_huge_every=1)
    answer = await ask(client, make_prompt(0))
    text = answer.choices[0].message.content or ""
    assert len(text) >= 1_048_576
    assert classify(text) in ("good", "partial")  # a complete, valid SVG, just enormous
    assert sim.stats()["faults"]["policy_huge"] == 1


async def test_judge_and_policy_are_told_apart_by_the_image_not_the_model(
    sim: Simulator, client: openai.AsyncOpenAI
) -> None:
    await client.chat.completions.create(model="simulated-judge", messages=user(make_prompt(0)))
    png = base64.b64encode(b"not really a png").decode()
    content = [
        {"type": "text", "text": make_prompt(0)},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}"}},
    ]
    answer = await client.chat.completions.create(
        model="simulated-policy",
        messages=[{"role": "user", "content": content}],  # type: ignore[list-item]
    )
    assert answer.model == "simulated-judge"
    assert '"number_of_fulfilled_requirements": 0' in (answer.choices[0].message.content or "")
    assert sim.stats()["requests"] == {"policy": 1, "judge": 1, "models": 0}


async def test_remote_control_endpoints(sim: Simulator, client: openai.AsyncOpenAI) -> None:
    root = (sim.base_url or "").removesuffix("/v1")
    async with aiohttp.ClientSession() as http:
        async with http.post(f"{root}/_sim/config", json={"empty_choices_every": 1}) as response:
            assert response.status == 200
            assert (await response.json())["empty_choices_every"] == 1
        async with http.post(f"{root}/_sim/config", json={"no_such_knob": 1}) as response:
            assert response.status == 400
        assert (await ask(client, make_prompt(0))).choices == []
        async with http.get(f"{root}/_sim/stats") as response:
            assert (await response.json())["faults"]["empty_choices"] == 1
        async with http.post(f"{root}/_sim/reset_stats") as response:
            assert response.status == 200
    assert sim.stats()["total_requests"] == 0
    assert sim.config.empty_choices_every == 1


async def test_start_async_serves_on_the_callers_loop() -> None:
    async with Simulator(SimConfig(seed=1)) as server:
        assert server.base_url is not None
        assert server.base_url.startswith("http://127.0.0.1:")
        async with openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0) as api:
            assert (await ask(api, make_prompt(0))).choices
    assert server.stats()["requests"]["policy"] == 1


async def test_256_concurrent_requests_are_in_flight_at_once() -> None:
    # Held at the server until all are in, then released: concurrency shown by events (how fast it goes is a
    # benchmark's business, not a test's).
    count = 256
    with Simulator(SimConfig()) as server:
        connector = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(connector=connector) as http:

            async def one(i: int) -> None:
                body = {"model": "m", "messages": user(make_prompt(i))}
                headers = {"Authorization": "Bearer k"}
                async with http.post(f"{server.base_url}/chat/completions", json=body, headers=headers) as response:
                    assert response.status == 200
                    await response.read()

            server.hold()
            tasks = [asyncio.create_task(one(i)) for i in range(count)]
            assert await asyncio.to_thread(server.wait_for_in_flight, "policy", count)
            server.release()
            await asyncio.gather(*tasks)
        stats = server.stats()
    assert stats["max_in_flight"]["policy"] == count
    assert stats["in_flight"]["policy"] == 0


def test_runs_as_a_separate_process() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "svgagent.core.sim.simulator", "--port", "0", "--policy-latency", "0.01", "--seed", "4"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("svgagent simulator listening on http://127.0.0.1:"), line
        url = line.split()[-1]

        async def check() -> str | None:
            async with openai.AsyncOpenAI(base_url=url, api_key="k", max_retries=0) as api:
                return (await ask(api, make_prompt(0))).choices[0].message.content

        assert "simulated" in (asyncio.run(check()) or "")
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0


# -- the demo's simulator in a process of its own (tui --demo) -------------------------------------------------


def _ask_policy(base_url: str, *, timeout: float) -> str:
    """One chat completion from the simulator's policy over plain HTTP (no client library): its answer's text."""
    import json
    import urllib.request

    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "a red circle\n1. a circle"}]})
    request = urllib.request.Request(
        f"{base_url}/chat/completions",
        data=body.encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer simulated-key"},
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return str(json.loads(response.read())["choices"][0]["message"]["content"])


def test_simulator_process_serves_and_stops_with_its_parent() -> None:
    """`tui --demo` starts the simulator as a child; it answers the policy at the engine process's CPU priority
    (it stands in for remote servers: on a busy machine the kernel runs the UI first), and it exits when the
    process that started it is gone (its stdin closes), not only when stopped."""
    from svgagent.core.demo import SimulatorProcess
    from svgagent.core.run.engine_process import NICE

    sim = SimulatorProcess(policy_latency_s=0.0, judge_latency_s=0.0)
    try:
        assert _ask_policy(sim.base_url, timeout=30)
        ours = os.getpriority(os.PRIO_PROCESS, 0)
        assert os.getpriority(os.PRIO_PROCESS, sim._proc.pid) == min(19, ours + NICE)
        sim._proc.stdin.close()  # what the parent's death does to the pipe
        assert sim._proc.wait(timeout=30) == 0
    finally:
        sim.stop()


def test_simulator_process_url_is_known_before_the_simulator_is_up() -> None:
    """`tui --demo` needs the simulator's URL for its settings before the first frame: this process binds the
    listening socket and hands it over, so the URL does not wait for the simulator's interpreter and aiohttp to
    start (0.5 - 0.8 s of waiting before the first frame at load 3). A request sent meanwhile waits in the backlog."""
    import signal
    import socket
    import threading
    import urllib.parse

    from svgagent.core.demo import SimulatorProcess

    sim = SimulatorProcess(policy_latency_s=0.0, judge_latency_s=0.0)
    try:
        os.kill(sim._proc.pid, signal.SIGSTOP)  # the simulator cannot get anywhere until SIGCONT
        seen: list[str] = []
        asking = threading.Thread(target=lambda: seen.append(sim.base_url), daemon=True)
        asking.start()
        asking.join(30)
        assert seen and seen[0].startswith("http://127.0.0.1:"), "base_url waited for the stopped simulator"
        port = urllib.parse.urlsplit(seen[0]).port
        with socket.create_connection(("127.0.0.1", port), timeout=30):
            pass  # the socket listens already: the connection waits in the backlog
        os.kill(sim._proc.pid, signal.SIGCONT)
        assert _ask_policy(seen[0], timeout=60)
    finally:
        if sim._proc.poll() is None:
            os.kill(sim._proc.pid, signal.SIGCONT)
        sim.stop()


def test_simulator_process_started_later_answers_what_waited_for_it() -> None:
    """`tui --demo` starts the simulator's process after its first frame: until then the URL is known and bound,
    a request waits in the backlog, and once started the simulator answers it."""
    import threading

    from svgagent.core.demo import SimulatorProcess

    sim = SimulatorProcess(policy_latency_s=0.0, judge_latency_s=0.0, start=False)
    try:
        assert not sim.started
        answers: list[str] = []
        asking = threading.Thread(target=lambda: answers.append(_ask_policy(sim.base_url, timeout=60)), daemon=True)
        asking.start()
        sim.start()
        sim.start()  # idempotent: one process
        asking.join(60)
        assert answers and answers[0]
    finally:
        sim.stop()
    assert sim._proc.returncode is not None


async def test_policy_answers_draw_the_given_svgs_in_turn(tmp_path: Any) -> None:
    """SimConfig.policy_svg_file (bench/engine.py --svgs model-like): every answer is the next SVG of the file."""
    import json

    svgs = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="{i}" height="3"/></svg>'
        for i in (1, 2, 3)
    ]
    path = tmp_path / "svgs.jsonl"
    path.write_text("".join(json.dumps(svg) + "\n" for svg in svgs))
    with Simulator(SimConfig(seed=3, policy_svg_file=str(path))) as server:
        api = openai.AsyncOpenAI(base_url=server.base_url, api_key="FAKEOA-sim", max_retries=0)
        texts = [(await ask(api, make_prompt(i))).choices[0].message.content or "" for i in range(4)]
        await api.close()
    assert [text.split("```svg\n", 1)[1].split("\n```", 1)[0] for text in texts] == svgs + svgs[:1]
    path.write_text("not json\n")
    with pytest.raises(ValueError, match="JSON"):
        from svgagent.core.sim.content import svgs_of_file

        svgs_of_file(str(path))
