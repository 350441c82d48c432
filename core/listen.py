"""Where the project's aiohttp servers listen: the rollout server (`svgagent serve`) and the loopback simulators.

One way to put an ``AppRunner`` on a socket: address reuse, a deep accept backlog (256+ clients may connect at the
same moment), and nothing left open when the bind fails.
"""

from __future__ import annotations

import socket

from aiohttp import web

BACKLOG = 2048


async def listen(runner: web.AppRunner, host: str, port: int) -> int:
    """Serve ``runner`` (already set up) on ``host:port`` (0: a free port); returns the bound port. On failure the
    socket is closed and the runner cleaned up before the error propagates."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        await web.SockSite(runner, sock, backlog=BACKLOG).start()
    except BaseException:
        sock.close()
        await runner.cleanup()
        raise
    return int(sock.getsockname()[1])
