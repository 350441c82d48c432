"""Shared fixtures: every test runs with the user's dirs, keys and working directory isolated."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from factories import build_run

from svgagent.core.store import Store

_SCRUB = ("FIREWORKS_API_KEY", "OPENAI_API_KEY", "FIREWORKS_ACCOUNT_ID", "FIREWORKS_BASE_URL")


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """XDG/platformdirs paths, SVGAGENT_* and key variables point into tmp_path; cwd is a fresh directory."""
    for name in list(os.environ):
        if name.startswith("SVGAGENT_") or name in _SCRUB:
            monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    for var, sub in (("XDG_CONFIG_HOME", "config"), ("XDG_DATA_HOME", "data"), ("XDG_CACHE_HOME", "cache"),
                     ("XDG_STATE_HOME", "state")):
        monkeypatch.setenv(var, str(home / sub))
    monkeypatch.setenv("HOME", str(home))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return work


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    """A store holding the fixture run (``factories.build_run``); test files with their own ``store`` override it."""
    with Store(tmp_path / "runs.db") as s:
        build_run(s)
        yield s
