"""The filmstrip: one prompt (dataset row) at every step of a training run — or across runs given in order — its
pictures side by side in step order (each step's samples in turn), with the score and one line of rationale under
each. As many frames as the width holds; ``h``/``l`` (or the arrows) move along, ``enter`` opens the highlighted
rollout on the rollout screen. It reads the store again every :data:`REFRESH_S` seconds, so a served training's new
steps join the strip as they arrive.

Open it from the training view (``p``: pick a prompt), from the run picker (``p``: runs A and B), or with
:func:`open_filmstrip`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from svgagent.core.analysis.filmstrip import Filmstrip, Frame, StripColumn, StripRow, filmstrip, strip_rows
from svgagent.core.scoring.errors import ConfigError
from svgagent.core.serve.training_runs import TrainingStore
from svgagent.core.store.run_store import Store
from svgagent.screens.keys_first import AppKeysFirst
from svgagent.tui.widgets.keys_footer import KeysFooter
from svgagent.tui.widgets.picture import Picture
from svgagent.tui.widgets.screen_text import shown, shown_line

REFRESH_S = 2.0
FRAME_WIDTH = 26  # cells per frame (its border included), at least
MAX_FRAME = 40
MIN_FRAMES = 3  # frames shown where they fit at their narrowest, before any is widened for a bigger picture
WHY_ROOM = 2  # lines kept for the rationale beyond its first
TEXT_LINES = 3  # lines besides the picture: step and sample, score, rationale (at least one line of it)


def score_text(frame: Frame) -> str:
    if frame.score is not None:
        return f"{frame.score:.2f}"
    if frame.status == "failed":
        return "invalid"
    return "no score" if frame.status == "scored" else frame.status


class FilmFrame(Vertical):
    """One frame: step and sample, the picture, the score, the rationale's first words."""

    DEFAULT_CSS = """
    FilmFrame { width: 26; height: 1fr; border: round $panel-lighten-2; padding: 0; }
    FilmFrame.-selected { border: heavy $accent; }
    FilmFrame > .frame-label { height: 1; color: $text-muted; }
    FilmFrame > .frame-score { height: 1; text-style: bold; }
    FilmFrame > .frame-why { height: 1fr; min-height: 1; color: $text-muted; }
    FilmFrame > Picture { height: auto; }
    """

    def __init__(self, store: Store) -> None:
        super().__init__()
        self.frame: Frame | None = None
        self.label = Static("", classes="frame-label", markup=False)
        self.picture = Picture(store)
        self.score = Static("", classes="frame-score", markup=False)
        self.why = Static("", classes="frame-why", markup=False)
        self._pending: tuple[Frame | None, str, int, int] | None = None  # what to show once mounted
        self._ready = False  # mounted (is_mounted turns true only after the Mount handlers ran)

    def compose(self) -> ComposeResult:
        yield self.label
        yield self.picture
        yield self.score
        yield self.why

    def on_mount(self) -> None:
        self._ready = True
        if self._pending is not None:
            self.show(*self._pending)

    def show(self, frame: Frame | None, label: str, cols: int, lines: int) -> None:
        """Show ``frame`` (None: hide this slot), its picture in at most ``cols`` × ``lines`` cells."""
        self.frame = frame
        if not self._ready:
            self._pending = (frame, label, cols, lines)
            return
        self._pending = None
        picture = self.picture
        picture.fit(cols, lines)
        if frame is None:
            self.display = False
            return
        self.display = True
        self.label.update(shown_line(f"{label} · sample {frame.sample_index}"))
        score = score_text(frame)
        style = "green" if frame.score is not None and frame.score >= 0.5 else "red" if score == "invalid" else ""
        self.score.update(Text(score, style=style))
        self.why.update(shown(frame.line))  # wrapped in what the picture leaves
        if frame.has_picture:
            picture.show(frame.rollout_id)
        else:
            picture.show(None)
            picture.note("no picture")


class FilmstripScreen(AppKeysFirst, Screen[None]):
    SCOPED_CSS = False
    DEFAULT_CSS = """
    FilmstripScreen #film-header { height: auto; padding: 0 1; background: $panel; }
    FilmstripScreen #film-strip { height: 1fr; }
    FilmstripScreen #film-hint { height: 1; padding: 0 1; color: $text-muted; }
    """
    BINDINGS = [
        Binding("escape,q", "close", "Back", id="filmstrip.back"),
        Binding("h,left", "move(-1)", "Earlier", id="filmstrip.earlier", tooltip="The frame before (an earlier step)"),
        Binding("l,right", "move(1)", "Later", id="filmstrip.later", tooltip="The frame after (a later step)"),
        Binding("enter", "open", "Open", id="filmstrip.open", tooltip="Open the highlighted rollout"),
        Binding("home", "ends(0)", "First", id="filmstrip.first", show=False, tooltip="The first frame"),
        Binding("end", "ends(1)", "Last", id="filmstrip.last", show=False, tooltip="The last frame"),
        Binding("r", "refresh", "Refresh", id="filmstrip.refresh", tooltip="Read the store again now"),
    ]

    def __init__(
        self,
        store: Store,
        columns: Sequence[StripColumn],
        row: str,
        *,
        title: str = "",
        training_id: str | None = None,
    ) -> None:
        """``columns``: the steps (runs) in order; with ``training_id`` they are that training run's steps, read
        again on every refresh."""
        super().__init__()
        self.store = store
        self.columns = list(columns)
        self.training_id = training_id
        self.row = row
        self.title_text = title
        self.strip: Filmstrip | None = None
        self.error = ""
        self.selected = 0
        self.first_shown = 0  # the first frame shown

    def compose(self) -> ComposeResult:
        yield Static(id="film-header")
        yield Horizontal(id="film-strip")
        yield Static(id="film-hint")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.action_refresh()
        self.set_interval(REFRESH_S, self.action_refresh)

    # --- reading ----------------------------------------------------------------------------------------------
    def action_refresh(self) -> None:
        self._load()

    @work(thread=True, exclusive=True, group="filmstrip-read")
    def _load(self) -> None:
        with self.store.reader() as reader:
            columns = self.columns
            if self.training_id is not None:
                steps = TrainingStore(reader).step_refs(self.training_id)
                columns = [StripColumn(f"step {s.step}", s.run_id, s.step) for s in steps]
            try:
                strip, error = filmstrip(reader, columns, self.row), ""
            except ConfigError as err:
                strip, error = None, str(err)
        self.app.call_from_thread(self._apply, strip, error)

    def _apply(self, strip: Filmstrip | None, error: str) -> None:
        if strip == self.strip and error == self.error:
            return
        on_last = self.strip is not None and 0 < self.selected == len(self.strip.frames) - 1
        self.strip, self.error = strip, error
        if on_last and strip is not None:  # on the newest frame: stay on it as new steps arrive
            self.selected = len(strip.frames) - 1
        self._clamp()
        self._draw()

    # --- drawing ----------------------------------------------------------------------------------------------
    @property
    def frames(self) -> tuple[Frame, ...]:
        return self.strip.frames if self.strip is not None else ()

    def _fit(self) -> tuple[int, int, int]:
        """(frames that fit, a frame's width, a picture's lines) at the screen's size: frames of at least
        :data:`FRAME_WIDTH` cells, wider (up to :data:`MAX_FRAME`) where the height leaves room for a bigger
        picture (a square picture is twice as many cells wide as it is lines tall) and :data:`MIN_FRAMES` still
        fit."""
        width, height = self.size.width or 80, self.size.height or 24
        header = self.query_one("#film-header").outer_size.height or 2
        lines = max(2, height - header - 1 - 1 - 2 - TEXT_LINES - WHY_ROOM)  # footer, hint, border, text
        ideal = min(max(FRAME_WIDTH, 2 * lines + 2), MAX_FRAME)
        count = max(1, width // ideal, min(MIN_FRAMES, width // FRAME_WIDTH))
        return count, min(width // count, MAX_FRAME), lines

    def _clamp(self) -> None:
        count, _, _ = self._fit()
        total = len(self.frames)
        self.selected = min(max(self.selected, 0), max(total - 1, 0))
        if self.selected < self.first_shown:
            self.first_shown = self.selected
        elif self.selected >= self.first_shown + count:
            self.first_shown = self.selected - count + 1
        self.first_shown = min(max(self.first_shown, 0), max(total - count, 0))

    def on_resize(self) -> None:
        self._clamp()
        self._draw()

    def _draw(self) -> None:
        header = self.query_one("#film-header", Static)
        hint = self.query_one("#film-hint", Static)
        strip = self.strip
        who = self.title_text or "Filmstrip"
        if strip is None:
            header.update(shown(f"{who} · row {self.row}\n{self.error or 'reading…'}"))
            hint.update("")
            self._slots(0)
            return
        header.update(
            Text.assemble(
                shown_line(f"{who} · {strip.row_id} · "),
                shown_line(strip.prompt[:300]),
                "\n",
                f"{len(strip.columns)} steps · {len(strip.frames)} pictures",
            )
        )
        count, frame_width, lines = self._fit()
        slots = self._slots(count)
        for i, slot in enumerate(slots):
            index = self.first_shown + i
            frame = self.frames[index] if index < len(self.frames) else None
            label = strip.columns[frame.column].label if frame is not None else ""
            slot.styles.width = frame_width
            slot.set_class(index == self.selected, "-selected")
            slot.show(frame, label, frame_width - 2, lines)
        shown_to = min(self.first_shown + count, len(self.frames))
        hint.update(
            f"frames {self.first_shown + 1}–{shown_to} of {len(self.frames)}"
            + (" · h/l: earlier/later · enter: open" if self.frames else "")
        )

    def _slots(self, count: int) -> list[FilmFrame]:
        holder = self.query_one("#film-strip", Horizontal)
        slots = list(holder.query(FilmFrame))
        if len(slots) > count:
            for extra in slots[count:]:
                extra.remove()
            slots = slots[:count]
        while len(slots) < count:
            slot = FilmFrame(self.store)
            holder.mount(slot)
            slots.append(slot)
        return slots

    # --- actions ----------------------------------------------------------------------------------------------
    def action_move(self, delta: int) -> None:
        if not self.frames:
            return
        self.selected += delta
        self._clamp()
        self._draw()

    def action_ends(self, last: int) -> None:
        self.selected = len(self.frames) - 1 if last else 0
        self._clamp()
        self._draw()

    def selected_frame(self) -> Frame | None:
        return self.frames[self.selected] if 0 <= self.selected < len(self.frames) else None

    def action_open(self) -> None:
        from svgagent.screens.rollout_detail import RolloutDetail

        frame = self.selected_frame()
        if frame is None:
            return
        self.app.push_screen(RolloutDetail(self.store, frame.rollout_id))

    def action_close(self) -> None:
        self.app.pop_screen()


class RowPicker(ModalScreen[str | None]):
    """Pick the prompt (dataset row) a filmstrip follows: every row of the runs, its id, pictures and prompt."""

    DEFAULT_CSS = """
    RowPicker { align: center middle; }
    RowPicker > #rows-box {
        width: 100; max-width: 95%; height: auto; max-height: 90%; border: round $accent; background: $surface;
        padding: 0 1;
    }
    RowPicker #rows-options { height: auto; max-height: 20; border: none; padding: 0; }
    RowPicker #rows-help { color: $text-muted; }
    """
    BINDINGS = [Binding("escape,q", "cancel", "Cancel", id="rows.cancel")]

    def __init__(self, rows: Sequence[StripRow], *, current: str | None = None) -> None:
        super().__init__()
        self.rows = list(rows)
        self.current = current

    def compose(self) -> ComposeResult:
        width = max((len(r.row_id[:24]) for r in self.rows), default=0)
        options = [
            Option(
                Text.assemble(
                    shown_line(r.row_id[:24].ljust(width), "bold"),
                    f"  {r.rollouts:>3} pictures  ",
                    shown_line(r.prompt[:200]),
                ),
                id=f"row-{i}",
            )
            for i, r in enumerate(self.rows)
        ]
        with Vertical(id="rows-box"):
            yield Static(Text("Filmstrip of which prompt?", style="bold"))
            yield OptionList(*options, id="rows-options")
            yield Static("enter: its pictures at every step · escape: cancel", id="rows-help")
        yield KeysFooter()

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        ids = [r.row_id for r in self.rows]
        options.highlighted = ids.index(self.current) if self.current in ids else 0 if ids else None
        options.focus()

    @on(OptionList.OptionSelected, "#rows-options")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(self.rows[event.option_index].row_id)

    def action_cancel(self) -> None:
        self.dismiss(None)


def open_filmstrip(
    app: Any,
    store: Store,
    columns: Sequence[StripColumn],
    *,
    title: str = "",
    current: str = "",
    training_id: str | None = None,
) -> None:
    """Ask which prompt (the rows of ``columns``' runs), then show its filmstrip (see :class:`FilmstripScreen`)."""
    with store.reader() as reader:
        rows = strip_rows(reader, [c.run_id for c in columns])
    if not rows:
        app.notify("no rollouts yet: nothing to follow", title="Filmstrip", severity="warning")
        return

    def chosen(row: str | None) -> None:
        if row is not None:
            app.push_screen(FilmstripScreen(store, columns, row, title=title, training_id=training_id))

    app.push_screen(RowPicker(rows, current=current or None), chosen)
