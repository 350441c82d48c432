"""A stored picture as a small PNG ``data:`` URI for the report: decoded and encoded again (the report never
carries the stored bytes as they are), at most :data:`THUMB_SIDE` px on its longest side."""

from __future__ import annotations

import base64
import io

from svgagent.core.analysis.stored_picture import open_picture

THUMB_SIDE = 192


def thumbnail_uri(png: bytes | None, side: int = THUMB_SIDE) -> str | None:
    """``data:image/png;base64,…`` of ``png`` scaled down to ``side``; None when there is no decodable picture."""
    picture = open_picture(png)
    if picture is None:
        return None
    picture.thumbnail((side, side))
    out = io.BytesIO()
    picture.save(out, format="PNG", optimize=True)
    return "data:image/png;base64," + base64.b64encode(out.getvalue()).decode("ascii")
