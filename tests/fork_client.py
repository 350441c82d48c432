"""`python ARGS`, run by tests/fork_server.py's warm interpreter: this client sends its
argv, working directory, environment and its stdin/stdout/stderr to the server, waits, and exits as the command did
(with its code, or killed by the same signal). Started as ``python -I -S fork_client.py SOCKET ARGS…``: standard
library only, nothing of the environment read by this interpreter itself."""

import json
import os
import signal
import socket
import sys


def main() -> None:
    path, argv = sys.argv[1], sys.argv[2:]
    fds = []
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
            fds.append(fd)
        except OSError:  # not open in this process: the command gets /dev/null there, as it would read nothing
            fds.append(os.open(os.devnull, os.O_RDWR))
    body = json.dumps({"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}).encode()
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(path)
    socket.send_fds(conn, [len(body).to_bytes(8, "big")], fds)
    conn.sendall(body)
    answer = b""
    while not answer.endswith(b"\n"):
        chunk = conn.recv(4096)
        if not chunk:
            print("fork_client: the fork server went away", file=sys.stderr)
            sys.exit(70)
        answer += chunk
    status = json.loads(answer)
    if "signal" in status:
        signal.signal(status["signal"], signal.SIG_DFL)
        os.kill(os.getpid(), status["signal"])
    if status.get("error"):
        print(f"fork_client: {status['error']}", file=sys.stderr)
    sys.exit(status["exit"])


main()
