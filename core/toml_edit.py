"""Set a few top-level keys of a TOML text line by line, keeping every other byte as the person wrote it.

``svgagent.toml`` is a file people edit by hand: a save from the Config pane must not drop their comments, blank
lines, key order or tables. :func:`set_top_level_keys` changes only the lines of the keys it is given (a key's
value may span lines; a comment after the value stays), removes the keys set to None and adds the new ones
at the end of the top-level part (before the first table). A small lexer tells the line a statement starts on
from a line inside another key's multi-line string or array (which may read ``key = …`` or ``[table]``). It edits
plain ``key = value`` lines only; for anything else — a key written as a dotted key or a table, a layout it
cannot follow — it returns None, and so it does when the result, parsed again, is not exactly the old file with
those keys changed: the caller then writes the file anew. No textual imports, no I/O.
"""

from __future__ import annotations

import itertools
import re
import tomllib
from collections.abc import Callable, Mapping
from typing import Any

_KEY = r"[A-Za-z0-9_-]+|\"(?:[^\"\\\n]|\\.)*\"|'[^'\n]*'"
_ASSIGN = re.compile(rf"[ \t]*({_KEY})[ \t]*=[ \t]*")
_TABLE_HEADER = re.compile(r"[ \t]*\[")  # [table] or [[array]] (or a line of a multi-line array: checked after)
MAX_VALUE_LINES = 200  # a value written over more lines than this is beyond line-wise editing
MAX_PARSED_CHARS = 4_000_000  # nor one that takes parsing more text than this to find its end


def _key_name(written: str) -> str | None:
    if written[0] not in "\"'":
        return written
    try:
        return str(tomllib.loads(f"k = {written}")["k"])
    except tomllib.TOMLDecodeError:
        return None


def _value_end(lines: list[str], start: int, key: str, value: Any) -> int | None:
    """The index after the last line of ``key``'s value, which starts on line ``start`` (None: not that value, or
    more text than MAX_PARSED_CHARS parsed to find it: each line more is a parse of all of them)."""
    parsed_chars = 0
    for end in range(start + 1, min(len(lines), start + MAX_VALUE_LINES) + 1):
        chunk = "".join(lines[start:end])
        parsed_chars += len(chunk)
        if parsed_chars > MAX_PARSED_CHARS:
            return None
        try:
            parsed = tomllib.loads(chunk)
        except tomllib.TOMLDecodeError:
            continue
        return end if parsed == {key: value} else None
    return None


MAX_HASHES_TRIED = 64  # a '#' inside the value is tried as a comment's start too: a parse each, so a bounded few


def _trailing_comment(written: str, key: str, value: Any) -> str:
    """The comment after a value (on its last line), with the spaces before it ('' when there is none, or when it
    starts after more than MAX_HASHES_TRIED '#' of the value itself: the file is untrusted text, each try a parse)."""
    body = written.rstrip("\r\n")
    for hash_at in itertools.islice((m.start() for m in re.finditer("#", body)), MAX_HASHES_TRIED):
        try:
            if tomllib.loads(body[:hash_at]) == {key: value}:
                return body[len(body[:hash_at].rstrip(" \t")) :]
        except tomllib.TOMLDecodeError:
            continue
    return ""


_SIGNIFICANT = re.compile(r"""[#"'\[\]{}]""")  # outside a string, only these change where a line is
_BASIC_STOP = re.compile(r'[\\"]')  # in a basic string: an escape or a quote
_LITERAL_STOP = re.compile("'")  # in a literal string: a quote (no escapes)


def _close_multiline(line: str, at: int, quote: str) -> int | None:
    """The index after the delimiter that closes the multi-line string ``quote`` (three double or three single
    quotes) from ``at`` of ``line`` on; None: it stays open past the line. Up to two quotes before it are text."""
    mark = quote[0]
    stop = _BASIC_STOP if mark == '"' else _LITERAL_STOP
    while found := stop.search(line, at):
        hit = found.start()
        if found.group() == "\\":
            at = hit + 2
            continue
        run_end = hit
        while run_end < len(line) and line[run_end] == mark:
            run_end += 1
        if run_end - hit >= 3:
            return min(run_end, hit + 5)
        at = run_end
    return None


def _close_single(line: str, at: int) -> int:
    """The index after the quote closing the one-line string that opens at ``at`` (the line's end: unclosed)."""
    if line[at] == "'":
        end = line.find("'", at + 1)
        return len(line) if end < 0 else end + 1
    at += 1
    while found := _BASIC_STOP.search(line, at):
        if found.group() == '"':
            return found.end()
        at = found.start() + 2
    return len(line)


def _lex_line(line: str, quote: str, depth: int) -> tuple[str, int]:
    """The multi-line string still open (its delimiter, '' for none) and the brackets still open after ``line``,
    given those before it. Only strings, comments and brackets are told apart: enough to know where a line is."""
    at = 0
    while at < len(line):
        if quote:
            closed = _close_multiline(line, at, quote)
            if closed is None:
                return quote, depth
            at, quote = closed, ""
            continue
        found = _SIGNIFICANT.search(line, at)
        if found is None or found.group() == "#":
            break
        at = found.start()
        if line.startswith(('"""', "'''"), at):
            quote, at = line[at : at + 3], at + 3
        elif found.group() in "\"'":
            at = _close_single(line, at)
        else:
            depth = max(depth + (1 if found.group() in "[{" else -1), 0)
            at += 1
    return quote, depth


def _top_level_layout(lines: list[str]) -> tuple[list[int], int]:
    """The lines of the top-level part on which a statement may start — not inside another key's multi-line
    string or array, where a line may well read ``key = …`` or ``[table]`` — and the index of the first table
    header (``len(lines)``: none). One pass of a small lexer, linear in the text: no parse."""
    starts: list[int] = []
    quote, depth = "", 0
    for n, line in enumerate(lines):
        if not quote and depth == 0:
            if _TABLE_HEADER.match(line):
                return starts, n
            starts.append(n)
        quote, depth = _lex_line(line, quote, depth)
    return starts, len(lines)


def _ending(line: str) -> str:
    return line[len(line.rstrip("\r\n")) :]


def set_top_level_keys(
    text: str,
    values: Mapping[str, Any],
    literal: Callable[[Any], str],
    key_text: Callable[[str], str],
    data: Mapping[str, Any] | None = None,
) -> str | None:
    """``text`` with the top-level keys of ``values`` set to ``literal(value)`` (None: the key removed), every
    other line unchanged; None when that cannot be done line by line. ``text`` must be valid TOML
    (``tomllib.TOMLDecodeError`` otherwise); ``data`` is ``text`` parsed, when the caller has it already."""
    if data is None:
        data = tomllib.loads(text)
    lines = text.splitlines(keepends=True)
    newline = (_ending(lines[0]) if lines else "") or "\n"
    starts, top_end = _top_level_layout(lines)

    found: dict[int, tuple[str, int, str, str]] = {}  # first line -> (key, end, "key = ", trailing comment)
    seen: set[str] = set()
    for n in starts:
        match = _ASSIGN.match(lines[n])
        name = _key_name(match.group(1)) if match else None
        if match is None or name is None or name not in values or name in seen:
            continue
        if name not in data:
            return None
        end = _value_end(lines, n, name, data[name])
        if end is None:
            return None
        comment = _trailing_comment("".join(lines[n:end]), name, data[name])
        found[n] = (name, end, match.group(0), comment)
        seen.add(name)
    if any(name in data and name not in seen for name in values):
        return None  # set some other way (a table, a dotted key, after a header we misread)

    added = [
        f"{key_text(name)} = {literal(value)}{newline}"
        for name, value in values.items()
        if value is not None and name not in seen
    ]
    insert_at = top_end
    if top_end < len(lines):  # before the comment block of the first table and the blank lines above it
        at_start = set(starts)  # a comment line, not a line of a string that starts with '#'
        while insert_at > 0 and insert_at - 1 in at_start and lines[insert_at - 1].lstrip().startswith("#"):
            insert_at -= 1
        while insert_at > 0 and not lines[insert_at - 1].strip():
            insert_at -= 1

    out: list[str] = []
    n = 0
    while n <= len(lines):
        if n >= insert_at and added:
            if out and not _ending(out[-1]):
                out[-1] += newline
            out += added
            added = []
        if n == len(lines):
            break
        if n in found:
            name, end, prefix, comment = found[n]
            if values[name] is not None:
                out.append(f"{prefix}{literal(values[name])}{comment}{_ending(lines[end - 1])}")
            n = end
            continue
        out.append(lines[n])
        n += 1
    result = "".join(out)

    expected = {k: v for k, v in data.items() if k not in values}
    expected.update(
        tomllib.loads("".join(f"{key_text(k)} = {literal(v)}\n" for k, v in values.items() if v is not None))
    )
    try:
        if tomllib.loads(result) != expected:
            return None
    except tomllib.TOMLDecodeError:
        return None
    return result
