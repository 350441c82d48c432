"""`n` in the Jobs pane: launch an RFT job. A form generated from `RftParams` (checked as you type, each field
showing what it accepts), the dataset of the Config pane, a dry-run preview listing every request the launch would
send (secrets masked; nothing is sent), then — after `y` — the launch itself in a thread worker, its five steps
ticking off as `LaunchEvent`s arrive. Esc stops it between steps; running it again continues where it stopped.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Input, Label, Static

from svgagent.core.rft.job_states import short_state
from svgagent.core.rft.params import FLAGS, ParamsError, RftParams, allowed_range, default_hint, parse_params
from svgagent.core.terminal_text import visible
from svgagent.screens.keys_first import AppKeysFirst
from svgagent.tui.widgets.keys_footer import KeysFooter
from svgagent.tui.widgets.screen_text import shown, shown_line

if TYPE_CHECKING:
    from svgagent.core.config.settings import Settings
    from svgagent.core.rft.job_source import JobSource
    from svgagent.core.rft.launch import LaunchEvent, LaunchResult, PlannedRequest, PreparedLaunch

STEP_NAMES = ("account", "secrets", "evaluator", "dataset", "job")  # svgagent.core.rft.launch.STEPS
DEFAULT_BASE_MODEL = "accounts/fireworks/models/qwen3-0p6b"
MARKS = {
    "start": ("▸", "bold cyan"),
    "progress": ("▸", "bold cyan"),
    "done": ("✓", "bold green"),
    "reused": ("✓", "bold green"),
    "failed": ("✗", "bold red"),
}


def flag_label(name: str) -> str:
    return FLAGS.get(name, "--" + name.replace("_", "-")).removeprefix("--")


def initial_text(name: str, settings: Settings) -> str:
    if name == "base_model":
        model = str(getattr(settings, "model", "") or "")
        return model if model.startswith("accounts/") and "/models/" in model else DEFAULT_BASE_MODEL
    return ""  # unset: only what the person types is sent (the placeholder says what Fireworks does instead)


def plan_text(steps: list[PlannedRequest], prepared: PreparedLaunch, target: str, missing: list[str]) -> Group:
    """The dry run: every request in order, with its (masked) body and what may replace or skip it."""
    head = Text("Dry run: nothing has been sent.", style="bold")
    what = shown(  # ids, paths and bodies hold dataset text and names: outside text
        f"{len(steps)} requests to {target}, secrets masked · job {prepared.job_id} · dataset "
        f"{prepared.dataset_id} ({len(prepared.rows)} rows) · evaluator {prepared.evaluator_id}",
        style="dim",
    )
    table = Table.grid(padding=(0, 1))
    table.add_column(justify="right", no_wrap=True)
    table.add_column(style="cyan", no_wrap=True)
    table.add_column(ratio=1, overflow="fold")
    for number, step in enumerate(steps, start=1):
        query = "?" + "&".join(f"{k}={v}" for k, v in step.query.items()) if step.query else ""
        table.add_row(f"{number}.", step.step, Text.assemble((step.method + " ", "bold"), visible(step.path + query)))
        if step.body is not None:
            table.add_row("", "", shown(json.dumps(step.body, ensure_ascii=False), style="dim"))
        if step.note:
            table.add_row("", "", shown(f"({step.note})", style="dim italic"))
    tail = [
        Text(f"⚠ {name} is not set: the launch would stop before sending anything", style="yellow") for name in missing
    ]
    return Group(
        head,
        what,
        Text(""),
        table,
        Text(""),
        *tail,
        Text("y launches this job · esc goes back to the form", style="bold"),
    )


class RftLaunchScreen(AppKeysFirst, Screen[None]):
    DEFAULT_CSS = """
    RftLaunchScreen #launch-title { height: 1; padding: 0 1; background: $panel; text-style: bold; }
    RftLaunchScreen #launch-dataset { height: auto; padding: 0 1; color: $text-muted; }
    RftLaunchScreen #launch-form { height: 1fr; padding: 0 1; }
    RftLaunchScreen .row { height: 1; }
    RftLaunchScreen .field-label { width: 20; height: 1; }
    RftLaunchScreen .row Input { width: 1fr; }
    RftLaunchScreen .row Input.-invalid { color: $text-error; }
    RftLaunchScreen .hint { height: auto; margin-left: 20; color: $text-muted; }
    RftLaunchScreen .hint.-error { color: $text-error; }
    RftLaunchScreen #launch-problems { height: auto; color: $text-error; }
    RftLaunchScreen #launch-preview { height: 1fr; padding: 0 1; display: none; }
    RftLaunchScreen #launch-progress { height: 1fr; padding: 0 1; display: none; }
    RftLaunchScreen #launch-steps { height: auto; margin-bottom: 1; }
    RftLaunchScreen #launch-outcome { height: auto; }
    """
    BINDINGS = [
        Binding(
            "f2",
            "preview",
            "Dry run",
            id="launch.preview",
            tooltip="List every request the launch would send (enter does the same); nothing is sent",
        ),
        Binding(
            "y",
            "confirm",
            "Launch",
            id="launch.confirm",
            tooltip="Send the requests of the dry run (after a failure: continue, finished steps are reused)",
        ),
        Binding("escape", "edit", "Edit", id="launch.edit", tooltip="Back to the hyperparameters"),
        Binding("escape", "stop", "Stop", id="launch.stop", tooltip="Stop before the next step"),
        Binding("escape", "close", "Close", id="launch.close", tooltip="Back to the Jobs pane"),
    ]

    class Prepared(Message):
        def __init__(self, prepared: PreparedLaunch | None, steps: list[PlannedRequest], error: str = "") -> None:
            super().__init__()
            self.prepared, self.steps, self.error = prepared, steps, error

    class Step(Message):
        def __init__(self, event: LaunchEvent) -> None:
            super().__init__()
            self.event = event

    class Finished(Message):
        def __init__(self, result: LaunchResult | None, error: str = "", stopped: bool = False) -> None:
            super().__init__()
            self.result, self.error, self.stopped = result, error, stopped

    def __init__(
        self, source: JobSource, settings: Settings, *, on_launched: Callable[[LaunchResult], None] | None = None
    ) -> None:
        super().__init__()
        self.source = source
        self.settings = settings
        self.on_launched = on_launched
        self.fields = list(RftParams.model_fields)
        self.stage = "form"  # form → preparing → preview → running → done | failed | stopped
        self.params: RftParams | None = None
        self.problems: dict[str, str] = {}
        self.prepared: PreparedLaunch | None = None
        self.steps: list[PlannedRequest] = []
        self.events: list[LaunchEvent] = []
        self.result: LaunchResult | None = None
        self.error = ""
        self._stop = threading.Event()

    # --- layout -------------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        s = self.settings
        yield Static(visible(f"New RFT job → {self.target}"), id="launch-title", markup=False)
        rows = f"first {s.rows} rows" if s.rows else "all rows"
        yield Static(  # settings may come from a project's files: outside text
            visible(f"dataset {s.dataset} ({rows}) and judge {s.judge_model}, from the Config pane (3): change ")
            + "them there. Tab moves between fields; enter or F2 shows the dry run (nothing is sent).",
            id="launch-dataset",
            markup=False,
        )
        with VerticalScroll(id="launch-form"):
            for name in self.fields:
                with Horizontal(classes="row"):
                    yield Label(flag_label(name), classes="field-label")
                    yield Input(initial_text(name, s), id=f"rft-{name}", compact=True, placeholder=default_hint(name))
                yield Static(self._hint(name), id=f"hint-{name}", classes="hint", markup=False)
            yield Static("", id="launch-problems", markup=False)
        with VerticalScroll(id="launch-preview"):
            yield Static("", id="launch-plan")
        with Vertical(id="launch-progress"):
            yield Static("", id="launch-steps")
            yield Static("", id="launch-outcome")
        yield KeysFooter()

    @property
    def target(self) -> str:
        return self.source.base_url or self.source.label

    @staticmethod
    def _hint(name: str) -> str:
        info = RftParams.model_fields[name]
        return " · ".join(part for part in (allowed_range(name), info.description or "") if part)

    def on_mount(self) -> None:
        self.validate()
        self.query_one(f"#rft-{self.fields[0]}", Input).focus()

    # --- the form -----------------------------------------------------------------------------------------
    def values(self) -> dict[str, str | None]:
        return {name: self.query_one(f"#rft-{name}", Input).value.strip() or None for name in self.fields}

    def validate(self) -> RftParams | None:
        """Check every field now; show each problem under its field (what it accepts is in the message)."""
        try:
            self.params, self.problems = parse_params(**self.values()), {}
        except ParamsError as err:
            self.params = None
            self.problems = {}
            for problem in err.problems:
                key = problem.field or ""
                self.problems[key] = "; ".join(filter(None, (self.problems.get(key), problem.message)))
        for name in self.fields:
            hint = self.query_one(f"#hint-{name}", Static)
            error = self.problems.get(name)
            hint.update(visible(f"✗ {error}") if error else self._hint(name))
            hint.set_class(error is not None, "-error")
            self.query_one(f"#rft-{name}", Input).set_class(error is not None, "-invalid")
        self.query_one("#launch-problems", Static).update(
            visible(f"✗ {self.problems['']}") if "" in self.problems else ""
        )
        return self.params

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.validate()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_preview()

    # --- stages -------------------------------------------------------------------------------------------
    def _set_stage(self, stage: str) -> None:
        self.stage = stage
        self.query_one("#launch-form").display = stage == "form"
        self.query_one("#launch-preview").display = stage in ("preparing", "preview")
        self.query_one("#launch-progress").display = stage in ("running", "done", "failed", "stopped")
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        allowed = {
            "preview": ("form",),
            "confirm": ("preview", "failed", "stopped"),
            "edit": ("preview",),
            "stop": ("running",),
            "close": ("form", "preparing", "done", "failed", "stopped"),
        }
        return self.stage in allowed[action] if action in allowed else True

    def action_preview(self) -> None:
        if self.stage != "form":
            return
        params = self.validate()
        if params is None:
            first = next((n for n in self.fields if n in self.problems), None)
            if first:
                self.query_one(f"#rft-{first}", Input).focus()
            self.notify("fix the fields marked ✗ first", title="Hyperparameters", severity="error", timeout=4)
            return
        self._set_stage("preparing")
        self.query_one("#launch-plan", Static).update(
            Text("preparing: loading the dataset and building the evaluator bundle (nothing is sent)…", style="dim")
        )
        self.run_worker(
            lambda: self._prepare(params),
            thread=True,
            name="prepare RFT launch",
            group="rft-launch",
            exit_on_error=False,
        )

    def _prepare(self, params: RftParams) -> None:
        from svgagent.core.rft.launch import plan, prepare_launch
        from svgagent.core.scoring.errors import SvgAgentError

        try:
            prepared = prepare_launch(self.source.launch_request(self.settings, params))
            steps = plan(prepared)
        except SvgAgentError as err:
            self.post_message(self.Prepared(None, [], str(err)))
            return
        except Exception as err:  # noqa: BLE001 - back to the form with the reason, rather than stuck
            self.post_message(self.Prepared(None, [], f"{type(err).__name__}: {err}"))
            return
        self.post_message(self.Prepared(prepared, steps))

    def on_rft_launch_screen_prepared(self, message: Prepared) -> None:
        if message.prepared is None:
            self._set_stage("form")
            self.notify(message.error, title="Cannot prepare the launch", severity="error", timeout=10)
            return
        self.prepared, self.steps = message.prepared, message.steps
        self._set_stage("preview")
        missing = message.prepared.request.missing_keys()
        self.query_one("#launch-plan", Static).update(plan_text(self.steps, message.prepared, self.target, missing))
        self.query_one("#launch-preview").focus()

    def action_edit(self) -> None:
        self._set_stage("form")
        self.query_one(f"#rft-{self.fields[0]}", Input).focus()

    def action_confirm(self) -> None:
        prepared = self.prepared
        if prepared is None or self.stage not in ("preview", "failed", "stopped"):
            return
        missing = prepared.request.missing_keys()
        if missing:
            self.notify(
                f"{' and '.join(missing)} not set: add it in the Secrets pane (4) or .env first",
                title="Cannot launch",
                severity="error",
                timeout=8,
            )
            return
        self._stop.clear()
        self.events, self.error, self.result = [], "", None
        self._set_stage("running")
        self._show_steps()
        self.query_one("#launch-outcome", Static).update(Text("esc stops before the next step", style="dim"))
        self.run_worker(
            lambda: self._launch(prepared), thread=True, name="RFT launch", group="rft-launch", exit_on_error=False
        )

    def _launch(self, prepared: PreparedLaunch) -> None:
        from svgagent.core.rft.launch import LaunchCancelled, launch
        from svgagent.core.scoring.errors import SvgAgentError

        try:
            cp = self.source.control_plane()
            result = launch(
                prepared,
                cp,
                on_event=lambda event: self.post_message(self.Step(event)),
                store=self.source.store,
                should_stop=self._stop.is_set,
            )
        except LaunchCancelled as err:
            self.post_message(self.Finished(None, str(err), stopped=True))
        except SvgAgentError as err:
            self.post_message(self.Finished(None, str(err)))
        except Exception as err:  # noqa: BLE001 - shown on this screen rather than lost
            self.post_message(self.Finished(None, f"{type(err).__name__}: {err}"))
        else:
            self.post_message(self.Finished(result))

    def on_rft_launch_screen_step(self, message: Step) -> None:
        self.events.append(message.event)
        self._show_steps()

    def _show_steps(self) -> None:
        latest = {event.step: event for event in self.events}  # the newest word on each step
        lines = []
        for index, step in enumerate(STEP_NAMES, start=1):
            event = latest.get(step)
            mark, style = MARKS.get(event.status, ("·", "dim")) if event else ("·", "dim")
            line = Text(f"{mark} ", style=style)
            line.append(f"{index}/{len(STEP_NAMES)} {step:<10}", style="bold" if event else "dim")
            if event is not None:
                line.append(visible(event.message))  # may quote the control plane's error
            lines.append(line)
        self.query_one("#launch-steps", Static).update(Group(*lines))

    def on_rft_launch_screen_finished(self, message: Finished) -> None:
        outcome = self.query_one("#launch-outcome", Static)
        if message.result is None:
            self.error = message.error
            self._set_stage("stopped" if message.stopped else "failed")
            again = "y continues (finished steps are reused, nothing is created twice) · esc closes"
            outcome.update(
                Group(
                    shown(
                        ("Stopped: " if message.stopped else "✗ Launch failed: ") + message.error,
                        style="yellow" if message.stopped else "bold red",
                    ),
                    Text(again),
                )
            )
            return
        result = self.result = message.result
        self._set_stage("done")
        state = short_state(result.job.get("state"))
        verb = "already existed" if result.reused.get("job") else "created"
        links = Table.grid(padding=(0, 1))
        links.add_column(style="dim", no_wrap=True)
        links.add_column(overflow="fold")
        for kind, link in result.links.items():
            links.add_row(shown_line(kind), shown_line(link))
        outcome.update(
            Group(
                shown_line(f"✓ RFT job {result.job_id} {verb} ({state})", style="bold green"),
                links,
                Text("esc: back to the Jobs pane, where the job is selected", style="dim"),
            )
        )
        if self.on_launched is not None:
            self.on_launched(result)

    def action_stop(self) -> None:
        self._stop.set()
        self.query_one("#launch-outcome", Static).update(Text("stopping before the next step…", style="yellow"))

    def action_close(self) -> None:
        self.dismiss(None)
