"""A plain wheel carries every package under the svgagent namespace and its data files (not only `pip install -e`)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_wheel_contains_every_package_and_data_file(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(REPO)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    (wheel,) = tmp_path.glob("svgagent-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert not any(n.startswith(("core/", "tui/", "screens/")) for n in names), "no top-level core/tui packages"
    assert not any(n.startswith("svgagent/__init__") for n in names), "svgagent is a namespace package"
    for folder, prefix in (("core", "svgagent/core/"), ("tui", "svgagent/tui/"), ("screens", "svgagent/screens/")):
        for source in (REPO / folder).rglob("*.py"):
            expected = prefix + source.relative_to(REPO / folder).as_posix()
            assert expected in names, f"{expected} missing from the wheel"
    assert "svgagent/core/data/builtin.json" in names
    assert "svgagent/tui/app.tcss" in names
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "svgagent = svgagent.tui.cli.main:main" in zipfile.ZipFile(wheel).read(entry).decode()
