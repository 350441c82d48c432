"""Every notification of the session, kept after its toast is gone (``L`` shows them): the app's ``notify`` adds
each one here. No Textual: a bounded list of entries, safe to add to from any thread (``notify`` is)."""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass

MAX_ENTRIES = 5_000  # a long session's worth; the oldest go first


@dataclass(frozen=True, slots=True)
class LogEntry:
    at: float  # seconds since the epoch
    severity: str  # information | warning | error
    title: str
    message: str


class MessageLog:
    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self._entries: deque[LogEntry] = deque(maxlen=max_entries)
        self._lock = threading.Lock()

    def add(self, at: float, severity: str, title: str, message: str) -> None:
        with self._lock:
            self._entries.append(LogEntry(at, severity, title, message))

    @property
    def entries(self) -> list[LogEntry]:
        """Oldest first."""
        with self._lock:
            return list(self._entries)

    def __len__(self) -> int:
        return len(self._entries)
