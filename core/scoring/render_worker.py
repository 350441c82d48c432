"""The sandboxed side of SVG rendering: the in-process core and the worker-process main loop.

:func:`render_svg_to_png` checks the input (size cap, gzip with a capped expansion, UTF-8, root element, the
up-front cost checks of render_guard), refuses every external reference (only inline ``data:`` URLs are served:
nothing is read from disk or network), keeps cairosvg's entity refusal (``unsafe=False``) and has cairosvg draw and
encode the picture as ``cairosvg.svg2png`` does, with its own parameters: the longest side exactly ``size`` px
whatever the SVG claims, on white. The pixels are cairosvg's, except for path data holding a closepath error, which
cairosvg never finishes reading (render_path). cairosvg is imported lazily, on the first render.

Run as ``__main__`` (by :class:`svgagent.core.scoring.render.Renderer`) it is a worker: it
warms cairosvg up, limits its address space with ``RLIMIT_AS`` and serves requests on stdin/stdout until stdin
closes. Request: ``>II`` (size, length) + SVG bytes. Reply: ``>BI`` (status, length) + a PNG (``OK``), a UTF-8
reason (``ERROR``; ``ERROR_RECYCLE``: replace this worker) or nothing (``READY``, once, at startup).
"""

from __future__ import annotations

import argparse
import base64
import binascii
import functools
import gc
import io
import math
import os
import re
import resource
import signal
import struct
import sys
import threading
import time
import zlib
from urllib.parse import unquote_to_bytes

from svgagent.core.scoring.errors import RenderError

# cairosvg, render_guard and render_path are imported by the function that draws: a worker imports them as it boots
# (its warm-up render), the processes that only talk to workers (the engine, the app: this module's protocol and
# limits) never do.

REQUEST_HEADER = struct.Struct(">II")
REPLY_HEADER = struct.Struct(">BI")
OK, ERROR, ERROR_RECYCLE, READY = 0, 1, 2, 3
_WARMUP_SVG = (
    b'<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><rect width="4" height="4"/><text>a</text></svg>'
)
DEFAULT_SIZE = 512
DEFAULT_MAX_BYTES = 1_000_000
MAX_OUTPUT_SIZE = 16_384  # cairo cannot make image surfaces wider than 32767 px
MAX_EMBEDDED_IMAGE_PIXELS = 4096 * 4096
DEFAULT_SIDE_PX = 100.0  # used for a missing width/height when nothing else tells the size
_DPI = 96
_FONT_SIZE_PX = 16.0  # cairosvg's default font size (12pt at 96 dpi)

_EMPTY_SVG = b'<svg xmlns="http://www.w3.org/2000/svg"/>'
_GZIP_MAGIC = b"\x1f\x8b"
_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
_RASTER_SIGNATURES = ((_PNG_MAGIC, "PNG"), (b"\xff\xd8\xff", "JPEG"), (b"GIF87a", "GIF"), (b"GIF89a", "GIF"))
_UNIT_PX = {"": 1.0, "px": 1.0, "pt": _DPI / 72, "pc": _DPI / 6, "in": float(_DPI), "cm": _DPI / 2.54,
            "mm": _DPI / 25.4, "em": _FONT_SIZE_PX, "ex": _FONT_SIZE_PX / 2}  # fmt: skip
_LENGTH_RE = re.compile(r"^\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*(px|pt|pc|in|cm|mm|em|ex|%)?\s*$")


class RenderOutOfMemory(RenderError):
    """The render needed more memory than the process may use (the worker recycles itself after this)."""


# --------------------------------------------------------------------------- input checks, inline-only fetcher


def _shorten(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def gunzip_capped(data: bytes, limit: int) -> bytes:
    """Decompress gzip ``data`` but never produce more than ``limit`` bytes (a gzip bomb fails fast)."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(data, limit + 1)
    except zlib.error as err:
        raise RenderError(f"gzip-compressed SVG is corrupt ({err})") from None
    if len(out) > limit:
        raise RenderError(f"gzip-compressed SVG expands beyond the limit of {limit} bytes")
    if not inflater.eof:
        raise RenderError("gzip-compressed SVG is truncated or corrupt")
    if out.startswith(_GZIP_MAGIC):
        raise RenderError("gzip-compressed SVG is compressed twice; refused")
    return out


def encode_capped(svg: str | bytes, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """The SVG as bytes (str -> UTF-8), refusing other types and anything over ``max_bytes``."""
    if isinstance(svg, str):
        if len(svg) > max_bytes:  # every character is at least one byte: no need to encode a huge string
            size = f"{len(svg)} bytes" if svg.isascii() else f"at least {len(svg)} bytes"
            raise RenderError(f"SVG too large: {size} (limit {max_bytes})")
        try:
            svg = svg.encode("utf-8")
        except UnicodeEncodeError as err:
            raise RenderError(f"SVG text cannot be encoded as UTF-8 (bad character at index {err.start})") from None
    elif isinstance(svg, (bytearray, memoryview)):
        svg = bytes(svg)
    elif not isinstance(svg, bytes):
        raise RenderError(f"SVG must be str or bytes, not {type(svg).__name__}")
    if len(svg) > max_bytes:
        raise RenderError(f"SVG too large: {len(svg)} bytes (limit {max_bytes})")
    return svg


def svg_input_bytes(svg: str | bytes, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """Return the SVG as UTF-8 bytes after the cheap checks (type, size cap, gzip, UTF-8, emptiness)."""
    data = encode_capped(svg, max_bytes)
    if data.startswith(_GZIP_MAGIC):
        data = gunzip_capped(data, max_bytes)
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise RenderError(f"SVG is not valid UTF-8 (byte 0x{data[err.start]:02x} at offset {err.start})") from None
    if not data.strip():
        raise RenderError("SVG is empty")
    return data


def _decode_data_url(url: str) -> bytes:
    header, comma, body = url[len("data:") :].partition(",")
    if not comma:
        raise RenderError("malformed data: URL (no comma)")
    if header.strip().lower().endswith(";base64"):
        text = re.sub(r"\s+", "", unquote_to_bytes(body).decode("ascii", "replace"))
        try:
            return base64.b64decode(text + "=" * (-len(text) % 4))
        except (binascii.Error, ValueError):
            raise RenderError("malformed data: URL (bad base64)") from None
    return unquote_to_bytes(body)


def _raster_kind(payload: bytes) -> str | None:
    if payload[:4] == b"RIFF" and payload[8:12] == b"WEBP":
        return "WEBP"
    return next((kind for magic, kind in _RASTER_SIGNATURES if payload.startswith(magic)), None)


def _check_embedded_image(payload: bytes) -> None:
    """Allow only common raster formats (no exotic decoders) of a bounded pixel count, or SVG text."""
    kind = _raster_kind(payload)
    if kind is None:
        if len(payload) < 5 or b"<svg" in payload or payload.lstrip().startswith((b"<?xml", b"<!DOC")):
            return  # too short to draw (cairosvg skips it) or SVG, which cairosvg parses with the same rules
        raise RenderError("embedded image type not supported (only PNG, JPEG, GIF, WebP and SVG)")
    if kind == "PNG" and len(payload) >= 24:
        width, height = struct.unpack(">II", payload[16:24])
    else:
        from PIL import Image

        try:
            with Image.open(io.BytesIO(payload), formats=[kind]) as image:
                width, height = image.size
        except Image.DecompressionBombError:
            raise RenderError(f"embedded {kind} image too large (decompression bomb)") from None
        except Exception:  # noqa: BLE001 - any decoder complaint means "not an image we can use"
            raise RenderError(f"embedded {kind} image is corrupt") from None
    if width * height > MAX_EMBEDDED_IMAGE_PIXELS:
        raise RenderError(f"embedded {kind} image too large: {width}x{height} px")


def _make_fetcher(max_bytes: int):
    def fetch_inline_only(url: str, resource_type: str) -> bytes:
        """cairosvg calls this for every resource it wants (images, <use>/<tref> targets, CSS @import)."""
        if url.rstrip("/") == f"file://{os.path.abspath('')}".rstrip("/"):  # how cairosvg passes a missing href
            return _EMPTY_SVG if resource_type == "image/svg+xml" else b""  # nothing to draw, nothing was read
        if not url[:5].lower() == "data:":
            raise RenderError(f"external reference refused: {_shorten(url)} (only inline data: URLs are allowed)")
        payload = _decode_data_url(url)
        if len(payload) > max_bytes:
            raise RenderError(f"data: URL too large: {len(payload)} bytes (limit {max_bytes})")
        if payload.startswith(_GZIP_MAGIC):
            payload = gunzip_capped(payload, max_bytes)
        if resource_type.startswith("image/") and resource_type != "image/svg+xml":
            _check_embedded_image(payload)
        if resource_type == "image/svg+xml" or _raster_kind(payload) is None:
            from svgagent.core.scoring.render_guard import check_render_cost

            check_render_cost(payload)  # a nested document gets the same up-front checks as the outer one
        return payload

    return fetch_inline_only


# ----------------------------------------------------------------------------------------------- sizing


def _parse_length(raw: str | None, what: str) -> float | None:
    """A root width/height in px; None when missing, relative (%) or not understood (then the viewBox decides)."""
    if raw is None:
        return None
    match = _LENGTH_RE.match(raw)
    if not match or match.group(2) == "%":
        return None
    value = float(match.group(1)) * _UNIT_PX[match.group(2) or ""]
    if not math.isfinite(value):
        raise RenderError(f"invalid SVG size: {what} is not a finite number ({_shorten(raw, 30)})")
    if value < 0:
        raise RenderError(f"invalid SVG size: {what} is negative ({_shorten(raw, 30)})")
    if value == 0:
        raise RenderError(f"invalid SVG size: {what} is zero")
    return value


def _parse_viewbox(raw: str | None) -> tuple[float, float, float, float] | None:
    if raw is None or not raw.strip():
        return None
    try:
        numbers = tuple(float(part) for part in re.split(r"[\s,]+", raw.strip()))
    except ValueError:
        numbers = ()
    if len(numbers) != 4 or not all(math.isfinite(n) for n in numbers):
        raise RenderError(f'invalid viewBox "{_shorten(raw, 40)}" (needs four numbers)')
    if numbers[2] <= 0 or numbers[3] <= 0:
        raise RenderError(f'invalid viewBox "{_shorten(raw, 40)}" (width and height must be positive)')
    return numbers  # type: ignore[return-value]


def intrinsic_size(width: str | None, height: str | None, viewbox: str | None) -> tuple[float, float]:
    """The size in px an SVG root claims, filling gaps from the viewBox (keeping its aspect) or a default."""
    box = _parse_viewbox(viewbox)
    w, h = _parse_length(width, "width"), _parse_length(height, "height")
    if box is not None:
        aspect = box[2] / box[3]
        if w is None and h is None:
            w, h = box[2], box[3]
        elif w is None:
            w = h * aspect
        elif h is None:
            h = w / aspect
    w = w if w is not None else (h if h is not None else DEFAULT_SIDE_PX)
    h = h if h is not None else w
    return w, h


def fit_longest_side(width: float, height: float, size: int) -> tuple[int, int]:
    """Scale (up or down) so the longest side is exactly ``size`` px; the other side is at least 1 px."""
    scale = size / max(width, height)
    return min(size, max(1, round(width * scale))), min(size, max(1, round(height * scale)))


# ------------------------------------------------------------------------------------------ in-process core


def _parse_tree(data: bytes, fetcher):
    """cairosvg's tree of ``data``, fetching through ``fetcher``, entities refused."""
    from xml.etree.ElementTree import ParseError

    from cairosvg.parser import Tree
    from defusedxml import DTDForbidden, EntitiesForbidden, ExternalReferenceForbidden, NotSupportedError

    try:
        return Tree(bytestring=data, url_fetcher=fetcher, unsafe=False)
    except EntitiesForbidden:
        raise RenderError("SVG declares XML entities, which are refused (entity expansion attack?)") from None
    except (ExternalReferenceForbidden, DTDForbidden, NotSupportedError):
        raise RenderError("SVG references an external DTD or entity, which is refused") from None
    except ParseError as err:
        raise RenderError(f"SVG is not well-formed XML ({err})") from None


def _check_root(tree) -> None:
    tag = tree.tag
    if tag == "svg":
        return
    if tag.startswith("{"):
        namespace, _, local = tag[1:].partition("}")
        raise RenderError(f"not an SVG document: root element is <{local}> in namespace {_shorten(namespace, 60)}")
    raise RenderError(f"not an SVG document: root element is <{_shorten(tag, 40)}>")


def output_size(tree, size: int) -> dict[str, float | int]:
    """cairosvg's sizing parameters for a picture whose longest side is ``size`` px: ``output_width`` and
    ``output_height`` (:func:`fit_longest_side` of the size the root claims, :func:`intrinsic_size`), and that size as
    ``parent_width``/``parent_height``, against which cairosvg resolves a root's percentage or missing width/height."""
    width, height = intrinsic_size(tree.get("width"), tree.get("height"), tree.get("viewBox"))
    out_w, out_h = fit_longest_side(width, height, size)
    return {"parent_width": width, "parent_height": height, "output_width": out_w, "output_height": out_h}


def own_output_size(data: bytes) -> dict[str, float | int]:
    """cairosvg's sizing parameters for the page the SVG sizes itself (:func:`.picture_size.own_size`): the
    picture is exactly that box, and a root's percentage or missing width/height is resolved against it."""
    from svgagent.core.scoring.picture_size import own_size

    width, height = own_size(data)
    return {"parent_width": width, "parent_height": height, "output_width": width, "output_height": height}


@functools.lru_cache(maxsize=1)
def _font_families() -> frozenset[str] | None:
    from svgagent.core.scoring.render_prep import installed_families

    return installed_families() or None  # none listed: font-family lists are left as they are


def prepare_for_cairosvg(data: bytes) -> bytes:
    """``data`` with render_prep's rewrites (hsl and alpha-hex colours, CSS custom properties, font-family lists
    and the default family as a browser reads them); the caps were checked on the input, a rewrite grows it by at
    most a few bytes per rewritten value."""
    from svgagent.core.scoring.render_prep import prepare_svg

    try:
        return prepare_svg(data, _font_families())
    except (ValueError, RecursionError):  # nothing it cannot read is refused here: cairosvg says what is wrong
        return data


def font_config_file() -> str:
    """The fontconfig file the workers use (render_prep.FONT_CONFIG: the generic families resolved to the faces
    Chromium picks, then the system's configuration), written once per machine under the temporary directory."""
    import hashlib
    import tempfile

    from svgagent.core.scoring.render_prep import FONT_CONFIG

    base = os.environ.get("FONTCONFIG_FILE") or "/etc/fonts/fonts.conf"
    text = FONT_CONFIG.replace("/etc/fonts/fonts.conf", base)
    path = os.path.join(tempfile.gettempdir(), f"svgagent-fonts-{hashlib.sha256(text.encode()).hexdigest()[:12]}.conf")
    if not os.path.isfile(path):
        partial = f"{path}.{os.getpid()}"
        with open(partial, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(partial, path)
    return path


def check_size(size: object) -> int:
    """``size`` when it is a longest side (1..MAX_OUTPUT_SIZE) or OWN_SIZE (0); ValueError otherwise."""
    if not isinstance(size, int) or isinstance(size, bool) or not 0 <= size <= MAX_OUTPUT_SIZE:
        raise ValueError(f"size must be 0 (the SVG's own size) or an int between 1 and {MAX_OUTPUT_SIZE}, got {size!r}")
    return size


def render_svg_to_png(svg: str | bytes, size: int = DEFAULT_SIZE, *, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """Render untrusted SVG to PNG bytes whose longest side is ``size`` px — or, for ``size`` 0 (OWN_SIZE), on the
    page the SVG sizes itself — on white, in this process.

    The PNG is cairosvg's own (``cairosvg.svg2png``'s surface, sizing and encoder), given :func:`output_size`'s
    parameters and ``background_color="white"``. Raises :class:`RenderError` (one-line reason) for anything that
    cannot be rendered safely. It has no timeout and no memory limit of its own: use :class:`Renderer` for untrusted
    input.
    """
    check_size(size)
    from cairosvg.surface import PNGSurface

    from svgagent.core.scoring.render_guard import check_render_cost
    from svgagent.core.scoring.render_path import install as cut_path_data_at_closepath_errors

    data = prepare_for_cairosvg(svg_input_bytes(svg, max_bytes))
    try:
        tree = _parse_tree(data, _make_fetcher(max_bytes))
        _check_root(tree)
        sizing = output_size(tree, size) if size else own_output_size(data)
        check_render_cost(data, tree.xml_tree)
        cut_path_data_at_closepath_errors()  # cairosvg loops for ever on "Z 5 5"; SVG draws up to the Z
        png = io.BytesIO()
        PNGSurface(tree, png, _DPI, background_color="white", **sizing).finish()
        return png.getvalue()
    except RenderError:
        raise
    except RecursionError:
        raise RenderError("SVG is nested too deeply to render") from None
    except Exception as err:  # noqa: BLE001 - cairosvg/cairo raise many types; all mean "cannot render"
        if isinstance(err, MemoryError) or "NO_MEMORY" in str(err):
            raise RenderOutOfMemory("SVG needs more memory than the renderer may use") from None
        raise RenderError(f"SVG could not be rendered ({type(err).__name__}: {_shorten(str(err), 160)})") from None


# ---------------------------------------------------------------------------------------- worker process


def _send(fd: int, status: int, payload: bytes) -> None:
    view = memoryview(REPLY_HEADER.pack(status, len(payload)) + payload)
    while view:
        view = view[os.write(fd, view) :]


def _exit_when_orphaned() -> None:
    """If the parent dies while we render, exit instead of finishing (stdin EOF covers the idle case)."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def worker_main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="svgagent.core.scoring.render_worker")
    parser.add_argument("--memory-mb", type=int, required=True)
    parser.add_argument("--max-bytes", type=int, required=True)
    args = parser.parse_args(argv)

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's business
    reply_fd = os.dup(1)
    os.dup2(2, 1)  # anything printed by libraries goes to stderr, never into the reply stream

    try:
        os.environ["FONTCONFIG_FILE"] = font_config_file()  # before the warm-up: fontconfig reads it once
    except OSError:
        pass  # the system's configuration, then
    try:
        render_svg_to_png(_WARMUP_SVG, 16)  # loads fonts and caches before the memory limit applies
    except RenderError:
        pass
    gc.freeze()  # what start-up made lives as long as the worker: no collection walks it again
    resource.setrlimit(resource.RLIMIT_AS, (args.memory_mb << 20, args.memory_mb << 20))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a crash leaves no core file behind
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))  # no file writes at all (pipes are not files)
    _exit_when_orphaned()
    out_of_memory = f"SVG needs more memory than the renderer allows ({args.memory_mb} MB)"
    _send(reply_fd, READY, b"")

    while True:
        header = sys.stdin.buffer.read(REQUEST_HEADER.size)
        if len(header) < REQUEST_HEADER.size:
            return 0  # stdin closed: the parent is done with us
        size, length = REQUEST_HEADER.unpack(header)
        svg = sys.stdin.buffer.read(length)
        if len(svg) < length:
            return 0
        try:
            png = render_svg_to_png(svg, size, max_bytes=args.max_bytes)
        except (RenderOutOfMemory, MemoryError):
            _send(reply_fd, ERROR_RECYCLE, out_of_memory.encode())
        except RenderError as err:
            _send(reply_fd, ERROR, str(err).encode("utf-8", "replace"))
        except Exception as err:  # noqa: BLE001 - report, then let the parent replace us
            reason = f"renderer failure ({type(err).__name__}: {' '.join(str(err).split())[:160]})"
            _send(reply_fd, ERROR_RECYCLE, reason.encode("utf-8", "replace"))
        else:
            _send(reply_fd, OK, png)


if __name__ == "__main__":
    sys.exit(worker_main())
