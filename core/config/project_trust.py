"""Settings that a project's files decide are used only once the person confirmed them.

``./svgagent.toml`` comes with whatever project was cloned, and so may ``./.env`` (the working directory's
``.env`` is also where the person keeps their keys: the rule is about the settings it sets, not the keys). Either
may set:

- an endpoint (``base_url``, ``judge_base_url``) other than the default: keys would be sent there;
- a safety limit (:data:`SAFETY_LIMITS`) above the one the person's own layers give — flags, environment, the
  user config file, defaults: a project file may lower a limit, not raise it unasked;
- where the run store and exports live (``store``, ``home``);
- a program svgagent runs (``chromium_path``, the browser ``--renderer chromium`` starts).

Such a setting is *pending* until the person confirmed it once for that file: ``svgagent trust`` lists what it
would trust and asks (``--yes`` for scripts), and ``svgagent tui`` asks the same on a terminal. Confirmations are
kept in the user config dir (``trusted-endpoints.json``): one per resolved file and ``host:port`` for an endpoint
(another host in the same file asks again), one per file, setting and value otherwise. Until then every command
that would send a key to a pending endpoint refuses with one line (:func:`require_trusted`), and every command
that loads settings refuses a pending limit or store with one line (:func:`require_confirmed`); each line names the
file, the setting and how to settle it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from svgagent.core.named_files import write_output
from svgagent.core.scoring.errors import ConfigError
from svgagent.core.urls import endpoint_host

TRUST_FILE_NAME = "trusted-endpoints.json"
# setting -> (what it is, the key sent there, the flag that sets it instead)
ENDPOINTS: dict[str, tuple[str, str, str]] = {
    "base_url": ("policy", "FIREWORKS_API_KEY", "--base-url"),
    "judge_base_url": ("judge", "OPENAI_API_KEY", "--judge-base-url"),
}
# settings whose higher values cost the machine or the account more: memory, time, sizes, requests in flight
SAFETY_LIMITS = (
    "concurrency",
    "judge_concurrency",
    "workers",
    "max_tokens",
    "max_retries",
    "request_timeout_s",
    "render_size",
    "render_timeout_s",
    "render_memory_mb",
)
LOCATIONS = {"store": "the run store moves", "home": "the run store and exports move"}  # where they are written
PROGRAMS = {"chromium_path": ("--renderer chromium runs that program", "--chromium")}  # what they run, their flag
GUARDED = (*ENDPOINTS, *SAFETY_LIMITS, *LOCATIONS, *PROGRAMS)


def _auto_workers() -> int:
    """The most engine processes ``workers`` unset (auto) starts: half the CPUs (core/run/engine.py)."""
    return max(1, (os.cpu_count() or 2) // 2)


@dataclass(frozen=True, slots=True)
class ProjectSetting:
    """A setting in effect that a project file decides and the person has not confirmed: ``value`` is the file's,
    ``mine`` what the person's own layers give."""

    field: str
    value: Any
    mine: Any
    file: Path

    @property
    def host(self) -> str:
        return endpoint_host(str(self.value))

    @property
    def is_endpoint(self) -> bool:
        return self.field in ENDPOINTS

    def key(self) -> tuple[str, str, str]:
        """What a confirmation of this setting is remembered as."""
        if self.is_endpoint:
            return str(self.file), "host", self.host
        return str(self.file), self.field, str(self.value)

    def describe(self) -> str:
        """One line for `svgagent trust`: the file, the setting and what trusting it means."""
        if self.is_endpoint:
            what, key, _ = ENDPOINTS[self.field]
            return f"{self.file}: {self.field} = {self.value} (the {what} endpoint: your {key} is sent to {self.host})"
        if self.field in LOCATIONS:
            return (
                f"{self.file}: {self.field} = {self.value} ({LOCATIONS[self.field]} there; yours: {_shown(self.mine)})"
            )
        if self.field in PROGRAMS:
            return f"{self.file}: {self.field} = {self.value} ({PROGRAMS[self.field][0]}; yours: {_shown(self.mine)})"
        return f"{self.file}: {self.field} = {self.value} (raises a safety limit; yours: {_shown(self.mine)})"

    def refusal(self) -> str:
        if self.is_endpoint:
            what, key, flag = ENDPOINTS[self.field]
            return (
                f"{self.file} sets the {what} endpoint to {self.value}: your {key} would be sent to {self.host}, "
                f"which is not a default endpoint. Check that file, then confirm once with `svgagent trust` "
                f"(remembered for this file and host), or choose the endpoint yourself with {flag}"
            )
        variable = f"SVGAGENT_{self.field.upper()}"
        if self.field in LOCATIONS:
            return (
                f"{self.file} sets {self.field} to {self.value}: {LOCATIONS[self.field]} there "
                f"(yours: {_shown(self.mine)}). Check that file, then confirm once with `svgagent trust` (remembered "
                f"for this file and value), or choose the place yourself with --store or {variable}"
            )
        if self.field in PROGRAMS:
            what, flag = PROGRAMS[self.field]
            return (
                f"{self.file} sets {self.field} to {self.value}: {what} (yours: {_shown(self.mine)}). Check that "
                f"file, then confirm once with `svgagent trust` (remembered for this file and value), or choose the "
                f"program yourself with {flag} or {variable}"
            )
        return (
            f"{self.file} raises {self.field} to {self.value} (yours: {_shown(self.mine)}): a project file may "
            f"lower a safety limit, not raise it. Check that file, then confirm once with `svgagent trust` "
            f"(remembered for this file and value), or set it yourself with {variable} or its flag"
        )


def _shown(value: Any) -> str:
    return "not set" if value is None else str(value)


def _raises(field: str, value: Any, mine: Any) -> bool:
    if value is None:
        return False
    if mine is None:  # only workers: unset means auto
        mine = _auto_workers()
    return bool(value > mine)


def _sets(data: Mapping[str, Any], field: str) -> bool:
    return any(str(name).lower() == field for name in data)


def find_pending(
    effective: Any,
    set_by: Sequence[tuple[Path, Mapping[str, Any]]],
    mine: Callable[[], Any],
    defaults: Mapping[str, Any],
) -> list[ProjectSetting]:
    """The guarded settings of ``effective`` that a project file decides. ``set_by``: each project file with the
    values its layer gave, highest layer first; ``mine()``: the settings the person's own layers give (built only
    when a project file set a guarded setting). Decided by that comparison, never by reading a file again: a second
    read can fail (the file replaced, grown past the cap, broken meanwhile) and failed open."""
    names = [name for name in GUARDED if any(_sets(data, name) for _, data in set_by)]
    if not names:
        return []
    other = mine()
    found = []
    for name in names:
        value, own = getattr(effective, name), getattr(other, name)
        if name in ENDPOINTS:
            pending = value != defaults[name] and value != own
        elif name in SAFETY_LIMITS:
            pending = _raises(name, value, own)
        else:
            pending = value != own
        if pending:
            file = next(path for path, data in set_by if _sets(data, name))
            found.append(ProjectSetting(name, value, own, file.resolve()))
    return found


def _read_trusted(target: Path) -> set[tuple[str, str, str]]:
    try:
        entries = json.loads(target.read_text(encoding="utf-8")).get("trusted", [])
    except (OSError, ValueError, AttributeError):
        return set()
    trusted = set()
    for item in entries if isinstance(entries, list) else ():
        if not isinstance(item, dict) or "file" not in item:
            continue
        if "host" in item:
            trusted.add((str(item["file"]), "host", str(item["host"])))
        elif "setting" in item and "value" in item:
            trusted.add((str(item["file"]), str(item["setting"]), str(item["value"])))
    return trusted


def _write_trusted(trusted: set[tuple[str, str, str]], target: Path) -> None:
    entries = [
        {"file": f, "host": v} if kind == "host" else {"file": f, "setting": kind, "value": v}
        for f, kind, v in sorted(trusted)
    ]
    target.parent.mkdir(parents=True, exist_ok=True)
    write_output(target, json.dumps({"version": 2, "trusted": entries}, indent=2) + "\n", mode=0o600)


def trusted_entries(target: Path) -> list[str]:
    """The confirmations in the trust file ``target``, one line each (``file  host`` / ``file  setting = value``)."""
    return [f"{f}  {v}" if kind == "host" else f"{f}  {kind} = {v}" for f, kind, v in sorted(_read_trusted(target))]


def is_trusted(setting: ProjectSetting, target: Path) -> bool:
    """Whether the person confirmed ``setting`` (its file and host, or file and value) in the trust file ``target``."""
    return setting.key() in _read_trusted(target)


def remember(settings: Iterable[ProjectSetting], target: Path) -> None:
    """Record the person's confirmation of ``settings`` in the trust file ``target`` (mode 0600)."""
    _write_trusted(_read_trusted(target) | {s.key() for s in settings}, target)


def remember_saved(values: Mapping[str, Any], file: Path, target: Path) -> None:
    """The person saved ``values`` into the project file ``file`` themselves (the Config pane): the guarded ones
    among them are theirs, remembered as confirmed."""
    saved = [ProjectSetting(n, v, None, file.resolve()) for n, v in values.items() if n in GUARDED and v is not None]
    if saved:
        remember(saved, target)


def forget(files: Iterable[Path], target: Path) -> int:
    """Drop every confirmation for ``files`` from the trust file ``target``; returns how many there were."""
    names = {str(file.resolve()) for file in files}
    trusted = _read_trusted(target)
    kept = {entry for entry in trusted if entry[0] not in names}
    if kept != trusted:
        _write_trusted(kept, target)
    return len(trusted) - len(kept)


def require_trusted(settings: object, fields: tuple[str, ...] = tuple(ENDPOINTS)) -> None:
    """Raise :class:`ConfigError` (one line) when a key would go to an unconfirmed project endpoint. ``settings`` is a
    ``Settings`` (not imported: settings imports this module to mark pending settings)."""
    for setting in getattr(settings, "pending", ()):
        if setting.field in fields:
            raise ConfigError(setting.refusal())


def require_confirmed(settings: object) -> None:
    """Raise :class:`ConfigError` (one line) for a pending safety limit or store location of ``settings``."""
    for setting in getattr(settings, "pending", ()):
        if not setting.is_endpoint:
            raise ConfigError(setting.refusal())
