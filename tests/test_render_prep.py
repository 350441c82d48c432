"""render_prep: the rewrites that make cairosvg draw what a browser draws, where it would not (bench/fidelity.py
found each): hsl() and alpha-hex colours, CSS custom properties, font-family lists, the default family; and the
workers' fontconfig file resolving the generic families as Chromium does."""

from __future__ import annotations

import io
import subprocess

import pytest
from PIL import Image

from svgagent.core.scoring.render import Renderer
from svgagent.core.scoring.render_prep import prepare_svg
from svgagent.core.scoring.render_worker import font_config_file

NS = 'xmlns="http://www.w3.org/2000/svg"'
FONTS = frozenset({"dejavu sans", "liberation sans", "liberation serif"})


def prep(svg: str, fonts: frozenset[str] | None = FONTS) -> str:
    return prepare_svg(svg.encode(), fonts).decode()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("hsl(0, 100%, 50%)", "rgb(255, 0, 0)"),
        ("hsl(120deg 100% 25%)", "rgb(0, 128, 0)"),
        ("hsla(240, 100%, 50%, 0.5)", "rgba(0, 0, 255, 0.5)"),
        ("hsl(0.5turn, 100%, 50% / 40%)", "rgba(0, 255, 255, 0.4)"),
        ("#ff000080", "rgba(255, 0, 0, 0.502)"),
        ("#f008", "rgba(255, 0, 0, 0.5333)"),
        ("#ff0000", "#ff0000"),
        ("url(#abcd)", "url(#abcd)"),  # an id, not a colour
    ],
)
def test_colours_cairosvg_misreads_become_rgb(value: str, expected: str) -> None:
    out = prep(f'<svg {NS}><rect fill="{value}" style="stroke: {value}"/></svg>')
    assert f'fill="{expected}"' in out
    assert f"stroke: {expected}" in out


def test_custom_properties_are_substituted_with_their_fallbacks() -> None:
    svg = (
        f'<svg {NS} style="--main: #123456; --edge: var(--main)"><style>.a {{ fill: var(--edge) }}</style>'
        '<rect class="a" stroke="var(--missing, hsl(0, 100%, 50%))" style="fill: var(--main)"/></svg>'
    )
    out = prep(svg)
    assert "fill: #123456 }" in out and 'style="fill: #123456"' in out
    assert 'stroke="rgb(255, 0, 0)"' in out  # the fallback, itself rewritten


def test_font_family_lists_keep_the_family_a_browser_uses() -> None:
    out = prep(
        f'<svg {NS} font-family="Helvetica"><text font-family="Inter, Roboto, sans-serif">a</text>'
        "<text style=\"font-family: Georgia, 'Liberation Serif', serif\">b</text>"
        '<text font-family="NoSuchFont">c</text><text font-family="cursive">d</text></svg>'
    )
    assert 'font-family="Helvetica"' in out  # a metric alias fontconfig has
    assert 'font-family="sans-serif"' in out
    assert "font-family: 'Liberation Serif'" in out  # installed
    assert out.count('font-family="serif"') == 2  # nothing usable, and cursive: the browser's standard font
    # the root's default: serif, only where the root names none; never without a text, never without the font list
    assert prep(f"<svg {NS}><text>x</text></svg>").startswith('<svg font-family="serif"')
    assert prep(f"<svg {NS}><rect/></svg>") == f"<svg {NS}><rect/></svg>"
    assert prep(f"<svg {NS}><text>x</text></svg>", fonts=None) == f"<svg {NS}><text>x</text></svg>"


def test_text_content_and_plain_documents_are_left_alone() -> None:
    content = "hsl(0, 100%, 50%) var(--x) #ff000080"
    text = f'<svg {NS} font-family="serif"><text font-family="serif">{content}</text></svg>'
    assert prep(text) == text
    plain = f'<svg {NS}><rect width="10" height="10" fill="red"/></svg>'
    assert prepare_svg(plain.encode(), FONTS) == plain.encode()


def test_the_workers_draw_what_cairosvg_misread() -> None:
    svg = (
        f'<svg {NS} width="40" height="20" style="--c: #0000ff">'
        '<rect width="20" height="20" fill="hsl(0, 100%, 50%)"/><rect x="20" width="20" height="20" style="fill: var(--c)"/>'
        "</svg>"
    )
    with Renderer(size=40, workers=1) as renderer:
        picture = Image.open(io.BytesIO(renderer.render_sync(svg))).convert("RGB")
    assert picture.getpixel((10, 10)) == (255, 0, 0)  # not black
    assert picture.getpixel((30, 10)) == (0, 0, 255)  # drawn at all: var() failed the render before


def test_the_generic_families_resolve_as_chromium_resolves_them() -> None:
    env = {"FONTCONFIG_FILE": font_config_file(), "PATH": "/usr/bin:/bin"}
    try:
        faces = {
            family: subprocess.run(
                ["fc-match", "--format", "%{family[0]}", family], capture_output=True, text=True, env=env, timeout=30
            ).stdout
            for family in ("sans-serif", "serif")
        }
    except FileNotFoundError:
        pytest.skip("fc-match is not installed (fontconfig)")
    if "Liberation" not in " ".join(faces.values()):
        pytest.skip("the Liberation fonts are not installed (fonts-liberation)")
    assert faces == {"sans-serif": "Liberation Sans", "serif": "Liberation Serif"}
