"""A config file's TOML shape checked before any parser sees it: nesting, dotted-key length and item count.

tomllib and tomlkit read nested arrays and inline tables by recursion (``x = [[[…`` 200,000 deep raised
``RecursionError``), and tomllib takes time growing with the square of a dotted key's length (one key of a few
thousand parts took seconds). :func:`check_toml_shape` walks the text once, telling strings and comments apart
from the rest with one regular expression (a bracket, dot or ``=`` inside a string counts for nothing), and refuses
with one line naming the file and the line before a parser runs. The bounds are far above what a settings file
needs and low enough that every file within them parses in linear time.
"""

from __future__ import annotations

import re

MAX_NESTING = 32  # arrays and inline tables inside one another (a table header's brackets count too)
MAX_KEY_PARTS = 16  # parts of one dotted key (a.b.c is 3)
MAX_ITEMS = 4096  # keys, array elements and table headers in the whole file

_TOKEN = re.compile(
    r'''
      (?P<string>
          """(?:[^"\\]|\\[\s\S]|"{1,2}(?!"))*"{3,5}     # multi-line basic string: up to 2 quotes end its text
        | \'\'\'(?:[^']|'{1,2}(?!'))*'{3,5}            # multi-line literal string
      )
    | (?P<key>"(?:[^"\\\n]|\\.)*" | '[^'\n]*' | [A-Za-z0-9_\-]+)   # a one-line string or a bare word
    | (?P<space>[ \t\r]+ | \#[^\n]*)                    # blanks and a comment
    | (?P<newline>\n[ \t\r\n]*)                       # a line's end and the blank lines after it
    | (?P<close>[\]}]+)
    | (?P<inert>[^\[\]{}=,.\n"'\#A-Za-z0-9_\-\ \t\r]+)     # nothing that counts here (":", "+", …)
    | (?P<mark>[\s\S])                                  # one of [ { = , . or a quote that opens no string
    ''',
    re.VERBOSE,
)


def check_toml_shape(text: str, name: str) -> None:
    """Raise ``ValueError`` (one line naming ``name`` and the line) when ``text`` nests deeper than
    :data:`MAX_NESTING`, has a dotted key of more than :data:`MAX_KEY_PARTS` parts or more than :data:`MAX_ITEMS`
    keys, array elements and table headers. Says nothing about whether ``text`` is valid TOML."""
    depth = dots = items = 0
    line_start = True
    for token in _TOKEN.finditer(text):
        kind = token.lastgroup
        if kind == "space":
            continue
        if kind == "key":  # a part of a dotted key: the dots around it count on
            line_start = False
            continue
        if kind == "newline":
            dots, line_start = 0, True
            continue
        mark = token.group()
        if kind != "mark":  # a multi-line string, closing brackets or signs: never part of a key
            if kind == "close":
                depth = max(depth - len(mark), 0)
            dots, line_start = 0, False
            continue
        if mark == ".":
            dots += 1
            if dots >= MAX_KEY_PARTS:
                _refuse(name, text, token.start(), f"has a dotted key of more than {MAX_KEY_PARTS} parts")
            continue
        dots = 0
        if mark in "[{":
            if mark == "[" and line_start and depth == 0:  # a table header
                items += 1
            depth += 1
            if depth > MAX_NESTING:
                _refuse(name, text, token.start(), f"nests deeper than {MAX_NESTING} levels")
        elif mark in "=,":
            items += 1
        if items > MAX_ITEMS:
            _refuse(name, text, token.start(), f"has more than {MAX_ITEMS} keys, array elements and tables")
        line_start = False


def _refuse(name: str, text: str, at: int, what: str) -> None:
    line = text.count("\n", 0, at) + 1
    raise ValueError(f"{name} {what} (line {line}): a settings file never needs that; fix or remove it")
