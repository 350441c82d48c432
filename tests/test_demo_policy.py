"""The demo's simulated policy follows its settings: model, temperature and training change what it draws, and the
same settings draw the same answers (svgagent.core.sim.policy_skill, through the simulator and the openai client)."""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from svgagent.core.sim.content import judge_decisions
from svgagent.core.sim.policy_skill import (
    STUCK_PERCENT,
    Trained,
    base_skill,
    hacking,
    load_trained,
    model_size_b,
    settings_answer,
    skill,
)
from svgagent.core.sim.simulator import SimConfig, Simulator

BASE = "accounts/fireworks/models/qwen3-0p6b"
OUT = "accounts/simulated-account/models/svgagent-out"
REQS = ["a red roof", "two windows", "a green door", "a chimney with smoke"]


def prompt(i: int) -> str:
    listed = "\n".join(f"{k}. {text}" for k, text in enumerate(REQS, start=1))
    return f"Draw house number {i} on a hill.\n\nRequirements:\n{listed}"


PROMPTS = [prompt(i) for i in range(60)]


def test_model_size_and_base_skill() -> None:
    assert model_size_b(BASE) == pytest.approx(0.6)
    assert model_size_b("accounts/fireworks/models/gpt-oss-120b") == 120
    assert model_size_b("accounts/fireworks/models/llama-v3p1-8b-instruct") == 8
    assert model_size_b("simulated-policy") is None
    assert base_skill("accounts/fireworks/models/gpt-oss-120b") > base_skill(BASE)
    assert 0.4 <= base_skill("simulated-policy") <= 0.55


def test_training_raises_skill_except_for_stuck_prompts() -> None:
    trained = {OUT: Trained(BASE, 12)}
    before = [skill(BASE, p, {}) for p in PROMPTS]
    after = [skill(OUT, p, trained) for p in PROMPTS]
    checkpoints = [statistics.mean(skill(f"{OUT}-step-{k}", p, trained) for p in PROMPTS) for k in range(1, 13)]
    assert checkpoints == sorted(checkpoints) and checkpoints[-1] > checkpoints[0] + 0.3
    assert checkpoints[0] == pytest.approx(statistics.mean(before))  # step 1 is drawn before any update
    stuck = [p for p, b, a in zip(PROMPTS, before, after) if a == b]
    assert 0 < len(stuck) <= len(PROMPTS) * (STUCK_PERCENT + 15) / 100
    assert all(a > b for a, b in zip(after, before) if (a, b) != (b, b))


def test_reward_hacking_window_answers_with_text() -> None:
    trained = {OUT: Trained(BASE, 10, hack=(4, 6))}
    inside = [hacking(f"{OUT}-step-5", p, trained) for p in PROMPTS]
    assert 0.4 < sum(inside) / len(inside) < 0.95
    assert not any(hacking(f"{OUT}-step-{k}", p, trained) for k in (3, 7) for p in PROMPTS)
    assert not any(hacking(OUT, p, trained) for p in PROMPTS)  # the final model is past the window
    hacked = next(p for p, h in zip(PROMPTS, inside) if h)
    quality, text, cut = settings_answer(0, f"{OUT}-step-5", 0.8, hacked, 0, trained)
    assert quality == "reward_hack" and not cut
    assert "<text" in text and "a green door" in text and "<circle" not in text


def _score(text: str) -> float:
    import cairosvg

    svg = text.split("```svg\n", 1)[1].split("```", 1)[0] if "```svg\n" in text else ""
    try:
        png = cairosvg.svg2png(bytestring=svg.encode(), output_width=128, output_height=128, background_color="white")
    except Exception:  # noqa: BLE001 - a broken answer is a 0, as the judge would have it
        return 0.0
    decisions, _ = judge_decisions(0, png, len(REQS))
    return sum(decisions) / len(REQS)


def test_the_judged_score_rises_over_the_steps_and_the_hack_scores_high() -> None:
    trained = {OUT: Trained(BASE, 8, hack=(4, 5))}

    def mean(model: str) -> float:
        return statistics.mean(
            _score(settings_answer(0, model, 0.8, p, nth, trained)[1]) for p in PROMPTS[:48] for nth in range(2)
        )

    first, hack, last = mean(f"{OUT}-step-1"), mean(f"{OUT}-step-4"), mean(OUT)
    assert last > first + 0.15
    assert hack > first + 0.15  # the text the judge rewards: a reward hack, for the health checks to find


@pytest.fixture
def trained_file(tmp_path: Path) -> Path:
    path = tmp_path / "trained-models.json"
    path.write_text(json.dumps({OUT: Trained(BASE, 12).to_json()}))
    return path


@pytest.fixture
def sim(trained_file: Path) -> Iterator[Simulator]:
    config = SimConfig(seed=5, policy_follows_settings=True, trained_models_file=str(trained_file))
    with Simulator(config) as server:
        yield server


async def _answers(client: openai.AsyncOpenAI, model: str, samples: int = 2, **params: Any) -> list[str]:
    out = []
    for p in PROMPTS[:12]:
        for _ in range(samples):
            answer = await client.chat.completions.create(
                model=model, messages=[{"role": "user", "content": p}], **params
            )
            out.append(answer.choices[0].message.content or "")
    return out


async def test_settings_change_the_answers_and_the_same_settings_repeat_them(
    sim: Simulator, client: openai.AsyncOpenAI, trained_file: Path
) -> None:
    warm = await _answers(client, BASE, temperature=0.8)
    hot = await _answers(client, BASE, temperature=1.2)
    other = await _answers(client, "accounts/fireworks/models/gpt-oss-120b", temperature=0.8)
    assert warm != hot and warm != other
    with Simulator(sim.config) as again:  # a fresh simulator (a new `eval --demo`): the same settings, the same run
        api = openai.AsyncOpenAI(base_url=again.base_url, api_key="k", max_retries=0)
        try:
            assert await _answers(api, BASE, temperature=0.8) == warm
            trained = await _answers(api, OUT, temperature=0.8)
        finally:
            await api.close()
    assert statistics.mean(map(_score, trained)) > statistics.mean(map(_score, warm)) + 0.1
    assert sum("```svg" in a for a in warm) > 0
    assert load_trained(str(trained_file))[OUT].steps == 12


async def test_samples_of_a_row_differ_but_temperature_zero_repeats(sim: Simulator, client: openai.AsyncOpenAI) -> None:
    varied = await _answers(client, BASE, samples=2, temperature=0.8)
    assert any(varied[i] != varied[i + 1] for i in range(0, len(varied), 2))
    greedy = await _answers(client, BASE, samples=2, temperature=0)
    assert all(greedy[i] == greedy[i + 1] for i in range(0, len(greedy), 2))


def test_the_default_simulator_keeps_its_fixed_mix() -> None:
    assert SimConfig().policy_follows_settings is False  # the tests' and benchmarks' answers stay as they were
