"""Preview of the highlighted rollout: the PNG the judge saw, as large as the pane allows, and the written details.

The picture (a :class:`~svgagent.tui.widgets.picture.Picture`, loaded in a thread) is sized to the pane — its
width *and* height. When the pane is wide enough to keep a readable column of text beside a picture that fills
the pane's height (80×24: a 20-line picture and 40 columns of rationale), the text goes beside it; otherwise the
picture goes on top, as wide as the pane, and the text below it, scrolling with it.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll

from svgagent.core.store import Store

from svgagent.tui.widgets.picture import Picture
from svgagent.tui.widgets.rollout_cells import prompt_topic, sample_label
from svgagent.tui.widgets.rollout_info import RolloutInfo
from svgagent.tui.widgets.text_box import OneLayout, TextBox

BESIDE_MIN_TEXT = 34  # columns of text the rationale needs beside the picture
GUTTER = 2  # between the picture and the text beside it
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


class PreviewScroll(OneLayout, VerticalScroll):
    """The preview's scrolling parts (the body; the text beside the picture): a new rollout's height is one
    layout of the screen, not two."""


class Preview(Vertical):
    """Shows one rollout of ``store``: ``show_rollout(id)`` (None clears it); ``reload()`` re-reads it."""

    DEFAULT_CSS = """
    Preview { height: 1fr; padding: 0 1; }
    Preview > #preview-title { height: 1; text-style: bold; }
    Preview > #preview-body { height: 1fr; scrollbar-size-vertical: 1; }
    Preview.-beside > #preview-body { layout: horizontal; overflow-y: hidden; }
    Preview.-beside #preview-image { margin-right: 2; }
    Preview.-beside #preview-text { width: 1fr; height: 1fr; scrollbar-size-vertical: 1; }
    Preview.-stacked #preview-image { margin-bottom: 1; }
    Preview.-stacked #preview-text { height: auto; overflow-y: hidden; }
    """

    def __init__(self, store: Store, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="-stacked")
        self.store = store
        self.picture = Picture(store, id="preview-image", on_shown=self._shown)

    def compose(self) -> ComposeResult:
        yield TextBox("select a rollout to see its picture", id="preview-title")
        with PreviewScroll(id="preview-body"):
            yield self.picture
            with PreviewScroll(id="preview-text"):
                yield RolloutInfo(id="preview-info")

    @property
    def beside(self) -> bool:
        return self.has_class("-beside")

    @property
    def scroller(self) -> VerticalScroll:
        """What the scroll keys move: the text beside the picture, or the picture and text below each other."""
        return self.query_one("#preview-text" if self.beside else "#preview-body", VerticalScroll)

    def show_rollout(self, rollout_id: str | None) -> None:
        if rollout_id is None:
            self.picture.show(None)
            self.query_one("#preview-title", TextBox).show("select a rollout to see its picture")
            self.query_one(RolloutInfo).show(None)
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
        self.picture.fit(cols, lines)

    def on_resize(self) -> None:
        self._fit()

    def _shown(self, message: Picture.Shown) -> None:
        """The picture was drawn (called where it is: the text changes in the same frame)."""
        rec = message.record
        title = self.query_one("#preview-title", TextBox)
        if rec is None:
            title.show(Text(message.error, style="red"))
            self.query_one(RolloutInfo).show(None)
            return
        title.show(Text.assemble((prompt_topic(rec.prompt), "bold"),
                                   (f" · {rec.row_id} · sample {sample_label(rec)}", "dim")))
        self.query_one(RolloutInfo).show(rec)
