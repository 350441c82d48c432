"""Keystrokes land where they were aimed, however fast they come.

Textual hands a key to the focused widget's queue and moves on to the next key at once; a key whose binding moves
focus (``/`` opens the filter, ``e`` the Secrets prompt, Escape leaves a field) does so only after the key has
bubbled to the app and its action has run — by then the keys after it were already given to the *old* focus. Over
SSH or in a paste, keys come in one burst: ``/xyz`` ran ``x`` (Export), a key pasted into the Secrets prompt ran
commands.

``InOrderInput`` (mixed into the App) lets one key or paste through at a time: after each, it waits until the key
has travelled its whole path (focused widget → its ancestors → screen → app) and what it set off has settled — no
message left queued on that path, focus and screen unchanged over a whole round — and only then hands over the next
one, to whatever has focus by then. Without a burst nothing waits: a key that arrives after the last one settled
goes straight through, as in plain Textual.

It also knows when a key's effect is on the screen: :meth:`InOrderInput.input_on_its_way` is true from a key's
arrival until the first frame composed after it settled — the live table holds its next batch until then, so the
frame that answers a key is no bigger than the key made it.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

from textual import events
from textual.app import App
from textual.message_pump import MessagePump

MAX_ROUNDS = 12  # a key's consequences take 2–4 rounds; a live run's messages can add a few
NODE_TIMEOUT_S = 2.0  # safety net only: a node closing with our callback queued never answers

InputEvent = events.Key | events.Paste


async def _processed(node: MessagePump) -> bool:
    """Wait until ``node`` has handled every message queued on it before now (False: it is closing)."""
    done = asyncio.Event()
    if not node.call_later(done.set):
        return False
    try:
        await asyncio.wait_for(done.wait(), NODE_TIMEOUT_S)
    except TimeoutError:
        return False
    return True


class InOrderInput(App[Any]):  # type: ignore[misc]
    """App mixin: keys and pastes are handled one after the other, each by the focus the previous one left."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._held: deque[InputEvent] = deque()  # arrived while an earlier key was on its way
        self._released: deque[InputEvent] = deque()  # handed back to the app's queue, in order
        self._settling: asyncio.Task[None] | None = None
        self._typing_into: object | None = None  # the field the last key was typed into
        self._input_idle = asyncio.Event()
        self._input_idle.set()
        self._inputs = 0  # keys and pastes that arrived
        self._inputs_drawn = 0  # of those, how many a composed frame has shown (all handled before it)

    def input_on_its_way(self) -> bool:
        """A key or paste is being handled, or the frame that shows what it did is not composed yet."""
        return not self._input_idle.is_set() or self._inputs_drawn != self._inputs

    def _drawn(self, inputs: int) -> None:
        self._inputs_drawn = max(self._inputs_drawn, inputs)

    async def on_event(self, event: events.Event) -> None:
        if not isinstance(event, (events.Key, events.Paste)) or event.is_forwarded:
            await super().on_event(event)
            return
        if not (self._released and event is self._released[0]):  # a held event coming back is not a new one
            self._inputs += 1
        if self._released and event is self._released[0]:
            self._released.popleft()
            await self._handle(event, last=not self._released)
        elif self._input_idle.is_set():
            self._input_idle.clear()
            await self._handle(event, last=True)
        elif not self._held and not self._released and self._typed_into_same_field(event):
            await super().on_event(event)  # the field takes its characters in order; the settle goes on
        else:
            self._held.append(event)  # an earlier key is still on its way: this one waits its turn

    async def _handle(self, event: InputEvent, *, last: bool) -> None:
        try:
            await super().on_event(event)
        finally:
            if last:
                self._typing_into = self._consumer(event)
                self._settling = asyncio.create_task(self._settle(), name="input settle")

    def _consumer(self, event: InputEvent) -> object | None:
        """The focused widget if it takes ``event`` as text (a character typed into an Input), else None."""
        focused = self.focused
        if (
            isinstance(event, events.Key)
            and focused is not None
            and focused.check_consume_key(event.key, event.character)
        ):
            return focused
        return None

    def _typed_into_same_field(self, event: InputEvent) -> bool:
        """A character after a character typed into the same field: no binding can see it and typing moves no
        focus, so it may follow at once (a burst of 40 characters then costs one settle, not 40)."""
        consumer = self._consumer(event)
        return consumer is not None and consumer is self._typing_into

    async def input_settled(self) -> None:
        """Wait until every key and paste posted so far has been handled (tests, and anyone who must know)."""
        await _processed(self)  # the app has taken every event already queued: each is handled or held
        await self._input_idle.wait()

    def _chain(self) -> list[MessagePump]:
        focused = self.focused
        if focused is not None:
            return list(focused.ancestors_with_self)
        try:
            return [self.screen, self]
        except Exception:  # noqa: BLE001 - no screen (shutting down): only the app is left
            return [self]

    def _where(self) -> tuple[object, object]:
        try:
            return self.screen, self.focused
        except Exception:  # noqa: BLE001 - no screen while shutting down
            return None, None

    async def _settle(self) -> None:
        try:
            for _ in range(MAX_ROUNDS):
                before = self._where()
                chain = self._chain()
                for node in chain:
                    await _processed(node)
                busy = any(node.message_queue_size for node in (*chain, *self._chain()))
                if not busy and self._where() == before:
                    break
        finally:
            self._release()

    def _release(self) -> None:
        """Hand the next held event back to the app's queue — with the characters after it, when they are all
        typed into the field that has focus now — or mark input idle."""
        batch: list[InputEvent] = []
        if self._held:
            batch.append(self._held.popleft())
            consumer = self._consumer(batch[0])
            while consumer is not None and self._held and self._consumer(self._held[0]) is consumer:
                batch.append(self._held.popleft())
        for event in batch:
            if self.post_message(event):  # back through on_event, in the app's own task
                self._released.append(event)
        if not self._released:  # nothing waiting (or the app is closing: what waited is dropped)
            self._held.clear()
            self._settling = None
            self._input_idle.set()
            self.call_after_refresh(self._drawn, self._inputs)  # after the next frame: what they did is shown

    def on_unmount(self) -> None:
        if self._settling is not None:
            self._settling.cancel()
