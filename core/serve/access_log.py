"""The access log of ``svgagent serve``: one JSON object per request (no bodies, so no keys), written to the
``svgagent.serve.access`` logger or to whatever :class:`AccessSink` the server is given (``svgagent serve``: straight
to stderr)."""

from __future__ import annotations

import logging
import time
from json.encoder import encode_basestring_ascii as _json_str  # a string as json.dumps writes it
from typing import Protocol

from aiohttp import web
from aiohttp.abc import AbstractAccessLogger

access_log = logging.getLogger("svgagent.serve.access")
ROLLOUT_ID = web.RequestKey("rollout_id", str)  # set by the handlers that know it, written on the request's line


class AccessSink(Protocol):
    """What :class:`JsonAccessLogger` writes its lines to: a ``logging.Logger``, or anything with these two (the
    serve command's writes them to stderr without a LogRecord per request)."""

    def isEnabledFor(self, level: int) -> bool: ...  # noqa: N802 - logging.Logger's name

    def info(self, line: str) -> None: ...


class JsonAccessLogger(AbstractAccessLogger):
    """One JSON object per request: time, client, method, path (no query), status, duration, rollout id."""

    logger: AccessSink  # type: ignore[assignment]

    @property
    def enabled(self) -> bool:
        return self.logger.isEnabledFor(logging.INFO)

    def log(self, request: web.BaseRequest, response: web.StreamResponse, took: float) -> None:
        # Written out rather than json.dumps of a dict (a third of the line's cost, once per rollout); every string
        # goes through json's own escaping.
        rollout_id = request.get(ROLLOUT_ID)
        remote = request.remote
        self.logger.info(
            f'{{"ts": {round(time.time(), 3)!r}, "remote": {_json_str(remote) if remote is not None else "null"}, '
            f'"method": {_json_str(request.method)}, "path": {_json_str(request.path)}, '
            f'"status": {int(response.status)}, "ms": {round(took * 1000, 2)!r}, "bytes": {int(response.body_length)}'
            + (f', "rollout_id": {_json_str(rollout_id)}}}' if rollout_id else "}")
        )
