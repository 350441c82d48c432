"""The rollout screen: the picture at full pane size, every written detail, the attempt history, and the human
override — a ✓/✗ per requirement or a count — stored next to the judge's verdict (both are kept)."""

from __future__ import annotations

from dataclasses import dataclass

from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.events import Resize
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from svgagent.core.records import RolloutRecord
from svgagent.core.store import Store

from svgagent.tui.imaging import png_to_text
from svgagent.tui.widgets.rollout_cells import STATUS_ICONS, format_score
from svgagent.tui.widgets.rollout_info import RolloutInfo, judge_marks, verdict_text
from svgagent.screens.keys_first import AppKeysFirst

NARROW_BELOW = 110


def requirement_prompt(rec: RolloutRecord, index: int, human: list[bool] | None) -> Text:
    """One option line: judge mark (per-requirement mode), your mark (when you overrode), the requirement."""
    marks = judge_marks(rec)
    text = Text()
    judge = marks.get(index + 1)
    if marks:
        text.append("judge " + ("✓" if judge and judge[0] else "✗" if judge else "·") + "  ",
                    style="green" if judge and judge[0] else "red" if judge else "dim")
    if human is not None:
        mine = human[index]
        text.append("you " + ("✓" if mine else "✗") + "  ", style="bold green" if mine else "bold red")
    text.append(f"{index + 1}. {rec.requirements[index]}")
    return text


def attempts_table(attempts: list[RolloutRecord]) -> Table:
    table = Table("#", "status", "score", "fulfilled", "note", box=None, pad_edge=False, expand=True)
    for a in attempts:
        note = (a.reason or a.error or "")[:60]
        table.add_row(
            f"{a.attempt}{' ◀' if a.is_current else ''}",
            f"{STATUS_ICONS[a.status]} {a.status.value}",
            format_score(a),
            f"{a.effective_fulfilled if a.effective_fulfilled is not None else '–'}/{a.total}",
            note,
        )
    return table


@dataclass(frozen=True, slots=True)
class _ImageRequest:
    cols: int
    lines: int


class RolloutDetail(AppKeysFirst, Screen[bool]):
    """Dismissed with True when the override changed."""

    BINDINGS = [
        Binding("escape,q", "close", "Back", id="detail.back"),
        Binding("space,x", "toggle", "✓/✗", key_display="space", id="detail.toggle",
                tooltip="Your verdict on the highlighted requirement"),
        Binding("plus,equals_sign", "count(1)", "+1", key_display="+", id="detail.more",
                tooltip="Your count of fulfilled requirements, one more"),
        Binding("minus", "count(-1)", "-1", key_display="-", id="detail.less",
                tooltip="Your count of fulfilled requirements, one less"),
        Binding("u", "clear_override", "Judge's", id="detail.clear", tooltip="Drop your override"),
        Binding("f", "full_image", "Image", id="detail.full", tooltip="Show the picture full-resolution"),
        Binding("j", "cursor(1)", "Down", show=False, id="detail.down"),
        Binding("k", "cursor(-1)", "Up", show=False, id="detail.up"),
    ]

    class ImageReady(Message):
        def __init__(self, request: _ImageRequest, image: Text | None) -> None:
            super().__init__()
            self.request, self.image = request, image

    def __init__(self, store: Store, rollout_id: str) -> None:
        super().__init__()
        self.store = store
        self.rollout_id = rollout_id
        self.record = store.get_rollout(rollout_id)
        self.changed = False
        self._image_request: _ImageRequest | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="detail-title")
        with Horizontal(id="detail-body"):
            with VerticalScroll(id="detail-left"):
                yield Static(id="detail-image")
                yield Static(Text("Attempts", style="bold underline"), classes="wide-only")
                yield Static(id="detail-attempts", classes="wide-only")
            with VerticalScroll(id="detail-right"):
                yield Static(id="detail-verdict")
                yield Static(Text("Requirements — space: your ✓/✗ · +/-: your count · u: judge's verdict",
                                  style="bold underline"))
                yield OptionList(id="requirements")
                yield Static(Text("Attempts", style="bold underline"), classes="narrow-only")
                yield Static(id="detail-attempts-narrow", classes="narrow-only")
                yield RolloutInfo(full=True, show_requirements=False, show_verdict=False, id="detail-info")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self._layout(self.app.size.width)
        self._show()
        self.query_one("#requirements", OptionList).focus()

    def on_resize(self, event: Resize) -> None:
        self._layout(event.size.width)
        self.call_after_refresh(self._load_image)

    def _layout(self, width: int) -> None:
        self.set_class(width < NARROW_BELOW, "-narrow")

    def _human(self) -> list[bool] | None:
        return list(self.record.override_verdicts) if self.record.override_verdicts is not None else None

    def _show(self) -> None:
        rec = self.record
        self.query_one("#detail-title", Static).update(
            Text(f"{rec.rollout_id} · {rec.row_id} · sample {rec.sample_index} · attempt {rec.attempt}",
                 style="bold"))
        self.query_one("#detail-verdict", Static).update(verdict_text(rec))
        options = self.query_one("#requirements", OptionList)
        highlighted = options.highlighted
        human = self._human()
        options.clear_options()
        options.add_options(
            [Option(requirement_prompt(rec, i, human), id=f"req-{i}") for i in range(len(rec.requirements))]
        )
        if rec.requirements:
            options.highlighted = min(highlighted or 0, len(rec.requirements) - 1)
        self.query_one(RolloutInfo).show(rec)
        history = self.store.attempts_of(rec.rollout_id)
        self.query_one("#detail-attempts", Static).update(attempts_table(history))
        self.query_one("#detail-attempts-narrow", Static).update(attempts_table(history))
        self._load_image()

    def _load_image(self) -> None:
        if not self.record.png:
            self.query_one("#detail-image", Static).update(Text("no image", style="dim italic"))
            return
        left = self.query_one("#detail-left")
        width = left.scrollable_content_region.width or 24
        height = max(6, self.app.size.height - 4)
        lines = max(6, min(width // 2, height if not self.has_class("-narrow") else min(12, height)))
        request = _ImageRequest(max(8, width), lines)
        if request == self._image_request:
            return
        self._image_request = request
        self._decode(request, self.record.png)

    @work(thread=True, exclusive=True, group="detail-image", exit_on_error=False)
    def _decode(self, request: _ImageRequest, png: bytes) -> None:
        try:
            image = png_to_text(png, request.cols, request.lines)
        except Exception:  # noqa: BLE001 - shown as "cannot draw"
            image = None
        if not get_current_worker().is_cancelled:
            self.post_message(self.ImageReady(request, image))

    def on_rollout_detail_image_ready(self, message: ImageReady) -> None:
        if message.request == self._image_request:
            self.query_one("#detail-image", Static).update(
                message.image if message.image is not None else Text("cannot draw the image", style="red"))

    # --- override -----------------------------------------------------------------------------------------
    def _save(self, *, fulfilled: int | None, verdicts: list[bool] | None = None) -> None:
        self.store.set_override(self.rollout_id, fulfilled=fulfilled, verdicts=verdicts)
        self.record = self.store.get_rollout(self.rollout_id)
        self.changed = True
        self._show()

    def action_toggle(self) -> None:
        index = self.query_one("#requirements", OptionList).highlighted
        if index is None:
            return
        human = self._human()
        if human is None:
            marks = judge_marks(self.record)
            human = [marks.get(i + 1, (False, ""))[0] for i in range(self.record.total)]
        human[index] = not human[index]
        self._save(fulfilled=None, verdicts=human)

    def action_count(self, delta: int) -> None:
        base = self.record.effective_fulfilled or 0
        self._save(fulfilled=max(0, min(self.record.total, base + delta)))

    def action_clear_override(self) -> None:
        if self.record.overridden:
            self._save(fulfilled=None)

    def action_cursor(self, step: int) -> None:
        options = self.query_one("#requirements", OptionList)
        options.action_cursor_down() if step > 0 else options.action_cursor_up()

    def action_full_image(self) -> None:
        from svgagent.tui.imaging import show_full_image

        show_full_image(self, self.rollout_id)

    def action_close(self) -> None:
        self.dismiss(self.changed)

