"""State and lifecycles of the simulated Fireworks control plane (no HTTP in here).

`control_plane` parses requests and calls these methods (RFT jobs live in `control_plane_jobs`, what an evaluator
build checks in `control_plane_build`); every method returns the JSON payload to send or raises `SimError`
(rendered as a Google-style error body). Callers hold `lock`.

(Over 400 lines: secrets, datasets, evaluators and uploads share one lock, request log and lifecycle driver.)
"""

from __future__ import annotations

import base64
import json
import re
import secrets as _secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from svgagent.core.rft.job_states import RESUMABLE, TERMINAL, wire_state
from svgagent.core.sim.control_plane_build import BuildCheck

ID_RE = re.compile(r"^[a-z][a-z0-9-]{0,62}$")
GRPC_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ALREADY_EXISTS",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
TERMINAL_JOB_STATES = frozenset(wire_state(state) for state in TERMINAL)
RESUMABLE_JOB_STATES = frozenset(wire_state(state) for state in RESUMABLE)
MASK = "***"
_MASKED_KEYS = {"value", "apiKey", "api_key"}


class SimError(Exception):
    """An API error: HTTP status plus the google.rpc status name."""

    def __init__(self, http: int, message: str, status: str | None = None) -> None:
        super().__init__(message)
        self.http = http
        self.message = message
        self.status = status or GRPC_STATUS.get(http, "UNKNOWN")

    def body(self) -> dict[str, Any]:
        return {"error": {"code": self.http, "message": self.message, "status": self.status}}


@dataclass
class SimConfig:
    """Knobs. `advance="poll"`: each GET of one resource moves it one step (deterministic, for tests);
    `advance="time"`: one step every `step_seconds` of wall-clock time."""

    account_id: str = "sim-account"
    rejected_keys: tuple[str, ...] = ("rejected-key",)
    admin: bool = True  # False: evaluator creation answers 403 "admin role required"
    advance: Literal["poll", "time"] = "poll"
    step_seconds: float = 1.0
    dataset_ready_steps: int = 1  # steps from upload to READY
    evaluator_build_steps: int = 2  # steps from validateUpload to ACTIVE / BUILD_FAILED
    evaluator_build_failure: str | None = None  # set: builds end BUILD_FAILED with this status.message
    job_running_steps: int = 4  # steps in RUNNING (after one provisioning step) until COMPLETED
    job_failure: str | None = None  # set: jobs go FAILED with this message at job_fail_at_percent
    job_fail_at_percent: int = 50
    job_failed_ratio: float = 0.0  # share of processed requests reported as failed
    response_delay_s: float = 0.0  # added latency on every API response
    # An interpreter with eval-protocol installed: evaluator builds import the entry module with it (None: only the
    # static checks of the archive run).
    build_python: str | None = None
    # Every N-th lookup of a secret that does not exist answers 500 instead of 404, as the real service may (0: never).
    missing_secret_500_every: int = 2
    deployment_ready_steps: int = 2  # steps from CREATING to READY (and one from DELETING to DELETED)
    # The demo world: the state lives in this directory, shared by every process serving it (svgagent.core.sim.world)
    world_dir: str | None = None
    # Jobs whose evaluator rolls out remotely move only as the simulated trainer trains them (core/sim/trainer.py)
    trainer_drives_remote_jobs: bool = False


@dataclass(frozen=True)
class SimRequest:
    """One logged request: secret values in `body` are masked."""

    method: str
    path: str
    query: dict[str, str]
    body: Any
    status: int


@dataclass
class Fault:
    status: int
    times: int | None  # None: until cleared
    route: re.Pattern[str] | None
    method: str | None
    message: str
    retry_after_s: float | None


@dataclass
class Clock:
    """When a lifecycle started (wall-clock seconds: the demo world's processes share it) and the steps applied."""

    anchor: float = field(default_factory=time.time)
    applied: int = 0

    def restart(self) -> None:
        self.anchor, self.applied = time.time(), 0


@dataclass
class _Dataset:
    id: str
    spec: dict[str, Any]
    created: str
    state: str = "UPLOADING"
    example_count: int = 0
    expected: dict[str, int] = field(default_factory=dict)
    files: dict[str, bytes] = field(default_factory=dict)
    ready_left: int | None = None
    clock: Clock = field(default_factory=Clock)


@dataclass
class _Evaluator:
    id: str
    spec: dict[str, Any]
    created: str
    state: str = "BUILDING"
    message: str = ""
    expected: dict[str, int] = field(default_factory=dict)
    files: dict[str, bytes] = field(default_factory=dict)
    build_left: int | None = None
    build_log: str = ""
    check: BuildCheck | None = None
    clock: Clock = field(default_factory=Clock)


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def mask_secrets(body: Any) -> Any:
    """A copy of a JSON body with secret values (`value`, `apiKey`) replaced by ***."""
    if isinstance(body, dict):
        return {k: (MASK if k in _MASKED_KEYS and v not in (None, "") else mask_secrets(v)) for k, v in body.items()}
    if isinstance(body, list):
        return [mask_secrets(v) for v in body]
    return body


def check_id(kind: str, value: Any) -> str:
    if not isinstance(value, str) or not ID_RE.match(value):
        raise SimError(
            400,
            f"invalid {kind} id {value!r}: use lowercase letters, digits and '-', start with a "
            "letter, at most 63 characters",
        )
    return value


def count_jsonl(files: dict[str, bytes]) -> int:
    count = 0
    for filename, data in files.items():
        if not data.strip():
            raise SimError(400, f"dataset file {filename} is empty")
        for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                json.loads(line)
            except ValueError:
                raise SimError(400, f"dataset file {filename} line {number} is not valid JSON") from None
            count += 1
    return count


def paginate(items: list[dict[str, Any]], query: dict[str, str], key: str) -> dict[str, Any]:
    for spec in reversed([s.strip() for s in query.get("orderBy", "").split(",") if s.strip()]):
        name, _, direction = spec.partition(" ")
        items = sorted(items, key=lambda item: str(item.get(name, "")), reverse=direction.strip() == "desc")
    try:
        size = int(query.get("pageSize") or 50)
        offset = int(base64.urlsafe_b64decode(query["pageToken"]).decode()) if query.get("pageToken") else 0
    except (ValueError, UnicodeDecodeError):
        raise SimError(400, "invalid pageSize or pageToken") from None
    size = 50 if size <= 0 else min(size, 200)
    out: dict[str, Any] = {key: items[offset : offset + size], "totalSize": len(items)}
    if offset + size < len(items):
        out["nextPageToken"] = base64.urlsafe_b64encode(str(offset + size).encode()).decode()
    return out


class ResourceState:
    """Secrets, datasets, evaluators, uploads, the request log and faults (jobs: `fireworks_sim_jobs`)."""

    def __init__(self, config: SimConfig) -> None:
        self.config = config
        self.lock = threading.RLock()
        self.base_url = "http://127.0.0.1:0"
        self.reset()

    def reset(self) -> None:
        with self.lock:
            self.requests: list[SimRequest] = []
            self.faults: list[Fault] = []
            self.secrets: dict[str, dict[str, str]] = {}
            self.datasets: dict[str, _Dataset] = {}
            self.evaluators: dict[str, _Evaluator] = {}
            self.jobs: dict[str, Any] = {}
            self.deployments: dict[str, Any] = {}
            self.uploads: dict[str, tuple[str, str, str]] = {}  # token -> (kind, id, filename)
            self.upload_log: list[dict[str, Any]] = []  # signed-URL PUTs: token, size, authorization sent?
            self.log_tokens: dict[str, str] = {}
            self.missing_secret_lookups = 0

    # ---- helpers ---------------------------------------------------------------------------------------------
    def name(self, collection: str, rid: str) -> str:
        return f"accounts/{self.config.account_id}/{collection}/{rid}"

    def _drive(self, res: Any, step: Callable[[Any], bool], polled: bool) -> None:
        """Move a resource along its lifecycle: one step per GET (poll mode) or per elapsed step (time mode)."""
        if self.config.advance == "poll":
            if polled:
                step(res)
            return
        due = int((time.time() - res.clock.anchor) / max(self.config.step_seconds, 1e-6))
        while res.clock.applied < due:
            res.clock.applied += 1
            if not step(res):
                res.clock.applied = due

    def _signed_urls(self, kind: str, rid: str, body: Any) -> dict[str, Any]:
        sizes = body.get("filenameToSize") if isinstance(body, dict) else None
        if not isinstance(sizes, dict) or not sizes:
            raise SimError(400, "filenameToSize is required")
        urls = {}
        for filename in sizes:
            token = _secrets.token_urlsafe(12)
            self.uploads[token] = (kind, rid, filename)
            urls[filename] = f"{self.base_url}/_upload/{token}?X-Goog-Signature=sim"
        return {"filenameToSignedUrls": urls}

    def _expected_sizes(self, body: Any) -> dict[str, int]:
        try:
            return {name: int(size) for name, size in body["filenameToSize"].items()}
        except (ValueError, TypeError):
            raise SimError(400, "filenameToSize values must be byte counts") from None

    def put_upload(self, token: str, data: bytes, headers: dict[str, str]) -> None:
        """A PUT to a signed URL. Like GCS, Content-Type and X-Goog-Content-Length-Range are signed headers."""
        names = sorted(headers)
        self.upload_log.append(
            {"token": token, "size": len(data), "authorization_sent": "authorization" in names, "headers": names}
        )
        if token not in self.uploads:
            raise SimError(404, "signed URL not found or expired")
        if headers.get("content-type", "").split(";")[0].strip() != "application/octet-stream":
            raise SimError(403, "SignatureDoesNotMatch: Content-Type must be application/octet-stream")
        if "x-goog-content-length-range" not in headers:
            raise SimError(403, "SignatureDoesNotMatch: X-Goog-Content-Length-Range is a signed header")
        low, _, high = headers["x-goog-content-length-range"].partition(",")
        if not (low.strip().isdigit() and high.strip().isdigit() and int(low) <= len(data) <= int(high)):
            raise SimError(400, f"EntityTooLarge/Small: {len(data)} bytes outside X-Goog-Content-Length-Range")
        kind, rid, filename = self.uploads[token]
        res = (self.datasets if kind == "dataset" else self.evaluators).get(rid)
        if res is None:
            raise SimError(404, f"{kind} {rid} no longer exists")
        expected = res.expected.get(filename)
        if expected is not None and expected != len(data):
            raise SimError(400, f"upload of {filename} is {len(data)} bytes, declared {expected}")
        res.files[filename] = data

    # ---- secrets ---------------------------------------------------------------------------------------------
    def _secret_out(self, sid: str) -> dict[str, Any]:
        return {"name": self.name("secrets", sid), "keyName": self.secrets[sid]["keyName"]}

    def secret_create(self, body: dict[str, Any]) -> dict[str, Any]:
        raw = str(body.get("name") or "")
        prefix = f"accounts/{self.config.account_id}/secrets/"
        if "/" in raw and not raw.startswith(prefix):
            raise SimError(400, f"secret name must look like {prefix}<id>")
        sid = check_id("secret", raw.removeprefix(prefix))
        if not body.get("keyName"):
            raise SimError(400, "keyName is required")
        if sid in self.secrets:
            raise SimError(409, f"secret {self.name('secrets', sid)} already exists")
        self.secrets[sid] = {"keyName": str(body["keyName"]), "value": str(body.get("value") or "")}
        return self._secret_out(sid)

    def secret_get(self, sid: str, lookup: bool = True) -> dict[str, Any]:
        if sid not in self.secrets:
            every = self.config.missing_secret_500_every
            if lookup:
                self.missing_secret_lookups += 1
                if every > 0 and self.missing_secret_lookups % every == 0:
                    raise SimError(500, "internal error")  # what the real service may say for "not found"
            raise SimError(404, f"secret {self.name('secrets', sid)} not found")
        return self._secret_out(sid)

    def secret_update(self, sid: str, body: dict[str, Any]) -> dict[str, Any]:
        self.secret_get(sid, lookup=False)
        if body.get("keyName"):
            self.secrets[sid]["keyName"] = str(body["keyName"])
        if "value" in body:
            self.secrets[sid]["value"] = str(body["value"])
        return self._secret_out(sid)

    def secret_delete(self, sid: str) -> dict[str, Any]:
        self.secret_get(sid, lookup=False)
        del self.secrets[sid]
        return {}

    def secret_list(self, query: dict[str, str]) -> dict[str, Any]:
        return paginate([self._secret_out(s) for s in sorted(self.secrets)], query, "secrets")

    # ---- datasets --------------------------------------------------------------------------------------------
    def _dataset_out(self, d: _Dataset) -> dict[str, Any]:
        return {
            **d.spec,
            "name": self.name("datasets", d.id),
            "createTime": d.created,
            "state": d.state,
            "exampleCount": str(d.example_count),
            "status": {"code": "OK", "message": ""},
        }

    def _dataset_step(self, d: _Dataset) -> bool:
        if d.ready_left is None:
            return False
        d.ready_left -= 1
        if d.ready_left <= 0:
            d.state, d.ready_left = "READY", None
        return d.ready_left is not None

    def _dataset(self, did: str, polled: bool = False) -> _Dataset:
        d = self.datasets.get(did)
        if d is None:
            raise SimError(404, f"dataset {self.name('datasets', did)} not found")
        self._drive(d, self._dataset_step, polled)
        return d

    def dataset_create(self, body: dict[str, Any]) -> dict[str, Any]:
        did = check_id("dataset", body.get("datasetId"))
        spec = body.get("dataset")
        if not isinstance(spec, dict):
            raise SimError(400, "dataset is required")
        if did in self.datasets:
            raise SimError(409, f"dataset {self.name('datasets', did)} already exists")
        spec = {k: v for k, v in spec.items() if k not in ("name", "state", "exampleCount", "createTime")}
        d = _Dataset(did, spec, now_iso(), example_count=int(body["dataset"].get("exampleCount") or 0))
        self.datasets[did] = d
        return self._dataset_out(d)

    def _dataset_uploaded(self, d: _Dataset) -> None:
        if d.state == "READY":
            raise SimError(400, f"dataset {self.name('datasets', d.id)} is already READY", "FAILED_PRECONDITION")
        d.example_count = count_jsonl(d.files)
        d.ready_left = self.config.dataset_ready_steps
        d.clock.restart()
        if d.ready_left <= 0:
            d.state, d.ready_left = "READY", None

    def dataset_upload(self, did: str, filename: str, data: bytes) -> dict[str, Any]:
        d = self._dataset(did)
        if d.state == "READY":
            raise SimError(400, f"dataset {self.name('datasets', did)} is already READY", "FAILED_PRECONDITION")
        d.files = {filename: data}
        self._dataset_uploaded(d)
        return {
            "id": did,
            "bytes": len(data),
            "filename": filename,
            "object": "file",
            "created_at": int(time.time()),
            "purpose": "fine-tune",
        }

    def dataset_upload_endpoint(self, did: str, body: Any) -> dict[str, Any]:
        d = self._dataset(did)
        d.expected, d.files = self._expected_sizes(body), {}
        return self._signed_urls("dataset", did, body)

    def dataset_validate(self, did: str) -> dict[str, Any]:
        d = self._dataset(did)
        missing = sorted(set(d.expected) - set(d.files))
        if not d.files or missing:
            raise SimError(400, f"upload not found for: {', '.join(missing) or 'any file'}", "FAILED_PRECONDITION")
        self._dataset_uploaded(d)
        return {}

    def dataset_get(self, did: str) -> dict[str, Any]:
        return self._dataset_out(self._dataset(did, polled=True))

    def dataset_list(self, query: dict[str, str]) -> dict[str, Any]:
        return paginate([self._dataset_out(self._dataset(i)) for i in sorted(self.datasets)], query, "datasets")

    def dataset_delete(self, did: str) -> dict[str, Any]:
        self._dataset(did)
        del self.datasets[did]
        return {}

    # ---- evaluators ------------------------------------------------------------------------------------------
    def _evaluator_out(self, e: _Evaluator) -> dict[str, Any]:
        status = {"code": "INTERNAL" if e.state == "BUILD_FAILED" else "OK", "message": e.message}
        return {
            **e.spec,
            "name": self.name("evaluators", e.id),
            "createTime": e.created,
            "state": e.state,
            "status": status,
        }

    def _evaluator_step(self, e: _Evaluator) -> bool:
        if e.build_left is None:
            return False
        e.build_left -= 1
        if e.build_left > 0:
            e.build_log += f"step {self.config.evaluator_build_steps - e.build_left}: installing requirements\n"
            return True
        if e.check is not None and not e.check.done:
            e.build_left = 1  # the import is still running: stay BUILDING
            return True
        e.build_left = None
        failure = self.config.evaluator_build_failure or (e.check.problem if e.check is not None else None)
        if e.check is not None:
            e.build_log += "".join(f"{line}\n" for line in e.check.log)
        if failure:
            e.state, e.message = "BUILD_FAILED", failure
            e.build_log += f"ERROR: {failure}\n"
        else:
            e.state, e.message = "ACTIVE", ""
            e.build_log += "build succeeded\n"
        return False

    def _evaluator(self, eid: str, polled: bool = False) -> _Evaluator:
        e = self.evaluators.get(eid)
        if e is None:
            raise SimError(404, f"evaluator {self.name('evaluators', eid)} not found")
        self._drive(e, self._evaluator_step, polled)
        return e

    def evaluator_create(self, body: dict[str, Any]) -> dict[str, Any]:
        if not self.config.admin:
            raise SimError(403, "admin role required")
        spec = body.get("evaluator")
        if not isinstance(spec, dict):
            raise SimError(400, "evaluator is required")
        eid = check_id("evaluator", body.get("evaluatorId") or "e" + _secrets.token_hex(6))
        if eid in self.evaluators:
            raise SimError(409, f"evaluator {self.name('evaluators', eid)} already exists")
        spec = {k: v for k, v in spec.items() if k not in ("name", "state", "status", "createTime")}
        e = _Evaluator(eid, spec, now_iso())
        self.evaluators[eid] = e
        return self._evaluator_out(e)

    def evaluator_update(self, eid: str, body: dict[str, Any], query: dict[str, str]) -> dict[str, Any]:
        e = self._evaluator(eid)
        rebuild = any(k in body and body[k] != e.spec.get(k) for k in ("entryPoint", "requirements"))
        e.spec.update({k: v for k, v in body.items() if k not in ("name", "state", "status", "createTime")})
        if query.get("prepareCodeUpload", "").lower() == "true":
            e.state, e.message, e.files, e.expected, e.build_left = "BUILDING", "", {}, {}, None
            e.build_log = ""
        elif rebuild and e.files:
            self._start_build(e)
        return self._evaluator_out(e)

    def _start_build(self, e: _Evaluator) -> None:
        archive = next(iter(e.files.values()), b"")
        e.check = BuildCheck(archive, str(e.spec.get("entryPoint") or ""), self.config.build_python)
        e.state, e.message, e.build_log = "BUILDING", "", "build started\n"
        e.build_left = max(self.config.evaluator_build_steps, 0)
        e.clock.restart()
        if e.build_left == 0:
            e.build_left = 1
            self._evaluator_step(e)

    def evaluator_upload_endpoint(self, eid: str, body: Any) -> dict[str, Any]:
        e = self._evaluator(eid)
        e.expected, e.files = self._expected_sizes(body), {}
        return self._signed_urls("evaluator", eid, body)

    def evaluator_validate(self, eid: str) -> dict[str, Any]:
        e = self._evaluator(eid)
        missing = sorted(set(e.expected) - set(e.files))
        if not e.files or missing:
            raise SimError(400, f"upload not found for: {', '.join(missing) or 'any file'}", "FAILED_PRECONDITION")
        self._start_build(e)
        return {}

    def evaluator_get(self, eid: str) -> dict[str, Any]:
        return self._evaluator_out(self._evaluator(eid, polled=True))

    def evaluator_build_log(self, eid: str) -> dict[str, Any]:
        self._evaluator(eid)
        token = _secrets.token_urlsafe(12)
        self.log_tokens[token] = eid
        return {"buildLogSignedUri": f"{self.base_url}/_logs/{token}"}

    def build_log_text(self, token: str) -> str:
        eid = self.log_tokens.get(token)
        if eid is None or eid not in self.evaluators:
            raise SimError(404, "build log not found")
        return self.evaluators[eid].build_log

    def evaluator_list(self, query: dict[str, str]) -> dict[str, Any]:
        items = [self._evaluator_out(self._evaluator(i)) for i in sorted(self.evaluators)]
        return paginate(items, query, "evaluators")

    def evaluator_delete(self, eid: str) -> dict[str, Any]:
        self._evaluator(eid)
        del self.evaluators[eid]
        return {}
