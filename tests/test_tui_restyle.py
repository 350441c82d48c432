"""Switching pane, moving the focus and zooming restyle the pane containers, not the ~600 widgets inside them
(tui/own_class): the classes involved may feed only rules about those containers, which the app's own stylesheet is
read here to prove; and the keys that set them restyle a handful of nodes, where they restyled hundreds."""

from __future__ import annotations

import re

import pytest
from factories import RUN_ID
from textual.color import Color
from tui_support import make_app, settle

from svgagent.core.store.run_store import Store
from svgagent.tui.own_class import OWN_CLASSES, ZOOMED
from svgagent.tui.widgets.config_form import STACKED, STACKED_TARGETS


def _selectors(app) -> list[str]:  # type: ignore[no-untyped-def]
    return [s.strip() for rule in app.stylesheet.rules for s in rule.selectors.split(",")]


def _after(selector: str, name: str) -> str | None:
    """What follows the compound that holds class ``name`` (None: the class is not in the selector)."""
    compounds = selector.split()
    for index, compound in enumerate(compounds):
        if re.search(rf"\.{re.escape(name)}(?![\w-])", compound):
            return " ".join(compounds[index + 1 :])
    return None


async def test_the_pane_classes_style_only_the_nodes_they_restyle(store: Store) -> None:
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("3")  # the Config form (its CSS comes with it)
        await settle(pilot)
        selectors = _selectors(app)
    assert len(selectors) > 50  # the whole stylesheet was read: Textual's widgets' and the app's
    for name in OWN_CLASSES:
        users = [s for s in selectors if _after(s, name) is not None]
        assert users, name  # each class is used by some rule
        assert [s for s in users if _after(s, name)] == [], name  # and only about the node that has it
    zoomed = {_after(s, ZOOMED) for s in selectors} - {None}
    assert zoomed and all(re.fullmatch(r"#panes( \.pane\S*)?|#pane-tabs", rest) for rest in zoomed), zoomed
    stacked = {_after(s, STACKED) for s in selectors} - {None}
    targets = {t.strip() for t in STACKED_TARGETS.split(",")}
    assert stacked and stacked <= targets, stacked - targets


def _count_restyles(app) -> list[int]:  # type: ignore[no-untyped-def]
    counts: list[int] = []
    apply = app.stylesheet.apply

    def counting(node, *args, **kwargs):  # type: ignore[no-untyped-def]
        counts.append(1)
        return apply(node, *args, **kwargs)

    app.stylesheet.apply = counting
    return counts


# style applications counted for the same keys before tui/own_class: Escape 4 495, Escape 1 410, Escape + 659,
# ctrl+t from a Config field 631
@pytest.mark.parametrize(
    ("size", "steps"),
    [
        ((80, 24), [(("escape", "4"), 60), (("3",), None), (("escape", "1"), 60)]),
        (
            (120, 40),
            [(("escape", "4"), 60), (("3",), None), (("ctrl+t",), 200), (("ctrl+t",), 200), (("escape", "plus"), 60)],
        ),
    ],
)  # None: not counted; 200: the zoomed form is wide, its rows are restyled unstacked
async def test_a_pane_key_restyles_a_handful_of_nodes(
    store: Store, size: tuple[int, int], steps: list[tuple[tuple[str, ...], int | None]]
) -> None:
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("3")  # from the Config form, whose ~20 fields are most of the dashboard's widgets
        await settle(pilot)
        assert len(app.screen.query("*")) > 100
        counts = _count_restyles(app)
        for keys, most in steps:
            counts.clear()
            await pilot.press(*keys)
            await settle(pilot)
            if most is not None:
                assert 0 < len(counts) <= most, (keys, len(counts))
        assert app.dashboard.zoomed == ("rollouts" if size == (120, 40) else None)


async def test_in_the_grid_the_pane_with_the_focus_has_the_accent_border(store: Store) -> None:
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        accent = Color.parse(app.theme_variables["accent"])

        def border(name: str) -> Color:
            return app.dashboard.query_one(f"#pane-{name}").styles.border_top[1]

        assert border("rollouts") == accent
        assert border("secrets") != accent
        await pilot.press("4")
        await settle(pilot)
        assert border("secrets") == accent
        assert border("rollouts") != accent
        await pilot.press("plus", "plus", "escape")  # zoom and back, then to the table
        await settle(pilot)
        assert border("rollouts") == accent
        assert border("secrets") != accent
