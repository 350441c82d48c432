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


KEY_LIKE = re.compile(r".|ctrl\+\w|enter|space|escape|tab")


async def test_every_key_the_readme_names_is_one_the_help_screen_lists(tmp_path: Path) -> None:
    """The other direction: a key the README's "The app" section names (a single character, `enter`, `space`,
    `ctrl+…`) is a key of some binding `?` lists (or the command palette's), so the README promises no key the app
    does not have."""
    from factories import build_run
    from tui_support import make_app, settle

    from svgagent.core.store.run_store import Store
    from svgagent.screens.help import binding_sections

    named = {token for token in re.findall(r"`([^`]+)`", the_app_section()) if KEY_LIKE.fullmatch(token)}
    with Store(tmp_path / "runs.db") as store:
        app = make_app(store, run_id=build_run(store))
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            listed = {
                NAMES.get(key.strip(), key.strip())
                for _, bindings in binding_sections(app)
                for binding in bindings
                for key in binding.key.split(",")
            }
            listed.add(app.COMMAND_PALETTE_BINDING)
    assert len(named) >= 25
    assert named - listed == set()
