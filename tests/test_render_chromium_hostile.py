"""The hostile SVG corpus (tests/hostile_svgs.py) through the Chromium renderer: every case ends within its time cap
with a bounded PNG or a one-line reason, no connection reaches the loopback server the cases point at, nothing
planted on disk shows up in a picture, and the pool still renders afterwards.

(What a case *should* give is the cairosvg renderer's business, tests/test_render_hostile.py: a browser draws some
documents cairosvg refuses. Here only the sandbox's promises are checked.)
"""

from __future__ import annotations

import asyncio
import io
import time

from hostile_svgs import build_corpus
from PIL import Image
from test_render_chromium import RED_BOX, needs_chromium
from test_render_hostile import hostile_env  # noqa: F401 - the fixture: planted files and a recording server

from svgagent.core.scoring.chromium import ChromiumRenderer
from svgagent.core.scoring.errors import RenderError
from svgagent.core.scoring.picture_size import MAX_OWN_SIDE, OWN_SIZE

TIMEOUT_S = 5.0
MARGIN_S = 20.0  # a browser restarted after a kill, on a loaded machine
GREEN = (0, 255, 0)


@needs_chromium
async def test_hostile_svgs_keep_the_chromium_sandbox(hostile_env) -> None:  # noqa: F811
    """On the own-size page (the one the parity profiles use; the longest side only changes the capture scale)."""
    size = OWN_SIZE
    env, server = hostile_env
    cases = build_corpus(env)
    renderer = ChromiumRenderer(workers=2, timeout_s=TIMEOUT_S, memory_mb=2048)
    outcomes: dict[str, tuple[float, bytes | str]] = {}

    async def one(case) -> None:
        started = time.monotonic()
        try:
            result: bytes | str = await renderer.render(case.svg, size)
        except RenderError as err:
            result = str(err)
        outcomes[case.name] = (time.monotonic() - started, result)

    try:
        await asyncio.gather(*(one(case) for case in cases))
        after = await renderer.render(RED_BOX, OWN_SIZE)  # the pool survived every case
    finally:
        renderer.close()
    assert Image.open(io.BytesIO(after)).convert("RGB").getpixel((50, 25)) == (255, 0, 0)
    assert server.connections == []  # nothing left the page
    limit = MAX_OWN_SIDE if size == OWN_SIZE else size
    for name, (elapsed, result) in outcomes.items():
        # queued behind the others: at most every case's cap ahead of it, on two browsers
        assert elapsed < len(cases) * (TIMEOUT_S + MARGIN_S) / 2, name
        if isinstance(result, str):
            assert result and "\n" not in result, name
            continue
        with Image.open(io.BytesIO(result)) as picture:
            assert max(picture.size) <= limit + 1, (name, picture.size)
            colours = picture.convert("RGB").getcolors(maxcolors=1 << 20) or []
            assert all(rgb != GREEN for _, rgb in colours), f"{name}: a planted file is in the picture"
