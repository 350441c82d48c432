"""Run one of cairosvg's node-drawing functions (or the lean renderer's copy of it) on a bare 300x200 context, for
the tests that compare the two call for call (tests/test_render_fast.py, tests/test_render_exact.py)."""

from __future__ import annotations

from collections.abc import Callable


def drawn_path(
    draw: Callable[..., object],
    attributes: dict[str, str],
    *,
    start: bool = False,
    catch: type[BaseException] | tuple[type[BaseException], ...] = Exception,
) -> tuple[list[tuple], type[BaseException] | None]:
    """(the cairo path ``draw`` makes for a node with ``attributes``, the type of the ``catch`` it raised or None);
    ``start``: a current point (3, 4) before it draws."""
    import cairocffi

    class Surface:
        context_width, context_height, font_size, dpi = 300, 200, 16.0, 96

    class Node(dict):
        pass

    surface = Surface()
    surface.context = cairocffi.Context(cairocffi.ImageSurface(cairocffi.FORMAT_RGB24, 8, 8))
    if start:
        surface.context.move_to(3, 4)
    try:
        draw(surface, Node(attributes))
        stopped = None
    except catch as err:
        stopped = type(err)
    return list(surface.context.copy_path()), stopped
