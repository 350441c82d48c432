"""A loopback OpenAI-compatible endpoint that replays recorded answers: the policy's by the row's prompt, the
judge's by the row's requirements, so every evaluator asked about the same answer gets the same judge reply.

A chat request is a judge request when a message holds an ``image_url`` part. The policy answer is the one whose
key (a string) appears in the request's text; the judge reply likewise. Every judge request is kept (``judged``)
so a test can read what each evaluator sent: temperature, response format, image media type.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Recorded:
    def __init__(self, policy: Mapping[str, str], judge: Mapping[str, str]) -> None:
        self.policy = dict(policy)
        self.judge = dict(judge)
        self.judged: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.base_url = ""

    def answer(self, body: dict[str, Any]) -> str:
        texts, image = [], False
        for message in body.get("messages") or []:
            content = message.get("content")
            if isinstance(content, str):
                texts.append(content)
            elif isinstance(content, list):
                for part in content:
                    if part.get("type") == "image_url":
                        image = True
                    elif isinstance(part.get("text"), str):
                        texts.append(part["text"])
        text = "\n".join(texts)
        table = self.judge if image else self.policy
        if image:
            with self.lock:
                self.judged.append(body)
        # the longest key found: "row-1" must not answer for "row-10"
        for key in sorted(table, key=len, reverse=True):
            if key in text:
                return table[key]
        raise KeyError(f"no recorded {'judge' if image else 'policy'} answer for this request")


def _handler(recorded: Recorded) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            self._send(200, {"object": "list", "data": []})

        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            try:
                content = recorded.answer(body)
            except KeyError as err:
                self._send(400, {"error": {"message": str(err), "type": "invalid_request_error"}})
                return
            self._send(
                200,
                {
                    "id": "chatcmpl-recorded",
                    "object": "chat.completion",
                    "created": 0,
                    "model": str(body.get("model")),
                    "choices": [
                        {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
                    ],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                },
            )

    return Handler


@contextmanager
def recorded_endpoint(policy: Mapping[str, str], judge: Mapping[str, str]) -> Iterator[Recorded]:
    recorded = Recorded(policy, judge)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(recorded))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="recorded-endpoint", daemon=True)
    thread.start()
    recorded.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield recorded
    finally:
        server.shutdown()
        server.server_close()
