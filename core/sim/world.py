"""The demo world: the simulated services' state in the data directory's ``demo/``, shared by every process that
serves it, so `rft create --demo`, `rft status --demo`, the app, `serve --demo` and `eval --demo` see the same jobs.

    demo/control-plane.json   the simulated Fireworks account: secrets (values never written: masked), datasets,
                              evaluators, RFT jobs (with what the simulated trainer did) and deployments
    demo/blobs/<sha256>       the files uploaded to it (dataset JSONL, evaluator archives)
    demo/trained-models.json  the models its jobs trained (model → base model, steps, reward-hacking window,
                              deployed or not): the simulated policy reads it to draw as the model was trained
    demo/lock                 taken for every read-modify-write of the state
    demo/trainer.lock         held by the one process whose simulated trainer trains (core/sim/trainer.py)

Each process serves the world with a control-plane simulator of its own (``FireworksSim(world_dir=…)``): a request
takes the lock, reads the file again when another process changed it, and writes it back when the state changed.
Lifecycles advance on the wall clock, so a job keeps its age from one command to the next. `svgagent demo reset`
removes the directory; a process still serving it then starts from an empty account.
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from svgagent.core.sim.control_plane_build import BuildCheck
from svgagent.core.sim.control_plane_deployments import _Deployment
from svgagent.core.sim.control_plane_jobs import SimState, _Job
from svgagent.core.sim.control_plane_state import MASK, Clock, _Dataset, _Evaluator

TRAINED_MODELS_FILE = "trained-models.json"  # model → what trained it (svgagent.core.sim.policy_skill)
STATE_FILE = "control-plane.json"
LOCK_FILE = "lock"
TRAINER_LOCK_FILE = "trainer.lock"
FORMAT = 1
_KINDS: tuple[tuple[str, type[Any]], ...] = (
    ("datasets", _Dataset),
    ("evaluators", _Evaluator),
    ("jobs", _Job),
    ("deployments", _Deployment),
)


def _private_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, 0o700)
    return path


def _write_atomically(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as file:
        file.write(data)
    os.replace(tmp, path)


class WorldFile:
    """The state file of one demo world, as this process last read or wrote it."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self._text: str | None = None  # the state file's text as this process last read or wrote it
        self._trained_text: str | None = None
        self._blobs: dict[str, bytes] = {}  # digest → bytes: a file is read from blobs/ once

    @contextmanager
    def session(self, state: SimState) -> Iterator[None]:
        """The world's lock held: ``state`` is the world's current one on entry and is written back on exit."""
        _private_dir(self.dir)
        fd = os.open(self.dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            self._read(state)
            try:
                yield
            finally:
                self._write(state)
        finally:
            os.close(fd)  # the lock goes with it

    # ---- reading -------------------------------------------------------------------------------------------
    def _read(self, state: SimState) -> None:
        """Load the file when its text is not what this process last saw. The text is compared, not the file's
        times and inode: two writes within one tick of the file system's clock, the second reusing the inode the
        first freed, look the same to ``stat``."""
        try:
            text = (self.dir / STATE_FILE).read_text(encoding="utf-8")
        except FileNotFoundError:
            if self._text is not None:  # removed (`svgagent demo reset`): an empty account from now on
                load(state, {})
            self._text = None
            return
        if text == self._text:
            return
        try:
            data = json.loads(text)
        except ValueError:
            data = {}  # a damaged file: the world starts again rather than failing every request
        load(state, data if isinstance(data, dict) and data.get("format") == FORMAT else {}, self._blob_reader())
        self._text = text

    def _blob_reader(self) -> Any:
        def read(digest: str) -> bytes:
            if digest not in self._blobs:
                self._blobs[digest] = (self.dir / "blobs" / digest).read_bytes()
            return self._blobs[digest]

        return read

    # ---- writing -------------------------------------------------------------------------------------------
    def _write(self, state: SimState) -> None:
        text = json.dumps(dump(state, self.dir / "blobs"), sort_keys=True)
        if text != self._text:
            _write_atomically(self.dir / STATE_FILE, text.encode("utf-8"))
            self._text = text
        trained = json.dumps(trained_models(state), sort_keys=True, indent=1)
        if trained != self._trained_text:
            _write_atomically(self.dir / TRAINED_MODELS_FILE, trained.encode("utf-8"))
            self._trained_text = trained


# ---- the state as JSON -----------------------------------------------------------------------------------------
def _blob(blobs: Path, data: bytes) -> str:
    digest = hashlib.sha256(data).hexdigest()
    path = blobs / digest
    if not path.exists():
        _private_dir(blobs)
        _write_atomically(path, data)
    return digest


def _encode(res: Any, blobs: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in dataclasses.fields(res):
        value = getattr(res, f.name)
        if isinstance(value, Clock):
            value = [value.anchor, value.applied]
        elif f.name == "files":
            value = {name: _blob(blobs, data) for name, data in value.items()}
        elif f.name == "check":
            value = None if value is None else {"problem": value.problem, "log": list(value.log)}
        elif isinstance(value, tuple):
            value = list(value)
        out[f.name] = value
    return out


def _decode(cls: type[Any], data: dict[str, Any], blobs: Any) -> Any:
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name not in data:
            continue
        value = data[f.name]
        if f.name == "clock":
            value = Clock(float(value[0]), int(value[1]))
        elif f.name == "files":
            value = {name: blobs(digest) for name, digest in value.items()}
        elif f.name == "check":
            value = None if value is None else BuildCheck.finished(value.get("problem"), value.get("log") or [])
        elif f.name == "status" and isinstance(value, list):
            value = tuple(value)
        values[f.name] = value
    return cls(**values)


def dump(state: SimState, blobs: Path) -> dict[str, Any]:
    """The account's resources as JSON (secret values masked, files as blob digests)."""
    out: dict[str, Any] = {
        "format": FORMAT,
        "secrets": {sid: {"keyName": s["keyName"], "value": MASK} for sid, s in state.secrets.items()},
    }
    for kind, _ in _KINDS:
        out[kind] = {rid: _encode(res, blobs) for rid, res in getattr(state, kind).items()}
    return out


def load(state: SimState, data: dict[str, Any], blobs: Any = None) -> None:
    """Replace the account's resources with ``data`` (:func:`dump`'s; {}: none); ``blobs(digest)`` reads a file's
    bytes. The request log, injected faults and upload tokens are this process's own and stay."""
    secrets = data.get("secrets") or {}
    state.secrets = {sid: {"keyName": str(s.get("keyName", "")), "value": MASK} for sid, s in secrets.items()}
    for kind, cls in _KINDS:
        items = data.get(kind) or {}
        setattr(state, kind, {rid: _decode(cls, item, blobs) for rid, item in items.items()})


def trained_models(state: SimState) -> dict[str, Any]:
    """The models the account's jobs trained, as the simulated policy reads them: a job the trainer drives as soon
    as it trains (its checkpoints ``<model>-step-K`` answer during training), any other once COMPLETED."""
    deployed = {d.spec.get("baseModel") for d in state.deployments.values() if d.state == "READY"}
    out: dict[str, Any] = {}
    for j in state.jobs.values():
        config = j.spec.get("trainingConfig") or {}
        model, base = config.get("outputModel"), config.get("baseModel") or config.get("warmStartFrom")
        if not isinstance(model, str) or not isinstance(base, str):
            continue
        if j.driven and j.trainer:
            steps, hack = int(j.trainer.get("done") or 0), j.trainer.get("hack")
        elif j.state == "JOB_STATE_COMPLETED":
            steps, hack = j.steps, None
        else:
            continue
        out[model] = {"base_model": base, "steps": steps, "hack": hack, "deployed": model in deployed}
    return out
