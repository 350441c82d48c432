"""Preview of the highlighted rollout: the PNG the judge saw, as large as the pane allows, and the written details.

The picture (loaded in a thread) is sized to the pane — its width *and* height. When the pane is wide enough to
keep a readable column of text beside a picture that fills the pane's height (80×24: a 20-line picture and 40
columns of rationale), the text goes beside it; otherwise the picture goes on top, as wide as the pane, and the
text below it, scrolling with it. Both are drawn by one widget the pane's size
(:class:`~svgagent.tui.widgets.preview_body.PreviewBody`): moving the cursor to another rollout repaints the
preview and never lays the screen out again.
"""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical

from svgagent.core.config.prices import RolloutPricer, price_table
from svgagent.core.store.run_store import Store
from svgagent.core.store.typed_rows import RolloutRecord
from svgagent.tui.widgets.picture import PictureShown
from svgagent.tui.widgets.preview_body import GUTTER, PreviewBody
from svgagent.tui.widgets.rollout_cells import prompt_topic, sample_label
from svgagent.tui.widgets.rollout_info import info_sections
from svgagent.tui.widgets.screen_text import escaped, shown_line
from svgagent.tui.widgets.text_box import TextBox

BESIDE_MIN_TEXT = 34  # columns of text the rationale needs beside the picture
TEXT_IN_SIGHT = 3  # lines of text under a picture above it, so the pane shows there is more


def image_box(width: int, height: int) -> tuple[bool, int, int]:
    """(text beside?, columns, lines) of the picture in a ``width`` × ``height`` pane (below the title). A square
    picture of ``lines`` lines is ``2 × lines`` columns wide (half blocks: two pixels a cell). Below each other,
    the picture takes the pane's width and leaves the first lines of text in sight."""
    lines = max(4, height)
    if width - 2 * lines - GUTTER >= BESIDE_MIN_TEXT:
        return True, 2 * lines, lines
    cols = max(8, width)
    return False, cols, max(4, min(cols // 2, height - TEXT_IN_SIGHT))


class Preview(Vertical):
    """Shows one rollout of ``store``: ``show_rollout(id)`` (None clears it); ``reload()`` re-reads it."""

    DEFAULT_CSS = """
    Preview { height: 1fr; padding: 0 1; }
    Preview > #preview-title { height: 1; text-style: bold; }
    """

    def __init__(self, store: Store, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="-stacked")
        self.store = store
        self._pricer: RolloutPricer | None = None  # a rollout's dollars (made at the first rollout shown)
        self.picture = PreviewBody(store, id="preview-body", on_shown=self._shown, sections_of=self._sections_of)

    def compose(self) -> ComposeResult:
        yield TextBox("select a rollout to see its picture", id="preview-title")
        yield self.picture

    @property
    def beside(self) -> bool:
        return self.picture.beside

    @property
    def scroller(self) -> PreviewBody:
        """What the scroll keys move: the text (and the picture above it when stacked)."""
        return self.picture

    def show_rollout(self, rollout_id: str | None) -> None:
        if rollout_id is None:
            self.picture.show(None)
            self.query_one("#preview-title", TextBox).show("select a rollout to see its picture")
            self.picture.show_text([])
            return
        self._fit()
        self.picture.show(rollout_id)

    def reload(self) -> None:
        """Read the shown rollout again (it changed: a live update, an override)."""
        if self.picture.rollout_id is not None:
            self._fit()
            self.picture.show(self.picture.rollout_id, reread=True)

    def _fit(self) -> None:
        width = self.content_size.width
        height = self.content_size.height - 1  # the title
        if width <= 0 or height <= 0:
            return
        beside, cols, lines = image_box(width, height)
        self.set_class(beside, "-beside")
        self.set_class(not beside, "-stacked")
        self.picture.set_beside(beside)
        self.picture.fit(cols, lines)

    def on_resize(self) -> None:
        self._fit()

    def _shown(self, message: PictureShown) -> None:
        """The picture was drawn (called where it is: the text changes in the same frame)."""
        rec = message.record
        title = next(iter(self.query("#preview-title").results(TextBox)), None)
        if title is None:  # the app is closing: Textual removed the title before the picture's queue was done
            return
        if rec is None:
            title.show(shown_line(message.error, style="red"))
            self.picture.show_text([])
            return
        title.show(
            escaped(
                Text.assemble(
                    (prompt_topic(rec.prompt), "bold"), (f" · {rec.row_id} · sample {sample_label(rec)}", "dim")
                ),
                one_line=True,
            )
        )
        self.picture.show_text(self._sections_of(rec))

    def _sections_of(self, rec: RolloutRecord) -> list[RenderableType]:
        """The text under or beside the picture (also called in the picture's thread worker: it reads the store
        only for the run's models, once per run)."""
        if self._pricer is None:
            settings = getattr(self.app, "settings", None)
            self._pricer = RolloutPricer(self.store, price_table(getattr(settings, "prices", None)))
        sections = info_sections(rec, cost=self._pricer(rec))
        return [section for section in sections.values() if section is not None]
