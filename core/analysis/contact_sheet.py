"""A filmstrip as one PNG: a contact sheet with the prompt on top, a column per step (its label above), a line per
sample, each picture with its score and the first words of its rationale printed under it. Drawn with Pillow; the
text with DejaVu Sans where it is installed, else Pillow's bundled font (FreeType), else its bitmap font."""

from __future__ import annotations

import io
from collections.abc import Mapping
from functools import lru_cache

from svgagent.core.analysis.filmstrip import Filmstrip, Frame
from svgagent.core.analysis.stored_picture import on_background, open_picture
from svgagent.core.terminal_text import visible_line

PAD = 8
WHY_LINES = 2  # the rationale's first words under each picture
MAX_CELL = 512
_DEJAVU = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
_INK, _MUTED, _BAD, _GOOD, _PAPER, _EMPTY = "#202020", "#6b6b6b", "#c62828", "#1b5e20", "#ffffff", "#eeeeee"


@lru_cache(maxsize=8)
def _font(size: int):  # type: ignore[no-untyped-def]
    from PIL import ImageFont

    try:
        return ImageFont.truetype(_DEJAVU, size)  # every glyph a rationale may hold (the bundled font lacks "–")
    except OSError:
        try:
            return ImageFont.load_default(size=size)
        except (ImportError, OSError, TypeError):
            return ImageFont.load_default()


def _fit(text: str, font, width: float) -> str:  # type: ignore[no-untyped-def]
    """``text`` cut (marked …) so that it is at most ``width`` pixels wide."""
    if font.getlength(text) <= width:
        return text
    low, high = 0, len(text)
    while low < high:
        mid = (low + high + 1) // 2
        if font.getlength(text[:mid] + "…") <= width:
            low = mid
        else:
            high = mid - 1
    return text[:low].rstrip() + "…"


def _wrap(text: str, font, width: float, lines: int) -> list[str]:  # type: ignore[no-untyped-def]
    out: list[str] = []
    words = text.split()
    while words and len(out) < lines:
        line = words.pop(0)
        while words and font.getlength(f"{line} {words[0]}") <= width:
            line = f"{line} {words.pop(0)}"
        out.append(line)
    if words and out:
        out[-1] = _fit(out[-1] + " " + " ".join(words), font, width)
    return [_fit(line, font, width) for line in out]


def _score_text(frame: Frame) -> tuple[str, str]:
    if frame.score is not None:
        return f"{frame.score:.2f}", _GOOD if frame.score >= 0.5 else _INK
    if frame.status in ("scored", "failed"):
        return "invalid" if frame.status == "failed" else "no score", _BAD if frame.status == "failed" else _MUTED
    return frame.status, _MUTED


def contact_sheet(strip: Filmstrip, pngs: Mapping[str, bytes], *, cell: int = 160) -> bytes:
    """The PNG of ``strip`` with ``cell`` × ``cell`` pixel pictures (``pngs``: rollout id → PNG)."""
    from PIL import Image, ImageDraw

    cell = max(48, min(cell, MAX_CELL))
    small, big = _font(max(10, cell // 13)), _font(max(12, cell // 10))
    line_h = int(small.getbbox("Ag")[3]) + 3
    big_h = int(big.getbbox("Ag")[3]) + 4
    columns, samples = len(strip.columns), max(strip.samples, 1)
    margin = int(small.getlength("s00")) + PAD * 2
    width = margin + columns * (cell + PAD) + PAD
    title_lines = _wrap(visible_line(f"{strip.row_id}: {strip.prompt}"), big, width - 2 * PAD, 2)
    top = PAD + len(title_lines) * big_h + PAD
    header = line_h + 4
    frame_h = cell + 4 + big_h + WHY_LINES * line_h + PAD
    height = top + header + samples * frame_h + PAD
    sheet = Image.new("RGB", (width, height), _PAPER)
    draw = ImageDraw.Draw(sheet)
    for i, line in enumerate(title_lines):
        draw.text((PAD, PAD + i * big_h), line, fill=_INK, font=big)
    for c, column in enumerate(strip.columns):
        x = margin + c * (cell + PAD)
        draw.text((x, top), _fit(visible_line(column.label), small, cell), fill=_MUTED, font=small)
    for s in range(samples):
        y = top + header + s * frame_h
        draw.text((PAD, y + cell // 2 - line_h // 2), f"s{s}", fill=_MUTED, font=small)
        for c in range(columns):
            x = margin + c * (cell + PAD)
            frame = strip.at(c, s)
            draw.rectangle((x, y, x + cell - 1, y + cell - 1), fill=_EMPTY)
            if frame is None:
                draw.text((x + cell // 2 - 4, y + cell // 2 - line_h // 2), "–", fill=_MUTED, font=small)
                continue
            png = pngs.get(frame.rollout_id)
            if png:
                picture = open_picture(png)
                if picture is not None:
                    picture.thumbnail((cell, cell))
                    back = on_background(picture, _PAPER)
                    sheet.paste(back, (x + (cell - back.width) // 2, y + (cell - back.height) // 2))
                else:
                    draw.text((x + 4, y + 4), "unreadable picture", fill=_BAD, font=small)
            else:
                draw.text((x + 4, y + cell // 2 - line_h // 2), "no picture", fill=_MUTED, font=small)
            score, colour = _score_text(frame)
            draw.text((x, y + cell + 4), score, fill=colour, font=big)
            for n, why in enumerate(_wrap(visible_line(frame.line), small, cell, WHY_LINES)):
                draw.text((x, y + cell + 4 + big_h + n * line_h), why, fill=_MUTED, font=small)
    out = io.BytesIO()
    sheet.save(out, format="PNG", optimize=True)
    return out.getvalue()
