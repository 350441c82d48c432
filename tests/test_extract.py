"""SVG extraction from model answers."""

from __future__ import annotations

import time
import xml.etree.ElementTree as ET

import pytest

from svgagent.core.scoring.extract import EMPTY_ANSWER, NO_SVG, ExtractResult, extract_svg, strip_reasoning

SIMPLE = '<svg viewBox="0 0 10 10" xmlns="http://www.w3.org/2000/svg"><rect width="5" height="5"/></svg>'
OTHER = '<svg viewBox="0 0 20 20"><circle cx="10" cy="10" r="4" fill="blue"/></svg>'


def well_formed(svg: str) -> bool:
    ET.fromstring(svg)
    return True


@pytest.mark.parametrize("answer", [None, "", "   \n\t "])
def test_empty_answer(answer: str | None) -> None:
    assert extract_svg(answer) == ExtractResult(None, EMPTY_ANSWER, "none")
    assert EMPTY_ANSWER == "empty answer"


def test_no_svg() -> None:
    result = extract_svg("I cannot draw that, sorry. Here is some ```python\nprint(1)\n``` code.")
    assert result == ExtractResult(None, NO_SVG, "none")
    assert NO_SVG == "no SVG found in the answer"
    assert not result.found


def test_svg_fence() -> None:
    answer = f"Here you go:\n\n```svg\n{SIMPLE}\n```\n\nEnjoy!"
    result = extract_svg(answer)
    assert result == ExtractResult(SIMPLE, None, "fence")
    assert result.found


@pytest.mark.parametrize("language", ["svg", "SVG", "xml", "html", "", "svg+xml"])
def test_fence_languages(language: str) -> None:
    answer = f"Text.\n```{language}\n{SIMPLE}\n```\n"
    assert extract_svg(answer) == ExtractResult(SIMPLE, None, "fence")


def test_fence_with_xml_declaration_and_doctype() -> None:
    answer = (
        '```xml\n<?xml version="1.0" encoding="UTF-8"?>\n'
        '<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">\n'
        f"{SIMPLE}\n```"
    )
    assert extract_svg(answer).svg == SIMPLE


def test_html_fence_with_wrapping_document() -> None:
    answer = f"```html\n<!DOCTYPE html>\n<html><body>\n{SIMPLE}\n</body></html>\n```"
    assert extract_svg(answer) == ExtractResult(SIMPLE, None, "fence")


def test_fence_on_same_line() -> None:
    assert extract_svg(f"```svg {SIMPLE}```").svg == SIMPLE
    assert extract_svg(f"```{SIMPLE}```").svg == SIMPLE


def test_first_fence_without_svg_is_skipped() -> None:
    answer = f"Plan:\n```\n1. sky\n2. sun\n```\nCode:\n```svg\n{SIMPLE}\n```"
    assert extract_svg(answer) == ExtractResult(SIMPLE, None, "fence")


def test_raw_svg() -> None:
    answer = f"Sure! {SIMPLE} That's the drawing."
    assert extract_svg(answer) == ExtractResult(SIMPLE, None, "raw")


def test_raw_svg_with_xml_declaration() -> None:
    answer = f'<?xml version="1.0" standalone="no"?>\n{SIMPLE}\n'
    assert extract_svg(answer) == ExtractResult(SIMPLE, None, "raw")


def test_upper_case_tags() -> None:
    svg = '<SVG VIEWBOX="0 0 10 10"><RECT WIDTH="2" HEIGHT="2"/></SVG>'
    normalised = '<svg VIEWBOX="0 0 10 10"><RECT WIDTH="2" HEIGHT="2"/></svg>'  # root name only
    assert extract_svg(f"```svg\n{svg}\n```") == ExtractResult(normalised, None, "fence")
    mixed = '<Svg width="10"><g></g></sVg>'
    assert extract_svg(mixed) == ExtractResult('<svg width="10"><g></g></svg>', None, "raw")


def test_attribute_containing_angle_bracket() -> None:
    svg = '<svg data-note="a > b" width="4"><text>1 &lt; 2</text></svg>'
    assert extract_svg(svg).svg == svg


def test_svg_prefixed_names_are_not_svg_tags() -> None:
    svg = '<svg xmlns:svg="http://www.w3.org/2000/svg"><svg:rect width="2" height="2"/></svg>'
    assert extract_svg(svg).svg == svg


def test_nested_svg_elements_are_balanced() -> None:
    svg = '<svg width="20"><svg x="5" width="10"><rect width="1" height="1"/></svg><circle r="1"/></svg>'
    result = extract_svg(f"```svg\n{svg}\n```")
    assert result.svg == svg
    assert well_formed(svg)


def test_svg_mentioned_in_prose_before_raw_svg() -> None:
    answer = f"The `<svg>` element is the root. Here is mine: {SIMPLE} Done."
    assert extract_svg(answer) == ExtractResult(SIMPLE, None, "raw")


def test_svg_mentioned_in_prose_before_fence() -> None:
    answer = f"I will use an `<svg>` root with a `</svg>` close.\n```svg\n{SIMPLE}\n```"
    assert extract_svg(answer) == ExtractResult(SIMPLE, None, "fence")


def test_multiple_svgs_first_complete_fence_wins() -> None:
    answer = f"Option A:\n```svg\n{SIMPLE}\n```\nOption B:\n```svg\n{OTHER}\n```"
    assert extract_svg(answer).svg == SIMPLE


def test_multiple_svgs_in_one_fence() -> None:
    assert extract_svg(f"```svg\n{SIMPLE}\n{OTHER}\n```").svg == SIMPLE


def test_fenced_svg_preferred_over_earlier_raw_svg() -> None:
    answer = f"A sketch: {OTHER}\nFinal:\n```svg\n{SIMPLE}\n```"
    assert extract_svg(answer) == ExtractResult(SIMPLE, None, "fence")


def test_complete_svg_preferred_over_truncated_first_fence() -> None:
    answer = f'```svg\n<svg width="4"><rect\n```\nRetry:\n```svg\n{SIMPLE}\n```'
    assert extract_svg(answer) == ExtractResult(SIMPLE, None, "fence")


def test_svg_inside_other_language_fence_found_as_raw() -> None:
    answer = f'```python\nopen("a.svg", "w").write(\'{OTHER}\')\n```'
    assert extract_svg(answer) == ExtractResult(OTHER, None, "raw")


def test_unclosed_fence_with_complete_svg() -> None:
    answer = f"```svg\n{SIMPLE}\n"
    assert extract_svg(answer) == ExtractResult(SIMPLE, None, "unclosed-fence")


def test_truncated_answer_in_unclosed_fence() -> None:
    answer = '```svg\n<svg viewBox="0 0 10 10">\n  <g fill="red">\n    <rect width="5" height="5"/>\n    <circle cx="5'
    result = extract_svg(answer)
    assert result.method == "unclosed-fence"
    assert result.svg == '<svg viewBox="0 0 10 10">\n  <g fill="red">\n    <rect width="5" height="5"/></g></svg>'
    assert result.reason is not None
    assert "truncated" in result.reason
    assert well_formed(result.svg)


def test_truncated_answer_only_root_open() -> None:
    result = extract_svg('```svg\n<svg width="10"><rect width="1" height="1"/>')
    assert result.svg == '<svg width="10"><rect width="1" height="1"/></svg>'
    assert result.method == "unclosed-fence"
    assert result.reason is not None
    assert "</svg>" in result.reason


def test_truncated_in_comment_and_entity() -> None:
    result = extract_svg("```svg\n<svg><text>Fish &amp; chips &am")
    assert result.svg == "<svg><text>Fish &amp; chips</text></svg>"
    assert well_formed(result.svg)
    result = extract_svg("```svg\n<svg><g><!-- a comment <rect/> that never ends")
    assert result.svg == "<svg><g></g></svg>"
    result = extract_svg("```svg\n<svg><style><![CDATA[ .a { fill: red; }")
    assert result.svg == "<svg><style></style></svg>"
    assert well_formed(result.svg)


def test_truncated_raw_svg() -> None:
    result = extract_svg('Drawing: <svg width="10"><g><path d="M0 0 L5 5"/>')
    assert result.method == "raw"
    assert result.svg == '<svg width="10"><g><path d="M0 0 L5 5"/></g></svg>'
    assert result.reason is not None
    assert "truncated" in result.reason


def test_truncated_after_prose_mention_of_empty_svg_tag() -> None:
    result = extract_svg('Use `<svg/>`? No:\n```svg\n<svg width="4"><rect/>')
    assert result.svg == '<svg width="4"><rect/></svg>'
    assert result.method == "unclosed-fence"


def test_truncated_inside_root_tag_is_no_svg() -> None:
    assert extract_svg('```svg\n<svg viewBox="0 0').svg is None


def test_think_block_removed_before_search() -> None:
    answer = f"<think>I could draw {OTHER} but let me improve it.</think>\n```svg\n{SIMPLE}\n```"
    assert extract_svg(answer) == ExtractResult(SIMPLE, None, "fence")


def test_think_block_with_fence_inside_is_ignored() -> None:
    answer = f"<think>Draft:\n```svg\n{OTHER}\n```\n</think>\nFinal: {SIMPLE}"
    assert extract_svg(answer) == ExtractResult(SIMPLE, None, "raw")


def test_svg_only_inside_think_is_not_used() -> None:
    answer = f"<think>```svg\n{SIMPLE}\n```</think>\nI have drawn it above."
    result = extract_svg(answer)
    assert result.svg is None
    assert result.method == "none"
    assert result.reason is not None
    assert result.reason.startswith(NO_SVG)
    assert "think" in result.reason


def test_unclosed_think_means_reasoning_was_cut_off() -> None:
    answer = f"<think>Let me draft {SIMPLE} and then"
    result = extract_svg(answer)
    assert result.svg is None
    assert "think" in (result.reason or "")


def test_stray_closing_think_drops_leading_reasoning() -> None:
    answer = f"Reasoning with a draft {OTHER}\n</think>\n\n```svg\n{SIMPLE}\n```"
    assert extract_svg(answer).svg == SIMPLE


def test_think_tags_case_insensitive_and_thinking_variant() -> None:
    assert extract_svg(f"<THINK>{OTHER}</Think>{SIMPLE}").svg == SIMPLE
    assert extract_svg(f"<thinking>{OTHER}</thinking>{SIMPLE}").svg == SIMPLE


def test_strip_reasoning_returns_removed_text() -> None:
    text, removed = strip_reasoning("<think>plan</think>answer")
    assert text == "answer"
    assert "plan" in removed
    assert strip_reasoning("no reasoning") == ("no reasoning", "")


def test_result_starts_at_svg_and_ends_at_close() -> None:
    answer = f"junk <?xml version='1.0'?>\n{SIMPLE}\ntrailing <text>junk"
    svg = extract_svg(answer).svg
    assert svg is not None
    assert svg.startswith("<svg")
    assert svg.endswith("</svg>")


def test_large_answer_is_handled() -> None:
    body = "".join(f'<rect x="{i}" y="{i}" width="1" height="1"/>' for i in range(20000))
    svg = f"<svg>{body}</svg>"
    assert extract_svg(f"```svg\n{svg}\n```").svg == svg
    truncated = extract_svg(f"```svg\n<svg><g>{body}")
    assert truncated.svg is not None
    assert truncated.svg.endswith("</g></svg>")


@pytest.mark.parametrize(
    "answer",
    [
        "```svg\n" + '<svg width="1">' * 20000,
        '<svg width="1"> text ' * 20000,
        "<svg>" + "<!-- x " * 20000,
        "<svg>" + "<![CDATA[ " * 20000,
        "<svg>" + "<? " * 20000,
        "<svg>" + '<rect a="x ' * 20000,
        "<svg>" + "<" * 100000,
        "<think> " * 20000 + "<svg></svg>",
        "```svg\n<svg>\n```\n" * 10000,
        "<svg>" + "<g>" * 20000 + "</a>" * 20000,
    ],
    ids=["svg-opens", "raw-opens", "comments", "cdata", "pis", "quotes", "lt", "think", "fences", "deep-stack"],
)
def test_pathological_answers_stay_fast(answer: str) -> None:
    started = time.perf_counter()
    extract_svg(answer)
    assert time.perf_counter() - started < 5.0


def test_upper_case_root_is_normalised_so_it_renders() -> None:
    from svgagent.core.scoring.render import render_svg_to_png

    answer = 'Here:\n<SVG xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="5" height="5" fill="red"/></SVG>'
    result = extract_svg(answer)
    assert result.svg is not None
    assert result.svg.startswith("<svg ")
    assert result.svg.endswith("</svg>")
    assert render_svg_to_png(result.svg, 32).startswith(b"\x89PNG")
