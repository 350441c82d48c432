"""Our control-plane layer over the official `fireworks-ai` client: account, secrets, dataset, evaluator, RFT jobs.

Everything goes through `fireworks.Fireworks` (its typed resources, and its low-level `get`/`put` where it has no
method: `/verifyApiKey` and the signed-URL upload). Retries with backoff are the client's own (`max_retries`); the
loops here only poll for state. Calls are blocking: the TUI runs them in a thread worker. Every failure a user can
meet is a `FireworksError` whose message says what happened and what to do.
"""

from __future__ import annotations

import os
import re
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping

import fireworks
import httpx

from svgagent.core.scoring.errors import SvgAgentError
from svgagent.core.rft.links import dataset_link, evaluator_link

DEFAULT_BASE_URL = "https://api.fireworks.ai"
MISSING_KEY = "FIREWORKS_API_KEY is not set: add it to .env or the environment"
TERMINAL_STATES = frozenset({"COMPLETED", "FAILED", "CANCELLED", "EARLY_STOPPED", "EXPIRED"})
_ID_RE = re.compile(r"^[a-z][a-z0-9-]{0,62}$")
_JOB_KWARGS = ("dataset", "evaluator", "aws_s3_config", "azure_blob_storage_config", "chunk_size", "display_name",
               "eval_auto_carveout", "evaluation_dataset", "inference_parameters", "loss_config",
               "max_concurrent_evaluations", "max_concurrent_rollouts", "max_inference_replica_count", "mcp_server",
               "node_count", "reservation_target", "training_config", "wandb_config")
Progress = Callable[[str, str], None]  # (stage, detail): stage in create/update/reuse/upload/validate/building/active


class FireworksError(SvgAgentError):
    """A control-plane failure, explained. `kind`: missing_key, auth, permission, admin_required, rate_limit,
    network, timeout, build_failed, not_found, conflict, invalid, server, api."""

    def __init__(self, message: str, *, kind: str = "api", status_code: int | None = None,
                 link: str | None = None) -> None:
        super().__init__(message)
        self.kind, self.status_code, self.link = kind, status_code, link


def short_state(state: str | None) -> str:
    """`JOB_STATE_RUNNING` → `RUNNING` (None → `UNSPECIFIED`)."""
    return (state or "JOB_STATE_UNSPECIFIED").removeprefix("JOB_STATE_")


def is_terminal(state: str | None) -> bool:
    """True for COMPLETED, FAILED, CANCELLED, EARLY_STOPPED and EXPIRED (short or `JOB_STATE_` form)."""
    return short_state(state) in TERMINAL_STATES


def _int(value: Any) -> int | None:
    try:  # int64 counters arrive as JSON strings
        return int(value) if value is not None and value != "" else None
    except (TypeError, ValueError):
        return None


@dataclass(frozen=True)
class JobSummary:
    """What the job panel shows, parsed from a job dict (wire/camelCase form)."""

    name: str
    job_id: str
    display_name: str
    state: str
    status: str
    percent: int | None
    epoch: int | None
    processed: int
    failed: int
    total: int
    created: str | None
    completed: str | None
    output_model: str | None

    @property
    def provisioning(self) -> bool:
        """RUNNING but no input requests yet: resources are still being set up."""
        return self.state == "RUNNING" and self.total == 0

    @property
    def phase(self) -> str:
        """The state to display: `PROVISIONING` for a provisioning job, else `state`."""
        return "PROVISIONING" if self.provisioning else self.state

    @property
    def terminal(self) -> bool:
        return is_terminal(self.state)

    @classmethod
    def from_job(cls, job: Mapping[str, Any]) -> JobSummary:
        progress = job.get("jobProgress") or {}
        status = job.get("status") or {}
        failed = _int(progress.get("failedRequests")) or 0
        processed = _int(progress.get("totalProcessedRequests"))
        if processed is None:
            processed = (_int(progress.get("successfullyProcessedRequests")) or 0) + failed
        name = str(job.get("name") or "")
        return cls(
            name=name, job_id=name.rsplit("/", 1)[-1], display_name=str(job.get("displayName") or ""),
            state=short_state(job.get("state")), status=str(status.get("message") or ""),
            percent=_int(progress.get("percent")), epoch=_int(progress.get("epoch")), processed=processed,
            failed=failed, total=_int(progress.get("totalInputRequests")) or 0,
            created=job.get("createTime"), completed=job.get("completedTime"),
            output_model=(job.get("trainingConfig") or {}).get("outputModel") or job.get("outputModel"),
        )


@dataclass(frozen=True)
class JobPage:
    jobs: list[dict[str, Any]]
    next_page_token: str | None


def secret_id_for(key_name: str) -> str:
    """`OPENAI_API_KEY` → `openai-api-key` (the Fireworks secret id for an env-var name)."""
    return _check_id("secret", key_name.strip().lower().replace("_", "-"))


def _check_id(kind: str, value: str) -> str:
    if not _ID_RE.match(value):
        raise FireworksError(f"{value!r} is not a valid Fireworks {kind} id: use lowercase letters, digits and '-', "
                             "start with a letter, at most 63 characters", kind="invalid")
    return value


def _server_message(body: object) -> str:
    if isinstance(body, Mapping):
        err = body.get("error", body)
        message = err.get("message") if isinstance(err, Mapping) else err
        return " ".join(str(message or "").split())[:300]
    return " ".join(str(body or "").split())[:300]


def _host(url: httpx.URL) -> str:
    return f"{url.host}:{url.port}" if url.port else url.host


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


class ControlPlane:
    """Blocking control-plane calls for one API key / account."""

    DIRECT_UPLOAD_LIMIT = 150 * 1024 * 1024  # larger datasets go through a signed URL

    def __init__(self, api_key: str | None = None, *, account_id: str | None = None, base_url: str | None = None,
                 max_retries: int = 2, timeout: float | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        key = (api_key if api_key is not None else os.environ.get("FIREWORKS_API_KEY") or "").strip()
        if not key:
            raise FireworksError(MISSING_KEY, kind="missing_key")
        base = (base_url or os.environ.get("FIREWORKS_BASE_URL") or DEFAULT_BASE_URL).strip().rstrip("/")
        for suffix in ("/inference/v1", "/v1"):  # the client adds /v1 itself
            base = base.removesuffix(suffix)
        self._account = (account_id or os.environ.get("FIREWORKS_ACCOUNT_ID") or "").strip() or None
        self.client = fireworks.Fireworks(api_key=key, account_id=self._account, base_url=base,
                                          max_retries=max_retries,
                                          timeout=timeout if timeout is not None else fireworks.not_given)
        self.base_url = str(self.client.base_url).rstrip("/")
        self._sleep = sleep

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> ControlPlane:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- errors ----------------------------------------------------------------------------------------------
    @contextmanager
    def _api(self, action: str, *, evaluator_write: bool = False) -> Iterator[None]:
        try:
            yield
        except fireworks.APIStatusError as exc:
            raise self._status_error(exc, action, evaluator_write) from exc
        except fireworks.APITimeoutError as exc:
            raise FireworksError(f"timed out waiting for {_host(exc.request.url)} while {action}: the network or "
                                 "Fireworks is slow; try again", kind="network") from exc
        except fireworks.APIConnectionError as exc:
            raise FireworksError(f"cannot reach {_host(exc.request.url)} while {action}: check your network "
                                 "connection (and FIREWORKS_BASE_URL if you set it)", kind="network") from exc

    def _status_error(self, exc: fireworks.APIStatusError, action: str, evaluator_write: bool) -> FireworksError:
        code = exc.status_code
        msg = _server_message(exc.body) or exc.response.reason_phrase
        account = self._account or "your account"
        if code == 401:
            text, kind = (f"Fireworks rejected the API key ({msg}, 401) while {action}: check FIREWORKS_API_KEY in "
                          ".env or the environment, or create a new key in the Fireworks dashboard"), "auth"
        elif code == 403 and (evaluator_write or "admin" in msg.lower()):
            text, kind = (f"Fireworks refused {action}: {msg} (403). Only an account admin can create or update "
                          f"evaluators: ask an admin of {account} to grant your user the admin role (or to run "
                          "this step), then try again"), "admin_required"
        elif code == 403:
            text, kind = (f"Fireworks denied permission while {action} ({msg}, 403): check that the key belongs "
                          f"to {account} (FIREWORKS_ACCOUNT_ID) and may do this"), "permission"
        elif code == 404:
            text, kind = f"not found while {action}: {msg} (404)", "not_found"
        elif code == 409:
            text, kind = f"conflict while {action}: {msg} (409)", "conflict"
        elif code == 429:
            text, kind = (f"Fireworks rate limit or quota reached while {action} ({msg}, 429): wait a minute and "
                          "try again, or check your account's quota and billing"), "rate_limit"
        elif code >= 500:
            text, kind = (f"Fireworks server error while {action} ({msg}, {code}): try again in a few minutes"), \
                "server"
        else:
            text, kind = f"Fireworks rejected the request while {action}: {msg} ({code})", "invalid"
        return FireworksError(text, kind=kind, status_code=code)

    # ---- account and secrets ---------------------------------------------------------------------------------
    def verify_key(self) -> str:
        """Check the key against `GET /verifyApiKey`; returns the account id it belongs to."""
        with self._api("verifying the API key"):
            response = self.client.get("/verifyApiKey", cast_to=httpx.Response)
        account = response.headers.get("x-fireworks-account-id", "").strip()
        if not account:
            raise FireworksError("Fireworks accepted the API key but did not say which account it belongs to: set "
                                 "FIREWORKS_ACCOUNT_ID in .env or the environment")
        return account

    def resolve_account(self) -> str:
        """FIREWORKS_ACCOUNT_ID when given, else the account `/verifyApiKey` reports (cached)."""
        if self._account is None:
            self._account = self.verify_key()
        return self._account

    @property
    def account(self) -> str:
        return self.resolve_account()

    def upsert_secret(self, key_name: str, value: str) -> dict[str, Any]:
        """Store an env-var-style secret (e.g. OPENAI_API_KEY) for the evaluator: update it or create it.
        Returns the secret (never its value) plus `created`."""
        sid, acct = secret_id_for(key_name), self.account
        with self._api(f"looking up secret {sid}"):
            try:
                self.client.secrets.get(sid, account_id=acct)
                exists = True
            except fireworks.NotFoundError:
                exists = False
        with self._api(f"saving secret {key_name}"):
            if exists:
                secret = self.client.secrets.update(sid, account_id=acct, key_name=key_name, value=value)
            else:
                secret = self.client.secrets.create(account_id=acct, name=f"accounts/{acct}/secrets/{sid}",
                                                    key_name=key_name, value=value)
        out = secret.to_dict(mode="json")
        out.pop("value", None)
        return {**out, "created": not exists}

    # ---- uploads and polling ---------------------------------------------------------------------------------
    def _put_signed(self, url: str, data: bytes, action: str) -> None:
        """PUT bytes to a signed storage URL through the client (its retries), sending neither the API key nor the
        client's X-Stainless-* headers there; Content-Type and the exact length range are part of the signature."""
        headers: dict[str, Any] = {name: fireworks.omit for name in self.client.default_headers
                                   if name.lower().startswith("x-stainless")}
        headers.update({"Authorization": fireworks.omit, "X-Stainless-Retry-Count": fireworks.omit,
                        "X-Stainless-Read-Timeout": fireworks.omit, "Content-Type": "application/octet-stream",
                        "X-Goog-Content-Length-Range": f"{len(data)},{len(data)}"})
        with self._api(action):
            self.client.put(url, content=data, cast_to=httpx.Response, options={"headers": headers})

    def _poll(self, fetch: Callable[[], dict[str, Any]], done: Callable[[dict[str, Any]], bool],
              poll_s: float, timeout_s: float, on_wait: Callable[[dict[str, Any], float], None],
              on_timeout: Callable[[dict[str, Any], float], FireworksError]) -> dict[str, Any]:
        start = time.monotonic()
        while True:
            obj = fetch()
            if done(obj):
                return obj
            elapsed = time.monotonic() - start
            if elapsed >= timeout_s:
                raise on_timeout(obj, elapsed)
            on_wait(obj, elapsed)
            self._sleep(poll_s)

    # ---- dataset ---------------------------------------------------------------------------------------------
    def get_dataset(self, dataset_id: str) -> dict[str, Any] | None:
        with self._api(f"reading dataset {dataset_id}"):
            try:
                return self.client.datasets.get(dataset_id, account_id=self.account).to_dict(mode="json")
            except fireworks.NotFoundError:
                return None

    def create_dataset(self, dataset_id: str, display_name: str, jsonl_bytes: bytes, *, format: str = "CHAT",
                       poll_s: float = 2.0, timeout_s: float = 300.0) -> dict[str, Any]:
        """Create and upload a JSONL dataset and wait until READY; a READY dataset with this id and the same
        number of examples is reused."""
        _check_id("dataset", dataset_id)
        count = sum(1 for line in jsonl_bytes.splitlines() if line.strip())
        if count == 0:
            raise FireworksError(f"dataset {dataset_id} is empty: nothing to upload", kind="invalid")
        acct, link = self.account, dataset_link(self.base_url, dataset_id)
        existing = self.get_dataset(dataset_id)
        if existing is not None and existing.get("state") == "READY":
            have = _int(existing.get("exampleCount"))
            if have is not None and have != count:
                raise FireworksError(f"dataset {dataset_id} already exists with {have} examples, but this upload "
                                     f"has {count}: choose another dataset id or delete it ({link})",
                                     kind="conflict", link=link)
            return existing
        if existing is None:
            with self._api(f"creating dataset {dataset_id}"):
                self.client.datasets.create(account_id=acct, dataset_id=dataset_id, dataset={
                    "display_name": display_name, "example_count": str(count), "format": format,
                    "user_uploaded": {}})
        filename = f"{dataset_id}.jsonl"
        if len(jsonl_bytes) <= self.DIRECT_UPLOAD_LIMIT:
            with self._api(f"uploading dataset {dataset_id}"):
                self.client.datasets.upload(dataset_id, account_id=acct,
                                            file=(filename, jsonl_bytes, "application/jsonl"))
        else:
            with self._api(f"requesting an upload URL for dataset {dataset_id}"):
                endpoint = self.client.datasets.get_upload_endpoint(
                    dataset_id, account_id=acct, filename_to_size={filename: str(len(jsonl_bytes))})
            url = (endpoint.filename_to_signed_urls or {}).get(filename)
            if not url:
                raise FireworksError(f"Fireworks returned no upload URL for dataset {dataset_id}; try again")
            self._put_signed(url, jsonl_bytes, f"uploading dataset {dataset_id}")
            with self._api(f"validating the upload of dataset {dataset_id}"):
                self.client.datasets.validate_upload(dataset_id, account_id=acct, body={})

        def timeout(obj: dict[str, Any], elapsed: float) -> FireworksError:
            return FireworksError(f"dataset {dataset_id} is still {obj.get('state')} after {elapsed:.0f} s: check "
                                  f"{link} and run again later", kind="timeout", link=link)

        return self._poll(lambda: self.get_dataset(dataset_id) or {}, lambda d: d.get("state") == "READY",
                          poll_s, timeout_s, lambda d, e: None, timeout)

    # ---- evaluator -------------------------------------------------------------------------------------------
    def get_evaluator(self, evaluator_id: str) -> dict[str, Any] | None:
        with self._api(f"reading evaluator {evaluator_id}"):
            try:
                return self.client.evaluators.get(evaluator_id, account_id=self.account).to_dict(mode="json")
            except fireworks.NotFoundError:
                return None

    def ensure_evaluator(self, evaluator_id: str, display_name: str, entry_point: str, archive_bytes: bytes,
                         requirements: str, code_hash: str, *, description: str = "", force: bool = False,
                         poll_s: float = 10.0, timeout_s: float = 600.0,
                         on_progress: Progress | None = None) -> dict[str, Any]:
        """Make evaluator `evaluator_id` ACTIVE with this code. An ACTIVE evaluator whose commitHash equals
        `code_hash` is reused (unless `force`); otherwise the bundle (.tar.gz bytes) is uploaded and built."""
        _check_id("evaluator", evaluator_id)
        notify = on_progress or (lambda stage, detail: None)
        acct = self.account
        existing = self.get_evaluator(evaluator_id)
        fields = {"display_name": display_name, "entry_point": entry_point, "requirements": requirements,
                  "commit_hash": code_hash, "description": f"{description} [code {code_hash}]".strip()}
        if existing is not None and not force and self._code_hash(existing) == code_hash:
            if existing.get("state") == "ACTIVE":
                notify("reuse", f"evaluator {evaluator_id} is ACTIVE with this code; reusing it")
                return existing
            if existing.get("state") == "BUILDING":
                notify("building", "a build of this code is already running; waiting for it")
                return self._wait_build(evaluator_id, poll_s, timeout_s, notify)
        if existing is None:
            notify("create", f"creating evaluator {evaluator_id}")
            with self._api(f"creating evaluator {evaluator_id}", evaluator_write=True):
                self.client.evaluators.create(account_id=acct, evaluator_id=evaluator_id, evaluator=fields)
        else:
            notify("update", f"preparing evaluator {evaluator_id} for new code")
            with self._api(f"updating evaluator {evaluator_id}", evaluator_write=True):
                self.client.evaluators.update(evaluator_id, account_id=acct, prepare_code_upload=True, **fields)
        filename = f"{evaluator_id}.tar.gz"
        notify("upload", f"uploading {len(archive_bytes):,} bytes")
        with self._api(f"requesting an upload URL for evaluator {evaluator_id}"):
            endpoint = self.client.evaluators.get_upload_endpoint(
                evaluator_id, account_id=acct, filename_to_size={filename: str(len(archive_bytes))})
        url = (endpoint.filename_to_signed_urls or {}).get(filename)
        if not url:
            raise FireworksError(f"Fireworks returned no upload URL for evaluator {evaluator_id}; try again")
        self._put_signed(url, archive_bytes, f"uploading the bundle of evaluator {evaluator_id}")
        notify("validate", "validating the upload")
        with self._api(f"validating the upload of evaluator {evaluator_id}"):
            self.client.evaluators.validate_upload(evaluator_id, account_id=acct, body={})
        return self._wait_build(evaluator_id, poll_s, timeout_s, notify)

    @staticmethod
    def _code_hash(evaluator: Mapping[str, Any]) -> str | None:
        if evaluator.get("commitHash"):
            return str(evaluator["commitHash"])
        found = re.search(r"\[code ([^\]]+)\]", str(evaluator.get("description") or ""))
        return found.group(1) if found else None

    def _wait_build(self, evaluator_id: str, poll_s: float, timeout_s: float, notify: Progress) -> dict[str, Any]:
        link = evaluator_link(self.base_url, evaluator_id)

        def done(ev: dict[str, Any]) -> bool:
            if ev.get("state") == "BUILD_FAILED":
                raise self._build_failed(evaluator_id, ev)
            return ev.get("state") == "ACTIVE"

        def timeout(ev: dict[str, Any], elapsed: float) -> FireworksError:
            return FireworksError(
                f"evaluator {evaluator_id} is still {ev.get('state')} after {elapsed / 60:.1f} min: Fireworks may "
                f"be busy; check {link} and run again later (a finished build of the same code is reused), or "
                "force a rebuild if it stays stuck", kind="timeout", link=link)

        ev = self._poll(lambda: self.get_evaluator(evaluator_id) or {}, done, poll_s, timeout_s,
                        lambda ev, elapsed: notify("building", f"{ev.get('state')} ({elapsed:.0f} s elapsed)"),
                        timeout)
        notify("active", f"evaluator {evaluator_id} is ACTIVE")
        return ev

    def _build_failed(self, evaluator_id: str, ev: Mapping[str, Any]) -> FireworksError:
        reason = (ev.get("status") or {}).get("message") or "no reason given"
        log_url = None
        try:
            log_url = self.client.evaluators.get_build_log_endpoint(
                evaluator_id, account_id=self.account).build_log_signed_uri
        except fireworks.APIError:
            pass
        link = log_url or evaluator_link(self.base_url, evaluator_id)
        return FireworksError(f"evaluator {evaluator_id} failed to build: {reason}. Build log: {link}",
                              kind="build_failed", link=link)

    # ---- RFT jobs --------------------------------------------------------------------------------------------
    def _resource(self, collection: str, value: str) -> str:
        if value.startswith("accounts/"):
            return value
        return f"accounts/{self.account}/{collection}/{_check_id(collection.rstrip('s'), value)}"

    def create_job(self, job_id: str | None, body: Mapping[str, Any]) -> dict[str, Any]:
        """Create an RFT job from a wire-format body (`dataset`, `evaluator`, `trainingConfig`, ...; snake_case
        keys work too). Bare dataset/evaluator ids become resource names. Returns the job (camelCase)."""
        kwargs: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for key, value in body.items():
            if _snake(key) in _JOB_KWARGS:
                kwargs[_snake(key)] = value
            else:
                extra[key] = value  # fields this client version does not know still reach the API
        if not kwargs.get("dataset") or not kwargs.get("evaluator"):
            raise FireworksError("an RFT job needs a dataset and an evaluator", kind="invalid")
        for key, collection in (("dataset", "datasets"), ("evaluator", "evaluators"),
                                ("evaluation_dataset", "datasets")):
            if kwargs.get(key):
                kwargs[key] = self._resource(collection, str(kwargs[key]))
        if job_id:
            _check_id("job", job_id)
        with self._api(f"creating RFT job {job_id or ''}".strip()):
            job = self.client.reinforcement_fine_tuning_jobs.create(
                account_id=self.account, reinforcement_fine_tuning_job_id=job_id or fireworks.omit,
                extra_body=extra or None, **kwargs)
        return job.to_dict(mode="json")

    @staticmethod
    def _job_id(job: str) -> str:
        return job.rstrip("/").rsplit("/", 1)[-1]

    def get_job(self, job: str) -> dict[str, Any]:
        """A job by id or resource name."""
        with self._api(f"reading RFT job {self._job_id(job)}"):
            return self.client.reinforcement_fine_tuning_jobs.get(
                self._job_id(job), account_id=self.account).to_dict(mode="json")

    def list_jobs(self, page_size: int = 50, page_token: str | None = None,
                  order_by: str | None = "createTime desc") -> JobPage:
        with self._api("listing RFT jobs"):
            page = self.client.reinforcement_fine_tuning_jobs.list(
                account_id=self.account, page_size=page_size, page_token=page_token or fireworks.omit,
                order_by=order_by or fireworks.omit)
        jobs = [job.to_dict(mode="json") for job in page.reinforcement_fine_tuning_jobs or []]
        return JobPage(jobs, page.next_page_token or None)

    def cancel_job(self, job: str) -> None:
        with self._api(f"cancelling RFT job {self._job_id(job)}"):
            self.client.reinforcement_fine_tuning_jobs.cancel(self._job_id(job), account_id=self.account, body={})

    def resume_job(self, job: str) -> dict[str, Any]:
        with self._api(f"resuming RFT job {self._job_id(job)}"):
            return self.client.reinforcement_fine_tuning_jobs.resume(
                self._job_id(job), account_id=self.account, body={}).to_dict(mode="json")

    def delete_job(self, job: str) -> None:
        with self._api(f"deleting RFT job {self._job_id(job)}"):
            self.client.reinforcement_fine_tuning_jobs.delete(self._job_id(job), account_id=self.account)
