"""The SVG renderer: sizing, colours, input checks, and the worker pool's timeout/crash/memory/cancel handling."""

from __future__ import annotations

import asyncio
import base64
import gzip
import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from PIL import Image

from svgagent.core.scoring import render as render_module
from svgagent.core.scoring.errors import RenderError
from svgagent.core.scoring.render import Renderer, WorkerProcess, render_svg_to_png
from svgagent.core.scoring.render_worker import fit_longest_side, intrinsic_size

NS = 'xmlns="http://www.w3.org/2000/svg"'
RED_RECT_LEFT_HALF = f'<svg {NS} width="100" height="100"><rect width="50" height="100" fill="#ff0000"/></svg>'
# Slow for cairosvg (its path parser is quadratic): seconds of work in well under the 1 MB cap.
SLOW_SVG = (
    f'<svg {NS} width="100" height="100"><path d="M0 0 '
    + " ".join(f"L{i % 100} {(i * 7) % 100}" for i in range(60_000))
    + '" stroke="#000"/></svg>'
)
# A render that keeps a worker busy (≈0.2 s here) while a second caller waits (the tests shorten GROW_AFTER_S).
BUSY_SVG = SLOW_SVG[: SLOW_SVG.index(" ", 100_000)] + '" stroke="#000"/></svg>'


def image_of(png: bytes) -> Image.Image:
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    image = Image.open(io.BytesIO(png))
    image.load()
    return image.convert("RGB")


def solid_svg(colour: str, width: int = 10, height: int = 10) -> str:
    return f'<svg {NS} width="{width}" height="{height}"><rect width="100%" height="100%" fill="{colour}"/></svg>'


def png_data_url(colour: tuple[int, int, int], side: int = 8) -> str:
    buffer = io.BytesIO()
    Image.new("RGB", (side, side), colour).save(buffer, "PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


@pytest.fixture(scope="module")
def renderer():
    with Renderer(timeout_s=10) as pool:
        yield pool


# ------------------------------------------------------------------------------------------------ sizing


@pytest.mark.parametrize(
    ("attrs", "expected"),
    [
        ('width="10" height="10"', (512, 512)),
        ('width="5000" height="3000"', (512, 307)),
        ('width="3000" height="5000"', (307, 512)),
        ('viewBox="0 0 300 150"', (512, 256)),
        ('viewBox="-50 -50 100 400"', (128, 512)),
        ('height="100" viewBox="0 0 400 100"', (512, 128)),
        ('width="100%" height="100%" viewBox="0 0 200 100"', (512, 256)),
        ('width="2in" height="1in"', (512, 256)),
        ("", (512, 512)),
        ('width="1000000" height="1000000"', (512, 512)),
        ('width="1000000" height="1"', (512, 1)),
    ],
)
def test_longest_side_is_the_requested_size(attrs: str, expected: tuple[int, int]) -> None:
    png = render_svg_to_png(f'<svg {NS} {attrs}><circle cx="5" cy="5" r="4"/></svg>')
    assert image_of(png).size == expected


def test_size_argument_and_small_images_scale_up() -> None:
    assert image_of(render_svg_to_png(solid_svg("#ff0000", 3, 2), size=128)).size == (128, 85)
    image = image_of(render_svg_to_png(solid_svg("#ff0000", 10, 10)))
    assert image.size == (512, 512)
    assert image.getpixel((0, 0)) == image.getpixel((511, 511)) == (255, 0, 0)


def test_intrinsic_size_rules() -> None:
    assert intrinsic_size(None, None, None) == (100.0, 100.0)
    assert intrinsic_size("50", None, None) == (50.0, 50.0)
    assert intrinsic_size("50%", "20", "0 0 10 40") == (5.0, 20.0)
    assert intrinsic_size("72pt", "1in", None) == (96.0, 96.0)
    assert fit_longest_side(1e6, 1.0, 512) == (512, 1)
    assert fit_longest_side(10, 10, 512) == (512, 512)


@pytest.mark.parametrize(
    ("attrs", "reason"),
    [
        ('width="-5" height="10"', "width is negative"),
        ('width="10" height="0"', "height is zero"),
        ('viewBox="0 0 0 10"', "viewBox"),
        ('viewBox="0 0 10"', "viewBox"),
        ('width="1e999" height="1"', "finite"),
    ],
)
def test_invalid_sizes_are_refused_with_a_reason(attrs: str, reason: str) -> None:
    with pytest.raises(RenderError, match=reason):
        render_svg_to_png(f"<svg {NS} {attrs}/>")


# ------------------------------------------------------------------------------------------------ colours


def test_white_background_and_red_rect_in_process() -> None:
    image = image_of(render_svg_to_png(RED_RECT_LEFT_HALF))
    assert image.getpixel((100, 256)) == (255, 0, 0)
    assert image.getpixel((400, 256)) == (255, 255, 255)  # transparent area comes out white


async def test_white_background_and_red_rect_through_the_pool(renderer: Renderer) -> None:
    image = image_of(await renderer.render(RED_RECT_LEFT_HALF))
    assert image.size == (512, 512)
    assert image.getpixel((10, 10)) == (255, 0, 0)
    assert image.getpixel((500, 500)) == (255, 255, 255)
    assert image_of(renderer.render_sync(RED_RECT_LEFT_HALF, size=64)).size == (64, 64)


def test_semi_transparent_fill_is_blended_on_white() -> None:
    image = image_of(
        render_svg_to_png(
            f'<svg {NS} width="4" height="4"><rect width="4" height="4" fill="#0000ff" fill-opacity="0.5"/></svg>'
        )
    )
    red, green, blue = image.getpixel((256, 256))
    assert blue == 255
    assert 120 <= red <= 135
    assert 120 <= green <= 135


def test_inline_data_images_are_allowed() -> None:
    raster = f'<image href="{png_data_url((255, 0, 0))}" width="100" height="100"/>'
    nested = base64.b64encode(solid_svg("#0000ff").encode()).decode()
    vector = f'<image href="data:image/svg+xml;base64,{nested}" x="100" width="100" height="100"/>'
    image = image_of(render_svg_to_png(f'<svg {NS} width="200" height="100">{raster}{vector}</svg>'))
    assert image.getpixel((128, 128)) == (255, 0, 0)
    assert image.getpixel((384, 128)) == (0, 0, 255)


def test_missing_or_empty_hrefs_draw_nothing_instead_of_failing() -> None:
    body = '<image width="50" height="50"/><image href="" width="50" height="50"/><use/>'
    image = image_of(
        render_svg_to_png(
            f'<svg {NS} width="100" height="100">{body}<rect x="50" width="50" height="100" fill="#ff0000"/></svg>'
        )
    )
    assert image.getpixel((100, 256)) == (255, 255, 255)
    assert image.getpixel((400, 256)) == (255, 0, 0)
    with pytest.raises(RenderError, match="external reference refused"):
        render_svg_to_png(f'<svg {NS}><image href="picture.png" width="5" height="5"/></svg>')


# ------------------------------------------------------------------------------------------------ input checks


def test_input_checks() -> None:
    with pytest.raises(RenderError, match=r"^SVG too large: 1000001 bytes \(limit 1000000\)$"):
        render_svg_to_png(b" " * 1_000_001)
    with pytest.raises(RenderError, match=r"^SVG too large: 101 bytes \(limit 100\)$"):
        render_svg_to_png("x" * 101, max_bytes=100)
    with pytest.raises(RenderError, match="not valid UTF-8"):
        render_svg_to_png(b"<svg>\xff</svg>")
    with pytest.raises(RenderError, match="cannot be encoded as UTF-8"):
        render_svg_to_png("<svg>\ud800</svg>")
    with pytest.raises(RenderError, match="not an SVG document: root element is <html>"):
        render_svg_to_png("<html/>")
    with pytest.raises(RenderError, match="empty"):
        render_svg_to_png(b"")
    with pytest.raises(RenderError, match="must be str or bytes"):
        render_svg_to_png(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        render_svg_to_png(solid_svg("#000"), size=-1)  # (0 is OWN_SIZE: the page the SVG sizes itself)


def test_gzip_input_is_decompressed_with_a_cap() -> None:
    image = image_of(render_svg_to_png(gzip.compress(solid_svg("#ff0000").encode())))
    assert image.getpixel((5, 5)) == (255, 0, 0)
    with pytest.raises(RenderError, match="expands beyond the limit of 1000 bytes"):
        render_svg_to_png(gzip.compress(b"<svg>" + b" " * 5000 + b"</svg>"), max_bytes=1000)


def test_pool_checks_size_before_sending(renderer: Renderer) -> None:
    with pytest.raises(RenderError, match=r"^SVG too large: 1000001 bytes \(limit 1000000\)$"):
        renderer.render_sync(b"<" * 1_000_001)


# ------------------------------------------------------------------------------------------------ the pool


def test_the_pool_is_sized_to_the_cpus_this_process_may_use(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(render_module.os, "cpu_count", lambda: 8)
    monkeypatch.setattr(render_module.os, "sched_getaffinity", lambda pid: {3}, raising=False)
    assert render_module.usable_cpus() == 1  # confined to one core (taskset, a cpuset): one worker, not eight
    assert Renderer().workers == 1
    monkeypatch.setattr(render_module.os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    assert Renderer().workers == 3
    assert Renderer(workers=5).workers == 5  # a size asked for is kept

    def no_affinity(pid: int) -> set[int]:
        raise OSError("not supported")

    monkeypatch.setattr(render_module.os, "sched_getaffinity", no_affinity, raising=False)
    assert render_module.usable_cpus() == 8


async def test_workers_start_lazily_and_stop_on_close(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(render_module, "GROW_AFTER_S", 0.02)  # BUSY_SVG keeps a worker busy ten times that
    pool = Renderer(workers=2)
    assert pool.worker_pids() == []
    await pool.render(solid_svg("#000"), size=16)
    assert len(pool.worker_pids()) == 1  # renders one at a time: one worker
    await asyncio.gather(*(pool.render(BUSY_SVG, size=16) for _ in range(2)))
    pids = pool.worker_pids()
    assert len(pids) == 2
    pool.close()
    assert pool.worker_pids() == []
    for pid in pids:
        assert not os.path.exists(f"/proc/{pid}") or _is_zombie_free(pid)
    with pytest.raises(RenderError, match="closed"):
        await pool.render(solid_svg("#000"))
    with pytest.raises(RenderError, match="closed"):
        pool.render_sync(solid_svg("#000"))


def _is_zombie_free(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"
    except FileNotFoundError:
        return True


async def test_many_concurrent_callers_get_their_own_results(renderer: Renderer) -> None:
    colours = [(i * 37 % 256, i * 91 % 256, i * 53 % 256) for i in range(60)]
    svgs = [solid_svg("#%02x%02x%02x" % colour) for colour in colours]
    pngs = await asyncio.gather(*(renderer.render(svg, size=32) for svg in svgs))
    assert [image_of(png).getpixel((16, 16)) for png in pngs] == colours


async def test_render_does_not_block_the_event_loop() -> None:
    """While a render takes its whole timeout (the worker is stopped, so it cannot finish sooner on a fast
    machine), the caller's loop keeps ticking."""
    import signal

    async with Renderer(workers=1, timeout_s=1.0) as pool:
        await pool.render(solid_svg("#000"), size=16)
        (worker,) = pool.worker_pids()
        os.kill(worker, signal.SIGSTOP)  # the pool kills it at the timeout (SIGKILL ends a stopped process too)
        longest_gap = 0.0

        async def ticker() -> None:
            nonlocal longest_gap
            last = time.monotonic()
            while True:
                await asyncio.sleep(0.01)
                now = time.monotonic()
                longest_gap, last = max(longest_gap, now - last), now

        ticking = asyncio.create_task(ticker())
        started = time.monotonic()
        with pytest.raises(RenderError, match="timed out"):
            await pool.render(SLOW_SVG)
        assert time.monotonic() - started >= 0.9
        ticking.cancel()
        assert longest_gap < 0.5  # a blocked loop would stall for the whole 1 s render


async def test_timeout_kills_and_replaces_the_worker() -> None:
    async with Renderer(workers=1, timeout_s=0.05) as pool:
        await pool.render(solid_svg("#000"), size=16)
        (old_pid,) = pool.worker_pids()
        started = time.monotonic()
        with pytest.raises(RenderError, match=r"^render timed out after 0\.05 s$"):
            await pool.render(SLOW_SVG)
        assert time.monotonic() - started < 2
        assert not _alive(old_pid)
        image = image_of(await pool.render(solid_svg("#ff0000"), size=16))
        assert image.getpixel((8, 8)) == (255, 0, 0)
        assert pool.worker_pids() != [old_pid]


def _alive(pid: int) -> bool:
    return os.path.exists(f"/proc/{pid}") and _is_zombie_free(pid)


async def test_a_crashed_worker_is_reported_and_replaced() -> None:
    async with Renderer(workers=1, timeout_s=20) as pool:
        await pool.render(solid_svg("#000"), size=16)
        (pid,) = pool.worker_pids()
        idle_cpu = _cpu_ticks(pid)
        render = asyncio.create_task(pool.render(SLOW_SVG))
        deadline = time.monotonic() + 10
        while _cpu_ticks(pid) < idle_cpu + 5 and time.monotonic() < deadline:  # until it is busy rendering
            await asyncio.sleep(0.02)
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(RenderError, match=r"^renderer crashed \(exit code -9, SIGKILL\)$"):
            await render
        image = image_of(await pool.render(solid_svg("#00ff00"), size=16))
        assert image.getpixel((8, 8)) == (0, 255, 0)


def _cpu_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def test_memory_limit_becomes_a_reason() -> None:
    with Renderer(workers=1, memory_mb=200) as pool:
        # a 12000 px square needs 576 MB of pixels: far over the 200 MB address-space limit
        with pytest.raises(RenderError, match="memory"):
            pool.render_sync(solid_svg("#000"), size=12_000)
        image = image_of(pool.render_sync(solid_svg("#ff0000"), size=64))
        assert image.getpixel((8, 8)) == (255, 0, 0)


async def test_cancelled_callers_leave_the_pool_healthy() -> None:
    medium = (
        f'<svg {NS} width="100" height="100">'
        + "".join(f'<circle cx="{i % 100}" cy="{i // 100}" r="3" fill="#000"/>' for i in range(3000))
        + "</svg>"
    )
    async with Renderer(workers=1, timeout_s=10) as pool:
        tasks = [asyncio.create_task(pool.render(medium)) for _ in range(4)]
        await asyncio.sleep(0.05)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for colour in ((255, 0, 0), (0, 0, 255)):
            png = await asyncio.wait_for(pool.render(solid_svg("#%02x%02x%02x" % colour), size=16), 15)
            assert image_of(png).getpixel((8, 8)) == colour


async def test_booted_workers_render_on_the_event_loop_without_a_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """Once a worker has booted, an async render is written and read by the event loop (no thread hand-off per
    render): the blocking path (WorkerProcess.render, in the pool's threads) is only for booting and restarts."""
    blocking: list[int] = []
    real = WorkerProcess.render

    def counted(self: WorkerProcess, *args: object) -> bytes:
        blocking.append(1)
        return real(self, *args)

    monkeypatch.setattr(WorkerProcess, "render", counted)
    async with Renderer(workers=2, timeout_s=10) as pool:
        await asyncio.gather(*[pool.render(solid_svg("#000"), size=8) for _ in range(2)])
        colours = [(i * 9 % 256, 40, 200) for i in range(24)]
        pngs = await asyncio.gather(*[pool.render(solid_svg("#%02x%02x%02x" % c), size=8) for c in colours])
        assert [image_of(png).getpixel((4, 4)) for png in pngs] == colours
        assert len(blocking) == len(pool.worker_pids()) <= 2  # one per worker: its first render, while it booted


async def test_closing_the_pool_ends_the_renders_it_drives() -> None:
    async with Renderer(workers=1, timeout_s=20) as pool:
        await pool.render(solid_svg("#000"), size=16)
        tasks = [asyncio.create_task(pool.render(SLOW_SVG)) for _ in range(3)]
        await asyncio.sleep(0.2)
        pool.close()  # on the loop's own thread, as the engine's aclose does
        results = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 10)
        assert all(isinstance(r, RenderError) and "closed" in str(r) for r in results), results
        assert pool.worker_pids() == []


async def test_throughput_of_simple_renders(renderer: Renderer) -> None:
    svgs = [solid_svg("#%06x" % (i * 2654435761 % 0xFFFFFF), 20, 10) for i in range(200)]
    await renderer.render(svgs[0])
    started = time.monotonic()
    pngs = await asyncio.gather(*(renderer.render(svg) for svg in svgs))
    assert all(image_of(png).size == (512, 256) for png in pngs[:5])
    assert time.monotonic() - started < 10


def test_workers_do_not_inherit_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FIREWORKS_API_KEY", "fw-secret-for-render-test")
    with Renderer(workers=1) as pool:
        pool.render_sync(solid_svg("#000"), size=16)
        (pid,) = pool.worker_pids()
        with open(f"/proc/{pid}/environ", "rb") as environ:
            assert b"fw-secret-for-render-test" not in environ.read()


def test_importing_the_renderer_is_cheap() -> None:
    code = "import sys, svgagent.core.scoring.render; print('cairosvg' in sys.modules, 'PIL' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.split() == ["False", "False"], result.stderr


def test_start_boots_the_first_worker_before_the_first_render() -> None:
    """The engine starts the pool as a run begins, so the first worker's start-up overlaps the first policy calls."""
    with Renderer(workers=2) as pool:
        assert pool.worker_pids() == []
        pool.start()
        first = pool.worker_pids()
        assert len(first) == 1
        pool.start()  # idempotent
        assert pool.render_sync(RED_RECT_LEFT_HALF).startswith(b"\x89PNG")
        assert pool.worker_pids() == first  # the render used the worker already started


async def test_more_workers_start_only_when_renders_queue(monkeypatch: pytest.MonkeyPatch) -> None:
    """Renders that wait for the first worker's boot, or come one after another, never start a second interpreter;
    renders that wait GROW_AFTER_S for a busy worker do, and every caller gets its own picture."""
    # A boot of at least 1 s, a growth delay well under it but well over what three tiny renders queued behind each
    # other take on a loaded machine: only a wait for the boot counted as a wait for renders grows the pool here.
    boot = render_module._WORKER_BOOT
    monkeypatch.setattr(render_module, "_WORKER_BOOT", "import time; time.sleep(1.0); " + boot)
    monkeypatch.setattr(render_module, "GROW_AFTER_S", 0.4)
    async with Renderer(workers=2, timeout_s=30) as pool:
        pool.start()
        colours = [(i * 40, 90, 200) for i in range(3)]
        pngs = await asyncio.gather(*(pool.render(solid_svg("#%02x%02x%02x" % c), size=8) for c in colours))
        for colour in ("#000", "#fff", "#f00"):
            await pool.render(solid_svg(colour), size=8)
        assert len(pool.worker_pids()) == 1
        while pool._grow_pending:  # the growth check the boot's wait scheduled, 0.4 s out: let it find no waiter
            await asyncio.sleep(0.05)
        monkeypatch.setattr(render_module, "_WORKER_BOOT", boot)
        monkeypatch.setattr(render_module, "GROW_AFTER_S", 0.02)  # BUSY_SVG keeps a worker busy ten times that
        results = await asyncio.gather(
            pool.render(BUSY_SVG, size=16),
            pool.render(BUSY_SVG, size=16),
            *(pool.render(solid_svg("#%02x%02x%02x" % c), size=8) for c in colours),
        )
        assert len(pool.worker_pids()) == 2
        assert [image_of(png).getpixel((4, 4)) for png in [*pngs, *results[2:]]] == colours * 2


def test_blocking_callers_that_wait_start_another_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same from threads (render_sync): a caller that waited GROW_AFTER_S for a busy worker starts another."""
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setattr(render_module, "GROW_AFTER_S", 0.02)  # BUSY_SVG keeps a worker busy ten times that

    with Renderer(workers=2, timeout_s=30) as pool, ThreadPoolExecutor(2) as threads:
        pool.render_sync(solid_svg("#000"), size=8)
        assert len(pool.worker_pids()) == 1
        pngs = list(threads.map(lambda svg: pool.render_sync(svg, size=16), [BUSY_SVG, BUSY_SVG]))
        assert all(png.startswith(b"\x89PNG") for png in pngs)
        assert len(pool.worker_pids()) == 2


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
async def test_a_worker_reuses_its_buffers_between_renders() -> None:
    """A render's big buffers (the surface, the PNG's rows) come from the worker's heap and stay there
    (render.WORKER_MALLOC): a fresh mapping for each was ~1,000 page faults, ≈1.5 ms of CPU per render."""
    from svgagent.core.scoring.render import WORKER_MALLOC, worker_environment

    def minor_faults(pid: int) -> int:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[7])

    assert WORKER_MALLOC.items() <= worker_environment().items()
    async with Renderer(workers=1) as pool:
        for _ in range(3):
            await pool.render(solid_svg("#3366cc", 100, 100), size=512)
        (pid,) = pool.worker_pids()
        before = minor_faults(pid)
        for _ in range(20):
            await pool.render(solid_svg("#3366cc", 100, 100), size=512)
        assert (minor_faults(pid) - before) / 20 < 50  # without: ≈1,000 a render
