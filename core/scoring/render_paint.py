"""Gradient paint for the lean walk (render_draw.py): cairosvg's ``draw_gradient``, its numbers worked out once per
gradient instead of at every shape it paints.

cairosvg's ``gradient_or_pattern`` runs for every fill and stroke with a paint server: it follows the gradient's
``href`` (a URL parse even when there is none), turns each of the gradient's lengths and each stop's offset, colour
and opacity into numbers, and builds the cairo pattern through cairocffi, checking cairo's status after each call.
A model's picture paints many shapes with the same few gradients: on bench/render.py's corpus that was ~7 % of a
render's CPU.

:func:`gradient_painter` gives a function with ``gradient_or_pattern``'s arguments and answer that, for a
``linearGradient`` or ``radialGradient`` without ``href`` or ``gradientTransform``, makes cairosvg's cairo calls with
cairosvg's numbers, in cairosvg's order: the shape's bounding box first (for ``objectBoundingBox`` units; cairosvg
stores it in the node), the pattern, its matrix, the stops, the extend, the source. The lengths, stops and extend of a
gradient are remembered per surface (one render) for the gradient node, the opacity and what they are resolved
against (the viewport's size and the font size, for ``%``, ``em`` and ``ex``). Everything else — patterns, gradients
with ``href`` (cairosvg builds a new node at each use) or ``gradientTransform``, other elements — goes to
``gradient_or_pattern`` itself. The pattern's own status is not checked after each call: cairo's errors are sticky,
and a pattern in error puts the context in error when it is set as the source, which the walk's final check raises.
tests/test_render_exact.py compares pixels with cairosvg's own on generated gradients.
"""

from __future__ import annotations

import functools

_LINEAR, _RADIAL = "linearGradient", "radialGradient"


@functools.cache
def gradient_painter():
    """``paint(surface, node, name, opacity) -> bool``, as cairosvg's ``defs.gradient_or_pattern``."""
    from cairocffi import cairo as lib
    from cairocffi import ffi
    from cairosvg import defs, helpers
    from cairosvg.bounding_box import calculate_bounding_box, is_non_empty_bounding_box

    extends = defs.EXTEND_OPERATORS

    def numbers(surface, gradient, opacity, width_ref, height_ref, diagonal_ref):
        """(geometry, stops, extend) of ``gradient`` as draw_gradient computes them."""
        size = helpers.size
        if gradient.tag == _LINEAR:
            geometry = (
                size(surface, gradient.get("x1", "0%"), width_ref),
                size(surface, gradient.get("y1", "0%"), height_ref),
                size(surface, gradient.get("x2", "100%"), width_ref),
                size(surface, gradient.get("y2", "0%"), height_ref),
            )
        else:
            r = size(surface, gradient.get("r", "50%"), diagonal_ref)
            cx = size(surface, gradient.get("cx", "50%"), width_ref)
            cy = size(surface, gradient.get("cy", "50%"), height_ref)
            fx = size(surface, gradient.get("fx", str(cx)), width_ref)
            fy = size(surface, gradient.get("fy", str(cy)), height_ref)
            geometry = (fx, fy, 0, cx, cy, r)
        stops, offset = [], 0
        for child in gradient.children:
            offset = max(offset, size(surface, child.get("offset"), 1))
            rgba = surface.map_color(child.get("stop-color", "black"), float(child.get("stop-opacity", 1)) * opacity)
            stops.append((offset, *rgba))
        return geometry, stops, extends.get(gradient.get("spreadMethod", "pad"), extends["pad"])

    def paint(surface, node, name, opacity) -> bool:
        gradients = surface.gradients
        gradient = gradients.get(name)
        if (
            gradient is None
            or gradient.tag not in (_LINEAR, _RADIAL)
            or "gradientTransform" in gradient
            or gradient.get_href()
            or "" in gradients
        ):  # ("": what an absent href resolves to)
            return defs.gradient_or_pattern(surface, node, name, opacity)
        if gradient.get("gradientUnits") == "userSpaceOnUse":
            refs = ("x", "y", "xy")
        else:
            bounding_box = calculate_bounding_box(surface, node)
            if not is_non_empty_bounding_box(bounding_box):
                return False
            size = helpers.size
            x, y = size(surface, bounding_box[0], "x"), size(surface, bounding_box[1], "y")
            width, height = size(surface, bounding_box[2], "x"), size(surface, bounding_box[3], "y")
            refs = (1, 1, 1)
        cache = surface.__dict__.setdefault("_svgagent_gradients", {})
        key = (name, opacity, surface.font_size, surface.context_width, surface.context_height)
        cached = cache.get(key)
        if cached is None or cached[0] is not gradient:
            cached = cache[key] = (gradient, *numbers(surface, gradient, opacity, *refs))
        _, geometry, stops, extend = cached
        if gradient.tag == _LINEAR:
            pattern = lib.cairo_pattern_create_linear(*geometry)
        else:
            pattern = lib.cairo_pattern_create_radial(*geometry)
        try:
            if refs[0] == 1:
                matrix = ffi.new("cairo_matrix_t *")
                lib.cairo_matrix_init(matrix, 1 / width, 0, 0, 1 / height, -x / width, -y / height)
                lib.cairo_pattern_set_matrix(pattern, matrix)
            for stop in stops:
                lib.cairo_pattern_add_color_stop_rgba(pattern, *stop)
            lib.cairo_pattern_set_extend(pattern, extend)
            lib.cairo_set_source(surface.context._pointer, pattern)
        finally:
            lib.cairo_pattern_destroy(pattern)
        return True

    return paint
