#!/usr/bin/env bash
# CI: every line `svgagent export` writes must validate under the eval-protocol package's own EvaluationRow model.
#
# eval-protocol lives in its own virtualenv: $EP_VENV when set (.ci/run exports it), else the one .ci/ep_venv.sh
# makes or reuses. Needs the project's .venv (made by .ci/run) for the svgagent command. Exit status: 0 valid,
# non-zero otherwise.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"

SVGAGENT="$repo/.venv/bin/svgagent"
PROJECT_PY="$repo/.venv/bin/python"
if [ ! -x "$SVGAGENT" ]; then
  echo "ep_validate: $SVGAGENT not found: run .ci/run first (it creates .venv)" >&2
  exit 2
fi

EP_VENV="$(bash "$repo/.ci/ep_venv.sh")"
version=$("$EP_VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("eval-protocol"))')
echo "ep_validate: eval-protocol $version ($EP_VENV)"

# A throwaway store, config and working directory: nothing of the user's is read or written.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export SVGAGENT_HOME="$work/store" XDG_CONFIG_HOME="$work/config" XDG_DATA_HOME="$work/data" \
  XDG_CACHE_HOME="$work/cache" XDG_STATE_HOME="$work/state"
unset FIREWORKS_API_KEY OPENAI_API_KEY FIREWORKS_ACCOUNT_ID FIREWORKS_BASE_URL

run_id_of() { "$PROJECT_PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["run_id"])' "$1"; }

# `svgagent eval` exits 1 when the mean is below the threshold: that is a result, not a failure here.
eval_demo() {
  local out=$1; shift
  local status=0
  "$SVGAGENT" eval --demo --json "$@" >"$out" || status=$?
  if [ "$status" -gt 1 ]; then
    echo "ep_validate: svgagent eval $* failed (exit $status)" >&2
    exit "$status"
  fi
}

# 1. The demo run the issue asks for.
eval_demo count.json --rows 3
"$SVGAGENT" export "$(run_id_of count.json)" -o export-count.jsonl
# 2. Per-requirement verdicts and several samples per row.
eval_demo per-req.json --rows 3 --runs 2 --judge-mode per-requirement
"$SVGAGENT" export "$(run_id_of per-req.json)" -o export-per-requirement.jsonl
# 3. Every state an export has to express: failed (no SVG, judge unreachable), queued, a human override.
"$PROJECT_PY" - "$repo/tests" export-states.jsonl <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from factories import build_run  # the fixture run the TUI tests use
from svgagent.core.exchange.export import iter_jsonl
from svgagent.core.store.run_store import Store

with Store("states.db") as store:
    run_id = build_run(store)
    run = store.get_run(run_id)
    with open(sys.argv[2], "w", encoding="utf-8") as out:
        out.writelines(iter_jsonl(run, store.iter_rollouts(run_id)))
PY

"$EP_VENV/bin/python" "$repo/tests/ep_validate.py" export-count.jsonl export-per-requirement.jsonl export-states.jsonl
