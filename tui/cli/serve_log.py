"""`svgagent serve`'s stderr: one JSON object per line, whatever writes to it.

- The access log (one line per request) goes straight to stderr through :class:`StderrLines`, a few lines at a time.
- Every other log record — svgagent's, aiohttp's (a request it cannot parse, e.g. an over-long header line),
  asyncio's (a callback that raised), any library's, Python's warnings — becomes one ``{ts, level, message}``
  object (``logger`` names a record not svgagent's own); an exception is its type and first line (``error``),
  never a traceback spread over lines. :func:`configure_logging` routes them all to the one handler.
- The event loop's exception handler and uncaught exceptions in threads write the same kind of line
  (:func:`loop_exception`, :func:`thread_exception`).
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from svgagent.core.store.sqlite_values import error_line

if TYPE_CHECKING:
    import asyncio

ACCESS_LOGGER = "svgagent.serve.access"
OWN_LOGGER = "svgagent.serve"
MESSAGE_CAP = 2_000  # characters of a message kept on its line (a record may quote a whole request line)


def _message(record: logging.LogRecord) -> str:
    try:
        text = record.getMessage()
    except Exception:  # noqa: BLE001 - arguments that do not fit the format: the format itself, as a line
        text = str(record.msg)
    return text[:MESSAGE_CAP]


class JsonLines(logging.Formatter):
    """Access-log records are JSON already; every other record becomes one JSON object (see the module
    docstring)."""

    def format(self, record: logging.LogRecord) -> str:
        if record.name == ACCESS_LOGGER:
            return record.getMessage()
        line: dict[str, Any] = {"ts": round(record.created, 3), "level": record.levelname.lower()}
        if not record.name.startswith(OWN_LOGGER):
            line["logger"] = record.name
        line["message"] = _message(record)
        if record.exc_info and record.exc_info[1] is not None:
            line["error"] = error_line(record.exc_info[1])
        return json.dumps(line)


class StderrLines:
    """The serve command's access log: each request's JSON line straight to stderr, with no LogRecord (making the
    record, the handler's lock and the formatter were most of a line's cost, once per request), and the lines of
    :attr:`FLUSH_S` written and flushed together, not one write per request. Whatever else this command writes to
    stderr flushes them first (:meth:`flush`), so stderr keeps the order in which things happened."""

    FLUSH_S = 0.05
    MAX_LINES = 256  # written at once past this many

    def __init__(self) -> None:
        self._lines: list[str] = []
        self._timer: asyncio.TimerHandle | None = None
        # flush() may run on another thread (a record logged there, FlushingHandler): the queue and the writes
        # change hands under this lock, so a line appended meanwhile is neither lost nor written out of order
        self._lock = threading.Lock()

    def isEnabledFor(self, level: int) -> bool:  # noqa: N802 - as logging.Logger (JsonAccessLogger asks)
        return True

    def info(self, line: str) -> None:
        with self._lock:
            self._lines.append(line)
            queued = len(self._lines)
        if queued >= self.MAX_LINES:
            self.flush()
        elif self._timer is None:
            self._schedule()

    def _schedule(self) -> None:
        import asyncio

        try:
            self._timer = asyncio.get_running_loop().call_later(self.FLUSH_S, self._due)
        except RuntimeError:  # not on an event loop: nothing would flush it later
            self.flush()

    def _due(self) -> None:
        self._timer = None
        self.flush()

    def flush(self) -> None:
        """Write what is queued (from any thread: the timer, once due, finds nothing or the lines since)."""
        with self._lock:
            lines, self._lines = self._lines, []
            if lines:
                try:
                    sys.stderr.write("\n".join(lines) + "\n")
                    sys.stderr.flush()
                except (OSError, ValueError):  # stderr closed or gone: the server carries on, as logging's would
                    pass


class FlushingHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """stderr's handler for the other log records: the access lines queued before a record are written before it.
    A record that cannot be written is one line too (logging's own handleError prints a traceback)."""

    def __init__(self, access: StderrLines) -> None:
        super().__init__(sys.stderr)
        self.access = access

    def emit(self, record: logging.LogRecord) -> None:
        self.access.flush()
        super().emit(record)

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 - logging.Handler's name
        err = sys.exc_info()[1]
        try:
            line = {"ts": round(time.time(), 3), "level": "error", "logger": "logging"}
            line["message"] = f"a log record of {record.name} could not be written"
            if err is not None:
                line["error"] = error_line(err)
            self.stream.write(json.dumps(line) + "\n")
            self.flush()
        except (OSError, ValueError):
            pass


def log_line(message: str) -> None:
    """One {ts, level, message} record on stderr, before logging is configured (stderr is JSON lines)."""
    print(json.dumps({"ts": round(time.time(), 3), "level": "info", "message": message}), file=sys.stderr, flush=True)


def configure_logging(access: StderrLines) -> FlushingHandler:
    """Every log record of this process to stderr as one JSON line (svgagent's from INFO, the rest from WARNING);
    returns the handler."""
    # A record's thread, process and calling line are never written (JsonLines): this process does not gather them
    # either (the logging HOWTO's "Optimization").
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
    logging._srcfile = None
    handler = FlushingHandler(access)
    handler.setFormatter(JsonLines())
    for name in (ACCESS_LOGGER, OWN_LOGGER):
        logger = logging.getLogger(name)
        logger.setLevel(logging.INFO)
        logger.addHandler(handler)
        logger.propagate = False
    root = logging.getLogger()  # aiohttp's, asyncio's, any library's records: without it logging's last resort
    root.addHandler(handler)  # would print them as text, with their tracebacks
    root.setLevel(logging.WARNING)
    logging.captureWarnings(True)
    threading.excepthook = thread_exception
    return handler


def loop_exception(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The event loop's exception handler: one ERROR line on the ``asyncio`` logger (the default handler's
    message spreads the task's repr and the traceback over lines)."""
    err = context.get("exception")
    logging.getLogger("asyncio").error(
        str(context.get("message") or "unhandled exception in the event loop"),
        exc_info=err if isinstance(err, BaseException) else None,
    )


def thread_exception(args: threading.ExceptHookArgs) -> None:
    """An uncaught exception in a thread: one ERROR line."""
    if args.exc_value is None or isinstance(args.exc_value, SystemExit):
        return
    name = args.thread.name if args.thread is not None else "?"
    logging.getLogger(OWN_LOGGER).error("thread %s ended with an uncaught exception", name, exc_info=args.exc_value)
