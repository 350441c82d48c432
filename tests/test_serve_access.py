"""The serve command's access log (tui/cli/serve_log.StderrLines): JSON lines straight to stderr, a few at a time, and
never behind a later record."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

from svgagent.tui.cli.serve_log import FlushingHandler, JsonLines, StderrLines


async def _until_flushed(lines: StderrLines) -> None:
    while lines._timer is not None:  # the loop runs the due flush (FLUSH_S = 0: at its next turn)
        await asyncio.sleep(0)


async def test_access_lines_on_a_loop_are_written_together_in_order_once_due(
    capsys: pytest.CaptureFixture[str],
) -> None:
    lines = StderrLines()
    lines.FLUSH_S = 0.0
    lines.info('{"path": "/init", "n": 1}')
    lines.info('{"path": "/init", "n": 2}')
    assert capsys.readouterr().err == ""  # queued: one write for both, later
    await _until_flushed(lines)
    assert [json.loads(x)["n"] for x in capsys.readouterr().err.splitlines()] == [1, 2]
    lines.info('{"n": 3}')  # after a flush, the next line gets a timer of its own
    await _until_flushed(lines)
    assert capsys.readouterr().err == '{"n": 3}\n'


async def test_another_record_on_stderr_comes_after_the_access_lines_before_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    lines = StderrLines()
    handler = FlushingHandler(lines)
    handler.setFormatter(JsonLines())
    logger = logging.getLogger("svgagent.test.serve-access")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        lines.info('{"path": "/init"}')
        logger.warning("could not log the status")
        err = capsys.readouterr().err.splitlines()
    finally:
        logger.removeHandler(handler)
    assert json.loads(err[0]) == {"path": "/init"}
    assert json.loads(err[1])["message"] == "could not log the status"
    assert len(err) == 2
    assert lines._lines == []


def test_access_lines_off_a_loop_and_past_the_cap_are_written_at_once(capsys: pytest.CaptureFixture[str]) -> None:
    lines = StderrLines()
    lines.info('{"n": 0}')  # no event loop would flush it later
    assert capsys.readouterr().err == '{"n": 0}\n'

    async def many() -> None:
        for i in range(lines.MAX_LINES):
            lines.info(json.dumps({"n": i}))

    asyncio.run(many())
    assert len(capsys.readouterr().err.splitlines()) == lines.MAX_LINES
    assert lines.isEnabledFor(logging.INFO)


def test_a_flush_on_another_thread_while_a_line_is_appended_loses_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    """A record logged on another thread flushes the queue there (FlushingHandler): if that happens between the
    loop's `info` reading the queue and appending to it, the line must still be written, once, after the earlier
    ones. The queue below hands the CPU to such a flush at exactly that moment (and waits for it at most 0.3 s)."""
    import threading

    lines = StderrLines()
    lines.info('{"n": 1}')  # off a loop: written at once
    flusher: list[threading.Thread] = []

    class Preempted(list):  # type: ignore[type-arg]
        def append(self, item: str) -> None:
            flusher.append(threading.Thread(target=lines.flush))
            flusher[0].start()
            flusher[0].join(0.3)  # unguarded, the other thread swaps the queue and writes it without this line
            super().append(item)

    lines._lines = Preempted(['{"n": 2}'])
    lines.info('{"n": 3}')
    flusher[0].join(10)
    lines.flush()
    assert [json.loads(x)["n"] for x in capsys.readouterr().err.splitlines()] == [1, 2, 3]
