"""Which renderer draws the SVG: the ``renderer`` setting's choice, built from the settings that size and cap it.

``cairosvg`` (the default) is :class:`.render.Renderer`, sandboxed cairosvg worker processes; ``chromium`` is
:class:`.chromium.ChromiumRenderer`, a pool of headless Chromium processes rendering the page Eval Protocol's
quickstart evaluator screenshots. Both take ``render(svg, size)`` with ``size`` a longest side or
:data:`.picture_size.OWN_SIZE`.
"""

from __future__ import annotations

from typing import Any

from svgagent.core.scoring.models import RendererName
from svgagent.core.scoring.render import Renderer, usable_cpus

__all__ = ["AnyRenderer", "make_renderer"]

AnyRenderer = Any  # Renderer | ChromiumRenderer: the same interface
CHROMIUM_WORKERS = 4  # browsers kept warm at most (each is several processes and a few hundred MB)


def make_renderer(settings: Any, *, workers: int | None = None) -> AnyRenderer:
    """The renderer ``settings`` choose (any object with ``renderer``, ``render_size``, ``render_timeout_s``,
    ``render_memory_mb`` and, for Chromium, ``chromium_path``). ConfigError when Chromium is chosen and absent."""
    choice = RendererName(getattr(settings, "renderer", RendererName.CAIROSVG) or RendererName.CAIROSVG)
    if choice is RendererName.CHROMIUM:
        from svgagent.core.scoring.chromium import ChromiumRenderer

        path = getattr(settings, "chromium_path", None)
        return ChromiumRenderer(
            size=settings.render_size,
            timeout_s=settings.render_timeout_s,
            memory_mb=settings.render_memory_mb,
            workers=workers if workers is not None else min(CHROMIUM_WORKERS, usable_cpus()),
            executable=str(path) if path else None,
        )
    return Renderer(
        size=settings.render_size,
        timeout_s=settings.render_timeout_s,
        memory_mb=settings.render_memory_mb,
        workers=workers,
    )
