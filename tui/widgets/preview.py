"""Preview of the highlighted rollout: the PNG the judge saw as half blocks, then the written details.

Loading (a heavy store read) and decoding/scaling the image happen in a thread worker; the worker only posts a
``Loaded`` message and the widget updates itself on the main thread. A newer request supersedes an older one.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Static
from textual.worker import get_current_worker

from svgagent.core.records import RolloutRecord
from svgagent.core.store import Store

from svgagent.tui.imaging import load_rollout_picture
from svgagent.tui.widgets.rollout_cells import short_id
from svgagent.tui.widgets.rollout_info import RolloutInfo

SETTLE_S = 0.05


def image_box(width: int, height: int, *, share: float = 0.6) -> tuple[int, int]:
    """Columns and lines the picture may use in a pane of ``width`` × ``height`` cells (text gets the rest)."""
    cols = max(4, width)
    lines = max(4, min(int(height * share), cols // 2))
    return cols, lines


@dataclass(frozen=True, slots=True)
class _Request:
    rollout_id: str
    cols: int
    lines: int


class Preview(VerticalScroll):
    """Shows one rollout of ``store``: ``show_rollout(id)`` (None clears it); ``reload()`` re-reads it."""

    DEFAULT_CSS = """
    Preview { height: 1fr; padding: 0 1; }
    Preview > #preview-image { height: auto; width: auto; margin-bottom: 1; }
    Preview > #preview-title { height: auto; text-style: bold; }
    """

    class Loaded(Message):
        def __init__(self, request: _Request, record: RolloutRecord | None, image: Text | None, error: str) -> None:
            super().__init__()
            self.request, self.record, self.image, self.error = request, record, image, error

    def __init__(self, store: Store, *, id: str | None = None, image_share: float = 0.6) -> None:
        super().__init__(id=id)
        self.store = store
        self.image_share = image_share
        self.rollout_id: str | None = None
        self.record: RolloutRecord | None = None
        self.image_text: Text | None = None
        self._pending: _Request | None = None

    def compose(self) -> ComposeResult:
        yield Static("select a rollout to see its picture", id="preview-title", markup=False)
        yield Static(id="preview-image")
        yield RolloutInfo(id="preview-info")

    def show_rollout(self, rollout_id: str | None) -> None:
        self.rollout_id = rollout_id
        if rollout_id is None:
            self._pending = None
            self.record, self.image_text = None, None
            self.query_one("#preview-title", Static).update("select a rollout to see its picture")
            self.query_one("#preview-image", Static).update("")
            self.query_one(RolloutInfo).show(None)
            return
        self.reload()

    def reload(self) -> None:
        if self.rollout_id is None:
            return
        width = self.scrollable_content_region.width or self.size.width or 40
        height = self.size.height or 20
        cols, lines = image_box(width, height, share=self.image_share)
        request = _Request(self.rollout_id, cols, lines)
        self._pending = request
        self._load(request)

    @work(thread=True, exclusive=True, group="preview", exit_on_error=False)
    def _load(self, request: _Request) -> None:
        worker = get_current_worker()
        time.sleep(SETTLE_S)  # debounce: a newer request (cursor still moving) cancels this one meanwhile
        if worker.is_cancelled:
            return
        record, image, error = load_rollout_picture(
            self.store, request.rollout_id, request.cols, request.lines, lambda: worker.is_cancelled
        )
        if record is None:
            self.post_message(self.Loaded(request, None, None, error))
            return
        if not worker.is_cancelled:
            self.post_message(self.Loaded(request, record, image, error))

    def on_preview_loaded(self, message: Loaded) -> None:
        message.stop()
        if message.request != self._pending:
            return
        rec = message.record
        self.record, self.image_text = rec, message.image
        title = self.query_one("#preview-title", Static)
        image = self.query_one("#preview-image", Static)
        if rec is None:
            title.update(Text(message.error, style="red"))
            image.update("")
            self.query_one(RolloutInfo).show(None)
            return
        title.update(Text(f"{short_id(rec.rollout_id, rec.run_id)} · {rec.row_id} · sample {rec.sample_index}",
                          style="bold"))
        if message.image is not None:
            image.update(message.image)
        else:
            why = message.error or (f"no image yet ({rec.status.value})" if not rec.status.terminal else "no image")
            image.update(Text(why, style="dim italic"))
        self.query_one(RolloutInfo).show(rec)

    def on_resize(self) -> None:
        if self.rollout_id is not None and self._pending is not None:
            width = self.scrollable_content_region.width
            if (width, self.size.height) != getattr(self, "_last_box", None):
                self._last_box = (width, self.size.height)
                self.reload()
