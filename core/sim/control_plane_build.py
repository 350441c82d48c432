"""What the simulated control plane checks when it builds an evaluator, so a bundle the real build would reject
fails here too (BUILD_FAILED with the reason in `status.message` and the build log).

Static checks (always): the upload is a readable .tar.gz laid out as eval-protocol's `ep upload` packs a project
(every file under one top-level folder: the only layout known to build), `requirements.txt` in that folder, and an
`entryPoint` of the form `path/to/file.py::function` whose file is in the archive and binds that name at module
level. With `SimConfig.build_python` (an interpreter with eval-protocol installed, e.g. the CI's eval-protocol venv)
the build also unpacks the archive into a temporary directory and imports the entry module there in a subprocess,
as the platform's pytest would, and requires the function to exist after the import.
"""

from __future__ import annotations

import ast
import io
import json
import subprocess
import tarfile
import tempfile
import threading
from pathlib import Path, PurePosixPath

IMPORT_TIMEOUT_S = 120.0
_IMPORT_SCRIPT = """
import importlib, sys
sys.path.insert(0, sys.argv[1])
module = importlib.import_module(sys.argv[2])
if not hasattr(module, sys.argv[3]):
    sys.exit(f"{sys.argv[2]} has no attribute {sys.argv[3]!r} after import (is eval-protocol installed?)")
"""


def _members(archive: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        out: dict[str, bytes] = {}
        for member in tar.getmembers():
            if member.issym() or member.islnk():
                raise ValueError(f"the archive holds a link ({member.name})")
            if member.isfile():
                handle = tar.extractfile(member)
                out[member.name] = handle.read() if handle else b""
        return out


def _binds(source: bytes, name: str) -> bool:
    """Whether module-level code (also inside if/try blocks) defines or assigns `name`."""
    tree = ast.parse(source)
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return True
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return True
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if any((alias.asname or alias.name) == name for alias in node.names):
                return True
        for block in ("body", "orelse", "finalbody", "handlers"):
            pending.extend(getattr(node, block, []) or [])
    return False


def bundle_config(archive: bytes) -> dict[str, object]:
    """The ``config`` of an svgagent evaluator bundle's ``svgagent_bundle.json`` (how it rolls out: ``rollouts``,
    ``remote_url``), or {} for an archive that has none."""
    try:
        files = _members(archive)
    except (tarfile.TarError, OSError, ValueError, EOFError):
        return {}
    for name, data in files.items():
        if PurePosixPath(name).name == "svgagent_bundle.json" and len(PurePosixPath(name).parts) == 2:
            try:
                config = json.loads(data).get("config")
            except (ValueError, AttributeError):
                return {}
            return config if isinstance(config, dict) else {}
    return {}


def inspect_archive(archive: bytes, entry_point: str) -> tuple[str | None, str]:
    """(the reason the build fails or None, the project folder) from the archive's layout and entry point."""
    try:
        files = _members(archive)
    except (tarfile.TarError, OSError, EOFError, ValueError) as err:
        return f"the uploaded code is not a readable .tar.gz archive ({err})", ""
    roots = {name.split("/", 1)[0] for name in files}
    if len(roots) != 1 or any("/" not in name for name in files):
        return (
            "the archive must hold one top-level folder with the project in it (as `ep upload` packs it), "
            f"found {len(roots)} top-level entries"
        ), ""
    root = roots.pop()
    if f"{root}/requirements.txt" not in files:
        return f"requirements.txt is missing from the project folder {root}/", root
    path, sep, func = entry_point.partition("::")
    rel = PurePosixPath(path)
    if not sep or not func.isidentifier() or rel.suffix != ".py" or rel.is_absolute() or ".." in rel.parts:
        return f"entryPoint {entry_point!r} must look like path/to/file.py::function, relative to the project", root
    source = files.get(f"{root}/{rel}")
    if source is None:
        return f"entryPoint {entry_point!r} does not resolve inside the archive: no {root}/{rel}", root
    try:
        if not _binds(source, func):
            return f"entryPoint {entry_point!r}: {rel} defines no {func}", root
    except SyntaxError as err:
        return f"entryPoint {entry_point!r}: {rel} is not valid Python ({err.msg}, line {err.lineno})", root
    return None, root


def import_entry(
    archive: bytes, root: str, entry_point: str, python: str, timeout_s: float = IMPORT_TIMEOUT_S
) -> str | None:
    """Unpack into a temporary directory and import the entry module with `python`; the reason it fails, or None."""
    path, _, func = entry_point.partition("::")
    module = str(PurePosixPath(path).with_suffix("")).replace("/", ".")
    with tempfile.TemporaryDirectory(prefix="sim-evaluator-build-") as tmp:
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
            tar.extractall(tmp, filter="data")
        project = Path(tmp) / root
        try:
            proc = subprocess.run(
                [python, "-c", _IMPORT_SCRIPT, str(project), module, func],
                cwd=project,
                capture_output=True,
                text=True,
                timeout=timeout_s,
                env={"PATH": "/usr/bin:/bin", "HOME": tmp, "EP_NO_UPLOAD": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
            )
        except (OSError, subprocess.TimeoutExpired) as err:
            return f"importing {module} failed: {err}"
    if proc.returncode != 0:
        tail = [line for line in (proc.stderr or proc.stdout).strip().splitlines() if line.strip()][-3:]
        return f"importing {module} with eval-protocol failed: " + " | ".join(tail)
    return None


class BuildCheck:
    """One evaluator build's checks; the import (when asked for) runs in a thread, so the server never waits."""

    def __init__(self, archive: bytes, entry_point: str, python: str | None) -> None:
        self.problem, root = inspect_archive(archive, entry_point)
        self.log = [f"archive: {len(archive):,} bytes, project folder {root or '?'}/", f"entry point: {entry_point}"]
        self._done = threading.Event()
        if self.problem is not None or not python:
            self._done.set()
            return
        self.log.append(f"importing the entry module with {python}")

        def run() -> None:
            self.problem = import_entry(archive, root, entry_point, python)
            self._done.set()

        threading.Thread(target=run, name="sim-evaluator-build", daemon=True).start()

    @classmethod
    def finished(cls, problem: str | None, log: list[str]) -> BuildCheck:
        """A check that has run, as stored (the demo world keeps a build's outcome, not its thread)."""
        check = cls.__new__(cls)
        check.problem, check.log = problem, list(log)
        check._done = threading.Event()
        check._done.set()
        return check

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)
