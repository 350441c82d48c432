"""One picture widget for every screen that shows a rollout's PNG (the preview pane, both sides of the compare
screen, the rollout screen): half blocks sized to the box it is given, loaded in a thread worker.

``show(rollout_id)`` reads the rollout (heavy: its PNG) and draws it in a thread — after a short settle, so a
cursor moving over many rows reads only where it stops — and posts :class:`Picture.Shown` with the record (or an
error) for the parent to fill in its text. A newer request supersedes an older one; changing the box (``fit``)
draws the same rollout again at the new size.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from rich.cells import cell_len
from rich.text import Text
from textual import work
from textual.message import Message
from textual.widgets import Static
from textual.worker import get_current_worker

from svgagent.core.records import RolloutRecord
from svgagent.core.store import Store

from svgagent.tui.imaging import load_rollout_picture
from svgagent.tui.widgets.text_box import OneLayout, signature

SETTLE_S = 0.05


def picture_shape(image: Text) -> tuple[int, int]:
    """(columns, lines) of a drawn picture (half blocks: one cell a character, never wrapped)."""
    rows = image.plain.split("\n")
    return max(cell_len(row) for row in rows), len(rows)


@dataclass(frozen=True, slots=True)
class _Request:
    rollout_id: str
    cols: int
    lines: int


class Picture(OneLayout, Static):
    """A rollout's picture in at most ``cols`` × ``lines`` cells (see :meth:`fit`)."""

    DEFAULT_CSS = """
    Picture { width: auto; height: auto; }
    """

    class Shown(Message):
        """The rollout was read: ``record`` (None: it could not be), ``image`` drawn or not, and why not."""

        def __init__(self, picture: Picture, record: RolloutRecord | None, image: Text | None, error: str) -> None:
            super().__init__()
            self.picture, self.record, self.image, self.error = picture, record, image, error

        @property
        def control(self) -> Picture:
            return self.picture

    def __init__(self, store: Store, *, id: str | None = None, classes: str | None = None,
                 on_shown: Callable[[Picture.Shown], None] | None = None) -> None:
        """``on_shown``: called with :class:`Shown` right where the picture is drawn, instead of posting it — the
        parent's text about the rollout and its picture then change in the same frame (one layout, not two)."""
        super().__init__(id=id, classes=classes)
        self.store = store
        self.on_shown = on_shown
        self.rollout_id: str | None = None
        self.record: RolloutRecord | None = None
        self.image_text: Text | None = None
        self.cols, self.lines = 24, 12
        self._pending: _Request | None = None
        self._drawn: tuple[_Request, bytes, Text] | None = None  # what image_text is the drawing of
        self._on_screen: object = ""  # what the widget shows (a picture's Text, a note)
        self._shape: tuple[int, int] | None = None  # (columns, lines) of the picture on screen; None: a note

    def fit(self, cols: int, lines: int) -> None:
        """The box the picture may fill; drawn again when it changed."""
        cols, lines = max(4, cols), max(2, lines)
        if (cols, lines) != (self.cols, self.lines):
            self.cols, self.lines = cols, lines
            self.reload()

    def show(self, rollout_id: str | None, *, reread: bool = False) -> None:
        """Show ``rollout_id`` (None: nothing); ``reread``: read it again even if it is the one shown."""
        if rollout_id is None:
            self.rollout_id, self.record, self.image_text, self._pending = None, None, None, None
            self._draw(Text(""))
            return
        if reread:
            self._pending = None
        self.rollout_id = rollout_id
        self.reload()

    def reload(self) -> None:
        if self.rollout_id is None:
            return
        request = _Request(self.rollout_id, self.cols, self.lines)
        if request == self._pending:
            return
        self._pending = request
        self._load(request)

    def note(self, text: str, style: str = "dim italic") -> None:
        """A line instead of a picture (nothing to draw yet, or why it cannot be)."""
        self.image_text = None
        self._draw(Text(text, style=style))

    def _draw(self, content: Text, shape: tuple[int, int] | None = None) -> None:
        """Show ``content`` (a picture of ``shape``, or a note); the screen is laid out again unless it is the
        same, or a picture of the same size as the one it replaces (the cursor moving between rollouts)."""
        if content is self._on_screen or (
                shape is None and self._shape is None and signature(content) == signature(self._on_screen)):
            return
        layout = shape is None or shape != self._shape
        self._on_screen, self._shape = content, shape
        self.update(content, layout=layout)

    @work(thread=True, exclusive=True, group="picture", exit_on_error=False)
    def _load(self, request: _Request) -> None:
        worker = get_current_worker()
        time.sleep(SETTLE_S)  # debounce: a newer request (cursor still moving) cancels this one meanwhile
        if worker.is_cancelled:
            return
        drawn = self._drawn
        record, image, error = load_rollout_picture(self.store, request.rollout_id, request.cols, request.lines,
                                                    lambda: worker.is_cancelled,
                                                    drawn[1:] if drawn is not None and drawn[0] == request else None)
        if not worker.is_cancelled or record is None:
            self.post_message(self._Loaded(request, record, image, error))

    class _Loaded(Message):
        def __init__(self, request: _Request, record: RolloutRecord | None, image: Text | None, error: str) -> None:
            super().__init__()
            self.request, self.record, self.image, self.error = request, record, image, error

    def on_picture__loaded(self, message: _Loaded) -> None:
        message.stop()
        request, record, image, error = message.request, message.record, message.image, message.error
        if request != self._pending:
            return
        self.record, self.image_text = record, image
        if image is not None:
            assert record is not None and record.png is not None
            self._drawn = (request, record.png, image)
            self._draw(image, picture_shape(image))
        elif record is None:
            self.note(error, "red")
        else:
            why = error or (f"no image yet ({record.status.value})" if not record.status.terminal else "no image")
            self.note(why)
        shown = self.Shown(self, record, image, error)
        if self.on_shown is not None:
            self.on_shown(shown)
        else:
            self.post_message(shown)
