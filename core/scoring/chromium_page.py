"""The page a headless Chromium renders an SVG on, and where the browser comes from.

The page is the one Eval Protocol's quickstart evaluator and SVGBench screenshot (their facts, svgagent's text):
the SVG's markup inline in the body of an HTML5 page with a viewport meta tag; every element without margin or
padding and with border-box sizing; the body white, exactly the picture's size, overflow hidden; the ``<svg>``
element a block of exactly that size (``!important``, so the SVG's own width/height attributes do not win); device
scale 1. The picture's size (:func:`page_geometry`) is the SVG's own (:func:`.picture_size.own_size`) for
``OWN_SIZE``, else its intrinsic size (:func:`.render_worker.intrinsic_size`) captured at the scale that makes the
longest side the requested size, as the cairosvg renderer sizes it.
"""

from __future__ import annotations

import math
import os
import shutil
from dataclasses import dataclass
from xml.etree.ElementTree import ParseError

from svgagent.core.scoring.errors import ConfigError, RenderError
from svgagent.core.scoring.picture_size import OWN_SIZE, own_size, parse_xml
from svgagent.core.scoring.render_worker import fit_longest_side, intrinsic_size

__all__ = ["CHROMIUM_PACKAGE", "PageGeometry", "browser_flags", "find_chromium", "page_geometry", "page_html"]

CHROMIUM_PACKAGE = "chromium"  # Debian's package (apt-get install chromium)
_NAMES = ("chromium", "chromium-browser")
# What the browser process is started with: headless, no first-run work, no background traffic of its own (updates,
# sync, field trials, safe browsing, prefetching), no GPU, hostnames resolving nowhere (the page's fetches are also
# blocked one by one over the DevTools protocol), the DevTools protocol on fds 3/4, no scripts.
BASE_FLAGS = (
    "--headless",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--disable-breakpad",
    "--disable-dev-shm-usage",
    "--disable-features=Translate,MediaRouter,OptimizationHints,AutofillServerCommunication",
    "--metrics-recording-only",
    "--no-pings",
    "--mute-audio",
    "--hide-scrollbars",
    "--force-device-scale-factor=1",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--blink-settings=scriptEnabled=false",
    "--remote-debugging-pipe",
)


def find_chromium(path: str | os.PathLike[str] | None = None) -> str:
    """The Chromium executable: ``path`` when given (it must exist), else the first of chromium /
    chromium-browser on PATH. ConfigError (one line, naming the package) when there is none."""
    if path:
        given = os.fspath(path)
        found = shutil.which(given) if os.sep not in given else (given if os.access(given, os.X_OK) else None)
        if found is None:
            raise ConfigError(f"chromium_path {given!r} is not an executable file")
        return found
    for name in _NAMES:
        found = shutil.which(name)
        if found:
            return found
    raise ConfigError(
        f"--renderer chromium needs a Chromium on PATH: install the {CHROMIUM_PACKAGE} package (apt-get install "
        f"{CHROMIUM_PACKAGE}) or set chromium_path"
    )


def browser_flags(user_data_dir: str) -> list[str]:
    """The flags of one browser process with its own (new, empty) profile directory."""
    flags = [*BASE_FLAGS, f"--user-data-dir={user_data_dir}"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        flags.append("--no-sandbox")  # Chromium refuses to start its sandbox as root
    return flags


@dataclass(frozen=True)
class PageGeometry:
    """The page's size in CSS px (``width`` × ``height``, the viewport rounded up) and the capture ``scale``."""

    width: float
    height: float
    scale: float

    @property
    def viewport(self) -> tuple[int, int]:
        return max(1, math.ceil(self.width)), max(1, math.ceil(self.height))


def page_geometry(svg: bytes, size: int) -> PageGeometry:
    """Where ``svg`` is drawn: its own page (``size`` = OWN_SIZE, scale 1), or its intrinsic size scaled so the
    longest side is ``size`` px. A document that is not XML gets its own page size (the browser reads it as HTML)."""
    if size == OWN_SIZE:
        width, height = own_size(svg)
        return PageGeometry(float(width), float(height), 1.0)
    try:
        root = parse_xml(svg.decode("utf-8", "replace").strip())
        width, height = intrinsic_size(root.get("width"), root.get("height"), root.get("viewBox"))
    except ParseError:
        width, height = (float(side) for side in own_size(svg))
    except RecursionError:
        raise RenderError("SVG is nested too deeply to render") from None
    out_w, out_h = fit_longest_side(width, height, size)
    # the page keeps the SVG's own proportions; the capture scale makes its longest side ``size`` device pixels
    return PageGeometry(width, height, max(out_w, out_h) / max(width, height))


def _css(value: float) -> str:
    return f"{value:.4f}".rstrip("0").rstrip(".")


def page_html(svg: str, geometry: PageGeometry) -> str:
    """The HTML page with ``svg`` inline (see the module docstring)."""
    w, h = _css(geometry.width), _css(geometry.height)
    return (
        "<!DOCTYPE html>\n<html>\n<head>\n"
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        "<style>\n"
        "* { margin: 0; padding: 0; box-sizing: border-box; }\n"
        f"body {{ background: white; width: {w}px; height: {h}px; overflow: hidden; }}\n"
        f"svg {{ display: block; width: {w}px !important; height: {h}px !important; }}\n"
        "</style>\n</head>\n<body>\n"
        f"{svg}\n"
        "</body>\n</html>\n"
    )
