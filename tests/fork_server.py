"""``python fork_server.py SOCKET MODULE…``: import the MODULEs once, then run each command a client sends in a child
forked from this warm interpreter (tests/warm_python.py starts it; tests/fork_client.py is the client).

A fresh eval-protocol interpreter spends ~7 s of CPU importing eval_protocol (litellm's pydantic models), a fresh
``svgagent`` command ~0.5 s importing its libraries (aiohttp, rich, pydantic), and the tests start hundreds of
commands; a forked child starts with those modules already imported and otherwise behaves as ``python ARGS`` would: the client's argv (``-m module``, ``-c code`` or a script path), working directory,
environment (``PYTHONPATH`` included) and its stdin, stdout and stderr (the file descriptors themselves, passed over
the socket). The child's exit status goes back to the client, which exits with it. A client that goes away (killed
at a timeout) takes its child with it. The server ends when the process that started it does.

Standard library only, and it imports nothing but what it is told: never svgagent (a command must run the code as a
fresh interpreter would import it) nor anything a test may want to shadow (cairocffi). What a fresh interpreter does
at start-up and a fork does not (``sitecustomize``, ``PYTHON*`` variables read at start) is not for these commands.
"""

from __future__ import annotations

import builtins
import importlib
import json
import os
import runpy
import selectors
import signal
import socket
import sys
import traceback

MAX_REQUEST = 1 << 22


def _warm(modules: list[str]) -> None:
    for name in modules:
        importlib.import_module(name)


def _exit_code(err: SystemExit) -> int:
    if err.code is None:
        return 0
    if isinstance(err.code, int):
        return err.code
    print(err.code, file=sys.stderr)
    return 1


def _run_child(request: dict, fds: list[int]) -> None:
    """In the forked child: become ``python *argv`` in the client's place. Never returns."""
    code = 1
    try:
        os.setsid()  # its own process group: the server can stop it and whatever it started
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        extra = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        argv: list[str] = request["argv"]
        if argv[:1] == ["-m"]:
            sys.path[:0] = [os.getcwd(), *extra]
            sys.argv = [argv[1], *argv[2:]]
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        elif argv[:1] == ["-c"]:
            sys.path[:0] = ["", *extra]
            sys.argv = ["-c", *argv[2:]]
            exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__", "__builtins__": builtins})
        else:
            script = os.path.abspath(argv[0])
            sys.path[:0] = [os.path.dirname(script), *extra]
            sys.argv = list(argv)
            runpy.run_path(script, run_name="__main__")
        code = 0
    except SystemExit as err:
        code = _exit_code(err)
    except BaseException:  # noqa: BLE001 - what `python` does with an uncaught exception
        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _read_request(conn: socket.socket) -> tuple[dict, list[int]]:
    data, fds, _flags, _addr = socket.recv_fds(conn, 65536, 3)
    if len(data) < 8:
        raise ValueError("short request")
    size = int.from_bytes(data[:8], "big")
    if size > MAX_REQUEST:
        raise ValueError("request too large")
    body = data[8:]
    while len(body) < size:
        chunk = conn.recv(min(65536, size - len(body)))
        if not chunk:
            raise ValueError("request cut short")
        body += chunk
    return json.loads(body), list(fds)


def _status(raw: int) -> dict[str, int]:
    if os.WIFSIGNALED(raw):
        return {"signal": os.WTERMSIG(raw)}
    return {"exit": os.WEXITSTATUS(raw)}


def serve(path: str) -> None:
    parent = os.getppid()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    listener.setblocking(False)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    children: dict[int, socket.socket] = {}
    print("ready", flush=True)
    while os.getppid() == parent:
        for key, _events in selector.select(timeout=0.02):
            if key.fileobj is listener:
                conn, _ = listener.accept()
                conn.setblocking(True)
                try:
                    request, fds = _read_request(conn)
                except (OSError, ValueError) as err:
                    conn.sendall(json.dumps({"exit": 70, "error": str(err)}).encode() + b"\n")
                    conn.close()
                    continue
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    selector.close()
                    listener.close()
                    conn.close()
                    _run_child(request, fds)
                for fd in fds:
                    os.close(fd)
                children[pid] = conn
                selector.register(conn, selectors.EVENT_READ, pid)
            else:  # the client said nothing more: it is gone (killed at a timeout), so its child goes too
                conn = key.fileobj
                assert isinstance(conn, socket.socket)
                if not conn.recv(1):
                    selector.unregister(conn)
                    try:
                        os.killpg(key.data, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
        while children:
            try:
                pid, raw = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            conn = children.pop(pid, None)
            if conn is None:
                continue
            try:
                selector.unregister(conn)
            except (KeyError, ValueError):
                pass
            try:
                conn.sendall(json.dumps(_status(raw)).encode() + b"\n")
            except OSError:
                pass
            conn.close()
    for pid in children:
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


if __name__ == "__main__":
    socket_path, warm = sys.argv[1], sys.argv[2:]
    del sys.path[0]  # this file's folder (tests/) is no part of what the children see
    _warm(warm)
    serve(socket_path)
