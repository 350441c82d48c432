"""Running a command's event loop so that Ctrl-C and SIGTERM both stop it, always the same way.

Both signals cancel the main task, so the engine marks the run interrupted and keeps everything finished, and both
end in :class:`Stopped`. SIGTERM (what `kill`, systemd, docker and CI send) would otherwise end the process at
once and leave a run marked ``running``. Ctrl-C is not left to ``asyncio.run``'s own handler: that one is installed
only when SIGINT has Python's default handler at start — a process started with SIGINT ignored (as a shell starts
a background job, or a parent that ignored it while spawning) never saw Ctrl-C, and a run went on to its end — and
it turns the cancellation into ``KeyboardInterrupt`` only when nothing else cancelled the task meanwhile. Here the
loop's own handler records the signal and cancels the task; a second one while the first is being handled stops
at once (``KeyboardInterrupt``).
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable
from typing import TypeVar

from svgagent.core.event_loop import run
from svgagent.tui.cli.exit_codes import Stopped

__all__ = ["Stopped", "run_stoppable"]

T = TypeVar("T")
SIGNALS = (signal.SIGINT, signal.SIGTERM)


def run_stoppable(make: Callable[[], Awaitable[T]]) -> T:
    """``asyncio.run(make())`` (on uvloop's loop where installed: svgagent.core.event_loop), with SIGINT and SIGTERM
    both cancelling it and raising :class:`Stopped`."""
    received: list[int] = []

    async def guarded() -> T:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None

        def on_signal(signum: int) -> None:
            if received:
                raise KeyboardInterrupt  # again while stopping: out now (asyncio.run cancels what is left)
            received.append(signum)
            task.cancel()

        handled = []
        for signum in SIGNALS:
            try:
                loop.add_signal_handler(signum, on_signal, signum)
                handled.append(signum)
            except (NotImplementedError, RuntimeError, ValueError):  # pragma: no cover - Windows, not main thread
                pass
        try:
            return await make()
        except asyncio.CancelledError:
            if received:
                raise Stopped(received[0]) from None
            raise
        finally:
            for signum in handled:
                try:
                    loop.remove_signal_handler(signum)
                except (NotImplementedError, RuntimeError):  # pragma: no cover
                    pass

    try:
        return run(guarded())
    except KeyboardInterrupt:
        raise Stopped(received[0] if received else signal.SIGINT) from None
