"""Demo mode wiring: the project's simulators on free loopback ports stand in for the real services.

The one place production code reaches `svgagent.core.sim` (an import-linter contract says so): the policy + judge
simulator for `eval --demo` / `tui --demo`, and the simulated Fireworks control plane for `rft … --demo` and the
Jobs pane.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from svgagent.core.rft.job_source import DEMO_RUNNING_STEPS, DEMO_STEP_S, JobSource, control_plane_source

# Each simulator (and the Fireworks client) is imported by the function that starts it: `tui --demo` needs only
# the policy + judge simulator before its first frame, and the Fireworks SDK alone takes most of a second.
if TYPE_CHECKING:
    from svgagent.core.config.settings import Settings
    from svgagent.core.rft.fireworks_api import ControlPlane
    from svgagent.core.sim.control_plane import FireworksSim
    from svgagent.core.sim.simulator import Simulator
    from svgagent.core.store.run_store import Store

DEMO_POLICY_MODEL = "simulated-policy"
DEMO_JUDGE_MODEL = "simulated-judge"
DEMO_KEY = "simulated-key"


def demo_overrides(base_url: str) -> dict[str, Any]:
    """Settings that point both endpoints at a simulator; the names say the results are simulated."""
    return {
        "base_url": base_url,
        "judge_base_url": base_url,
        "model": DEMO_POLICY_MODEL,
        "judge_model": DEMO_JUDGE_MODEL,
        "fireworks_api_key": DEMO_KEY,
        "openai_api_key": DEMO_KEY,
    }


@contextmanager
def demo_simulator(policy_latency_s: float = 0.4, judge_latency_s: float = 0.3, **knobs: Any) -> Iterator[Simulator]:
    from svgagent.core.sim.simulator import SimConfig, Simulator

    sim = Simulator(SimConfig(policy_latency_s=policy_latency_s, judge_latency_s=judge_latency_s, **knobs))
    sim.start()
    try:
        yield sim
    finally:
        sim.stop()


class SimulatorProcess:
    """The policy + judge simulator in a process of its own; :attr:`base_url` is known at once. This process binds
    the listening socket and hands it to the simulator's, so nobody waits for the simulator to be up: a request sent
    before it is waits in the socket's backlog until it is. The process starts at once, or with ``start=False``
    when :meth:`start` is called (`tui --demo` starts it after its first frame: its boot — an interpreter, aiohttp,
    pydantic, ≈0.5 s of CPU — would otherwise share the cores with the app's own start-up). It stops when
    :meth:`stop` is called or when this process ends in any way (it exits when its stdin closes)."""

    def __init__(self, policy_latency_s: float, judge_latency_s: float, *, start: bool = True) -> None:
        from svgagent.core.server_socket import listening_socket

        self._latencies = (policy_latency_s, judge_latency_s)
        self._sock: Any = listening_socket("127.0.0.1", 0)  # the child's once started: closed here then
        self.base_url = f"http://127.0.0.1:{self._sock.getsockname()[1]}/v1"
        self._proc: Any = None
        self._drain: Any = None
        if start:
            self.start()

    @property
    def started(self) -> bool:
        return self._proc is not None

    def start(self) -> None:
        """Start the simulator's process on the bound socket (idempotent; nothing once stopped)."""
        import os
        import subprocess
        import sys
        import threading

        from svgagent.core.run.engine_process import NICE

        if self._proc is not None or self._sock is None:
            return
        env = {k: v for k, v in os.environ.items() if not k.startswith(("FIREWORKS_", "OPENAI_"))}
        policy_latency_s, judge_latency_s = self._latencies
        with self._sock as sock:
            self._sock = None
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "svgagent.core.sim.simulator", "--listen-fd", str(sock.fileno()),
                 "--exit-on-stdin-eof", "--nice", str(NICE), "--policy-latency-s", str(policy_latency_s),
                 "--judge-latency-s", str(judge_latency_s)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                pass_fds=(sock.fileno(),), start_new_session=True)  # fmt: skip
        # it prints its URL once serving and nothing else, but a full pipe must never block it
        self._drain = threading.Thread(target=self._proc.stdout.read, name="sim-stdout", daemon=True)
        self._drain.start()

    def stop(self) -> None:
        if self._sock is not None:  # never started: requests waiting in the backlog are refused now
            self._sock.close()
            self._sock = None
        if self._proc is None:
            return
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except Exception:  # noqa: BLE001 - it would not stop: make it
                self._proc.kill()
                self._proc.wait()
        self._drain.join(timeout=2)  # the pipe is at its end: the reader returns
        for pipe in (self._proc.stdin, self._proc.stdout):
            if pipe is not None:
                pipe.close()


@contextmanager
def demo_simulator_process(
    policy_latency_s: float = 0.4, judge_latency_s: float = 0.3, *, start: bool = True
) -> Iterator[SimulatorProcess]:
    """Like :func:`demo_simulator`, with the simulator in a process of its own (see :class:`SimulatorProcess`)."""
    sim = SimulatorProcess(policy_latency_s, judge_latency_s, start=start)
    try:
        yield sim
    finally:
        sim.stop()


@contextmanager
def demo_tracing_gateway(policy_latency_s: float = 0.4, **knobs: Any) -> Iterator[tuple[str, str]]:
    """The policy + judge simulator and the tracing-gateway simulator in front of it; yields (simulator base URL,
    gateway URL): the gateway URL is what eval-protocol's ``model_base_url`` should be."""
    from svgagent.core.sim.tracing_gateway import TracingGateway

    with demo_simulator(policy_latency_s=policy_latency_s, **knobs) as sim:
        gateway = TracingGateway(sim.base_url)
        gateway.start()
        try:
            assert sim.base_url is not None and gateway.base_url is not None
            yield sim.base_url, gateway.base_url
        finally:
            gateway.stop()


# ---- the simulated Fireworks control plane ---------------------------------------------------------------
@contextmanager
def demo_control_plane(
    *, step_seconds: float = 1.0, seed_job: bool = False, **knobs: Any
) -> Iterator[tuple[FireworksSim, ControlPlane]]:
    """Start the simulated Fireworks control plane on a free loopback port (lifecycles advance with time) and
    yield (simulator, ControlPlane) with fake keys. With `seed_job`, one job (`DEMO_JOB_ID`) already exists."""
    from svgagent.core.rft.demo_identity import DEMO_ACCOUNT, DEMO_FIREWORKS_KEY
    from svgagent.core.rft.fireworks_api import ControlPlane
    from svgagent.core.rft.launch import seed_demo_job
    from svgagent.core.sim.control_plane import FireworksSim

    if seed_job:
        knobs = {"evaluator_build_steps": 0, "dataset_ready_steps": 0, **knobs}
    sim = FireworksSim(account_id=DEMO_ACCOUNT, advance="time", step_seconds=step_seconds, **knobs)
    sim.start()
    try:
        with ControlPlane(DEMO_FIREWORKS_KEY, base_url=sim.base_url, max_retries=0) as cp:
            if seed_job:
                seed_demo_job(cp)
            yield sim, cp
    finally:
        sim.stop()


def demo_source(*, step_s: float = DEMO_STEP_S, running_steps: int = DEMO_RUNNING_STEPS) -> JobSource:
    """The simulated control plane (started on first use, stopped on close) holding one seeded job that moves
    along with the clock; launches go to it with the demo's fake keys and are not remembered in the store."""
    from svgagent.core.rft.demo_identity import (  # not launch: fireworks-ai
        DEMO_ACCOUNT,
        DEMO_FIREWORKS_KEY,
        DEMO_OPENAI_KEY,
    )

    running: dict[str, Any] = {}

    def stop() -> None:
        sim = running.pop("sim", None)
        if sim is not None:
            sim.stop()

    def connect() -> ControlPlane:  # in a worker thread, when the Jobs pane first polls
        from svgagent.core.rft.fireworks_api import ControlPlane
        from svgagent.core.rft.launch import seed_demo_job
        from svgagent.core.sim.control_plane import FireworksSim

        sim = FireworksSim(
            account_id=DEMO_ACCOUNT,
            advance="time",
            step_seconds=step_s,
            evaluator_build_steps=0,
            dataset_ready_steps=0,
            job_running_steps=running_steps,
        )
        sim.start()
        running["sim"] = sim
        try:
            cp = ControlPlane(DEMO_FIREWORKS_KEY, base_url=sim.base_url, max_retries=0)
            seed_demo_job(cp)
        except BaseException:
            stop()
            raise
        return cp

    overrides = {
        "fireworks_api_key": DEMO_FIREWORKS_KEY,
        "openai_api_key": DEMO_OPENAI_KEY,
        "account_id": None,
        "base_url": None,
        "max_retries": 0,
        "evaluator_poll_s": 0.25,
        "dataset_poll_s": 0.25,
    }
    return JobSource(
        connect, label="simulated Fireworks control plane", demo=True, on_close=stop, request_overrides=overrides
    )


def job_source_for(settings: Settings, *, demo: bool, store: Store | None = None) -> JobSource:
    """Demo mode: the simulator; else Fireworks when FIREWORKS_API_KEY is set; else a source that says so."""
    if demo:
        return demo_source()
    return control_plane_source(settings, store)
