"""The ep-quickstart judge profile scores as the RFT job's evaluator does, row by row, on the same recorded replies.

One loopback endpoint replays recorded answers (tests/recorded_judge.py): the policy's answer by the row's prompt,
the judge's reply by the row's requirements — the replies a judge gives and the ones it should not (a count of 999,
a fraction, a string, NaN, a fenced or empty answer, a reasoning that is not text). Three evaluators score the
same rows:

1. ``svgagent eval --judge-profile ep-quickstart`` (its export's ``evaluation_result``);
2. the RFT evaluator bundle built with that profile (core/rft/evaluator_bundle.py + bundle_entry.py), its plain
   scoring function in a separate interpreter;
3. Eval Protocol's own quickstart evaluator (``quickstart/svg_agent/evaluator``, the reward its RFT example trains
   on), run in eval-protocol's venv: its ``litellm`` judge call pointed at the same endpoint, its Selenium render
   replaced by a stub that writes a PNG (no browser driver there) — or fails where svgagent's renderer fails, so the
   render-failure rule is compared too.

All three give the same (score, is_score_valid) for every row.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from ep_venv import ep_command, ep_env, ep_venv
from recorded_judge import recorded_endpoint

from svgagent.core.rft.evaluator_bundle import build_bundle
from svgagent.tui.cli.main import main

GOOD = (
    'Here it is.\n```svg\n<svg xmlns="http://www.w3.org/2000/svg" width="120" height="80">'
    '<rect x="10" y="10" width="60" height="40" fill="#c33"/><circle cx="95" cy="40" r="15" fill="#36c"/></svg>\n```'
)
EXTERNAL = (  # svgagent's sandbox refuses the external reference: a render failure
    '```svg\n<svg xmlns="http://www.w3.org/2000/svg" width="50" height="50">'
    '<image href="http://example.invalid/x.png" width="50" height="50"/></svg>\n```'
)
NO_SVG = "I would rather describe it in words: a red box and a blue ball."


def count(value: str, reasoning: str = '"looked at each"') -> str:
    return f'{{"reasoning": {reasoning}, "number_of_fulfilled_requirements": {value}}}'


# row -> (policy answer, the judge's recorded reply, the score and validity Eval Protocol's evaluator gives)
CASES: dict[str, tuple[str, str, tuple[float, bool]]] = {
    "row-01": (GOOD, count("2"), (0.5, True)),
    "row-02": (GOOD, count("999"), (1.0, True)),  # clamped to N
    "row-03": (GOOD, count("-3"), (0.0, True)),
    "row-04": (GOOD, count("2.5"), (0.625, True)),  # a fraction stays one
    "row-05": (GOOD, count('"3"'), (0.0, False)),  # a string is no count
    "row-06": (GOOD, '{"reasoning": "forgot the count"}', (0.0, False)),
    "row-07": (GOOD, "About three of them.", (0.0, False)),
    "row-08": (GOOD, "```json\n" + count("3") + "\n```", (0.0, False)),  # no fence is read
    "row-09": (GOOD, count("1", "null"), (0.25, True)),
    "row-10": (GOOD, count("1", "7"), (0.0, False)),  # a reasoning that is not text
    "row-11": (GOOD, count("true"), (0.25, True)),  # Python counts True as 1
    "row-12": (GOOD, count("NaN"), (0.0, True)),  # max(0, min(NaN, N)) is 0
    "row-13": (GOOD, count("Infinity"), (1.0, True)),
    "row-14": (GOOD, "", (0.0, False)),  # an empty answer
    "row-15": (NO_SVG, count("4"), (0.0, True)),  # no SVG: a valid 0, the judge is not asked
    "row-16": (EXTERNAL, count("4"), (0.0, False)),  # a render failure: an invalid 0
}
N = 4


def requirements(row: str) -> list[str]:
    return [f"{row} requirement {i}: something is drawn" for i in range(1, N + 1)]


def prompt(row: str) -> str:
    return f"{row} picture: a red box beside a blue ball."


EP_SCRIPT = r"""
import asyncio, json, os, sys
sys.path.insert(0, sys.argv[1])
import test_svgagent as quickstart
from eval_protocol.models import EvaluationRow, InputMetadata, Message

cases = json.load(sys.stdin)
PNG = bytes.fromhex(cases.pop("png"))
failing = set(cases.pop("render_fails"))

def render(svg_code, output_path):  # stands for its Selenium screenshot
    if any(marker in svg_code for marker in failing):
        raise RuntimeError("render failed")
    with open(output_path, "wb") as out:
        out.write(PNG)
    return True

quickstart.render_svg_to_png = render
evaluate = quickstart.test_svg_generation_evaluation._origin_func  # the function under its pytest wrapper
out = {}
for row_id, case in cases.items():
    row = EvaluationRow(
        messages=[Message(role="user", content=case["prompt"]), Message(role="assistant", content=case["answer"])],
        input_metadata=InputMetadata(
            row_id=row_id,
            dataset_info={"requirements": case["requirements"], "total_requirements": len(case["requirements"]),
                          "original_prompt": case["prompt"]},
        ),
    )
    result = asyncio.run(evaluate(row)).evaluation_result
    out[row_id] = [result.score, result.is_score_valid]
print(json.dumps(out))
"""

BUNDLE_SCRIPT = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import test_svgagent_judge as entry
cases = json.load(sys.stdin)
out = {}
for row_id, case in cases.items():
    result = entry.score_answer_sync(case["answer"], case["requirements"], case["prompt"])
    out[row_id] = [result.reward, result.is_score_valid]
entry.close_renderer()
print(json.dumps(out))
"""


def quickstart_dir() -> Path:
    found = list((ep_venv() / "lib").glob("python3*/site-packages/eval_protocol/quickstart/svg_agent/evaluator"))
    assert found, "eval-protocol's quickstart evaluator is not in its venv"
    return found[0]


def test_ep_quickstart_profile_scores_as_the_rft_evaluator_and_eval_protocols_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dataset = tmp_path / "questions.json"
    dataset.write_text(json.dumps([{"prompt": prompt(r), "requirements": requirements(r)} for r in CASES]))
    policy = {prompt(r).split(":")[0] + ":": answer for r, (answer, _, _) in CASES.items()}
    replies = {requirements(r)[0]: reply for r, (_, reply, _) in CASES.items()}
    cases = {r: {"answer": a, "requirements": requirements(r), "prompt": prompt(r)} for r, (a, _, _) in CASES.items()}
    expected = {r: [score, valid] for r, (_, _, (score, valid)) in CASES.items()}
    monkeypatch.setenv("OPENAI_API_KEY", "sk-recorded")
    monkeypatch.setenv("FIREWORKS_API_KEY", "fw-recorded")
    store = tmp_path / "runs.db"
    with recorded_endpoint(policy, replies) as endpoint:
        # 1. svgagent eval with the profile, then its export
        status = main(
            [
                "eval", "--judge-profile", "ep-quickstart", "--dataset", str(dataset), "--store", str(store),
                "--model", "recorded-policy", "--base-url", endpoint.base_url, "--judge-model", "gpt-4.1",
                "--judge-base-url", endpoint.base_url, "--max-retries", "0", "--json",
            ]
        )  # fmt: skip
        assert status in (0, 1, 3), status
        exported = tmp_path / "run.jsonl"
        assert main(["export", "latest", "--store", str(store), "-o", str(exported)]) == 0
        rows = [json.loads(line) for line in exported.read_text().splitlines()]
        row_of = {prompt(r): r for r in CASES}
        by_eval = {
            row_of[row["input_metadata"]["dataset_info"]["original_prompt"]]: [
                row["evaluation_result"]["score"],
                row["evaluation_result"]["is_score_valid"],
            ]
            for row in rows
        }
        assert {row["input_metadata"]["session_data"]["judge_profile"] for row in rows} == {"ep-quickstart"}
        # every judge request was the quickstart's: temperature 0, its schema (not strict), a PNG data URL
        assert endpoint.judged
        for body in endpoint.judged:
            assert body["temperature"] == 0
            assert body["response_format"]["json_schema"]["name"] == "SVGBenchResponse"
            assert "strict" not in body["response_format"]["json_schema"]
            image = body["messages"][0]["content"][1]["image_url"]
            assert image["url"].startswith("data:image/png;base64,") and "detail" not in image
        judged_by_eval = len(endpoint.judged)

        # 2. the RFT evaluator bundle built with the profile
        bundle = build_bundle(
            config={
                "judge_model": "gpt-4.1",
                "judge_base_url": endpoint.base_url,
                "judge_mode": "count",
                "judge_profile": "ep-quickstart",
                "renderer": "cairosvg",
                "render_size": 512,
                "render_timeout_s": 20.0,
                "render_memory_mb": 1024,
                "request_timeout_s": 30.0,
                "max_retries": 0,
            },
            out_dir=tmp_path / "bundle",
        )
        assert bundle.directory is not None
        proc = subprocess.run(
            [sys.executable, "-c", BUNDLE_SCRIPT, str(bundle.directory)],
            input=json.dumps(cases),
            capture_output=True,
            text=True,
            timeout=300,
            env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "OPENAI_API_KEY": "sk-recorded"},
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        by_bundle = json.loads(proc.stdout.strip().splitlines()[-1])
        assert len(endpoint.judged) == 2 * judged_by_eval  # the same rows reached the judge, once each

        # 3. Eval Protocol's own quickstart evaluator
        ep_cases = {**cases, "png": (b"\x89PNG\r\n\x1a\n" + bytes(32)).hex(), "render_fails": ["example.invalid"]}
        proc = subprocess.run(
            [ep_command(), "-c", EP_SCRIPT, str(quickstart_dir())],
            input=json.dumps(ep_cases),
            capture_output=True,
            text=True,
            timeout=600,
            env=ep_env(tmp_path / "ep-home", OPENAI_API_KEY="sk-recorded", OPENAI_BASE_URL=endpoint.base_url),
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        by_ep = json.loads(proc.stdout.strip().splitlines()[-1])

    for row in CASES:
        assert by_eval[row] == by_bundle[row] == by_ep[row] == expected[row], row
