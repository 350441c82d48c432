"""Prompt formatting and the Eval Protocol dataset row."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from svgagent.core.run.prompt import ep_row, format_prompt, format_requirements
from svgagent.core.scoring.models import DatasetRow

EXPECTED = (
    "Write `svg` code to draw a teapot. Wrap the SVG code in an SVG code block following the example below.\n"
    "\n"
    "Example:\n"
    "```svg\n"
    '<svg viewBox="0 0 100 100" width="100" height="100">\n'
    '    <circle cx="50" cy="50" r="40" fill="red" />\n'
    "</svg>\n"
    "```\n"
    "\n"
    "Requirements:\n"
    "1. The teapot is blue.\n"
    "2. Steam rises from the spout."
)


def test_format_prompt_exact_text() -> None:
    text = format_prompt("Write `svg` code to draw a teapot.", ["The teapot is blue.", "Steam rises from the spout."])
    assert text == EXPECTED
    assert not text.endswith("\n")


def test_format_prompt_accepts_any_sequence() -> None:
    reqs = ("The teapot is blue.", "Steam rises from the spout.")
    assert format_prompt("Write `svg` code to draw a teapot.", reqs) == EXPECTED


def test_requirements_numbered_past_nine() -> None:
    reqs = [f"Requirement {i}." for i in range(1, 13)]
    lines = format_requirements(reqs).split("\n")
    assert len(lines) == 12
    assert lines[0] == "1. Requirement 1."
    assert lines[9] == "10. Requirement 10."
    assert lines[-1] == "12. Requirement 12."


def test_requirements_kept_verbatim() -> None:
    reqs = ["Uses 'quotes' and \"double quotes\" & <angle> brackets.", "Ünïcödé → ok."]
    text = format_prompt("Draw it.", reqs)
    assert text.endswith("Requirements:\n1. " + reqs[0] + "\n2. " + reqs[1])


def test_ep_row_shape() -> None:
    row = DatasetRow(
        index=3,
        row_id="row_3",
        prompt="Write `svg` code to draw a teapot.",
        requirements=("The teapot is blue.", "Steam rises from the spout."),
    )
    data = ep_row(row)
    assert data == {
        "messages": [{"role": "user", "content": EXPECTED}],
        "input_metadata": {
            "row_id": "row_3",
            "dataset_info": {
                "original_prompt": "Write `svg` code to draw a teapot.",
                "requirements": ["The teapot is blue.", "Steam rises from the spout."],
                "total_requirements": 2,
                "formatted_prompt": EXPECTED,
            },
        },
    }
    # JSON-serialisable as one line (requirements is a list, not a tuple).
    assert "\n" not in json.dumps(data)
    assert isinstance(data["input_metadata"]["dataset_info"]["requirements"], list)


# --- check against the public SVGBench data (skipped when it is not on this machine) --------------------------------

PUBLIC_SVGBENCH = Path(os.environ.get("SVGBENCH_DIR", "/work/shared/data/svgbench"))


@pytest.mark.skipif(
    not (PUBLIC_SVGBENCH / "svgbench_dataset.jsonl").is_file() or not (PUBLIC_SVGBENCH / "questions.json").is_file(),
    reason="public SVGBench data not available (set SVGBENCH_DIR)",
)
def test_public_svgbench_formatted_prompts_match_byte_for_byte() -> None:
    questions = json.loads((PUBLIC_SVGBENCH / "questions.json").read_text(encoding="utf-8"))
    lines = (PUBLIC_SVGBENCH / "svgbench_dataset.jsonl").read_text(encoding="utf-8").splitlines()
    checked = 0
    for line in lines:
        if not line.strip():
            continue
        published = json.loads(line)
        meta = published["input_metadata"]
        info = meta["dataset_info"]
        index = int(meta["row_id"].removeprefix("row_"))
        question = questions[index]
        assert (question["prompt"], question["requirements"]) == (info["original_prompt"], info["requirements"])
        ours = format_prompt(question["prompt"], question["requirements"])
        assert ours.encode("utf-8") == info["formatted_prompt"].encode("utf-8"), meta["row_id"]
        assert ours.encode("utf-8") == published["messages"][0]["content"].encode("utf-8"), meta["row_id"]
        row = DatasetRow(
            index=index, row_id=meta["row_id"], prompt=question["prompt"], requirements=tuple(question["requirements"])
        )
        assert ep_row(row) == published
        checked += 1
    assert checked == len([line for line in lines if line.strip()]) > 0
