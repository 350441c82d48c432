"""The event loop's reader on a render worker's stdout is kept between the renders that loop drives
(core/scoring/render.py: registering and removing it per render was ~9 system calls), and removed before anything
closes the worker's pipes: a restart, a thread's render, another event loop, the pool's close."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from typing import Any

import pytest
from test_render import image_of, solid_svg

from svgagent.core.scoring.render import Renderer


def _colour(i: int) -> tuple[int, int, int]:
    return (i * 37 % 256, 90, 200 - i)


def _svg(i: int) -> str:
    return solid_svg("#%02x%02x%02x" % _colour(i))


@pytest.fixture
async def added(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[list[int]]:
    """The descriptors the running loop is asked to watch for reading (asyncio's loop, whose methods can be
    wrapped)."""
    calls: list[int] = []
    loop = asyncio.get_running_loop()
    real = loop.add_reader

    def counting(fd: int, callback: object, *args: object) -> None:
        calls.append(fd)
        real(fd, callback, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(loop, "add_reader", counting)
    yield calls


async def _pixel(pool: Renderer, i: int) -> tuple[int, int, int]:
    return image_of(await pool.render(_svg(i), size=16)).getpixel((8, 8))


async def test_one_reader_per_worker_serves_every_render_its_loop_drives(added: list[int]) -> None:
    async with Renderer(workers=1, timeout_s=20) as pool:
        assert [await _pixel(pool, i) for i in range(7)] == [_colour(i) for i in range(7)]
    assert len(added) == 1  # the first render boots the worker in a thread; the six after it share one reader


async def test_an_idle_worker_that_died_is_replaced_and_the_reader_follows_its_new_pipe(added: list[int]) -> None:
    loop = asyncio.get_running_loop()
    async with Renderer(workers=1, timeout_s=20) as pool:
        await _pixel(pool, 0)
        await _pixel(pool, 1)
        (worker,) = pool._all
        dead = worker.pid
        os.kill(dead, signal.SIGKILL)  # type: ignore[arg-type]
        await asyncio.sleep(0.2)  # (the loop may or may not see the end of the pipe first: either way)
        assert [await _pixel(pool, i) for i in range(2, 5)] == [_colour(i) for i in range(2, 5)]
        assert worker.pid != dead and worker._proc is not None and worker._watch_loop is loop
        assert worker._watch_fd == worker._proc.stdout.fileno()  # (the number may be the dead one's, closed first)
    assert len(added) == 2  # one reader for the dead worker's pipe, one for its replacement's


async def test_a_threads_render_on_a_watched_worker_is_read_by_the_thread(added: list[int]) -> None:
    async with Renderer(workers=1, timeout_s=20) as pool:
        await _pixel(pool, 0)
        await _pixel(pool, 1)
        for i in range(2, 5):  # the loop's reader sees the reply arrive and steps aside: it does not read it
            png = await asyncio.to_thread(pool.render_sync, _svg(i), 16)
            assert image_of(png).getpixel((8, 8)) == _colour(i)
            assert await _pixel(pool, i + 10) == _colour(i + 10)


def test_a_pool_serves_one_event_loop_after_another() -> None:
    with Renderer(workers=1, timeout_s=20) as pool:
        for first in (0, 10, 20):  # each asyncio.run closes its loop, and that loop's readers with it
            assert asyncio.run(_three(pool, first)) == [_colour(i) for i in range(first, first + 3)]


async def _three(pool: Renderer, first: int) -> list[tuple[int, int, int]]:
    return [await _pixel(pool, i) for i in range(first, first + 3)]


async def _one_worker_that_rendered_twice() -> tuple[Renderer, Any, int, Any]:
    """A pool of one worker whose output pipe's reader is registered on this loop: pool, worker, fd, process."""
    pool = Renderer(workers=1, timeout_s=20)
    await _pixel(pool, 0)
    await _pixel(pool, 1)
    (worker,) = pool._all
    return pool, worker, worker._watch_fd, worker._proc


async def test_closing_the_pool_removes_the_reader_before_it_closes_the_pipe() -> None:
    loop = asyncio.get_running_loop()
    pool, worker, fd, proc = await _one_worker_that_rendered_twice()
    assert proc is not None and worker._watch_loop is loop
    pool.close()  # on the loop's own thread
    assert proc.stdout.closed and loop.remove_reader(fd) is False


async def test_closing_the_pool_from_another_thread_leaves_the_pipe_to_the_loop() -> None:
    loop = asyncio.get_running_loop()
    pool, _worker, fd, proc = await _one_worker_that_rendered_twice()
    await asyncio.to_thread(pool.close)  # the pipe is closed by the loop, once its reader is gone
    await asyncio.sleep(0)
    assert proc is not None and proc.stdout.closed and loop.remove_reader(fd) is False
