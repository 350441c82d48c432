"""Judge profiles and answer forms: each profile's request, reader and failure rule, the simulator answering every
form, the setting, and a run keeping its profile (stored, shown, exported, refused on a resume saying otherwise)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import openai
import pytest
from recorded_judge import recorded_endpoint

from svgagent.core.config.settings import load_settings
from svgagent.core.scoring.endpoint import endpoint_client
from svgagent.core.scoring.errors import ConfigError
from svgagent.core.scoring.judge import Judge, build_judge_messages, judge_request_body, parse_judge_answer
from svgagent.core.scoring.judge_forms import FORMS, form_named
from svgagent.core.scoring.judge_profiles import PROFILES, PictureRule, profile_named
from svgagent.core.scoring.models import COUNT_KEY, JudgeMode, JudgeProfileName
from svgagent.core.scoring.picture_size import OWN_SIZE
from svgagent.core.sim.simulator import SimConfig, Simulator
from svgagent.tui.cli.main import main

REQS = ["A red sun", "A blue sea", "A green island", "A boat"]
N = len(REQS)
PNG = b"\x89PNG\r\n\x1a\n" + bytes(24)
EP, SVGBENCH, OWN = (PROFILES[JudgeProfileName.EP_QUICKSTART], PROFILES[JudgeProfileName.SVGBENCH],
                     PROFILES[JudgeProfileName.SVGAGENT])  # fmt: skip


# ------------------------------------------------------------------------------------------ the requests


@pytest.mark.parametrize("profile", list(PROFILES.values()), ids=lambda p: p.name.value)
async def test_each_profile_asks_its_own_question_and_schema(profile) -> None:
    with recorded_endpoint({}, {"A red sun": answer("2")}) as endpoint:
        api = endpoint_client(endpoint.base_url, "test", timeout_s=10, max_retries=0)
        try:
            verdict = await Judge(api, "judge", JudgeMode.COUNT, profile=profile).judge(PNG, REQS, "A tropical island.")
        finally:
            await api.close()
    assert verdict.valid and verdict.fulfilled == 2
    [body] = endpoint.judged  # what reached the wire through the endpoint client
    text, image = body["messages"][0]["content"]
    for number, requirement in enumerate(REQS, start=1):
        assert f"\n{number}. {requirement}" in text["text"]
    assert "strict" in text["text"]
    assert image["image_url"]["url"].startswith(f"data:{profile.image_type};base64,")
    assert "detail" not in image["image_url"]
    assert ("temperature" in body) is (profile.temperature is not None)
    spec = body["response_format"]["json_schema"]
    assert spec["name"] == profile.form().name
    assert spec.get("strict", False) is profile.form().strict
    assert COUNT_KEY in spec["schema"]["properties"]
    # the description is svgagent's own addition: the other questions leave it out
    assert ("A tropical island." in text["text"]) is (profile is OWN)
    # the body sent is judge_request_body of the profile's messages, schema and temperature, as JSON
    messages = build_judge_messages(PNG, REQS, JudgeMode.COUNT, "A tropical island.", profile)
    expected = judge_request_body("judge", messages, profile.form().response_format(N), profile.temperature)
    assert body == json.loads(json.dumps(expected))


def test_the_recipes_differ_where_their_sources_do() -> None:
    assert OWN.picture is PictureRule.LONGEST_SIDE and OWN.render_size(512) == 512
    assert EP.picture is SVGBENCH.picture is PictureRule.OWN_SIZE and EP.render_size(512) == OWN_SIZE
    assert (EP.temperature, SVGBENCH.temperature) == (0, None)
    assert (EP.image_type, SVGBENCH.image_type) == ("image/png", "image/jpeg")
    assert (OWN.render_failure_valid, EP.render_failure_valid, SVGBENCH.render_failure_valid) == (True, False, True)
    assert (OWN.unusable_scores_zero, EP.unusable_scores_zero, SVGBENCH.unusable_scores_zero) == (False, False, True)
    assert EP.form().schema["title"] == "SVGBenchResponse"
    assert SVGBENCH.form().schema["properties"][COUNT_KEY]["type"] == "number"
    with pytest.raises(ConfigError, match="count only"):
        EP.form(JudgeMode.PER_REQUIREMENT)
    with pytest.raises(ConfigError, match="svgagent, ep-quickstart, svgbench"):
        profile_named("vibes")


# ---------------------------------------------------------------------------------------------- the readers


def answer(value: str, reasoning: str = '"ok"') -> str:
    return f'{{"reasoning": {reasoning}, "{COUNT_KEY}": {value}}}'


@pytest.mark.parametrize(
    ("text", "ep", "svgbench", "own"),
    [
        (answer("3"), 0.75, 0.75, 0.75),
        (answer("999"), 1.0, None, None),  # clamped / outside 0..N
        (answer("-2"), 0.0, None, None),
        (answer("2.5"), 0.625, 0.625, None),  # a fraction: a count for the number forms
        (answer('"3"'), None, None, 0.75),  # a string: svgagent reads a plain decimal one
        (answer("true"), 0.25, 0.25, None),  # Python's arithmetic counts True as 1
        (answer("NaN"), 0.0, None, None),
        (answer("Infinity"), 1.0, None, None),
        (answer("1", "null"), 0.25, 0.25, None),  # a null reasoning: none for the quickstart
        (answer("1", "7"), None, 0.25, None),  # SVGBench's form has no reasoning to check
        ("```json\n" + answer("3") + "\n```", None, None, 0.75),  # only svgagent reads inside a fence
        (f'{{"{COUNT_KEY}": 2}}', 0.5, 0.5, 0.5),
        ("three", None, None, None),
        ("[3]", None, None, None),
    ],
)
def test_each_form_reads_answers_by_its_sources_rules(text: str, ep, svgbench, own) -> None:
    for profile, want in ((EP, ep), (SVGBENCH, svgbench), (OWN, own)):
        verdict = parse_judge_answer(text, N, JudgeMode.COUNT, profile)
        if want is None:
            assert verdict is None, (profile.name, text)
        else:
            assert verdict is not None and verdict.valid, (profile.name, text)
            assert verdict.score == pytest.approx(want), (profile.name, text)
            assert 0.0 <= verdict.score <= 1.0 and not math.isnan(verdict.score)


def test_every_form_reads_what_it_asks_for() -> None:
    decisions = [True, False, True, True]
    for form in FORMS.values():
        assert form_named(form.name) is form
        verdict = form.read(json.dumps(form.answer(decisions, "looked", ["a", "b", "c", "d"])), N)
        assert not isinstance(verdict, str) and verdict.fulfilled == 3 and verdict.score == 0.75, form.name
    assert form_named("something-else").name == "svg_requirements_count"


# --------------------------------------------------------------------------------------- the failure rules


async def _judge_once(sim: Simulator, profile, garbage: str) -> tuple:
    sim.configure(judge_garbage_every=1, judge_garbage_kinds=[garbage])
    api = openai.AsyncOpenAI(base_url=sim.base_url, api_key="test", max_retries=0)
    try:
        before = sim.stats()["requests"]["judge"]
        verdict = await Judge(api, "judge", JudgeMode.COUNT, profile=profile).judge(PNG, REQS)
        return verdict, sim.stats()["requests"]["judge"] - before
    finally:
        await api.close()


async def test_an_unusable_answer_is_asked_again_as_each_profile_says() -> None:
    with Simulator(SimConfig(seed=3)) as sim:
        own, own_asks = await _judge_once(sim, OWN, "non_json")
        ep, ep_asks = await _judge_once(sim, EP, "non_json")
        bench, bench_asks = await _judge_once(sim, SVGBENCH, "non_json")
        assert sim.stats()["judge_form"] == {
            "svg_requirements_count": 2,
            "SVGBenchResponse": 1,
            "structured_response": 3,
        }
    assert (own_asks, ep_asks, bench_asks) == (2, 1, 3)
    assert not own.valid and own.score is None and own.attempts == 2
    assert not ep.valid and ep.score is None and ep.attempts == 1
    # SVGBench stores a question that failed three times as 0
    assert bench.valid and bench.score == 0.0 and bench.fulfilled == 0 and bench.attempts == 3 and bench.unusable
    assert "no usable answer after 3 attempts" in bench.rationale


async def test_the_simulator_answers_each_profiles_form() -> None:
    with Simulator(SimConfig(seed=5)) as sim:
        api = openai.AsyncOpenAI(base_url=sim.base_url, api_key="test", max_retries=0)
        try:
            for profile in PROFILES.values():
                verdict = await Judge(api, "judge", JudgeMode.COUNT, profile=profile).judge(PNG, REQS)
                assert verdict.valid and verdict.attempts == 1, profile.name
        finally:
            await api.close()


def test_the_setting_refuses_a_mode_the_profile_has_not() -> None:
    assert load_settings(judge_profile="ep-quickstart").judge_profile is JudgeProfileName.EP_QUICKSTART
    with pytest.raises(ConfigError, match="judges by count only"):
        load_settings(judge_profile="svgbench", judge_mode="per-requirement")
    with pytest.raises(ConfigError, match="svgagent, ep-quickstart, svgbench"):
        load_settings(judge_profile="vibes")


# ------------------------------------------------------------------------------------ a run keeps its profile


def test_a_run_keeps_its_profile_stored_shown_exported_and_on_resume(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(tmp_path / "runs.db")
    common = ["--demo", "--rows", "2", "--store", store]
    assert main(["eval", *common, "--judge-profile", "svgbench", "--json"]) in (0, 1, 3)
    run_id = json.loads(capsys.readouterr().out)["run_id"]
    assert main(["runs", "show", run_id, "--store", store, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)["run"]
    assert (shown["judge_profile"], shown["renderer"]) == ("svgbench", "cairosvg")
    assert main(["runs", "show", run_id, "--store", store]) == 0
    assert "with the svgbench profile" in capsys.readouterr().out
    out = tmp_path / "run.jsonl"
    assert main(["export", run_id, "--store", store, "-o", str(out)]) == 0
    capsys.readouterr()
    sessions = [json.loads(line)["input_metadata"]["session_data"] for line in out.read_text().splitlines()]
    assert sessions and all(s == {"judge_profile": "svgbench", "renderer": "cairosvg"} for s in sessions)
    # a resume saying otherwise is refused, before anything runs
    status = main(["eval", "--demo", "--store", store, "--resume", run_id, "--judge-profile", "ep-quickstart"])
    assert status == 2
    assert "judge_profile 'svgbench'" in capsys.readouterr().err
    # imported back, the run is still svgbench's
    assert main(["import", str(out), "--store", store, "--json"]) == 0
    imported = json.loads(capsys.readouterr().out)["run_id"]
    assert main(["runs", "show", imported, "--store", store, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["run"]["judge_profile"] == "svgbench"
    # comparing it with a run of another recipe says so
    assert main(["eval", *common, "--json"]) in (0, 1, 3)
    other = json.loads(capsys.readouterr().out)["run_id"]
    assert main(["runs", "compare", run_id, other, "--store", store]) == 0
    assert "A is scored with judge_profile svgbench, B with svgagent" in capsys.readouterr().err
    assert main(["runs", "compare", run_id, imported, "--store", store]) == 0
    assert "note:" not in capsys.readouterr().err


def test_the_engine_refuses_settings_with_another_recipe(tmp_path: Path) -> None:
    import asyncio

    from svgagent.core.demo import demo_overrides, demo_simulator
    from svgagent.core.run.dataset import load_dataset
    from svgagent.core.run.engine import Engine
    from svgagent.core.store.run_store import Store

    with demo_simulator() as sim, Store(tmp_path / "runs.db") as store:
        settings = load_settings(**demo_overrides(sim.base_url), rows=1, judge_profile="ep-quickstart")
        other = load_settings(**demo_overrides(sim.base_url), rows=1)

        async def go() -> None:
            async with Engine(settings, store) as engine:
                run_id = engine.create_run(load_dataset("builtin"))
            assert store.get_run(run_id).judge_profile == "ep-quickstart"
            async with Engine(other, store) as engine:
                with pytest.raises(ConfigError, match="scored with judge_profile ep-quickstart, not svgagent"):
                    await engine.run(run_id)

        asyncio.run(go())
