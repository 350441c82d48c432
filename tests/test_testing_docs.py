"""The test suite builds eval-protocol's venv (hundreds of MB) under the user's cache: the README and docs/testing.md
say so — where, how big, how to remove it — and stay in step with .ci/ep_venv.sh's version (issue 34, item 6)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _ep_version() -> str:
    found = re.search(r"^EP_VERSION=(\S+)$", (REPO / ".ci" / "ep_venv.sh").read_text(), re.MULTILINE)
    assert found
    return found.group(1)


def test_readme_and_testing_doc_say_where_the_ep_venv_goes_how_big_and_how_to_remove_it() -> None:
    place = f"~/.cache/svgagent/ep-venv-{_ep_version()}"
    for doc in ("README.md", "docs/testing.md"):
        text = " ".join((REPO / doc).read_text().split())
        assert place in text, doc
        assert re.search(r"\b5\d\d MB\b", text), doc  # its size, as du measured it (514 MB for 0.3.33)
        assert "rm -rf ~/.cache/svgagent/ep-venv-*" in text, doc
        assert "EP_VENV" in text, doc
