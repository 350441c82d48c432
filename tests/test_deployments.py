"""Deployments of a trained model: the control-plane simulator serves them (CREATING → READY, DELETING → DELETED) in
the shapes of fireworks-ai 1.2.30's `Deployment` type, driven here through the real fireworks-ai client
(`ControlPlane`), and `svgagent.core.rft.deployments` quotes, makes and waits for one."""

from __future__ import annotations

from collections.abc import Iterator

import fireworks
import pytest

from svgagent.core.rft import deployments as dep
from svgagent.core.rft.fireworks_api import ControlPlane, FireworksError
from svgagent.core.rft.launch import demo_request, launch, prepare_launch
from svgagent.core.rft.params import RftParams
from svgagent.core.sim.control_plane import FireworksSim

KEY = "fw-FAKE-deployments-0123456789"
BASE = "accounts/fireworks/models/qwen3-0p6b"


@pytest.fixture
def plane() -> Iterator[tuple[FireworksSim, ControlPlane]]:
    with FireworksSim(account_id="acct", evaluator_build_steps=0, dataset_ready_steps=0) as sim:
        with ControlPlane(KEY, base_url=sim.base_url, max_retries=0) as cp:
            yield sim, cp


def _completed_job(sim: FireworksSim, cp: ControlPlane) -> str:
    prepared = prepare_launch(
        demo_request(RftParams(base_model=BASE), rows=2, base_url=cp.base_url, fireworks_api_key=KEY)
    )
    job = launch(prepared, cp).job
    sim.set_job_state(job["name"].rsplit("/", 1)[-1], "JOB_STATE_COMPLETED")
    return str(job["trainingConfig"]["outputModel"])


def test_a_deployment_lives_and_dies_through_the_real_client(plane: tuple[FireworksSim, ControlPlane]) -> None:
    sim, cp = plane
    model = _completed_job(sim, cp)
    planned = dep.plan_deployment(cp, model, "my-eval", "eval of my job")
    assert planned["acceleratorType"] == "NVIDIA_H100_80GB" and planned["acceleratorCount"] == 1
    assert planned["minReplicaCount"] == planned["maxReplicaCount"] == 1
    assert cp.list_deployments() == []  # validateOnly made nothing
    made = cp.create_deployment(model, "my-eval", display_name="eval", **dep.DEPLOY_FIELDS)
    assert made["state"] == "CREATING" and made["baseModel"] == model and made["replicaCount"] == 0
    assert made["name"] == "accounts/acct/deployments/my-eval"
    states = [cp.get_deployment("my-eval")["state"] for _ in range(2)]  # type: ignore[index]
    assert states == ["CREATING", "READY"]  # poll mode: each GET moves it one step
    ready = cp.get_deployment("my-eval")
    assert ready is not None and ready["replicaCount"] == 1 and ready["deploymentShape"] == "default"
    assert dep.serving(cp, model) == ready and dep.up(cp) == [ready]
    with pytest.raises(FireworksError) as conflict:
        cp.create_deployment(model, "my-eval")
    assert conflict.value.kind == "conflict"
    cp.delete_deployment("my-eval")
    assert cp.get_deployment("my-eval")["state"] == "DELETED"  # type: ignore[index]
    gone = cp.get_deployment("my-eval")
    assert gone is not None and gone["deleteTime"]
    assert cp.list_deployments() == [] and dep.up(cp) == []
    listed = cp.client.deployments.list(account_id="acct", show_deleted=True)
    assert [d.state for d in listed] == ["DELETED"]
    with pytest.raises(FireworksError) as again:
        cp.delete_deployment("my-eval")
    assert again.value.kind == "not_found"
    paths = sim.paths()
    assert "POST /v1/accounts/acct/deployments" in paths and "DELETE /v1/accounts/acct/deployments/my-eval" in paths
    create = next(r for r in sim.requests if r.method == "POST" and r.path.endswith("/deployments"))
    assert create.query.get("deploymentId") == "my-eval"
    assert create.body["baseModel"] == model and create.body["minReplicaCount"] == 1


def test_a_model_that_no_completed_job_made_is_not_found(plane: tuple[FireworksSim, ControlPlane]) -> None:
    _, cp = plane
    with pytest.raises(FireworksError) as missing:
        cp.create_deployment("accounts/acct/models/nothing-trained-this", "nope")
    assert missing.value.kind == "not_found"
    with pytest.raises(fireworks.BadRequestError):  # the client's own error for a 400, under our mapping
        cp.client.deployments.create(account_id="acct", base_model=BASE, accelerator_type="NVIDIA_A100_80GB",
                                     max_replica_count=0, min_replica_count=2)  # fmt: skip


def test_deploy_waits_until_ready_and_reuses_one_that_exists(plane: tuple[FireworksSim, ControlPlane]) -> None:
    sim, cp = plane
    model = _completed_job(sim, cp)
    said: list[str] = []
    ready = dep.deploy(cp, model, "ev", "eval", poll_s=0.0, on_progress=said.append)
    assert ready["state"] == "READY"
    assert said[0].startswith("deployment ev is CREATING") and "READY" in said[-1]
    again = dep.deploy(cp, model, "ev", "eval", poll_s=0.0)  # a conflict on create: the one there is used
    assert again["state"] == "READY"
    assert sum(1 for p in sim.paths() if p == "POST /v1/accounts/acct/deployments") == 2


def test_quotes_say_the_rate_and_where_it_comes_from() -> None:
    h100 = dep.quote({"acceleratorType": "NVIDIA_H100_80GB", "acceleratorCount": 2, "maxReplicaCount": 1})
    assert h100.per_hour == pytest.approx(14.0)
    assert "about $14.00 an hour" in h100.text() and dep.PRICING_URL in h100.text()
    given = dep.quote({"acceleratorType": "NVIDIA_H100_80GB"}, hourly_usd=5.0)
    assert given.per_hour == 5.0 and "published" not in given.text()
    unknown = dep.quote({"acceleratorType": "AMD_MI300X_192GB"})
    assert unknown.per_hour is None and "unknown" in unknown.text()
    long_id = "j" + "x" * 62
    assert len(dep.deployment_id_for(long_id)) <= 63 and dep.deployment_id_for("job-1") == "job-1-eval"
