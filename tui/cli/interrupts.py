"""Running a command's event loop so that SIGTERM stops it the way Ctrl-C does.

Ctrl-C (SIGINT) makes ``asyncio.run`` cancel the main task; SIGTERM (what `kill`, systemd, docker and CI send)
would otherwise end the process at once and leave a run marked ``running``. Here both cancel the main task, so the
engine marks the run interrupted and keeps everything finished, and both end in :class:`Stopped`.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable
from typing import TypeVar

from svgagent.tui.cli.exit_codes import Stopped

__all__ = ["Stopped", "run_stoppable"]

T = TypeVar("T")


def run_stoppable(make: Callable[[], Awaitable[T]]) -> T:
    """``asyncio.run(make())``, with SIGINT and SIGTERM both cancelling it and raising :class:`Stopped`."""
    received: list[int] = []

    async def guarded() -> T:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None

        def on_term() -> None:
            received.append(signal.SIGTERM)
            task.cancel()

        try:
            loop.add_signal_handler(signal.SIGTERM, on_term)
        except (NotImplementedError, RuntimeError):  # pragma: no cover - no signals here (Windows, a thread)
            pass
        try:
            return await make()
        except asyncio.CancelledError:
            if received:
                raise Stopped(signal.SIGTERM) from None
            raise
        finally:
            try:
                loop.remove_signal_handler(signal.SIGTERM)
            except (NotImplementedError, RuntimeError):  # pragma: no cover
                pass

    try:
        return asyncio.run(guarded())
    except KeyboardInterrupt:
        raise Stopped(signal.SIGINT) from None
