"""What a rollout column may hold (core/store/sqlite_values.py): any value from outside becomes one SQLite binds, of the
column's kind, so no answer can make a store write fail."""

from __future__ import annotations

import math
import sqlite3
from enum import Enum
from typing import Any

import pytest

from svgagent.core.scoring.models import MAX_TOKEN_COUNT, FailureKind, RolloutStatus
from svgagent.core.store.run_store import rollout_values
from svgagent.core.store.sqlite_values import error_line, safe_text, storable


@pytest.mark.parametrize(
    ("column", "value", "kept"),
    [
        ("prompt_tokens", 10**30, 0),
        ("prompt_tokens", -5, 0),
        ("prompt_tokens", MAX_TOKEN_COUNT, MAX_TOKEN_COUNT),
        ("prompt_tokens", MAX_TOKEN_COUNT + 1, 0),
        ("completion_tokens", 12.0, 12),
        ("completion_tokens", "12", 0),
        ("judge_prompt_tokens", True, 0),
        ("fulfilled", 2**63, None),
        ("fulfilled", 3, 3),
        ("is_score_valid", True, 1),
        ("total", {"n": 1}, None),
        ("score", float("inf"), None),
        ("score", float("nan"), None),
        ("score", 10**400, None),
        ("score", 0.5, 0.5),
        ("generation_s", "fast", None),
        ("png", "not bytes", None),
        ("png", b"\x89PNG", b"\x89PNG"),
        ("finish_reason", {"type": "stop"}, '{"type": "stop"}'),
        ("finish_reason", ["a", 1], '["a", 1]'),
        ("raw_answer", "caf\u00e9 \ud800 ok", "caf\u00e9 \ufffd ok"),
        ("status", RolloutStatus.SCORED, "scored"),
        ("failure_kind", FailureKind.NO_SVG, "no_svg"),
        ("reason", None, None),
    ],
)
def test_a_value_becomes_one_its_column_keeps(column: str, value: Any, kept: Any) -> None:
    assert storable(column, value) == kept


def test_every_value_it_keeps_binds_in_sqlite() -> None:
    deep: Any = []
    for _ in range(100_000):
        deep = [deep]

    class Odd(Enum):
        X = object()

    hostile = {
        "raw_answer": "\udfff" * 3,
        "finish_reason": deep,  # too deep for json.dumps: its type's name
        "prompt_tokens": 10**100,
        "completion_tokens": -(10**100),
        "score": -math.inf,
        "fulfilled": 1e300,
        "reason": Odd.X,
        "png": memoryview(b"x"),
    }
    values = rollout_values(hostile)
    db = sqlite3.connect(":memory:")
    db.execute(f"CREATE TABLE t({', '.join(values)})")
    db.execute(f"INSERT INTO t VALUES ({', '.join('?' * len(values))})", tuple(values.values()))
    assert values["finish_reason"] == "<list>" and values["raw_answer"] == "\ufffd" * 3
    assert (values["prompt_tokens"], values["completion_tokens"], values["score"], values["fulfilled"]) == (
        0,
        0,
        None,
        None,
    )


def test_text_without_lone_surrogates_is_kept_as_it_is() -> None:
    text = "caf\u00e9 \U0001f600"
    assert safe_text(text) is text
    assert safe_text("plain") == "plain"


def test_an_error_is_one_line() -> None:
    assert error_line(ValueError("400, message:\n  Got more than 8190 bytes")) == (
        "ValueError: 400, message: Got more than 8190 bytes"
    )
    assert error_line(RuntimeError()) == "RuntimeError"
    assert len(error_line(OSError("x" * 10_000))) < 400
