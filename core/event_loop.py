"""The event loop svgagent's own processes run on: uvloop's (libuv's, in C) where it is installed, else asyncio's.

On asyncio's loop its own bookkeeping — callbacks, the timer heap, the transports — was a tenth or more of
``svgagent serve``'s CPU per rollout (BENCHMARKS.md "serve") and, once the engine's own work had been cut, the largest
part of the engine's loop (≈0.9 of 1.6 ms per rollout at C=256; uvloop: ≈−0.26 ms per rollout, BENCHMARKS.md
"Engine CPU, fourth pass"). uvloop is a dependency off Windows; without it (Windows, a venv made before it was one)
asyncio's loop runs the same code.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's ``new_event_loop`` where uvloop is installed, else None (``asyncio.Runner``'s default loop)."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def run(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)`` on :func:`loop_factory`'s loop."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(main)
