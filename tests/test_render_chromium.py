"""`--renderer chromium`: headless Chromium draws the page Eval Protocol's quickstart evaluator screenshots, under
svgagent's sandbox rules (no network, no scripts, a time cap that kills, a memory cap, a size cap), from a warm
pool; a missing Chromium is one line naming the package.

Needs Debian's chromium (CI installs it, .ci/run). Skipped only where it is absent and CI is not set.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import shutil
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from PIL import Image

from svgagent.core.config.settings import load_settings
from svgagent.core.scoring.chromium import ChromiumRenderer
from svgagent.core.scoring.chromium_page import find_chromium, page_geometry, page_html
from svgagent.core.scoring.errors import ConfigError, RenderError
from svgagent.core.scoring.picture_size import OWN_SIZE
from svgagent.core.scoring.renderers import make_renderer
from svgagent.tui.cli.main import main

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("CI"),
    reason="Chromium is not installed here (apt-get install chromium); CI installs it and runs these tests",
)
NS = 'xmlns="http://www.w3.org/2000/svg"'
RED_BOX = f'<svg {NS} width="200" height="100"><rect x="0" y="0" width="100" height="50" fill="#ff0000"/></svg>'


def image(png: bytes) -> Image.Image:
    return Image.open(io.BytesIO(png)).convert("RGB")


@pytest.fixture(scope="module")
def chromium() -> Iterator[ChromiumRenderer]:
    with ChromiumRenderer(workers=2, timeout_s=60) as renderer:
        yield renderer


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


# --------------------------------------------------------------------------------------------- pictures


@needs_chromium
async def test_it_draws_the_own_size_page_and_the_longest_side(chromium: ChromiumRenderer) -> None:
    own = image(await chromium.render(RED_BOX, OWN_SIZE))
    assert own.size == (200, 100)
    assert own.getpixel((50, 25)) == (255, 0, 0)
    assert own.getpixel((150, 75)) == (255, 255, 255)  # the page is white
    scaled = image(await chromium.render(RED_BOX, 512))
    assert scaled.size == (512, 256)  # scaled, not cut: the capture's scale, the page's layout
    assert scaled.getpixel((128, 64)) == (255, 0, 0)
    assert scaled.getpixel((384, 192)) == (255, 255, 255)
    # no viewBox, a small width: the browser keeps user units as CSS px on the SVG's own page
    small = image(chromium.render_sync(f'<svg {NS} width="20" height="10"><rect width="10" height="5"/></svg>', 400))
    assert small.size == (400, 200) and small.getpixel((100, 50)) == (0, 0, 0)


@needs_chromium
async def test_text_in_the_generic_families_is_drawn(chromium: ChromiumRenderer) -> None:
    for family in ("sans-serif", "serif", "monospace"):
        svg = f'<svg {NS} width="300" height="80"><text x="10" y="55" font-size="40" font-family="{family}">START</text></svg>'
        picture = image(await chromium.render(svg, OWN_SIZE))
        inked = sum(1 for px in picture.getdata() if px[0] < 128)
        assert inked > 300, family


@needs_chromium
def test_the_page_is_the_quickstarts() -> None:
    geometry = page_geometry(RED_BOX.encode(), OWN_SIZE)
    html = page_html(RED_BOX, geometry)
    assert "background: white; width: 200px; height: 100px; overflow: hidden;" in html
    assert "svg { display: block; width: 200px !important; height: 100px !important; }" in html
    assert RED_BOX in html and geometry.scale == 1.0


# ----------------------------------------------------------------------------------------------- sandbox


class _Counter(BaseHTTPRequestHandler):
    hits: list[str] = []

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        _Counter.hits.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.end_headers()


@pytest.fixture
def listener() -> Iterator[str]:
    _Counter.hits = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Counter)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@needs_chromium
async def test_no_fetch_leaves_the_page_and_no_script_runs(
    chromium: ChromiumRenderer, listener: str, tmp_path: Path
) -> None:
    green = tmp_path / "green.png"
    Image.new("RGB", (50, 50), (0, 255, 0)).save(green)
    svg = (
        f'<svg {NS} xmlns:xlink="http://www.w3.org/1999/xlink" width="200" height="100">'
        f"<style>@import url({listener}/style.css); @font-face {{ font-family: x; src: url({listener}/font.woff); }}"
        f" text {{ font-family: x; }}</style>"
        f'<rect width="200" height="100" fill="#ff0000"/>'
        f'<image href="{listener}/image.png" x="0" y="0" width="50" height="50"/>'
        f'<image xlink:href="file://{green}" x="100" y="0" width="50" height="50"/>'
        f'<foreignObject x="0" y="60" width="50" height="40"><iframe xmlns="http://www.w3.org/1999/xhtml" '
        f'src="{listener}/frame.html"></iframe></foreignObject>'
        f'<text x="60" y="90">hi</text>'
        "<script>document.querySelector('rect').setAttribute('fill', '#0000ff')</script>"
        "</svg>"
    )
    picture = image(await chromium.render(svg, OWN_SIZE))
    await asyncio.sleep(0.2)
    assert _Counter.hits == []  # not one request reached the listener
    # and each was refused by the renderer itself (Chromium's own rules keep a data: page from loopback addresses
    # too, but the sandbox does not rest on them)
    refused = chromium.refused_urls()
    for path in ("/style.css", "/image.png", "/frame.html"):
        assert f"{listener}{path}" in refused, path
    assert not any(url.startswith("file:") for url in refused)  # file: never reaches the network layer
    assert picture.getpixel((190, 40)) == (255, 0, 0)  # the script did not run
    assert picture.getpixel((125, 25)) != (0, 255, 0)  # the local file was not read


@needs_chromium
def test_entities_are_refused_before_the_browser() -> None:
    with ChromiumRenderer(workers=1) as renderer:
        with pytest.raises(RenderError, match="entities"):
            renderer.render_sync('<!DOCTYPE svg [<!ENTITY a "aaaa">]><svg xmlns="http://www.w3.org/2000/svg">&a;</svg>')
        with pytest.raises(RenderError, match="too large"):
            renderer.render_sync(b"<svg>" + b" " * 1_000_001 + b"</svg>")
        assert renderer.worker_pids() == []  # refused in the caller: no browser was started


@needs_chromium
async def test_a_render_past_its_time_cap_is_killed_and_the_pool_recovers() -> None:
    renderer = ChromiumRenderer(workers=1, timeout_s=60)
    try:
        await renderer.render(RED_BOX, 64)
        (first,) = renderer.worker_pids()
        renderer.timeout_s = 0.001
        with pytest.raises(RenderError, match="timed out after 0.001 s"):
            await renderer.render(RED_BOX, 64)
        deadline = time.monotonic() + 10
        while not _gone(first) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert _gone(first)  # the whole browser, killed
        renderer.timeout_s = 60
        assert image(await renderer.render(RED_BOX, OWN_SIZE)).getpixel((50, 25)) == (255, 0, 0)
        assert renderer.worker_pids() and renderer.worker_pids() != [first]
    finally:
        renderer.close()


@needs_chromium
async def test_a_browser_past_its_memory_cap_is_killed() -> None:
    heavy = (
        f'<svg {NS} width="4000" height="4000"><filter id="f"><feGaussianBlur stdDeviation="60"/></filter>'
        '<g filter="url(#f)"><circle cx="2000" cy="2000" r="1500" fill="red"/></g></svg>'
    )
    with ChromiumRenderer(workers=1, timeout_s=120, memory_mb=64) as renderer:
        with pytest.raises(RenderError, match="more memory than the renderer allows \\(64 MB\\)"):
            await renderer.render(heavy, OWN_SIZE)


@needs_chromium
def test_many_callers_share_the_warm_pool_and_close_ends_every_browser() -> None:
    renderer = ChromiumRenderer(workers=2, timeout_s=60)
    results: list[bytes] = []

    async def burst() -> None:
        results.extend(await asyncio.gather(*(renderer.render(RED_BOX, 128) for _ in range(6))))

    threads = [threading.Thread(target=asyncio.run, args=(burst(),)) for _ in range(2)]  # two loops at once
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert len(results) == 12 and all(image(png).size == (128, 64) for png in results)
    pids = renderer.worker_pids()
    assert 1 <= len(pids) <= 2
    renderer.close()
    assert all(_gone(pid) for pid in pids)
    with pytest.raises(RenderError, match="closed"):
        renderer.render_sync(RED_BOX)


# ------------------------------------------------------------------------------------- choice and wiring


def test_a_missing_chromium_is_one_line_naming_the_package(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ConfigError, match=r"apt-get install chromium"):
        find_chromium()
    with pytest.raises(ConfigError, match="not an executable"):
        find_chromium(tmp_path / "no-chromium")
    with pytest.raises(ConfigError, match="apt-get install chromium"):
        make_renderer(load_settings(renderer="chromium"))
    source = tmp_path / "box.svg"
    source.write_text(RED_BOX)
    assert main(["render", str(source), "-o", str(tmp_path / "x.png"), "--renderer", "chromium"]) == 2
    assert "apt-get install chromium" in capsys.readouterr().err


@needs_chromium
def test_eval_and_render_draw_with_chromium(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = str(tmp_path / "runs.db")
    argv = ["eval", "--demo", "--rows", "2", "--store", store, "--renderer", "chromium", "--judge-profile"]
    assert main([*argv, "ep-quickstart", "--json"]) in (0, 1)
    summary = json.loads(capsys.readouterr().out)
    assert summary["invalid"] == 0 and summary["rollouts"] == 2
    assert main(["runs", "show", summary["run_id"], "--store", store, "--json"]) == 0
    run = json.loads(capsys.readouterr().out)["run"]
    assert (run["renderer"], run["judge_profile"]) == ("chromium", "ep-quickstart")
    source = tmp_path / "box.svg"
    source.write_text(RED_BOX)
    out = tmp_path / "box.png"
    assert main(["render", str(source), "-o", str(out), "--renderer", "chromium", "--own-size"]) == 0
    assert image(out.read_bytes()).size == (200, 100)
