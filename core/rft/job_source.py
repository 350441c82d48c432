"""Where the Jobs pane gets RFT jobs from, and how often it asks. No Textual here: every call blocks, so the pane
runs them in thread workers and hands the results to its widgets on the main thread.

A `JobSource` is one connection to a control plane: the account's jobs (list endpoint) plus the jobs launched
here and remembered in the run store for that control plane (`Store.remember_job`), cancel, resume, and the
`LaunchRequest` a launch from the TUI uses. `job_source_for` picks it from the settings: the simulated control
plane in demo mode (started on first use, with one seeded job that progresses while you watch), Fireworks when
FIREWORKS_API_KEY is set, otherwise a source that only says what to set.

`JobsPoller` fetches once per `poll()` and says how long to wait before the next one (it never sleeps): the
interval after a success, a growing backoff after errors. When a fetch fails the last known jobs stay, marked
stale, with the time of the last successful fetch. The fireworks client takes most of a second to import, so
nothing here imports it until the first call (in the worker thread).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from svgagent.core.rft.job_states import EVALUABLE, RESUMABLE, TERMINAL, short_state  # noqa: F401 - the Jobs pane's

if TYPE_CHECKING:
    from svgagent.core.config.settings import Settings
    from svgagent.core.rft.fireworks_api import ControlPlane, FireworksError
    from svgagent.core.rft.launch import LaunchRequest
    from svgagent.core.rft.monitor import JobView
    from svgagent.core.rft.params import RftParams
    from svgagent.core.store.run_store import Store

log = logging.getLogger(__name__)

DEFAULT_POLL_S = 10.0
DEMO_POLL_S = 2.0
DEMO_STEP_S = 2.0  # the simulated job moves one lifecycle step every DEMO_STEP_S seconds
DEMO_RUNNING_STEPS = 15
LIST_LIMIT = 50
NO_KEY = (
    "FIREWORKS_API_KEY is not set, so there are no RFT jobs to show: add it in the Secrets pane (4) or to "
    ".env (FIREWORKS_ACCOUNT_ID and FIREWORKS_BASE_URL are optional), then press u. "
    "`svgagent tui --demo` shows simulated jobs."
)


class JobSource:
    """One control plane for the Jobs pane. ``connect`` builds the `ControlPlane` (called once, in a worker
    thread; None: not available, ``unavailable`` says why). ``store``: remembered jobs are shown and launches are
    remembered there (None: neither). ``request_overrides`` replace fields of every `LaunchRequest`."""

    def __init__(
        self,
        connect: Callable[[], ControlPlane] | None,
        *,
        label: str,
        store: Store | None = None,
        demo: bool = False,
        unavailable: str | None = None,
        on_close: Callable[[], None] | None = None,
        request_overrides: Mapping[str, Any] | None = None,
        limit: int = LIST_LIMIT,
    ) -> None:
        self._connect = connect
        self.label = label
        self.store = store
        self.demo = demo
        self.unavailable = unavailable if connect is None else None
        self._on_close = on_close
        self.request_overrides = dict(request_overrides or {})
        self.limit = limit
        self._cp: ControlPlane | None = None
        self._lock = threading.Lock()
        self._closed = False

    @property
    def available(self) -> bool:
        return self._connect is not None

    @property
    def base_url(self) -> str | None:
        """The control plane's base URL once connected."""
        return self._cp.base_url if self._cp is not None else None

    def control_plane(self) -> ControlPlane:
        """Connect on first use (blocking)."""
        from svgagent.core.rft.fireworks_api import FireworksError

        if self._connect is None:
            raise FireworksError(self.unavailable or "not connected", kind="missing_key")
        with self._lock:
            if self._closed:
                raise FireworksError("the Jobs pane has closed", kind="api")
            if self._cp is None:
                self._cp = self._connect()
            return self._cp

    def fetch(self) -> list[dict[str, Any]]:
        """The account's jobs (one page) plus the remembered jobs of this control plane that the page lacks: a
        finished one as last stored, an unfinished one fetched again (its stored copy when that fails)."""
        from svgagent.core.rft.fireworks_api import FireworksError

        cp = self.control_plane()
        jobs = cp.list_jobs(page_size=self.limit).jobs
        seen = {str(job.get("name") or "") for job in jobs}
        remembered = self._remembered(cp)
        for name, item in remembered.items():
            state = str(item.get("last_state") or "")
            if name in seen:
                continue
            last = item.get("last") or {
                "name": name,
                "displayName": item.get("display_name"),
                "createTime": item.get("created"),
                "dataset": item.get("dataset"),
                "evaluator": item.get("evaluator"),
                "trainingConfig": {"outputModel": item.get("output_model")},
                "state": state,
            }
            if state not in TERMINAL:
                try:
                    last = cp.get_job(name)
                except FireworksError as err:
                    if err.kind not in ("not_found", "permission"):
                        raise
            jobs.append(last)
        for job in jobs:
            self.remember_state(job, remembered)
        return jobs

    def _remembered(self, cp: ControlPlane) -> dict[str, dict[str, Any]]:
        if self.store is None:
            return {}
        try:
            account = cp.account
        except Exception:  # noqa: BLE001 - the list call reports the same failure
            account = None
        return {
            str(item["job_name"]): item
            for item in self.store.list_jobs()
            if item.get("base_url") == cp.base_url and (account is None or item.get("account") == account)
        }

    def remember_state(self, job: Mapping[str, Any], remembered: Mapping[str, Any] | None = None) -> None:
        """Keep the store's copy of a remembered job current (jobs not launched here are left alone)."""
        name = str(job.get("name") or "")
        if self.store is None or not name or (remembered is not None and name not in remembered):
            return
        state = short_state(job.get("state")) if job.get("state") else ""
        if remembered is not None and remembered[name].get("last_state") == state:
            return
        self.store.update_job_state(name, state, dict(job))

    def get(self, name: str) -> dict[str, Any]:
        job = self.control_plane().get_job(name)
        self.remember_state(job)
        return job

    def cancel(self, name: str) -> dict[str, Any]:
        """Ask Fireworks to cancel; returns the job as it is right after."""
        self.control_plane().cancel_job(name)
        return self.get(name)

    def resume(self, name: str) -> dict[str, Any]:
        job = self.control_plane().resume_job(name)
        self.remember_state(job)
        return job

    def launch_request(self, settings: Settings, params: RftParams) -> LaunchRequest:
        """What a launch from the TUI sends: keys, account, judge and dataset (with its row limit) from the
        settings, then this source's overrides."""
        from svgagent.core.rft.launch import LaunchRequest

        request = LaunchRequest.from_settings(settings, params)
        return dataclasses.replace(request, **self.request_overrides) if self.request_overrides else request

    def close(self) -> None:
        with self._lock:
            self._closed = True
            cp, self._cp = self._cp, None
        if cp is not None:
            cp.close()
        if self._on_close is not None:
            self._on_close()


def unavailable_source(message: str = NO_KEY) -> JobSource:
    return JobSource(None, label="not connected", unavailable=message)


def control_plane_source(settings: Settings, store: Store | None = None, *, base_url: str | None = None) -> JobSource:
    """Fireworks (or FIREWORKS_BASE_URL, or ``base_url``) with the settings' key and account."""
    key = settings.fireworks_api_key.get_secret_value() if settings.fireworks_api_key else ""
    if not key.strip():
        return unavailable_source()

    def connect() -> ControlPlane:
        from svgagent.core.rft.fireworks_api import ControlPlane

        return ControlPlane(
            key, account_id=settings.fireworks_account_id, base_url=base_url, max_retries=settings.max_retries
        )

    return JobSource(connect, label="Fireworks", store=store)


# ---- polling ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class JobsOutcome:
    """One poll: ``views`` newest first (the last known ones, marked stale, after an error); ``delay`` until the
    next poll; ``fatal``: waiting will not help (a rejected key, no permission), so stop until asked again;
    ``updated_at``: wall-clock time of the last successful fetch (None: never)."""

    views: tuple[JobView, ...]
    error: FireworksError | None
    delay: float
    fatal: bool
    updated_at: float | None
    errors: int = 0


def _created_key(view: JobView) -> str:
    return view.created or ""


class JobsPoller:
    """Polls a `JobSource`: ``interval`` seconds between successful polls, ``interval * factor**errors`` (at most
    ``max_interval``) after consecutive errors. ``clock`` is wall-clock seconds (injectable for tests)."""

    def __init__(
        self,
        source: JobSource,
        *,
        interval: float = DEFAULT_POLL_S,
        max_interval: float | None = None,
        factor: float = 2.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        max_interval = max(60.0, interval) if max_interval is None else max_interval
        if interval <= 0 or max_interval < interval or factor < 1:
            raise ValueError("need 0 < interval <= max_interval and factor >= 1")
        self.source = source
        self.interval, self.max_interval, self.factor = interval, max_interval, factor
        self.clock = clock
        self._views: dict[str, JobView] = {}
        self._lock = threading.Lock()
        self.consecutive_errors = 0
        self.last_error: FireworksError | None = None
        self.updated_at: float | None = None

    def next_delay(self) -> float:
        if self.consecutive_errors == 0:
            return self.interval
        return min(self.max_interval, self.interval * self.factor**self.consecutive_errors)

    def poll(self) -> JobsOutcome:
        """Fetch every job once (blocking)."""
        from svgagent.core.rft.fireworks_api import FireworksError
        from svgagent.core.rft.monitor import RETRYABLE_KINDS, JobView

        try:
            jobs = self.source.fetch()
        except Exception as exc:  # noqa: BLE001 - every failure keeps the last known state on screen
            err = exc if isinstance(exc, FireworksError) else FireworksError(f"{type(exc).__name__}: {exc}")
            if not isinstance(exc, FireworksError):
                log.warning("job poll failed", exc_info=exc)
            with self._lock:
                self.consecutive_errors += 1
                self.last_error = err
                self._views = {name: view.with_error(err) for name, view in self._views.items()}
                return self._outcome(err, fatal=err.kind not in RETRYABLE_KINDS)
        now = self.clock()
        base_url = self.source.base_url
        views = [JobView.from_job(job, base_url, fetched_at=now) for job in jobs]
        views.sort(key=lambda v: (_created_key(v), v.name), reverse=True)
        with self._lock:
            self.consecutive_errors, self.last_error, self.updated_at = 0, None, now
            self._views = {view.name: view for view in views if view.name}
            return self._outcome(None, fatal=False)

    def put(self, job: Mapping[str, Any]) -> JobsOutcome:
        """Show ``job`` (just launched, cancelled or resumed) at once, without waiting for the next poll."""
        from svgagent.core.rft.monitor import JobView

        view = JobView.from_job(job, self.source.base_url, fetched_at=self.clock())
        with self._lock:
            merged = {**self._views, view.name: view}
            self._views = dict(sorted(merged.items(), key=lambda kv: (_created_key(kv[1]), kv[0]), reverse=True))
            return self._outcome(self.last_error, fatal=False)

    def _outcome(self, error: FireworksError | None, *, fatal: bool) -> JobsOutcome:
        return JobsOutcome(
            tuple(self._views.values()), error, self.next_delay(), fatal, self.updated_at, self.consecutive_errors
        )
