"""svgagent against eval-protocol 0.3.33's own code, run in the eval-protocol venv (tests/ep_venv.py; never skipped).

1. The bundle, packed, unpacked and run with eval-protocol's pytest plugin (`pytest` on the unpacked project, as
   `ep local-test --ignore-docker` runs it) against the loopback simulator as policy and judge: every row comes back
   scored, and exactly as `svgagent eval` scores the same answers.
2. The simulated control plane's build step imports the uploaded bundle with eval-protocol installed: the real bundle
   builds, one whose entry module cannot be imported fails its build with the import error.
3. Conformance: eval-protocol's own functions for the steps of `ep create rft` (secret, dataset, evaluator upload,
   job) and svgagent's launch, given the same inputs, send the same request bodies; every difference is listed in
   `EXPLAINED` with its reason (docs/rft.md says the same), and nothing else may differ.

One simulator, one unpacked bundle and one eval-protocol venv serve the whole module.
"""

from __future__ import annotations

import fnmatch
import io
import json
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest
from ep_venv import ep_command, ep_env

from svgagent.core.config.settings import load_settings
from svgagent.core.rft.evaluator_bundle import (
    DESCRIPTION,
    DISPLAY_NAME,
    EvaluatorBundle,
    build_bundle,
    config_from_settings,
    unpack_archive,
)
from svgagent.core.rft.fireworks_api import ControlPlane
from svgagent.core.rft.launch import LaunchRequest, dataset_jsonl, launch, prepare_launch
from svgagent.core.rft.params import RftParams
from svgagent.core.run.dataset import load_dataset, select_rows
from svgagent.core.sim.control_plane import FireworksSim
from svgagent.core.sim.simulator import Simulator
from svgagent.core.store.run_store import Store
from svgagent.tui.cli.main import main

TESTS = Path(__file__).resolve().parent
ROWS = 4
FW_KEY = "fw-FAKE-conformance-0123456789"
OPENAI_KEY = "FAKEOA-conformance-9876543210"
ACCT = "sim-account"


# ---- shared by the module -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ep() -> str:
    return ep_command()  # `python` of the eval-protocol venv, started warm (tests/warm_python.py)


@pytest.fixture(scope="module")
def policy_judge():
    with Simulator() as sim:
        yield sim


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ep")


def eval_overrides(sim: Simulator, store: Path) -> dict[str, Any]:
    """Settings of the `svgagent eval` run; the bundle captures the same judge settings."""
    return {
        "model": "simulated-policy",
        "base_url": sim.base_url,
        "judge_model": "simulated-judge",
        "judge_base_url": sim.base_url,
        "temperature": 0.0,
        "max_tokens": 2048,
        "max_retries": 1,
        "request_timeout_s": 20.0,
        "store": store,
    }


@pytest.fixture(scope="module")
def bundle(policy_judge: Simulator, work: Path) -> EvaluatorBundle:
    return build_bundle(config=config_from_settings(load_settings(**eval_overrides(policy_judge, work / "runs.db"))))


@pytest.fixture(scope="module")
def project(bundle: EvaluatorBundle, work: Path) -> Path:
    """The bundle as the platform sees it: the archive, unpacked (its one top-level folder)."""
    folder = unpack_archive(bundle.archive, work / "unpacked")
    assert folder.name == bundle.root
    assert (folder / bundle.entry_point.split("::")[0]).is_file()
    return folder


@pytest.fixture(scope="module")
def rows_jsonl(work: Path) -> Path:
    """Exactly the JSONL a launch uploads as the Fireworks dataset."""
    path = work / "rows.jsonl"
    path.write_bytes(dataset_jsonl(select_rows(load_dataset("builtin"), ROWS)))
    return path


# ---- 1. eval-protocol's pytest plugin runs the bundle --------------------------------------------------------
def run_ep_pytest(
    ep: str, project: Path, bundle: EvaluatorBundle, rows: Path, sim: Simulator, out: Path, **env: str
) -> subprocess.CompletedProcess[str]:
    params = {"model": "openai/simulated-policy", "api_base": sim.base_url, "temperature": 0.0, "max_tokens": 2048}
    command = [
        ep,
        "-m",
        "pytest",
        "--ep-success-threshold",
        "0.001",  # what `ep local-test` always passes
        "--ep-jsonl-path",
        str(rows),
        "--ep-completion-params",
        json.dumps(params),
        "--ep-output-dir",
        str(out),
        "--ep-no-upload",
        "-p",
        "no:cacheprovider",
        bundle.entry_point,
        "-q",
    ]
    return subprocess.run(
        command,
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
        env=ep_env(out / "home", OPENAI_API_KEY=OPENAI_KEY, FIREWORKS_API_KEY=FW_KEY, **env),
    )


def test_bundle_under_eval_protocols_pytest_plugin_scores_like_svgagent_eval(
    ep: str,
    policy_judge: Simulator,
    bundle: EvaluatorBundle,
    project: Path,
    rows_jsonl: Path,
    work: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = work / "ep-out"
    proc = run_ep_pytest(ep, project, bundle, rows_jsonl, policy_judge, out)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (results,) = (out / "experiment_results").glob("*.jsonl")
    ep_rows = {row["input_metadata"]["row_id"]: row for row in map(json.loads, results.read_text().splitlines())}
    assert len(ep_rows) == ROWS

    # `svgagent eval` on the same rows, the same policy (temperature 0: the same answers) and the same judge
    monkeypatch.setenv("FIREWORKS_API_KEY", FW_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    o = eval_overrides(policy_judge, work / "runs.db")
    code = main(
        [
            "eval",
            "--model",
            o["model"],
            "--base-url",
            o["base_url"],
            "--judge-model",
            o["judge_model"],
            "--judge-base-url",
            o["judge_base_url"],
            "--temperature",
            "0",
            "--max-tokens",
            "2048",
            "--max-retries",
            "1",
            "--request-timeout",
            "20",
            "--dataset",
            str(rows_jsonl),
            "--store",
            str(o["store"]),
            "--no-cache",
            "--json",
        ]
    )
    assert code in (0, 1), capsys.readouterr().err  # 1: the mean is below the threshold, still a result
    run_id = json.loads(capsys.readouterr().out)["run_id"]
    with Store(o["store"]) as store:
        ours = {r.row_id: r for r in store.list_rollouts(run_id, heavy=True)}
    assert set(ours) == set(ep_rows)

    seen_parts: list[dict[str, float]] = []
    for row_id, row in ep_rows.items():
        mine, result = ours[row_id], row["evaluation_result"]
        assert row["rollout_status"]["code"] == 100, row["rollout_status"]  # finished
        assert row["messages"][-1]["role"] == "assistant"
        assert row["messages"][-1]["content"] == mine.raw_answer, row_id  # the same answer ...
        assert result["is_score_valid"] is bool(mine.is_score_valid), (row_id, result["reason"])
        assert result["score"] == (mine.score if mine.is_score_valid else 0.0), row_id  # ... the same score
        counted = f"{mine.fulfilled} of {mine.total} requirements" if mine.fulfilled is not None else "no count"
        assert result["metrics"]["requirements"]["reason"].startswith(counted), row_id
        # the parts that explain the score (core/scoring/components.py), as the platform receives them
        parts = {key: metric["score"] for key, metric in result["metrics"].items()}
        assert parts["svg_found"] == (1.0 if mine.svg is not None else 0.0), row_id
        assert parts["rendered"] == (1.0 if mine.png is not None else 0.0), row_id
        assert parts["requirement_count"] == mine.total == len(mine.requirements)
        assert parts["answer_chars"] == len(mine.raw_answer or "")
        if mine.fulfilled is not None:
            assert parts["fulfilled"] == mine.fulfilled
        assert parts["completion_tokens"] == mine.completion_tokens, row_id  # eval-protocol's usage of the call
        seen_parts.append(parts)
    assert {p["svg_found"] for p in seen_parts} <= {0.0, 1.0} and any(p["rendered"] for p in seen_parts)
    assert len({r["evaluation_result"]["score"] for r in ep_rows.values()}) > 1  # the rows really differ


def test_bundle_without_libcairo_fails_the_eval_protocol_run_loudly(
    ep: str, policy_judge: Simulator, bundle: EvaluatorBundle, project: Path, rows_jsonl: Path, work: Path
) -> None:
    shadow = work / "no-cairo"
    (shadow / "cairocffi").mkdir(parents=True)
    (shadow / "cairocffi" / "__init__.py").write_text(
        "raise OSError(\"cannot load library 'libcairo.so.2': libcairo.so.2: cannot open shared object file\")\n"
    )
    proc = run_ep_pytest(
        ep, project, bundle, rows_jsonl, policy_judge, work / "ep-out-no-cairo", PYTHONPATH=str(shadow)
    )
    assert proc.returncode != 0  # the run fails: no row is scored 0 as if the model had drawn nothing
    assert "EvaluatorEnvironmentError" in proc.stdout
    assert "libcairo.so.2" in proc.stdout
    assert not list((work / "ep-out-no-cairo").glob("experiment_results/*.jsonl"))


# ---- 2. the simulator's build imports the bundle with eval-protocol ------------------------------------------
def test_simulated_build_imports_the_bundle_with_eval_protocol(ep: str, bundle: EvaluatorBundle) -> None:
    def build(archive: bytes, sim: FireworksSim) -> dict[str, Any]:
        with ControlPlane(FW_KEY, base_url=sim.base_url, max_retries=0) as cp:
            try:
                return cp.ensure_evaluator(
                    bundle.evaluator_id,
                    DISPLAY_NAME,
                    bundle.entry_point,
                    archive,
                    bundle.code_hash,
                    filename=bundle.filename,
                    poll_s=0.01,
                    timeout_s=120,
                )
            except Exception as err:  # noqa: BLE001 - the build's verdict is what is checked
                return {"state": "BUILD_FAILED", "error": str(err)}

    with FireworksSim(build_python=ep) as sim:
        assert build(bundle.archive, sim)["state"] == "ACTIVE"
        assert "importing the entry module" in sim.state.evaluators[bundle.evaluator_id].build_log
    broken = io.BytesIO()  # the same bundle, but its entry imports a module nobody installs
    with (
        tarfile.open(fileobj=io.BytesIO(bundle.archive), mode="r:gz") as src,
        tarfile.open(fileobj=broken, mode="w:gz") as dst,
    ):
        for member in src.getmembers():
            data = src.extractfile(member).read()
            if member.name.endswith(bundle.entry_point.split("::")[0]):
                data = b"import svgagent_no_such_module\n" + data
                member.size = len(data)
            dst.addfile(member, io.BytesIO(data))
    with FireworksSim(build_python=ep) as sim:
        failed = build(broken.getvalue(), sim)
    assert failed["state"] == "BUILD_FAILED"
    assert "No module named 'svgagent_no_such_module'" in failed["error"]


# ---- 3. conformance with eval-protocol's request bodies ------------------------------------------------------
# A difference between eval-protocol's request and svgagent's, by request and JSON path, and why it is right.
EXPLAINED: dict[tuple[str, str], str] = {
    (
        "POST evaluatorsV2",
        "evaluator.commitHash",
    ): "eval-protocol sends the git version of the project it packs (get_pep440_version); svgagent's bundle is "
    "generated, not a checkout: its code hash is in the evaluator id and the description instead",
    (
        "POST evaluatorsV2",
        "evaluator.description",
    ): "free text: eval-protocol writes 'Evaluator for <test>', svgagent what the judge does plus [code <hash>]",
    (
        "POST getUploadEndpoint",
        "filenameToSize.*.tar.gz",
    ): "the size of the archive: the same files in the same layout, packed and compressed by a different packer",
    ("PUT signed-url", "bytes"): "the same: the archive's size",
    (
        "POST reinforcementFineTuningJobs",
        "displayName",
    ): "`ep create rft` has no --display-name flag (its CLI skips display_name); svgagent names the job so the "
    "Jobs pane and the dashboard show what it trains (a field of the client's own create params)",
}


def diff(a: Any, b: Any, path: str = "") -> list[str]:
    """JSON paths where `a` and `b` differ (a missing key on either side is a difference)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[str] = []
        for key in sorted(set(a) | set(b)):
            sub = f"{path}.{key}" if path else key
            out += [sub] if key not in a or key not in b else diff(a[key], b[key], sub)
        return out
    return [] if a == b else [path or "."]


def writes(sim: FireworksSim) -> dict[str, list[Any]]:
    """The bodies of the requests that create or change something, by "METHOD last-path-part" (ids dropped)."""
    out: dict[str, list[Any]] = {}
    for r in sim.requests:
        if r.method == "GET" or r.status >= 400:
            continue
        name = (
            "PUT signed-url"
            if r.path.startswith("/_upload/")
            else f"{r.method} {r.path.rsplit('/', 1)[-1].split(':')[-1]}"
        )
        out.setdefault(name, []).append({"body": r.body, "query": r.query})
    return out


def test_request_bodies_match_what_eval_protocol_sends(
    ep: str, bundle: EvaluatorBundle, project: Path, work: Path
) -> None:
    # no --loss: eval-protocol 0.3.33's CLI cannot parse --rl-loss-method (argparse is handed the Literal type
    # itself: "invalid Literal value: 'DAPO'"), so there is nothing of theirs to compare lossConfig.method with
    params = RftParams(base_model="qwen3-0p6b", epochs=2, kl_beta=0.01, n=8, temperature=0.9, output_model="svg-out")
    ep_flags = [
        "--base-model",
        params.base_model,
        "--epochs",
        "2",
        "--rl-kl-beta",
        "0.01",
        "--response-candidates-count",
        "8",
        "--temperature",
        "0.9",
        "--output-model",
        "svg-out",
    ]
    request = LaunchRequest(
        params=params,
        rows=ROWS,
        fireworks_api_key=FW_KEY,
        openai_api_key=OPENAI_KEY,
        max_retries=0,
        evaluator_poll_s=0.01,
        dataset_poll_s=0.01,
        judge_config=bundle.config,
        job_id="conformance-job",
    )
    prepared = prepare_launch(request, bundle=bundle)

    with FireworksSim(missing_secret_500_every=0) as ours:
        with ControlPlane(FW_KEY, base_url=ours.base_url, max_retries=0) as cp:
            launch(prepared, cp)
        mine = writes(ours)
        ours_archive = ours.evaluator_archive(prepared.evaluator_id)

    jsonl = work / f"{prepared.dataset_id}.jsonl"
    jsonl.write_bytes(prepared.jsonl)
    ep_project = work / "ep-project" / bundle.root  # eval-protocol packs the directory it runs in
    shutil.copytree(project, ep_project)
    env_file = work / "conformance.env"  # what `ep create rft` reads the evaluator's keys from
    env_file.write_text(f"OPENAI_API_KEY={OPENAI_KEY}\n")
    config = {
        "account": ACCT,
        "api_key": FW_KEY,
        "env_file": str(env_file),
        "dataset_id": prepared.dataset_id,
        "dataset_display_name": prepared.dataset_display_name,
        "dataset_jsonl": str(jsonl),
        "project_dir": str(ep_project),
        "entry_point": bundle.entry_point,
        "evaluator_id": prepared.evaluator_id,
        "evaluator_display_name": DISPLAY_NAME,
        "evaluator_description": DESCRIPTION,
        "job_flags": [*ep_flags, "--job-id", prepared.job_id],
    }
    with FireworksSim(missing_secret_500_every=0) as theirs:
        proc = subprocess.run(
            [ep, str(TESTS / "ep_conformance.py")],
            input=json.dumps({**config, "api_base": theirs.base_url}),
            capture_output=True,
            text=True,
            timeout=180,
            cwd=work,
            env=ep_env(work / "ep-home"),
        )
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        eps = writes(theirs)
        ep_archive = theirs.evaluator_archive(prepared.evaluator_id)

    assert set(mine) == set(eps), (sorted(mine), sorted(eps))  # the same requests ...
    unexplained, used = [], set()
    for name in sorted(mine):
        assert len(mine[name]) == len(eps[name]), name
        for m, e in zip(mine[name], eps[name]):
            for where in diff(m, e):
                field = where.removeprefix("body.").removeprefix("query.")
                hits = {(n, pattern) for n, pattern in EXPLAINED if n == name and fnmatch.fnmatchcase(field, pattern)}
                used |= hits
                if not hits:
                    unexplained.append(f"{name} {where}: svgagent {m} / eval-protocol {e}")
    assert unexplained == []  # ... with the same bodies, but for the differences explained above
    assert used == set(EXPLAINED)  # and every explanation is still needed
    # the archives hold the same files under the same top-level folder (item 2: eval-protocol's layout)
    names = [
        sorted(m.name for m in tarfile.open(fileobj=io.BytesIO(a), mode="r:gz").getmembers() if m.isfile())
        for a in (ours_archive, ep_archive)
    ]
    assert names[0] == names[1]
    assert all(n.startswith(bundle.root + "/") for n in names[0])
    job_body = mine["POST reinforcementFineTuningJobs"][0]["body"]
    assert job_body["trainingConfig"] == {"baseModel": params.base_model, "epochs": 2, "outputModel": "svg-out"}
    assert "chunkSize" not in job_body
    assert job_body["lossConfig"] == {"klBeta": 0.01}
