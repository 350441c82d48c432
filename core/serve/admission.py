"""What ``/init`` may add to a running server: how many rollouts it holds, the bytes of their bodies, and the free
space of the store's file system.

An accepted rollout keeps its parsed body (prompt, messages) until it ends, and a stored one takes room on disk.
The count limit alone (``concurrency + queue_limit``) let ~4000 bodies of ~1 MB each be held at once, so the bytes
are bounded too (:data:`DEFAULT_QUEUE_MB`: a small machine holds that without strain); and ``/init`` is refused
while the store's file system has less than ``min_free_bytes`` free (one statvfs per request: microseconds).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

MB = 1024 * 1024
DEFAULT_QUEUE_MB = 256
DEFAULT_MIN_FREE_MB = 512


def free_bytes_of(directory: Path) -> Callable[[], int]:
    """Reads the bytes free to this user on ``directory``'s file system."""
    return lambda: shutil.disk_usage(directory).free


class Admission:
    """The rollouts held (``hold``/``release``), and why a new one is refused now (None: it is not)."""

    def __init__(
        self,
        *,
        concurrency: int,
        queue_limit: int,
        queue_bytes: int,
        min_free_bytes: int,
        free_bytes: Callable[[], int],
    ) -> None:
        self.concurrency, self.queue_limit = concurrency, queue_limit
        self.queue_bytes, self.min_free_bytes = queue_bytes, min_free_bytes
        self.free_bytes = free_bytes
        self.held = 0  # rollouts accepted and not ended
        self.held_bytes = 0  # the bytes of their /init bodies

    def hold(self, size: int) -> None:
        self.held += 1
        self.held_bytes += size

    def release(self, size: int) -> None:
        self.held -= 1
        self.held_bytes -= size

    def busy(self, size: int) -> str | None:
        """Why a body of ``size`` bytes cannot be held now (answered 429)."""
        if self.held >= self.concurrency + self.queue_limit:
            return f"{self.concurrency} rollouts are running and {self.queue_limit} waiting"
        if self.held_bytes + size > self.queue_bytes:
            return (
                f"the rollouts accepted hold {self.held_bytes // MB} MB of /init bodies "
                f"(at most {self.queue_bytes // MB} MB)"
            )
        return None

    def low_disk(self) -> str | None:
        """Why nothing more may be stored now (answered 507); None also when the free space cannot be read."""
        if not self.min_free_bytes:
            return None
        try:
            free = self.free_bytes()
        except OSError:
            return None
        if free >= self.min_free_bytes:
            return None
        return (
            f"the run store's file system has {free // MB} MB free, less than the {self.min_free_bytes // MB} MB "
            "svgagent serve keeps free"
        )
