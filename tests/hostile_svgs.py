"""A corpus of hostile SVG inputs, written for this project's renderer tests.

Each case says what a safe renderer may do with it: ``"error"`` (must be refused with a reason), ``"png"`` (must
render, bounded) or ``"either"`` (a bounded PNG or a clear refusal/timeout are both acceptable).

Cases that try to reach the outside world point at :class:`HostileEnv`: a loopback HTTP server that records every
connection, and a directory of planted files whose content is a distinctive green (#00ff00). A render that read any
of them would show green pixels; the hostile SVGs themselves never use green.
"""

from __future__ import annotations

import gzip
import os
import struct
import zlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

GREEN = "#00ff00"
SVG_NS = 'xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink"'


@dataclass(frozen=True)
class HostileEnv:
    http_base: str  # e.g. "http://127.0.0.1:43123"
    planted_dir: Path  # holds green.png, green.svg, green.css, color.txt

    @property
    def https_base(self) -> str:
        return self.http_base.replace("http://", "https://")

    def file_url(self, name: str) -> str:
        return (self.planted_dir / name).as_uri()

    def relative(self, name: str) -> str:
        """Path of a planted file relative to the current directory (which the render workers inherit)."""
        return os.path.relpath(self.planted_dir / name)


@dataclass(frozen=True)
class HostileCase:
    name: str
    svg: str | bytes
    expect: str  # "error" | "png" | "either"
    reason: str | None = None  # a substring the error reason must contain (when expect == "error")
    external: bool = False  # tries to reach files or network (safe and fast to run in-process)


# ------------------------------------------------------------------------------------------ planted content


def _png(width: int, height: int, bit_depth: int, colour_type: int, pixel_rows: bytes) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", width, height, bit_depth, colour_type, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixel_rows) + chunk(b"IEND", b"")


def png_bytes(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A solid-colour RGB PNG."""
    return _png(width, height, 8, 2, zlib.compress((b"\x00" + bytes(rgb) * width) * height))


@cache
def png_bomb(side: int = 20_000) -> bytes:
    """A 1-bit greyscale PNG of side x side pixels: ~50 kB compressed, side*side*4 bytes once decoded by cairo."""
    row = b"\x00" + bytes((side + 7) // 8)
    compressor = zlib.compressobj(9)
    return _png(side, side, 1, 0, b"".join(compressor.compress(row) for _ in range(side)) + compressor.flush())


PLANTED_FILES = {
    "green.png": png_bytes(64, 64, (0, 255, 0)),
    "green.svg": (
        f'<svg {SVG_NS} width="100" height="100"><g id="g"><rect width="100" height="100" fill="{GREEN}"/></g>'
        f'<text id="t">planted</text></svg>'
    ).encode(),
    "green.css": f"rect, circle, path, svg, g {{ fill: {GREEN} !important; stroke: {GREEN} !important; }}".encode(),
    "color.txt": GREEN.encode(),
}


def plant_files(directory: Path) -> None:
    for name, content in PLANTED_FILES.items():
        (directory / name).write_bytes(content)


# ------------------------------------------------------------------------------------------------ helpers


def _svg(body: str, attrs: str = 'width="100" height="100"', head: str = "") -> str:
    return f"{head}<svg {SVG_NS} {attrs}>{body}</svg>"


def _base_rect() -> str:
    return '<rect x="10" y="10" width="80" height="80" fill="#3050c0"/>'


def _b64(data: bytes) -> str:
    import base64

    return base64.b64encode(data).decode()


@cache
def _gzip_bomb() -> bytes:
    """~1 kB of gzip that expands to 100 MB of spaces (well past any sane cap)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    chunk = b" " * 1_000_000
    head = compressor.compress(b"<svg xmlns='http://www.w3.org/2000/svg'>")
    return head + b"".join(compressor.compress(chunk) for _ in range(100)) + compressor.flush()


def _huge_gif_header() -> bytes:
    """A GIF whose logical screen claims 65535 x 65535 pixels."""
    screen = b"GIF89a" + struct.pack("<HHBBB", 65535, 65535, 0x80, 0, 0) + b"\x00\x00\x00\xff\xff\xff"
    image = b"\x2c" + struct.pack("<HHHHB", 0, 0, 65535, 65535, 0) + b"\x02\x02\x44\x01\x00"
    return screen + image + b"\x3b"


# -------------------------------------------------------------------------------------------------- corpus


@cache
def build_corpus(env: HostileEnv) -> tuple[HostileCase, ...]:
    http, https = env.http_base, env.https_base
    rect = _base_rect()
    lol = '<!ENTITY lol "lollollollollollollollollollol">' + "".join(
        f'<!ENTITY lol{i} "{("&lol" + (str(i - 1) if i > 1 else "") + ";") * 10}">' for i in range(1, 10)
    )
    nested_svg_with_remote = _svg(f'<image href="{http}/nested.png" width="100" height="100"/>')
    use_chain = "".join(
        f'<g id="l{i}">' + "".join(f'<use href="#l{i - 1}"/>' for _ in range(10)) + "</g>" for i in range(1, 9)
    )
    many_filters = "".join(f'<feOffset dx="{i % 7}" dy="{i % 5}"/><feBlend mode="multiply"/>' for i in range(3000))
    big_path = "M0 0 " + " ".join(f"L{(i * 7) % 100} {(i * 13) % 100}" for i in range(90_000))
    many_rects = "".join(f'<rect x="{i % 100}" y="{(i // 100) % 100}" width="3" height="3"/>' for i in range(20_000))
    return (
        # --- XML-level attacks
        HostileCase(
            "billion_laughs",
            f'<?xml version="1.0"?><!DOCTYPE svg [{lol}]>' + _svg("<text>&lol9;</text>"),
            "error",
            "entities",
        ),
        HostileCase(
            "xxe_file_entity",
            f'<!DOCTYPE svg [<!ENTITY x SYSTEM "{env.file_url("color.txt")}">]>'
            + _svg('<rect width="100" height="100" fill="&x;"/>'),
            "error",
            "entities",
            external=True,
        ),
        HostileCase(
            "xxe_http_entity",
            f'<!DOCTYPE svg [<!ENTITY x SYSTEM "{http}/color.txt">]>'
            + _svg('<rect width="100" height="100" fill="&x;"/>'),
            "error",
            "entities",
            external=True,
        ),
        HostileCase(
            "xxe_parameter_entity",
            f'<!DOCTYPE svg [<!ENTITY % p SYSTEM "{http}/evil.dtd"> %p;]>' + _svg(rect),
            "error",
            external=True,
        ),
        HostileCase("external_dtd", f'<!DOCTYPE svg SYSTEM "{http}/svg.dtd">' + _svg(rect), "either", external=True),
        HostileCase(
            "xinclude",
            _svg(
                f'<xi:include xmlns:xi="http://www.w3.org/2001/XInclude" href="{env.file_url("green.svg")}"/>'
                f'<xi:include xmlns:xi="http://www.w3.org/2001/XInclude" href="{http}/green.svg"/>' + rect
            ),
            "either",
            external=True,
        ),
        HostileCase("malformed_xml", "<svg><rect></svg>", "error", "well-formed"),
        # --- external references: images, <use>, <tref>, CSS, fonts, filters
        HostileCase(
            "image_file_url",
            _svg(f'<image href="{env.file_url("green.png")}" width="100" height="100"/>'),
            "error",
            "external reference refused",
            external=True,
        ),
        HostileCase(
            "image_absolute_path",
            _svg(f'<image href="{env.planted_dir / "green.png"}" width="100" height="100"/>'),
            "error",
            "refused",
            external=True,
        ),
        HostileCase(
            "image_relative_path",
            _svg(f'<image href="{env.relative("green.png")}" width="100" height="100"/>'),
            "error",
            "refused",
            external=True,
        ),
        HostileCase(
            "image_xml_base",
            _svg(f'<image xml:base="{env.planted_dir.as_uri()}/" href="green.png" width="100" height="100"/>'),
            "error",
            "refused",
            external=True,
        ),
        HostileCase(
            "image_http",
            _svg(f'<image href="{http}/green.png" width="100" height="100"/>'),
            "error",
            "refused",
            external=True,
        ),
        HostileCase(
            "image_https_xlink",
            _svg(f'<image xlink:href="{https}/green.png" width="100" height="100"/>'),
            "error",
            "refused",
            external=True,
        ),
        HostileCase(
            "nested_data_svg_with_remote_image",
            _svg(
                f'<image href="data:image/svg+xml;base64,{_b64(nested_svg_with_remote.encode())}" '
                'width="100" height="100"/>'
            ),
            "error",
            "refused",
            external=True,
        ),
        HostileCase("use_remote_file", _svg(f'<use href="{http}/green.svg#g"/>'), "error", "refused", external=True),
        HostileCase(
            "use_local_file",
            _svg(f'<use xlink:href="{env.file_url("green.svg")}#g"/>'),
            "error",
            "refused",
            external=True,
        ),
        HostileCase(
            "use_relative_file", _svg(f'<use href="{env.relative("green.svg")}#g"/>'), "error", "refused", external=True
        ),
        HostileCase(
            "tref_remote",
            _svg(f'<text x="5" y="50"><tref xlink:href="{http}/green.svg#t"/></text>'),
            "error",
            "refused",
            external=True,
        ),
        HostileCase(
            "css_import_http",
            _svg(f"<style>@import url({http}/green.css);</style>" + rect),
            "error",
            "refused",
            external=True,
        ),
        HostileCase(
            "css_import_file",
            _svg(f'<style>@import "{env.file_url("green.css")}";</style>' + rect),
            "error",
            "refused",
            external=True,
        ),
        HostileCase(
            "css_url_values",
            _svg(
                f"<style>rect {{ fill: url({http}/paint.svg#p); background: url({http}/bg.png); "
                f"cursor: url({env.file_url('green.png')}); }}</style>"
                + rect
                + f'<circle cx="50" cy="50" r="20" style="fill:url({env.file_url("green.svg")}#g)"/>'
            ),
            "either",
            external=True,
        ),
        HostileCase(
            "font_face_remote",
            _svg(
                f"<style>@font-face {{ font-family: evil; src: url({http}/evil.ttf); }} "
                f"@font-face {{ font-family: local; src: url({env.file_url('green.png')}); }}</style>"
                '<text x="5" y="50" font-family="evil, local">text</text>'
            ),
            "either",
            external=True,
        ),
        HostileCase(
            "font_family_is_a_path",
            _svg(f'<text x="5" y="50" font-family="{env.planted_dir / "green.svg"}">path font</text>'),
            "png",
            external=True,
        ),
        HostileCase(
            "fe_image_remote",
            _svg(
                f'<filter id="f"><feImage href="{http}/green.png"/></filter><rect width="100" height="100" '
                f'fill="#3050c0" filter="url(#f)"/>'
            ),
            "either",
            external=True,
        ),
        HostileCase(
            "mask_and_pattern_remote",
            _svg(
                f'<rect width="100" height="100" fill="url({http}/p.svg#p)" mask="url({http}/m.svg#m)" '
                f'clip-path="url({env.file_url("green.svg")}#c)"/>'
            ),
            "either",
            external=True,
        ),
        HostileCase(
            "script_and_handlers",
            _svg(
                f'<script>fetch("{http}/script");</script><script href="{http}/x.js"/><a href="{http}/link">{rect}</a>',
                attrs=f'width="100" height="100" onload="fetch(\'{http}/onload\')"',
            ),
            "png",
            external=True,
        ),
        # --- embedded (data:) payloads
        HostileCase(
            "data_png_bomb",
            _svg(f'<image href="data:image/png;base64,{_b64(png_bomb())}" width="100" height="100"/>'),
            "error",
            "too large",
        ),
        HostileCase(
            "data_gif_huge_screen",
            _svg(f'<image href="data:image/gif;base64,{_b64(_huge_gif_header())}" width="100" height="100"/>'),
            "error",
            "too large",
        ),
        HostileCase(
            "data_unsupported_format",
            _svg(
                '<image href="data:application/postscript;base64,'
                f'{_b64(b"%!PS-Adobe-3.0 EPSF-3.0 showpage")}" width="100" height="100"/>'
            ),
            "error",
            "not supported",
        ),
        HostileCase(
            "data_gzip_bomb_svg",
            _svg(f'<image href="data:image/svg+xml;base64,{_b64(_gzip_bomb())}" width="100" height="100"/>'),
            "error",
            "expands beyond",
        ),
        # --- claimed sizes
        HostileCase("huge_claimed_size", _svg(rect, attrs='width="1000000" height="1000000"'), "png"),
        HostileCase("huge_claimed_strip", _svg(rect, attrs='width="1000000" height="1"'), "png"),
        HostileCase("huge_viewbox", _svg(rect, attrs='viewBox="0 0 1e30 1e30"'), "either"),
        HostileCase("negative_size", _svg(rect, attrs='width="-100" height="100"'), "error", "negative"),
        HostileCase("zero_size", _svg(rect, attrs='width="0" height="0"'), "error", "zero"),
        HostileCase("negative_viewbox", _svg(rect, attrs='viewBox="0 0 -10 -10"'), "error", "viewBox"),
        HostileCase("infinite_size", _svg(rect, attrs='width="1e400" height="10"'), "error", "finite"),
        HostileCase(
            "huge_coordinates",
            _svg(
                '<rect x="-1e300" y="-1e300" width="1e308" height="1e308" fill="#c03050" stroke-width="1e300" '
                'stroke="#000"/><circle r="1e200" cx="1e200" cy="5"/>'
            ),
            "error",
            "beyond",
        ),
        HostileCase(
            "infinite_radius", _svg('<circle cx="50" cy="50" r="1e400" stroke="#000"/>'), "error", "not finite"
        ),
        HostileCase(
            "nan_coordinates", _svg('<circle cx="NaN" cy="50" r="5"/><path d="M0 0 L nan 5 Z"/>'), "error", "not finite"
        ),
        # --- cost explosions
        HostileCase("deep_nesting_100k", _svg("<g>" * 100_000 + rect + "</g>" * 100_000), "either"),
        HostileCase("huge_path_data", _svg(f'<path d="{big_path}" stroke="#000" fill="none"/>'), "either"),
        HostileCase("many_elements", _svg(many_rects), "either"),
        HostileCase(
            "use_exponential",
            _svg(f'<defs><rect id="l0" width="1" height="1"/>{use_chain}</defs><use href="#l8"/>'),
            "error",
            "drawn elements",
        ),
        HostileCase("use_self_reference", _svg('<g id="a"><use href="#a"/></g>' + rect), "error", "cycle"),
        HostileCase(
            "big_gaussian_blur",
            _svg(
                '<filter id="b" x="-1000%" y="-1000%" width="3000%" height="3000%">'
                '<feGaussianBlur stdDeviation="1000000"/><feMorphology radius="100000"/>'
                '<feConvolveMatrix order="300" kernelMatrix="1"/><feTurbulence numOctaves="100000"/></filter>'
                '<rect width="100" height="100" fill="#3050c0" filter="url(#b)"/>'
            ),
            "either",
        ),
        HostileCase(
            "many_filter_primitives",
            _svg(
                f'<filter id="m">{many_filters}</filter><rect width="100" height="100" fill="#3050c0" '
                'filter="url(#m)"/>'
            ),
            "either",
        ),
        # a closepath followed by data other than a command: cairosvg's path() and its bounding box of a path
        # requeued the data for ever; rendered up to the closepath (SVG's path error handling)
        HostileCase("closepath_then_numbers", _svg('<path d="M0 0 Z 5 5"/>'), "png"),
        HostileCase(
            "closepath_then_text_before_a_command",
            _svg('<path d="M10 10 L90 10 L90 90z.x L10 90" stroke="#000"/>'),
            "png",
        ),
        HostileCase(
            "closepath_then_numbers_inherited_and_styled",
            _svg(
                '<style>.s { d: M0 0 L9 0 Z 1 }</style><g d="M10 10 L90 90 Z 5"><path/></g><path class="s"/>'
                '<path style="d: M5 5 L9 9 Z 5 5"/>'
            ),
            "png",
        ),
        HostileCase(
            "closepath_then_numbers_in_marker_and_arc",
            _svg(
                '<marker id="m"><path d="M0 0 L4 4 Z 5"/></marker><path d="M10 10 A5 5 0 0 1 50 50 Z 5 5" '
                'marker-end="url(#m)" stroke="#000"/>'
            ),
            "png",
        ),
        HostileCase(
            "dash_explosion",
            _svg(
                '<path d="M0 0 L100 100 L0 100 L100 0 Z" stroke="#000" stroke-width="50" '
                'stroke-dasharray="0.00001 0.00001" transform="scale(1000)"/>'
            ),
            "either",
        ),
        HostileCase(
            "tiny_pattern_tiles",
            _svg(
                '<pattern id="p" width="0.00001" height="0.00001" patternUnits="userSpaceOnUse">'
                '<rect width="0.000005" height="0.000005" fill="#c03050"/></pattern>'
                '<rect width="100" height="100" fill="url(#p)"/>'
            ),
            "either",
        ),
        # --- encodings and envelopes
        HostileCase(
            "invalid_utf8", b"<svg xmlns='http://www.w3.org/2000/svg'><text>\xff\xfe\xc3</text></svg>", "error", "UTF-8"
        ),
        HostileCase("gzip_bomb", _gzip_bomb(), "error", "expands beyond"),
        HostileCase("svgz_small_ok", gzip.compress(_svg(rect).encode()), "png"),
        HostileCase("non_svg_root", "<html><body><svg/></body></html>", "error", "not an SVG"),
        HostileCase(
            "svg_in_foreign_namespace", '<svg xmlns="http://evil.example/ns"><rect/></svg>', "error", "not an SVG"
        ),
        HostileCase("empty", "", "error", "empty"),
        HostileCase("whitespace_only", " \n\t ", "error", "empty"),
        HostileCase("oversize", _svg("<!--" + "x" * 1_200_000 + "-->" + rect), "error", "too large"),
    )


def case_names() -> list[str]:
    return [case.name for case in build_corpus(HostileEnv("http://127.0.0.1:9", Path("/nonexistent")))]
