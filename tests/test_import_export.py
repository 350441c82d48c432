"""`svgagent export` (JSONL, --assets) and `svgagent import`: round trips, foreign rows, bad lines, all-or-nothing
imports and judging imported answers. Runs are built by hand in a temporary store (make_run)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import cairosvg
import pytest
from PIL import Image
from test_compare import OUTAGE, make_run, requirements_for

from svgagent.core.analysis.compare import compare_runs
from svgagent.core.analysis.stats import run_stats
from svgagent.core.exchange.export import AssetWriter, evaluation_row, safe_stem
from svgagent.core.exchange.import_file import (
    IMPORTED_FINISH_REASON,
    NothingImported,
    import_file,
    parse_formatted_prompt,
    read_evaluation_rows,
)
from svgagent.core.run.prompt import format_prompt
from svgagent.core.scoring.errors import StoreError
from svgagent.core.scoring.extract import NO_SVG
from svgagent.core.scoring.models import RolloutStatus
from svgagent.core.store.run_store import Store
from svgagent.core.store.typed_rows import RolloutRecord
from svgagent.tui.cli.main import main

SCORED, FAILED, QUEUED = RolloutStatus.SCORED, RolloutStatus.FAILED, RolloutStatus.QUEUED
SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 40 20" width="40" height="20">'
    '<rect width="40" height="20" fill="#0055a4"/><circle cx="20" cy="10" r="6" fill="#ffcc00"/></svg>'
)
PNG = cairosvg.svg2png(bytestring=SVG.encode(), output_width=64)
ANSWER = f"Here you go.\n```svg\n{SVG}\n```"


def judged(fulfilled: int, n: int, **extra: Any) -> dict[str, Any]:
    return {
        "status": SCORED,
        "score": fulfilled / n,
        "fulfilled": fulfilled,
        "is_score_valid": True,
        "reason": f"{fulfilled}/{n}",
        "rationale": f"{fulfilled} of {n} requirements are visible.\nDetails.",
        "raw_answer": ANSWER,
        "svg": SVG,
        "png": PNG,
        "render_s": 0.05,
        "judge_s": 0.7,
        "judge_prompt_tokens": 900,
        "judge_completion_tokens": 40,
        **extra,
    }


# Every state an export has to carry: several samples, per-requirement verdicts, overrides (count and verdicts),
# a valid 0 without SVG, a judge outage without a valid score.
ROWS = [
    (
        "row_0",
        "Draw a cat",
        3,
        [
            judged(2, 3, verdicts_json=json.dumps([[1, True, "ears"], [2, True, "tail"], [3, False, "no whiskers"]])),
            judged(3, 3),
        ],
    ),
    ("row_1", "Draw a dog", 4, [judged(1, 4, override=3), judged(4, 4, override_verdicts=[True, False, True, False])]),
    (
        "row_2",
        "Draw a sun",
        2,
        [
            {
                "status": FAILED,
                "score": 0.0,
                "fulfilled": 0,
                "is_score_valid": True,
                "reason": NO_SVG,
                "raw_answer": "I cannot draw.",
                "failure_kind": "no_svg",
            }
        ],
    ),
    (
        "row_3",
        "Draw a car",
        5,
        [
            {
                "status": FAILED,
                "score": None,
                "is_score_valid": False,
                "reason": OUTAGE,
                "error": OUTAGE,
                "raw_answer": ANSWER,
                "svg": SVG,
                "png": PNG,
                "failure_kind": "unreachable",
            },
            judged(5, 5),
        ],
    ),
]


@pytest.fixture
def store(tmp_path: Path) -> Store:
    with Store(tmp_path / "runs.db") as s:
        yield s


def cli(store: Store, *args: str) -> int:
    return main([*args, "--store", str(store.path)])


def export(store: Store, run_id: str, target: Path, *extra: str) -> list[dict[str, Any]]:
    assert cli(store, "export", run_id, "-o", str(target), *extra) == 0
    return [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]


# --- round trip ------------------------------------------------------------------------------------------------------


def test_export_import_compare_round_trip(store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    original = make_run(store, ROWS, name="original")
    exported = export(store, original, tmp_path / "a.jsonl")
    capsys.readouterr()
    assert cli(store, "import", str(tmp_path / "a.jsonl"), "--name", "round trip", "--json") == 0
    result = json.loads(capsys.readouterr().out)
    assert result["imported"] == 7
    assert result["rows"] == 4
    assert result["skipped"] == []
    imported = result["run_id"]
    c = compare_runs(store, original, imported)
    assert c.mean_diff == 0
    assert c.diff_stderr == 0
    assert c.ties == c.paired_rows == 4
    assert c.wins == c.losses == c.only_a == c.only_b == c.unscored == 0
    assert (c.mean_a, c.stderr_a) == (c.mean_b, c.stderr_b)
    assert store.get_run(imported).name == "round trip"
    assert store.get_run(imported).settings["model"] == "model-original"  # from completion_params
    # Rollout by rollout, everything the review screens show comes back.
    keep = (
        "row_id",
        "row_index",
        "sample_index",
        "status",
        "prompt",
        "requirements",
        "score",
        "fulfilled",
        "is_score_valid",
        "reason",
        "error",
        "rationale",
        "verdicts",
        "override_score",
        "override_fulfilled",
        "override_verdicts",
        "raw_answer",
        "finish_reason",
        "svg",
        "prompt_tokens",
        "completion_tokens",
        "generation_s",
        "render_s",
        "judge_s",
        "judge_prompt_tokens",
        "judge_completion_tokens",
        "effective_score",
    )
    before = [{k: getattr(r, k) for k in keep} for r in store.iter_rollouts(original)]
    after = [{k: getattr(r, k) for k in keep} for r in store.iter_rollouts(imported)]
    assert after == before
    # Exporting the imported run gives the same rows (apart from the run's identity).
    again = export(store, imported, tmp_path / "b.jsonl")

    def strip(row: dict[str, Any]) -> dict[str, Any]:
        row = json.loads(json.dumps(row))
        for key in ("invocation_id", "experiment_id", "rollout_id", "run_id"):
            row["execution_metadata"].pop(key)
        row.pop("created_at")
        row["input_metadata"].pop("completion_params")
        return row

    assert [strip(r) for r in again] == [strip(r) for r in exported]


def test_export_rows_carry_effective_scores_and_states(store: Store, tmp_path: Path) -> None:
    run = make_run(store, [*ROWS, ("row_4", "Draw a hat", 2, [{"status": QUEUED, "raw_answer": None}])])
    rows = {r["execution_metadata"]["rollout_id"]: r for r in export(store, run, tmp_path / "x.jsonl")}
    count_override = rows[f"{run}.1.0"]
    assert count_override["evaluation_result"]["score"] == 3 / 4  # the person's, not the judge's 1/4
    assert count_override["evaluation_result"]["metrics"]["judge_score"]["score"] == 1 / 4
    assert count_override["evaluation_result"]["reason"].startswith("human override: 3/4 (judge: 1/4)")
    verdicts = rows[f"{run}.1.1"]["evaluation_result"]["metrics"]
    assert [verdicts[f"requirement_{i}"]["score"] for i in range(1, 5)] == [1.0, 0.0, 1.0, 0.0]
    per_req = rows[f"{run}.0.0"]["evaluation_result"]["metrics"]
    assert per_req["requirement_3"] == {"score": 0.0, "is_score_valid": True, "reason": "no whiskers"}
    no_svg = rows[f"{run}.2.0"]
    assert no_svg["rollout_status"] == {"code": 100, "message": NO_SVG}
    assert no_svg["evaluation_result"]["is_score_valid"] is True
    assert no_svg["evaluation_result"]["score"] == 0
    outage = rows[f"{run}.3.0"]
    assert outage["rollout_status"]["code"] == 14
    assert outage["evaluation_result"]["is_score_valid"] is False
    queued = rows[f"{run}.4.0"]
    assert queued["evaluation_result"] is None
    assert queued["rollout_status"]["code"] == 101
    first = rows[f"{run}.0.0"]["execution_metadata"]
    assert first["rollout_duration_seconds"] == 1.0
    assert first["eval_duration_seconds"] == pytest.approx(0.75)
    assert first["finish_reason"] == "stop"
    assert first["extra"]["svgagent"]["format"] == 1
    assert "png" not in json.dumps(first["extra"])  # pictures go to --assets, never into the JSONL


# --- assets ----------------------------------------------------------------------------------------------------------


def test_export_assets_writes_pngs_and_svgs(store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = make_run(store, ROWS)
    assets = tmp_path / "assets"
    rows = export(store, run, tmp_path / "a.jsonl", "--assets", str(assets))
    assert f"wrote 6 PNGs and 6 SVGs to {assets}" in capsys.readouterr().err
    with_pictures = [r for r in store.iter_rollouts(run) if r.png is not None]
    assert len(with_pictures) == 6
    assert len(rows) == 7
    assert sorted(p.name for p in assets.iterdir()) == sorted(
        f"{r.rollout_id}.{ext}" for r in with_pictures for ext in ("png", "svg")
    )
    for rec in with_pictures:
        png = assets / f"{rec.rollout_id}.png"
        with Image.open(png) as image:
            image.verify()
        with Image.open(png) as image:
            assert image.format == "PNG"
            assert image.size == (64, 32)
        assert png.read_bytes() == rec.png
        assert (assets / f"{rec.rollout_id}.svg").read_text(encoding="utf-8") == SVG
    # CSV export takes --assets too, and stdout output works with it.
    assert cli(store, "export", run, "--format", "csv", "--assets", str(tmp_path / "more")) == 0
    assert len(list((tmp_path / "more").glob("*.png"))) == 6


def _record(rollout_id: str) -> RolloutRecord:
    return RolloutRecord(
        rollout_id=rollout_id,
        run_id="r",
        row_index=0,
        row_id="row_0",
        sample_index=0,
        status=SCORED,
        prompt="p",
        requirements=["a"],
        total=1,
        png=PNG,
        svg=SVG,
    )


def test_asset_names_are_safe_and_unique(tmp_path: Path) -> None:
    assert safe_stem("20260101-120000-ab12.3.0.a2") == "20260101-120000-ab12.3.0.a2"
    for hostile in ("../../etc/passwd", "a/b\\c", ".hidden", "-rf", "CON:", "x" * 500, "", "..", "ünï cödé"):
        stem = safe_stem(hostile)
        assert stem
        assert len(stem) <= 120
        assert not stem.startswith((".", "-"))
        assert all(ch.isascii() and (ch.isalnum() or ch in "._-") for ch in stem), stem
    writer = AssetWriter(tmp_path / "out")
    names = [p.name for rid in ("a/b", "a_b", "A_B", "../x") for p in writer.write(_record(rid))]
    assert names == ["a_b.png", "a_b.svg", "a_b-2.png", "a_b-2.svg", "A_B-3.png", "A_B-3.svg", "_x.png", "_x.svg"]
    assert {p.parent for p in (tmp_path / "out").iterdir()} == {tmp_path / "out"}
    assert not (tmp_path / "x.png").exists()
    assert not (tmp_path / "_x.png").exists()


# --- foreign rows ----------------------------------------------------------------------------------------------------


def foreign_row(prompt: str, requirements: list[str], **fields: Any) -> dict[str, Any]:
    """An evaluated row as another tool might write it: no dataset_info, the prompt only in the user message."""
    content = [{"type": "text", "text": format_prompt(prompt, requirements)}]
    return {
        "messages": [
            {"role": "system", "content": "You draw."},
            {"role": "user", "content": content},
            {"role": "assistant", "content": ANSWER},
        ],
        **fields,
    }


def write_lines(path: Path, items: list[Any]) -> Path:
    with path.open("wb") as out:
        for item in items:
            if not isinstance(item, bytes):
                item = (item if isinstance(item, str) else json.dumps(item)).encode()
            out.write(item)
            out.write(b"\n")
    return path


def test_foreign_rows_are_parsed_and_grouped(store: Store, tmp_path: Path) -> None:
    prompt = "Write `svg` code for a red kite.\nIt flies high."  # multi-line prompts survive
    reqs = ["The kite is red.", "It has a tail.", "Sky is blue.", "There is a string."]
    usage = {"prompt_tokens": 321, "completion_tokens": 123, "total_tokens": 444}
    lines = [
        foreign_row(
            prompt,
            reqs,
            evaluation_result={"score": 0.75, "reason": "three of four"},
            rollout_status={"code": 100, "message": "done"},
            execution_metadata={"usage": usage},
        ),
        foreign_row(prompt, reqs, evaluation_result={"score": 0.25, "is_score_valid": True}),
        foreign_row(prompt, reqs, rollout_status={"code": 4, "message": "model took too long"}),
        foreign_row(prompt, reqs, evaluation_result={"score": 0.0, "is_score_valid": False, "reason": "judge broke"}),
        {
            "messages": [
                {"role": "user", "content": "Draw a boat.\n\nRequirements:\n1. A sail.\n2. Water."},
                {"role": "assistant", "content": "no"},
            ],
            "evaluation_result": {"score": 1.0},
            "input_metadata": {"row_id": "boat"},
        },
    ]
    result = import_file(store, write_lines(tmp_path / "f.jsonl", lines))
    assert (result.imported, result.rows, result.scored, result.failed, result.queued) == (5, 2, 3, 2, 0)
    recs = store.list_rollouts(result.run_id, heavy=True)
    kite = [r for r in recs if r.row_index == 0]
    assert [r.sample_index for r in kite] == [0, 1, 2, 3]
    assert all(r.prompt == prompt and r.requirements == reqs for r in kite)
    assert kite[0].row_id == kite[3].row_id
    assert kite[0].row_id.startswith("row_")  # a stable hash, no row_id given
    assert (kite[0].score, kite[0].fulfilled, kite[0].status) == (0.75, 3, SCORED)
    assert (kite[0].prompt_tokens, kite[0].completion_tokens) == (321, 123)
    assert kite[0].reason == "three of four"
    assert kite[0].raw_answer == ANSWER
    assert kite[0].svg == SVG
    assert kite[0].finish_reason == IMPORTED_FINISH_REASON
    assert kite[2].status is FAILED
    assert kite[2].is_score_valid is False
    assert "DEADLINE_EXCEEDED" in kite[2].error
    assert kite[3].status is FAILED
    assert kite[3].score is None
    assert kite[3].is_score_valid is False
    boat = [r for r in recs if r.row_index == 1][0]
    assert (boat.row_id, boat.prompt, boat.requirements, boat.score) == (
        "boat",
        "Draw a boat.",
        ["A sail.", "Water."],
        1.0,
    )
    stats = run_stats(store, result.run_id)
    assert stats.failures["timeout"] == 1
    assert stats.failures["judge invalid"] == 1
    assert stats.valid == 3
    run = store.get_run(result.run_id)
    assert run.status == "imported"
    assert run.dataset["rows"] == 2
    assert run.summary["rollouts"] == 5
    assert run.settings["model"] is None  # unknown: not this machine's default policy model


def test_parse_formatted_prompt() -> None:
    reqs = ("One.", "Two: with a colon.", "Three 3. numbered inside.")
    assert parse_formatted_prompt(format_prompt("Draw  it ", reqs)) == ("Draw  it ", reqs)
    assert parse_formatted_prompt("Draw.\nRequirements:\n1. a\n2. b") == ("Draw.", ("a", "b"))
    assert parse_formatted_prompt("Draw.\n\nRequirements:\n1. a\n3. b") == ("Draw.", ("a\n3. b",))
    assert parse_formatted_prompt("Draw a cat.") is None
    assert parse_formatted_prompt("Requirements:\n1. a") is None  # no prompt
    assert parse_formatted_prompt("Draw.\nRequirements:\nfree text") is None


# --- bad lines and all-or-nothing ------------------------------------------------------------------------------------


def test_bad_lines_are_reported_and_skipped(store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = json.loads(json.dumps(evaluation_row(*_one_run(store))))
    reqs_missing = json.loads(json.dumps(good))
    reqs_missing["input_metadata"]["dataset_info"].pop("requirements")
    bad_score = json.loads(json.dumps(good))
    bad_score["evaluation_result"]["score"] = "high"
    wrong_total = json.loads(json.dumps(good))
    wrong_total["input_metadata"]["dataset_info"]["total_requirements"] = 99
    dataset_only = {"messages": good["messages"][:1], "input_metadata": good["input_metadata"]}
    path = write_lines(
        tmp_path / "mixed.jsonl",
        [
            good,
            "{not json",
            "",
            [1, 2],
            reqs_missing,
            bad_score,
            good,
            wrong_total,
            b"\xff\xfe{}",
            dataset_only,
            {"messages": "hello"},
            {**good, "evaluation_result": {"score": float("nan")}},
        ],
    )
    before = {r.run_id for r in store.list_runs()}
    assert cli(store, "import", str(path)) == 0
    err = capsys.readouterr().err
    expected = {
        2: "invalid JSON",
        4: "expected a JSON object",
        5: "requirements",
        6: "finite number",
        8: "total_requirements",
        9: "UTF-8",
        10: "not an evaluated row",
        11: "messages",
        12: "finite number",
    }
    parsed, skipped = read_evaluation_rows(path)
    assert [p.line for p in parsed] == [1, 7]
    assert [s.line for s in skipped] == sorted(expected)
    for item in skipped:
        assert expected[item.line] in item.reason, item
    # the terminal gets the first five and a count, not one line per bad line
    shown = [x for x in err.splitlines() if ": skipped:" in x]
    assert shown == [f"line {s.line}: skipped: {s.reason}" for s in skipped[:5]]
    assert f"… and {len(expected) - 5} more skipped lines" in err
    assert "imported 2 rollouts" in err
    assert f"{len(expected)} lines skipped" in err
    new = [r for r in store.list_runs() if r.run_id not in before]
    assert len(new) == 1
    assert len(store.list_rollouts(new[0].run_id)) == 2


def _one_run(store: Store) -> tuple[Any, RolloutRecord]:
    run = make_run(store, ROWS[:1], name="source")
    return store.get_run(run), next(store.iter_rollouts(run))


def test_no_valid_line_is_exit_2_and_no_run(store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for content in ([b"nope", b"[]", b"{}"], []):
        path = write_lines(tmp_path / "bad.jsonl", content)
        assert cli(store, "import", str(path)) == 2
        err = capsys.readouterr().err
        assert "nothing was imported" in err
        assert store.list_runs() == []
    assert cli(store, "import", str(write_lines(tmp_path / "b.jsonl", [b"x", b"y", b"{}"]))) == 2
    assert "line 3: skipped:" in capsys.readouterr().err
    with pytest.raises(NothingImported) as raised:
        import_file(store, write_lines(tmp_path / "c.jsonl", [b"x"]))
    assert [s.line for s in raised.value.skipped] == [1]
    assert cli(store, "import", str(tmp_path / "missing.jsonl")) == 2
    assert "cannot read" in capsys.readouterr().err
    assert store.list_runs() == []


def test_a_failure_while_writing_leaves_nothing(store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run, rec = _one_run(store)
    path = write_lines(tmp_path / "two.jsonl", [evaluation_row(run, rec), evaluation_row(run, rec)])
    before = [r.run_id for r in store.list_runs()]
    # Every rollout gets the same id: the second insert fails inside the transaction.
    monkeypatch.setattr("svgagent.core.store.run_store.rollout_id_for", lambda *a, **k: "same-id")
    with pytest.raises(StoreError, match="UNIQUE constraint"):
        import_file(store, path)
    assert [r.run_id for r in store.list_runs()] == before
    with sqlite3.connect(store.path) as db:
        assert db.execute("SELECT COUNT(*) FROM rollouts WHERE rollout_id = 'same-id'").fetchone()[0] == 0


# --- judging imported answers ----------------------------------------------------------------------------------------


def test_import_without_scores_then_judge_with_demo(
    store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    usage = {"prompt_tokens": 50, "completion_tokens": 60, "total_tokens": 110}
    lines = [
        {
            "messages": [
                {"role": "user", "content": format_prompt(f"Draw thing {i}", requirements_for(f"r{i}", 3))},
                {"role": "assistant", "content": ANSWER if i < 3 else "Sorry, no picture."},
            ],
            "input_metadata": {"row_id": f"r{i}"},
            "rollout_status": {"code": 101, "message": "running"},
            "execution_metadata": {"usage": usage},
        }
        for i in range(4)
    ]
    path = write_lines(tmp_path / "answers.jsonl", lines)
    assert cli(store, "import", str(path)) == 0
    err = capsys.readouterr().err
    assert "4 without a score" in err
    assert "--judge" in err
    assert cli(store, "import", str(path), "--demo") == 2  # --demo only means something with --judge
    capsys.readouterr()

    assert cli(store, "import", str(path), "--judge", "--demo", "--json", "--name", "judged") == 0
    data = json.loads(capsys.readouterr().out)
    assert data["queued"] == 4
    assert data["summary"]["done"] == 4
    recs = store.list_rollouts(data["run_id"], heavy=True)
    assert store.get_run(data["run_id"]).status == "completed"
    assert all(r.status.terminal for r in recs)
    drawn, refused = recs[:3], recs[3]
    # The policy was never called: answers, finish reason and policy tokens are the imported ones.
    assert all(r.raw_answer == ANSWER and r.finish_reason == IMPORTED_FINISH_REASON for r in drawn)
    assert all((r.prompt_tokens, r.completion_tokens) == (50, 60) for r in recs)
    assert all(r.status is SCORED and r.is_score_valid and r.png is not None for r in drawn)
    assert refused.status is FAILED
    assert refused.is_score_valid
    assert refused.score == 0.0
    assert store.get_run(data["run_id"]).settings["judge_model"] == "simulated-judge"


def test_judge_without_key_is_refused_before_anything_is_written(
    store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_lines(tmp_path / "a.jsonl", [foreign_row("Draw.", ["a"])])
    assert cli(store, "import", str(path), "--judge") == 2
    assert "OPENAI_API_KEY" in capsys.readouterr().err
    assert store.list_runs() == []


# --- poisoned and hostile lines (issue 10 items 15 and 16) -----------------------------------------------------------


def _exported_lines(store: Store, tmp_path: Path) -> list[dict[str, Any]]:
    run = make_run(store, ROWS, name="source")
    return export(store, run, tmp_path / "source.jsonl")


def test_poisoned_svgagent_blocks_are_refused_and_the_rest_stays_usable(
    store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = _exported_lines(store, tmp_path)
    good = rows[0]  # row_0 sample 0: 2 of 3, per-requirement verdicts

    def poisoned(**changes: Any) -> dict[str, Any]:
        row = json.loads(json.dumps(good))
        row["execution_metadata"]["extra"]["svgagent"].update(changes)
        return row

    override = rows[2]  # row_1 sample 0: judge 1/4, a person said 3/4
    seven_of_four = json.loads(json.dumps(override))
    seven_of_four["execution_metadata"]["extra"]["svgagent"]["override"]["fulfilled"] = 7
    seven_of_four["execution_metadata"]["extra"]["svgagent"]["override"]["score"] = 1.75
    seven_of_four["evaluation_result"]["score"] = 1.75
    lines = [
        poisoned(verdicts=[[1]]),
        poisoned(fulfilled="lots"),
        poisoned(fulfilled=9),
        seven_of_four,
        poisoned(generation_s=float("inf")),
        poisoned(judge_prompt_tokens=10**30),
        good,
    ]
    path = write_lines(tmp_path / "poisoned.jsonl", lines)
    capsys.readouterr()
    assert cli(store, "import", str(path), "--json") == 0
    result = json.loads(capsys.readouterr().out)
    assert result["imported"] == 1
    assert result["skipped_count"] == 6
    reasons = {item["line"]: item["reason"] for item in result["skipped"]}
    assert all("extra.svgagent is invalid" in reasons[n] or "between 0 and 1" in reasons[n] for n in range(1, 7))
    assert "verdicts" in reasons[1]
    assert "fulfilled" in reasons[2]
    assert "fulfilled" in reasons[3]
    run_id = result["run_id"]
    stats = run_stats(store, run_id)  # what crashed on these shapes
    assert stats.mean is not None
    assert 0 <= stats.mean <= 1
    assert cli(store, "runs", "stats", run_id) == 0
    assert export(store, run_id, tmp_path / "again.jsonl")[0]["evaluation_result"]["score"] == 2 / 3


def test_hostile_lines_are_skipped_one_by_one_and_never_crash(
    store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = _exported_lines(store, tmp_path)[1]
    reason_object = json.loads(json.dumps(good))
    reason_object["evaluation_result"]["reason"] = {"nested": ["an", "object"]}
    huge_tokens = json.loads(json.dumps(good))
    huge_tokens["execution_metadata"]["usage"] = {"prompt_tokens": 1e30, "completion_tokens": 10**30}
    huge_tokens["execution_metadata"]["extra"]["svgagent"].pop("judge_prompt_tokens")
    lines: list[Any] = [
        b"[" * 200_000,
        b'{"evaluation_result": {"score": ' + b"9" * 5000 + b"}}",
        {**good, "evaluation_result": {"score": 10**400}},
        reason_object,
        huge_tokens,
        good,
    ]
    path = write_lines(tmp_path / "hostile.jsonl", lines)
    capsys.readouterr()
    assert cli(store, "import", str(path), "--json") == 0
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    result = json.loads(captured.out)
    assert result["imported"] == 3
    assert [s["line"] for s in result["skipped"]] == [1, 2, 3]
    assert "nested too deeply" in result["skipped"][0]["reason"]
    reasoned, counted, plain = store.list_rollouts(result["run_id"])  # samples 0..2 of one row, in file order
    assert (counted.prompt_tokens, counted.completion_tokens) == (None, None)  # 1e30 is no token count
    assert plain.prompt_tokens == good["execution_metadata"]["usage"]["prompt_tokens"]
    assert reasoned.status is RolloutStatus.SCORED


def test_a_file_that_is_not_jsonl_gets_one_message(
    store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pretty = tmp_path / "pretty.json"
    pretty.write_text(json.dumps([{"prompt": f"p{i}", "requirements": ["r"]} for i in range(200)], indent=2))
    binary = tmp_path / "picture.png"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 400)
    for path in (pretty, binary):
        capsys.readouterr()
        assert cli(store, "import", str(path)) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1
        assert "is not JSON Lines" in err
        assert "nothing was imported" in err
    assert store.list_runs() == []


def test_strict_imports_nothing_when_a_line_is_unusable(
    store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = _exported_lines(store, tmp_path)[1]
    before = {r.run_id for r in store.list_runs()}
    path = write_lines(tmp_path / "one-bad.jsonl", [good, b"{broken", good])
    assert cli(store, "import", str(path), "--strict") == 2
    assert "--strict" in capsys.readouterr().err
    assert {r.run_id for r in store.list_runs()} == before
    assert cli(store, "import", str(path)) == 0  # without it the bad line is skipped


def test_csv_has_the_judges_whole_rationale_and_the_short_reason_marks_its_cut(tmp_path: Path) -> None:
    # a user test: the CSV had the rationale only as `reason`, its first line cut at 200 characters mid-word with
    # no marker, while JSONL and the app had all of it
    import csv
    import io

    from factories import Spec, build_run

    from svgagent.core.exchange.export import csv_text
    from svgagent.core.scoring.models import JudgeVerdict, Usage
    from svgagent.core.store.verdict_columns import verdict_columns

    first = "The sun is present, round and yellow; " * 8  # one line of 304 characters
    rationale = f'{first.strip()}\nThe grass, "green", is missing.\n=SUM(A1) is not a formula here.'
    with Store(tmp_path / "runs.db") as store:
        run = build_run(store, [Spec(0, rationale=rationale, reason="short reason")])
        rows = list(csv.DictReader(io.StringIO(csv_text(store.iter_rollouts(run)))))
    assert rows[0]["rationale"] == rationale

    _, columns = verdict_columns(
        JudgeVerdict(
            total=4, fulfilled=3, score=0.75, valid=True, rationale=rationale, verdicts=None, raw="", usage=Usage(0, 0)
        ),
        0.1,
    )
    reason = columns["reason"]
    assert len(reason) <= 200 and reason.endswith("…")
    assert first.startswith(reason[:-1]) and first[len(reason) - 1] == " "  # cut between words
