"""svgagent's bytecode is written before the tests start processes (tests/source_bytecode.py, tests/conftest.py)."""

from __future__ import annotations

import os
from pathlib import Path

from source_bytecode import PACKAGES, compile_sources, stale_sources


def test_the_suite_runs_with_svgagents_bytecode_up_to_date() -> None:
    # conftest's pytest_configure compiled them in the process that started this one: the CLI commands, engine
    # processes and render workers the tests start load svgagent from bytecode, as an installed wheel would.
    assert stale_sources() == []


def test_compile_sources_writes_what_is_missing_or_older_than_its_source(tmp_path: Path) -> None:
    for package in PACKAGES:
        (tmp_path / package / "inner").mkdir(parents=True)
        (tmp_path / package / "__init__.py").write_text("")
        (tmp_path / package / "inner" / "mod.py").write_text("VALUE = 1\n")
    assert len(stale_sources(tmp_path)) == 2 * len(PACKAGES)
    assert compile_sources(tmp_path) == 2 * len(PACKAGES)
    assert stale_sources(tmp_path) == []
    edited = tmp_path / "core" / "inner" / "mod.py"
    edited.write_text("VALUE = 2\n")
    later = edited.stat().st_mtime + 5
    os.utime(edited, (later, later))
    assert stale_sources(tmp_path) == [edited]
    assert compile_sources(tmp_path) == 1
    assert stale_sources(tmp_path) == []
