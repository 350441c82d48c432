"""A run's lease: which process is working on it, so two workers never process (and pay for) the same run.

The owner (pid, host name and a random token per engine run) and a heartbeat (wall-clock seconds, renewed every
``HEARTBEAT_S``) are kept in the ``runs`` row. A lease is *live* while its heartbeat is younger than ``LEASE_TTL_S``
and, when the owner is on this host, its process still exists — so a killed owner's lease ends at once here and
after ``LEASE_TTL_S`` elsewhere (a store on a shared disk).
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import time
from dataclasses import dataclass

LEASE_TTL_S = 60.0
HEARTBEAT_S = 10.0


def this_host() -> str:
    return socket.gethostname()


def pid_alive(pid: int) -> bool:
    """Whether a process with ``pid`` exists on this host (one owned by another user counts)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class LeaseOwner:
    pid: int
    host: str
    token: str

    @classmethod
    def this_process(cls) -> LeaseOwner:
        return cls(os.getpid(), this_host(), secrets.token_hex(8))

    def to_json(self) -> str:
        return json.dumps({"pid": self.pid, "host": self.host, "token": self.token})

    @classmethod
    def from_json(cls, text: str) -> LeaseOwner | None:
        try:
            data = json.loads(text)
            return cls(int(data["pid"]), str(data["host"]), str(data["token"]))
        except (ValueError, TypeError, KeyError):
            return None

    def describe(self) -> str:
        return f"pid {self.pid}" + ("" if self.host == this_host() else f" on host {self.host}")


def lease_is_live(owner: LeaseOwner, heartbeat: float, now: float | None = None, ttl: float = LEASE_TTL_S) -> bool:
    now = time.time() if now is None else now
    if now - heartbeat > ttl:
        return False
    if owner.host == this_host():
        return pid_alive(owner.pid)
    return True
