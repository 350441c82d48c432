"""svgagent's own processes run on uvloop's event loop where it is installed (core/event_loop.py): the headless
commands through run_stoppable, the engine's worker processes, serve. (bench/engine.py measures the engine on it.)"""

from __future__ import annotations

import asyncio
import importlib.util

from svgagent.core import event_loop
from svgagent.tui.cli.interrupts import run_stoppable

EXPECTED = "uvloop" if importlib.util.find_spec("uvloop") else "asyncio"


async def _loop_package() -> str:
    return type(asyncio.get_running_loop()).__module__.partition(".")[0]


def test_a_headless_command_runs_on_uvloop_where_it_is_installed() -> None:
    assert run_stoppable(_loop_package) == EXPECTED


def test_the_engine_processes_loop_is_the_same() -> None:
    assert event_loop.run(_loop_package()) == EXPECTED
    factory = event_loop.loop_factory()
    assert (factory is None) == (EXPECTED == "asyncio")
