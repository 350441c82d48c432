"""The parts that explain a score (core/scoring/components.py): what the RFT evaluator reports as its metrics, on
answers built to stop at each stage, judged by the project's simulator in both judge modes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from factories import Spec, build_run, standard_specs

from svgagent.core.analysis.step_components import PLOTTED, series, step_components
from svgagent.core.rft import bundle_entry
from svgagent.core.scoring.components import COMPONENTS, describe, requirement_key, rollout_components
from svgagent.core.scoring.render import Renderer
from svgagent.core.sim.simulator import Simulator
from svgagent.core.store.run_store import Store
from svgagent.core.store.size_caps import ANSWER_CAP

DRAWN = '```svg\n<svg viewBox="0 0 10 10"><circle cx="5" cy="5" r="4" fill="red"/></svg>\n```'
REQS = ["a red circle", "a blue square", "a green triangle"]


@pytest.fixture(scope="module")
def renderer() -> Iterator[Renderer]:
    with Renderer(size=128, workers=1) as r:
        yield r


@pytest.fixture(scope="module")
def judge() -> Iterator[Simulator]:
    with Simulator() as sim:
        yield sim


def test_components_of_one_rollout() -> None:
    parts = rollout_components(
        answer="abc",
        svg_found=True,
        rendered=False,
        requirement_count=4,
        fulfilled=None,
        completion_tokens=12,
        verdicts=[(1, True), (2, False)],
    )
    assert parts == {
        "svg_found": 1.0,
        "rendered": 0.0,
        "requirement_count": 4.0,
        "fulfilled": None,
        "answer_chars": 3.0,
        "completion_tokens": 12.0,
        "prompt_tokens": None,
        "requirement_1": 1.0,
        "requirement_2": 0.0,
    }
    # a picture without an SVG is impossible: rendered follows svg_found
    assert (
        rollout_components(answer="", svg_found=False, rendered=True, requirement_count=1, fulfilled=0)["rendered"]
        == 0.0
    )
    assert {c.key for c in COMPONENTS} <= set(parts)
    assert describe("svg_found", 1.0) == "SVG found: yes"
    assert describe("answer_chars", 3.0) == "answer length (chars): 3"
    assert describe(requirement_key(2), 0.0) == "requirement 2 not fulfilled"
    assert describe("fulfilled", None) == "not known for this rollout"


async def test_evaluator_metrics_say_where_each_score_came_from(
    renderer: Renderer, judge: Simulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key")
    count = bundle_entry.JudgeConfig(judge_model="simulated-judge", judge_base_url=judge.base_url, max_retries=0)
    per_req = bundle_entry.JudgeConfig(
        judge_model="simulated-judge", judge_base_url=judge.base_url, max_retries=0, judge_mode="per-requirement"
    )

    none = await bundle_entry.score_answer("I cannot draw", REQS, config=count, renderer=renderer)
    m = none.metrics("I cannot draw", {"completion_tokens": 7, "prompt_tokens": 30})
    assert (m["svg_found"]["score"], m["rendered"]["score"], m["fulfilled"]["score"]) == (0.0, 0.0, 0.0)
    assert m["answer_chars"]["score"] == len("I cannot draw")
    assert m["completion_tokens"] == {"score": 7.0, "is_score_valid": True, "reason": "completion tokens: 7"}
    assert m["prompt_tokens"]["score"] == 30.0
    assert m["requirement_count"]["score"] == 3.0

    broken = '<svg width="-5" height="10"></svg>'
    failed = await bundle_entry.score_answer(broken, REQS, config=count, renderer=renderer)
    m = failed.metrics(broken)
    assert (m["svg_found"]["score"], m["rendered"]["score"]) == (1.0, 0.0)
    assert m["completion_tokens"]["is_score_valid"] is False  # no usage given: not known, not 0 tokens

    counted = await bundle_entry.score_answer(DRAWN, REQS, config=count, renderer=renderer)
    assert counted.is_score_valid and counted.fulfilled is not None
    m = counted.metrics(DRAWN)
    assert (m["svg_found"]["score"], m["rendered"]["score"]) == (1.0, 1.0)
    assert m["fulfilled"]["score"] == counted.fulfilled
    assert not any(k.startswith("requirement_") and k != "requirement_count" for k in m)  # count mode: no verdicts

    judged = await bundle_entry.score_answer(DRAWN, REQS, config=per_req, renderer=renderer)
    assert judged.is_score_valid
    m = judged.metrics(DRAWN)
    verdicts = [m[requirement_key(i)]["score"] for i in (1, 2, 3)]
    assert sum(verdicts) == judged.fulfilled == m["fulfilled"]["score"]
    assert judged.to_dict()["verdicts"] == [[i, bool(v)] for i, v in zip((1, 2, 3), verdicts, strict=True)]


def test_step_components_read_from_the_store(tmp_path: Path) -> None:
    with Store(tmp_path / "runs.db") as store:
        first = build_run(store, standard_specs(), run_id="run-a")
        second = build_run(
            store,
            [Spec(0, fulfilled=4, tokens=(100, 200)), Spec(1, fulfilled=2, svg=None, tokens=(100, 400))],
            run_id="run-b",
        )
        store.update_rollout("run-b.0.0", raw_answer="x" * (ANSWER_CAP + 900))  # the store keeps its first ANSWER_CAP
        got = step_components(store, [first, second, "no-such-run"])
    assert set(got) == {first, second}
    a, b = got[first].means, got[second].means
    # run-a: rows 0-4 got an answer (row 5 is queued); row 2 has none of an SVG; rows 0,1,3,4 drew a picture
    assert a["svg_found"] == pytest.approx(4 / 5) and a["rendered"] == pytest.approx(4 / 5)
    assert a["requirement_count"] == 4.0
    assert a["fulfilled"] == pytest.approx((3 + 4 + 0 + 3) / 4)  # valid scores only, row 4's override (3) first
    assert a["score"] == pytest.approx((0.75 + 1.0 + 0.0 + 0.75) / 4)
    assert a["completion_tokens"] == 340.0 and a["prompt_tokens"] == 120.0
    assert b["svg_found"] == 0.5 and b["rendered"] == 0.5
    assert b["answer_chars"] == (ANSWER_CAP + 900 + len("I cannot draw that.")) / 2  # a cut answer's own length
    assert b["completion_tokens"] == 300.0
    assert series([got[first], None, got[second]], "svg_found") == [a["svg_found"], None, 0.5]
    assert [c.key for c in PLOTTED][0] == "score"


def test_runs_stats_reports_the_components(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from svgagent.tui.cli.main import main

    db = tmp_path / "runs.db"
    with Store(db) as store:
        run = build_run(store, standard_specs(), run_id="run-a")
    assert main(["runs", "stats", run, "--store", str(db), "--json"]) == 0
    components = json.loads(capsys.readouterr().out)["components"]
    assert components["svg_found"] == pytest.approx(4 / 5)
    assert components["requirement_count"] == 4.0
    assert main(["runs", "stats", run, "--store", str(db)]) == 0
    out = capsys.readouterr().out
    assert "what explains the scores" in out
    assert "SVG found" in out and "80.0%" in out
    assert "completion tokens" in out and "340.0" in out
