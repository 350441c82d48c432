"""The fidelity benchmark's own corpus: small SVGs written for this project, each showing one feature the way models
write it (bench/fidelity.py renders them with cairosvg, Chromium and resvg and compares the pictures).

``corpus()`` gives ``(feature, name, svg)`` triples; every SVG draws something large enough that a renderer which
skips the feature shows a visibly different picture.
"""

from __future__ import annotations

NS = 'xmlns="http://www.w3.org/2000/svg"'
XLINK = 'xmlns:xlink="http://www.w3.org/1999/xlink"'


def svg(body: str, attrs: str = 'width="300" height="200"', head: str = "") -> str:
    return f"<svg {NS} {XLINK} {attrs}>{head}{body}</svg>"


def defs(inner: str) -> str:
    return f"<defs>{inner}</defs>"


BACKDROP = '<rect width="100%" height="100%" fill="#f4f1ea"/>'

GRADIENTS = {
    "linear": svg(
        BACKDROP + '<rect x="20" y="20" width="260" height="160" fill="url(#g)"/>',
        head=defs(
            '<linearGradient id="g"><stop offset="0" stop-color="#1d4ed8"/><stop offset="1" stop-color="#f59e0b"/></linearGradient>'
        ),
    ),
    "linear_diagonal_opacity": svg(
        BACKDROP + '<circle cx="150" cy="100" r="90" fill="url(#g)"/>',
        head=defs(
            '<linearGradient id="g" x1="0%" y1="0%" x2="100%" y2="100%"><stop offset="0%" stop-color="#16a34a" '
            'stop-opacity="1"/><stop offset="100%" stop-color="#16a34a" stop-opacity="0.1"/></linearGradient>'
        ),
    ),
    "radial": svg(
        BACKDROP + '<ellipse cx="150" cy="100" rx="130" ry="80" fill="url(#r)"/>',
        head=defs(
            '<radialGradient id="r"><stop offset="0" stop-color="#fff7ae"/><stop offset="0.6" stop-color="#f97316"/><stop offset="1" stop-color="#7c2d12"/></radialGradient>'
        ),
    ),
    "radial_focal": svg(
        BACKDROP + '<circle cx="150" cy="100" r="90" fill="url(#r)"/>',
        head=defs(
            '<radialGradient id="r" cx="0.5" cy="0.5" r="0.5" fx="0.3" fy="0.3"><stop offset="0" stop-color="#ffffff"/><stop offset="1" stop-color="#2563eb"/></radialGradient>'
        ),
    ),
    "user_space_spread_reflect": svg(
        BACKDROP + '<rect x="0" y="40" width="300" height="120" fill="url(#g)"/>',
        head=defs(
            '<linearGradient id="g" gradientUnits="userSpaceOnUse" x1="0" y1="0" x2="60" y2="0" spreadMethod="reflect">'
            '<stop offset="0" stop-color="#db2777"/><stop offset="1" stop-color="#fde68a"/></linearGradient>'
        ),
    ),
    "href_inheritance_transform": svg(
        BACKDROP + '<rect x="20" y="20" width="260" height="160" fill="url(#child)"/>',
        head=defs(
            '<linearGradient id="base"><stop offset="0" stop-color="#0f766e"/><stop offset="1" stop-color="#a7f3d0"/>'
            '</linearGradient><linearGradient id="child" href="#base" gradientTransform="rotate(90 .5 .5)"/>'
        ),
    ),
}

FONT_LINE = '<text x="15" y="{y}" font-family="{family}" font-size="{size}" {extra}>{text}</text>'


def _text_lines(*lines: tuple[str, int, str, str]) -> str:
    return "".join(
        FONT_LINE.format(y=40 + 45 * i, family=family, size=size, extra=extra, text=text)
        for i, (family, size, extra, text) in enumerate(lines)
    )


TEXT = {
    "generic_families": svg(
        BACKDROP
        + _text_lines(
            ("sans-serif", 30, "", "START here"),
            ("serif", 30, "", "Serif words"),
            ("monospace", 30, "", "mono 0123"),
            ("cursive", 30, "", "Cursive"),
        )
    ),
    "named_fonts": svg(
        BACKDROP
        + _text_lines(
            ("Arial, Helvetica, sans-serif", 28, "", "Arial Label"),
            ("'Times New Roman', Times, serif", 28, "", "Times Roman"),
            ("'Courier New', monospace", 28, "", "Courier New"),
            ("Georgia, serif", 28, "", "Georgia Text"),
        )
    ),
    "weights_and_styles": svg(
        BACKDROP
        + _text_lines(
            ("sans-serif", 30, 'font-weight="bold"', "Bold title"),
            ("serif", 30, 'font-style="italic"', "Italic line"),
            ("sans-serif", 30, 'font-weight="300" letter-spacing="4"', "S P A C E D"),
            ("sans-serif", 30, 'text-decoration="underline"', "Underlined"),
        )
    ),
    "anchors_and_baselines": svg(
        BACKDROP
        + '<line x1="150" y1="0" x2="150" y2="200" stroke="#999"/>'
        + '<text x="150" y="50" text-anchor="middle" font-family="sans-serif" font-size="28">Centred</text>'
        + '<text x="150" y="100" text-anchor="end" font-family="sans-serif" font-size="28">Right</text>'
        + '<text x="150" y="150" dominant-baseline="middle" font-family="sans-serif" font-size="28">Middle</text>'
        + '<text x="150" y="185" dominant-baseline="hanging" text-anchor="middle" font-family="serif" font-size="22">hanging</text>'
    ),
    "tspan_and_multiline": svg(
        BACKDROP
        + '<text x="20" y="50" font-family="sans-serif" font-size="26">First <tspan fill="#dc2626" font-weight="bold">red</tspan> word'
        + '<tspan x="20" dy="40">second line</tspan><tspan x="20" dy="40" font-size="18">third, smaller</tspan></text>'
    ),
    "text_path": svg(
        BACKDROP
        + '<path id="arc" d="M30 160 Q150 20 270 160" fill="none" stroke="#bbb"/>'
        + '<text font-family="serif" font-size="26"><textPath href="#arc">Along the curve</textPath></text>'
    ),
    "no_font_family": svg(
        BACKDROP
        + '<text x="20" y="80" font-size="40">No family given</text><text x="20" y="150" font-size="30" font-weight="bold">Bold default</text>'
    ),
    "unknown_then_generic": svg(
        BACKDROP
        + _text_lines(
            ("Inter, Roboto, sans-serif", 28, "", "Inter or sans"),
            ("Georgia, serif", 28, "", "Georgia or serif"),
            ("Menlo, Consolas, monospace", 28, "", "Menlo or mono"),
            ("NoSuchFont", 28, "", "Unknown family"),
        )
    ),
    "emoji_and_symbols": svg(
        BACKDROP
        + '<text x="20" y="80" font-size="48">☀ ★ ♥ ✓</text><text x="20" y="160" font-size="40" font-family="sans-serif">→ ± °C €</text>'
    ),
}

TRANSFORMS = {
    "rotate_about_point": svg(
        BACKDROP + '<rect x="100" y="50" width="100" height="100" fill="#7c3aed" transform="rotate(30 150 100)"/>'
    ),
    "scale_translate": svg(
        BACKDROP
        + '<g transform="translate(40 30) scale(2 1.5)"><circle cx="40" cy="40" r="30" fill="#0891b2"/><rect x="70" y="20" width="40" height="60" fill="#e11d48"/></g>'
    ),
    "skew_matrix": svg(
        BACKDROP
        + '<rect x="60" y="50" width="120" height="80" fill="#65a30d" transform="skewX(25)"/><rect x="10" y="10" width="60" height="40" fill="#f59e0b" transform="matrix(1 0.3 -0.3 1 150 60)"/>'
    ),
    "nested_groups": svg(
        BACKDROP
        + '<g transform="translate(150 100)"><g transform="rotate(45)"><g transform="scale(1.5)"><rect x="-30" y="-30" width="60" height="60" fill="#2563eb"/></g></g></g>'
    ),
    "css_transform_origin": svg(
        BACKDROP
        + '<rect x="100" y="50" width="100" height="100" fill="#c026d3" style="transform: rotate(20deg); transform-origin: 150px 100px"/>'
    ),
}

CLIPS = {
    "circle_clip": svg(
        BACKDROP
        + '<g clip-path="url(#c)"><rect width="300" height="200" fill="#0ea5e9"/><rect y="100" width="300" height="100" fill="#22c55e"/></g>',
        head=defs('<clipPath id="c"><circle cx="150" cy="100" r="80"/></clipPath>'),
    ),
    "bounding_box_units": svg(
        BACKDROP + '<rect x="40" y="40" width="220" height="120" fill="#f43f5e" clip-path="url(#c)"/>',
        head=defs('<clipPath id="c" clipPathUnits="objectBoundingBox"><polygon points="0.5,0 1,1 0,1"/></clipPath>'),
    ),
    "text_clip": svg(
        BACKDROP + '<rect width="300" height="200" fill="url(#g)" clip-path="url(#c)"/>',
        head=defs(
            '<linearGradient id="g"><stop offset="0" stop-color="#9333ea"/><stop offset="1" stop-color="#f97316"/></linearGradient>'
            '<clipPath id="c"><text x="20" y="130" font-family="sans-serif" font-weight="bold" font-size="90">CLIP</text></clipPath>'
        ),
    ),
    "clip_rule_evenodd": svg(
        BACKDROP + '<rect width="300" height="200" fill="#1e3a8a" clip-path="url(#c)"/>',
        head=defs(
            '<clipPath id="c"><path clip-rule="evenodd" d="M50 20 H250 V180 H50 Z M110 60 H190 V140 H110 Z"/></clipPath>'
        ),
    ),
}

MASKS = {
    "gradient_fade": svg(
        BACKDROP + '<rect width="300" height="200" fill="#dc2626" mask="url(#m)"/>',
        head=defs(
            '<linearGradient id="fade"><stop offset="0" stop-color="white"/><stop offset="1" stop-color="black"/></linearGradient>'
            '<mask id="m"><rect width="300" height="200" fill="url(#fade)"/></mask>'
        ),
    ),
    "shape_mask_on_group": svg(
        BACKDROP
        + '<g mask="url(#m)"><rect width="300" height="200" fill="#059669"/><circle cx="150" cy="100" r="50" fill="#fbbf24"/></g>',
        head=defs(
            '<mask id="m"><rect width="300" height="200" fill="white"/><circle cx="150" cy="100" r="30" fill="black"/></mask>'
        ),
    ),
    "mask_opacity": svg(
        BACKDROP + '<rect x="30" y="30" width="240" height="140" fill="#4338ca" mask="url(#m)"/>',
        head=defs('<mask id="m"><rect width="300" height="200" fill="white" fill-opacity="0.4"/></mask>'),
    ),
}

FILTERS = {
    "gaussian_blur": svg(
        BACKDROP + '<circle cx="150" cy="100" r="60" fill="#2563eb" filter="url(#b)"/>',
        head=defs(
            '<filter id="b" x="-50%" y="-50%" width="200%" height="200%"><feGaussianBlur stdDeviation="12"/></filter>'
        ),
    ),
    "drop_shadow_primitive": svg(
        BACKDROP + '<rect x="60" y="40" width="160" height="100" rx="12" fill="#f59e0b" filter="url(#s)"/>',
        head=defs(
            '<filter id="s" x="-30%" y="-30%" width="160%" height="160%"><feDropShadow dx="8" dy="10" stdDeviation="6" flood-color="#000" flood-opacity="0.6"/></filter>'
        ),
    ),
    "drop_shadow_classic": svg(
        BACKDROP + '<rect x="60" y="40" width="160" height="100" rx="12" fill="#10b981" filter="url(#s)"/>',
        head=defs(
            '<filter id="s" x="-30%" y="-30%" width="160%" height="160%"><feGaussianBlur in="SourceAlpha" stdDeviation="6"/>'
            '<feOffset dx="8" dy="10" result="o"/><feMerge><feMergeNode in="o"/><feMergeNode in="SourceGraphic"/></feMerge></filter>'
        ),
    ),
    "glow": svg(
        '<rect width="300" height="200" fill="#0b1020"/><text x="40" y="120" font-family="sans-serif" font-size="64" fill="#7dd3fc" filter="url(#g)">GLOW</text>',
        head=defs(
            '<filter id="g"><feGaussianBlur stdDeviation="5" result="b"/><feMerge><feMergeNode in="b"/><feMergeNode in="SourceGraphic"/></feMerge></filter>'
        ),
    ),
    "color_matrix": svg(
        BACKDROP
        + '<g filter="url(#grey)"><rect x="20" y="20" width="120" height="160" fill="#ef4444"/><rect x="160" y="20" width="120" height="160" fill="#3b82f6"/></g>',
        head=defs('<filter id="grey"><feColorMatrix type="saturate" values="0"/></filter>'),
    ),
    "turbulence_texture": svg(
        BACKDROP + '<rect width="300" height="200" filter="url(#t)"/>',
        head=defs('<filter id="t"><feTurbulence type="fractalNoise" baseFrequency="0.03" numOctaves="3"/></filter>'),
    ),
    "css_filter_property": svg(
        BACKDROP + '<circle cx="150" cy="100" r="60" fill="#be123c" style="filter: blur(6px)"/>'
    ),
}

STYLES = {
    "class_rules": svg(
        BACKDROP
        + '<rect class="box" x="20" y="20" width="120" height="160"/><circle class="dot accent" cx="220" cy="100" r="60"/>',
        head="<style>.box { fill: #0f766e; stroke: #134e4a; stroke-width: 6 } .dot { fill: #facc15 } .accent { stroke: #a16207; stroke-width: 8 }</style>",
    ),
    "id_and_descendant": svg(
        BACKDROP
        + '<g id="sky"><rect x="0" y="0" width="300" height="120"/></g><g class="ground"><rect x="0" y="120" width="300" height="80"/></g>',
        head="<style>#sky rect { fill: #93c5fd } g.ground > rect { fill: #65a30d }</style>",
    ),
    "css_variables": svg(
        BACKDROP
        + '<rect x="20" y="20" width="260" height="160" style="fill: var(--main); stroke: var(--edge, #111); stroke-width: 10"/>',
        attrs='width="300" height="200" style="--main: #8b5cf6; --edge: #4c1d95"',
    ),
    "style_attribute_and_important": svg(
        BACKDROP
        + '<rect x="20" y="20" width="260" height="160" fill="#000" style="fill:#f97316;stroke:#7c2d12;stroke-width:8;opacity:0.9"/>',
        head="<style>rect { rx: 30px } </style>",
    ),
    "pseudo_classes": svg(
        BACKDROP + "".join(f'<rect x="{20 + 55 * i}" y="60" width="45" height="80"/>' for i in range(5)),
        head="<style>rect { fill: #94a3b8 } rect:nth-child(odd) { fill: #0284c7 } rect:first-of-type { fill: #dc2626 }</style>",
    ),
}

PATTERNS = {
    "user_space_checker": svg(
        BACKDROP + '<rect x="20" y="20" width="260" height="160" fill="url(#p)"/>',
        head=defs(
            '<pattern id="p" width="20" height="20" patternUnits="userSpaceOnUse"><rect width="10" height="10" fill="#111"/><rect x="10" y="10" width="10" height="10" fill="#111"/></pattern>'
        ),
    ),
    "bounding_box_dots": svg(
        BACKDROP + '<circle cx="150" cy="100" r="90" fill="url(#p)" stroke="#333"/>',
        head=defs('<pattern id="p" width="0.1" height="0.1"><circle cx="9" cy="9" r="6" fill="#e11d48"/></pattern>'),
    ),
    "pattern_transform_stripes": svg(
        BACKDROP + '<rect width="300" height="200" fill="url(#p)"/>',
        head=defs(
            '<pattern id="p" width="16" height="16" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="8" height="16" fill="#0369a1"/></pattern>'
        ),
    ),
}

MARKERS = {
    "arrow_end": svg(
        BACKDROP + '<line x1="30" y1="100" x2="250" y2="100" stroke="#111" stroke-width="4" marker-end="url(#a)"/>',
        head=defs(
            '<marker id="a" markerWidth="10" markerHeight="10" refX="5" refY="5" orient="auto" markerUnits="strokeWidth"><path d="M0 0 L10 5 L0 10 z" fill="#dc2626"/></marker>'
        ),
    ),
    "orient_auto_on_path": svg(
        BACKDROP
        + '<path d="M30 170 Q150 -20 270 170" fill="none" stroke="#1d4ed8" stroke-width="3" marker-start="url(#a)" marker-mid="url(#d)" marker-end="url(#a)"/>',
        head=defs(
            '<marker id="a" viewBox="0 0 10 10" refX="5" refY="5" markerWidth="6" markerHeight="6" orient="auto-start-reverse"><path d="M0 0 L10 5 L0 10 z"/></marker>'
            '<marker id="d" viewBox="0 0 10 10" refX="5" refY="5" markerWidth="5" markerHeight="5"><circle cx="5" cy="5" r="5" fill="#f59e0b"/></marker>'
        ),
    ),
    "polyline_vertices": svg(
        BACKDROP
        + '<polyline points="20,180 80,40 140,160 200,30 280,150" fill="none" stroke="#334155" stroke-width="3" marker-mid="url(#m)" marker-end="url(#m)"/>',
        head=defs(
            '<marker id="m" markerWidth="12" markerHeight="12" refX="6" refY="6"><circle cx="6" cy="6" r="5" fill="#16a34a"/></marker>'
        ),
    ),
}

USES = {
    "symbol_with_viewbox": svg(
        BACKDROP
        + '<use href="#star" x="10" y="20" width="120" height="120"/><use href="#star" x="160" y="40" width="80" height="80" fill="#0ea5e9"/>',
        head=defs(
            '<symbol id="star" viewBox="0 0 100 100"><polygon points="50,5 61,38 95,38 67,58 78,92 50,72 22,92 33,58 5,38 39,38"/></symbol>'
        ),
    ),
    "use_xlink_repeat": svg(
        BACKDROP + "".join(f'<use xlink:href="#tree" x="{20 + 90 * i}" y="30"/>' for i in range(3)),
        head=defs(
            '<g id="tree"><rect x="30" y="90" width="16" height="50" fill="#92400e"/><polygon points="38,0 0,100 76,100" fill="#15803d"/></g>'
        ),
    ),
    "use_inherits_fill": svg(
        BACKDROP
        + '<use href="#c" fill="#dc2626"/><use href="#c" x="100" fill="#2563eb"/><use href="#c" x="200" style="fill:#16a34a"/>',
        head=defs('<circle id="c" cx="50" cy="100" r="40"/>'),
    ),
}

VIEWBOX = {
    "meet_wide_box": svg(
        '<rect width="100" height="100" fill="#f472b6"/><circle cx="50" cy="50" r="40" fill="#831843"/>',
        attrs='width="300" height="150" viewBox="0 0 100 100"',
    ),
    "slice": svg(
        '<rect width="100" height="100" fill="#67e8f9"/><circle cx="50" cy="50" r="45" fill="#155e75"/>',
        attrs='width="300" height="150" viewBox="0 0 100 100" preserveAspectRatio="xMidYMid slice"',
    ),
    "none_stretch": svg(
        '<circle cx="50" cy="50" r="45" fill="#ca8a04"/>',
        attrs='width="300" height="120" viewBox="0 0 100 100" preserveAspectRatio="none"',
    ),
    "min_align": svg(
        '<rect width="100" height="100" fill="#a3e635"/>',
        attrs='width="300" height="150" viewBox="0 0 100 100" preserveAspectRatio="xMinYMin meet"',
    ),
    "viewbox_only": svg(
        '<rect x="10" y="10" width="380" height="180" fill="#fb923c"/><circle cx="200" cy="100" r="70" fill="#7c2d12"/>',
        attrs='viewBox="0 0 400 200"',
    ),
    "offset_viewbox": svg(
        '<circle cx="0" cy="0" r="80" fill="#6d28d9"/><rect x="-100" y="-5" width="200" height="10" fill="#fde047"/>',
        attrs='width="300" height="300" viewBox="-100 -100 200 200"',
    ),
    "no_size_at_all": svg(
        '<rect x="20" y="20" width="200" height="120" fill="#0d9488"/><circle cx="240" cy="150" r="40" fill="#f43f5e"/>',
        attrs="",
    ),
}

UNITS = {
    "percent_geometry": svg(
        '<rect width="100%" height="100%" fill="#e0f2fe"/><circle cx="50%" cy="50%" r="30%" fill="#0369a1"/><rect x="10%" y="70%" width="80%" height="10%" fill="#f59e0b"/>'
    ),
    "percent_root": svg(
        '<rect width="100%" height="100%" fill="#fee2e2"/><circle cx="150" cy="100" r="60" fill="#b91c1c"/>',
        attrs='width="100%" height="100%" viewBox="0 0 300 200"',
    ),
    "physical_units": svg(
        '<rect x="5mm" y="5mm" width="40mm" height="20mm" fill="#4d7c0f"/><circle cx="2in" cy="1in" r="30pt" fill="#a21caf"/>',
        attrs='width="80mm" height="50mm"',
    ),
    "em_units": svg(
        '<rect x="1em" y="1em" width="10em" height="5em" fill="#0e7490" font-size="16"/><text x="1em" y="9em" font-family="sans-serif" font-size="2em">em sized</text>'
    ),
    "pt_root": svg(
        '<rect width="100" height="80" fill="#eab308"/><rect x="100" y="80" width="100" height="70" fill="#1e40af"/>',
        attrs='width="150pt" height="112.5pt" viewBox="0 0 200 150"',
    ),
}

PAINT = {
    "colour_syntaxes": svg(
        BACKDROP
        + '<rect x="10" y="20" width="60" height="160" fill="rgb(220, 38, 38)"/><rect x="80" y="20" width="60" height="160" fill="rgba(37, 99, 235, 0.5)"/>'
        + '<rect x="150" y="20" width="60" height="160" fill="hsl(142, 71%, 45%)"/><rect x="220" y="20" width="60" height="160" fill="#f59e0bcc"/>'
    ),
    "current_color_and_transparent": svg(
        BACKDROP
        + '<g color="#7c3aed"><circle cx="90" cy="100" r="60" fill="currentColor"/><circle cx="210" cy="100" r="60" fill="transparent" stroke="currentColor" stroke-width="10"/></g>'
    ),
    "strokes": svg(
        BACKDROP
        + '<path d="M20 40 H280" stroke="#111" stroke-width="8" stroke-dasharray="20 10"/>'
        + '<path d="M20 100 L150 60 L280 100" fill="none" stroke="#b45309" stroke-width="16" stroke-linejoin="round" stroke-linecap="round"/>'
        + '<text x="30" y="170" font-family="sans-serif" font-size="48" fill="#fde047" stroke="#111" stroke-width="6" paint-order="stroke">Paint</text>'
    ),
    "opacity_groups": svg(
        BACKDROP
        + '<g opacity="0.5"><rect x="40" y="40" width="140" height="120" fill="#1d4ed8"/><rect x="120" y="40" width="140" height="120" fill="#1d4ed8"/></g>'
    ),
    "blend_mode": svg(
        BACKDROP
        + '<circle cx="120" cy="100" r="70" fill="#ef4444"/><circle cx="180" cy="100" r="70" fill="#3b82f6" style="mix-blend-mode: multiply"/>'
    ),
    "foreign_object_html": svg(
        BACKDROP + '<foreignObject x="20" y="20" width="260" height="160"><div xmlns="http://www.w3.org/1999/xhtml" '
        'style="font: 28px sans-serif; background: #fde68a; height: 100%">HTML text in a box</div></foreignObject>'
    ),
}

FEATURES: dict[str, dict[str, str]] = {
    "gradients": GRADIENTS,
    "text": TEXT,
    "transforms": TRANSFORMS,
    "clip paths": CLIPS,
    "masks": MASKS,
    "filters": FILTERS,
    "<style> rules": STYLES,
    "patterns": PATTERNS,
    "markers": MARKERS,
    "use": USES,
    "viewBox/aspect": VIEWBOX,
    "units and %": UNITS,
    "paint": PAINT,
}


def corpus() -> list[tuple[str, str, str]]:
    """(feature, name, svg) for every SVG of the corpus, in feature order."""
    return [(feature, name, text) for feature, items in FEATURES.items() for name, text in items.items()]
