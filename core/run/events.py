"""A tiny publish/subscribe hub: the engine publishes ``RolloutUpdate`` events, the TUI and CLI consume them.

Publishing never blocks and never fails: each subscriber has its own unbounded queue (events are small), so a slow
reader cannot stall the engine. Readers that want fewer UI updates coalesce on their side.

Thread-safe: the app runs the engine on a thread of its own (with its own event loop) and drains its subscription
on another, so a subscription's queue is a ``deque`` under a lock, and an ``async for`` reader waiting on another
loop is woken with ``call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import AsyncIterator
from typing import Generic, TypeVar

T = TypeVar("T")
_CLOSED = object()


class Subscription(Generic[T]):
    """An async iterator of events; ``drain()`` returns what is queued without waiting (from any thread)."""

    def __init__(self, bus: EventBus[T]) -> None:
        self._bus = bus
        self._items: deque[object] = deque()
        self._lock = threading.Lock()
        self._waiter: tuple[asyncio.AbstractEventLoop, asyncio.Future[None]] | None = None
        self.closed = False

    def _put(self, item: object) -> None:
        with self._lock:
            self._items.append(item)
            waiter, self._waiter = self._waiter, None
        if waiter is not None:
            loop, future = waiter
            try:
                same_loop = asyncio.get_running_loop() is loop
            except RuntimeError:
                same_loop = False
            if same_loop:
                _wake(future)
            else:
                try:
                    loop.call_soon_threadsafe(_wake, future)
                except RuntimeError:  # that loop has closed: nobody is waiting any more
                    pass

    def __aiter__(self) -> AsyncIterator[T]:
        return self

    async def __anext__(self) -> T:
        while True:
            with self._lock:
                if self._items:
                    item = self._items.popleft()
                    break
                if self.closed:
                    raise StopAsyncIteration
                loop = asyncio.get_running_loop()
                future: asyncio.Future[None] = loop.create_future()
                self._waiter = (loop, future)
            try:
                await future
            finally:
                with self._lock:
                    if self._waiter is not None and self._waiter[1] is future:
                        self._waiter = None
        if item is _CLOSED:
            self.closed = True
            raise StopAsyncIteration
        return item  # type: ignore[return-value]

    def drain(self) -> list[T]:
        """Everything queued right now (without waiting); stops at the end-of-stream marker."""
        items: list[T] = []
        with self._lock:
            while self._items:
                item = self._items.popleft()
                if item is _CLOSED:
                    self.closed = True
                    break
                items.append(item)  # type: ignore[arg-type]
        return items

    def close(self) -> None:
        self._bus.unsubscribe(self)
        self._put(_CLOSED)


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class EventBus(Generic[T]):
    def __init__(self) -> None:
        self._subscribers: list[Subscription[T]] = []
        self._lock = threading.Lock()

    def subscribe(self) -> Subscription[T]:
        sub: Subscription[T] = Subscription(self)
        with self._lock:
            self._subscribers = [*self._subscribers, sub]
        return sub

    def unsubscribe(self, sub: Subscription[T]) -> None:
        with self._lock:
            self._subscribers = [s for s in self._subscribers if s is not sub]

    @property
    def listened(self) -> bool:
        """Whether anybody subscribes now (a publisher with nobody to tell need not build the event)."""
        return bool(self._subscribers)

    def publish(self, event: T) -> None:
        for sub in self._subscribers:  # a snapshot: (un)subscribing replaces the list
            sub._put(event)

    def close(self) -> None:
        """End every subscription's iteration (after the events already queued)."""
        for sub in list(self._subscribers):
            sub.close()
