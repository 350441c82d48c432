"""A picture from the run store, opened for drawing elsewhere (the report's thumbnails, the filmstrip's contact
sheet, the health checks' likeness): one place that decodes stored PNG bytes with Pillow, refuses what is not a
readable picture or is too large to decode, and flattens a picture onto a background."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PIL.Image import Image

MAX_PIXELS = 4096 * 4096  # a stored picture larger than this is not decoded (the renderer writes ≤ render_size)


def open_picture(png: bytes | None) -> Image | None:
    """``png`` decoded, in RGB or RGBA (other modes converted to RGBA); None when there is no readable picture or
    it is larger than :data:`MAX_PIXELS`."""
    if not png:
        return None
    from PIL import Image, UnidentifiedImageError  # imported when a picture is drawn

    try:
        with Image.open(io.BytesIO(png)) as image:
            if image.width * image.height > MAX_PIXELS:
                return None
            image.load()
            return image.copy() if image.mode in ("RGB", "RGBA") else image.convert("RGBA")
    except (OSError, UnidentifiedImageError, ValueError, Image.DecompressionBombError):
        return None


def on_background(picture: Image, colour: str | tuple[int, int, int]) -> Image:
    """``picture`` flattened onto ``colour`` (RGB): what its transparent parts show on paper."""
    from PIL import Image

    flat = Image.new("RGB", picture.size, colour)
    flat.paste(picture, mask=picture.getchannel("A") if picture.mode == "RGBA" else None)
    return flat
