"""A run may be named by its id, a unique prefix, its name or `latest`, in every command that takes one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from factories import build_run

from svgagent.core.store.run_refs import RunNotFound, resolve_run
from svgagent.core.store.run_store import Store
from svgagent.tui.cli.main import main

OLD, NEW, OTHER = "20250101-000000-ab12", "20260101-120000-cd34", "20260101-130000-cd99"


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    """Three runs; OTHER is the newest and shares the prefix 20260101-1 with NEW."""
    with Store(tmp_path / "runs.db") as store:
        build_run(store, run_id=OLD, name="baseline")
        build_run(store, run_id=NEW, name="tuned")
        build_run(store, run_id=OTHER, name="tuned again")
    return tmp_path / "runs.db"


@pytest.mark.parametrize(
    ("ref", "wanted"),
    [
        (OLD, OLD),
        ("2025", OLD),
        ("20260101-120", NEW),
        ("latest", OTHER),
        ("LATEST", OTHER),
        ("baseline", OLD),
        ("tuned", NEW),
        ("tuned again", OTHER),
        ("cd99", None),
    ],
)
def test_resolver_rules(runs: Path, ref: str, wanted: str | None) -> None:
    with Store(runs) as store:
        if wanted is None:
            with pytest.raises(RunNotFound, match="no run 'cd99'"):
                resolve_run(store, ref)
        else:
            assert resolve_run(store, ref).run_id == wanted


def test_an_ambiguous_prefix_names_the_candidates(runs: Path) -> None:
    with Store(runs) as store, pytest.raises(RunNotFound) as err:
        resolve_run(store, "20260101")
    assert "2 runs start with '20260101'" in str(err.value)
    assert f"{NEW} (tuned)" in str(err.value)
    assert f"{OTHER} (tuned again)" in str(err.value)


def test_an_empty_store_says_so(tmp_path: Path) -> None:
    with Store(tmp_path / "empty.db") as store, pytest.raises(RunNotFound, match="holds no runs yet"):
        resolve_run(store, "latest")


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_every_command_takes_a_prefix_a_name_or_latest(
    runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = ("--store", str(runs))
    code, out, _ = run_cli(capsys, "runs", "show", "2025", "--json", *store)
    assert code == 0
    assert json.loads(out)["run"]["run_id"] == OLD
    code, out, _ = run_cli(capsys, "runs", "stats", "latest", "--json", *store)
    assert code == 0
    assert json.loads(out)["name"] == "tuned again"
    code, out, _ = run_cli(capsys, "runs", "compare", "baseline", "latest", "--json", *store)
    assert code == 0
    compared = json.loads(out)
    assert (compared["run_a"], compared["run_b"]) == (OLD, OTHER)
    target = tmp_path / "out.jsonl"
    code, _, err = run_cli(capsys, "export", "tuned", "-o", str(target), *store)
    assert code == 0
    assert f"of {NEW} to" in err
    code, _, err = run_cli(capsys, "export", "20260101", "-o", str(target), *store)
    assert code == 2
    assert "2 runs start with '20260101'" in err


def test_eval_resume_and_tui_take_them_too(
    runs: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from svgagent.tui.app import SvgAgentApp

    opened: dict[str, Any] = {}
    monkeypatch.setattr(SvgAgentApp, "run", lambda self, *a, **k: opened.update(run=self.initial_run_id))
    assert main(["tui", "--demo", "--store", str(runs), "--run", "baseline"]) == 0
    assert opened["run"] == OLD
    code, _, err = run_cli(capsys, "eval", "--demo", "--resume", "nope", "--store", str(runs))
    assert code == 2
    assert "no run 'nope'" in err
    code, _, err = run_cli(capsys, "eval", "--demo", "--resume", "latest", "--store", str(runs), "--json")
    assert code == 2  # the newest run, found; not a demo run, so --demo may not finish it (tests/test_cli.py)
    assert f"--demo: run {OTHER} was not made with the built-in simulator" in err


async def test_the_run_picker_filters_as_you_type(runs: Path) -> None:
    from textual.widgets import OptionList
    from tui_support import burst, make_app, settle

    from svgagent.screens.run_picker import RunPicker

    with Store(runs) as store:
        app = make_app(store, run_id=OLD)
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            await burst(pilot, "o", "slash", *"tuned")
            picker = app.screen
            assert isinstance(picker, RunPicker)
            assert [r.run_id for r in picker.shown] == [OTHER, NEW]
            assert picker.query_one(OptionList).option_count == 2
            await burst(pilot, *" again", "enter")  # one match left: enter opens it
            assert app.dashboard.run_id == OTHER
            await burst(pilot, "o", "slash", *"zebra")
            assert app.screen.shown == []  # type: ignore[attr-defined]
            await burst(pilot, "escape", "escape")  # back to the list, then the filter cleared
            assert len(app.screen.shown) == 3  # type: ignore[attr-defined]
            await burst(pilot, "slash", *"latest", "enter")
            assert app.dashboard.run_id == OTHER


def test_filter_words_all_hold() -> None:
    from svgagent.core.store.run_refs import filter_runs

    with Store(Path("f.db")) as store:
        build_run(store, run_id=OLD, name="baseline")
        build_run(store, run_id=NEW, name="tuned")
        runs = store.list_runs()
    assert [r.run_id for r in filter_runs(runs, "fixture-policy tuned")] == [NEW]  # model and name
    assert [r.run_id for r in filter_runs(runs, "ab12")] == [OLD]
    assert [r.run_id for r in filter_runs(runs, "")] == [NEW, OLD]


def test_runs_list_and_the_picker_say_how_many_rollouts_the_mean_is_of(tmp_path: Path, capsys: Any) -> None:
    # a user test: `interrupted · 33 rollouts · mean 0.429` read as the run's mean though 5 of 33 had finished
    from svgagent.screens.run_picker import run_line

    with Store(tmp_path / "runs.db") as store:
        build_run(store, run_id=NEW)  # the standard fixture: row 5 never ran
        summary = store.summarize(NEW, 0.5)
        assert 0 < summary.done < summary.rollouts
        progress = f"{summary.done}/{summary.rollouts} done · mean {summary.mean_score:.3f}"
        assert progress in run_line(store.get_run(NEW)).plain
    assert main(["runs", "list", "--json", "--store", str(tmp_path / "runs.db")]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert (listed[0]["done"], listed[0]["rollouts"]) == (summary.done, summary.rollouts)
    assert main(["runs", "list", "--store", str(tmp_path / "runs.db")]) == 0
    assert f"{summary.done}/{summary.rollouts}" in capsys.readouterr().out
    assert main(["runs", "show", NEW, "--store", str(tmp_path / "runs.db")]) == 0
    shown = " ".join(capsys.readouterr().out.split())  # the console wraps at its width
    outcomes = summary.outcomes.text(all_three=True)  # scored · invalid · failed (core/store/outcomes.py)
    assert f"{summary.done}/{summary.rollouts} done ({outcomes}), mean {summary.mean_score:.3f}" in shown
