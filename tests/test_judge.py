"""The vision judge: the pure request/answer pieces, and Judge against the simulator on 127.0.0.1."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator

import cairosvg
import openai
import pytest

from svgagent.core.scoring.judge import (
    COUNT_KEY,
    COUNT_SCHEMA_NAME,
    PER_REQUIREMENT_SCHEMA_NAME,
    Judge,
    build_judge_messages,
    parse_judge_answer,
    response_format_for,
)
from svgagent.core.scoring.models import JudgeMode
from svgagent.core.sim.simulator import SimConfig, Simulator

REQS = ["A red sun", "A blue sea", "A green island", "A palm tree", "A white cloud", "A boat"]
N = len(REQS)
COUNT, PER = JudgeMode.COUNT, JudgeMode.PER_REQUIREMENT

DRAWING = """<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 200 200" width="200" height="200">
  <rect width="200" height="120" fill="#87ceeb"/><rect y="120" width="200" height="80" fill="#1d4ed8"/>
  <circle cx="160" cy="40" r="22" fill="#ef4444"/><ellipse cx="80" cy="125" rx="45" ry="14" fill="#16a34a"/>
  <rect x="76" y="70" width="8" height="50" fill="#92400e"/><ellipse cx="60" cy="35" rx="28" ry="12" fill="#f8fafc"/>
  <polygon points="130,150 170,150 160,165 140,165" fill="#f59e0b"/>
</svg>"""
BLANK = '<svg xmlns="http://www.w3.org/2000/svg" width="200" height="200"></svg>'


def render(svg: str) -> bytes:
    return cairosvg.svg2png(bytestring=svg.encode(), background_color="white")


@pytest.fixture(scope="module")
def drawing_png() -> bytes:
    return render(DRAWING)


@pytest.fixture
def sim() -> Iterator[Simulator]:
    with Simulator(SimConfig(seed=2)) as server:
        yield server


# ------------------------------------------------------------------------------------------- pure pieces


def test_messages_hold_the_question_and_the_image(drawing_png: bytes) -> None:
    messages = build_judge_messages(drawing_png, REQS, COUNT, prompt="A tropical island at noon.")
    assert len(messages) == 1
    assert messages[0]["role"] == "user"
    text_part, image_part = messages[0]["content"]
    assert text_part["type"] == "text"
    for number, requirement in enumerate(REQS, start=1):
        assert f"\n{number}. {requirement}\n" in text_part["text"]
    assert "strict" in text_part["text"]
    assert f"0 to {N}" in text_part["text"]
    assert "A tropical island at noon." in text_part["text"]
    assert image_part["type"] == "image_url"
    url = image_part["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == drawing_png
    per = build_judge_messages(drawing_png, REQS, PER)[0]["content"][0]["text"]
    assert '"verdicts"' in per
    assert f"1 to {N}" in per


def test_response_formats_are_strict_json_schemas() -> None:
    count = response_format_for(COUNT, N)
    per = response_format_for(PER, N)
    assert count["type"] == per["type"] == "json_schema"
    assert count["json_schema"]["name"] == COUNT_SCHEMA_NAME
    assert per["json_schema"]["name"] == PER_REQUIREMENT_SCHEMA_NAME
    assert count["json_schema"]["strict"] is True
    assert per["json_schema"]["strict"] is True
    schema = count["json_schema"]["schema"]
    assert schema["required"] == ["reasoning", COUNT_KEY]
    assert schema["additionalProperties"] is False
    item = per["json_schema"]["schema"]["properties"]["verdicts"]["items"]
    assert set(item["required"]) == {"index", "fulfilled", "reason"}
    assert item["additionalProperties"] is False
    with pytest.raises(ValueError):
        response_format_for(COUNT, 0)


def count_answer(value: object, reasoning: str = "looked closely") -> str:
    return json.dumps({"reasoning": reasoning, COUNT_KEY: value})


@pytest.mark.parametrize(
    ("value", "fulfilled"),
    [(4, 4), (0, 0), (N, N), (3.0, 3), ("3", 3)],
)
def test_count_answers_are_read(value: object, fulfilled: int) -> None:
    verdict = parse_judge_answer(count_answer(value), N, COUNT)
    assert verdict is not None
    assert verdict.valid
    assert verdict.fulfilled == fulfilled
    assert verdict.total == N
    assert verdict.score == pytest.approx(fulfilled / N)
    assert verdict.rationale.startswith("looked closely")
    assert verdict.raw == count_answer(value)


@pytest.mark.parametrize(
    "text",
    [
        count_answer(N + 5),
        count_answer(-2),
        count_answer(999),
        count_answer(1e300),
        count_answer("9" * 5000),
        '{"reasoning": "x", "' + COUNT_KEY + '": ' + "9" * 5000 + "}",  # more digits than the JSON reader takes
        "[" * 100_000 + "]" * 100_000,  # nested deeper than the JSON reader goes
        '{"reasoning": ' + "[" * 100_000,
    ],
)
def test_counts_outside_the_schema_and_unreadable_json_are_unusable(text: str) -> None:
    from svgagent.core.scoring.judge import _parse

    assert parse_judge_answer(text, N, COUNT) is None  # never clamped into a valid score, never an exception
    why = _parse(text, N, COUNT)
    assert isinstance(why, str)
    assert len(why) < 200


@pytest.mark.parametrize(
    "text",
    [
        count_answer(2.5),
        count_answer(True),
        count_answer("three"),
        count_answer(None),
        count_answer(float("nan")),
        json.dumps({"reasoning": "x", "fulfilled": 3}),
        json.dumps({"reasoning": 5, COUNT_KEY: 3}),
        json.dumps([3]),
        '{"reasoning": "cut sho',
        "About 4 of them.",
        "",
    ],
)
def test_unusable_count_answers_give_none(text: str) -> None:
    assert parse_judge_answer(text, N, COUNT) is None


def test_a_fenced_json_answer_is_accepted() -> None:
    verdict = parse_judge_answer(f"```json\n{count_answer(2)}\n```", N, COUNT)
    assert verdict is not None
    assert verdict.fulfilled == 2


def per_answer(verdicts: list[dict[str, object]], reasoning: str = "overall fine") -> str:
    return json.dumps({"verdicts": verdicts, "reasoning": reasoning})


def full_verdicts() -> list[dict[str, object]]:
    return [{"index": i, "fulfilled": i % 2 == 1, "reason": f"reason {i}"} for i in range(1, N + 1)]


def test_per_requirement_answers_keep_every_reason() -> None:
    verdicts = list(reversed(full_verdicts()))  # order does not matter
    verdict = parse_judge_answer(per_answer(verdicts), N, PER)
    assert verdict is not None
    assert verdict.valid
    assert verdict.fulfilled == 3
    assert verdict.score == pytest.approx(0.5)
    assert verdict.verdicts is not None
    assert [v.index for v in verdict.verdicts] == list(range(1, N + 1))
    lines = verdict.rationale.splitlines()
    assert lines[0] == "✓ 1. reason 1"
    assert lines[1] == "✗ 2. reason 2"
    assert lines[-1] == "overall fine"


@pytest.mark.parametrize(
    "verdicts",
    [
        full_verdicts()[:-1],  # one missing
        [*full_verdicts(), {"index": 1, "fulfilled": True, "reason": "again"}],  # duplicate
        [*full_verdicts()[:-1], {"index": N + 1, "fulfilled": True, "reason": "extra"}],  # out of range
        [dict(v, fulfilled="yes") for v in full_verdicts()],  # not a boolean
        [dict(v, index=True) for v in full_verdicts()],  # a boolean index
        [],
    ],
)
def test_schema_violating_per_requirement_answers_give_none(verdicts: list[dict[str, object]]) -> None:
    assert parse_judge_answer(per_answer(verdicts), N, PER) is None


# ---------------------------------------------------------------------------------- against the simulator


async def test_count_mode_against_the_simulator(sim: Simulator, client: openai.AsyncOpenAI, drawing_png: bytes) -> None:
    judge = Judge(client, "simulated-judge")
    verdict = await judge.judge(drawing_png, REQS, prompt="A tropical island.")
    assert verdict.valid
    assert verdict.attempts == 1
    assert verdict.total == N
    assert verdict.fulfilled is not None
    assert 0 < verdict.fulfilled <= N
    assert verdict.score == pytest.approx(verdict.fulfilled / N)
    assert verdict.rationale.startswith("[simulated judge]")
    assert json.loads(verdict.raw)[COUNT_KEY] == verdict.fulfilled
    assert verdict.usage.prompt_tokens > 0
    assert verdict.usage.completion_tokens > 0
    assert verdict.verdicts is None
    blank = await judge.judge(render(BLANK), REQS)
    assert blank.valid
    assert blank.fulfilled == 0
    again = await judge.judge(drawing_png, REQS, prompt="A tropical island.")
    assert again.fulfilled == verdict.fulfilled  # deterministic
    stats = sim.stats()
    assert stats["requests"]["judge"] == 3
    assert stats["judge_mode"]["count"] == 3


async def test_per_requirement_mode_against_the_simulator(
    sim: Simulator, client: openai.AsyncOpenAI, drawing_png: bytes
) -> None:
    verdict = await Judge(client, "simulated-judge", JudgeMode.PER_REQUIREMENT).judge(drawing_png, REQS)
    assert verdict.valid
    assert verdict.verdicts is not None
    assert [v.index for v in verdict.verdicts] == list(range(1, N + 1))
    assert verdict.fulfilled == sum(v.fulfilled for v in verdict.verdicts)
    assert verdict.score == pytest.approx(verdict.fulfilled / N)
    for v in verdict.verdicts:
        assert v.reason.startswith("[simulated judge]")
        assert f"{'✓' if v.fulfilled else '✗'} {v.index}. {v.reason}" in verdict.rationale
    assert sim.stats()["judge_mode"]["per-requirement"] == 1


async def test_out_of_range_count_is_asked_again_then_invalid(
    sim: Simulator, client: openai.AsyncOpenAI, drawing_png: bytes
) -> None:
    sim.configure(judge_garbage_every=1, judge_garbage_kinds=("out_of_range",))
    verdict = await Judge(client, "simulated-judge").judge(drawing_png, REQS)
    assert not verdict.valid
    assert verdict.attempts == 2
    assert verdict.score is None
    assert f"outside 0..{N}" in verdict.rationale
    assert sim.stats()["requests"]["judge"] == 2
    sim.reset_stats()
    sim.configure(judge_garbage_every=2)  # every second judge request is out of range
    assert (await Judge(client, "simulated-judge").judge(drawing_png, REQS)).attempts == 1  # request 1: fine
    retried = await Judge(client, "simulated-judge").judge(drawing_png, REQS)  # 2: out of range, 3: the retry
    assert retried.valid
    assert retried.attempts == 2
    assert 0 <= (retried.fulfilled or 0) <= N


@pytest.mark.parametrize("mode", [COUNT, PER])
@pytest.mark.parametrize("kind", ["non_json", "truncated_json", "schema", "non_integer", "unreadable"])
async def test_garbage_twice_gives_an_invalid_verdict(
    sim: Simulator, client: openai.AsyncOpenAI, drawing_png: bytes, kind: str, mode: JudgeMode
) -> None:
    sim.configure(judge_garbage_every=1, judge_garbage_kinds=(kind,))
    verdict = await Judge(client, "simulated-judge", mode).judge(drawing_png, REQS)
    assert not verdict.valid
    assert verdict.score is None
    assert verdict.fulfilled is None
    assert verdict.total == N
    assert verdict.attempts == 2
    assert "no usable answer after 2 attempts" in verdict.rationale
    assert verdict.raw
    assert parse_judge_answer(verdict.raw, N, mode) is None
    if kind == "non_json":
        assert verdict.raw.startswith("[simulated judge]")
    stats = sim.stats()
    assert stats["requests"]["judge"] == 2
    assert stats["faults"]["judge_garbage"] == 2
    sim.configure(judge_garbage_every=0)
    clean = await Judge(client, "simulated-judge", mode).judge(drawing_png, REQS)
    assert clean.valid
    assert clean.attempts == 1
    assert verdict.usage.prompt_tokens >= 2 * clean.usage.prompt_tokens  # both attempts are counted
    assert verdict.usage.completion_tokens > 0


async def test_one_bad_answer_then_a_good_one(sim: Simulator, client: openai.AsyncOpenAI, drawing_png: bytes) -> None:
    judge = Judge(client, "simulated-judge")
    first = await judge.judge(drawing_png, REQS)  # judge request 1 is fine
    sim.configure(judge_garbage_every=2, judge_garbage_kinds=("non_json",))
    second = await judge.judge(drawing_png, REQS)  # request 2 is garbage, its retry (3) is fine
    assert second.valid
    assert second.attempts == 2
    assert second.fulfilled == first.fulfilled
    assert second.usage.prompt_tokens > first.usage.prompt_tokens
    assert sim.stats()["requests"]["judge"] == 3


async def test_no_format_retries(sim: Simulator, client: openai.AsyncOpenAI, drawing_png: bytes) -> None:
    sim.configure(judge_garbage_every=1, judge_garbage_kinds=("non_json",))
    verdict = await Judge(client, "simulated-judge", max_format_retries=0).judge(drawing_png, REQS)
    assert not verdict.valid
    assert verdict.attempts == 1
    assert sim.stats()["requests"]["judge"] == 1


async def test_empty_choices_count_as_an_unusable_answer(
    sim: Simulator, client: openai.AsyncOpenAI, drawing_png: bytes
) -> None:
    sim.configure(empty_choices_every=1)
    verdict = await Judge(client, "simulated-judge").judge(drawing_png, REQS)
    assert not verdict.valid
    assert verdict.attempts == 2
    assert "no choices" in verdict.rationale
    assert verdict.raw == ""


async def test_api_errors_propagate(sim: Simulator, client: openai.AsyncOpenAI, drawing_png: bytes) -> None:
    sim.configure(error_5xx_every=1)
    with pytest.raises(openai.InternalServerError):
        await Judge(client, "simulated-judge").judge(drawing_png, REQS)


async def test_no_requirements_is_a_caller_error(client: openai.AsyncOpenAI, drawing_png: bytes) -> None:
    with pytest.raises(ValueError):
        await Judge(client, "simulated-judge").judge(drawing_png, [])
