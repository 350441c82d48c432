"""PNG → terminal pictures with term-image: half blocks as Rich text for panes, the best protocol full screen.

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
from typing import Any

from PIL import Image
from rich.color import Color
from rich.style import Style
from rich.text import Text

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


def png_to_text(png: bytes, max_cols: int, max_lines: int) -> Text:
    """The PNG as 24-bit half-block characters (▀/▄ with colours), scaled to fit the box. Call from a thread."""
    if not _configured:
        configure_term_image()
    from term_image.image import BlockImage

    image = _decode(png)
    cols, lines = fit_cells(image.width, image.height, max_cols, max_lines)
    block = BlockImage(image)
    block.set_size(cols, lines)
    return blocks_to_text(str(block).rstrip("\n"))


_SGR = re.compile(r"\x1b\[([0-9;]*)m")


def blocks_to_text(ansi: str) -> Text:
    """term-image's half-block picture as Rich text: what ``Text.from_ansi(ansi, no_wrap=True, end="")`` gives (the
    same text, spans and styles), without Rich's general ANSI decoder — ≈70 % of a picture's conversion, run in a
    thread that holds the GIL while the app's loop waits. Reads only what BlockImage writes (reset, 24-bit
    foreground and background); anything else goes to Rich's decoder."""
    styles: dict[tuple[Color | None, Color | None], Style | None] = {}
    colors: dict[tuple[str, ...], Color] = {}  # a picture repeats its colours: one Color (and hex name) for each
    lines: list[Text] = []
    for row in ansi.split("\n"):
        line = Text()
        fg = bg = None
        for i, part in enumerate(_SGR.split(row.rsplit("\r", 1)[-1])):
            if i % 2 == 0:
                if part:
                    if (fg, bg) not in styles:
                        styles[(fg, bg)] = Style.from_color(fg, bg) if fg or bg else None
                    line.append(part, styles[(fg, bg)])
                continue
            codes = part.split(";")
            while codes:
                code = codes.pop(0)
                if code in ("", "0"):
                    fg = bg = None
                elif code in ("38", "48") and len(codes) >= 4 and codes[0] == "2":
                    rgb = tuple(codes[1:4])
                    color = colors.get(rgb)
                    if color is None:
                        color = colors[rgb] = Color.from_rgb(*(min(255, int(c or 0)) for c in rgb))
                    fg, bg = (color, bg) if code == "38" else (fg, color)
                    del codes[:4]
                else:
                    return Text.from_ansi(ansi, no_wrap=True, end="")
        if "\x1b" in line.plain:
            return Text.from_ansi(ansi, no_wrap=True, end="")
        lines.append(line)
    return Text("\n", no_wrap=True, end="").join(lines)


ALT_SCREEN_ON, ALT_SCREEN_OFF = "\x1b[?1049h", "\x1b[?1049l"
CLEAR = "\x1b[2J\x1b[H"


def terminal_size(out: Any) -> os.terminal_size:
    """The terminal's size in cells (of ``out`` when it is one, else the environment's or 80×24)."""
    try:
        return os.get_terminal_size(out.fileno())
    except (AttributeError, OSError, ValueError):
        return shutil.get_terminal_size()


def show_full_resolution(png: bytes, caption: str, *, stdin: Any = None, stdout: Any = None,
                         size: tuple[int, int] | None = None) -> str:
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
        out.write(f"\n{caption} — {style} · press any key to go back")
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
    """(record, image text, error) for a rollout, for a thread worker: the record, its PNG drawn as half blocks
    (None when it has none or cannot be drawn), and an error line. ``cancelled()`` is checked before drawing.
    ``drawn``: (png, text) of this rollout drawn in this box before; the same PNG again is not drawn again (a
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
            image = png_to_text(record.png, cols, lines)
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
