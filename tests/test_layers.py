"""The layers hold: the import-linter contracts in pyproject.toml are kept, and at run time neither the core nor
the headless command line loads Textual."""

from __future__ import annotations

import json
import os
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import svgagent.core

ROOT = Path(__file__).resolve().parents[1]
UI = ("textual", "svgagent.tui", "svgagent.screens")


def test_import_linter_contracts_are_kept() -> None:
    result = subprocess.run(
        [sys.executable, "-c", "from importlinter.cli import lint_imports_command; lint_imports_command()"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "0 broken" in result.stdout


def _loaded_after(code: str, env: dict[str, str] | None = None) -> list[str]:
    probe = code + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))\n"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_importing_every_core_module_loads_no_ui() -> None:
    modules = [m.name for m in pkgutil.walk_packages(svgagent.core.__path__, "svgagent.core.")]
    assert {
        "svgagent.core.run.engine",
        "svgagent.core.scoring.judge",
        "svgagent.core.rft.launch",
        "svgagent.core.sim.simulator",
    } <= set(modules)
    loaded = _loaded_after("import importlib\n" + "".join(f"importlib.import_module({m!r})\n" for m in modules))
    assert [m for m in loaded if m.startswith(UI)] == []


def test_headless_eval_never_loads_textual(tmp_path: Path) -> None:
    env = {**os.environ, "SVGAGENT_HOME": str(tmp_path / "store"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    env.pop("FIREWORKS_API_KEY", None)
    env.pop("OPENAI_API_KEY", None)
    code = (
        "import contextlib, io\nfrom svgagent.tui.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        "    status = main(['eval', '--demo', '--rows', '1', '--json'])\n"
        "assert status in (0, 1), status\n"
    )
    loaded = _loaded_after(code, env)
    assert "svgagent.core.run.engine" in loaded  # the run really happened in this process
    assert [
        m for m in loaded if m.startswith(("textual", "svgagent.screens", "svgagent.tui.app", "svgagent.tui.widgets"))
    ] == []


def test_the_architecture_map_names_every_module() -> None:
    """docs/architecture.md is the newcomer's map: a module the map does not name is a room nobody can find."""
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", (ROOT / "docs" / "architecture.md").read_text()))
    modules = [
        p
        for top in ("core", "tui", "screens")
        for p in (ROOT / top).rglob("*.py")
        if p.stem != "__init__" and "__pycache__" not in p.parts
    ]
    assert len(modules) > 50  # the walk found the tree
    unnamed = sorted(str(p.relative_to(ROOT)) for p in modules if p.stem not in words)
    assert unnamed == [], f"docs/architecture.md does not name {unnamed}"


# core's top level: its packages, and the few modules every package uses (docs/architecture.md). A new module goes
# into the package of what it holds.
CORE_TOP_LEVEL = {
    "__init__.py",
    "demo.py",
    "named_files.py",
    "urls.py",
    "terminal_text.py",
    "event_loop.py",
    "startup_gc.py",
    "server_socket.py",
}


def test_core_top_level_holds_its_packages_and_the_shared_modules_only() -> None:
    core = ROOT / "core"
    modules = {p.name for p in core.glob("*.py")}
    assert modules == CORE_TOP_LEVEL, f"core/ gained or lost a top-level module: {sorted(modules ^ CORE_TOP_LEVEL)}"
    packages = sorted(p.parent.name for p in core.glob("*/__init__.py"))
    assert {"run", "scoring", "store", "config", "exchange", "analysis", "rft", "serve", "sim"} <= set(packages)


def test_every_core_package_says_what_it_holds_and_may_import() -> None:
    import ast

    for init in sorted((ROOT / "core").glob("*/__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert doc, f"{init.relative_to(ROOT)} has no docstring"
        if init.parent.name != "data":
            assert "May import" in doc or "Imports only" in doc, (
                f"{init.relative_to(ROOT)} does not say what it may import"
            )


def test_the_map_names_every_core_package() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    for init in (ROOT / "core").glob("*/__init__.py"):
        assert f"{init.parent.name}/" in text, f"docs/architecture.md does not draw core/{init.parent.name}/"
