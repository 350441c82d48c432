"""No full garbage collections while a command starts: start-up makes objects that live as long as the process.

Importing pydantic, Textual and the app's modules and building the dashboard allocate enough for the cyclic
collector to walk every live object twice before the TUI's first frame (two full collections, ≈0.05 – 0.1 s of
CPU each, collecting nothing). `svgagent tui` pauses the collector when it starts (:func:`pause_collection`) and
the app hands it back when its first frame is composed (:func:`resume_collection`, right after ``gc.freeze`` took
what exists by then out of its sight). Reference counting frees acyclic objects all along; the few cycles start-up
leaves are collected once it is over. (`svgagent eval` runs no full collection before its first request.)

:func:`long_run_heap` is the collector's setting for a process's one long job: an engine run (`svgagent eval`, the
engine's own process) or serving rollouts (`svgagent serve`). It is a process-wide choice, so the process's owner
makes it (not the engine or the server, which may share a process with an app or a test), and undoes it when the
job ends.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

YOUNG_THRESHOLD = 5000  # allocations between young collections during a long job (the default: 700)

_paused = False


def pause_collection() -> None:
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume_collection() -> None:
    """Idempotent; a no-op unless :func:`pause_collection` turned the collector off."""
    global _paused
    if _paused:
        _paused = False
        gc.enable()


@contextlib.contextmanager
def long_run_heap() -> Iterator[None]:
    """While an engine run (or serving) is the process's job: what exists when it starts (modules, settings, the
    dataset, the clients) is out of the cyclic collector's sight (``gc.freeze``), so no full collection walks it
    again (≈40 ms per 1,000 rollouts at C=256), and the youngest generation is collected every
    :data:`YOUNG_THRESHOLD` allocations: a rollout in flight holds a few hundred objects, so at 700 most young
    collections found them alive and moved them on to older generations, whose collections cost more (BENCHMARKS.md
    "Engine CPU, sixth pass"). Afterwards the thresholds are as they were and the frozen objects are the collector's
    again."""
    before = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()
