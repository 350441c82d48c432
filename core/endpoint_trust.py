"""Endpoints set by a project's ``./svgagent.toml``: keys are sent there only after the person confirmed it once.

A ``svgagent.toml`` comes with whatever project was cloned. If it points ``base_url`` or ``judge_base_url`` at a
host other than the default, running svgagent in that directory would send ``FIREWORKS_API_KEY`` /
``OPENAI_API_KEY`` to that host. The rule:

- an endpoint chosen by the person — a flag, the environment, ``.env``, the user config file — is used as it is;
- an endpoint that only the project file sets, and that differs from the default, is used once the person has
  confirmed it for that file and host: ``svgagent trust`` (headless), or the question ``svgagent tui`` asks on a
  terminal. Confirmations are kept in the user config dir (``trusted-endpoints.json``, one entry per resolved
  file path and ``host:port``), so a changed host in the same file asks again;
- until then every command that would send a key there refuses with one line naming the file, the host and the
  command or flag that settles it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from svgagent.core.output import write_output
from svgagent.core.scoring.errors import ConfigError
from svgagent.core.urls import endpoint_host

TRUST_FILE_NAME = "trusted-endpoints.json"
# setting -> (what it is, the key sent there, the flag that sets it instead)
ENDPOINTS: dict[str, tuple[str, str, str]] = {
    "base_url": ("policy", "FIREWORKS_API_KEY", "--base-url"),
    "judge_base_url": ("judge", "OPENAI_API_KEY", "--judge-base-url"),
}


@dataclass(frozen=True, slots=True)
class ProjectEndpoint:
    """An endpoint in effect that only the project file sets (and that is not the default)."""

    field: str
    url: str
    file: Path

    @property
    def host(self) -> str:
        return endpoint_host(self.url)

    def refusal(self) -> str:
        what, key, flag = ENDPOINTS[self.field]
        return (
            f"{self.file} sets the {what} endpoint to {self.url}: your {key} would be sent to {self.host}, "
            f"which is not a default endpoint. Check that file, then confirm once with `svgagent trust` "
            f"(remembered for this file and host), or choose the endpoint yourself with {flag}"
        )


def _read_trusted(target: Path) -> set[tuple[str, str]]:
    try:
        data = json.loads(target.read_text(encoding="utf-8"))
        return {(str(item["file"]), str(item["host"])) for item in data.get("trusted", [])}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return set()


def is_trusted(endpoint: ProjectEndpoint, target: Path) -> bool:
    """Whether the person confirmed ``endpoint`` (its file and host) in the trust file ``target``."""
    return (str(endpoint.file), endpoint.host) in _read_trusted(target)


def remember(endpoints: list[ProjectEndpoint], target: Path) -> None:
    """Record the person's confirmation of ``endpoints`` (file, host) in the trust file ``target`` (mode 0600)."""
    trusted = _read_trusted(target) | {(str(e.file), e.host) for e in endpoints}
    target.parent.mkdir(parents=True, exist_ok=True)
    body = {"version": 1, "trusted": [{"file": f, "host": h} for f, h in sorted(trusted)]}
    write_output(target, json.dumps(body, indent=2) + "\n", mode=0o600)


def forget(file: Path, target: Path) -> int:
    """Drop every confirmation for ``file`` from the trust file ``target``; returns how many there were."""
    trusted = _read_trusted(target)
    kept = {(f, h) for f, h in trusted if f != str(file.resolve())}
    if kept != trusted:
        body = {"version": 1, "trusted": [{"file": f, "host": h} for f, h in sorted(kept)]}
        write_output(target, json.dumps(body, indent=2) + "\n", mode=0o600)
    return len(trusted) - len(kept)


def project_endpoints(
    effective: Mapping[str, str], defaults: Mapping[str, str], without: Callable[[], Any], project_file: Path
) -> list[ProjectEndpoint]:
    """The endpoints in ``effective`` (setting -> URL) that differ from ``defaults`` and that ``project_file``
    alone decides: ``without()`` — the settings the same layers give without that file, built only when an
    endpoint is not the default — gives another. Decided by that comparison, never by reading the file again: a
    second read can fail (the file replaced, grown past the cap, broken meanwhile) or spell the key otherwise
    (pydantic-settings matches ``BASE_URL`` too), and either way it let a key go to an unconfirmed endpoint."""
    changed = [name for name in ENDPOINTS if effective[name] != defaults[name]]
    if not changed:
        return []
    other = without()
    return [
        ProjectEndpoint(name, effective[name], project_file.resolve())
        for name in changed
        if effective[name] != getattr(other, name)
    ]


def require_trusted(settings: object, fields: tuple[str, ...] = tuple(ENDPOINTS)) -> None:
    """Raise :class:`ConfigError` (one line) when a key would go to an unconfirmed project endpoint. ``settings`` is a
    ``Settings`` (not imported: settings imports this module to mark such endpoints)."""
    for endpoint in getattr(settings, "untrusted_endpoints", ()):
        if endpoint.field in fields:
            raise ConfigError(endpoint.refusal())
