"""Launching an RFT job in five steps: account → secrets → evaluator → dataset → job.

    prepared = prepare_launch(LaunchRequest.from_settings(settings, params, dataset="builtin", rows=32))
    plan(prepared)                         # every request that would be sent, secrets masked (sends nothing)
    result = launch(prepared, control_plane, on_event=print_event, store=store)

`prepare_launch` does all local work first (load and convert the dataset, build the evaluator bundle, check the
keys), so a bad dataset or missing key fails before any request. Ids are derived from content, so running the
same launch again after a failure resumes instead of duplicating: the dataset id from the JSONL's SHA-256, the
evaluator id from the bundle's code hash (an ACTIVE evaluator with that code is reused), the job id from the
dataset, evaluator and hyperparameters (an existing job with that id is reported, not created twice).
`launch` reports progress as `LaunchEvent`s (step, status, message) and raises `FireworksError` with the step's
plain message; it runs blocking calls, so the TUI runs it in a thread worker.

(Over 400 lines: `plan` and `launch` walk the same five steps and stay side by side so they cannot drift.)
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from svgagent.core.rft.demo_identity import DEMO_FIREWORKS_KEY, DEMO_JOB_ID, DEMO_OPENAI_KEY
from svgagent.core.rft.evaluator_bundle import (
    DESCRIPTION,
    DISPLAY_NAME,
    EvaluatorBundle,
    build_bundle,
    config_from_settings,
)
from svgagent.core.rft.fireworks_api import (
    DATASET_KIND,
    MISSING_KEY,
    ControlPlane,
    FireworksError,
    secret_id_for,
    wire_body,
)
from svgagent.core.rft.job_states import short_state
from svgagent.core.rft.links import dataset_link, evaluator_link, job_link
from svgagent.core.rft.params import RftParams, check_job_id
from svgagent.core.run.dataset import Dataset, load_dataset, select_rows
from svgagent.core.run.prompt import ep_row
from svgagent.core.scoring.errors import ConfigError, SvgAgentError
from svgagent.core.scoring.models import DatasetRow

if TYPE_CHECKING:
    from svgagent.core.config.settings import Settings
    from svgagent.core.store.run_store import Store

STEPS = ("account", "secrets", "evaluator", "dataset", "job")
JUDGE_KEY = "OPENAI_API_KEY"
FIREWORKS_KEY = "FIREWORKS_API_KEY"
MASK_SHORT = "••••"
_SLUG = re.compile(r"[^a-z0-9]+")


def mask_secret(value: str | None) -> str:
    """First 4 + last 4 characters of a long secret, `••••` for a short one, "" for none."""
    if not value:
        return ""
    return MASK_SHORT if len(value) < 16 else f"{value[:4]}…{value[-4:]}"


def _slug(text: str, limit: int) -> str:
    slug = _SLUG.sub("-", text.lower()).strip("-")
    return slug[:limit].strip("-") or "data"


# ---- what the caller asks for -------------------------------------------------------------------------------
@dataclass(frozen=True)
class LaunchRequest:
    """Everything a launch needs. Keys are plain strings here; they leave this process only as Fireworks secrets
    and are masked in every plan, event and message."""

    params: RftParams
    dataset: str = "builtin"
    rows: int | None = None
    fireworks_api_key: str | None = field(default=None, repr=False)
    openai_api_key: str | None = field(default=None, repr=False)
    account_id: str | None = None
    base_url: str | None = None  # control plane (None: FIREWORKS_BASE_URL or https://api.fireworks.ai)
    judge_config: Mapping[str, Any] | None = None  # None: the defaults of Settings
    force_evaluator: bool = False
    job_id: str | None = None  # None: derived from dataset, evaluator and hyperparameters
    evaluator_poll_s: float = 10.0
    evaluator_timeout_s: float = 600.0
    dataset_poll_s: float = 2.0
    dataset_timeout_s: float = 300.0
    max_retries: int = 2

    @classmethod
    def from_settings(cls, settings: Settings, params: RftParams, **overrides: Any) -> LaunchRequest:
        """Keys, account and judge settings from a `Settings`; `overrides` win."""

        def secret(value: Any) -> str | None:
            return value.get_secret_value() if value is not None else None

        values: dict[str, Any] = {
            "fireworks_api_key": secret(settings.fireworks_api_key),
            "openai_api_key": secret(settings.openai_api_key),
            "account_id": settings.fireworks_account_id,
            "judge_config": config_from_settings(settings),
            "max_retries": settings.max_retries,
            "dataset": settings.dataset,
            "rows": settings.rows,
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(params=params, **values)

    def missing_keys(self) -> list[str]:
        missing = []
        if not (self.fireworks_api_key or "").strip():
            missing.append("FIREWORKS_API_KEY")
        if not (self.openai_api_key or "").strip():
            missing.append(JUDGE_KEY)
        return missing


@dataclass(frozen=True)
class PreparedLaunch:
    """The local half of a launch: converted dataset, built bundle and the ids derived from them."""

    request: LaunchRequest
    dataset: Dataset = field(repr=False)
    rows: tuple[DatasetRow, ...] = field(repr=False)
    jsonl: bytes = field(repr=False)
    dataset_id: str
    dataset_display_name: str
    bundle: EvaluatorBundle = field(repr=False)
    job_id: str
    display_name: str

    @property
    def evaluator_id(self) -> str:
        return self.bundle.evaluator_id

    @property
    def secrets(self) -> dict[str, str]:
        """The Fireworks secrets a launch stores, as `ep create rft` stores them: the evaluator's keys, then
        FIREWORKS_API_KEY (eval-protocol always adds it, for evaluators that call Fireworks models at run time)."""
        return {JUDGE_KEY: self.request.openai_api_key or "", FIREWORKS_KEY: self.request.fireworks_api_key or ""}

    def job_kwargs(self, account: str) -> dict[str, Any]:
        """The arguments of the client's `reinforcement_fine_tuning_jobs.create` (snake_case; only what is set)."""
        return self.request.params.job_kwargs(
            f"accounts/{account}/datasets/{self.dataset_id}",
            f"accounts/{account}/evaluators/{self.evaluator_id}",
            display_name=self.display_name,
        )


def dataset_jsonl(rows: list[DatasetRow] | tuple[DatasetRow, ...]) -> bytes:
    """The Eval Protocol JSONL Fireworks trains on: one `ep_row` per line."""
    return b"".join(json.dumps(ep_row(row), ensure_ascii=False).encode("utf-8") + b"\n" for row in rows)


def trained_on(dataset_spec: str, rows: int | None, dataset_id: str) -> bool | None:
    """Whether the dataset `dataset_spec` (first `rows` rows) is the Fireworks dataset `dataset_id`: launches name
    it after the SHA-256 of its rows (see `prepare_launch`). None when it cannot be told."""
    if not dataset_id:
        return None
    try:
        selected = select_rows(load_dataset(dataset_spec), rows)
    except SvgAgentError:
        return None
    return dataset_id.endswith("-" + hashlib.sha256(dataset_jsonl(selected)).hexdigest()[:12])


def prepare_launch(request: LaunchRequest, *, bundle: EvaluatorBundle | None = None) -> PreparedLaunch:
    """Load and convert the dataset, build the evaluator bundle and derive the ids. Sends nothing.
    Raises `ConfigError` (e.g. `DatasetError`) for a dataset svgagent cannot load."""
    check_job_id(request.job_id)
    dataset = load_dataset(request.dataset)
    rows = tuple(select_rows(dataset, request.rows))
    jsonl = dataset_jsonl(rows)
    digest = hashlib.sha256(jsonl).hexdigest()
    name = "builtin" if dataset.source == "builtin" else dataset.name.rsplit(".", 1)[0]
    dataset_id = f"svgagent-{_slug(name, 30)}-{digest[:12]}"
    built = bundle if bundle is not None else build_bundle(config=request.judge_config)
    identity = json.dumps(
        {"dataset": dataset_id, "evaluator": built.evaluator_id, "params": request.params.model_dump(mode="json")},
        sort_keys=True,
    )
    job_id = request.job_id or f"svgagent-rft-{hashlib.sha256(identity.encode()).hexdigest()[:12]}"
    model = request.params.base_model.rsplit("/", 1)[-1]
    display = request.params.display_name or f"svgagent {name} ({len(rows)} rows) {model}"[:128]
    return PreparedLaunch(
        request=request,
        dataset=dataset,
        rows=rows,
        jsonl=jsonl,
        dataset_id=dataset_id,
        dataset_display_name=f"svgagent {name} ({len(rows)} rows)"[:128],
        bundle=built,
        job_id=job_id,
        display_name=display,
    )


# ---- the plan -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PlannedRequest:
    """One request a launch sends (in order). `body` has secrets masked; `note` says when it is skipped,
    repeated or replaced."""

    step: str
    method: str
    path: str
    body: Any = None
    query: dict[str, str] | None = None
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"step": self.step, "method": self.method, "path": self.path}
        if self.query:
            out["query"] = dict(self.query)
        if self.body is not None:
            out["body"] = self.body
        if self.note:
            out["note"] = self.note
        return out

    def line(self) -> str:
        query = "?" + "&".join(f"{k}={v}" for k, v in self.query.items()) if self.query else ""
        body = f" {json.dumps(self.body, ensure_ascii=False)}" if self.body is not None else ""
        return f"{self.method} {self.path}{query}{body}"


def plan(prepared: PreparedLaunch, account: str | None = None) -> list[PlannedRequest]:
    """Every request `launch` sends on a fresh account, in order, with the alternatives in `note`."""
    req = prepared.request
    acct = account or req.account_id or "{account}"
    base = f"/v1/accounts/{acct}"
    out: list[PlannedRequest] = []
    if not (account or req.account_id):
        out.append(
            PlannedRequest(
                "account", "GET", "/verifyApiKey", note="the account id comes back in the x-fireworks-account-id header"
            )
        )
    for name, value in prepared.secrets.items():
        sid = secret_id_for(name)
        shown = mask_secret(value) or "(not set)"
        out.append(
            PlannedRequest(
                "secrets",
                "GET",
                f"{base}/secrets/{sid}",
                note="404 or 500: not there yet (eval-protocol reads a 500 the same way)",
            )
        )
        out.append(
            PlannedRequest(
                "secrets",
                "POST",
                f"{base}/secrets",
                wire_body("secret", {"name": sid, "key_name": name, "value": shown}),
                note=f"PATCH {base}/secrets/{sid} {{keyName, value}} instead when it exists",
            )
        )
    b, eid = prepared.bundle, prepared.evaluator_id
    reuse = (
        "an existing evaluator with this id (the id names the code) is used as it is, waited for while it builds: "
        "the next requests are skipped"
    )
    if req.force_evaluator:
        out.append(
            PlannedRequest(
                "evaluator",
                "GET",
                f"{base}/evaluators/{eid}",
                note="--force: an existing evaluator is deleted and built again",
            )
        )
        out.append(PlannedRequest("evaluator", "DELETE", f"{base}/evaluators/{eid}", note="only when it exists"))
    else:
        out.append(PlannedRequest("evaluator", "GET", f"{base}/evaluators/{eid}", note=reuse))
    fields = wire_body(
        "evaluator",
        {
            "display_name": DISPLAY_NAME,
            "entry_point": b.entry_point,
            "description": f"{DESCRIPTION} [code {b.code_hash}]",
        },
    )
    remote = b.config.get("rollouts") == "remote"
    out.append(
        PlannedRequest(
            "evaluator",
            "POST",
            f"{base}/evaluatorsV2",
            {"evaluatorId": eid, "evaluator": fields},
            note=f"remote rollouts: every rollout is a POST {b.config.get('remote_url')}/init, "
            "so that URL must be reachable from the Fireworks platform (a loopback or "
            "private address is not)"
            if remote
            else "",
        )
    )
    out.append(
        PlannedRequest(
            "evaluator",
            "POST",
            f"{base}/evaluators/{eid}:getUploadEndpoint",
            {"filenameToSize": {b.filename: str(len(b.archive))}},
        )
    )
    out.append(
        PlannedRequest(
            "evaluator",
            "PUT",
            "<signed upload URL>",
            {"bytes": len(b.archive)},
            note=f"the .tar.gz bundle ({len(b.files)} files under {b.root}/, code "
            f"{b.short_hash}); no API key is sent to the storage URL",
        )
    )
    out.append(PlannedRequest("evaluator", "POST", f"{base}/evaluators/{eid}:validateUpload", {}))
    out.append(
        PlannedRequest(
            "evaluator",
            "GET",
            f"{base}/evaluators/{eid}",
            note=f"polled every {req.evaluator_poll_s:g} s until ACTIVE; BUILD_FAILED stops "
            f"with the build log; gives up after {req.evaluator_timeout_s / 60:g} min",
        )
    )
    did, count = prepared.dataset_id, len(prepared.rows)
    out.append(
        PlannedRequest(
            "dataset",
            "GET",
            f"{base}/datasets/{did}",
            note="a READY dataset with this id, i.e. the same content, is reused: the next requests are skipped",
        )
    )
    out.append(
        PlannedRequest(
            "dataset",
            "POST",
            f"{base}/datasets",
            {
                "datasetId": did,
                "dataset": wire_body(
                    "dataset",
                    {"display_name": prepared.dataset_display_name, "example_count": str(count), **DATASET_KIND},
                ),
            },
        )
    )
    if len(prepared.jsonl) <= ControlPlane.DIRECT_UPLOAD_LIMIT:
        out.append(
            PlannedRequest(
                "dataset",
                "POST",
                f"{base}/datasets/{did}:upload",
                {"file": {"filename": f"{did}.jsonl", "size": len(prepared.jsonl)}},
                note=f"multipart upload of {count} Eval Protocol rows",
            )
        )
    else:
        out.append(
            PlannedRequest(
                "dataset",
                "POST",
                f"{base}/datasets/{did}:getUploadEndpoint",
                {"filenameToSize": {f"{did}.jsonl": str(len(prepared.jsonl))}},
            )
        )
        out.append(PlannedRequest("dataset", "PUT", "<signed upload URL>", {"bytes": len(prepared.jsonl)}))
        out.append(PlannedRequest("dataset", "POST", f"{base}/datasets/{did}:validateUpload", {}))
    out.append(
        PlannedRequest(
            "dataset", "GET", f"{base}/datasets/{did}", note=f"polled every {req.dataset_poll_s:g} s until READY"
        )
    )
    out.append(
        PlannedRequest(
            "job",
            "GET",
            f"{base}/reinforcementFineTuningJobs/{prepared.job_id}",
            note="a job with this id already exists: it is reported, not created again",
        )
    )
    out.append(
        PlannedRequest(
            "job",
            "POST",
            f"{base}/reinforcementFineTuningJobs",
            wire_body("job", prepared.job_kwargs(acct)),
            query={"reinforcementFineTuningJobId": prepared.job_id},
        )
    )
    return out


# ---- running it ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LaunchEvent:
    """Progress of a launch. `status`: start, progress, done, reused or failed. `index` is 1-based."""

    step: str
    status: str
    message: str

    @property
    def index(self) -> int:
        return STEPS.index(self.step) + 1

    @property
    def total(self) -> int:
        return len(STEPS)


@dataclass(frozen=True)
class LaunchResult:
    job: dict[str, Any]
    evaluator: dict[str, Any]
    dataset: dict[str, Any]
    account: str
    base_url: str
    reused: dict[str, bool] = field(default_factory=dict)

    @property
    def job_name(self) -> str:
        return str(self.job.get("name") or "")

    @property
    def job_id(self) -> str:
        return self.job_name.rsplit("/", 1)[-1]

    @property
    def links(self) -> dict[str, str]:
        return {
            "evaluator": evaluator_link(self.base_url, str(self.evaluator.get("name") or "")),
            "dataset": dataset_link(self.base_url, str(self.dataset.get("name") or "")),
            "job": job_link(self.base_url, self.job_name),
        }

    def to_json(self) -> dict[str, Any]:
        """The `svgagent rft create --json` shape."""
        return {"job": self.job, "evaluator": self.evaluator, "dataset": self.dataset, "links": self.links}


class LaunchCancelled(SvgAgentError):
    """The caller asked the launch to stop between steps (finished steps stay done)."""


def open_control_plane(request: LaunchRequest) -> ControlPlane:
    """A ControlPlane for the request's key, account and base URL (FireworksError `missing_key` without a key)."""
    if not (request.fireworks_api_key or "").strip():
        raise FireworksError(MISSING_KEY, kind="missing_key")
    return ControlPlane(
        request.fireworks_api_key,
        account_id=request.account_id,
        base_url=request.base_url,
        max_retries=request.max_retries,
    )


def check_keys(request: LaunchRequest) -> None:
    """ConfigError naming every missing key and where to put it."""
    missing = request.missing_keys()
    if missing:
        why = {"FIREWORKS_API_KEY": "to talk to Fireworks", JUDGE_KEY: "for the judge the evaluator calls"}
        raise ConfigError(
            "; ".join(f"{name} is not set ({why[name]})" for name in missing)
            + ": add it to .env in this directory or the environment (or try --demo)"
        )


def launch(
    prepared: PreparedLaunch,
    cp: ControlPlane,
    *,
    on_event: Callable[[LaunchEvent], None] | None = None,
    store: Store | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> LaunchResult:
    """Run the five steps. Re-running after a failure resumes (see the module docstring). With `store` (a
    `Store`), the job is remembered for the app. Raises FireworksError (with the failed step in `step`)."""
    emit = on_event or (lambda event: None)
    req = prepared.request
    check_keys(req)
    reused: dict[str, bool] = {}
    step = STEPS[0]

    def begin(name: str, message: str) -> None:
        nonlocal step
        if should_stop is not None and should_stop():
            raise LaunchCancelled(f"launch stopped before the {name} step; run it again to continue")
        step = name
        emit(LaunchEvent(name, "start", message))

    try:
        begin("account", "resolving the account")
        account = cp.resolve_account()
        source = "FIREWORKS_ACCOUNT_ID" if req.account_id else "/verifyApiKey"
        emit(LaunchEvent("account", "done", f"account {account} (from {source})"))

        begin("secrets", "storing the judge key and the Fireworks key as Fireworks secrets")
        for name, value in prepared.secrets.items():
            secret = cp.upsert_secret(name, value)
            verb = "created" if secret.get("created") else "updated"
            emit(
                LaunchEvent("secrets", "done", f"{name} ({mask_secret(value)}) {verb} as secret {secret_id_for(name)}")
            )

        b = prepared.bundle
        begin("evaluator", f"evaluator {b.evaluator_id} (code {b.short_hash}, {len(b.archive):,} bytes)")
        stages: list[str] = []

        def evaluator_progress(stage: str, detail: str) -> None:
            stages.append(stage)
            emit(LaunchEvent("evaluator", "progress", detail))

        evaluator = cp.ensure_evaluator(
            b.evaluator_id,
            DISPLAY_NAME,
            b.entry_point,
            b.archive,
            b.code_hash,
            filename=b.filename,
            description=DESCRIPTION,
            force=req.force_evaluator,
            poll_s=req.evaluator_poll_s,
            timeout_s=req.evaluator_timeout_s,
            on_progress=evaluator_progress,
        )
        reused["evaluator"] = "reuse" in stages
        emit(
            LaunchEvent(
                "evaluator",
                "reused" if reused["evaluator"] else "done",
                f"evaluator {b.evaluator_id} is ACTIVE" + (" (reused)" if reused["evaluator"] else ""),
            )
        )

        begin("dataset", f"dataset {prepared.dataset_id} ({len(prepared.rows)} rows, {len(prepared.jsonl):,} bytes)")
        existing = cp.get_dataset(prepared.dataset_id)
        reused["dataset"] = existing is not None and existing.get("state") == "READY"
        if reused["dataset"] and str(existing.get("exampleCount")) == str(len(prepared.rows)):
            dataset = existing
        else:
            reused["dataset"] = False
            dataset = cp.create_dataset(
                prepared.dataset_id,
                prepared.dataset_display_name,
                prepared.jsonl,
                poll_s=req.dataset_poll_s,
                timeout_s=req.dataset_timeout_s,
            )
        emit(
            LaunchEvent(
                "dataset",
                "reused" if reused["dataset"] else "done",
                f"dataset {prepared.dataset_id} is READY" + (" (reused)" if reused["dataset"] else ""),
            )
        )

        begin("job", f"RFT job {prepared.job_id} on {req.params.base_model}")
        try:
            job = cp.get_job(prepared.job_id)
            reused["job"] = True
        except FireworksError as err:
            if err.kind != "not_found":
                raise
            job = cp.create_job(prepared.job_id, prepared.job_kwargs(account))
            reused["job"] = False
        state = short_state(job.get("state"))
        if reused["job"]:
            emit(
                LaunchEvent(
                    "job",
                    "reused",
                    f"job {prepared.job_id} already exists ({state}): not creating "
                    "another; pass a new job id (--job-id) to launch a second one",
                )
            )
        else:
            emit(LaunchEvent("job", "done", f"job {prepared.job_id} created ({state})"))
    except FireworksError as err:
        err.step = step  # type: ignore[attr-defined]
        emit(LaunchEvent(step, "failed", str(err)))
        raise
    result = LaunchResult(
        job=job, evaluator=evaluator, dataset=dataset, account=account, base_url=cp.base_url, reused=reused
    )
    if store is not None:
        remember(store, result, prepared)
    return result


def remember(store: Store, result: LaunchResult, prepared: PreparedLaunch) -> None:
    """Record the launched job in the run store (`Store.remember_job`)."""
    job = result.job
    store.remember_job(
        job_name=result.job_name,
        display_name=job.get("displayName") or prepared.display_name,
        base_url=result.base_url,
        account=result.account,
        dataset=str(result.dataset.get("name") or ""),
        evaluator=str(result.evaluator.get("name") or ""),
        base_model=prepared.request.params.base_model,
        output_model=(job.get("trainingConfig") or {}).get("outputModel"),
        created=job.get("createTime"),
        last_state=short_state(job.get("state")) if job.get("state") else None,
        job=job,
    )


# ---- demo mode (the simulator itself is started by svgagent.core.demo) ---------------------------------------
def demo_request(params: RftParams, **overrides: Any) -> LaunchRequest:
    """A LaunchRequest with the demo's fake keys (the simulator accepts them)."""
    values: dict[str, Any] = {
        "fireworks_api_key": DEMO_FIREWORKS_KEY,
        "openai_api_key": DEMO_OPENAI_KEY,
        "max_retries": 0,
    }
    values.update(overrides)
    return LaunchRequest(params=params, **values)


def seed_demo_job(cp: ControlPlane) -> str:
    """Launch a small job on a simulator (for demo monitoring); returns its resource name."""
    params = RftParams(base_model="accounts/fireworks/models/qwen3-0p6b", display_name="svgagent demo job")
    prepared = prepare_launch(
        demo_request(
            params, rows=4, job_id=DEMO_JOB_ID, evaluator_poll_s=0.05, dataset_poll_s=0.05, base_url=cp.base_url
        )
    )
    return launch(prepared, cp).job_name
