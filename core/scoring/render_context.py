"""cairocffi's ``Context`` without the status check after each call, for the calls cairosvg's drawing code makes most.

cairocffi checks cairo's status after every call (one more C call and a Python branch each); cairo's errors are
sticky (a context in error does nothing more and keeps its first error), so the lean walk (render_draw.py) checks once
after the walk instead (``LeanSurface.check_status``; cairosvg's other calls are still checked). Each method makes
cairocffi's own cairo call with the same arguments and returns what cairocffi returns: the path and state calls of
cairosvg's shapes, paths and gradients, the current point render_path.py reads once per path, and the text calls
cairosvg makes for every letter (the text handed to cairo as UTF-8 bytes: cffi passes their NUL-terminated buffer, as
cairocffi passes its ``char[]`` copy; the extents read from a fresh struct, as cairocffi reads them).

cairocffi is imported when the class is first built (only the render workers do that).
"""

from __future__ import annotations

import functools


def _utf8(text) -> bytes:
    """Text for a ``const char *`` argument, as cairocffi's ``_encode_string`` makes it (str -> UTF-8)."""
    return text if isinstance(text, bytes) else text.encode("utf8")


@functools.cache
def unchecked_context_class():
    """A ``cairocffi.Context`` subclass whose listed calls skip cairocffi's status check."""
    import cairocffi
    from cairocffi import cairo as lib
    from cairocffi import ffi

    class UncheckedContext(cairocffi.Context):
        """cairosvg's most frequent calls (see the module docstring), without a status check after each."""

        def save(self):
            lib.cairo_save(self._pointer)

        def restore(self):
            lib.cairo_restore(self._pointer)

        def move_to(self, x, y):
            lib.cairo_move_to(self._pointer, x, y)

        def rel_move_to(self, dx, dy):
            lib.cairo_rel_move_to(self._pointer, dx, dy)

        def line_to(self, x, y):
            lib.cairo_line_to(self._pointer, x, y)

        def rel_line_to(self, dx, dy):
            lib.cairo_rel_line_to(self._pointer, dx, dy)

        def curve_to(self, x1, y1, x2, y2, x3, y3):
            lib.cairo_curve_to(self._pointer, x1, y1, x2, y2, x3, y3)

        def rel_curve_to(self, dx1, dy1, dx2, dy2, dx3, dy3):
            lib.cairo_rel_curve_to(self._pointer, dx1, dy1, dx2, dy2, dx3, dy3)

        def close_path(self):
            lib.cairo_close_path(self._pointer)

        def new_path(self):
            lib.cairo_new_path(self._pointer)

        def new_sub_path(self):
            lib.cairo_new_sub_path(self._pointer)

        def arc(self, xc, yc, radius, angle1, angle2):
            lib.cairo_arc(self._pointer, xc, yc, radius, angle1, angle2)

        def rectangle(self, x, y, width, height):
            lib.cairo_rectangle(self._pointer, x, y, width, height)

        def translate(self, tx, ty):
            lib.cairo_translate(self._pointer, tx, ty)

        def scale(self, sx, sy=None):
            lib.cairo_scale(self._pointer, sx, sx if sy is None else sy)

        def rotate(self, radians):
            lib.cairo_rotate(self._pointer, radians)

        def set_source(self, source):
            lib.cairo_set_source(self._pointer, source._pointer)

        def has_current_point(self):
            return bool(lib.cairo_has_current_point(self._pointer))

        def get_current_point(self):
            xy = ffi.new("double[2]")
            lib.cairo_get_current_point(self._pointer, xy, xy + 1)
            return tuple(xy)

        def select_font_face(self, family="", slant=cairocffi.FONT_SLANT_NORMAL, weight=cairocffi.FONT_WEIGHT_NORMAL):
            lib.cairo_select_font_face(self._pointer, _utf8(family), slant, weight)

        def set_font_size(self, size):
            lib.cairo_set_font_size(self._pointer, size)

        def font_extents(self):
            extents = ffi.new("cairo_font_extents_t *")
            lib.cairo_font_extents(self._pointer, extents)
            return (extents.ascent, extents.descent, extents.height, extents.max_x_advance, extents.max_y_advance)

        def text_extents(self, text):
            extents = ffi.new("cairo_text_extents_t *")
            lib.cairo_text_extents(self._pointer, _utf8(text), extents)
            return (
                extents.x_bearing,
                extents.y_bearing,
                extents.width,
                extents.height,
                extents.x_advance,
                extents.y_advance,
            )

        def show_text(self, text):
            lib.cairo_show_text(self._pointer, _utf8(text))

    return UncheckedContext
