"""The filmstrip (core/analysis/filmstrip.py, contact_sheet.py) and `svgagent runs filmstrip`: one prompt's pictures at
every step of a training run (stored as `svgagent serve` stores it) or across runs, and the PNG contact sheet."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from factories import FLAG_SVG, SCENE_SVG, Spec, build_run, serve_training
from PIL import Image
from test_health import failed_invalid

from svgagent.core.analysis.contact_sheet import contact_sheet
from svgagent.core.analysis.filmstrip import StripColumn, filmstrip, frame_pngs, spread, strip_rows
from svgagent.core.scoring.errors import ConfigError
from svgagent.core.serve.training_runs import TrainingStore
from svgagent.core.store.run_store import Store
from svgagent.tui.cli.main import main

JOB = "accounts/test-account/reinforcementFineTuningJobs/svgagent-rft-test"
INVALID = failed_invalid(0, 0)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "runs.db") as s:
        yield s


def training(store: Store) -> str:
    """Row 0 at steps 1 and 3 (two samples each), row 1 at step 2 only: a step's prompts are a chunk."""
    return serve_training(
        store,
        {
            1: [
                Spec(0, fulfilled=1, rationale="Only the sky.\nThe rest is missing."),
                Spec(0, fulfilled=2, svg=FLAG_SVG),
            ],
            2: [Spec(1, fulfilled=3, prompt="Draw the French flag", svg=FLAG_SVG)],
            3: [Spec(0, fulfilled=4, rationale="Everything is there."), INVALID],
        },
    )


def columns_of(store: Store, training_id: str) -> list[StripColumn]:
    return [StripColumn(f"step {s.step}", s.run_id, s.step) for s in TrainingStore(store).step_refs(training_id)]


def test_a_row_across_the_steps_that_hold_it_in_order(store: Store) -> None:
    strip = filmstrip(store, columns_of(store, training(store)), "row_0")
    assert [c.label for c in strip.columns] == ["step 1", "step 3"]  # step 2 has other prompts
    assert strip.row_id == "row_0" and strip.prompt == "Draw a landscape with a sun"
    assert [(f.column, f.sample_index, f.score) for f in strip.frames] == [
        (0, 0, 0.25),
        (0, 1, 0.5),
        (1, 0, 1.0),
        (1, 1, None),  # an invalid score is no score
    ]
    assert [f.line for f in strip.frames] == [
        "Only the sky.",  # the rationale's first line
        "The sky, sun and grass are present; the triangle is too small to count.",
        "Everything is there.",
        "judge unreachable",  # no rationale: the reason
    ]
    assert strip.samples == 2 and strip.at(1, 1) is not None and strip.at(2, 0) is None


def test_a_row_by_index_and_an_unknown_row(store: Store) -> None:
    columns = columns_of(store, training(store))
    assert filmstrip(store, columns, "1").row_id == "row_1"
    with pytest.raises(ConfigError, match=r"no row 'row_7' in these runs; their rows: row_0, row_1"):
        filmstrip(store, columns, "row_7")
    rows = strip_rows(store, [c.run_id for c in columns])
    assert [(r.row_id, r.rollouts, r.columns) for r in rows] == [("row_0", 4, 2), ("row_1", 1, 1)]


def test_spread_keeps_the_first_and_the_last_step() -> None:
    columns = [StripColumn(f"step {i}", f"r{i}", i) for i in range(1, 11)]
    assert [c.step for c in spread(columns, 4)] == [1, 4, 7, 10]
    assert spread(columns, 20) == columns
    assert [c.step for c in spread(columns, 1)] == [10]


def _has_colour(image: Image.Image, box: tuple[int, int, int, int], colour: tuple[int, int, int]) -> bool:
    region = image.crop(box).convert("RGB")
    return any(pixel == colour for pixel in region.getdata())


def test_the_contact_sheet_has_a_picture_and_a_score_per_frame(store: Store) -> None:
    strip = filmstrip(store, columns_of(store, training(store)), "row_0")
    pngs = frame_pngs(store, strip.frames)
    assert len(pngs) == 4
    sheet = Image.open(io.BytesIO(contact_sheet(strip, pngs, cell=100)))
    wider = Image.open(io.BytesIO(contact_sheet(strip, pngs, cell=200)))
    assert wider.width > sheet.width * 1.6 and wider.height > sheet.height * 1.6
    rgb = sheet.convert("RGB")
    assert _has_colour(rgb, (0, 0, rgb.width, rgb.height), (0x00, 0x55, 0xA4))  # the flag's blue: its picture
    assert _has_colour(rgb, (0, 0, rgb.width, rgb.height), (0x87, 0xCE, 0xEB))  # the scene's sky
    assert _has_colour(rgb, (0, 0, rgb.width, rgb.height), (0xC6, 0x28, 0x28))  # "invalid", in red
    assert _has_colour(rgb, (0, 0, rgb.width, rgb.height), (0x1B, 0x5E, 0x20))  # a passing score, in green


def test_cli_writes_the_sheet_of_a_jobs_training(
    store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    training(store)
    out = tmp_path / "strip.png"
    args = ["runs", "filmstrip", "row_0", "--job", "svgagent-rft-test", "-o", str(out), "--store", str(store.path)]
    assert main([*args, "--json"]) == 0
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert [(f["label"], f["sample_index"], f["score"]) for f in data["frames"]] == [
        ("step 1", 0, 0.25),
        ("step 1", 1, 0.5),
        ("step 3", 0, 1.0),
        ("step 3", 1, None),
    ]
    assert f"wrote {out}: row_0 at 2 steps, 4 pictures" in captured.err
    with Image.open(out) as image:
        assert image.format == "PNG" and image.width > 2 * 160
    assert main([*args[:-2], "--columns", "1", "--store", str(store.path)]) == 0
    assert "2 steps hold the row: 1 of them shown" in capsys.readouterr().err
    with Image.open(out) as image:
        assert image.width < 2 * 160


def test_cli_across_runs_in_the_order_given(store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = build_run(store, [Spec(0, fulfilled=1), Spec(1, fulfilled=2)], run_id="20260101-120000-base", name="base")
    tuned = build_run(store, [Spec(0, fulfilled=4, svg=SCENE_SVG)], run_id="20260101-130000-tuned", name="tuned")
    out = tmp_path / "two.png"
    db = str(store.path)
    assert main(["runs", "filmstrip", "row_0", tuned, base, "-o", str(out), "--json", "--store", db]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [(f["label"], f["score"]) for f in data["frames"]] == [("tuned", 1.0), ("base", 0.25)]
    assert out.exists()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([], "name the steps: --job JOB, or one or more RUNs"),
        (["--job", "nope"], "no served rollouts for job 'nope'"),
        (["--job", "svgagent-rft-test", "--cell", "20"], "--cell must be between 48 and 512"),
        (["--job", "svgagent-rft-test", "-o", "-", "--json"], "--json cannot share it"),
    ],
)
def test_cli_refuses_with_one_line(
    store: Store, extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    training(store)
    assert main(["runs", "filmstrip", "row_0", *extra, "--store", str(store.path)]) == 2
    assert message in capsys.readouterr().err
