"""Cheap rewrites of an SVG's text before cairosvg reads it, where cairosvg would draw something a browser does not
(bench/fidelity.py measured each; docs/fidelity.md lists what is left):

* ``hsl()``/``hsla()`` colours (cairosvg paints them black) become ``rgb()``/``rgba()``;
* ``#rgba``/``#rrggbbaa`` colours (cairosvg drops their alpha) become ``rgba()``;
* CSS custom properties: ``var(--name)`` and ``var(--name, fallback)`` (cairosvg fails the whole render) take the
  value declared for ``--name`` anywhere in the document (one scope: models declare them once, on the root);
* ``font-family`` lists (cairosvg takes the first name, installed or not) keep the first family a browser would use:
  an installed one, a metric-compatible alias fontconfig has for it (Arial, Helvetica, Times New Roman, Courier
  New...) or a generic family;
* a root without a font family gets the browser's default, ``serif`` (Chromium's standard font is Times New Roman),
  and so do ``cursive`` and ``fantasy`` (Chromium's faces for them are not installed).

Only attribute values and ``<style>`` contents are touched, never text content; each rewrite is one regular
expression pass, so the cost stays linear in the document's size. :data:`FONT_CONFIG` is the fontconfig setup the
render workers load, which resolves the generic families to the faces Chromium picks on the same machine.
"""

from __future__ import annotations

import colorsys
import functools
import re
import subprocess
from collections.abc import Callable

__all__ = ["FONT_CONFIG", "GENERIC_FAMILIES", "installed_families", "prepare_svg"]

GENERIC_FAMILIES = frozenset({"serif", "sans-serif", "monospace", "cursive", "fantasy", "system-ui"})
# Families fontconfig answers with a metric-compatible face (its 30-metric-aliases.conf), as Chromium accepts them.
METRIC_ALIASES = frozenset(
    {
        "arial", "helvetica", "helvetica neue", "arimo", "liberation sans",
        "times new roman", "times", "tinos", "liberation serif",
        "courier new", "courier", "cousine", "liberation mono",
    }
)  # fmt: skip
# The system's configuration, then sans-serif and serif resolved to the faces Chromium uses for them (its Arial and
# Times New Roman, through fontconfig's metric aliases); monospace stays the system's (Chromium asks fontconfig too).
FONT_CONFIG = """<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "urn:fontconfig:fonts.dtd">
<fontconfig>
  <include ignore_missing="yes">/etc/fonts/fonts.conf</include>
  <match target="pattern">
    <test name="family"><string>sans-serif</string></test>
    <edit name="family" mode="prepend" binding="strong"><string>Liberation Sans</string></edit>
  </match>
  <match target="pattern">
    <test name="family"><string>serif</string></test>
    <edit name="family" mode="prepend" binding="strong"><string>Liberation Serif</string></edit>
  </match>
</fontconfig>
"""
BROWSER_FALLBACK = frozenset({"cursive", "fantasy"})  # Chromium's Comic Sans MS / Impact: absent, so Times
COLOR_PROPERTIES = frozenset({"fill", "stroke", "stop-color", "flood-color", "lighting-color", "color"})
_MAX_VAR_DEPTH = 8

_TAG = re.compile(r"<(?![!?/])[^>]*>")
_ATTRIBUTE = re.compile(r"""([\w:.-]+)(\s*=\s*)("[^"]*"|'[^']*')""")
_STYLE_BLOCK = re.compile(r"(<style\b[^>]*>)(.*?)(</style\s*>)", re.DOTALL | re.IGNORECASE)
_DECLARATION = re.compile(r"([\w-]+)(\s*:\s*)([^;{}]+)")
_CUSTOM = re.compile(r"(--[\w-]+)\s*:\s*([^;{}\"']+)")
_VAR = re.compile(r"var\(\s*(--[\w-]+)\s*(?:,\s*([^()]*(?:\([^()]*\)[^()]*)*))?\)")
_HSL = re.compile(
    r"hsla?\(\s*([+-]?[\d.]+)(deg|rad|turn|grad)?\s*[,\s]\s*([\d.]+)%\s*[,\s]\s*([\d.]+)%\s*(?:[,/]\s*([\d.]+)(%?)\s*)?\)",
    re.IGNORECASE,
)
_HEX_ALPHA = re.compile(r"#([0-9a-fA-F]{8}|[0-9a-fA-F]{4})\b")
_ROOT = re.compile(r"<svg\b[^>]*>", re.IGNORECASE)
_HUE_UNIT = {"": 1.0, "deg": 1.0, "grad": 0.9, "rad": 57.29577951308232, "turn": 360.0}


def installed_families() -> frozenset[str]:
    """The font families fontconfig has installed (lower case); empty when ``fc-list`` cannot tell."""
    try:
        listed = subprocess.run(
            ["fc-list", "--format", "%{family}\\n"], capture_output=True, text=True, timeout=20, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return frozenset()
    return frozenset(name.strip().lower() for line in listed.splitlines() for name in line.split(",") if name.strip())


def _number(text: str) -> str:
    return f"{float(text):.4g}"


def _hsl(match: re.Match[str]) -> str:
    hue = float(match.group(1)) * _HUE_UNIT[(match.group(2) or "").lower()] / 360.0 % 1.0
    sat, light = min(float(match.group(3)), 100.0) / 100.0, min(float(match.group(4)), 100.0) / 100.0
    r, g, b = (round(255 * c) for c in colorsys.hls_to_rgb(hue, light, sat))
    if match.group(5) is None:
        return f"rgb({r}, {g}, {b})"
    alpha = float(match.group(5)) / (100.0 if match.group(6) else 1.0)
    return f"rgba({r}, {g}, {b}, {_number(str(min(max(alpha, 0.0), 1.0)))})"


def _hex_alpha(match: re.Match[str]) -> str:
    digits = match.group(1)
    if len(digits) == 4:
        digits = "".join(c * 2 for c in digits)
    r, g, b, a = (int(digits[i : i + 2], 16) for i in range(0, 8, 2))
    return f"rgba({r}, {g}, {b}, {_number(str(a / 255))})"


def _colour(value: str) -> str:
    if "hsl" in value.lower():
        value = _HSL.sub(_hsl, value)
    if "#" in value and not value.lstrip().lower().startswith("url("):
        value = _HEX_ALPHA.sub(_hex_alpha, value)
    return value


class _Rewriter:
    def __init__(self, custom: dict[str, str], fonts: frozenset[str] | None, colours: bool) -> None:
        self.custom = custom
        self.fonts = fonts
        self.colours = colours

    def resolve(self, value: str) -> str:
        for _ in range(_MAX_VAR_DEPTH):
            if "var(" not in value:
                break
            value = _VAR.sub(lambda m: self.custom.get(m.group(1), m.group(2) or m.group(0)).strip(), value)
        return value

    def family(self, value: str) -> str:
        if self.fonts is None:
            return value
        names = [name.strip().strip("\"'").strip() for name in value.split(",")]
        for name in names:
            key = name.lower()
            if key in BROWSER_FALLBACK:  # a generic family Chromium has no face for: its standard font
                return "serif"
            if key in GENERIC_FAMILIES or key in METRIC_ALIASES or key in self.fonts:
                return f"'{name}'" if " " in name and key not in GENERIC_FAMILIES else name
        return "serif"  # none of them: the browser's standard font

    def declaration(self, name: str, value: str) -> str:
        if "var(" in value:
            value = self.resolve(value)
        key = name.lower()
        if key in COLOR_PROPERTIES and self.colours:
            value = _colour(value)
        elif key == "font-family":
            value = self.family(value)
        return value

    def css(self, text: str) -> str:
        return _DECLARATION.sub(lambda m: m.group(1) + m.group(2) + self.declaration(m.group(1), m.group(3)), text)

    def attribute(self, match: re.Match[str]) -> str:
        name, equals, quoted = match.groups()
        quote, value = quoted[0], quoted[1:-1]
        if name == "style":
            new = self.css(value)
        elif name.startswith("xmlns") or name in ("href", "xlink:href", "id", "class"):
            return match.group(0)
        else:
            new = self.declaration(name, value)
        if quote in new:
            new = new.replace(quote, "'" if quote == '"' else '"')
        return f"{name}{equals}{quote}{new}{quote}" if new != value else match.group(0)

    def tag(self, match: re.Match[str]) -> str:
        return self.attributes.sub(self.attribute, match.group(0))

    @property
    def attributes(self) -> re.Pattern[str]:
        """The attributes worth a look: any when custom properties are used, else those a rewrite may change."""
        if self.custom:
            return _ATTRIBUTE
        names = [
            "style",
            *(sorted(COLOR_PROPERTIES) if self.colours else ()),
            *(("font-family",) if self.fonts else ()),
        ]
        return _named_attributes(tuple(names))


@functools.lru_cache(maxsize=8)
def _named_attributes(names: tuple[str, ...]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(name) for name in names)
    return re.compile(rf"""(?<![\w:.-])({alternatives})(\s*=\s*)("[^"]*"|'[^']*')""")


def _custom_properties(text: str) -> dict[str, str]:
    return {name: value.strip() for name, value in _CUSTOM.findall(text)}


def _outside_style(text: str, rewrite: Callable[[str], str], style: Callable[[str], str]) -> str:
    """``rewrite`` applied to the text between ``<style>`` blocks, ``style`` to their contents."""
    out, last = [], 0
    for block in _STYLE_BLOCK.finditer(text):
        out += [rewrite(text[last : block.start()]), block.group(1), style(block.group(2)), block.group(3)]
        last = block.end()
    out.append(rewrite(text[last:]))
    return "".join(out)


def _default_family(text: str) -> str:
    root = _ROOT.search(text)
    if root is None or re.search(r"font-family|\bfont\s*[:=]", root.group(0)):
        return text
    tag = root.group(0)
    inserted = tag[:4] + ' font-family="serif"' + tag[4:]
    return text[: root.start()] + inserted + text[root.end() :]


def prepare_svg(data: bytes, fonts: frozenset[str] | None = None) -> bytes:
    """``data`` (UTF-8 SVG) with the rewrites of the module docstring; ``fonts`` the installed families (lower
    case; None: leave font-family lists and the default family alone)."""
    text = data.decode("utf-8")
    lowered = text.lower()
    colours = "hsl" in lowered or _HEX_ALPHA.search(text) is not None
    custom = _custom_properties(text) if "var(" in text else {}
    families = fonts if fonts is not None and "font" in lowered else None
    if colours or custom or families is not None:
        rewriter = _Rewriter(custom, families, colours)
        text = _outside_style(text, lambda part: _TAG.sub(rewriter.tag, part), rewriter.css)
    if fonts is not None and "<text" in lowered:
        text = _default_family(text)
    return text.encode("utf-8") if text is not data else data
