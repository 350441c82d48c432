"""Run in the eval-protocol venv (see tests/ep_venv.py): eval-protocol 0.3.33's own functions perform the steps of
`ep create rft` against a simulated control plane, so a test can diff the request bodies they send with svgagent's.

    <ep venv>/bin/python tests/ep_conformance.py < config.json

The config (JSON on stdin) names the control plane (api_base, api_key, account), the inputs svgagent was given
(secret value, dataset JSONL path, ids, display names, the unpacked bundle's project folder and entry point) and
the `ep create rft` flags for the same hyperparameters. The only requests that are not eval-protocol's are the
harness's waits for the dataset and evaluator to be ready (a person does the same between the steps). Exit status
0 when every step succeeded.
"""

from __future__ import annotations

import json
import os
import sys
import time

import requests

cfg = json.load(sys.stdin)
base, key, account = cfg["api_base"], cfg["api_key"], cfg["account"]
os.environ.update({"FIREWORKS_API_BASE": base, "FIREWORKS_API_KEY": key})

from eval_protocol.cli import build_parser  # noqa: E402 - after the environment is set
from eval_protocol.cli_commands.create_rft import _create_rft_job  # noqa: E402
from eval_protocol.cli_commands.upload import upload_secrets_to_fireworks  # noqa: E402
from eval_protocol.evaluation import Evaluator  # noqa: E402
from eval_protocol.fireworks_rft import create_dataset_from_jsonl  # noqa: E402


def wait_for(path: str, state: str) -> None:
    """The harness's own wait (GETs only): eval-protocol's steps assume the resource got ready in between."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        got = requests.get(f"{base}/v1/{path}", headers={"Authorization": f"Bearer {key}"}, timeout=10).json()
        if got.get("state") == state:
            return
        if got.get("state") == "BUILD_FAILED":
            sys.exit(f"{path} failed to build: {got.get('status')}")
        time.sleep(0.01)
    sys.exit(f"{path} never became {state}")


# 1. secrets: every key of the project's .env (here: the judge's), then FIREWORKS_API_KEY from the environment
upload_secrets_to_fireworks(root=cfg["project_dir"], env_file=cfg["env_file"], non_interactive=True)
# 2. dataset (create_rft._upload_dataset → create_dataset_from_jsonl)
create_dataset_from_jsonl(
    account_id=account,
    api_key=key,
    api_base=base,
    dataset_id=cfg["dataset_id"],
    display_name=cfg["dataset_display_name"],
    jsonl_path=cfg["dataset_jsonl"],
)
wait_for(f"accounts/{account}/datasets/{cfg['dataset_id']}", "READY")
# 3. evaluator (upload_command → create_evaluation → Evaluator.create: packs the working directory)
os.chdir(cfg["project_dir"])
Evaluator(account_id=account, api_key=key, entry_point=cfg["entry_point"]).create(
    cfg["evaluator_id"], display_name=cfg["evaluator_display_name"], description=cfg["evaluator_description"]
)
wait_for(f"accounts/{account}/evaluators/{cfg['evaluator_id']}", "ACTIVE")
# 4. the job (create_rft._create_rft_job with the flags `ep create rft` parses)
args = build_parser().parse_args(["create", "rft", *cfg["job_flags"]])
code = _create_rft_job(
    account_id=account,
    api_key=key,
    api_base=base,
    evaluator_id=cfg["evaluator_id"],
    evaluator_resource_name=f"accounts/{account}/evaluators/{cfg['evaluator_id']}",
    dataset_id=cfg["dataset_id"],
    dataset_resource=f"accounts/{account}/datasets/{cfg['dataset_id']}",
    args=args,
    dry_run=False,
)
sys.exit(code)
