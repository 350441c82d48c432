"""Fixed RFT jobs for the Jobs pane's tests and snapshots: an in-memory stand-in for `ControlPlane` (no network at
all) and job dicts in the wire format, with fixed times so every screen is the same on every run."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

from svgagent.core.rft.job_source import JobSource

ACCOUNT = "test-account"
BASE_URL = "https://api.fireworks.ai"
NOW = datetime(2026, 1, 1, 12, 3, 5, tzinfo=UTC).timestamp()  # the wall clock of the tests
DATASET = f"accounts/{ACCOUNT}/datasets/svgagent-builtin-745e05c466c0"
EVALUATOR = f"accounts/{ACCOUNT}/evaluators/svgagent-judge-a51245cfde23"


def job(
    job_id: str,
    state: str,
    *,
    percent: int | None = None,
    processed: int = 0,
    total: int = 0,
    failed: int = 0,
    epoch: int | None = 0,
    created: str = "2026-01-01T12:00:00Z",
    completed: str | None = None,
    display: str = "",
    message: str = "",
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": f"accounts/{ACCOUNT}/reinforcementFineTuningJobs/{job_id}",
        "displayName": display,
        "state": f"JOB_STATE_{state}",
        "createTime": created,
        "dataset": DATASET,
        "evaluator": EVALUATOR,
        "status": {"code": "OK", "message": message},
        "trainingConfig": {
            "baseModel": "accounts/fireworks/models/qwen3-0p6b",
            "outputModel": f"accounts/{ACCOUNT}/models/{job_id}",
        },
    }
    if completed:
        out["completedTime"] = completed
    if percent is not None:
        out["jobProgress"] = {
            "percent": percent,
            "epoch": epoch,
            "totalInputRequests": total,
            "totalProcessedRequests": processed,
            "failedRequests": failed,
        }
    return out


def sample_jobs() -> list[dict[str, Any]]:
    return [
        job(
            "svgagent-rft-1a2b3c4d5e6f",
            "RUNNING",
            percent=40,
            processed=53,
            total=132,
            failed=2,
            display="svgagent builtin (33 rows) qwen3-0p6b",
            created="2026-01-01T12:00:00Z",
        ),
        job(
            "svgagent-rft-0f9e8d7c6b5a",
            "COMPLETED",
            percent=100,
            processed=132,
            total=132,
            epoch=0,
            display="svgagent builtin (33 rows) qwen3-0p6b",
            created="2025-12-31T09:00:00Z",
            completed="2025-12-31T10:12:30Z",
        ),
        job(
            "svgagent-rft-badc0ffee123",
            "FAILED",
            percent=50,
            processed=66,
            total=132,
            created="2025-12-30T08:00:00Z",
            completed="2025-12-30T08:40:00Z",
            message="evaluator crashed: judge quota exhausted",
        ),
    ]


class FakePage:
    def __init__(self, jobs: list[dict[str, Any]]) -> None:
        self.jobs, self.next_page_token = jobs, None


class FakeControlPlane:
    """The calls `JobSource` makes, answered from memory."""

    base_url = BASE_URL
    account = ACCOUNT

    def __init__(self, jobs: list[dict[str, Any]] | None = None) -> None:
        self.jobs = {j["name"]: j for j in (jobs or [])}
        self.calls: list[str] = []
        self.fail: Exception | None = None  # set: every list call raises it

    def list_jobs(self, page_size: int = 50, page_token: str | None = None, order_by: str | None = None) -> FakePage:
        self.calls.append("list")
        if self.fail is not None:
            raise self.fail
        return FakePage([copy.deepcopy(j) for j in self.jobs.values()])

    def get_job(self, name: str) -> dict[str, Any]:
        self.calls.append(f"get {name}")
        return copy.deepcopy(self.jobs[name])

    def cancel_job(self, name: str) -> None:
        self.calls.append(f"cancel {name}")
        self.jobs[name]["state"] = "JOB_STATE_CANCELLED"

    def resume_job(self, name: str) -> dict[str, Any]:
        self.calls.append(f"resume {name}")
        self.jobs[name]["state"] = "JOB_STATE_RUNNING"
        return copy.deepcopy(self.jobs[name])

    def close(self) -> None:
        pass


def fake_source(jobs: list[dict[str, Any]] | None = None, **kwargs: Any) -> JobSource:
    """A source over a `FakeControlPlane` (``source.fake`` is it, for assertions)."""
    cp = FakeControlPlane(jobs)
    source = JobSource(lambda: cp, label="test control plane", **kwargs)
    source.fake = cp  # type: ignore[attr-defined]
    return source
