"""Test harness for the settings widgets: tiny apps that mount one widget with a Footer, screen helpers, and fake
key endpoints served on 127.0.0.1.

Each app records the messages its widget posts (``app.messages``) and keeps input cursors still so screenshots are
deterministic. The widgets get their files from the constructor (tests point them into tmp dirs).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from textual.app import App, ComposeResult
from textual.message import Message
from textual.widgets import Footer, Input

from svgagent.core.config.settings import Settings
from svgagent.tui.palette_commands import ScreenCommands
from svgagent.tui.widgets.config_form import ConfigForm, FocusHome
from svgagent.tui.widgets.secrets_form import SecretsPane


class _Harness(App[None]):
    COMMANDS = {ScreenCommands}

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[Message] = []
        self.notes: list[tuple[str, str]] = []  # (title, message) of every notification

    def notify(self, message: str, *, title: str = "", **kwargs: Any) -> None:
        self.notes.append((title, message))
        super().notify(message, title=title, **kwargs)

    def on_mount(self) -> None:
        self._still_cursors()

    def _still_cursors(self) -> None:
        for widget in self.query(Input):
            widget.cursor_blink = False

    def on_focus_home(self, message: FocusHome) -> None:
        self.messages.append(message)


class ConfigFormApp(_Harness):
    def __init__(self, settings: Settings, save_path: Path | None = None) -> None:
        super().__init__()
        self.settings = settings
        self.save_path = save_path

    def compose(self) -> ComposeResult:
        yield ConfigForm(self.settings, save_path=self.save_path, id="config")
        yield Footer()

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one("#field-model", Input).focus()

    def on_config_form_changed(self, message: ConfigForm.Changed) -> None:
        self.messages.append(message)

    def on_config_form_saved(self, message: ConfigForm.Saved) -> None:
        self.messages.append(message)


class SecretsPaneApp(_Harness):
    def __init__(self, env_file: Path, **urls: str | None) -> None:
        super().__init__()
        self.env_file = env_file
        self.urls = urls

    def compose(self) -> ComposeResult:
        yield SecretsPane(self.env_file, id="secrets", **self.urls)  # type: ignore[arg-type]
        yield Footer()

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one("#secrets-table").focus()

    def on_secrets_pane_saved(self, message: SecretsPane.Saved) -> None:
        self.messages.append(message)


def screen_text(app: App[object]) -> str:
    """The current screen as plain text, one line per terminal row (what a screenshot shows, without styles), read
    from Textual's SVG screenshot: each run of text in it is placed at its row (its clip path) and its column (its
    x over the width of a cell)."""
    import html
    import re

    from rich.cells import cell_len

    runs = [
        (int(row), float(x), html.unescape(text).replace("\xa0", " "), float(length))
        for x, length, row, text in re.findall(
            r'<text [^>]*?x="([\d.]+)" y="[\d.]+" textLength="([\d.]+)" clip-path="url\(#[\w-]+-line-(\d+)\)">([^<]*)</text>',
            app.export_screenshot(),
        )
    ]
    cell = next((length / cell_len(text) for _, _, text, length in runs if text.strip()), 1.0)
    lines = [""] * app.size.height
    for row, x, text, _ in sorted(runs):
        if text == "\n" or row >= len(lines):
            continue
        column = round(x / cell)
        lines[row] += " " * (column - cell_len(lines[row])) + text
    return "\n".join(line.rstrip() for line in lines) + "\n"


async def wait_until(pilot: Any, predicate: Callable[[], object], attempts: int = 200) -> None:
    """Let the app run until ``predicate()`` holds (for results that arrive on a timer, like palette hits)."""
    for _ in range(attempts):
        if predicate():
            return
        await pilot.pause(0.02)
    raise AssertionError("condition not reached")


def palette_hits(app: App[object]) -> list[str]:
    """The prompts the open command palette lists, top first (empty when it is not open)."""
    from textual.command import CommandList

    lists = app.screen.query(CommandList)
    if not lists:
        return []
    options = lists.first().options
    return [str(getattr(option.prompt, "plain", option.prompt)) for option in options]


# --- fake key endpoints (127.0.0.1, random port) -------------------------------------------------------------------

GOOD_OPENAI = "oa-good-openai-key-0000000001"
GOOD_FIREWORKS = "fw_good-fireworks-key-000000002"
FAKE_ACCOUNT = "acct-local-123"


@dataclass
class FakeKeyServer:
    """``/v1/models`` (OpenAI-like: both good keys pass, others get 401), ``/broken/models`` (500),
    ``/slow/models`` (answers after 2 s) and ``/verifyApiKey`` (Fireworks-like, account id in a header)."""

    url: str
    hits: dict[str, int] = field(default_factory=dict)


@asynccontextmanager
async def fake_key_server() -> AsyncIterator[FakeKeyServer]:
    import asyncio

    from aiohttp import web

    server = FakeKeyServer("")

    def bearer(request: web.Request) -> str:
        return request.headers.get("Authorization", "").removeprefix("Bearer ")

    def count(name: str) -> None:
        server.hits[name] = server.hits.get(name, 0) + 1

    async def models(request: web.Request) -> web.Response:
        count("models")
        if bearer(request) not in (GOOD_OPENAI, GOOD_FIREWORKS):
            body = {"error": {"message": f"Incorrect API key provided: {bearer(request)}", "type": "invalid_key"}}
            return web.json_response(body, status=401)
        return web.json_response(
            {"object": "list", "data": [{"id": "judge-1", "object": "model", "created": 0, "owned_by": "me"}]}
        )

    async def broken(request: web.Request) -> web.Response:
        count("broken")
        return web.json_response(
            {"error": {"message": f"boom for {bearer(request)}"}}, status=500, headers={"retry-after-ms": "5"}
        )

    async def slow(request: web.Request) -> web.Response:
        await asyncio.sleep(2)
        return web.json_response({"object": "list", "data": []})

    async def verify(request: web.Request) -> web.Response:
        count("verify")
        if bearer(request) != GOOD_FIREWORKS:
            return web.json_response({"error": "unauthorized"}, status=401)
        return web.json_response({}, headers={"x-fireworks-account-id": FAKE_ACCOUNT})

    app = web.Application()
    app.router.add_get("/v1/models", models)
    app.router.add_get("/broken/models", broken)
    app.router.add_get("/slow/models", slow)
    app.router.add_get("/verifyApiKey", verify)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    server.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    try:
        yield server
    finally:
        await runner.cleanup()


def closed_port_url() -> str:
    """A local URL nothing listens on."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"
