"""Helpers for the TUI tests: a deterministic app over a test store, and small waiting/reading utilities."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual import events
from textual.driver import Driver
from textual.drivers.headless_driver import HeadlessDriver
from textual.keys import KEY_NAME_REPLACEMENTS
from textual.pilot import Pilot
from textual.worker import WorkerCancelled

from svgagent.core.config.settings import Settings, load_settings
from svgagent.core.store.run_store import Store
from svgagent.tui.app import SvgAgentApp
from svgagent.tui.imaging import configure_term_image
from svgagent.tui.widgets.preview import Preview
from svgagent.tui.widgets.rollout_table import RolloutTable

FIXED_CLOCK = 1000.0

configure_term_image()  # test setup: no terminal queries, fixed cell ratio (cmd_tui does the same)


def settings_for(store_path: Path, **extra: Any) -> Settings:
    values: dict[str, Any] = {"fireworks_api_key": "fw-test-key", "openai_api_key": "sk-test-key"}
    values.update(extra)
    return load_settings(store=str(store_path), **values)


def make_app(
    store: Store, *, run_id: str | None = None, demo: bool = False, settings: Settings | None = None, **kwargs: Any
) -> SvgAgentApp:
    if "job_source" not in kwargs:  # the Jobs pane must never reach Fireworks from a test: an empty account
        from job_fakes import NOW, fake_source

        kwargs["job_source"] = fake_source([])
        kwargs.setdefault("wall_clock", lambda: NOW)
    app = SvgAgentApp(
        settings=settings or settings_for(store.path),
        store=store,
        demo=demo,
        run_id=run_id,
        env_file=Path.cwd() / ".env",
        clock=kwargs.pop("clock", lambda: FIXED_CLOCK),
        cursor_blink=False,  # a blinking cursor makes a snapshot depend on when it was taken
        **kwargs,
    )
    app.animation_level = "none"  # deterministic and fast: no tab underline or scroll animations
    return app


def terminal_driver(on_frame: Callable[[str], object]) -> type[Driver]:
    """A driver that Textual writes its frames to, as to a terminal: Textual's headless driver, except that it says
    it is not headless (Textual writes nothing to a headless one). Set it as the app's ``driver_class`` and run
    ``app.run_test(headless=False)``; ``on_frame`` gets each frame's escape sequences as Textual writes them."""

    class TerminalDriver(HeadlessDriver):
        @property
        def is_headless(self) -> bool:
            return False

        def write(self, data: str) -> None:
            on_frame(data)

    return TerminalDriver


def table_of(app: SvgAgentApp) -> RolloutTable:
    return app.dashboard.query_one(RolloutTable)


def preview_of(app: SvgAgentApp) -> Preview:
    return app.dashboard.query_one(Preview)


def rows(app: SvgAgentApp) -> list[tuple[str, ...]]:
    table = table_of(app)
    return [table.row_cells(rid) for rid in table.visible_ids]


def notifications(app: SvgAgentApp) -> list[str]:
    """Every notification of the session so far (the app's message log), oldest first."""
    return [entry.message for entry in app.message_log.entries]


async def settle(pilot: Pilot) -> None:
    settled = getattr(pilot.app, "input_settled", None)  # SvgAgentApp's in-order input; small test apps lack it
    if settled is not None:
        await settled()
    await pilot.pause()
    for worker in list(pilot.app.workers):  # each in turn: one cancelled meanwhile (an exclusive worker replaced
        try:  # by a newer one, e.g. the preview's picture) is no reason to stop waiting
            await worker.wait()
        except WorkerCancelled:
            pass
    await pilot.pause()


async def wait_until(pilot: Pilot, condition: Callable[[], bool], timeout: float = 20.0) -> None:
    """Let the app run until ``condition()`` holds (checked every 50 ms)."""
    waited = 0.0
    while not condition():
        if waited > timeout:
            raise AssertionError("condition not met in time")
        await pilot.pause(0.05)
        waited += 0.05


def picture_colours(image: Any, layer: str = "bgcolor") -> set[tuple[int, int, int]]:
    """The 24-bit colours of a drawn picture (``HalfBlocks``): its backgrounds, or ``layer="color"`` foregrounds."""
    return {
        getattr(segment.style, layer).triplet
        for row in image.rows
        for segment in row
        if segment.style and getattr(segment.style, layer) and getattr(segment.style, layer).triplet
    }


def plain(widget: Any, width: int = 100) -> str:
    """The text a Static shows (its content rendered without styles)."""
    import io

    from rich.console import Console

    console = Console(width=width, file=io.StringIO(), color_system=None, legacy_windows=False)
    content = widget.content
    with console.capture() as capture:
        console.print(content if not isinstance(content, str) else content, markup=False)
    return capture.get()


def summary_lines(app: SvgAgentApp) -> list[str]:
    """The lines the Config pane's summary draws where it is (before its form is mounted)."""
    summary = app.dashboard.query_one("#config-summary")
    return ["".join(seg.text for seg in line).rstrip() for line in summary.render_lines(summary.region.reset_offset)]


def key_name(character: str) -> str:
    """Textual's name for the key that types ``character``: itself for a letter or digit, else its Unicode name in
    lower case with underscores, shortened as Textual shortens it ("slash", "minus", "plus")."""
    if character.isalnum():
        return character
    name = unicodedata.name(character).lower().replace("-", "_").replace(" ", "_")
    return KEY_NAME_REPLACEMENTS.get(name, name)


def key_event(key: str) -> events.Key:
    """The event a terminal sends for ``key``: one character (``/``, ``R``) or a key name (``escape``, ``enter``)."""
    if len(key) == 1:
        return events.Key(key_name(key), key)
    return events.Key(key, {"enter": "\r", "tab": "\t", "space": " "}.get(key))


async def burst(pilot: Pilot, *keys: str, paste: str | None = None, then: tuple[str, ...] = ()) -> None:
    """Keys (then an optional paste, then more keys) arriving all at once, as one read from an SSH connection
    brings them: every event is queued on the app before it handles the first. Then wait until all are handled."""
    app = pilot.app
    for key in keys:
        app.post_message(key_event(key))
    if paste is not None:
        app.post_message(events.Paste(paste))
    for key in then:
        app.post_message(key_event(key))
    await settle(pilot)
