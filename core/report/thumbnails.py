"""A stored picture as a small PNG ``data:`` URI for the report: decoded and encoded again (the report never
carries the stored bytes as they are), at most :data:`THUMB_SIDE` px on its longest side."""

from __future__ import annotations

import base64
import io

THUMB_SIDE = 192
MAX_PIXELS = 4096 * 4096  # a stored picture larger than this is not decoded (the renderer writes ≤ render_size)


def thumbnail_uri(png: bytes | None, side: int = THUMB_SIDE) -> str | None:
    """``data:image/png;base64,…`` of ``png`` scaled down to ``side``; None when there is no decodable picture."""
    if not png:
        return None
    from PIL import Image  # the report's only use of Pillow: imported when a picture is drawn

    try:
        with Image.open(io.BytesIO(png)) as image:
            if image.width * image.height > MAX_PIXELS:
                return None
            image.thumbnail((side, side))
            picture = image.convert("RGBA") if image.mode not in ("RGB", "RGBA") else image.copy()
        out = io.BytesIO()
        picture.save(out, format="PNG", optimize=True)
    except (OSError, ValueError, Image.DecompressionBombError):
        return None
    return "data:image/png;base64," + base64.b64encode(out.getvalue()).decode("ascii")
