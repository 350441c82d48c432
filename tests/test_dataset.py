"""Dataset loading: the built-in dataset, SVGBench questions.json, Eval Protocol JSONL, and clear errors."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from svgagent.core.run import dataset as dataset_module
from svgagent.core.run.dataset import Dataset, load_dataset, select_rows
from svgagent.core.run.prompt import ep_row
from svgagent.core.scoring.errors import ConfigError, DatasetError
from svgagent.core.scoring.models import DatasetRow

QUESTIONS = [
    {"prompt": "Write `svg` code to draw a red kite.", "requirements": ["The kite is red.", "It has a tail."]},
    {"prompt": "Write `svg` code to draw a green frog.", "requirements": ["The frog is green."]},
    # Same prompt as the first entry, different requirements: the index is the identity.
    {"prompt": "Write `svg` code to draw a red kite.", "requirements": ["The sky is blue."]},
]


def write_json(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def ep_lines(rows: list[DatasetRow]) -> str:
    return "".join(json.dumps(ep_row(row)) + "\n" for row in rows)


# --- built-in ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("source", [None, "builtin"])
def test_builtin_dataset_loads(source: str | None) -> None:
    data = load_dataset(source)
    assert isinstance(data, Dataset)
    assert data.name == "builtin"
    assert data.source == "builtin"
    assert len(data.sha256) == 64
    assert len(data.rows) >= 24


def test_builtin_dataset_quality() -> None:
    rows = load_dataset(None).rows
    prompts = [row.prompt for row in rows]
    assert len(set(prompts)) == len(prompts), "duplicate prompts in the built-in dataset"
    for row in rows:
        assert row.row_id == f"row_{row.index}"
        assert row.prompt.startswith("Write `svg` code"), row.prompt
        assert 6 <= len(row.requirements) <= 12, (row.prompt, len(row.requirements))
        assert len(set(row.requirements)) == len(row.requirements), row.prompt
        assert all(req.strip() == req and req.endswith(".") for req in row.requirements), row.prompt
    assert [row.index for row in rows] == list(range(len(rows)))


def test_builtin_dataset_is_stable() -> None:
    assert load_dataset(None).sha256 == load_dataset("builtin").sha256


# --- SVGBench questions.json ---------------------------------------------------------------------------------------


def test_svgbench_questions(tmp_path: Path) -> None:
    path = write_json(tmp_path / "questions.json", QUESTIONS)
    data = load_dataset(path)
    assert data.name == "questions.json"
    assert data.source == str(path.resolve())
    assert data.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert data.format == "svgbench"
    assert data.rows == (
        DatasetRow(0, "row_0", QUESTIONS[0]["prompt"], ("The kite is red.", "It has a tail.")),
        DatasetRow(1, "row_1", QUESTIONS[1]["prompt"], ("The frog is green.",)),
        DatasetRow(2, "row_2", QUESTIONS[2]["prompt"], ("The sky is blue.",)),
    )


def test_source_as_string_and_relative_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_json(tmp_path / "q.json", QUESTIONS)
    monkeypatch.chdir(tmp_path)
    data = load_dataset("q.json")
    assert data.source == str((tmp_path / "q.json").resolve())
    assert len(data) == 3


def test_format_detected_by_content_not_extension(tmp_path: Path) -> None:
    array_as_txt = write_json(tmp_path / "data.txt", QUESTIONS)
    assert load_dataset(array_as_txt).format == "svgbench"
    rows = load_dataset(array_as_txt).rows
    jsonl_as_json = tmp_path / "rows.json"
    jsonl_as_json.write_text(ep_lines(list(rows)), encoding="utf-8")
    assert load_dataset(jsonl_as_json).format == "eval-protocol-jsonl"
    assert load_dataset(jsonl_as_json).rows == rows


def test_utf8_bom_and_extra_keys_accepted(tmp_path: Path) -> None:
    path = tmp_path / "q.json"
    items = [{**QUESTIONS[0], "category": "kites"}]
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(items).encode("utf-8"))
    assert load_dataset(path).rows[0].requirements == ("The kite is red.", "It has a tail.")


def test_text_kept_verbatim(tmp_path: Path) -> None:
    items = [{"prompt": "  Draw ünïcode → “quotes”.  ", "requirements": [" Spaces kept. "]}]
    row = load_dataset(write_json(tmp_path / "q.json", items)).rows[0]
    assert row.prompt == "  Draw ünïcode → “quotes”.  "
    assert row.requirements == (" Spaces kept. ",)


# --- Eval Protocol JSONL -------------------------------------------------------------------------------------------


def test_eval_protocol_jsonl_round_trip(tmp_path: Path) -> None:
    rows = [
        DatasetRow(0, "kite", "Write `svg` code to draw a kite.", ("Red.", "Tail.")),
        DatasetRow(1, "frog", "Write `svg` code to draw a frog.", ("Green.",)),
    ]
    path = tmp_path / "rows.jsonl"
    path.write_text(ep_lines(rows), encoding="utf-8")
    data = load_dataset(path)
    assert data.format == "eval-protocol-jsonl"
    assert data.name == "rows.jsonl"
    assert data.rows == tuple(rows)


def test_jsonl_missing_row_id_uses_index_and_blank_lines_skipped(tmp_path: Path) -> None:
    row = ep_row(DatasetRow(0, "x", "Draw a kite.", ("Red.",)))
    del row["input_metadata"]["row_id"]
    path = tmp_path / "rows.jsonl"
    path.write_text("\n" + json.dumps(row) + "\r\n\n" + json.dumps(row) + "\n\n", encoding="utf-8")
    data = load_dataset(path)
    assert [(r.index, r.row_id) for r in data.rows] == [(0, "row_0"), (1, "row_1")]


def test_jsonl_evaluated_rows_and_plain_lines(tmp_path: Path) -> None:
    evaluated = ep_row(DatasetRow(0, "row_7", "Draw a kite.", ("Red.", "Tail.")))
    evaluated["messages"].append({"role": "assistant", "content": "```svg\n<svg></svg>\n```"})
    evaluated["evaluation_result"] = {"score": 0.5, "is_score_valid": True}
    plain = {"prompt": "Draw a frog.", "requirements": ["Green."]}
    path = tmp_path / "mixed.jsonl"
    path.write_text(json.dumps(evaluated) + "\n" + json.dumps(plain) + "\n", encoding="utf-8")
    rows = load_dataset(path).rows
    assert rows[0] == DatasetRow(0, "row_7", "Draw a kite.", ("Red.", "Tail."))
    assert rows[1] == DatasetRow(1, "row_1", "Draw a frog.", ("Green.",))


def test_jsonl_string_with_line_separator(tmp_path: Path) -> None:
    row = ep_row(DatasetRow(0, "r", "Draw\u2028a kite.", ("Red\u2029.",)))
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8")
    assert load_dataset(path).rows[0].prompt == "Draw\u2028a kite."


# --- select_rows ---------------------------------------------------------------------------------------------------


def test_select_rows(tmp_path: Path) -> None:
    data = load_dataset(write_json(tmp_path / "q.json", QUESTIONS))
    assert select_rows(data, None) == list(data.rows)
    assert select_rows(data, 2) == list(data.rows[:2])
    assert select_rows(data, 99) == list(data.rows)
    for bad in (0, -1, True, 1.5):
        with pytest.raises(DatasetError):
            select_rows(data, bad)  # type: ignore[arg-type]


# --- errors: one clear line naming file, place and problem ---------------------------------------------------------


def load_error(path: Path) -> str:
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    message = str(info.value)
    assert "\n" not in message
    assert isinstance(info.value, ConfigError)
    return message


def test_missing_file(tmp_path: Path) -> None:
    message = load_error(tmp_path / "nope.json")
    assert "nope.json" in message
    assert "not found" in message


def test_directory(tmp_path: Path) -> None:
    assert "directory" in load_error(tmp_path)


def test_empty_path() -> None:
    with pytest.raises(DatasetError, match="empty"):
        load_dataset("")


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(b'[\n{"prompt": "caf\xe9", "requirements": ["x"]}]')
    message = load_error(path)
    assert "bad.json" in message
    assert "line 2" in message
    assert "UTF-8" in message


def test_invalid_json_array(tmp_path: Path) -> None:
    path = tmp_path / "q.json"
    path.write_text('[\n  {"prompt": "a",\n   "requirements": ["x"],,}\n]', encoding="utf-8")
    message = load_error(path)
    assert "q.json" in message
    assert "line 3" in message
    assert "invalid JSON" in message


def test_invalid_jsonl_line(tmp_path: Path) -> None:
    good = json.dumps(ep_row(DatasetRow(0, "a", "Draw.", ("Red.",))))
    path = tmp_path / "rows.jsonl"
    path.write_text(good + "\n" + good.replace('"a"', '"b"') + "\n{not json\n", encoding="utf-8")
    message = load_error(path)
    assert "rows.jsonl" in message
    assert "line 3" in message
    assert "invalid JSON" in message


def test_pretty_printed_single_object(tmp_path: Path) -> None:
    path = write_json(tmp_path / "one.json", ep_row(DatasetRow(0, "a", "Draw.", ("Red.",))))
    assert "single multi-line JSON object" in load_error(path)


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        ([{"requirements": ["x"]}], "entry 0: missing 'prompt'"),
        ([QUESTIONS[0], {"prompt": "p"}], "entry 1: missing 'requirements'"),
        ([{"prompt": "p", "requirements": []}], "entry 0: 'requirements' is empty"),
        ([{"prompt": "p", "requirements": "one"}], "entry 0: 'requirements' must be a list of strings, got a string"),
        ([{"prompt": "p", "requirements": ["ok", 3]}], "entry 0: requirement 2 must be a string, got a number"),
        ([{"prompt": "p", "requirements": ["ok", "  "]}], "entry 0: requirement 2 is empty"),
        ([{"prompt": 5, "requirements": ["x"]}], "entry 0: 'prompt' must be a string, got a number"),
        ([{"prompt": " ", "requirements": ["x"]}], "entry 0: 'prompt' is empty"),
        ([QUESTIONS[0], ["p", ["x"]]], "entry 1: expected an object"),
        ([], "empty dataset"),
        ({"prompt": "p"}, "single multi-line JSON object"),
    ],
)
def test_svgbench_shape_errors(tmp_path: Path, items: object, expected: str) -> None:
    message = load_error(write_json(tmp_path / "q.json", items))
    assert "q.json" in message
    assert expected in message


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda r: r.pop("input_metadata"), "line 2: input_metadata is missing"),
        (lambda r: r["input_metadata"].pop("dataset_info"), "line 2: input_metadata.dataset_info is missing"),
        (
            lambda r: r["input_metadata"]["dataset_info"].pop("original_prompt"),
            "line 2: missing 'input_metadata.dataset_info.original_prompt'",
        ),
        (
            lambda r: r["input_metadata"]["dataset_info"].update(requirements=[]),
            "line 2: 'input_metadata.dataset_info.requirements' is empty",
        ),
        (lambda r: r["input_metadata"].update(row_id=12), "line 2: input_metadata.row_id must be a non-empty string"),
        (
            lambda r: r["input_metadata"].update(row_id="first"),
            "line 2: duplicate row_id 'first' (first seen on line 1)",
        ),
    ],
)
def test_jsonl_shape_errors(tmp_path: Path, mutate, expected: str) -> None:  # type: ignore[no-untyped-def]
    first = ep_row(DatasetRow(0, "first", "Draw.", ("Red.",)))
    second = ep_row(DatasetRow(1, "second", "Draw more.", ("Blue.",)))
    mutate(second)
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(first) + "\n" + json.dumps(second) + "\n", encoding="utf-8")
    message = load_error(path)
    assert "rows.jsonl" in message
    assert expected in message


def test_jsonl_line_not_an_object(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(ep_row(DatasetRow(0, "a", "Draw.", ("Red.",)))) + "\n[1, 2]\n", encoding="utf-8")
    assert "line 2: expected a JSON object" in load_error(path)


@pytest.mark.parametrize("content", ["", "   \n\n", "hello", "42"])
def test_empty_or_unrecognised(tmp_path: Path, content: str) -> None:
    path = tmp_path / "data.json"
    path.write_text(content, encoding="utf-8")
    message = load_error(path)
    assert "data.json" in message
    assert "empty dataset" in message or "unrecognised format" in message


def test_file_too_large(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dataset_module, "MAX_DATASET_BYTES", 100)
    path = write_json(tmp_path / "big.json", QUESTIONS)
    assert path.stat().st_size > 100
    message = load_error(path)
    assert "big.json" in message
    assert "too large" in message


def test_default_size_cap_is_50_mb() -> None:
    assert dataset_module.MAX_DATASET_BYTES == 50 * 1024 * 1024
