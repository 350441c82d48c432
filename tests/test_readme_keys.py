"""The README's "The app" section names every key of the main screen the help screen (`?`) lists."""

from __future__ import annotations

import re
from pathlib import Path

from textual.binding import Binding

from svgagent.screens.dashboard import Dashboard
from svgagent.tui.app import SvgAgentApp
from svgagent.tui.widgets.rollout_table import RolloutTable

README = Path(__file__).resolve().parents[1] / "README.md"
NAMES = {"question_mark": "?", "slash": "/", "minus": "-", "plus": "+"}
# moving the cursor, switching panes by number, escape: the README says "number keys", the rest is common ground
SKIPPED = re.compile(r"\.(down|up|page_down|page_up|first|last|focus_table)$|^pane\.")


def the_app_section() -> str:
    text = README.read_text()
    return text.split("## The app", 1)[1].split("\n## ", 1)[0]


def test_readme_names_every_key_of_the_main_screen() -> None:
    quoted = set(re.findall(r"`([^`]+)`", the_app_section()))
    missing = []
    for owner in (SvgAgentApp, Dashboard, RolloutTable):
        for binding in owner.BINDINGS:
            if not isinstance(binding, Binding) or not binding.id or SKIPPED.search(binding.id):
                continue
            key = binding.key.split(",")[0].strip()
            if NAMES.get(key, key) not in quoted:
                missing.append(f"{binding.id} ({key})")
    assert missing == []
