"""PNG → terminal pictures with term-image: half blocks as Rich segments for panes, the best protocol full screen.

term-image looks for a terminal when it is imported and may query it later; inside a Textual app (and in tests)
neither may happen. :func:`configure_term_image` (called by ``cmd_tui`` before the app starts, and by test setup)
imports it quietly, turns queries off and fixes the cell ratio, so drawing is deterministic and never touches the
terminal. Only :func:`show_full_resolution`, run while the app is suspended, lets term-image ask the terminal which
graphics protocol it speaks (kitty, iTerm2; term-image 0.7 has no sixel) and falls back to half blocks.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import sys
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.cells import cell_len
from rich.color import Color
from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

from svgagent.core.terminal_text import visible_line

if TYPE_CHECKING:
    from PIL import Image  # imported by _decode: Pillow (≈65 ms of CPU) is not needed before a picture is shown

CELL_RATIO = 0.5  # a terminal cell is half as wide as it is tall: one half-block pixel is square
_configured = False


def configure_term_image(cell_ratio: float = CELL_RATIO) -> None:
    """Import term-image without terminal queries and with a fixed cell ratio. Idempotent."""
    global _configured
    warnings.filterwarnings("ignore", message="It seems this process is not running within a terminal")
    import term_image

    term_image.disable_queries()
    term_image.set_cell_ratio(float(cell_ratio))
    _configured = True


def _decode(png: bytes) -> Image.Image:
    from PIL import Image

    with Image.open(io.BytesIO(png)) as im:
        im.load()
        if im.mode in ("RGBA", "LA", "P"):
            rgba = im.convert("RGBA")
            flat = Image.new("RGB", rgba.size, (255, 255, 255))
            flat.paste(rgba, mask=rgba.getchannel("A"))
            return flat
        return im.convert("RGB")


def fit_cells(width_px: int, height_px: int, max_cols: int, max_lines: int) -> tuple[int, int]:
    """(columns, lines) of the largest half-block picture of that aspect ratio inside the box."""
    max_cols, max_lines = max(1, max_cols), max(1, max_lines)
    scale = min(max_cols / width_px, (2 * max_lines) / height_px)
    cols = max(1, min(max_cols, round(width_px * scale)))
    lines = max(1, min(max_lines, round(height_px * scale / 2)))
    return cols, lines


def png_to_blocks(png: bytes, max_cols: int, max_lines: int) -> HalfBlocks:
    """The PNG as 24-bit half-block characters (▀/▄ with colours), scaled to fit the box. Call from a thread."""
    if not _configured:
        configure_term_image()
    from term_image.image import BlockImage

    image = _decode(png)
    cols, lines = fit_cells(image.width, image.height, max_cols, max_lines)
    block = BlockImage(image)
    block.set_size(cols, lines)
    return blocks_from_ansi(str(block).rstrip("\n"))


@dataclass(frozen=True, eq=False, slots=True)
class HalfBlocks:
    """A drawn picture: one tuple of Rich segments (a character and its colours) per line, ``width`` cells wide.
    Widgets draw its lines as they are (the line API), with no Rich text or layout of it on the app's loop."""

    rows: tuple[tuple[Segment, ...], ...]
    width: int

    @property
    def shape(self) -> tuple[int, int]:
        """(columns, lines)."""
        return self.width, len(self.rows)

    @property
    def plain(self) -> str:
        return "\n".join("".join(segment.text for segment in row) for row in self.rows)


_SGR = re.compile(r"\x1b\[([0-9;]*)m")


def blocks_from_ansi(ansi: str) -> HalfBlocks:
    """term-image's half-block picture as segments: the characters and styles Rich's ANSI decoder gives
    (``Text.from_ansi(ansi, no_wrap=True, end="")`` drawn), built directly — no Text, no spans; each escape's
    parameters read once and one Style for each (foreground, background) pair the picture uses — in a thread
    that holds the GIL while the app's loop waits. Reads only what BlockImage writes (reset, 24-bit foreground
    and background); anything else goes to Rich's decoder."""
    effects: dict[str, tuple[bool, Any, bool, Any] | None] = {}  # SGR parameters → what they set
    styles: dict[tuple[Any, Any], Style | None] = {(None, None): None}
    rows: list[tuple[Segment, ...]] = []
    width = 0
    for row in ansi.split("\n"):
        parts = _SGR.split(row.rsplit("\r", 1)[-1])
        texts = parts[0::2]
        plain = "".join(texts)
        if "\x1b" in plain:
            return _blocks_by_rich(ansi)
        line = [Segment(texts[0])] if texts[0] else []
        fg = bg = None
        for params, text in zip(parts[1::2], texts[1:]):
            effect = effects[params] if params in effects else effects.setdefault(params, _sgr_effect(params))
            if effect is None:
                return _blocks_by_rich(ansi)
            if effect[0]:
                fg = effect[1]
            if effect[2]:
                bg = effect[3]
            if text:
                key = (fg, bg)
                style = styles[key] if key in styles else styles.setdefault(key, Style.from_color(fg, bg))
                line.append(Segment(text, style))
        rows.append(tuple(line))
        width = max(width, cell_len(plain))
    return HalfBlocks(tuple(rows), width)


def _sgr_effect(params: str) -> tuple[bool, Color | None, bool, Color | None] | None:
    """(sets the foreground?, to what, sets the background?, to what) for an SGR escape's parameters; None for
    anything but a reset and 24-bit colours."""
    codes = params.split(";")
    set_fg = set_bg = False
    fg = bg = None
    while codes:
        code = codes.pop(0)
        if code in ("", "0"):
            set_fg = set_bg = True
            fg = bg = None
        elif code in ("38", "48") and len(codes) >= 4 and codes[0] == "2":
            color = Color.from_rgb(*(min(255, int(c or 0)) for c in codes[1:4]))
            if code == "38":
                set_fg, fg = True, color
            else:
                set_bg, bg = True, color
            del codes[:4]
        else:
            return None
    return set_fg, fg, set_bg, bg


def _blocks_by_rich(ansi: str) -> HalfBlocks:
    """What Rich's decoder makes of ``ansi``, line by line (output of a kind BlockImage does not write)."""
    console = Console(file=io.StringIO(), color_system="truecolor", legacy_windows=False, width=10_000)
    text = Text.from_ansi(ansi, no_wrap=True, end="")
    lines = text.split("\n", allow_blank=True)
    rows = tuple(tuple(s for s in line.render(console, end="") if s.text) for line in lines)
    return HalfBlocks(rows, max((sum(s.cell_length for s in row) for row in rows), default=0))


ALT_SCREEN_ON, ALT_SCREEN_OFF = "\x1b[?1049h", "\x1b[?1049l"
CLEAR = "\x1b[2J\x1b[H"


def terminal_size(out: Any) -> os.terminal_size:
    """The terminal's size in cells (of ``out`` when it is one, else the environment's or 80×24)."""
    try:
        return os.get_terminal_size(out.fileno())
    except (AttributeError, OSError, ValueError):
        return shutil.get_terminal_size()


def show_full_resolution(
    png: bytes, caption: str, *, stdin: Any = None, stdout: Any = None, size: tuple[int, int] | None = None
) -> str:
    """Draw ``png`` as large as the (suspended) terminal allows — all of it but the caption line — with the best
    protocol the terminal speaks (kitty or iTerm2 graphics, else 24-bit half blocks), wait for a key, and leave
    nothing behind: it is drawn on the terminal's alternate screen, which is cleared and left afterwards, so the
    shell's screen shows no picture once the app has quit. Returns the render style used."""
    out = stdout or sys.stdout
    inp = stdin or sys.stdin
    columns, lines = size or terminal_size(out)
    import term_image
    from term_image.exceptions import TermImageError
    from term_image.image import auto_image_class

    term_image.enable_queries()
    try:
        image_cls = auto_image_class()
        if image_cls.__name__ != "BlockImage":
            try:  # graphics are drawn in pixels: the real cell shape keeps the aspect ratio
                term_image.set_cell_ratio(term_image.AutoCellRatio.FIXED)
            except TermImageError:
                pass
        picture = image_cls(_decode(png))
        picture.set_size(frame_size=(max(1, columns), max(1, lines - 1)))  # absolute: fit it, larger or smaller
        style = image_cls.__name__.removesuffix("Image").lower()
        out.write(ALT_SCREEN_ON + CLEAR)
        out.write(str(picture))
        out.write(
            f"\n{visible_line(caption)} — {style} · press any key to go back"
        )  # the caption names a row: outside text
        out.flush()
        _wait_for_key(inp)
        clear = getattr(image_cls, "clear", None)
        if callable(clear) and image_cls.__name__ != "BlockImage":
            try:
                clear()  # graphics live outside the text cells: delete them too
            except Exception:  # noqa: BLE001 - clearing is best effort
                pass
        out.write(CLEAR + ALT_SCREEN_OFF)
        out.flush()
        return style
    finally:
        term_image.disable_queries()
        configure_term_image()


def _wait_for_key(inp: Any) -> None:
    try:
        fd = inp.fileno()
    except (AttributeError, OSError, ValueError):
        return
    if not os.isatty(fd):
        return
    import termios
    import tty

    saved = termios.tcgetattr(fd)
    try:
        tty.setcbreak(fd)
        os.read(fd, 16)
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def load_rollout_picture(store, rollout_id: str, cols: int, lines: int, cancelled, drawn=None):
    """(record, picture, error) for a rollout, for a thread worker: the record, its PNG drawn as half blocks
    (None when it has none or cannot be drawn), and an error line. ``cancelled()`` is checked before drawing.
    ``drawn``: (png, picture) of this rollout drawn in this box before; the same PNG again is not drawn again (a
    live run re-reads the rollout under the cursor at each change, mostly with the same picture)."""
    from svgagent.core.scoring.errors import StoreError

    try:
        record = store.get_rollout(rollout_id)
    except StoreError as err:
        return None, None, str(err)
    image, error = None, ""
    if record.png and drawn is not None and drawn[0] == record.png:
        image = drawn[1]
    elif record.png and not cancelled():
        try:
            image = png_to_blocks(record.png, cols, lines)
        except Exception as err:  # noqa: BLE001 - a broken PNG must not break the screen
            error = f"cannot draw the image: {err}"
    return record, image, error


def show_full_image(screen: Any, rollout_id: str) -> None:
    """Suspend the app and draw the rollout's PNG with the terminal's best graphics; back on any key."""
    from textual.app import SuspendNotSupported

    record = screen.app.store.get_rollout(rollout_id)
    if not record.png:
        screen.notify("this rollout has no image", severity="warning")
        return
    try:
        with screen.app.suspend():
            show_full_resolution(record.png, f"{record.rollout_id} ({record.row_id})")
    except SuspendNotSupported:
        screen.notify("the full-resolution view needs a real terminal", severity="warning")
