"""Watching RFT jobs: a display-ready `JobView`, and a `JobPoller` that backs off on errors and keeps the last
known state (with its age) when the network or Fireworks fails.

The poller does no sleeping of its own: `poll()` fetches once and says how long to wait before the next poll, so
the TUI re-arms a timer with it (polls never overlap) and the CLI's `watch_job` sleeps with it. Errors that
waiting cannot fix (a rejected key, an unknown job, no permission) are `fatal`: stop polling and show them.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from svgagent.core.rft.fireworks_api import ControlPlane, FireworksError
from svgagent.core.rft.fireworks_api import int_field as _int
from svgagent.core.rft.job_metrics import JobCurves, job_curves
from svgagent.core.rft.job_states import is_terminal, short_state, stops_watching, why_stopped
from svgagent.core.rft.links import dataset_link, evaluator_link, job_link

# state category -> what it means; the TUI and CLI map categories to colours
CATEGORIES = ("success", "error", "warning", "active", "pending", "unknown")
CATEGORY_STYLE = {
    "success": "green",
    "error": "red",
    "warning": "yellow",
    "active": "cyan",
    "pending": "blue",
    "unknown": "dim",
}
_CATEGORY_OF = {
    "COMPLETED": "success",
    "FAILED": "error",
    "EXPIRED": "error",
    "CANCELLED": "warning",
    "CANCELLING": "warning",
    "EARLY_STOPPED": "warning",
    "PAUSED": "warning",
    "DELETING": "warning",
    "DELETING_CLEANING_UP": "warning",
    "RUNNING": "active",
    "WRITING_RESULTS": "active",
    "PROVISIONING": "active",
    "CREATING": "pending",
    "PENDING": "pending",
    "VALIDATING": "pending",
    "RE_QUEUEING": "pending",
    "CREATING_INPUT_DATASET": "pending",
    "IDLE": "pending",
}
RETRYABLE_KINDS = frozenset({"network", "server", "rate_limit", "timeout", "api", "conflict"})
_FRACTION = re.compile(r"(\.\d{6})\d+")


def state_category(phase: str | None) -> str:
    """`success`, `error`, `warning`, `active`, `pending` or `unknown` for a short state or phase."""
    return _CATEGORY_OF.get(short_state(phase) if phase else "", "unknown")


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 timestamp (`...Z`, up to nanoseconds) as an aware datetime; None when absent or unreadable."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = _FRACTION.sub(r"\1", value.strip()).replace("Z", "+00:00")
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def format_duration(seconds: float | None) -> str:
    """`42 s`, `3m 05s`, `2h 07m`, `3d 04h` ("–" for None)."""
    if seconds is None:
        return "–"
    s = max(0, int(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60}m {s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h {s % 3600 // 60:02d}m"
    return f"{s // 86400}d {s % 86400 // 3600:02d}h"


@dataclass(frozen=True)
class JobView:
    """One RFT job as a pane or the CLI shows it. `fetched_at` is the wall-clock time (`time.time()`) of the fetch
    behind it; `error` is set when later polls failed (the view is then the last known state: `stale`)."""

    name: str
    job_id: str
    display_name: str
    state: str  # short API state: RUNNING, COMPLETED, ...
    phase: str  # what to display: PROVISIONING for a RUNNING job without input requests yet, else `state`
    category: str
    status: str  # status message from Fireworks ("" when none)
    percent: int | None
    epoch: int | None
    processed: int
    failed: int
    total: int
    created: str | None
    completed: str | None
    output_model: str | None
    links: dict[str, str] = field(default_factory=dict)
    fetched_at: float = 0.0
    error: str | None = None
    error_kind: str | None = None
    curves: JobCurves = field(default_factory=JobCurves)  # the platform's per-step metrics (core/rft/job_metrics.py)

    @classmethod
    def from_job(cls, job: Mapping[str, Any], base_url: str | None, *, fetched_at: float | None = None) -> JobView:
        """Parse a job dict (wire/camelCase form, as `ControlPlane.get_job` returns it)."""
        progress = job.get("jobProgress") or {}
        status = job.get("status") or {}
        failed = _int(progress.get("failedRequests")) or 0
        processed = _int(progress.get("totalProcessedRequests"))
        if processed is None:
            processed = (_int(progress.get("successfullyProcessedRequests")) or 0) + failed
        name = str(job.get("name") or "")
        state = short_state(job.get("state"))
        total = _int(progress.get("totalInputRequests")) or 0
        phase = "PROVISIONING" if state == "RUNNING" and total == 0 else state
        links = {"job": job_link(base_url, name)} if name else {}
        if job.get("dataset"):
            links["dataset"] = dataset_link(base_url, str(job["dataset"]))
        if job.get("evaluator"):
            links["evaluator"] = evaluator_link(base_url, str(job["evaluator"]))
        return cls(
            name=name,
            job_id=name.rsplit("/", 1)[-1],
            display_name=str(job.get("displayName") or ""),
            state=state,
            phase=phase,
            category=state_category(phase),
            status=str(status.get("message") or ""),
            percent=_int(progress.get("percent")),
            epoch=_int(progress.get("epoch")),
            processed=processed,
            failed=failed,
            total=total,
            created=job.get("createTime"),
            completed=job.get("completedTime"),
            output_model=(job.get("trainingConfig") or {}).get("outputModel") or job.get("outputModel"),
            links=links,
            fetched_at=time.time() if fetched_at is None else fetched_at,
            curves=job_curves(job),
        )

    @property
    def provisioning(self) -> bool:
        """RUNNING but no input requests yet: resources are still being set up."""
        return self.phase == "PROVISIONING"

    @property
    def terminal(self) -> bool:
        return is_terminal(self.state)

    @property
    def stops_watching(self) -> bool:
        """Terminal, or waiting on the person (PAUSED): polling shows nothing new until someone acts."""
        return stops_watching(self.state)

    def why_stopped(self) -> str:
        """Why a watcher stopped on this state ("" when the state is terminal)."""
        return why_stopped(self.state, self.job_id or "the job")

    @property
    def stale(self) -> bool:
        return self.error is not None

    @property
    def last_updated(self) -> float:
        """Wall-clock time of the fetch behind this view (same as `fetched_at`)."""
        return self.fetched_at

    def age(self, now: float | None = None) -> float:
        """Seconds since this state was fetched."""
        return max(0.0, (time.time() if now is None else now) - self.fetched_at)

    def elapsed(self, now: float | None = None) -> float | None:
        """Seconds from creation to completion (or to `now` while the job runs)."""
        start = parse_time(self.created)
        if start is None:
            return None
        end = parse_time(self.completed) if self.completed else None
        if end is None:
            end = datetime.fromtimestamp(time.time() if now is None else now, UTC)
        return max(0.0, (end - start).total_seconds())

    def with_error(self, error: FireworksError | str, kind: str | None = None) -> JobView:
        return replace(self, error=str(error), error_kind=getattr(error, "kind", kind))

    def progress_text(self) -> str:
        """`40/96 processed (2 failed)`, `provisioning`, or "" before any progress is reported."""
        if self.phase == "PROVISIONING":
            return "provisioning"
        if not self.total and not self.processed:
            return ""
        failed = f" ({self.failed} failed)" if self.failed else ""
        return f"{self.processed}/{self.total} processed{failed}"

    def summary_line(self, now: float | None = None) -> str:
        """One line: phase, percent, epoch, progress, elapsed; plus the age and error when stale."""
        parts = [self.phase]
        if self.percent is not None:
            parts.append(f"{self.percent}%")
        if self.epoch is not None and self.state in ("RUNNING", "WRITING_RESULTS"):
            parts.append(f"epoch {self.epoch}")
        if progress := self.progress_text():
            parts.append(progress)
        if (elapsed := self.elapsed(now)) is not None:
            parts.append(f"{format_duration(elapsed)} {'total' if self.terminal else 'elapsed'}")
        if self.status and self.category in ("error", "warning"):
            parts.append(self.status)
        line = " · ".join(parts)
        if self.stale:
            line += f" — last known state, {format_duration(self.age(now))} old ({self.error})"
        return line

    def to_json(self) -> dict[str, Any]:
        """The `svgagent rft status --json` shape."""
        return {
            "name": self.name,
            "display_name": self.display_name,
            "state": self.state,
            "status": self.status,
            "percent": self.percent,
            "epoch": self.epoch,
            "processed": self.processed,
            "failed": self.failed,
            "total": self.total,
            "created": self.created,
            "completed": self.completed,
            "output_model": self.output_model,
            "links": dict(self.links),
            "curves": {name: [list(point) for point in points] for name, points in self.curves.series.items()},
        }


@dataclass(frozen=True)
class PollOutcome:
    """The result of one poll. `view` is the newest view (the last known one, marked stale, after an error);
    `delay` is how long to wait before the next poll; `done` says to stop (a terminal or paused job, or a fatal
    error)."""

    view: JobView | None
    error: FireworksError | None
    delay: float
    fatal: bool = False

    @property
    def done(self) -> bool:
        return self.fatal or (self.view is not None and self.error is None and self.view.stops_watching)


class JobPoller:
    """Polls one job: `interval` between successful polls, backoff (`interval * factor**errors`, at most
    `max_interval`) after errors, the last good view kept. `fetch` returns the job dict (e.g.
    `lambda: cp.get_job(name)`); `clock` gives wall-clock seconds."""

    def __init__(
        self,
        fetch: Callable[[], Mapping[str, Any]],
        base_url: str | None,
        *,
        interval: float = 5.0,
        max_interval: float = 60.0,
        factor: float = 2.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if interval <= 0 or max_interval < interval or factor < 1:
            raise ValueError("need 0 < interval <= max_interval and factor >= 1")
        self._fetch, self.base_url = fetch, base_url
        self.interval, self.max_interval, self.factor = interval, max_interval, factor
        self._clock = clock
        self.view: JobView | None = None
        self.consecutive_errors = 0
        self.last_error: FireworksError | None = None

    def next_delay(self) -> float:
        if self.consecutive_errors == 0:
            return self.interval
        return min(self.max_interval, self.interval * self.factor**self.consecutive_errors)

    def poll(self) -> PollOutcome:
        try:
            job = self._fetch()
        except FireworksError as err:
            self.consecutive_errors += 1
            self.last_error = err
            if self.view is not None:
                self.view = self.view.with_error(err)
            return PollOutcome(self.view, err, self.next_delay(), fatal=err.kind not in RETRYABLE_KINDS)
        self.consecutive_errors, self.last_error = 0, None
        self.view = JobView.from_job(job, self.base_url, fetched_at=self._clock())
        return PollOutcome(self.view, None, self.next_delay())


def watch_job(
    poller: JobPoller,
    on_update: Callable[[PollOutcome], None],
    *,
    sleep: Callable[[float], None] = time.sleep,
    max_errors: int | None = None,
    max_errors_without_view: int | None = 3,
) -> PollOutcome:
    """Poll until the job is terminal or paused (waiting on the person) or an error is fatal, or `max_errors` errors in a row (None: keep trying
    while there is a last known state to show), or `max_errors_without_view` errors before anything was known
    (then the outcome is made fatal: most likely a wrong job id, URL or network). `on_update` sees every outcome.
    Returns the last outcome."""
    while True:
        outcome = poller.poll()
        on_update(outcome)
        if outcome.done:
            return outcome
        if outcome.error is not None:
            if (
                outcome.view is None
                and max_errors_without_view is not None
                and poller.consecutive_errors >= max_errors_without_view
            ):
                return replace(outcome, fatal=True)
            if max_errors is not None and poller.consecutive_errors >= max_errors:
                return outcome
        sleep(outcome.delay)


def job_views(cp: ControlPlane, limit: int = 50) -> list[JobView]:
    """The account's RFT jobs, newest first (one page of at most `limit`)."""
    page = cp.list_jobs(page_size=limit)
    now = time.time()
    return [JobView.from_job(job, cp.base_url, fetched_at=now) for job in page.jobs]
