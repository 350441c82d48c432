"""A tiny publish/subscribe hub: the engine publishes ``RolloutUpdate`` events, the TUI and CLI consume them.

Publishing never blocks and never fails: each subscriber has its own unbounded queue (events are small), so a slow
reader cannot stall the engine. Readers that want fewer UI updates coalesce on their side.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Generic, TypeVar

T = TypeVar("T")
_CLOSED = object()


class Subscription(Generic[T]):
    """An async iterator of events; ``drain()`` returns what is queued without waiting."""

    def __init__(self, bus: EventBus[T]) -> None:
        self._bus = bus
        self._queue: asyncio.Queue[object] = asyncio.Queue()
        self.closed = False

    def _put(self, item: object) -> None:
        self._queue.put_nowait(item)

    def __aiter__(self) -> AsyncIterator[T]:
        return self

    async def __anext__(self) -> T:
        if self.closed and self._queue.empty():
            raise StopAsyncIteration
        item = await self._queue.get()
        if item is _CLOSED:
            self.closed = True
            raise StopAsyncIteration
        return item  # type: ignore[return-value]

    def drain(self) -> list[T]:
        """Everything queued right now (without waiting); stops at the end-of-stream marker."""
        items: list[T] = []
        while True:
            try:
                item = self._queue.get_nowait()
            except asyncio.QueueEmpty:
                return items
            if item is _CLOSED:
                self.closed = True
                return items
            items.append(item)  # type: ignore[arg-type]

    def close(self) -> None:
        self._bus.unsubscribe(self)
        self._put(_CLOSED)


class EventBus(Generic[T]):
    def __init__(self) -> None:
        self._subscribers: list[Subscription[T]] = []

    def subscribe(self) -> Subscription[T]:
        sub: Subscription[T] = Subscription(self)
        self._subscribers.append(sub)
        return sub

    def unsubscribe(self, sub: Subscription[T]) -> None:
        if sub in self._subscribers:
            self._subscribers.remove(sub)

    def publish(self, event: T) -> None:
        for sub in self._subscribers:
            sub._put(event)

    def close(self) -> None:
        """End every subscription's iteration (after the events already queued)."""
        for sub in list(self._subscribers):
            sub.close()
