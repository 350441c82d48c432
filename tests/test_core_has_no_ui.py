"""core/ must run without a screen: no module under svgagent.core may import textual or the UI packages."""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

import svgagent.core

CORE_DIR = Path(svgagent.core.__file__).parent
FORBIDDEN = ("textual", "svgagent.tui", "svgagent.screens")


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
        elif isinstance(node, ast.ImportFrom) and node.level >= 2:
            names.add("svgagent." + (node.module or ""))  # from ..tui import x
    return names


def test_no_core_source_imports_ui() -> None:
    offenders = {
        str(path.relative_to(CORE_DIR)): sorted(n for n in _imports(path) if n.startswith(FORBIDDEN))
        for path in CORE_DIR.rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_importing_every_core_module_loads_no_ui() -> None:
    modules = [f"svgagent.core.{m.name}" for m in pkgutil.iter_modules([str(CORE_DIR)])]
    assert "svgagent.core.engine" in modules
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        f"bad = [m for m in sys.modules if m.startswith({FORBIDDEN!r})]\n"
        "print(bad); sys.exit(1 if bad else 0)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
