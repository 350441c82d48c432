"""Demo mode wiring: the project's simulators on free loopback ports stand in for the real services.

The one place production code reaches `svgagent.core.sim` (an import-linter contract says so): the policy + judge
simulator for `eval --demo` / `tui --demo`, and the simulated Fireworks control plane for `rft … --demo` and the
Jobs pane.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from svgagent.core.rft.job_source import DEMO_RUNNING_STEPS, JobSource, control_plane_source
from svgagent.core.scoring.errors import ConfigError

# Each simulator (and the Fireworks client) is imported by the function that starts it: `tui --demo` needs only
# the policy + judge simulator before its first frame, and the Fireworks SDK alone takes most of a second.
if TYPE_CHECKING:
    from svgagent.core.config.settings import Settings
    from svgagent.core.rft.fireworks_api import ControlPlane
    from svgagent.core.sim.control_plane import FireworksSim
    from svgagent.core.sim.simulator import Simulator
    from svgagent.core.sim.trainer import TrainerPace
    from svgagent.core.store.run_store import Store

DEMO_POLICY_MODEL = "simulated-policy"
DEMO_JUDGE_MODEL = "simulated-judge"
DEMO_KEY = "simulated-key"


def demo_overrides(base_url: str, *, model: str | None = DEMO_POLICY_MODEL) -> dict[str, Any]:
    """Settings that point both endpoints at a simulator; the judge's name says the results are simulated.
    ``model``: the policy's name (None: the settings' own model, which the demo policy then plays: its name, its
    temperature and its training change what it draws, see :func:`demo_policy_knobs`)."""
    overrides = {
        "base_url": base_url,
        "judge_base_url": base_url,
        "judge_model": DEMO_JUDGE_MODEL,
        "fireworks_api_key": DEMO_KEY,
        "openai_api_key": DEMO_KEY,
    }
    return overrides if model is None else {**overrides, "model": model}


def demo_world_dir(settings: Settings) -> Path:
    """Where the demo world keeps its state: the data directory's ``demo/`` (`svgagent demo reset` clears it)."""
    return settings.data_dir() / "demo"


def demo_policy_knobs(settings: Settings) -> dict[str, Any]:
    """The simulator knobs of demo mode: answers follow the request's model and temperature, and the models the
    demo world's RFT jobs trained draw as their training says."""
    from svgagent.core.sim.world import TRAINED_MODELS_FILE

    return {
        "policy_follows_settings": True,
        "trained_models_file": str(demo_world_dir(settings) / TRAINED_MODELS_FILE),
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

    def __init__(
        self,
        policy_latency_s: float,
        judge_latency_s: float,
        *,
        start: bool = True,
        knobs: dict[str, Any] | None = None,
    ) -> None:
        from svgagent.core.server_socket import listening_socket

        self._latencies = (policy_latency_s, judge_latency_s)
        self._knobs = dict(knobs or {})
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
        knobs = [f"--{name.replace('_', '-')}={value}" for name, value in self._knobs.items()]
        with self._sock as sock:
            self._sock = None
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "svgagent.core.sim.simulator", "--listen-fd", str(sock.fileno()),
                 "--exit-on-stdin-eof", "--nice", str(NICE), "--policy-latency-s", str(policy_latency_s),
                 "--judge-latency-s", str(judge_latency_s), *knobs],
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
    policy_latency_s: float = 0.4, judge_latency_s: float = 0.3, *, start: bool = True, **knobs: Any
) -> Iterator[SimulatorProcess]:
    """Like :func:`demo_simulator`, with the simulator in a process of its own (see :class:`SimulatorProcess`)."""
    sim = SimulatorProcess(policy_latency_s, judge_latency_s, start=start, knobs=knobs)
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


# ---- the simulated Fireworks control plane: the demo world ---------------------------------------------------
PACE_ENV = "SVGAGENT_DEMO_PACE"  # a factor on the demo world's delays: 1 as shipped; the tests make it small
HACK_ENV = "SVGAGENT_DEMO_HACK"  # the simulated trainer's reward-hacking window: auto, off or FIRST-LAST
WORLD_KNOBS: dict[str, Any] = {
    "evaluator_build_steps": 1,
    "dataset_ready_steps": 0,
    "job_running_steps": DEMO_RUNNING_STEPS,
    "deployment_ready_steps": 3,
    "trainer_drives_remote_jobs": True,
}


def demo_pace() -> tuple[float, TrainerPace]:
    """(seconds per lifecycle step, the trainer's pace) from ``SVGAGENT_DEMO_PACE`` and ``SVGAGENT_DEMO_HACK``."""
    import os

    from svgagent.core.sim.trainer import TrainerPace

    text = os.environ.get(PACE_ENV, "").strip()
    try:
        factor = float(text) if text else 1.0
    except ValueError:
        raise ConfigError(f"{PACE_ENV} must be a number (1: the demo's own pace), got {text!r}") from None
    factor = min(max(factor, 0.0), 100.0)
    hack = os.environ.get(HACK_ENV, "").strip() or "auto"
    pace = TrainerPace(1.5 * factor, 0.2 * factor, 150.0, max(0.2, 3.0 * factor), hack)
    try:
        pace.window(10)
    except ValueError as err:
        raise ConfigError(f"{HACK_ENV}: {err}") from None
    return max(0.01, 1.0 * factor), pace


class DemoWorld:
    """This process's view of the demo world in ``world_dir``: a control-plane simulator serving the shared state
    and, with ``train``, the simulated trainer (which trains only while no other process does)."""

    def __init__(self, world_dir: Path, *, train: bool = False) -> None:
        from svgagent.core.rft.demo_identity import DEMO_ACCOUNT
        from svgagent.core.sim.control_plane import FireworksSim

        step_s, pace = demo_pace()
        self.dir = world_dir
        self.sim = FireworksSim(
            account_id=DEMO_ACCOUNT, advance="time", step_seconds=step_s, world_dir=str(world_dir), **WORLD_KNOBS
        )
        self.trainer: Any = None
        if train:
            from svgagent.core.sim.trainer import Trainer

            self.trainer = Trainer(self.sim, pace)

    def start(self) -> str:
        url = self.sim.start()
        if self.trainer is not None:
            self.trainer.start()
        return url

    def stop(self) -> None:
        if self.trainer is not None:
            self.trainer.stop()
        self.sim.stop()


def seed_world(cp: ControlPlane) -> None:
    """Launch the demo's own job (`DEMO_JOB_ID`) unless the world has it already."""
    from svgagent.core.rft.demo_identity import DEMO_JOB_ID
    from svgagent.core.rft.fireworks_api import FireworksError
    from svgagent.core.rft.launch import seed_demo_job

    try:
        cp.get_job(DEMO_JOB_ID)
    except FireworksError as err:
        if err.kind != "not_found":
            raise
        seed_demo_job(cp)


@contextmanager
def demo_control_plane(
    *,
    world_dir: Path | None = None,
    train: bool = False,
    seed_job: bool = False,
    step_seconds: float = 1.0,
    **knobs: Any,
) -> Iterator[tuple[FireworksSim, ControlPlane]]:
    """Serve the simulated Fireworks control plane on a free loopback port and yield (simulator, ControlPlane) with
    fake keys. With ``world_dir``: the demo world kept there (``train``: this process runs its trainer too); else
    an account of its own that ends with the block (lifecycles every ``step_seconds``). With ``seed_job``, the demo's
    own job (`DEMO_JOB_ID`) exists."""
    from svgagent.core.rft.demo_identity import DEMO_ACCOUNT, DEMO_FIREWORKS_KEY
    from svgagent.core.rft.fireworks_api import ControlPlane
    from svgagent.core.sim.control_plane import FireworksSim

    world = DemoWorld(world_dir, train=train) if world_dir is not None else None
    if world is not None:
        sim = world.sim
        world.start()
    else:
        if seed_job:
            knobs = {"evaluator_build_steps": 0, "dataset_ready_steps": 0, **knobs}
        sim = FireworksSim(account_id=DEMO_ACCOUNT, advance="time", step_seconds=step_seconds, **knobs)
        sim.start()
    try:
        with ControlPlane(DEMO_FIREWORKS_KEY, base_url=sim.base_url, max_retries=0) as cp:
            if seed_job:
                seed_world(cp)
            yield sim, cp
    finally:
        world.stop() if world is not None else sim.stop()


def reset_world(world_dir: Path) -> bool:
    """Remove the demo world (every simulated job, dataset, evaluator and deployment); False: there was none."""
    import shutil

    if not world_dir.exists():
        return False
    shutil.rmtree(world_dir)
    return True


def demo_source(world_dir: Path) -> JobSource:
    """The demo world (served from the Jobs pane's first poll until it closes, its trainer running meanwhile), with
    the demo's own job in it; launches go to it with the demo's fake keys and are not remembered in the store."""
    from svgagent.core.rft.demo_identity import DEMO_FIREWORKS_KEY, DEMO_OPENAI_KEY  # not launch: fireworks-ai

    running: dict[str, DemoWorld] = {}

    def stop() -> None:
        world = running.pop("world", None)
        if world is not None:
            world.stop()

    def connect() -> ControlPlane:  # in a worker thread, when the Jobs pane first polls
        from svgagent.core.rft.fireworks_api import ControlPlane

        world = DemoWorld(world_dir, train=True)
        running["world"] = world
        try:
            cp = ControlPlane(DEMO_FIREWORKS_KEY, base_url=world.start(), max_retries=0)
            seed_world(cp)
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
    """Demo mode: the demo world; else Fireworks when FIREWORKS_API_KEY is set; else a source that says so."""
    if demo:
        return demo_source(demo_world_dir(settings))
    return control_plane_source(settings, store)
