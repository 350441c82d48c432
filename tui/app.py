"""The svgagent terminal app. It receives its core objects (settings, store, clock) so tests pass fakes; screens
and widgets do the work, the app only holds what is shared: settings, the store, the event bus and the run in
progress."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import SecretStr
from textual import events
from textual.app import App
from textual.binding import Binding
from textual.driver import Driver
from textual.filter import LineFilter
from textual.notifications import SeverityLevel
from textual.widgets import Input
from textual.worker import Worker, WorkerState

from svgagent.core.config.settings import SECRET_FIELDS, Settings, load_settings
from svgagent.core.run.events import EventBus
from svgagent.core.scoring.errors import ConfigError, SvgAgentError
from svgagent.core.scoring.models import RolloutUpdate
from svgagent.core.store.run_store import Store
from svgagent.core.store.typed_rows import run_threshold
from svgagent.core.terminal_text import visible, visible_line
from svgagent.tui.burst_input import InOrderInput
from svgagent.tui.idle_gc import FREEZE_AGAIN_S, IDLE_CHECK_S, HeapPolicy
from svgagent.tui.message_log import MessageLog
from svgagent.tui.palette_commands import ScreenCommands
from svgagent.tui.run_control import ENGINE_GROUP, RunControl, RunEnded
from svgagent.tui.widgets.screen_text import ControlFilter

log = logging.getLogger(__name__)


class SvgAgentApp(InOrderInput, App[int]):
    """``settings``: what the next run uses; ``demo``: the endpoints are the simulator (banner shown);
    ``run_id``: a stored run to open; ``env_file``: where the Secrets pane keeps keys; ``clock``: monotonic
    seconds for elapsed/ETA (the keys follow ``settings.keymap``, binding id → keys); ``demo_overrides``: re-applied to settings the
    Config pane sends while in demo mode; ``settings_loader``: re-reads settings after keys are saved (given
    when demo mode was chosen only because keys were missing, so saving keys leaves it); ``job_source``: where
    the Jobs pane gets RFT jobs (a ``JobSource``; None: chosen from settings/demo), ``job_poll_s`` its poll
    interval, ``wall_clock`` the time it shows ages against; ``missing_keys``: the keys whose absence chose demo
    mode (the banner names them until they are saved)."""

    CSS_PATH = "app.tcss"
    TITLE = "svgagent"
    BINDINGS = [
        Binding("q", "quit", "Quit", id="app.quit", tooltip="Quit (a run in progress is stopped, finished work kept)"),
        Binding("question_mark", "help", "Help", key_display="?", id="app.help", tooltip="Every key"),
        Binding(
            "L",
            "messages",
            "Messages",
            show=False,
            id="app.messages",
            tooltip="Every notification and error of this session",
        ),
        Binding(
            "y",
            "copy",
            "Copy",
            show=False,
            id="app.copy",
            tooltip="Copy the rollout's SVG, rationale, prompt or id (OSC 52: works over SSH)",
        ),
        Binding(
            "w",
            "save_picture",
            "Save picture",
            show=False,
            id="app.save_picture",
            tooltip="Write the rollout's PNG and SVG into the exports directory",
        ),
    ]
    COMMANDS = {ScreenCommands}  # the only provider: it folds in Textual's system commands

    def __init__(
        self,
        *,
        settings: Settings,
        store: Store,
        demo: bool = False,
        run_id: str | None = None,
        env_file: Path | None = None,
        clock: Callable[[], float] = time.monotonic,
        demo_overrides: Mapping[str, Any] | None = None,
        settings_loader: Callable[[], Settings] | None = None,
        bus: EventBus[RolloutUpdate] | None = None,
        job_source: Any = None,
        job_poll_s: float | None = None,
        wall_clock: Callable[[], float] = time.time,
        serve_url: str | None = None,
        cursor_blink: bool = True,
        after_first_frame: Callable[[], object] | None = None,
        missing_keys: Sequence[str] = (),
    ) -> None:
        super().__init__()
        self.serve_url = serve_url  # `svgagent tui --serve`: the rollout server runs with the app; its view opens
        self.settings = settings
        self.store = store
        self.demo = demo
        self.initial_run_id = run_id
        self.env_file = env_file or Path.cwd() / ".env"
        self.clock = clock
        self.demo_overrides = dict(demo_overrides or {})
        self.settings_loader = settings_loader
        self.missing_keys = list(missing_keys)
        self.bus: EventBus[RolloutUpdate] = bus or EventBus()
        self.billing: dict[str, str] = {}  # deployments this session made that are still up → what they cost
        self.control = RunControl(self, store, self.bus, clock)
        self.keymap: dict[str, str] = dict(settings.keymap)  # binding id → keys, from the [keymap] table
        self.job_source = job_source  # None: the Jobs pane picks one from settings/demo when it is first shown
        self.job_poll_s = job_poll_s  # None: 10 s (2 s in demo mode)
        self.wall_clock = wall_clock  # seconds since the epoch: RFT job ages and elapsed times
        self.message_log = MessageLog()
        self.cursor_blink = cursor_blink  # False: text cursors stay still (tests and snapshots are deterministic)
        # work the first frame does not need (`tui --demo`: the simulator; the dashboard's later panes); None: done
        self._after_first_frame: list[Callable[[], object]] | None = [after_first_frame] if after_first_frame else []
        self.heap = HeapPolicy(clock)  # full garbage collections while nobody types (tui/heap)
        self._control_filter = ControlFilter()  # one instance: Textual caches filtered lines per filter

    def get_line_filters(self) -> Sequence[LineFilter]:
        """Textual's filters, then :class:`ControlFilter`: no control character in a widget's text is ever written
        to the terminal (the per-cell rule, ``widgets/screen_text``, shows them as escapes before that)."""
        return [*super().get_line_filters(), self._control_filter]

    def get_driver_class(self) -> type[Driver]:
        """On Linux and macOS terminals, Textual's driver reading Escape-then-a-key as two keys (``escape_keys``)."""
        driver = super().get_driver_class()
        if driver.__module__ == "textual.drivers.linux_driver" and driver.__name__ == "LinuxDriver":
            from svgagent.tui.escape_keys import EscapeThenKeyDriver

            return EscapeThenKeyDriver
        return driver  # Windows, or a driver chosen with TEXTUAL_DRIVER

    def on_mount(self) -> None:
        from svgagent.screens.dashboard import Dashboard

        if self.keymap:
            from svgagent.screens.help import unknown_binding_ids  # every screen's bindings: not before a keymap

            self.set_keymap(self.keymap)
            unknown = unknown_binding_ids(self, self.keymap)
            if unknown:
                self.notify(
                    f"no key has the id {', '.join(unknown)}: ? lists every id (check the spelling)",
                    title="[keymap] in your config",
                    severity="warning",
                    timeout=15,
                )
        self.push_screen(Dashboard())
        if self.serve_url:
            from svgagent.screens.training import TrainingScreen

            self.push_screen(TrainingScreen(self.store, serving=self.serve_url))

    def on_ready(self) -> None:
        """The first frame has been composed. Textual drew it inside its start-up batch and writes only regions
        that change afterwards, so the rows of the table would reach the terminal only with the next full
        layout: repaint every top-level widget now, so the whole frame goes out at once. The work for after the
        first frame runs once that repaint is written (inside the batch, "after the refresh" meant at once: the
        later panes mounted, and the simulator started, before any of the frame reached the terminal)."""
        for widget in self.screen.children:
            widget.refresh()
        self.heap.start()
        self.set_timer(FREEZE_AGAIN_S, self._warm_up)
        self.set_interval(IDLE_CHECK_S, self.heap.collect_if_idle)
        self.call_after_refresh(self._first_frame_shown)

    def after_first_frame(self, callback: Callable[[], object]) -> None:
        """Run ``callback`` once the first frame is on the terminal (now, if it already is)."""
        if self._after_first_frame is None:
            callback()
        else:
            self._after_first_frame.append(callback)

    def _first_frame_shown(self) -> None:
        callbacks, self._after_first_frame = self._after_first_frame or [], None
        for callback in callbacks:
            callback()

    def _warm_up(self) -> None:
        """Import what the panes import on first use in a thread, then freeze the heap again (tui/heap)."""

        def warm() -> None:
            self.heap.import_deferred()
            from svgagent.screens.help import warm_help  # in this thread: it imports every screen

            warm_help(self)()  # `?` then finds the help laid out at this width (it only reads the app's keys)

        self.run_worker(warm, name="warm up", group="warm-up", thread=True, exit_on_error=False)
        # its end: on_worker_state_changed freezes

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, (events.Key, events.Paste, events.MouseDown)):
            self.heap.input()
        await super().on_event(event)

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        if not self.cursor_blink and isinstance(event.widget, Input):
            event.widget.cursor_blink = False

    def on_unmount(self) -> None:
        self.control.shutdown()  # the engine's thread must not outlive the app
        self.heap.stop()

    @property
    def dashboard(self) -> Any:
        from svgagent.screens.dashboard import Dashboard

        return next(s for s in self.screen_stack if isinstance(s, Dashboard))

    # --- settings -----------------------------------------------------------------------------------------
    def _with_demo(self, settings: Settings) -> Settings:
        if not self.demo or not self.demo_overrides:
            return settings
        update = {
            k: SecretStr(v) if k in SECRET_FIELDS and isinstance(v, str) else v for k, v in self.demo_overrides.items()
        }
        return settings.model_copy(update=update)

    def settings_for_run(self, stored: Mapping[str, Any]) -> Settings:
        """Settings to resume a stored run: what it was started with, plus this session's keys / demo endpoints."""
        threshold = run_threshold(stored)  # the run's, else the default every summary of it uses: not this session's
        try:
            base = load_settings(
                **{**{k: v for k, v in stored.items() if k in Settings.model_fields}, "threshold": threshold}
            )
        except ConfigError:
            base = self.settings.model_copy(update={"threshold": threshold})
        return self._with_demo(base)

    def on_config_form_changed(self, message: Any) -> None:
        self.settings = self._with_demo(message.settings)

    def on_secrets_pane_saved(self, message: Any) -> None:
        if self.settings_loader is None:
            return
        try:
            fresh = self.settings_loader()
        except ConfigError as err:
            self.notify(str(err), severity="error")
            return
        self.missing_keys = fresh.missing_keys()
        if not self.demo:
            return
        if self.missing_keys:
            self.dashboard.keys_missing(self.missing_keys)
        else:
            self.demo = False
            self.settings = fresh
            self.dashboard.demo_ended(fresh)
            self.notify(
                f"keys saved: the next run uses {fresh.model}, judged by {fresh.judge_model}", title="Demo mode off"
            )

    def open_compare(self, run_a: str, run_b: str) -> bool:
        """Show run B compared with run A row by row (the run picker and the job pane call this). An unknown run
        or the same run twice gives a notification instead; returns whether the compare screen opened."""
        from svgagent.screens.compare import open_compare

        return open_compare(self, run_a, run_b)

    # --- actions ------------------------------------------------------------------------------------------
    def action_help(self) -> None:
        from svgagent.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """A toast, kept in the message log too. Messages often hold outside text (an endpoint's error, a run's
        name): never read as markup, controls shown as escapes (``markup`` is accepted and ignored)."""
        message, title = visible(message), visible_line(title)
        self.message_log.add(self.wall_clock(), severity, title, message)  # kept after the toast goes (``L``)
        if getattr(self.screen_stack[-1] if self.screen_stack else None, "SHOWS_MESSAGES", False):
            return  # the message log is open: it shows the message, a toast would cover its newest lines
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=False)

    def action_messages(self) -> None:
        from svgagent.screens.message_log import MessageLogScreen

        if not isinstance(self.screen, MessageLogScreen):
            log = self.message_log
            self.clear_notifications()  # every toast is in the log, where it would cover the newest lines
            self.push_screen(MessageLogScreen(log.entries, lambda: log.entries))

    def rollout_in_view(self) -> str | None:
        """The rollout the screen shows or has its cursor on (``y`` and ``w`` act on it), if any."""
        return getattr(self.screen, "rollout_in_view", None)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("copy", "save_picture"):
            return self.rollout_in_view() is not None
        return True

    def action_copy(self) -> None:
        from svgagent.screens.rollout_actions import CopyMenu

        rollout_id = self.rollout_in_view()
        if rollout_id is not None:
            self.push_screen(CopyMenu(self.store.get_rollout(rollout_id)))

    def action_save_picture(self) -> None:
        from svgagent.screens.rollout_actions import save_picture

        rollout_id = self.rollout_in_view()
        if rollout_id is None:
            return
        directory = self.settings.exports_dir()
        try:
            written = save_picture(self.store.get_rollout(rollout_id), directory)
        except SvgAgentError as err:
            self.notify(str(err), title="Not saved", severity="error")
            return
        if not written:
            self.notify(f"{rollout_id} has no picture (no SVG was found in its answer)", severity="warning")
            return
        self.notify(" and ".join(p.name for p in written) + f" in {directory}", title="Saved")

    async def action_quit(self) -> None:
        if self.billing:  # a deployment this session made is still up: never quit on it silently
            from svgagent.screens.confirm import Confirm

            listed = "; ".join(f"{name} ({cost})" for name, cost in self.billing.items())
            self.push_screen(
                Confirm(
                    f"{len(self.billing)} deployment{'s' if len(self.billing) > 1 else ''} still up and billing",
                    f"{listed}. Delete with `svgagent rft deployments --delete ID`; `svgagent rft deployments` "
                    "lists what is up.",
                    yes="quit anyway",
                    no="stay",
                ),
                self._quit_anyway,
            )
            return
        await self.control.stop()
        self.exit(0)

    def _quit_anyway(self, answer: bool | None) -> None:
        if answer:
            self.billing.clear()
            self.call_later(self.action_quit)

    # --- workers: the one place failures are reported -----------------------------------------------------
    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if worker.group == "warm-up" and event.state in (WorkerState.SUCCESS, WorkerState.ERROR):
            self.heap.freeze()  # what the warm-up imported lives as long as the app
        if worker.group == ENGINE_GROUP and self.control.run_id is not None:
            if event.state is WorkerState.SUCCESS:
                self.dashboard.post_message(RunEnded(self.control.run_id, summary=worker.result))
            elif event.state is WorkerState.ERROR:
                log.error("run %s failed", self.control.run_id, exc_info=worker.error)
                self.dashboard.post_message(RunEnded(self.control.run_id, error=_describe(worker.error)))
        elif event.state is WorkerState.ERROR:
            log.error("worker %s failed", worker.name, exc_info=worker.error)
            self.notify(_describe(worker.error), title=f"{worker.name or 'background task'} failed", severity="error")


def _describe(error: BaseException | None) -> str:
    if error is None:
        return "unknown error"
    return f"{type(error).__name__}: {error}" if not str(error).startswith(type(error).__name__) else str(error)
