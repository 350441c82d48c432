"""The rollout screen: the picture at full pane size, every written detail, the attempt history, and the human
override — a ✓/✗ per requirement or a count — stored next to the judge's verdict (both are kept)."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.events import Resize
from textual.geometry import Region
from textual.screen import Screen
from textual.visual import visualize
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from svgagent.core.config.prices import RolloutPricer, price_table
from svgagent.core.store.reviews import Mark, count_refusal, counted, marks_of_judge, starting_marks, toggled
from svgagent.core.store.run_store import Store
from svgagent.core.store.typed_rows import RolloutRecord
from svgagent.core.terminal_text import clipped, one_line, visible
from svgagent.screens.keys_first import AppKeysFirst
from svgagent.tui.widgets.keys_footer import KeysFooter
from svgagent.tui.widgets.picture import Picture, PictureShown
from svgagent.tui.widgets.rollout_cells import format_score, state_label
from svgagent.tui.widgets.rollout_info import RolloutInfo, judge_marks, not_judged, verdict_text
from svgagent.tui.widgets.screen_text import shown_line

NARROW_BELOW = 110


def requirement_prompt(rec: RolloutRecord, index: int, human: list[Mark] | None) -> Text:
    """One option line: the judge's mark (per-requirement mode), yours (once you reviewed: ✓, ✗, or · for not
    decided), the requirement."""
    judge = judge_marks(rec).get(index + 1)
    text = Text()
    if judge is not None:
        text.append("judge " + ("✓" if judge[0] else "✗") + "  ", style="green" if judge[0] else "red")
    elif rec.verdicts:
        text.append("judge ·  ", style="dim")
    if human is not None:
        mine = human[index]
        style = "dim" if mine is None else "bold green" if mine else "bold red"
        text.append("you " + ("·" if mine is None else "✓" if mine else "✗") + "  ", style=style)
    text.append(f"{index + 1}. {visible(rec.requirements[index])}")
    return text


def count_mode_note(rec: RolloutRecord) -> Text | None:
    """In count mode the judge said how many, not which: say so above the list (or that the judge never saw it)."""
    if rec.verdicts or rec.fulfilled is None:
        return None
    if not_judged(rec) is not None:
        return Text("your marks start undecided (·) and each ✓ you give counts", style="italic dim")
    return Text(
        f"judge {rec.fulfilled}/{rec.total}: a count, not which ones — your marks start undecided (·) and "
        "your count stays the judge's until your marks rule it out",
        style="italic dim",
    )


def attempts_table(attempts: list[RolloutRecord]) -> Table:
    table = Table("#", "status", "score", "fulfilled", "note", box=None, pad_edge=False, expand=True)
    for a in attempts:
        note = clipped(one_line(a.reason or a.error), 60, words=True)
        table.add_row(
            f"{a.attempt}{' ◀' if a.is_current else ''}",
            state_label(a),
            format_score(a),
            f"{a.effective_fulfilled if a.effective_fulfilled is not None else '–'}/{a.total}",
            shown_line(note),  # a reason or error: outside text
        )
    return table


def option_lines(options: OptionList, index: int) -> tuple[int, int] | None:
    """The first line and the height of option ``index`` in ``options``, laid out as an option list lays out its
    options: each prompt at the list's content width less the option padding, one after the other (no separators
    here). None: the list is not laid out yet."""
    width = options.scrollable_content_region.width - options.get_component_styles("option-list--option").padding.width
    if width <= 0 or not 0 <= index < options.option_count:
        return None
    heights = [visualize(options, option.prompt).get_height(options.styles, width) for option in options.options]
    return sum(heights[:index]), heights[index]


class RolloutDetail(AppKeysFirst, Screen[bool]):
    """Dismissed with True when the override changed."""

    BINDINGS = [
        Binding("escape,q", "close", "Back", id="detail.back"),
        Binding(
            "space,x",
            "toggle",
            "✓/✗",
            key_display="space",
            id="detail.toggle",
            tooltip="Your verdict on the highlighted requirement",
        ),
        Binding(
            "plus,equals_sign",
            "count(1)",
            "+1",
            key_display="+",
            id="detail.more",
            tooltip="Your count of fulfilled requirements, one more",
        ),
        Binding(
            "minus",
            "count(-1)",
            "-1",
            key_display="-",
            id="detail.less",
            tooltip="Your count of fulfilled requirements, one less",
        ),
        Binding("u", "clear_override", "Judge's", id="detail.clear", tooltip="Drop your override"),
        Binding("f", "full_image", "Image", id="detail.full", tooltip="Show the picture full-resolution"),
        Binding("j", "cursor(1)", "Down", show=False, id="detail.down"),
        Binding("k", "cursor(-1)", "Up", show=False, id="detail.up"),
        # the text scrolls from wherever the focus is (priority: the requirement list would take them)
        Binding(
            "pagedown,ctrl+f",
            "scroll_text('page', 1)",
            "Page down",
            show=False,
            priority=True,
            id="detail.page_down",
            tooltip="Scroll the rollout's text a page down",
        ),
        Binding(
            "pageup,ctrl+b",
            "scroll_text('page', -1)",
            "Page up",
            show=False,
            priority=True,
            id="detail.page_up",
            tooltip="Scroll the rollout's text a page up",
        ),
        Binding(
            "ctrl+d",
            "scroll_text('half', 1)",
            "Half page down",
            show=False,
            priority=True,
            id="detail.half_down",
            tooltip="Scroll the rollout's text half a page down",
        ),
        Binding(
            "ctrl+u",
            "scroll_text('half', -1)",
            "Half page up",
            show=False,
            priority=True,
            id="detail.half_up",
            tooltip="Scroll the rollout's text half a page up",
        ),
        Binding(
            "home,g",
            "scroll_text('end', -1)",
            "Top",
            show=False,
            priority=True,
            id="detail.top",
            tooltip="Back to the top of the rollout's text",
        ),
        Binding(
            "end,G",
            "scroll_text('end', 1)",
            "Bottom",
            show=False,
            priority=True,
            id="detail.bottom",
            tooltip="The end of the rollout's text (the SVG source)",
        ),
    ]

    def __init__(self, store: Store, rollout_id: str) -> None:
        super().__init__()
        self.store = store
        self.rollout_id = self.rollout_in_view = rollout_id  # rollout_in_view: what y and w act on
        self.record = store.get_rollout(rollout_id)
        self.changed = False

    def compose(self) -> ComposeResult:
        yield Static(id="detail-title")
        with Horizontal(id="detail-body"):
            with VerticalScroll(id="detail-left"):
                # no cursor to wait for: loaded at once; its SVG source is added once it is drawn (_picture_shown)
                yield Picture(self.store, id="detail-image", settle_s=0.0, on_shown=self._picture_shown)
                yield Static(Text("Attempts", style="bold underline"), classes="wide-only")
                yield Static(id="detail-attempts", classes="wide-only")
            with VerticalScroll(id="detail-right"):
                yield Static(id="detail-verdict")
                yield Static(
                    Text(
                        "Requirements — space: your ✓/✗ · +/-: your count · u: judge's verdict", style="bold underline"
                    )
                )
                yield OptionList(id="requirements")
                yield Static(Text("Attempts", style="bold underline"), classes="narrow-only")
                yield Static(id="detail-attempts-narrow", classes="narrow-only")
                info = RolloutInfo(full=True, show_requirements=False, show_verdict=False, id="detail-info")
                info.show_svg = False  # until the picture is on screen (see _picture_shown)
                yield info
        yield KeysFooter()

    def on_mount(self) -> None:
        self._layout(self.app.size.width)
        self._show()
        self._load_image()  # in the box the layout will give it (see _picture_box): drawn while the screen is laid out
        # the list takes the keys, but the screen opens at its top: the verdict first (scrolling the focused list into
        # view pushed it off an 80×24 screen when the requirements are many)
        self.query_one("#requirements", OptionList).focus(scroll_visible=False)

    @on(OptionList.OptionHighlighted, "#requirements")
    def _follow_highlight(self, event: OptionList.OptionHighlighted) -> None:
        """The text column follows the highlighted requirement (the list is as tall as its requirements: it does
        not scroll itself, the column does)."""
        options = event.option_list
        lines = option_lines(options, event.option_index)
        if lines is None:
            return
        top, height = lines
        column = self.query_one("#detail-right", VerticalScroll)
        column.scroll_to_region(Region(0, options.virtual_region.y + top, 1, height), animate=False, immediate=True)

    def on_resize(self, event: Resize) -> None:
        self._layout(event.size.width)
        self.call_after_refresh(self._load_image)

    def _layout(self, width: int) -> None:
        self.set_class(width < NARROW_BELOW, "-narrow")

    def _human(self) -> list[Mark] | None:
        return list(self.record.override_verdicts) if self.record.override_verdicts is not None else None

    def _show(self) -> None:
        rec = self.record
        served = f" · eval-protocol rollout {rec.ep_rollout_id}" if rec.ep_rollout_id else ""
        self.query_one("#detail-title", Static).update(
            shown_line(
                f"{rec.rollout_id} · {rec.row_id} · sample {rec.sample_index} · attempt {rec.attempt}{served}",
                style="bold",
            )
        )
        note = count_mode_note(rec)
        self.query_one("#detail-verdict", Static).update(
            verdict_text(rec) if note is None else Group(verdict_text(rec), note)
        )
        options = self.query_one("#requirements", OptionList)
        highlighted = options.highlighted
        human = self._human()
        options.clear_options()
        options.add_options(
            [Option(requirement_prompt(rec, i, human), id=f"req-{i}") for i in range(len(rec.requirements))]
        )
        if rec.requirements:
            options.highlighted = min(highlighted or 0, len(rec.requirements) - 1)
        info = self.query_one(RolloutInfo)
        if info.cost_of is None:  # the rollout's dollars, at the price table's rates
            settings = getattr(self.app, "settings", None)
            info.cost_of = RolloutPricer(self.store, price_table(getattr(settings, "prices", None)))
        info.show(rec)
        history = self.store.attempts_of(rec.rollout_id)
        self.query_one("#detail-attempts", Static).update(attempts_table(history))
        self.query_one("#detail-attempts-narrow", Static).update(attempts_table(history))

    def _picture_shown(self, event: PictureShown) -> None:
        """The picture (or why there is none) is drawn: now the SVG source, whose highlighting would have held it."""
        info = self.query_one(RolloutInfo)
        if not info.show_svg:
            info.show_svg = True
            self.call_after_refresh(lambda: info.show(self.record))  # after the frame with the picture

    def _picture_box(self) -> tuple[int, int]:
        """(columns, lines) the picture may fill: the left column's width (before the first layout, what its
        style will give it), the screen's height, less when narrow."""
        left = self.query_one("#detail-left")
        width = left.scrollable_content_region.width
        if not width and left.styles.width is not None and left.styles.width.is_cells:
            width = int(left.styles.width.value) - left.styles.padding.width
        width = width or 24
        height = max(6, self.app.size.height - 4)
        lines = max(6, min(width // 2, height if not self.has_class("-narrow") else min(12, height)))
        return max(8, width), lines

    def _load_image(self) -> None:
        """The picture as large as the left column allows: loaded once (and again when the box changes)."""
        picture = self.query_one(Picture)
        picture.fit(*self._picture_box())
        if picture.rollout_id != self.rollout_id:
            picture.show(self.rollout_id)

    # --- override -----------------------------------------------------------------------------------------
    def _save(self, *, fulfilled: int | None, verdicts: list[Mark] | None = None) -> None:
        self.store.set_override(self.rollout_id, fulfilled=fulfilled, verdicts=verdicts)
        self.record = self.store.get_rollout(self.rollout_id)
        self.changed = True
        self._show()

    def _marks(self) -> tuple[list[Mark], list[Mark]]:
        """(your marks, the judge's): yours start as the judge's, undecided where the judge only counted."""
        rec = self.record
        judge = marks_of_judge(rec.verdicts, rec.total)
        return starting_marks(rec.override_verdicts, rec.verdicts, rec.total), judge

    def _base_count(self, marks: list[Mark]) -> int | None:
        """The count your marks adjust: the one you set with +/- when you did, else the judge's."""
        rec = self.record
        if rec.overridden and rec.override_fulfilled != counted(marks, rec.fulfilled):
            return rec.override_fulfilled
        return rec.fulfilled

    def action_toggle(self) -> None:
        """Your verdict on the highlighted requirement, starting from the judge's: one mark changes."""
        index = self.query_one("#requirements", OptionList).highlighted
        if index is None:
            return
        marks, judge = self._marks()
        base = self._base_count(marks)
        new = toggled(marks, index, judge)
        if new == judge and base == self.record.fulfilled:
            self._save(fulfilled=None)  # every mark the judge's again (count mode: every decision taken back)
            return
        self._save(fulfilled=counted(new, base), verdicts=new)

    def action_count(self, delta: int) -> None:
        """Your count, one more or one less; a count your marks rule out is refused (it never drops a mark)."""
        rec = self.record
        count = max(0, min(rec.total, (rec.effective_fulfilled or 0) + delta))
        marks = rec.override_verdicts
        refused = count_refusal(marks, count) if marks is not None else None
        if refused:
            self.notify(refused, severity="warning")
        elif count == rec.fulfilled and (marks is None or marks == marks_of_judge(rec.verdicts, rec.total)):
            self._save(fulfilled=None)  # the judge's count, and no mark of yours: the judge's verdict again
        else:
            self._save(fulfilled=count, verdicts=list(marks) if marks is not None else None)

    def action_clear_override(self) -> None:
        if self.record.overridden:
            self._save(fulfilled=None)

    def action_cursor(self, step: int) -> None:
        options = self.query_one("#requirements", OptionList)
        options.action_cursor_down() if step > 0 else options.action_cursor_up()

    def action_scroll_text(self, how: str, direction: int) -> None:
        """PgDn/PgUp, ctrl+d/ctrl+u, Home/End/g/G: the text column scrolls without moving the focus to it."""
        text = self.query_one("#detail-right", VerticalScroll)
        if how == "end":
            text.scroll_end(animate=False) if direction > 0 else text.scroll_home(animate=False)
            return
        step = text.scrollable_content_region.height // (2 if how == "half" else 1)
        text.scroll_relative(y=direction * max(1, step), animate=False)

    def action_full_image(self) -> None:
        from svgagent.tui.imaging import show_full_image

        show_full_image(self, self.rollout_id)

    def action_close(self) -> None:
        self.dismiss(self.changed)
