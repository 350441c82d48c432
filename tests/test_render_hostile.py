"""Hostile SVGs through the sandboxed renderer: every case ends in time with a bounded PNG or a one-line reason,
nothing is fetched from the network, and nothing planted on disk ends up in a picture."""

from __future__ import annotations

import asyncio
import io
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from PIL import Image, ImageChops

from svgagent.core.scoring.errors import RenderError
from svgagent.core.scoring.render import Renderer, render_svg_to_png

try:
    from hostile_svgs import PLANTED_FILES, HostileCase, HostileEnv, build_corpus, case_names, plant_files
except ImportError:  # tests/ imported as a package
    from tests.hostile_svgs import PLANTED_FILES, HostileCase, HostileEnv, build_corpus, case_names, plant_files

TIMEOUT_S = 5.0
MARGIN_S = 3.0  # queueing behind a worker being replaced, process start-up, a loaded CI machine
SIZE = 512
SUITE_BUDGET_S = 60.0


class RecordingServer(ThreadingHTTPServer):
    """Loopback HTTP server that records every TCP connection (plain HTTP or a TLS attempt alike)."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _PlantedHandler)
        self.connections: list[tuple[str, int]] = []

    def process_request(self, request, client_address) -> None:
        self.connections.append(client_address)
        super().process_request(request, client_address)


class _PlantedHandler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        name = "green." + self.path.rsplit(".", 1)[-1] if "." in self.path else "color.txt"
        body = PLANTED_FILES.get(name, PLANTED_FILES["green.svg"])
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@dataclass
class Outcome:
    elapsed: float
    png: bytes | None = None
    error: str | None = None


@pytest.fixture(scope="module")
def hostile_env(tmp_path_factory):
    directory = tmp_path_factory.mktemp("planted")
    plant_files(directory)
    server = RecordingServer()
    thread = threading.Thread(target=server.serve_forever, name="hostile-http", daemon=True)
    thread.start()
    try:
        yield HostileEnv(f"http://127.0.0.1:{server.server_address[1]}", directory), server
    finally:
        server.shutdown()
        server.server_close()


async def _render_all(cases: tuple[HostileCase, ...]) -> dict[str, Outcome]:
    outcomes: dict[str, Outcome] = {}
    async with Renderer(size=SIZE, timeout_s=TIMEOUT_S) as pool:
        await pool.render("<svg/>", size=8)  # start the workers before the clocks run
        free_workers = asyncio.Semaphore(pool.workers)

        async def one(case: HostileCase) -> None:
            async with free_workers:  # so each clock measures one render, not the queue in front of it
                started = time.monotonic()
                try:
                    png = await pool.render(case.svg)
                except RenderError as err:
                    outcomes[case.name] = Outcome(time.monotonic() - started, error=str(err))
                else:
                    outcomes[case.name] = Outcome(time.monotonic() - started, png=png)

        await asyncio.gather(*(one(case) for case in cases))
    return outcomes


@pytest.fixture(scope="module")
def hostile_results(hostile_env):
    env, _server = hostile_env
    started = time.monotonic()
    outcomes = asyncio.run(_render_all(build_corpus(env)))
    return outcomes, time.monotonic() - started


def green_pixels(image: Image.Image) -> int:
    """Pixels that look like the planted #00ff00 (the hostile SVGs never draw green themselves)."""
    red, green, blue = image.convert("RGB").split()
    greenish = ImageChops.multiply(
        green.point(lambda v: 255 if v > 160 else 0), red.point(lambda v: 255 if v < 100 else 0)
    )
    greenish = ImageChops.multiply(greenish, blue.point(lambda v: 255 if v < 100 else 0))
    return greenish.histogram()[255]


def test_green_detector_sees_planted_content() -> None:
    image = Image.open(io.BytesIO(PLANTED_FILES["green.png"]))
    assert green_pixels(image) == 64 * 64
    assert green_pixels(Image.new("RGB", (8, 8), (48, 80, 192))) == 0


def test_corpus_is_big_enough() -> None:
    assert len(case_names()) >= 25


@pytest.mark.parametrize("name", case_names())
def test_hostile_case_ends_bounded_or_refused(name: str, hostile_env, hostile_results) -> None:
    env, _server = hostile_env
    case = next(case for case in build_corpus(env) if case.name == name)
    outcome = hostile_results[0][name]
    assert outcome.elapsed < TIMEOUT_S + MARGIN_S, f"took {outcome.elapsed:.1f} s"
    if outcome.error is not None:
        assert case.expect in ("error", "either"), f"refused a case that must render: {outcome.error}"
        assert outcome.error.strip()
        assert "\n" not in outcome.error
        assert len(outcome.error) < 300
        if case.reason is not None:
            assert case.reason in outcome.error
    else:
        assert case.expect in ("png", "either"), "rendered a case that must be refused"
        image = Image.open(io.BytesIO(outcome.png))
        image.load()
        assert max(image.size) == SIZE
        assert min(image.size) >= 1
        assert green_pixels(image) == 0, "planted (green) content made it into the picture"


def test_no_request_reached_the_network(hostile_env, hostile_results) -> None:
    _env, server = hostile_env
    assert server.connections == []


def test_whole_suite_within_budget(hostile_results) -> None:
    assert hostile_results[1] < SUITE_BUDGET_S


# -- the same external cases in this process, watched by an audit hook ------------------------------------------

_watch: dict[str, object] = {"active": False, "events": []}


def _audit(event: str, args: tuple) -> None:
    if not _watch["active"]:
        return
    if event in ("socket.connect", "socket.getaddrinfo", "urllib.Request", "subprocess.Popen", "os.system"):
        _watch["events"].append((event, repr(args)[:200]))
    elif event == "open" and args and isinstance(args[0], (str, bytes, Path)):
        _watch["events"].append((event, str(args[0])))


sys.addaudithook(_audit)


def test_external_cases_open_no_planted_file_and_no_socket(hostile_env) -> None:
    env, server = hostile_env
    planted = str(env.planted_dir)
    external = [case for case in build_corpus(env) if case.external]
    assert len(external) >= 15
    render_svg_to_png('<svg xmlns="http://www.w3.org/2000/svg"><text>warm</text></svg>', size=8)  # imports, fonts
    _watch["events"] = []
    _watch["active"] = True
    try:
        for case in external:
            try:
                render_svg_to_png(case.svg, size=64)
            except RenderError:
                pass
    finally:
        _watch["active"] = False
    events = _watch["events"]
    assert not [e for e in events if e[0] != "open"], events
    assert not [e for e in events if e[0] == "open" and planted in e[1]], events
    assert server.connections == []


def test_watchers_catch_an_unsafe_renderer(hostile_env) -> None:
    """Control: plain cairosvg with ``unsafe=True`` does read the planted file, and both watchers notice."""
    import cairosvg

    env, _server = hostile_env
    case = next(case for case in build_corpus(env) if case.name == "image_file_url")
    _watch["events"] = []
    _watch["active"] = True
    try:
        png = cairosvg.svg2png(bytestring=case.svg.encode(), unsafe=True, output_width=64, output_height=64)
    finally:
        _watch["active"] = False
    assert any(kind == "open" and str(env.planted_dir) in detail for kind, detail in _watch["events"])
    assert green_pixels(Image.open(io.BytesIO(png))) > 0
