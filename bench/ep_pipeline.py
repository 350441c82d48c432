"""Eval Protocol's own SVG-agent quickstart pipeline on SVGBench rows, for bench/quickstart.py to time beside
`svgagent eval` on the same rows, the same simulator and the same concurrency.

What runs is eval-protocol's shipped evaluator, where it lies in the eval-protocol venv (.ci/ep_venv.sh):
``eval_protocol/quickstart/svg_agent/evaluator/test_svgagent.py`` under pytest, i.e. its ``evaluation_test`` with a
``RemoteRolloutProcessor`` (``/init`` to a rollout server, then polling the tracing gateway), a fresh headless
Chromium per SVG through Selenium, and a litellm judge. Its interpreter is a venv of its own under
~/.cache/svgagent/ (the eval-protocol venv on its path, plus ``selenium``), made on first use; Chromium and its
driver are Debian's ``chromium`` and ``chromium-driver``.

The parties: the rollout server is ``svgagent serve`` (eval-protocol's ``/init`` protocol) in its own process; the
tracing gateway is the project's loopback stand-in (``python -m svgagent.core.sim.tracing_gateway``), which forwards
the policy call to the simulator; the judge is the same simulator. Policy and judge latency are the simulator's, the
same for both pipelines.

Adaptations — configuration only, none of the evaluator's logic:

1. The quickstart ships ``@pytest.mark.skip``: a pytest plugin (``-p``, written to a temporary directory) drops that
   mark from the collected item. The same plugin records how long the item's call took (the run alone).
2. Dataset: the decorator names ``svgbench_dataset.jsonl``, which is not shipped. ``--ep-jsonl-path`` gives the
   first N rows of the SVGBench questions.json that `svgagent eval --rows N` runs, as svgagent words them for
   Eval Protocol (``core/prompt.ep_row``: the same user message, ``dataset_info`` with the requirements), written
   to the temporary directory.
3. Rows and concurrency: ``--ep-max-rows N``, ``--ep-max-concurrent-rollouts C``, ``--ep-max-concurrent-evaluations
   C`` (the decorator says 8 rows, and eval-protocol's default is 96 of each); ``svgagent serve --concurrency C``.
4. Rollout server: ``EP_REMOTE_ROLLOUT_PROCESSOR_BASE_URL`` = svgagent serve (the decorator names a Vercel app;
   eval-protocol 0.3.33's ``--ep-remote-rollout-processor-base-url`` flag is parsed but not applied, the variable is).
5. ``EP_MODEL_BASE_URL`` = the loopback tracing gateway (the processor's default is Fireworks' tracing host).
6. Judge: ``OPENAI_BASE_URL`` = the simulator and a placeholder ``OPENAI_API_KEY``: litellm sends its ``gpt-4.1``
   request there. ``FIREWORKS_API_KEY`` is a placeholder too (the ``/init`` request carries it to the gateway).
7. ``--ep-success-threshold 0``: the decorator wants a mean score of 0.5; the simulated judge's scores mean nothing.
8. Offline and isolated: ``--ep-no-upload``, ``--ep-output-dir`` (a temporary directory, read for the row count),
   ``EP_DISABLE_AUTO_BROWSER``, ``LITELLM_LOCAL_MODEL_COST_MAP``; ``SE_CHROMEDRIVER`` = Debian's chromedriver (else
   Selenium Manager goes online to look for a Chrome); ``HOME`` in the temporary directory;
   ``PYTHONDONTWRITEBYTECODE`` and ``-p no:cacheprovider`` (nothing is written into the venv).

Where the two pipelines differ beyond that, EP's side pays a little more: ``svgagent serve`` also renders and
stores each rollout it serves (milliseconds of CPU, counted in the CPU figure), where the quickstart's server only
calls the model; the gateway hop in front of the policy is the quickstart's own design (the tracing proxy).

The completion parameters stay as shipped (model name, temperature 0.8, reasoning effort): the simulator answers
any model name.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from _report import children_of, cpu_seconds

from svgagent.core.run.dataset import load_dataset, select_rows
from svgagent.core.run.prompt import ep_row

REPO = Path(__file__).resolve().parents[1]
QUICKSTART = Path("eval_protocol/quickstart/svg_agent/evaluator/test_svgagent.py")
INSTALL_HINT = "apt-get install chromium chromium-driver"

PLUGIN = '''
"""Written by svgagent's bench/ep_pipeline.py: run the quickstart's skipped evaluation_test, time its call."""
import json, os, time
import pytest


def _note(event):
    with open(os.environ["EPBENCH_TIMING"], "a", encoding="utf-8") as out:
        out.write(json.dumps({"event": event, "t": time.time()}) + "\\n")


def pytest_collection_modifyitems(items):
    for item in items:
        item.own_markers = [mark for mark in item.own_markers if mark.name != "skip"]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    _note("call")
    try:
        return (yield)
    finally:
        _note("called")
'''


@dataclass
class EpRun:
    wall: float  # spawn to exit of the pytest process
    alone: float  # the evaluation_test item's call
    startup: float  # spawn to that call (interpreter, eval-protocol and litellm imports, collection)
    cpu: float  # pytest, chromedriver and Chromium, plus the rollout server's and the gateway's CPU in that time
    rows: int  # rows in eval-protocol's results
    judged: int  # judge requests the simulator answered during the run (rows rendered and sent to the judge)
    policy: int  # policy requests the simulator answered during the run


def missing_browser() -> str:
    """'' when Chromium and its driver are on PATH, else the one line saying what to install."""
    absent = [name for name in ("chromium", "chromedriver") if not shutil.which(name)]
    return f"no {' or '.join(absent)} on PATH: {INSTALL_HINT}" if absent else ""


def eval_protocol_venv() -> Path:
    proc = subprocess.run(["bash", str(REPO / ".ci" / "ep_venv.sh")], capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise SystemExit(f".ci/ep_venv.sh failed: {proc.stderr[-1500:]}")
    return Path(proc.stdout.strip().splitlines()[-1])


def _purelib(python: str) -> str:
    where = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    return subprocess.run([python, "-c", where], capture_output=True, text=True, check=True).stdout.strip()


def selenium_python(ep: Path) -> str:
    """The interpreter of ``<ep venv>-selenium``: a venv whose path holds the eval-protocol venv's packages (a .pth
    file) and selenium, made on first use and reused."""
    venv = ep.with_name(ep.name + "-selenium")
    python = venv / "bin" / "python"
    probe = [str(python), "-c", "import selenium, eval_protocol.quickstart"]
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    if python.exists() and subprocess.run(probe, capture_output=True, env=env).returncode == 0:
        return str(python)
    print(f"making {venv} (the eval-protocol venv plus selenium)", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    Path(_purelib(str(python)), "eval-protocol-venv.pth").write_text(_purelib(str(ep / "bin" / "python")) + "\n")
    pip = subprocess.run([str(python), "-m", "pip", "install", "-q", "selenium"], capture_output=True, text=True)
    if pip.returncode != 0 or subprocess.run(probe, capture_output=True, env=env).returncode != 0:
        raise SystemExit(f"could not install selenium into {venv}: {pip.stderr[-800:]}")
    return str(python)


def quickstart_test(python: str) -> Path:
    """Where the quickstart's evaluator lies for ``python`` (found without importing eval-protocol)."""
    where = "import importlib.util as u; print(u.find_spec('eval_protocol').submodule_search_locations[0])"
    package = subprocess.run([python, "-c", where], capture_output=True, text=True, check=True).stdout.strip()
    test = Path(package).parent / QUICKSTART
    if not test.is_file():
        raise SystemExit(f"eval-protocol's SVG-agent quickstart is not at {test}")
    return test


def _sim_stats(sim_url: str) -> dict[str, int]:
    with urllib.request.urlopen(sim_url.rsplit("/v1", 1)[0] + "/_sim/stats", timeout=10) as answer:
        return json.loads(answer.read())["requests"]


def _start(command: list[str], env: dict[str, str], log: Path, cwd: Path) -> tuple[subprocess.Popen[str], dict]:
    """A service that prints one JSON line once it listens: (process, that line)."""
    with open(log, "w", encoding="utf-8") as stderr:  # the child keeps its own copy of the descriptor
        proc = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=stderr, text=True, env=env, cwd=cwd, start_new_session=True
        )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    try:
        return proc, json.loads(line)
    except json.JSONDecodeError:
        proc.kill()
        raise SystemExit(f"{command[2:4]} did not start: {line!r} {log.read_text()[-800:]}") from None


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=40)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _tree_cpu(pid: int) -> float:
    total = 0.0
    for child in [pid, *children_of(pid)]:
        try:
            total += cpu_seconds(child)
        except OSError:
            pass
    return total


def run_ep_pipeline(
    python: str, sim_url: str, dataset: str, rows: int, concurrency: int, root: Path, index: int
) -> EpRun:
    """One run of eval-protocol's quickstart evaluator on the first ``rows`` rows of ``dataset``, with its own
    rollout server and tracing gateway (started before the clock, stopped after)."""
    work = root / f"ep-{index}"
    (work / "plugin").mkdir(parents=True)
    (work / "plugin" / "epbench_plugin.py").write_text(PLUGIN, encoding="utf-8")
    (work / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    jsonl = work / "rows.jsonl"
    selected = select_rows(load_dataset(dataset), rows)
    jsonl.write_text("".join(json.dumps(ep_row(row)) + "\n" for row in selected), encoding="utf-8")
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(work / "home")}
    serve_env = {
        **base,
        "SVGAGENT_HOME": str(work / "home" / "svgagent"),
        "XDG_CONFIG_HOME": str(work / "home" / "config"),
        "XDG_CACHE_HOME": str(work / "home" / "cache"),
    }
    gateway, gateway_line = _start(
        [sys.executable, "-m", "svgagent.core.sim.tracing_gateway", "--policy-url", sim_url],
        base,
        work / "gateway.log",
        work,
    )
    serve_cmd = [sys.executable, "-m", "svgagent.tui.cli.main", "serve", "--port", "0", "--json"]
    serve, serve_line = _start([*serve_cmd, "--concurrency", str(concurrency)], serve_env, work / "serve.log", work)
    out = work / "out"
    env = {
        **base,
        "EP_NO_UPLOAD": "1",
        "EP_DISABLE_AUTO_BROWSER": "1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPATH": str(work / "plugin"),
        "EPBENCH_TIMING": str(work / "timing.jsonl"),
        "EP_REMOTE_ROLLOUT_PROCESSOR_BASE_URL": serve_line["url"],
        "EP_MODEL_BASE_URL": gateway_line["gateway"],
        "OPENAI_BASE_URL": sim_url,
        "OPENAI_API_KEY": "oa-bench-not-a-key",
        "FIREWORKS_API_KEY": "fw-bench-not-a-key",
        "SE_CHROMEDRIVER": shutil.which("chromedriver") or "",
    }
    command = [
        python,
        "-m",
        "pytest",
        str(quickstart_test(python)),
        "-p",
        "epbench_plugin",
        "-p",
        "no:cacheprovider",
        "-c",
        str(work / "pytest.ini"),
        "--rootdir",
        str(work),
        "-q",
        "--ep-jsonl-path",
        str(jsonl),
        "--ep-max-rows",
        str(rows),
        "--ep-max-concurrent-rollouts",
        str(concurrency),
        "--ep-max-concurrent-evaluations",
        str(concurrency),
        "--ep-success-threshold",
        "0",
        "--ep-no-upload",
        "--ep-output-dir",
        str(out),
    ]
    try:
        before = _sim_stats(sim_url)
        services0 = _tree_cpu(serve.pid) + _tree_cpu(gateway.pid)
        usage0 = os.times()
        spawned = time.time()
        t0 = time.perf_counter()
        proc = subprocess.run(command, env=env, cwd=work, capture_output=True, text=True, timeout=1800)
        wall = time.perf_counter() - t0
        usage1 = os.times()
        services = _tree_cpu(serve.pid) + _tree_cpu(gateway.pid) - services0
        after = _sim_stats(sim_url)
    finally:
        _stop(serve)
        _stop(gateway)
    if proc.returncode != 0:
        raise SystemExit(
            f"eval-protocol's quickstart exited {proc.returncode}:\n{proc.stdout[-3000:]}{proc.stderr[-1500:]}"
        )
    results = list((out / "experiment_results").glob("*.jsonl"))
    done = sum(len(path.read_text(encoding="utf-8").splitlines()) for path in results)
    if done != len(selected):
        raise SystemExit(f"eval-protocol's quickstart returned {done} of {len(selected)} rows: {proc.stdout[-2000:]}")
    notes = [json.loads(line) for line in (work / "timing.jsonl").read_text(encoding="utf-8").splitlines()]
    (called,) = [n["t"] for n in notes if n["event"] == "call"]
    (returned,) = [n["t"] for n in notes if n["event"] == "called"]
    children = (usage1.children_user + usage1.children_system) - (usage0.children_user + usage0.children_system)
    return EpRun(
        wall=wall,
        alone=returned - called,
        startup=called - spawned,
        cpu=children + services,
        rows=done,
        judged=after["judge"] - before["judge"],
        policy=after["policy"] - before["policy"],
    )
