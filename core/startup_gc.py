"""No full garbage collections while a command starts: start-up makes objects that live as long as the process.

Importing pydantic, Textual and the app's modules and building the dashboard allocate enough for the cyclic
collector to walk every live object twice before the TUI's first frame (two full collections, ≈0.05 – 0.1 s of
CPU each, collecting nothing). `svgagent tui` pauses the collector when it starts (:func:`pause_collection`) and
the app hands it back when its first frame is composed (:func:`resume_collection`, right after ``gc.freeze`` took
what exists by then out of its sight). Reference counting frees acyclic objects all along; the few cycles start-up
leaves are collected once it is over. (`svgagent eval` runs no full collection before its first request.)
"""

from __future__ import annotations

import gc

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
