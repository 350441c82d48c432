"""The main screen: rollout table + summary, preview, config, secrets and the job monitor's place.

At 80×24 the panes are tabs (number keys switch); from 120×40 they sit side by side in a grid. The run on screen —
opening, live updates (≤ 10 table updates a second, ``tui.live_feed``), the summary, start/stop/resume/rerun — is
``screens.open_run.OpenRun``'s; this screen lays out the panes, routes keys and messages, and opens the screens.
(Over 400 lines: the routing of every pane's keys and messages to the screens they open is one concern, and split
across files it was a cycle of mixins, issue 9.)
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container, Vertical
from textual.events import DescendantBlur, DescendantFocus, Resize
from textual.message import Message
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Static, Tab, Tabs

from svgagent.core.config.settings import Settings
from svgagent.core.run.dataset import load_dataset
from svgagent.core.scoring.errors import SvgAgentError
from svgagent.screens.keys_first import AppKeysFirst
from svgagent.screens.open_run import NO_RUN, OpenRun
from svgagent.screens.pane_zoom import PaneZoom
from svgagent.tui.imaging import show_full_image
from svgagent.tui.live_feed import LiveBatch, LiveFeed, RunReloaded
from svgagent.tui.own_class import PANE_FOCUSED, PANE_SHOWN
from svgagent.tui.run_control import RunEnded
from svgagent.tui.widgets.config_summary import ConfigSummary
from svgagent.tui.widgets.filter_bar import FilterBar
from svgagent.tui.widgets.histogram import Histogram
from svgagent.tui.widgets.keys_footer import KeysFooter
from svgagent.tui.widgets.preview import Preview
from svgagent.tui.widgets.rollout_table import RolloutTable
from svgagent.tui.widgets.summary_bar import SummaryBar

# The Config, Secrets and Jobs panes' widgets and the screens keys open are imported when first needed, not before
# the first frame (≈0.1 s of CPU: the Secrets pane alone pulls Textual's DataTable); their messages are handled by
# name (``on_job_panel_…``) and their widgets queried by type name.
if TYPE_CHECKING:
    from svgagent.tui.services import AppServices
    from svgagent.tui.widgets.config_form import ConfigForm
    from svgagent.tui.widgets.job_panel import JobPanel

PANES = ("rollouts", "preview", "config", "secrets", "jobs")
LATER_PANES = ("config", "secrets", "jobs")  # mounted after the first frame (``Dashboard.mount_panes``)
ON_DEMAND = ("config",)  # mounted when first shown (``ConfigSummary`` until then): ~100 widgets, over half the app's
PANE_TITLES = {"rollouts": "Rollouts", "preview": "Preview", "config": "Config", "secrets": "Secrets", "jobs": "Jobs"}
# an explicit --demo stays a demo whatever keys are saved (the implicit one names the keys it lacks: demo_banner)
DEMO_BANNER = "demo mode: simulated model and judge — start without --demo to use your keys"
BANNER_WIDTH = 78  # 80 columns less the banner's padding


def demo_banner(missing: list[str]) -> str:
    """The demo banner naming the keys still missing (one line within 80 columns); none known: the general one."""
    if not missing:
        return DEMO_BANNER
    names, pane = ", ".join(missing), f"Secrets pane ({PANES.index('secrets') + 1})"
    text = f"demo mode: {names} missing — add {'it' if len(missing) == 1 else 'them'} in the {pane}"
    return text if len(text) <= BANNER_WIDTH else f"demo mode: {names} missing — {pane}"


WIDE = (120, 40)


class Dashboard(AppKeysFirst, PaneZoom, Screen):
    AUTO_FOCUS = "#rollouts"
    PANES = PANES
    FOOTER_DROP = (
        "table.mark",
        "table.sort",
        "app.zoom",
        "app.focus_table",  # "esc Back": with a filter on, the filter bar says "esc: clear"
        "preview.full",  # before Rerun: with a filter on, R reruns what it shows
        "app.rerun",
        "jobs.next_link",
        "jobs.open_link",
        "jobs.copy_link",
    )
    BINDINGS = [
        Binding("r", "start_run", "Run", id="app.run", tooltip="Start a run with the Config pane's settings"),
        Binding("s", "stop_run", "Stop", id="app.stop", tooltip="Stop the run; finished rollouts are kept"),
        Binding("c", "resume_run", "Resume", id="app.resume", tooltip="Continue the open run's unfinished rollouts"),
        Binding(
            "R",
            "rerun",
            "Rerun",
            id="app.rerun",
            tooltip="Rerun marked (else invalid and failed) rollouts as new attempts",
        ),
        Binding("o", "open_run", "Runs", id="app.open_run", tooltip="Open a past run"),
        Binding("f", "full_image", "Image", id="preview.full", tooltip="Show the picture full-resolution"),
        Binding(
            "i",
            "stats",
            "Stats",
            id="app.stats",
            tooltip="Score histogram and statistics of the run; pick a bin to filter the table",
        ),
        Binding("x", "export", "Export", id="app.export", tooltip="Export the run as JSONL or CSV (and pictures)"),
        *(
            Binding(
                str(i),
                f"pane('{name}')",
                PANE_TITLES[name],
                id=f"pane.{name}",
                show=False,
                tooltip=f"Go to the {PANE_TITLES[name]} pane (the tabs and pane titles show the numbers)",
            )
            for i, name in enumerate(PANES, start=1)
        ),
        Binding(
            "plus,ctrl+t",
            "zoom",
            "Zoom",
            id="app.zoom",
            tooltip="Give the pane with the focus the whole screen (ctrl+t in a text field); again: all panes",
        ),
        Binding(
            "escape",
            "focus_table",
            "Back",
            id="app.focus_table",
            tooltip="Back to the rollout table; on the table, clear the filter",
        ),
    ]

    def __init__(self) -> None:
        super().__init__()
        self._key_state: tuple[object, ...] = ()
        self.active_pane = "rollouts"
        self.run = OpenRun(self, self.svg_app, show_pane=self.show_pane, changed=self._keys_changed)
        self._pane_mounts: dict[str, asyncio.Future[None]] = {}  # pane name → its widget's mount, once

    @property
    def svg_app(self) -> AppServices:
        return self.app  # type: ignore[return-value]

    @property
    def run_id(self) -> str | None:
        return self.run.run_id

    @property
    def rollout_in_view(self) -> str | None:  # what y (copy) and w (save picture) act on
        return self.query_one(RolloutTable).cursor_id

    @property
    def feed(self) -> LiveFeed:
        return self.run.feed

    # --- layout -------------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        app = self.svg_app
        # choose the layout before the panes mount: switching it after restyles every widget (~0.2 s)
        self._layout(app.size.width, app.size.height)
        yield Static(demo_banner(app.missing_keys), id="banner", classes="" if app.demo else "-hidden")
        yield Tabs(*(Tab(f"{i} {PANE_TITLES[n]}", id=f"tab-{n}") for i, n in enumerate(PANES, start=1)), id="pane-tabs")
        with Container(id="panes"):
            with Vertical(id="pane-rollouts", classes=f"pane {PANE_SHOWN}"):
                table = RolloutTable(id="rollouts")
                yield table
                yield FilterBar(table, id="filter-bar")
                yield SummaryBar(id="summary")
                yield Histogram(compact=True, max_cell=3, id="score-hist")
            with Vertical(id="pane-preview", classes="pane"):
                yield Preview(app.store, id="preview")
            for name in LATER_PANES:  # their widgets: ``mount_panes``; the Config form's: ``_mount_pane``
                with Vertical(id=f"pane-{name}", classes="pane"):
                    if name == "config":
                        yield ConfigSummary(app.settings, id="config-summary")
        yield KeysFooter(show_command_palette=False)

    def on_mount(self) -> None:
        for name in PANES:
            self.query_one(f"#pane-{name}").border_title = f"{PANES.index(name) + 1} {PANE_TITLES[name]}"
        self.query_one(RolloutTable).empty_message = self._empty_message()
        self._layout(self.app.size.width, self.app.size.height)
        self.set_interval(1.0, self.run.tick)
        self.svg_app.after_first_frame(lambda: self.call_later(self.mount_panes))
        if self.svg_app.initial_run_id:
            self.run.open(self.svg_app.initial_run_id)
        else:
            self.run.refresh_summary()

    def _empty_message(self, settings: Settings | None = None) -> list[str]:
        settings = settings or self.svg_app.settings
        what = f"dataset {settings.dataset}"
        if settings.dataset == "builtin":
            try:
                count = len(load_dataset("builtin"))
            except SvgAgentError:
                count = 0
            count = min(count, settings.rows) if settings.rows else count
            what = f"built-in dataset ({count} prompts)"
        return [
            "No run open yet.",
            "",
            f"press r to start a run on the {what}",
            "press o to open a past run, 3 to change settings, ? for every key, q to quit",
        ]

    def on_config_form_changed(self, message: Message) -> None:
        """Settings edited in the Config pane: the welcome text follows (the app keeps them for the next run)."""
        table = self.query_one(RolloutTable)
        table.empty_message = self._empty_message(getattr(message, "settings", None))
        table.refresh()

    def on_descendant_focus(self, event: DescendantFocus) -> None:
        self._highlight_focused_pane()

    def on_descendant_blur(self, event: DescendantBlur) -> None:
        self._highlight_focused_pane()

    def _highlight_focused_pane(self) -> None:
        """The grid's accent border on the pane with the focus (a class on the pane alone: ``tui/own_class``)."""
        self.mark_pane(self.pane_containing(self.focused), PANE_FOCUSED)

    def on_resize(self, event: Resize) -> None:
        self._layout(event.size.width, event.size.height)

    def _layout(self, width: int, height: int) -> None:
        wide = width >= WIDE[0] and height >= WIDE[1]
        self.set_class(wide, "-wide")
        self.set_class(not wide, "-narrow")

    @property
    def wide(self) -> bool:
        return self.has_class("-wide")

    async def mount_panes(self) -> None:
        """Mount the Secrets and Jobs panes' widgets after the first frame (so that frame comes sooner). The Config
        form waits until it is first shown (``ConfigSummary`` holds its place): it is over half of the app's
        widgets, and mounting, styling and laying it out cost as much as the rest of the start-up together."""
        await asyncio.gather(*(self._mount_pane(name) for name in LATER_PANES if name not in ON_DEMAND))

    def _mount_pane(self, name: str) -> asyncio.Future[None]:
        """The mount of pane ``name``'s widget, started on the first call."""
        if name not in self._pane_mounts:
            app = self.svg_app
            widget: Widget
            if name == "config":
                from svgagent.tui.widgets.config_form import ConfigForm

                # the pane's size (when hidden, narrow: it will have the whole of the panes' place)
                size = self.query_one(f"#pane-{name}").content_size
                if not size.area:
                    size = self.query_one("#panes").size
                widget = ConfigForm(app.settings, width=size.width, height=size.height, id="config-form")
            elif name == "secrets":
                from svgagent.tui.widgets.secrets_form import SecretsPane

                widget = SecretsPane.for_settings(app.env_file, app.settings, simulated=app.demo, id="secrets-form")
            else:
                from svgagent.tui.widgets.job_panel import JobPanel

                widget = JobPanel(id="jobs")
            self._pane_mounts[name] = asyncio.ensure_future(self._mount_in(name, widget))
        return self._pane_mounts[name]

    async def _mount_in(self, name: str, widget: Widget) -> None:
        await self.query_one(f"#pane-{name}").mount(widget)
        if name == "config":
            await self.query_one(ConfigSummary).remove()

    @on(ConfigSummary.EditRequested)
    async def _edit_config(self) -> None:
        """Tab or a click onto the Config pane's summary: the form takes its place and the focus."""
        await self.action_pane("config")

    def _pane_mounted(self, name: str) -> bool:
        mount = self._pane_mounts.get(name)
        return name not in LATER_PANES or (mount is not None and mount.done())

    async def action_pane(self, name: str) -> None:
        """The pane keys (1–5): the pane's widgets are there before the focus moves into it (the keys typed after
        it wait: ``InOrderInput``)."""
        if name in LATER_PANES and not self._pane_mounted(name):
            with self.app.batch_update():  # one layout and frame for the new widgets and the focus moved into them
                await self._mount_pane(name)
                self.show_pane(name)
            return
        self.show_pane(name)

    def show_pane(self, name: str) -> None:
        """Show pane ``name`` (narrow) or move focus into it (wide); a zoom moves to it. A pane whose widget is
        not mounted yet is shown once it is."""
        if not self._pane_mounted(name):
            self.call_later(self.action_pane, name)
            return
        self.active_pane = name
        if self.zoomed is not None:
            self.zoom(name)
        self.mark_pane(name, PANE_SHOWN)
        tabs = self.query_one(Tabs)
        if tabs.active != f"tab-{name}":
            tabs.active = f"tab-{name}"
        target = self._focus_target(name)
        self.set_focus(target)
        if name == "preview":
            self.query_one(Preview).reload()

    def _focus_target(self, name: str) -> Widget | None:
        if name == "rollouts":
            return self.query_one(RolloutTable)
        if name == "preview":
            return self.query_one(Preview).scroller
        pane = self.query_one(f"#pane-{name}")
        focusable = [w for w in pane.query("*") if w.focusable]
        return focusable[0] if focusable else None

    @on(Tabs.TabActivated, "#pane-tabs")
    async def _tab_clicked(self, event: Tabs.TabActivated) -> None:
        name = (event.tab.id or "tab-rollouts").removeprefix("tab-")
        if name != self.active_pane:
            await self.action_pane(name)

    def action_focus_table(self) -> None:
        """Escape: back to the table; on the table itself, clear the filter."""
        table = self.query_one(RolloutTable)
        bar = self.query_one(FilterBar)
        if table.has_focus and not table.query_filter.empty:
            bar.clear()
            return
        if bar.editing:
            bar.close()
        self.show_pane("rollouts")

    def on_focus_home(self, message: Message) -> None:
        """Escape in the config form (``FocusHome``): back to the table."""
        self.show_pane("rollouts")

    @on(RolloutTable.FilterRequested)
    def _filter_requested(self) -> None:
        self.query_one(FilterBar).open()

    @on(FilterBar.Applied)
    def _filter_applied(self) -> None:
        self.run.refresh_summary()

    def keys_missing(self, missing: list[str]) -> None:
        """Keys were saved, but demo mode goes on: the banner names the ones still missing."""
        self.query_one("#banner", Static).update(demo_banner(missing))

    def demo_ended(self, settings: Settings) -> None:
        """Keys were saved: the endpoints are real now, so the demo banner goes and the Config pane shows the real
        settings in place of the simulator's (what the person changed there stays)."""
        self.query_one("#banner").add_class("-hidden")
        for form in self._config_forms():
            form.reset(settings)
        self._settings_changed()
        for pane in self.query("SecretsPane").results():
            pane.use_endpoints(settings)

    # --- the open run (``OpenRun`` does the work) -----------------------------------------------------------
    def on_run_reloaded(self, message: RunReloaded) -> None:
        self.run.reloaded(message)

    def on_live_batch(self, batch: LiveBatch) -> None:
        self.run.apply_batch(batch)

    def on_run_ended(self, event: RunEnded) -> None:
        self.run.ended(event)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Hide keys that do nothing right now, so the Footer shows what can be done (and fits 80 columns)."""
        running = self.svg_app.control.running
        if action == "stop_run":
            return running
        if action in ("start_run", "open_run"):
            return not running
        if action == "rerun":
            return not running and self.run_id is not None
        if action == "resume_run":
            return not running and self.run_id is not None and self.run.unfinished > 0
        if action in ("full_image", "stats", "export"):
            return self.run_id is not None
        if action == "focus_table":
            table = self.query_one(RolloutTable)
            return not table.has_focus or not table.query_filter.empty
        return True

    def _keys_changed(self) -> None:
        filtered = not self.query_one(RolloutTable).query_filter.empty
        state = (self.svg_app.control.running, self.run_id, self.run.unfinished > 0, filtered)
        if state != self._key_state:
            self._key_state = state
            self.refresh_bindings()

    @on(RolloutTable.SortRequested)
    def _pick_sort(self) -> None:
        table = self.query_one(RolloutTable)

        def chosen(choice: tuple[str, bool] | None) -> None:
            if choice is not None:
                table.set_sort(*choice)
                self.notify(f"sorted by {choice[0]}" + (" (descending)" if choice[1] else ""), timeout=2)

        from svgagent.screens.sort_picker import SortPicker

        self.app.push_screen(SortPicker(table.sort_column, table.sort_reverse), chosen)

    @on(RolloutTable.CursorMoved)
    def _cursor_moved(self, event: RolloutTable.CursorMoved) -> None:
        self.query_one(Preview).show_rollout(event.rollout_id)

    # --- run actions --------------------------------------------------------------------------------------
    def action_start_run(self, name: str | None = None) -> None:
        """r — refused while the Config pane marks a field ✗ (the run would use its last valid value)."""
        for form in self._config_forms():
            if form.errors():
                self.show_pane("config")
                form.point_at_error(title="Not started")
                return
        self.run.start(name)

    async def action_stop_run(self) -> None:
        await self.run.stop()

    def action_resume_run(self) -> None:
        self.run.resume()

    def action_rerun(self) -> None:
        self.run.rerun()

    def action_open_run(self) -> None:
        if self.run.busy():
            return

        def opened(run_id: str | None) -> None:
            if run_id:
                self.run.open(run_id)
                self.show_pane("rollouts")

        from svgagent.screens.run_picker import RunPicker

        self.app.push_screen(RunPicker(self.svg_app.store, current=self.run_id), opened)

    def action_stats(self) -> None:
        if self.run_id is None:
            self.notify(NO_RUN, severity="warning")
            return
        from svgagent.screens.stats import StatsScreen

        run = self.svg_app.store.get_run(self.run_id)
        screen = StatsScreen(self.svg_app.store, self.run_id, name=run.name)

        def chosen(query: str | None) -> None:
            for rollout_id in screen.changed:  # overridden from the agreement panel's disagreements
                self.run.reread(rollout_id)
            bar = self.query_one(FilterBar)
            if query and bar.apply(query, quiet=False):  # a histogram bin: its rollouts
                bar.close()
                self.show_pane("rollouts")

        self.app.push_screen(screen, chosen)

    def action_export(self) -> None:
        if self.run_id is None:
            self.notify(NO_RUN, severity="warning")
            return
        from svgagent.screens.export_dialog import ExportDialog

        run = self.svg_app.store.get_run(self.run_id)
        self.app.push_screen(
            ExportDialog(self.svg_app.store, self.run_id, name=run.name, directory=self.svg_app.settings.exports_dir())
        )

    def action_full_image(self) -> None:
        rollout_id = self.query_one(RolloutTable).cursor_id
        if rollout_id is None:
            self.notify("no rollout selected", severity="warning")
            return
        show_full_image(self, rollout_id)

    def on_rollout_table_opened(self, event: RolloutTable.Opened) -> None:
        from svgagent.screens.rollout_detail import RolloutDetail

        def closed(_: object = None) -> None:
            self.run.reread(event.rollout_id)

        self.app.push_screen(RolloutDetail(self.svg_app.store, event.rollout_id), closed)

    # --- what the Jobs pane asks for ----------------------------------------------------------------------
    def on_job_panel_cancel_requested(self, message: JobPanel.CancelRequested) -> None:
        from svgagent.screens.confirm import Confirm

        view, panel = message.view, message.panel

        def answered(yes: bool | None) -> None:
            if yes:
                panel.cancel(view)

        at = f" at {view.percent}%" if view.percent is not None else ""
        self.app.push_screen(
            Confirm(
                f"Cancel RFT job {view.job_id}?",
                f"{view.display_name or view.job_id} is {view.phase}{at}. Its training stops; "
                "p resumes it later from where it stopped.",
                yes="cancel the job",
                no="keep it running",
            ),
            answered,
        )

    def on_job_panel_launch_requested(self, message: JobPanel.LaunchRequested) -> None:
        from svgagent.screens.rft_launch import RftLaunchScreen

        panel = message.panel
        self.app.push_screen(
            RftLaunchScreen(
                message.source,
                self.svg_app.settings,
                on_launched=panel.job_launched,
                serve_url=self.svg_app.serve_url,
                store=self.svg_app.store,
            )
        )

    def on_job_panel_training_requested(self, message: JobPanel.TrainingRequested) -> None:
        from svgagent.screens.training import TrainingScreen

        view, panel = message.view, message.panel
        self.app.push_screen(
            TrainingScreen(
                self.svg_app.store,
                job_name=view.name,
                title=view.display_name or view.job_id,
                platform=lambda: next((v for v in panel.views if v.name == view.name), None),  # its latest poll
            )
        )

    def on_job_panel_evaluate_requested(self, message: JobPanel.EvaluateRequested) -> None:
        from svgagent.screens.evaluate import EvaluateScreen

        source = message.panel.source
        if source is not None:
            self.app.push_screen(EvaluateScreen(source, self.svg_app.settings, message.view))

    def on_job_panel_eval_requested(self, message: JobPanel.EvalRequested) -> None:
        if self.run.start_eval(message.model, message.view.links.get("dataset", ""), message.view.job_id or "the job"):
            for form in self._config_forms():  # not there until the Config pane has been shown
                form.set_text("model", message.model)
            self._settings_changed()

    def _config_forms(self) -> list[ConfigForm]:
        """The Config form, once mounted (not before the Config pane is first shown)."""
        return list(self.query("ConfigForm").results())  # by type name: no import of the form before it exists

    def _settings_changed(self) -> None:
        """The app's settings changed under the Config pane's summary (the form, once there, shows its own)."""
        for summary in self.query(ConfigSummary):
            summary.show_settings(self.svg_app.settings)
