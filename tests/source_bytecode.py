"""Up-to-date bytecode for svgagent's own sources, written before anything measures or spawns svgagent processes.

`pip install -e .` compiles nothing, and with PYTHONDONTWRITEBYTECODE set (this machine and CI set it) no process
ever writes a ``.pyc``: every interpreter that imports svgagent compiles the modules it imports from source
(0.15 - 0.3 s of CPU for an ``svgagent eval`` start). An installed wheel has its bytecode. The test suite starts
hundreds of such processes (CLI commands, engine processes, render workers, the app in tmux), and the benchmarks
measure start-ups: both write the bytecode first, and Python's own cache check (the source's mtime and size) then
keeps every process on the cached code, or on the source again once a file is edited.
"""

from __future__ import annotations

import importlib.util
import py_compile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("core", "tui", "screens")  # svgagent.core, svgagent.tui, svgagent.screens (pyproject's package-dir)


def _is_current(source: Path) -> bool:
    """The check the import system makes: the cached file's header records this source's mtime and size."""
    try:
        header = Path(importlib.util.cache_from_source(str(source))).read_bytes()[:16]
    except OSError:
        return False
    stat = source.stat()
    return (
        len(header) == 16
        and header[:4] == importlib.util.MAGIC_NUMBER
        and int.from_bytes(header[4:8], "little") == 0  # timestamp-based (not hash-based) bytecode
        and int.from_bytes(header[8:12], "little") == int(stat.st_mtime) & 0xFFFFFFFF
        and int.from_bytes(header[12:16], "little") == stat.st_size & 0xFFFFFFFF
    )


def stale_sources(root: Path = ROOT) -> list[Path]:
    """svgagent's source files an import would compile from source: no cached bytecode, or not for this source."""
    return [
        source for package in PACKAGES for source in sorted((root / package).rglob("*.py")) if not _is_current(source)
    ]


def compile_sources(root: Path = ROOT) -> int:
    """Write the missing or stale bytecode of svgagent's sources; return how many files needed it. Timestamp-based,
    as the import system writes it (a ``SOURCE_DATE_EPOCH`` in the environment would make py_compile's default hash-
    based, which :func:`stale_sources` counts as stale)."""
    stale = stale_sources(root)
    for source in stale:
        py_compile.compile(str(source), doraise=True, invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)
    return len(stale)
