"""A leaner tree walk for cairosvg's PNG surface: what the judge sees, for less CPU per element.

cairosvg's ``Surface.draw`` does the full SVG processing for every node: it parses ``mask``/``filter``/
``clip-path`` URLs, normalises a dash array, deep-copies the text cursor, builds and sets font options, strokes
with a transparent source when there is no stroke, walks the marker vertices when there are no markers, and checks
cairo's status after every call. For the plain nodes a model writes most (groups and basic shapes with solid or
gradient paint) almost all of that is a no-op: on bench/render.py's corpus it was a third of the render's Python
time.

:func:`lean_surface_class` subclasses a cairosvg PNG surface with a ``draw`` that handles those plain nodes itself
and hands every other node to cairosvg's own ``draw`` unchanged: text, ``use``, images, ``svg``/``symbol``, and
anything with a mask, filter, clip, dash array, markers, display/visibility or a ``font`` shorthand, and groups
with opacity. For the nodes it handles it makes cairosvg's cairo calls in cairosvg's order, minus the calls that
cannot change a pixel:

- a fill or stroke whose paint is ``none``, absent or fully transparent (OVER with a clear source leaves every pixel
  as it was; the path is dropped as ``stroke()`` would);
- font options on shapes (they draw no text) and on a group when neither it nor its parent has
  ``text-rendering`` (the context then already holds the defaults cairosvg would set);
- cairo's status check after each call, its own and those cairosvg's shape, path and gradient code makes through
  the context (``UncheckedContext``): cairo errors are sticky, so :meth:`LeanSurface.check_status` after the walk
  (and cairosvg's other, checked calls) still raise them.

One thing differs on purpose: shapes without ``shape-rendering`` are filled and stroked with cairo's fast
antialiasing (4x4 samples per pixel instead of 15x256) when ``fast_antialias`` is set. Edges move by at most a
fraction of a pixel's coverage; bench/render.py reports the pixel difference next to the CPU saved, and
tests/test_render_fast.py pins both walks (byte-identical without it, edge-only differences with it).

Around the walk, the rest of what a render costs: the RGB24 (opaque) cairo surface, a curve tolerance of
:data:`CURVE_TOLERANCE_PX` (cairo's default is 0.1 px: flattening curves a quarter of a pixel off their exact course
is invisible at 512 px and saves segments), cairosvg's stylesheet matching skipped when a document has no
stylesheet (it matched every element against empty rule sets), exact shortcuts for cairosvg's length, point and
colour helpers (render_shortcuts.py), and the PNG encoding (unfiltered RGB, ISA-L's or zlib's level 1:
~4x faster than cairo's or Pillow's writer).

cairosvg and cairocffi are imported when a class is first built (only the render workers do that). The walk relies
on cairosvg's internals, checked on versions 2.7-2.9 (the bundle pins ``cairosvg<3``); on any other version, or if
they moved, :func:`surface_class` falls back to cairosvg's own walk.
"""

from __future__ import annotations

import contextlib
import functools
import struct
import sys
import zlib
from collections.abc import Callable

from svgagent.core.scoring.render_context import unchecked_context_class
from svgagent.core.scoring.render_paint import gradient_painter
from svgagent.core.scoring.render_path import draw_path, draw_polygon, draw_polyline
from svgagent.core.scoring.render_shortcuts import install as install_shortcuts
from svgagent.core.scoring.render_shortcuts import removed as shortcuts_removed

# Attributes whose presence sends a node to cairosvg's full walk (rare in model SVGs, each needs real work there).
_NEEDS_FULL_WALK = frozenset(
    (
        "font",
        "mask",
        "filter",
        "clip",
        "clip-path",
        "stroke-dasharray",
        "marker",
        "marker-start",
        "marker-mid",
        "marker-end",
        "display",
        "visibility",
    )
)
_SHAPES = frozenset(("rect", "circle", "ellipse", "line", "path", "polygon", "polyline"))
_TEXTS = frozenset(("text", "tspan"))
_DEFAULT_FONT_SIZE = "12pt"
_COLOUR_CACHE_LIMIT = 4096
CURVE_TOLERANCE_PX = 0.25
_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
_CHECKED_CAIROSVG = ((2, 7), (3, 0))  # [first, last) versions the lean walk was checked against


def zlib_deflate(data: bytes) -> bytes:
    """zlib's level 1 (the renderer's PNG compressor before python-isal, and its fallback)."""
    return zlib.compress(data, 1)


@functools.cache
def fastest_deflate() -> Callable[[bytes], bytes]:
    """The zlib stream compressor for the PNG's pixels: ISA-L's level 1 (python-isal) when it is installed, else
    zlib's level 1. Both write a standard zlib stream (every PNG decoder reads either); on the renders of
    bench/render.py's corpus ISA-L takes about a fifth of zlib's CPU for a stream ~3 % larger. The app and the
    evaluator bundle require isal (so both write the same bytes); without it the pixels are the same, the bytes not."""
    try:
        from isal import isal_zlib
    except ImportError:
        return zlib_deflate
    return functools.partial(isal_zlib.compress, level=1)


def _png(width: int, height: int, scanlines: bytes, deflate: Callable[[bytes], bytes]) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return _PNG_MAGIC + chunk(b"IHDR", header) + chunk(b"IDAT", deflate(scanlines)) + chunk(b"IEND", b"")


def encode_png_rgb(width: int, height: int, rgb: bytes, deflate: Callable[[bytes], bytes] | None = None) -> bytes:
    """A plain 8-bit RGB PNG of packed RGB rows (no row filters; the pixels compressed by ``deflate``, by default
    :func:`fastest_deflate`'s)."""
    row = width * 3
    scanlines = b"".join(b"\x00" + rgb[start : start + row] for start in range(0, row * height, row))
    return _png(width, height, scanlines, deflate or fastest_deflate())


def _rgb_image(surface):
    """(width, height, Pillow RGB image) of a drawn surface's pixels (cairo's sticky errors raised first)."""
    from PIL import Image

    check = getattr(surface, "check_status", None)
    if check is not None:
        check()
    cairo_surface = surface.cairo
    cairo_surface.flush()
    width, height = cairo_surface.get_width(), cairo_surface.get_height()
    data = cairo_surface.get_data()  # 32 bits per pixel, native-endian xRGB
    raw_mode = "BGRX" if sys.byteorder == "little" else "XRGB"
    return width, height, Image.frombuffer("RGB", (width, height), data, "raw", raw_mode, cairo_surface.get_stride(), 1)


def surface_to_png(surface, deflate: Callable[[bytes], bytes] | None = None) -> bytes:
    """The PNG of a drawn surface (of :func:`surface_class` or :func:`opaque_surface_class`); ``deflate`` as for
    :func:`encode_png_rgb`.

    Pillow turns cairo's 32-bit pixels into RGB rows each followed by a zero byte (its raw packer pads a row to the
    stride it is given), which is PNG's scanlines (a zero filter byte before each row) shifted by one byte: no
    Python loop over the rows, and one copy of the picture fewer."""
    width, height, image = _rgb_image(surface)
    row = width * 3
    padded = image.tobytes("raw", "RGB", row + 1)
    if padded[row :: row + 1].count(0) != height:  # a packer that did not zero its padding: the sure way
        return encode_png_rgb(width, height, image.tobytes(), deflate)
    return _png(width, height, b"\x00" + memoryview(padded)[:-1], deflate or fastest_deflate())


def surface_to_png_as_before(surface) -> bytes:
    """:func:`surface_to_png` as it was before python-isal and the padded rows (packed rows joined one by one, zlib's
    level 1), for comparisons (tests, bench/render.py)."""
    width, height, image = _rgb_image(surface)
    return encode_png_rgb(width, height, image.tobytes(), zlib_deflate)


@functools.cache
def opaque_surface_class():
    """cairosvg's PNGSurface drawing on an RGB24 (opaque) cairo surface, with cairosvg's own walk."""
    import cairocffi
    from cairosvg.surface import PNGSurface

    class OpaquePNGSurface(PNGSurface):
        def _create_surface(self, width, height):
            width, height = int(round(width)), int(round(height))
            return cairocffi.ImageSurface(cairocffi.FORMAT_RGB24, width, height), width, height

    return OpaquePNGSurface


@functools.cache
def surface_class():
    """The surface the renderer uses: the lean walk with fast antialiasing and the coarser curve tolerance on the
    opaque surface, and the stylesheet shortcut; cairosvg's own walk on a cairosvg version it was not checked on."""
    base = opaque_surface_class()
    if not cairosvg_checked():
        return base
    try:
        lean = lean_surface_class(base, fast_antialias=True)
        _skip_empty_stylesheets()
        install_shortcuts()
    except (ImportError, AttributeError):  # cairosvg's internals moved: draw the slow, sure way
        return base

    class RendererSurface(lean):
        def set_context_size(self, *args):
            super().set_context_size(*args)
            self.context.set_tolerance(CURVE_TOLERANCE_PX)

    return RendererSurface


def cairosvg_checked() -> bool:
    """Whether the installed cairosvg is a version the lean walk and the fast tree (render_tree.py) were checked on
    (both rely on its internals); on any other, cairosvg draws and builds its trees its own way."""
    import cairosvg

    version = tuple(int(part) for part in cairosvg.__version__.split(".")[:2] if part.isdigit())
    return _CHECKED_CAIROSVG[0] <= version < _CHECKED_CAIROSVG[1]


def _skip_empty_stylesheets() -> None:
    """Make cairosvg skip CSS matching for documents without rules (it matched each element against none).

    cairosvg's parser asks ``cairosvg.css.parse_stylesheets`` for a (normal, important) pair of matchers and calls
    ``match(element)`` on both for every element; a matcher with no selectors always answers ``[]``. This wraps the
    function (once, in this process) to hand back a matcher that answers ``[]`` without looking.
    """
    import cairosvg.css
    import cssselect2

    from svgagent.core.scoring.render_tree import has_rules

    original = cairosvg.css.parse_stylesheets
    if getattr(original, "_svgagent_wrapped", False):
        return

    class NoRules(cssselect2.Matcher):
        def match(self, element):
            return []

    def parse_stylesheets(tree, url):
        normal, important = original(tree, url)
        return (normal if has_rules(normal) else NoRules(), important if has_rules(important) else NoRules())

    parse_stylesheets._svgagent_wrapped = True
    parse_stylesheets.__wrapped__ = original
    cairosvg.css.parse_stylesheets = parse_stylesheets


@functools.cache
def lean_surface_class(base, fast_antialias: bool = False):
    """``base`` (a cairosvg PNGSurface subclass) with the lean ``draw`` described in the module docstring."""
    import cairocffi
    from cairocffi import cairo as lib
    from cairosvg import helpers
    from cairosvg import surface as cs
    from cairosvg.helpers import PointError, transform
    from cairosvg.text import text as draw_text

    shape_antialias = cs.SHAPE_ANTIALIAS
    # paths and point lists drawn by render_path.py (the same calls, no vertices)
    draw_shape = {**cs.TAGS, "path": draw_path, "polyline": draw_polyline, "polygon": draw_polygon}
    invisible = cs.INVISIBLE_TAGS
    plain_antialias = cairocffi.ANTIALIAS_FAST if fast_antialias else cairocffi.ANTIALIAS_DEFAULT
    line_caps = {"square": cairocffi.LINE_CAP_SQUARE, "round": cairocffi.LINE_CAP_ROUND}
    line_joins = {"round": cairocffi.LINE_JOIN_ROUND, "bevel": cairocffi.LINE_JOIN_BEVEL}
    even_odd = cairocffi.FILL_RULE_EVEN_ODD
    needs_full_walk = _NEEDS_FULL_WALK.isdisjoint
    paint_server = gradient_painter()  # cairosvg's gradient_or_pattern, its gradients' numbers remembered
    colours: dict = {}  # (paint, opacity) -> rgba; colours repeat across the renders of a worker

    UncheckedContext = unchecked_context_class()

    class LeanSurface(base):
        def set_context_size(self, *args):
            if type(self.context) is not UncheckedContext:  # the context Surface.__init__ has just made
                self.context = UncheckedContext._from_pointer(self.context._pointer, incref=True)
            super().set_context_size(*args)

        def draw(self, node):  # noqa: C901 - one straight walk, in cairosvg's order of calls
            tag = node.tag
            is_text = tag in _TEXTS
            if (tag not in _SHAPES and tag != "g" and not is_text) or not needs_full_walk(node):
                return super().draw(node)
            children = node.children
            opacity = float(node["opacity"]) if "opacity" in node else 1.0
            if opacity < 1 and children:  # a group with opacity is composited through push_group
                return super().draw(node)
            if is_text and not self._plain_text(node, opacity):
                return super().draw(node)
            if ("width" in node and helpers.size(self, node["width"]) == 0) or (
                "height" in node and helpers.size(self, node["height"]) == 0
            ):
                return None

            parent = self.parent_node
            old_font_size = self.font_size
            old_context_size = self.context_width, self.context_height
            self.parent_node = node
            font_size = node.get("font-size")
            self.font_size = self._default_font_size if font_size is None else helpers.size(self, font_size)
            pointer = self.context._pointer
            lib.cairo_save(pointer)
            if "transform" in node:
                transform(self, node["transform"], transform_origin=node.get("transform-origin"))
            x, y = node.get("x"), node.get("y")
            lib.cairo_move_to(pointer, helpers.size(self, x, "x") if x else 0, helpers.size(self, y, "y") if y else 0)
            line_cap = line_caps.get(node.get("stroke-linecap"))
            if line_cap is not None:
                lib.cairo_set_line_cap(pointer, line_cap)
            line_join = line_joins.get(node.get("stroke-linejoin"))
            if line_join is not None:
                lib.cairo_set_line_join(pointer, line_join)
            lib.cairo_set_miter_limit(pointer, float(node.get("stroke-miterlimit", 4)))

            is_shape = tag in _SHAPES
            if is_shape:
                try:
                    draw_shape[tag](self, node)
                except PointError:
                    pass
            # (a plain text node skips cairosvg's first pass, which only builds glyph outlines to stroke)
            lib.cairo_set_antialias(
                pointer,
                shape_antialias.get(
                    node.get("shape-rendering"), cairocffi.ANTIALIAS_DEFAULT if is_text else plain_antialias
                ),
            )
            if is_text or (not is_shape and (parent is None or "text-rendering" in node or "text-rendering" in parent)):
                # Font options only matter to text; when neither a group nor the node that set the context's
                # options (its parent) has text-rendering, they already hold the defaults cairosvg would set.
                self._set_font_options(node)

            if is_text:
                fill_opacity = float(node.get("fill-opacity", 1)) * opacity
                self._fill(pointer, node, fill_opacity, glyphs=True)
                lib.cairo_new_path(pointer)  # no stroke (see _plain_text)
            elif self.stroke_and_fill and is_shape:
                fill_opacity = float(node.get("fill-opacity", 1)) * opacity
                stroke_opacity = float(node.get("stroke-opacity", 1)) * opacity
                self._fill(pointer, node, fill_opacity)
                self._stroke(pointer, node, stroke_opacity)

            if tag not in invisible:
                for child in children:
                    self.draw(child)
            if tag == "text":
                self.cursor_position = [0, 0]
                self.cursor_d_position = [0, 0]
                self.text_path_width = 0

            lib.cairo_restore(pointer)
            self.parent_node = parent
            self.font_size = old_font_size
            self.context_width, self.context_height = old_context_size
            return None

        def _plain_text(self, node, opacity) -> bool:
            """A text node cairosvg would draw in two passes of which the first cannot show: glyph outlines built
            for a stroke that is transparent, under a fill that needs no bounding box (no gradient or pattern)."""
            if not self.stroke_and_fill:  # inside a clip path the outlines are the clip
                return False
            stroke_source, stroke = helpers.paint(node.get("stroke"))
            if stroke_source is not None or self._rgba(stroke, float(node.get("stroke-opacity", 1)) * opacity)[3]:
                return False
            return helpers.paint(node.get("fill", "black"))[0] is None

        def check_status(self) -> None:
            """Raise cairo's (sticky) error, if any call of the walk failed."""
            self.context._check_status()

        @functools.cached_property
        def _default_font_size(self) -> float:
            return helpers.size(self, _DEFAULT_FONT_SIZE)

        def _set_font_options(self, node) -> None:
            rendering = node.get("text-rendering")
            options = self.context.get_font_options()
            options.set_antialias(cs.TEXT_ANTIALIAS.get(rendering, cairocffi.ANTIALIAS_DEFAULT))
            options.set_hint_style(cs.TEXT_HINT_STYLE.get(rendering, cairocffi.HINT_STYLE_DEFAULT))
            options.set_hint_metrics(cs.TEXT_HINT_METRICS.get(rendering, cairocffi.HINT_METRICS_DEFAULT))
            self.context.set_font_options(options)

        def _rgba(self, value, opacity):
            """cairosvg's colour for a paint value at an opacity (a pure function: remembered)."""
            key = (value, opacity)
            rgba = colours.get(key)
            if rgba is None:
                if len(colours) >= _COLOUR_CACHE_LIMIT:
                    colours.clear()
                rgba = colours[key] = self.map_color(value, opacity)
            return rgba

        def _fill(self, pointer, node, opacity, glyphs=False) -> None:
            source, value = helpers.paint(node.get("fill", "black"))
            if source is None and not glyphs and self._rgba(value, opacity)[3] == 0:
                return  # nothing to paint; the path stays for the stroke, as after fill_preserve
            lib.cairo_save(pointer)
            if node.get("fill-rule") == "evenodd":
                lib.cairo_set_fill_rule(pointer, even_odd)
            if source is None or not paint_server(self, node, source, opacity):
                lib.cairo_set_source_rgba(pointer, *self._rgba(value, opacity))
            if glyphs:  # text is shown even when transparent: it moves the text cursor
                draw_text(self, node, draw_as_text=True)
            else:
                lib.cairo_fill_preserve(pointer)
            lib.cairo_restore(pointer)

        def _stroke(self, pointer, node, opacity) -> None:
            source, value = helpers.paint(node.get("stroke"))
            if source is None and self._rgba(value, opacity)[3] == 0:
                lib.cairo_new_path(pointer)  # what stroke() leaves behind
                return
            lib.cairo_save(pointer)
            lib.cairo_set_line_width(pointer, helpers.size(self, node.get("stroke-width", "1")))
            if source is None or not paint_server(self, node, source, opacity):
                lib.cairo_set_source_rgba(pointer, *self._rgba(value, opacity))
            lib.cairo_stroke(pointer)
            lib.cairo_restore(pointer)

    LeanSurface.__name__ = LeanSurface.__qualname__ = f"Lean{base.__name__}"
    return LeanSurface


@contextlib.contextmanager
def cairosvg_as_shipped():
    """Within the block, cairosvg matches stylesheets and computes lengths, points and colours its own way, without
    the shortcuts the renderer installs (for comparisons: tests, bench/render.py)."""
    import cairosvg.css

    current = cairosvg.css.parse_stylesheets
    cairosvg.css.parse_stylesheets = getattr(current, "__wrapped__", current)
    try:
        with shortcuts_removed():
            yield
    finally:
        cairosvg.css.parse_stylesheets = current
