"""Where the project's aiohttp servers listen: the rollout server (`svgagent serve`) and the loopback simulators.

One way to put an ``AppRunner`` on a socket: address reuse, a deep accept backlog (256+ clients may connect at the
same moment), and nothing left open when the bind fails. :func:`listening_socket` makes that socket without
aiohttp, so that a parent process can bind it, know the URL at once, and hand it to the server's own process.
"""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from aiohttp import web

BACKLOG = 2048


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` (0: a free port) and listening: connections wait in its backlog until a
    server accepts them."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(BACKLOG)
    except BaseException:
        sock.close()
        raise
    return sock


async def listen(runner: web.AppRunner, host: str, port: int, sock: socket.socket | None = None) -> int:
    """Serve ``runner`` (already set up) on ``host:port`` (0: a free port), or on ``sock`` when given (one of
    :func:`listening_socket`'s, e.g. inherited from the process that bound it); returns the bound port. On failure
    the socket is closed and the runner cleaned up before the error propagates."""
    from aiohttp import web

    try:
        if sock is None:
            sock = listening_socket(host, port)
        await web.SockSite(runner, sock, backlog=BACKLOG).start()
    except BaseException:
        if sock is not None:
            sock.close()
        await runner.cleanup()
        raise
    return int(sock.getsockname()[1])
