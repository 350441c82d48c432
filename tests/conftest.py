"""Shared fixtures: every test runs with the user's dirs, keys and working directory isolated."""

from __future__ import annotations

import gc
import os
import resource
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from _pytest.unraisableexception import gc_collect_iterations_key  # a stash key pytest gives its own tests
from factories import build_run
from source_bytecode import compile_sources
from tmux_support import Tmux, private_tmux

from svgagent.core.sim.simulator import Simulator
from svgagent.core.store.run_store import Store

_SCRUB = (
    "FIREWORKS_API_KEY",
    "OPENAI_API_KEY",
    "FIREWORKS_ACCOUNT_ID",
    "FIREWORKS_BASE_URL",
    "FIREWORKS_CUSTOM_HEADERS",
)


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """XDG/platformdirs paths, SVGAGENT_* and key variables point into tmp_path; cwd is a fresh directory."""
    for name in list(os.environ):
        if name.startswith("SVGAGENT_") or name in _SCRUB:
            monkeypatch.delenv(name, raising=False)
    # pytest-xdist's workers set COLUMNS=80 / LINES=24, which Textual (and Rich) take as the terminal's size even
    # inside a 120x40 tmux window: a test sees the terminal it opened, however it is run.
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)
    home = tmp_path / "home"
    for var, sub in (
        ("XDG_CONFIG_HOME", "config"),
        ("XDG_DATA_HOME", "data"),
        ("XDG_CACHE_HOME", "cache"),
        ("XDG_STATE_HOME", "state"),
    ):
        monkeypatch.setenv(var, str(home / sub))
    monkeypatch.setenv("HOME", str(home))
    # the demo world's simulated lifecycles and trainer at a twentieth of their pace (svgagent.core.demo.demo_pace)
    monkeypatch.setenv("SVGAGENT_DEMO_PACE", "0.05")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return work


@pytest.fixture
async def client(sim: Simulator) -> AsyncIterator[openai.AsyncOpenAI]:
    """The real openai client on the module's ``sim`` fixture (the loopback simulator), no retries."""
    assert sim.base_url is not None
    api = openai.AsyncOpenAI(base_url=sim.base_url, api_key="test", max_retries=0)
    yield api
    await api.close()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    """A store holding the fixture run (``factories.build_run``); test files with their own ``store`` override it."""
    with Store(tmp_path / "runs.db") as s:
        build_run(s)
        yield s


# --- `pytest --cpu-durations=N`: the N tests that cost the most CPU (this process and the processes it waited
# for: CLI runs, engine and render workers, eval-protocol's venv). On 2 shared cores CPU, not wall time, is what
# makes the suite slow, and it is what load does not distort.
_CPU: dict[str, float] = {}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--cpu-durations",
        type=int,
        default=0,
        metavar="N",
        help="list the N tests that used the most CPU (with the processes they waited for); with -n0",
    )


def _cpu_now() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    if not item.config.getoption("--cpu-durations"):
        yield
        return
    start = _cpu_now()
    yield
    _CPU[item.nodeid] = _cpu_now() - start


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    count = config.getoption("--cpu-durations")
    if not count or not _CPU:
        return
    terminalreporter.section(f"most CPU: {count} tests of {len(_CPU)}, {sum(_CPU.values()):.0f} s in all")
    for nodeid, seconds in sorted(_CPU.items(), key=lambda kv: -kv[1])[:count]:
        terminalreporter.write_line(f"{seconds:7.2f}s  {nodeid}")


# --- bytecode first: with PYTHONDONTWRITEBYTECODE (CI and this machine set it) an editable install has none, and
# every process a test starts compiled svgagent from source. Written once, by the process that starts the workers
# (or the only one), before any test runs: the CLI, crash, fault and secret-hygiene files' CPU 142 - 150 s -> 124 -
# 133 s (BENCHMARKS.md, the test suite).
def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):
        compile_sources()
    # pytest's unraisable-exception check runs five full collections when a process ends (the Trio project's
    # number); over a worker's heap after hundreds of Textual apps each is ≈0.8 s of CPU (4.3 s measured after
    # tests/test_tui_app.py). Two keep the check (a finalizer's own garbage is found by the second) at 2/5 the cost.
    config.stash[gc_collect_iterations_key] = 2
    # A Textual app allocates in bursts of tens of thousands of objects that die within a frame: at the default
    # 700 allocations a young collection ran ~100 times per Pilot test and moved frames' garbage on to older
    # generations. Every 5,000 (as svgagent eval's run does, core/startup_gc): the TUI files' CPU 43.9 / 46.2 ->
    # 39.5 / 42.1 s (test_tui_burst + test_config_form + test_tui_live, two alternating pairs at load 0.9),
    # the worker's peak RSS 200 -> 250 MB. Only the test processes: the processes they start keep Python's default.
    gc.set_threshold(5000, *gc.get_threshold()[1:])


# --- `-n auto` (pyproject's addopts): two workers more than the cores this process may use. A good part of the
# suite's time is waiting (for the processes, servers, terminals and Pilot frames the tests start), which the extra
# workers fill: on 2 cores, fresh-clone pytest 5:15 with two workers, 4:49 with three (1,546 tests); with 1,706
# tests, 5:24 – 5:54 with three, 5:02 with four (Dec 7, quiet machine).
# PYTEST_XDIST_AUTO_NUM_WORKERS still decides when it is set (xdist's own hook reads it).
@pytest.hookimpl(tryfirst=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    return len(os.sched_getaffinity(0)) + 2


# --- the longest tests first: with two workers, a 20 s test picked up last leaves the other core idle meanwhile.
# Whole modules move (their module-scoped fixtures stay shared); the order inside each stays as written.
SLOW_FIRST = (
    "test_secret_hygiene.py",
    "test_serve_ep.py",
    "test_eval_protocol.py",
    "test_crash_resume.py",
    "test_packaging.py",
    "test_ep_fork.py",
    "test_render_hostile.py",
    "test_faults.py",
    "test_render_chromium_hostile.py",
    "test_tui_loop_tmux.py",
    "test_serve_hostile.py",
    "test_judge_profile_parity.py",
    "test_rft_evaluate.py",
)


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {name: index for index, name in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(SLOW_FIRST)))  # stable: the rest keep their order


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    """A private tmux server for a test that drives the app in a real terminal (tests/tmux_support.py)."""
    with private_tmux(tmp_path) as server:
        yield server
