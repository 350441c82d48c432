"""One picture widget for every screen that shows a rollout's PNG (the preview pane, both sides of the compare
screen, the rollout screen): half blocks sized to the box it is given, loaded in a thread worker.

``show(rollout_id)`` reads the rollout (heavy: its PNG) and draws it in a thread — after a short settle, so a
cursor moving over many rows reads only where it stops — and posts :class:`Picture.Shown` with the record (or an
error) for the parent to fill in its text. A newer request supersedes an older one; changing the box (``fit``)
draws the same rollout again at the new size.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from rich.text import Text
from textual import work
from textual.message import Message
from textual.widgets import Static
from textual.worker import get_current_worker

from svgagent.core.records import RolloutRecord
from svgagent.core.store import Store

from svgagent.tui.imaging import load_rollout_picture

SETTLE_S = 0.05


@dataclass(frozen=True, slots=True)
class _Request:
    rollout_id: str
    cols: int
    lines: int


class Picture(Static):
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

    def __init__(self, store: Store, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.store = store
        self.rollout_id: str | None = None
        self.record: RolloutRecord | None = None
        self.image_text: Text | None = None
        self.cols, self.lines = 24, 12
        self._pending: _Request | None = None

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
            self.update("")
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
        self.update(Text(text, style=style))

    @work(thread=True, exclusive=True, group="picture", exit_on_error=False)
    def _load(self, request: _Request) -> None:
        worker = get_current_worker()
        time.sleep(SETTLE_S)  # debounce: a newer request (cursor still moving) cancels this one meanwhile
        if worker.is_cancelled:
            return
        record, image, error = load_rollout_picture(self.store, request.rollout_id, request.cols, request.lines,
                                                    lambda: worker.is_cancelled)
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
            self.update(image)
        elif record is None:
            self.note(error, "red")
        else:
            why = error or (f"no image yet ({record.status.value})" if not record.status.terminal else "no image")
            self.note(why)
        self.post_message(self.Shown(self, record, image, error))
