"""Eval Protocol's rollout status codes (``eval_protocol.models.Status.Code``): the gRPC codes 0–16 for errors,
plus its own 100 FINISHED, 101 RUNNING, 102 SCORE_INVALID and 103 RESPONSE_QUALITY_ERROR.

eval-protocol turns a terminal error code into an exception; it retries DEADLINE_EXCEEDED, NOT_FOUND,
PERMISSION_DENIED, RESOURCE_EXHAUSTED, UNAVAILABLE, UNAUTHENTICATED, UNKNOWN and RESPONSE_QUALITY_ERROR by default
(sending ``/init`` again with the same rollout id) and fails the row on the others (INTERNAL included).
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any

from svgagent.core.scoring.models import FailureKind


class StatusCode(IntEnum):
    OK = 0
    CANCELLED = 1
    UNKNOWN = 2
    INVALID_ARGUMENT = 3
    DEADLINE_EXCEEDED = 4
    NOT_FOUND = 5
    ALREADY_EXISTS = 6
    PERMISSION_DENIED = 7
    RESOURCE_EXHAUSTED = 8
    FAILED_PRECONDITION = 9
    ABORTED = 10
    OUT_OF_RANGE = 11
    UNIMPLEMENTED = 12
    INTERNAL = 13
    UNAVAILABLE = 14
    DATA_LOSS = 15
    UNAUTHENTICATED = 16
    FINISHED = 100
    RUNNING = 101
    SCORE_INVALID = 102
    RESPONSE_QUALITY_ERROR = 103

    @property
    def is_error(self) -> bool:
        return self not in (StatusCode.OK, StatusCode.FINISHED, StatusCode.RUNNING, StatusCode.SCORE_INVALID)


def status_dict(code: StatusCode, message: str, details: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The ``status`` object of a log record or row: ``{code, message, details}``."""
    return {"code": int(code), "message": message, "details": details or []}


# A failed rollout's typed kind <-> its status code. Model faults (no SVG, render refused) are finished rollouts with
# a valid 0, so they have no error code.
STATUS_OF_FAILURE: dict[FailureKind, StatusCode] = {
    FailureKind.TIMEOUT: StatusCode.DEADLINE_EXCEEDED,
    FailureKind.UNREACHABLE: StatusCode.UNAVAILABLE,
    FailureKind.RATE_LIMIT: StatusCode.RESOURCE_EXHAUSTED,
    FailureKind.AUTH: StatusCode.UNAUTHENTICATED,
    FailureKind.HTTP_ERROR: StatusCode.UNAVAILABLE,
    FailureKind.BAD_RESPONSE: StatusCode.INTERNAL,
    FailureKind.JUDGE_UNUSABLE: StatusCode.SCORE_INVALID,
    FailureKind.INTERNAL: StatusCode.INTERNAL,
    FailureKind.OTHER: StatusCode.UNKNOWN,
}
_FAILURE_OF_STATUS: dict[int, FailureKind] = {
    StatusCode.DEADLINE_EXCEEDED: FailureKind.TIMEOUT,
    StatusCode.UNAVAILABLE: FailureKind.UNREACHABLE,
    StatusCode.RESOURCE_EXHAUSTED: FailureKind.RATE_LIMIT,
    StatusCode.UNAUTHENTICATED: FailureKind.AUTH,
    StatusCode.PERMISSION_DENIED: FailureKind.AUTH,
    StatusCode.SCORE_INVALID: FailureKind.JUDGE_UNUSABLE,
}


def failure_kind_of(code: int | None) -> FailureKind:
    """The failure kind an error status code stands for (OTHER when it says nothing more precise)."""
    return _FAILURE_OF_STATUS.get(code, FailureKind.OTHER) if code is not None else FailureKind.OTHER


def status_name(code: int) -> str:
    try:
        return StatusCode(code).name
    except ValueError:
        return "code"
