"""Finding the SVG in a model's answer.

The reference implementations take the text after the first ```svg fence up to the next fence, else the first
``<svg`` to the first ``</svg>``. This module keeps that behaviour for well-formed answers and does better on the known
weak spots:

1. Reasoning is removed first: ``<think>…</think>`` / ``<thinking>…</thinking>`` blocks, an unclosed ``<think>``
   (reasoning cut off by the token limit: everything after it), and everything before a stray ``</think>`` (some
   chat templates put the opening tag in the prompt). An SVG that appears *only* inside the reasoning is not used:
   a draft in the reasoning is not the answer, and rewarding it would reward answers that never finished. The
   reason then says so.
2. The first *complete* SVG in a fenced block wins: fences tagged ``svg``, ``xml``, ``html`` (and similar) or bare
   fences are searched in order, a fence without an SVG is skipped. A fence that is never closed (truncated answer)
   is searched up to the end of the text (method ``"unclosed-fence"``).
3. Otherwise the first complete raw ``<svg …>…</svg>`` anywhere in the text (method ``"raw"``).
4. Otherwise a truncated SVG is repaired: an incomplete trailing tag is dropped and every element still open is
   closed (the root ``</svg>`` included); the reason says it was truncated.

Tags are matched case-insensitively, nested ``<svg>`` elements are balanced, and a ``<svg`` mentioned in prose that
never closes does not hide a later complete SVG. The result starts at ``<svg`` (any XML declaration or DOCTYPE
before it is left out) and ends at its matching ``</svg>``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

Method = Literal["fence", "raw", "unclosed-fence", "none"]

NO_SVG = "no SVG found in the answer"
EMPTY_ANSWER = "empty answer"
ONLY_IN_REASONING = "no SVG found in the answer (an SVG appeared only inside the <think> reasoning, which is not used)"

# Fence languages searched in the fenced pass. Other languages are only reached by the raw pass.
_FENCE_LANGUAGES = frozenset({"", "svg", "xml", "html", "xhtml", "svg+xml", "image/svg+xml", "markup"})

_THINK_OPEN = re.compile(r"<(?:think|thinking)\b[^>]*>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</(?:think|thinking)\s*>", re.IGNORECASE)

_FENCE_LANG = re.compile(r"[ \t]*([A-Za-z0-9_+.#/-]*)")

# What a tag holds after its name: quoted values (which may contain '>' and '<') and runs of anything else but
# quotes and angle brackets. Each character decides which piece it starts, so the match is unique and the runs are
# taken whole and possessively (one regex step per run, not three tries per character: ~30 % of extract_svg).
_ATTRIBUTES = r"""(?:[^'"<>]++|"[^"]*+"|'[^']*+')*+"""

# An opening <svg ...> tag.
_SVG_OPEN = re.compile(r"<svg(?=[\s/>])" + _ATTRIBUTES + ">", re.IGNORECASE)

# Markup, enough to balance elements.
_OPEN_TAG = re.compile(r"<([A-Za-z_][\w:.-]*)(?=[\s/>])(" + _ATTRIBUTES + ")>")
_CLOSE_TAG = re.compile(r"</([A-Za-z_][\w:.-]*)\s*>")
_DECLARATION = re.compile(r"<!" + _ATTRIBUTES + ">")
# Constructs whose end is a fixed string; unterminated, they swallow the rest of the text (as in XML).
_DELIMITED = (("<!--", "-->"), ("<![CDATA[", "]]>"), ("<?", "?>"))
_CLOSERS = dict(_DELIMITED)
# All of the above in one pattern, tried in the same order at each '<' (a search finds the next '<' where one of
# them matches, which is what skipping stray '<' one by one did): one C-level search per token.
_MARKUP = re.compile("|".join((r"(<!--|<!\[CDATA\[|<\?)", _CLOSE_TAG.pattern, _OPEN_TAG.pattern, _DECLARATION.pattern)))
_PARTIAL_ENTITY = re.compile(r"&[#\w]*$")
# Everything up to the next svg tag start (group 1; group 2 the "/" of a closing one) or construct that hides text
# (group 3: a comment, CDATA or processing instruction), every other token skipped whole with the full scan's own
# patterns in its order, and a '<' that starts none stepped over, as the full scan steps over it.
_SVG_START = r"</?[sS][vV][gG](?=[\s/>])"
_HIDING = r"<!--|<!\[CDATA\[|<\?"
_TO_SVG_TAG = re.compile(
    r"(?:[^<]++|(?!"
    + _SVG_START
    + "|"
    + _HIDING
    + r")(?>"
    + "|".join(re.sub(r"\((?!\?)", "(?:", p.pattern) for p in (_CLOSE_TAG, _OPEN_TAG, _DECLARATION))
    + r"|<))*+"
    + r"(?:(<(/?)[sS][vV][gG](?=[\s/>]))|("
    + _HIDING
    + "))"
)


@dataclass(frozen=True, slots=True)
class ExtractResult:
    """``svg`` is the extracted document or None. ``reason`` is None for a clean extraction, a note when the SVG was
    repaired (truncated answer), or why nothing was extracted. ``method`` says where it came from."""

    svg: str | None
    reason: str | None
    method: Method

    @property
    def found(self) -> bool:
        return self.svg is not None


@dataclass(frozen=True, slots=True)
class _Fence:
    language: str
    content: str
    closed: bool


@dataclass(frozen=True, slots=True)
class _Token:
    kind: Literal["open", "close", "other"]
    name: str  # lower-cased element name ("" for comments, CDATA, declarations)
    raw_name: str
    start: int
    end: int
    self_closing: bool = False


def _tokens(text: str) -> Iterator[_Token]:
    """Tags, comments, CDATA, processing instructions and declarations in order; stray '<' are skipped.

    Stops at an unterminated comment, CDATA section or processing instruction (it runs to the end of the text)."""
    search = _MARKUP.search
    match = search(text)
    while match is not None:
        delimited, closed_name, opened_name = match.group(1, 2, 3)
        start = match.start()
        if delimited is not None:
            close_at = text.find(_CLOSERS[delimited], match.end())
            if close_at == -1:
                return
            end = close_at + len(_CLOSERS[delimited])
            yield _Token("other", "", "", start, end)
        else:
            end = match.end()
            if closed_name is not None:
                yield _Token("close", closed_name.lower(), closed_name, start, end)
            elif opened_name is not None:
                yield _Token(
                    "open", opened_name.lower(), opened_name, start, end, match.group(4).rstrip().endswith("/")
                )
            else:
                yield _Token("other", "", "", start, end)
        match = search(text, end)


def _svg_tags(text: str) -> Iterator[tuple[bool, int, int]]:
    """(is an opening tag, start, end) of the svg elements' tags, exactly as :func:`_tokens` would find them
    (self-closing ``<svg/>`` left out), with one regex match per svg tag or hiding construct instead of one per
    token: :data:`_TO_SVG_TAG` skips the other tags inside the regex engine, with the very patterns the full scan
    tries, in its order (tests/test_extract_equivalence.py checks the two on hostile and random texts)."""
    match_at = _TO_SVG_TAG.match
    pos = 0
    while (match := match_at(text, pos)) is not None:
        hiding = match.group(3)
        if hiding is not None:  # a comment, CDATA or processing instruction: what it holds is no markup
            close_at = text.find(_CLOSERS[hiding], match.end())
            if close_at == -1:
                return
            pos = close_at + len(_CLOSERS[hiding])
            continue
        start, closing = match.start(1), bool(match.group(2))
        tag = (_CLOSE_TAG if closing else _OPEN_TAG).match(text, start)
        if tag is None:  # "<svg" that is no tag: the full scan steps over its '<' too
            pos = start + 1
            continue
        if closing or not tag.group(2).rstrip().endswith("/"):
            yield not closing, start, tag.end()
        pos = tag.end()


def extract_svg(answer: str | None) -> ExtractResult:
    """Extract the SVG document from a model answer (see the module docstring for the rules).

    The root element's name is normalised to lower case (``<SVG>`` → ``<svg>``) so an answer that shouted its root
    tag still renders; other element names are kept as written (SVG names such as ``linearGradient`` are
    case-sensitive)."""
    result = _extract(answer)
    if result.svg is not None and not result.svg.startswith("<svg"):
        svg = "<svg" + result.svg[4:]
        if svg.rstrip().endswith("</SVG>") or re.search(r"</svg\s*>\s*$", svg, re.IGNORECASE):
            svg = re.sub(r"</svg(\s*)>(\s*)$", r"</svg\1>\2", svg, flags=re.IGNORECASE)
        return ExtractResult(svg, result.reason, result.method)
    return result


def _extract(answer: str | None) -> ExtractResult:
    if answer is None or not answer.strip():
        return ExtractResult(None, EMPTY_ANSWER, "none")
    text, reasoning = strip_reasoning(answer)

    fences = [fence for fence in _fences(text) if fence.language in _FENCE_LANGUAGES]
    for fence in fences:
        svg = _first_complete_svg(fence.content)
        if svg is not None:
            return ExtractResult(svg, None, "fence" if fence.closed else "unclosed-fence")

    svg = _first_complete_svg(text)
    if svg is not None:
        return ExtractResult(svg, None, "raw")

    for fence in fences:
        repaired = _repair_truncated(fence.content)
        if repaired is not None:
            svg, note = repaired
            return ExtractResult(svg, note, "fence" if fence.closed else "unclosed-fence")

    start = next((m for m in _SVG_OPEN.finditer(text) if not _is_empty_svg_tag(m.group(0))), None)
    if start is not None:
        region = text[start.start() :]
        next_fence = _backticks(region, 3, 0)
        if next_fence is not None:
            region = region[: next_fence[0]]
        repaired = _repair_truncated(region)
        if repaired is not None:
            svg, note = repaired
            return ExtractResult(svg, note, "raw")

    if _SVG_OPEN.search(reasoning):
        return ExtractResult(None, ONLY_IN_REASONING, "none")
    return ExtractResult(None, NO_SVG, "none")


def strip_reasoning(answer: str) -> tuple[str, str]:
    """Split ``answer`` into (text without reasoning blocks, the removed reasoning)."""
    removed: list[str] = []
    text = answer
    close = _THINK_CLOSE.search(text)
    opening = _THINK_OPEN.search(text)
    if close is not None and (opening is None or opening.start() > close.start()):
        # A closing tag with no opening tag before it: the template opened the reasoning in the prompt.
        removed.append(text[: close.end()])
        text = text[close.end() :]
    kept: list[str] = []
    pos = 0
    while (opening := _THINK_OPEN.search(text, pos)) is not None:
        kept.append(text[pos : opening.start()])
        close = _THINK_CLOSE.search(text, opening.end())
        if close is None:  # reasoning cut off before it closed: the rest of the answer is reasoning
            removed.append(text[opening.start() :])
            pos = len(text)
            break
        removed.append(text[opening.start() : close.end()])
        pos = close.end()
    kept.append(text[pos:])
    return "".join(kept), "\n".join(removed)


def _fences(text: str) -> list[_Fence]:
    """Fenced code blocks in order; the last one may be unclosed (runs to the end of the text)."""
    fences: list[_Fence] = []
    pos = 0
    while True:
        opening = _backticks(text, 3, pos)
        if opening is None:
            return fences
        lang_match = _FENCE_LANG.match(text, opening[1])
        language = lang_match.group(1).lower()
        line_end = text.find("\n", lang_match.end())
        line_end = len(text) if line_end == -1 else line_end
        # "```svg\n<svg…" starts on the next line; "```svg <svg…" or "```<svg…" starts right after the tag.
        start = line_end + 1 if not text[lang_match.end() : line_end].strip() else lang_match.end()
        start = min(start, len(text))
        closing = _backticks(text, opening[1] - opening[0], start)
        if closing is None:
            fences.append(_Fence(language, text[start:], closed=False))
            return fences
        fences.append(_Fence(language, text[start : closing[0]], closed=True))
        pos = closing[1]


def _backticks(text: str, at_least: int, pos: int) -> tuple[int, int] | None:
    """(start, end) of the first run of ``at_least`` or more backticks from ``pos`` (what the regex `{n,} finds, by
    str.find: a regex search for a repeat tries every position, 30 times slower on a long answer)."""
    start = text.find("`" * at_least, pos)
    if start == -1:
        return None
    end = start + at_least
    while end < len(text) and text[end] == "`":
        end += 1
    return start, end


def _first_complete_svg(text: str) -> str | None:
    """The first ``<svg …>…</svg>`` whose nested svg elements balance.

    Each ``<svg`` start is tried in turn (so a ``<svg>`` mentioned in prose that never closes does not hide a later
    complete SVG), in one pass: with ``depth`` the running count of svg opens minus closes, the element opened at
    event ``i`` ends at the first later event whose depth is one less than the depth just after ``i``.
    """
    events: list[tuple[int, int, int, bool]] = []  # (depth after the event, start, end, is an opening tag)
    depth = 0
    for is_open, start, end in _svg_tags(text):
        depth += 1 if is_open else -1
        events.append((depth, start, end, is_open))
    best: tuple[int, int] | None = None
    next_at_depth: dict[int, int] = {}  # depth -> end offset of the nearest later event at that depth
    for index in range(len(events) - 1, -1, -1):
        level, start, end, is_open = events[index]
        if is_open and (level - 1) in next_at_depth:
            best = (start, next_at_depth[level - 1])
        next_at_depth[level] = end
    return None if best is None else text[best[0] : best[1]]


def _repair_truncated(text: str) -> tuple[str, str] | None:
    """Close a truncated SVG starting at its first complete ``<svg …>`` tag: drop an incomplete trailing tag, comment
    or entity and append closing tags for every element still open. None when ``text`` has no opening svg tag."""
    opening = next((m for m in _SVG_OPEN.finditer(text) if not _is_empty_svg_tag(m.group(0))), None)
    if opening is None:
        return None
    fragment = text[opening.start() :]
    stack: list[str] = []
    open_counts: Counter[str] = Counter()
    last_end = 0
    for token in _tokens(fragment):
        last_end = token.end
        if token.kind == "open" and not token.self_closing:
            stack.append(token.raw_name)
            open_counts[token.name] += 1
        elif token.kind == "close" and open_counts[token.name]:  # a stray closing tag is ignored
            while True:  # pop up to the matching element, closing any left open inside it
                popped = stack.pop().lower()
                open_counts[popped] -= 1
                if popped == token.name:
                    break
        if not stack:
            break
    tail = fragment[last_end:]
    dropped = False
    if "<" in tail:
        tail = tail[: tail.index("<")]
        dropped = True
    entity = _PARTIAL_ENTITY.search(tail)
    if entity is not None:
        tail = tail[: entity.start()]
        dropped = True
    kept = (fragment[:last_end] + tail).rstrip()
    closers = "".join(f"</{name}>" for name in reversed(stack))
    note = f"answer truncated: the SVG was not closed; appended {closers}"
    if not closers:  # cannot happen for text without a complete svg; kept for safety
        note = "answer truncated after the SVG"
    elif dropped:
        note += " after dropping an incomplete trailing tag, comment or entity"
    return kept + closers, note


def _is_empty_svg_tag(tag: str) -> bool:
    """``<svg/>``: an element with no content, most likely a mention in prose."""
    return tag[:-1].rstrip().endswith("/")
