"""JSON bodies on the hot paths (the engine's chat completions, `svgagent serve`'s policy call and status posts):
pydantic-core's encoder and parser, each about a fifth of the ``json`` module's CPU on these bodies, with the
``json`` module as the fallback wherever they would differ, so every body is written and read as ``json`` would."""

from __future__ import annotations

import json
from typing import Any

import pydantic_core


def json_bytes(value: Any) -> bytes:
    """``value`` as a JSON body: pydantic's encoder (compact, UTF-8; a fifth of ``json.dumps``' CPU on a policy
    body or a status record), or ``json.dumps`` for what that cannot write as UTF-8 (a lone surrogate, which a body
    read by ``json.loads`` may hold: it writes it as an escape)."""
    try:
        return pydantic_core.to_json(value)
    except pydantic_core.PydanticSerializationError:
        return json.dumps(value).encode()


def json_value(raw: str | bytes) -> Any:
    """A JSON body read by pydantic's parser (a fifth of ``json.loads``' CPU on a chat completion), or by
    ``json.loads`` where that refuses it (a BOM, UTF-16, a lone surrogate escape, NaN as json.loads reads it), so
    the same bodies are read the same way; ValueError when neither can."""
    try:
        return pydantic_core.from_json(raw)
    except ValueError:
        return json.loads(raw)
