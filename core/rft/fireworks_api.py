"""Our control-plane layer over the official `fireworks-ai` client: account, secrets, dataset, evaluator, RFT jobs.

Everything goes through `fireworks.Fireworks` (its typed resources, and its low-level `get`/`put` where it has no
method: `/verifyApiKey` and the signed-URL upload). Retries with backoff are the client's own (`max_retries`); the
loops here only poll for state. Calls are blocking: the TUI runs them in a thread worker. Every failure a user can
meet is a `FireworksError` whose message says what happened and what to do.

(Over 400 lines: one client for one control plane; its resources share the error mapping, the signed-URL upload and
the polling, which would scatter if split per resource.)
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import fireworks
import httpx

from svgagent.core.rft.links import dataset_link, evaluator_link
from svgagent.core.rft.params import check_job_id
from svgagent.core.scoring.errors import SvgAgentError

if TYPE_CHECKING:
    from fireworks.types.dataset_param import DatasetParam
    from fireworks.types.evaluator_create_params import Evaluator

DEFAULT_BASE_URL = "https://api.fireworks.ai"
MISSING_KEY = "FIREWORKS_API_KEY is not set: add it to .env or the environment"
_ID_RE = re.compile(r"^[a-z][a-z0-9-]{0,62}$")
# What eval-protocol's `create_dataset_from_jsonl` sends: an Eval Protocol dataset, format left to the platform.
DATASET_KIND: DatasetParam = {"eval_protocol": {}, "format": "FORMAT_UNSPECIFIED"}
_JOB_KWARGS = (
    "dataset",
    "evaluator",
    "aws_s3_config",
    "azure_blob_storage_config",
    "chunk_size",
    "display_name",
    "eval_auto_carveout",
    "evaluation_dataset",
    "inference_parameters",
    "loss_config",
    "max_concurrent_evaluations",
    "max_concurrent_rollouts",
    "max_inference_replica_count",
    "mcp_server",
    "node_count",
    "reservation_target",
    "training_config",
    "wandb_config",
)
Progress = Callable[[str, str], None]  # (stage, detail): stage in create/update/reuse/upload/validate/building/active


class FireworksError(SvgAgentError):
    """A control-plane failure, explained. `kind`: missing_key, auth, permission, admin_required, rate_limit,
    network, timeout, build_failed, not_found, conflict, invalid, server, api."""

    def __init__(
        self, message: str, *, kind: str = "api", status_code: int | None = None, link: str | None = None
    ) -> None:
        super().__init__(message)
        self.kind, self.status_code, self.link = kind, status_code, link


def int_field(value: Any) -> int | None:
    """An int64 field of a response (they arrive as JSON strings); None when absent or not a number."""
    try:
        return int(value) if value is not None and value != "" else None
    except (TypeError, ValueError):
        return None


def wire_body(kind: str, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The camelCase JSON the fireworks-ai client sends for snake_case arguments, by its own transform (`kind`:
    `job` for a job-create body, `dataset` / `evaluator` for the resource inside a create body, `secret`)."""
    from fireworks._utils import maybe_transform
    from fireworks.types import (
        dataset_param,
        evaluator_create_params,
        reinforcement_fine_tuning_job_create_params,
        secret_create_params,
    )

    shapes: dict[str, Any] = {
        "job": reinforcement_fine_tuning_job_create_params.ReinforcementFineTuningJobCreateParams,
        "dataset": dataset_param.DatasetParam,
        "evaluator": evaluator_create_params.Evaluator,
        "secret": secret_create_params.SecretCreateParams,
    }
    return dict(maybe_transform(dict(kwargs), shapes[kind]) or {})


@dataclass(frozen=True)
class JobPage:
    jobs: list[dict[str, Any]]
    next_page_token: str | None


def secret_id_for(key_name: str) -> str:
    """`OPENAI_API_KEY` → `openai-api-key` (the Fireworks secret id for an env-var name)."""
    return _check_id("secret", key_name.strip().lower().replace("_", "-"))


def _check_id(kind: str, value: str) -> str:
    if not _ID_RE.match(value):
        raise FireworksError(
            f"{value!r} is not a valid Fireworks {kind} id: use lowercase letters, digits and '-', "
            "start with a letter, at most 63 characters",
            kind="invalid",
        )
    return value


def _server_message(body: object) -> str:
    if isinstance(body, Mapping):
        err = body.get("error", body)
        message = err.get("message") if isinstance(err, Mapping) else err
        return " ".join(str(message or "").split())[:300]
    return " ".join(str(body or "").split())[:300]


def _host(url: httpx.URL) -> str:
    return f"{url.host}:{url.port}" if url.port else url.host


class ControlPlane:
    """Blocking control-plane calls for one API key / account."""

    DIRECT_UPLOAD_LIMIT = 150 * 1024 * 1024  # larger datasets go through a signed URL

    def __init__(
        self,
        api_key: str | None = None,
        *,
        account_id: str | None = None,
        base_url: str | None = None,
        max_retries: int = 2,
        timeout: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        key = (api_key if api_key is not None else os.environ.get("FIREWORKS_API_KEY") or "").strip()
        if not key:
            raise FireworksError(MISSING_KEY, kind="missing_key")
        base = (base_url or os.environ.get("FIREWORKS_BASE_URL") or DEFAULT_BASE_URL).strip().rstrip("/")
        for suffix in ("/inference/v1", "/v1"):  # the client adds /v1 itself
            base = base.removesuffix(suffix)
        self._account = (account_id or os.environ.get("FIREWORKS_ACCOUNT_ID") or "").strip() or None
        self.client = fireworks.Fireworks(
            api_key=key,
            account_id=self._account,
            base_url=base,
            max_retries=max_retries,
            timeout=timeout if timeout is not None else fireworks.not_given,
        )
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
            raise FireworksError(
                f"timed out waiting for {_host(exc.request.url)} while {action}: the network or "
                "Fireworks is slow; try again",
                kind="network",
            ) from exc
        except fireworks.APIConnectionError as exc:
            raise FireworksError(
                f"cannot reach {_host(exc.request.url)} while {action}: check your network "
                "connection (and FIREWORKS_BASE_URL if you set it)",
                kind="network",
            ) from exc

    def _status_error(self, exc: fireworks.APIStatusError, action: str, evaluator_write: bool) -> FireworksError:
        code = exc.status_code
        msg = _server_message(exc.body) or exc.response.reason_phrase
        account = self._account or "your account"
        if code == 401:
            text, kind = (
                (
                    f"Fireworks rejected the API key ({msg}, 401) while {action}: check FIREWORKS_API_KEY in "
                    ".env or the environment, or create a new key in the Fireworks dashboard"
                ),
                "auth",
            )
        elif code == 403 and (evaluator_write or "admin" in msg.lower()):
            text, kind = (
                (
                    f"Fireworks refused {action}: {msg} (403). Only an account admin can create or update "
                    f"evaluators: ask an admin of {account} to grant your user the admin role (or to run "
                    "this step), then try again"
                ),
                "admin_required",
            )
        elif code == 403:
            text, kind = (
                (
                    f"Fireworks denied permission while {action} ({msg}, 403): check that the key belongs "
                    f"to {account} (FIREWORKS_ACCOUNT_ID) and may do this"
                ),
                "permission",
            )
        elif code == 404:
            text, kind = f"not found while {action}: {msg} (404)", "not_found"
        elif code == 409:
            text, kind = f"conflict while {action}: {msg} (409)", "conflict"
        elif code == 429:
            text, kind = (
                (
                    f"Fireworks rate limit or quota reached while {action} ({msg}, 429): wait a minute and "
                    "try again, or check your account's quota and billing"
                ),
                "rate_limit",
            )
        elif code >= 500:
            text, kind = (
                (f"Fireworks server error while {action} ({msg}, {code}): try again in a few minutes"),
                "server",
            )
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
            raise FireworksError(
                "Fireworks accepted the API key but did not say which account it belongs to: set "
                "FIREWORKS_ACCOUNT_ID in .env or the environment"
            )
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
        """Store an env-var-style secret (e.g. OPENAI_API_KEY) for the evaluator: update it or create it, as
        eval-protocol does: the secret is named by its bare id (`openai-api-key`), and a 500 on the lookup means
        "not found" (the service may answer a missing secret that way); a create that then finds it exists (409)
        updates it. Returns the secret (never its value) plus `created`."""
        sid, acct = secret_id_for(key_name), self.account
        with self._api(f"looking up secret {sid}"):
            try:
                self.client.secrets.get(sid, account_id=acct)
                exists = True
            except (fireworks.NotFoundError, fireworks.InternalServerError):
                exists = False
        secret = None
        if not exists:
            try:
                with self._api(f"saving secret {key_name}"):
                    secret = self.client.secrets.create(account_id=acct, name=sid, key_name=key_name, value=value)
            except FireworksError as err:
                if err.kind != "conflict":
                    raise
                exists = True
        if secret is None:
            with self._api(f"saving secret {key_name}"):
                secret = self.client.secrets.update(sid, account_id=acct, key_name=key_name, value=value)
        out = secret.to_dict(mode="json")
        out.pop("value", None)
        return {**out, "created": not exists}

    # ---- uploads and polling ---------------------------------------------------------------------------------
    def _put_signed(self, url: str, data: bytes, action: str) -> None:
        """PUT bytes to a signed storage URL through the client (its retries), sending neither the API key nor the
        client's X-Stainless-* headers there; Content-Type and the exact length range are part of the signature."""
        headers: dict[str, Any] = {
            name: fireworks.omit for name in self.client.default_headers if name.lower().startswith("x-stainless")
        }
        headers.update(
            {
                "Authorization": fireworks.omit,
                "X-Stainless-Retry-Count": fireworks.omit,
                "X-Stainless-Read-Timeout": fireworks.omit,
                "Content-Type": "application/octet-stream",
                "X-Goog-Content-Length-Range": f"{len(data)},{len(data)}",
            }
        )
        with self._api(action):
            self.client.put(url, content=data, cast_to=httpx.Response, options={"headers": headers})

    def _poll(
        self,
        fetch: Callable[[], dict[str, Any]],
        done: Callable[[dict[str, Any]], bool],
        poll_s: float,
        timeout_s: float,
        on_wait: Callable[[dict[str, Any], float], None],
        on_timeout: Callable[[dict[str, Any], float], FireworksError],
    ) -> dict[str, Any]:
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

    def create_dataset(
        self, dataset_id: str, display_name: str, jsonl_bytes: bytes, *, poll_s: float = 2.0, timeout_s: float = 300.0
    ) -> dict[str, Any]:
        """Create and upload an Eval Protocol JSONL dataset and wait until READY; a READY dataset with this id and
        the same number of examples is reused. Created as eval-protocol creates one (`DATASET_KIND`): a CHAT
        dataset may keep only `messages`, and the judge needs each row's `input_metadata`."""
        _check_id("dataset", dataset_id)
        count = sum(1 for line in jsonl_bytes.splitlines() if line.strip())
        if count == 0:
            raise FireworksError(f"dataset {dataset_id} is empty: nothing to upload", kind="invalid")
        acct, link = self.account, dataset_link(self.base_url, dataset_id)
        existing = self.get_dataset(dataset_id)
        if existing is not None and existing.get("state") == "READY":
            have = int_field(existing.get("exampleCount"))
            if have is not None and have != count:
                raise FireworksError(
                    f"dataset {dataset_id} already exists with {have} examples, but this upload "
                    f"has {count}: choose another dataset id or delete it ({link})",
                    kind="conflict",
                    link=link,
                )
            return existing
        if existing is None:
            with self._api(f"creating dataset {dataset_id}"):
                self.client.datasets.create(
                    account_id=acct,
                    dataset_id=dataset_id,
                    dataset={"display_name": display_name, "example_count": str(count), **DATASET_KIND},
                )
        filename = f"{dataset_id}.jsonl"
        if len(jsonl_bytes) <= self.DIRECT_UPLOAD_LIMIT:
            with self._api(f"uploading dataset {dataset_id}"):
                self.client.datasets.upload(
                    dataset_id, account_id=acct, file=(filename, jsonl_bytes, "application/jsonl")
                )
        else:
            with self._api(f"requesting an upload URL for dataset {dataset_id}"):
                endpoint = self.client.datasets.get_upload_endpoint(
                    dataset_id, account_id=acct, filename_to_size={filename: str(len(jsonl_bytes))}
                )
            url = (endpoint.filename_to_signed_urls or {}).get(filename)
            if not url:
                raise FireworksError(f"Fireworks returned no upload URL for dataset {dataset_id}; try again")
            self._put_signed(url, jsonl_bytes, f"uploading dataset {dataset_id}")
            with self._api(f"validating the upload of dataset {dataset_id}"):
                self.client.datasets.validate_upload(dataset_id, account_id=acct, body={})

        def timeout(obj: dict[str, Any], elapsed: float) -> FireworksError:
            return FireworksError(
                f"dataset {dataset_id} is still {obj.get('state')} after {elapsed:.0f} s: check "
                f"{link} and run again later",
                kind="timeout",
                link=link,
            )

        return self._poll(
            lambda: self.get_dataset(dataset_id) or {},
            lambda d: d.get("state") == "READY",
            poll_s,
            timeout_s,
            lambda d, e: None,
            timeout,
        )

    # ---- evaluator -------------------------------------------------------------------------------------------
    def get_evaluator(self, evaluator_id: str) -> dict[str, Any] | None:
        with self._api(f"reading evaluator {evaluator_id}"):
            try:
                return self.client.evaluators.get(evaluator_id, account_id=self.account).to_dict(mode="json")
            except fireworks.NotFoundError:
                return None

    def delete_evaluator(self, evaluator_id: str) -> bool:
        """Delete an evaluator; False when there was none."""
        with self._api(f"deleting evaluator {evaluator_id}", evaluator_write=True):
            try:
                self.client.evaluators.delete(evaluator_id, account_id=self.account)
                return True
            except fireworks.NotFoundError:
                return False

    def ensure_evaluator(
        self,
        evaluator_id: str,
        display_name: str,
        entry_point: str,
        archive_bytes: bytes,
        code_hash: str,
        *,
        filename: str | None = None,
        description: str = "",
        force: bool = False,
        poll_s: float = 10.0,
        timeout_s: float = 600.0,
        on_progress: Progress | None = None,
    ) -> dict[str, Any]:
        """Make evaluator `evaluator_id` ACTIVE with this code, as eval-protocol's `ep upload` does: an existing
        evaluator is used as it is (its id names its code: `svgagent-judge-<code hash>`) and waited for while it
        builds; with `force` it is deleted and created again. A new one is created, its bundle (`filename`,
        .tar.gz bytes) uploaded to the signed URL, validated, and built."""
        _check_id("evaluator", evaluator_id)
        notify = on_progress or (lambda stage, detail: None)
        acct = self.account
        existing = self.get_evaluator(evaluator_id)
        if existing is not None and force:
            notify("delete", f"--force: deleting evaluator {evaluator_id} to build it again")
            self.delete_evaluator(evaluator_id)
            existing = None
        if existing is not None:
            state = existing.get("state")
            if state == "ACTIVE":
                notify("reuse", f"evaluator {evaluator_id} is ACTIVE with this code; reusing it")
                return existing
            if state == "BUILD_FAILED":
                raise self._build_failed(evaluator_id, existing, again=True)
            notify("building", f"evaluator {evaluator_id} exists ({state}); waiting for its build")
            return self._wait_build(evaluator_id, poll_s, timeout_s, notify)
        fields: Evaluator = {
            "display_name": display_name,
            "description": f"{description} [code {code_hash}]".strip(),
            "entry_point": entry_point,
        }
        notify("create", f"creating evaluator {evaluator_id}")
        with self._api(f"creating evaluator {evaluator_id}", evaluator_write=True):
            self.client.evaluators.create(account_id=acct, evaluator_id=evaluator_id, evaluator=fields)
        name = filename or f"{evaluator_id}.tar.gz"
        notify("upload", f"uploading {len(archive_bytes):,} bytes")
        with self._api(f"requesting an upload URL for evaluator {evaluator_id}"):
            endpoint = self.client.evaluators.get_upload_endpoint(
                evaluator_id, account_id=acct, filename_to_size={name: str(len(archive_bytes))}
            )
        url = (endpoint.filename_to_signed_urls or {}).get(name)
        if not url:
            raise FireworksError(f"Fireworks returned no upload URL for evaluator {evaluator_id}; try again")
        self._put_signed(url, archive_bytes, f"uploading the bundle of evaluator {evaluator_id}")
        notify("validate", "validating the upload")
        with self._api(f"validating the upload of evaluator {evaluator_id}"):
            self.client.evaluators.validate_upload(evaluator_id, account_id=acct, body={})
        return self._wait_build(evaluator_id, poll_s, timeout_s, notify)

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
                "run with --force to delete it and build it again if it stays stuck",
                kind="timeout",
                link=link,
            )

        ev = self._poll(
            lambda: self.get_evaluator(evaluator_id) or {},
            done,
            poll_s,
            timeout_s,
            lambda ev, elapsed: notify("building", f"{ev.get('state')} ({elapsed:.0f} s elapsed)"),
            timeout,
        )
        notify("active", f"evaluator {evaluator_id} is ACTIVE")
        return ev

    def _build_failed(self, evaluator_id: str, ev: Mapping[str, Any], again: bool = False) -> FireworksError:
        reason = (ev.get("status") or {}).get("message") or "no reason given"
        log_url = None
        try:
            log_url = self.client.evaluators.get_build_log_endpoint(
                evaluator_id, account_id=self.account
            ).build_log_signed_uri
        except fireworks.APIError:
            pass
        link = log_url or evaluator_link(self.base_url, evaluator_id)
        hint = " Run with --force to delete it and build it again." if again else ""
        return FireworksError(
            f"evaluator {evaluator_id} failed to build: {reason}. Build log: {link}.{hint}",
            kind="build_failed",
            link=link,
        )

    # ---- RFT jobs --------------------------------------------------------------------------------------------
    def _resource(self, collection: str, value: str) -> str:
        if value.startswith("accounts/"):
            return value
        return f"accounts/{self.account}/{collection}/{_check_id(collection.rstrip('s'), value)}"

    def create_job(self, job_id: str | None, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """Create an RFT job from keyword arguments of the client's `reinforcement_fine_tuning_jobs.create`
        (snake_case, as `RftParams.job_kwargs` builds them); bare dataset/evaluator ids become resource names.
        Returns the job (camelCase)."""
        unknown = sorted(set(kwargs) - set(_JOB_KWARGS))
        if unknown:
            raise FireworksError(f"unknown RFT job field(s): {', '.join(unknown)}", kind="invalid")
        body = dict(kwargs)
        if not body.get("dataset") or not body.get("evaluator"):
            raise FireworksError("an RFT job needs a dataset and an evaluator", kind="invalid")
        for key, collection in (
            ("dataset", "datasets"),
            ("evaluator", "evaluators"),
            ("evaluation_dataset", "datasets"),
        ):
            if body.get(key):
                body[key] = self._resource(collection, str(body[key]))
        if job_id:
            job_id = self._job_id(job_id)
        with self._api(f"creating RFT job {job_id or ''}".strip()):
            job = self.client.reinforcement_fine_tuning_jobs.create(
                account_id=self.account, reinforcement_fine_tuning_job_id=job_id or fireworks.omit, **body
            )
        return job.to_dict(mode="json")

    @staticmethod
    def _job_id(job: str) -> str:
        """The id of a job given by id or resource name; anything else (`../../etc`) is refused before it can
        reach a request path."""
        try:
            ref = check_job_id(job, "job") or ""
        except SvgAgentError as err:
            raise FireworksError(str(err), kind="invalid") from None
        return ref.rsplit("/", 1)[-1]

    def get_job(self, job: str) -> dict[str, Any]:
        """A job by id or resource name."""
        with self._api(f"reading RFT job {self._job_id(job)}"):
            return self.client.reinforcement_fine_tuning_jobs.get(self._job_id(job), account_id=self.account).to_dict(
                mode="json"
            )

    def list_jobs(
        self, page_size: int = 50, page_token: str | None = None, order_by: str | None = "createTime desc"
    ) -> JobPage:
        with self._api("listing RFT jobs"):
            page = self.client.reinforcement_fine_tuning_jobs.list(
                account_id=self.account,
                page_size=page_size,
                page_token=page_token or fireworks.omit,
                order_by=order_by or fireworks.omit,
            )
        jobs = [job.to_dict(mode="json") for job in page.reinforcement_fine_tuning_jobs or []]
        return JobPage(jobs, page.next_page_token or None)

    def cancel_job(self, job: str) -> None:
        with self._api(f"cancelling RFT job {self._job_id(job)}"):
            self.client.reinforcement_fine_tuning_jobs.cancel(self._job_id(job), account_id=self.account, body={})

    def resume_job(self, job: str) -> dict[str, Any]:
        with self._api(f"resuming RFT job {self._job_id(job)}"):
            return self.client.reinforcement_fine_tuning_jobs.resume(
                self._job_id(job), account_id=self.account, body={}
            ).to_dict(mode="json")

    def delete_job(self, job: str) -> None:
        with self._api(f"deleting RFT job {self._job_id(job)}"):
            self.client.reinforcement_fine_tuning_jobs.delete(self._job_id(job), account_id=self.account)

    # ---- deployments (serving a trained model) ----------------------------------------------------------------
    def create_deployment(
        self, base_model: str, deployment_id: str, *, validate_only: bool = False, **fields: Any
    ) -> dict[str, Any]:
        """A deployment of ``base_model`` (a LoRA output model: live merge), as `deployments.create` makes it;
        ``fields``: more of its keyword arguments (``min_replica_count``, ``deployment_shape``, …).
        ``validate_only``: the deployment that would be made (with what the server picks), making none."""
        action = f"{'checking' if validate_only else 'creating'} deployment {deployment_id} of {base_model}"
        with self._api(action):
            made = self.client.deployments.create(
                account_id=self.account,
                base_model=base_model,
                deployment_id=_check_id("deployment", deployment_id),
                validate_only=validate_only or fireworks.omit,
                **fields,
            )
        return made.to_dict(mode="json")

    def get_deployment(self, deployment_id: str) -> dict[str, Any] | None:
        """A deployment by id (a DELETED one too), None when there is none."""
        try:
            with self._api(f"reading deployment {deployment_id}"):
                found = self.client.deployments.get(_check_id("deployment", deployment_id), account_id=self.account)
        except FireworksError as err:
            if err.kind == "not_found":
                return None
            raise
        return found.to_dict(mode="json")

    def list_deployments(self) -> list[dict[str, Any]]:
        """The account's deployments that are not deleted (every page)."""
        with self._api("listing deployments"):
            return [d.to_dict(mode="json") for d in self.client.deployments.list(account_id=self.account)]

    def delete_deployment(self, deployment_id: str) -> None:
        with self._api(f"deleting deployment {deployment_id}"):
            self.client.deployments.delete(_check_id("deployment", deployment_id), account_id=self.account)
