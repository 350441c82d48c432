"""`svgagent serve` as a process: SIGTERM after the policy answered keeps the answer, and stderr stays one JSON
object per line whatever aiohttp, asyncio, a thread or a warning writes."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp
from hostile_policy import hostile_policy
from serve_support import init_body, post_init

from svgagent.core.exchange.ep_status import StatusCode
from svgagent.core.scoring.models import RolloutStatus
from svgagent.core.serve.rollout import STOPPED_JUDGING
from svgagent.core.serve.training_runs import TrainingStore
from svgagent.core.sim.tracing_gateway import TracingGateway
from svgagent.core.store.run_store import Store


def start_serve(tmp_path: Path, *flags: str, env: dict[str, str] | None = None) -> tuple[subprocess.Popen[str], str]:
    """`svgagent serve --json --port 0` on a tmp store; returns the process and its URL (from the startup line)."""
    environ = {
        **os.environ,
        "SVGAGENT_HOME": str(tmp_path / "home"),
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
        **(env or {}),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "svgagent.tui.cli.main", "serve", "--json", "--port", "0"]
        + ["--store", str(tmp_path / "runs.db"), *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environ,
        cwd=tmp_path,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        proc.kill()
        raise AssertionError(f"serve did not start: {proc.communicate()[1]}")
    return proc, json.loads(line)["url"]


def json_lines(err: str) -> list[dict[str, Any]]:
    """Every line of ``err`` as JSON (fails on the first line that is not one JSON object)."""
    lines = []
    for text in err.splitlines():
        value = json.loads(text)
        assert isinstance(value, dict), text
        lines.append(value)
    return lines


async def test_sigterm_after_the_policy_answered_stores_the_answer_and_logs_finished(tmp_path: Path) -> None:
    """The rollout's judge never answers; SIGTERM (grace 0.3 s) cancels it after the policy answered and the
    picture was made. It used to be stored as "stopped before the rollout finished" and logged UNAVAILABLE, which
    makes eval-protocol pay for the same answer again."""
    async with hostile_policy() as policy:
        with TracingGateway(policy.url) as gateway:
            proc, url = start_serve(
                tmp_path,
                "--grace",
                "0.3",
                "--judge",
                "--judge-base-url",
                policy.url,
                "--judge-model",
                "silent",
                env={"OPENAI_API_KEY": "judge-key"},
            )
            try:
                async with aiohttp.ClientSession() as session:
                    status, _, _ = await post_init(session, url, init_body(gateway.base_url, "answered", model="good"))
                    assert status == 200
                    async with asyncio.timeout(60):
                        while policy.requests["silent"] == 0:  # the judge was asked: answer and picture are made
                            await asyncio.sleep(0.02)
                proc.send_signal(signal.SIGTERM)
                _, err = await asyncio.to_thread(proc.communicate, timeout=60)
            finally:
                if proc.poll() is None:
                    proc.kill()
            codes = [e["status"]["code"] for e in gateway.logs("answered") if e["status"]]
    assert proc.returncode == 0
    assert codes == [StatusCode.FINISHED]
    (stopped,) = [line for line in json_lines(err) if line.get("event") == "stopped"]
    assert (stopped["finished"], stopped["stopped_unfinished"]) == (1, 0)
    with Store(tmp_path / "runs.db") as store:
        ref = TrainingStore(store).served("answered")
        assert ref is not None and ref.status_code == StatusCode.FINISHED
        rec = store.get_rollout(ref.rollout_id)
    assert rec.raw_answer and rec.svg and rec.png is not None
    assert rec.status is RolloutStatus.FAILED and rec.reason == STOPPED_JUDGING


def test_an_over_long_request_header_is_one_json_line_on_stderr(tmp_path: Path) -> None:
    """aiohttp refuses a header line over 8190 bytes (400) and logs the LineTooLong with its traceback: that used to
    reach stderr as a dozen lines of text."""
    proc, url = start_serve(tmp_path)
    try:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=30) as conn:
            conn.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Long: " + b"a" * 100_000 + b"\r\n\r\n")
            assert conn.recv(64).startswith(b"HTTP/1.0 400")
        with socket.create_connection((host, int(port)), timeout=30) as conn:  # then the server still serves
            conn.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert conn.recv(64).startswith(b"HTTP/1.1 200")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    lines = json_lines(err)
    (refused,) = [line for line in lines if line.get("logger") == "aiohttp.server"]
    assert refused["level"] == "error" and refused["error"].startswith("LineTooLong: ")
    assert "Got more than 8190 bytes" in refused["error"]
    assert [line["status"] for line in lines if line.get("path") == "/"] == [400, 200]


def test_every_record_an_exception_handler_or_a_warning_writes_is_one_json_line(tmp_path: Path) -> None:
    """What `svgagent serve` routes to its stderr handler (tui/cli/serve_log.py): another library's records, the
    event loop's exception handler, an exception a thread did not catch, a Python warning, a record whose
    arguments do not fit its format."""
    code = """
import asyncio, logging, threading, warnings
from svgagent.tui.cli.serve_log import StderrLines, configure_logging, loop_exception

configure_logging(StderrLines())
try:
    raise ValueError("first line\\nsecond line")
except ValueError:
    logging.getLogger("aiohttp.server").exception("Error handling request from %s", "127.0.0.1")
logging.getLogger("some.library").warning("careful: %s", "text")
logging.getLogger("svgagent.serve").info("own record")
logging.getLogger("svgagent.serve").warning("%d arguments", "not a number")

async def main():
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(loop_exception)
    loop.call_soon(lambda: 1 / 0)
    await asyncio.sleep(0.01)

asyncio.run(main())
thread = threading.Thread(target=lambda: [][1], name="worker")
thread.start()
thread.join()
warnings.warn("a deprecated thing", DeprecationWarning)
"""
    proc = subprocess.run([sys.executable, "-W", "always", "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = json_lines(proc.stderr)
    by_message = {line["message"]: line for line in lines}
    assert by_message["Error handling request from 127.0.0.1"]["error"] == "ValueError: first line second line"
    assert by_message["careful: text"]["logger"] == "some.library"
    assert "logger" not in by_message["own record"]
    assert any(line.get("logger") == "asyncio" and line["error"].startswith("ZeroDivisionError") for line in lines)
    assert any("worker" in line["message"] and line["error"].startswith("IndexError") for line in lines)
    assert any(line.get("logger") == "py.warnings" and "a deprecated thing" in line["message"] for line in lines)
    assert by_message["%d arguments"]["level"] == "warning"  # its format, as it could not be filled in
    assert len(lines) == 7
