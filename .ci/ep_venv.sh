#!/usr/bin/env bash
# Make (or reuse) the eval-protocol virtualenv the tests and .ci/ep_validate.sh run eval-protocol's own code in.
#
# eval-protocol is heavy (litellm and friends: ~1.5 min and ~500 MB on a fresh venv) and is not a dependency of
# svgagent, so it lives in its own virtualenv. It holds eval-protocol at the version svgagent is checked against plus
# the evaluator bundle's own requirements (cairosvg, pillow, ...), as the Fireworks build would install them.
#
#   bash .ci/ep_venv.sh            # prints the venv's path on stdout (progress on stderr)
#   EP_VENV=/some/dir bash .ci/ep_venv.sh
#
# Default location: ${XDG_CACHE_HOME:-~/.cache}/svgagent/ep-venv-<version>; reused when it already holds that
# version and the bundle's requirements (a stamp file records what was installed). Needs python3 >= 3.10.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"

EP_VERSION=0.3.33
PY=${PYTHON:-python3}
cache="${XDG_CACHE_HOME:-$HOME/.cache}/svgagent"
EP_VENV=${EP_VENV:-$cache/ep-venv-$EP_VERSION}

# The bundle's requirements, read from the source (no svgagent install needed): one per line.
requirements=$("$PY" - "$repo/core/rft/evaluator_bundle.py" <<'PY'
import ast, sys
tree = ast.parse(open(sys.argv[1], encoding="utf-8").read())
for node in tree.body:
    if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "REQUIREMENTS" for t in node.targets):
        print("\n".join(ast.literal_eval(node.value)))
PY
)
stamp="eval-protocol==$EP_VERSION
$requirements"

# One maker at a time (parallel test workers may all ask for it): the others wait, then reuse it.
mkdir -p "$(dirname "$EP_VENV")"
exec 9>"$EP_VENV.lock"
flock 9

if [ -x "$EP_VENV/bin/python" ] && [ "$(cat "$EP_VENV/.svgagent-stamp" 2>/dev/null)" = "$stamp" ]; then
  echo "ep_venv: reusing $EP_VENV (eval-protocol $EP_VERSION)" >&2
  echo "$EP_VENV"
  exit 0
fi

started=$(date +%s)
mkdir -p "$(dirname "$EP_VENV")"
[ -x "$EP_VENV/bin/python" ] || "$PY" -m venv "$EP_VENV"
"$EP_VENV/bin/python" -m pip install -q --upgrade pip >&2
# shellcheck disable=SC2086  # one requirement per word on purpose
"$EP_VENV/bin/python" -m pip install -q "eval-protocol==$EP_VERSION" $requirements >&2
version=$("$EP_VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("eval-protocol"))')
if [ "$version" != "$EP_VERSION" ]; then
  echo "ep_venv: expected eval-protocol $EP_VERSION in $EP_VENV, found $version" >&2
  exit 1
fi
printf '%s' "$stamp" >"$EP_VENV/.svgagent-stamp"
echo "ep_venv: eval-protocol $version ready in $(( $(date +%s) - started )) s ($EP_VENV)" >&2
echo "$EP_VENV"
