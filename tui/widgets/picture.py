"""One picture loader for every screen that shows a rollout's PNG (the preview pane, both sides of the compare
screen, the rollout screen), and :class:`Picture`, the widget that draws one: half blocks sized to the box it is
given, loaded in a thread worker.

``show(rollout_id)`` reads the rollout (heavy: its PNG) and draws it in a thread — after a short settle, so a
cursor moving over many rows reads only where it stops — and posts :class:`Picture.Shown` with the record (or an
error) for the parent to fill in its text. A newer request supersedes an older one; changing the box (``fit``)
draws the same rollout again at the new size. :class:`PictureSource` is that loading, for any widget that draws
what it loads (``_draw``): :class:`Picture` here, the preview's canvas (picture and text in one widget).

The picture is drawn with the line API from the segments the thread built (:class:`~svgagent.tui.imaging.HalfBlocks`),
each line a cached ``Strip``: nothing of it is converted on the app's loop, however often it is repainted.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import work
from textual.geometry import Size
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget
from textual.worker import get_current_worker

from svgagent.core.store.run_store import Store
from svgagent.core.store.typed_rows import RolloutRecord
from svgagent.tui.imaging import HalfBlocks, load_rollout_picture
from svgagent.tui.widgets.screen_text import shown
from svgagent.tui.widgets.text_box import signature

SETTLE_S = 0.05


@dataclass(frozen=True, slots=True)
class _Request:
    rollout_id: str
    cols: int
    lines: int
    context: object = None  # what the widget's _prepare needs, taken on the loop (see PictureSource._prepare)


class PictureShown(Message):
    """The rollout was read: ``record`` (None: it could not be), ``image`` drawn or not, and why not."""

    def __init__(self, picture: Any, record: RolloutRecord | None, image: HalfBlocks | None, error: str) -> None:
        super().__init__()
        self.picture, self.record, self.image, self.error = picture, record, image, error

    @property
    def control(self) -> Any:
        return self.picture


class PictureLoaded(Message):
    """A thread worker's result, for the widget that asked (internal)."""

    def __init__(
        self,
        request: _Request,
        record: RolloutRecord | None,
        image: HalfBlocks | None,
        error: str,
        prepared: object = None,
    ) -> None:
        super().__init__()
        self.request, self.record, self.image, self.error = request, record, image, error
        self.prepared = prepared


def picture_strips(image: HalfBlocks, base: Style) -> list[Strip]:
    """The picture's lines as strips on the widget's ``base`` style (its colours over it, as a Static draws them)."""
    return [Strip(Segment.apply_style(row, base), image.width) for row in image.rows]


def note_strips(note: Text, width: int, base: Style, console: Any, options: Any) -> list[Strip]:
    """A note wrapped at ``width`` as strips on ``base``."""
    lines = console.render_lines(
        note, options.update_width(max(1, width)).update(highlight=False), style=base, pad=False
    )
    return [Strip(line) for line in lines]


class PictureSource:
    """Widget mixin: loads a rollout's picture in a thread (see the module) and hands it to ``_draw``.

    ``on_shown``: called with :class:`PictureShown` right where the picture is drawn, instead of posting it — the
    parent's text about the rollout and its picture then change in the same frame."""

    Shown = PictureShown

    def _init_source(self, store: Store, on_shown: Callable[[PictureShown], None] | None) -> None:
        self.store = store
        self.on_shown = on_shown
        self.rollout_id: str | None = None
        self.record: RolloutRecord | None = None
        self.image: HalfBlocks | None = None
        self.cols, self.lines = 24, 12
        self._pending: _Request | None = None
        self._drawn: tuple[_Request, bytes, HalfBlocks] | None = None  # what image is the drawing of
        self.settle_s = SETTLE_S  # the debounce before a load: 0 where nothing moves a cursor (the rollout screen)

    def _draw(self, content: HalfBlocks | Text) -> None:
        """Show ``content``: a picture, or a note instead of one."""
        raise NotImplementedError

    def _request_context(self) -> object:
        """On the loop, with each request: what :meth:`_prepare` will need (sizes, styles). None: nothing."""
        return None

    def _prepare(self, record: RolloutRecord, context: object) -> object:
        """In the thread worker, once the record is read: more of the drawing done off the loop (the preview
        wraps its text here). Its result reaches :meth:`_prepared` on the loop, before ``_draw``."""
        return None

    def _prepared(self, prepared: object, context: object) -> None:
        """On the loop: what :meth:`_prepare` made for the rollout about to be drawn."""

    def fit(self, cols: int, lines: int) -> None:
        """The box the picture may fill; drawn again when it changed."""
        cols, lines = max(4, cols), max(2, lines)
        if (cols, lines) != (self.cols, self.lines):
            self.cols, self.lines = cols, lines
            self.reload()

    def show(self, rollout_id: str | None, *, reread: bool = False) -> None:
        """Show ``rollout_id`` (None: nothing); ``reread``: read it again even if it is the one shown."""
        if rollout_id is None:
            self.rollout_id, self.record, self.image, self._pending = None, None, None, None
            self._draw(Text(""))
            return
        if reread:
            self._pending = None
        self.rollout_id = rollout_id
        self.reload()

    def reload(self) -> None:
        if self.rollout_id is None:
            return
        request = _Request(self.rollout_id, self.cols, self.lines, self._request_context())
        if request == self._pending:
            return
        self._pending = request
        self._load(request)

    def note(self, text: str, style: str = "dim italic") -> None:
        """A line instead of a picture (nothing to draw yet, or why it cannot be)."""
        self.image = None
        self._draw(shown(text, style=style))  # may quote outside text (an error): escaped

    @work(thread=True, exclusive=True, group="picture", exit_on_error=False)
    def _load(self, request: _Request) -> None:
        worker = get_current_worker()
        if self.settle_s:
            time.sleep(self.settle_s)  # debounce: a newer request (cursor still moving) cancels this one meanwhile
        if worker.is_cancelled:
            return
        drawn = self._drawn
        record, image, error = load_rollout_picture(
            self.store,
            request.rollout_id,
            request.cols,
            request.lines,
            lambda: worker.is_cancelled,
            drawn[1:] if drawn is not None and drawn[0] == request else None,
        )
        prepared = None
        if record is not None and request.context is not None and not worker.is_cancelled:
            prepared = self._prepare(record, request.context)
        if not worker.is_cancelled or record is None:
            self.post_message(PictureLoaded(request, record, image, error, prepared))  # type: ignore[attr-defined]

    def on_picture_loaded(self, message: PictureLoaded) -> None:
        message.stop()
        request, record, image, error = message.request, message.record, message.image, message.error
        if request != self._pending:
            return
        self.record, self.image = record, image
        if message.prepared is not None:
            self._prepared(message.prepared, request.context)
        if image is not None:
            assert record is not None and record.png is not None
            self._drawn = (request, record.png, image)
            self._draw(image)
        elif record is None:
            self.note(error, "red")
        else:
            why = error or (f"no image yet ({record.status.value})" if not record.status.terminal else "no image")
            self.note(why)
        shown = PictureShown(self, record, image, error)
        if self.on_shown is not None:
            self.on_shown(shown)
        else:
            self.post_message(shown)  # type: ignore[attr-defined]


class Picture(PictureSource, Widget):
    """A rollout's picture in at most ``cols`` × ``lines`` cells (see :meth:`fit`), as large as what it shows:
    a new picture of the same size repaints it, one of another size (or a note) lays the screen out again."""

    DEFAULT_CSS = """
    Picture { width: auto; height: auto; }
    """

    def __init__(
        self,
        store: Store,
        *,
        id: str | None = None,
        classes: str | None = None,
        on_shown: Callable[[PictureShown], None] | None = None,
        settle_s: float = SETTLE_S,
    ) -> None:
        super().__init__(id=id, classes=classes)
        self._init_source(store, on_shown)
        self.settle_s = settle_s
        self._on_screen: HalfBlocks | Text = Text("")  # a picture, or a note
        self._strips: tuple[object, list[Strip]] | None = None  # (for which style and width, its lines)

    @property
    def content(self) -> Text:
        """What it shows as text: the note, or the picture's characters."""
        shown = self._on_screen
        return Text(shown.plain) if isinstance(shown, HalfBlocks) else shown

    def _draw(self, content: HalfBlocks | Text) -> None:
        """The screen is laid out again unless it is the same, or a picture of the same size as the one it replaces
        (the cursor moving between rollouts)."""
        before = self._on_screen
        if content is before or (
            isinstance(content, Text) and isinstance(before, Text) and signature(content) == signature(before)
        ):
            return
        same_size = isinstance(content, HalfBlocks) and isinstance(before, HalfBlocks) and content.shape == before.shape
        self._on_screen, self._strips = content, None
        self.refresh(layout=not same_size)

    def get_content_width(self, container: Size, viewport: Size) -> int:
        shown = self._on_screen
        if isinstance(shown, HalfBlocks):
            return shown.width
        return min(container.width, max((cell_len(line) for line in shown.plain.split("\n")), default=0))

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        shown = self._on_screen
        if isinstance(shown, HalfBlocks):
            return len(shown.rows)
        return len(self._lines(width))

    def _lines(self, width: int) -> list[Strip]:
        shown, base = self._on_screen, self.visual_style.rich_style
        key = (base, None if isinstance(shown, HalfBlocks) else width)
        if self._strips is None or self._strips[0] != key:
            strips = (
                picture_strips(shown, base)
                if isinstance(shown, HalfBlocks)
                else note_strips(shown, width, base, self.app.console, self.app.console_options)
            )
            self._strips = (key, strips)
        return self._strips[1]

    def render_line(self, y: int) -> Strip:
        width, base = self.content_size.width, self.visual_style.rich_style
        lines = self._lines(width)
        if y < len(lines):
            return lines[y].adjust_cell_length(width, base)
        return Strip.blank(width, base)
