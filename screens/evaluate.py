"""`v` in the Jobs pane: the trained model against its base model on the rows its launch held out — the steps of
`svgagent rft evaluate` (svgagent.core.rft.evaluate), each run in a thread worker, the runs on the engine's
process as the dashboard's are.

1. the held-out rows stored with the job; 2. the base model's run on them (reused when one with the same settings
exists); 3. the deployment of the output model — its hourly cost shown, made only after `y`, followed until READY;
4. the trained model's run; 5. the compare screen (before/after, with pictures) opens; once it closes, the screen
asks whether to delete the deployment. A deployment left up is handed to the app, which names it when you quit.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Static

from svgagent.screens.compare import open_compare
from svgagent.screens.confirm import Confirm
from svgagent.screens.keys_first import AppKeysFirst
from svgagent.tui.widgets.keys_footer import KeysFooter
from svgagent.tui.widgets.screen_text import shown, shown_line

if TYPE_CHECKING:
    from svgagent.core.config.settings import Settings
    from svgagent.core.rft.deployments import Quote
    from svgagent.core.rft.evaluate import EvaluationTarget
    from svgagent.core.rft.job_source import JobSource
    from svgagent.core.rft.monitor import JobView
    from svgagent.core.run.dataset import Dataset

STEPS = ("held-out rows", "base model", "deployment", "trained model", "compare")
MARKS = {"run": ("▸", "bold cyan"), "ok": ("✓", "bold green"), "ask": ("?", "bold yellow"), "fail": ("✗", "bold red")}


class EvaluateScreen(AppKeysFirst, Screen[None]):
    DEFAULT_CSS = """
    EvaluateScreen #evaluate-title { height: auto; padding: 0 1; background: $panel; text-style: bold; }
    EvaluateScreen #evaluate-steps { height: auto; padding: 1 1 0 1; }
    EvaluateScreen #evaluate-outcome { height: auto; padding: 1 1 0 1; }
    """
    BINDINGS = [
        Binding("y", "deploy", "Deploy", id="evaluate.deploy", tooltip="Create the deployment at the rate shown"),
        Binding("c", "compare", "Compare", id="evaluate.compare", tooltip="Before/after, with pictures"),
        Binding("d", "delete", "Delete deployment", id="evaluate.delete", tooltip="Delete the deployment: no billing"),
        Binding("escape", "close", "Back", id="evaluate.close", tooltip="Back to the Jobs pane (stops a run)"),
    ]

    class Progress(Message):
        def __init__(self, step: str, mark: str, text: str) -> None:
            super().__init__()
            self.step, self.mark, self.text = step, mark, text

    class Asked(Message):
        """The base model is done; the deployment would cost ``quote`` (None: one is up already)."""

        def __init__(self, quote: Quote | None) -> None:
            super().__init__()
            self.quote = quote

    class Done(Message):
        def __init__(self, error: str = "") -> None:
            super().__init__()
            self.error = error

    def __init__(self, source: JobSource, settings: Settings, view: JobView) -> None:
        super().__init__()
        self.source, self.settings, self.view = source, settings, view
        self.stage = "starting"  # starting → asking → deploying → done | stopped | failed
        self.lines: dict[str, tuple[str, str]] = {}
        self.target: EvaluationTarget | None = None
        self.base_run: str | None = None
        self.trained_run: str | None = None
        self.deployment: str | None = None  # its id while it is up
        self.quote: Quote | None = None
        self._stop = threading.Event()
        self._child: Any = None
        self._outcome: Text | str = ""
        self._compare_seen = True  # False while the compare screen the run opened is up: its close asks

    def compose(self) -> ComposeResult:
        title = f"Evaluate {self.view.job_id}: the trained model against its base model, on the held-out rows"
        yield Static(title, id="evaluate-title", markup=False)
        yield Static(id="evaluate-steps")
        yield Static(id="evaluate-outcome")
        yield KeysFooter()

    def on_mount(self) -> None:
        self._show()
        self.run_worker(self._prepare, thread=True, name="evaluate: base model", group="evaluate", exit_on_error=False)

    # --- drawing ----------------------------------------------------------------------------------------------
    def _show(self, outcome: Text | str | None = None) -> None:
        if outcome is not None:
            self._outcome = outcome
        lines = []
        for index, step in enumerate(STEPS, start=1):
            mark, text = self.lines.get(step, ("", ""))
            symbol, style = MARKS.get(mark, ("·", "dim"))
            line = Text(f"{symbol} ", style=style)
            line.append(f"{index}/{len(STEPS)} {step:<14}", style="bold" if mark else "dim")
            line.append(shown_line(text))  # names and messages from the control plane: never markup, controls shown
            lines.append(line)
        self.query_one("#evaluate-steps", Static).update(Text("\n").join(lines))
        self.query_one("#evaluate-outcome", Static).update(self._outcome)
        self.refresh_bindings()

    def on_evaluate_screen_progress(self, message: Progress) -> None:
        self.lines[message.step] = (message.mark, message.text)
        self._show()

    def _say(self, step: str, mark: str, text: str) -> None:  # from the worker
        self.post_message(self.Progress(step, mark, text))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "deploy":
            return self.stage == "asking"
        if action == "compare":
            return self.base_run is not None and self.trained_run is not None
        if action == "delete":
            return self.deployment is not None and self.stage in ("done", "failed", "stopped")
        return True

    # --- the steps (thread workers) ---------------------------------------------------------------------------
    def _prepare(self) -> None:
        from svgagent.core.rft import deployments as dep
        from svgagent.core.rft.evaluate import evaluation_target, reusable_run, run_settings

        try:
            cp = self.source.control_plane()
            store = self.app.store  # type: ignore[attr-defined]
            target = self.target = evaluation_target(cp, store, self.view.name, demo=self.source.demo)
            self._say("held-out rows", "ok", f"{len(target.dataset.rows)} rows kept out of training at launch")
            settings = run_settings(self.settings, target.base_model)
            reused = reusable_run(self.app.store, settings, target.dataset)  # type: ignore[attr-defined]
            if reused is not None:
                self.base_run = reused
                self._say("base model", "ok", f"run {reused} (reused: same rows, judge and sampling)")
            else:
                self.base_run = self._run("base model", settings, target.dataset, target.run_name("base"))
            up = dep.serving(cp, target.output_model)
            if up is not None:
                self.deployment = dep.deployment_id(up)
                self.post_message(self.Asked(None))
                return
            did = dep.deployment_id_for(target.job_id)
            planned = dep.plan_deployment(cp, target.output_model, did, f"eval of {target.job_id}")
            self.post_message(self.Asked(dep.quote(planned)))
        except Exception as err:  # noqa: BLE001 - shown on the screen, the evaluation stops there
            self.post_message(self.Done(_one_line(err)))

    def _run(self, step: str, settings: Settings, dataset: Dataset, name: str) -> str:
        """One evaluation run on the engine's process, its progress on the step's line; its run id."""
        from svgagent.core.run.engine_process import EngineProcess
        from svgagent.core.run.setup import create_run

        store = self.app.store  # type: ignore[attr-defined]
        run_id = create_run(settings, store, dataset, name=name)
        child = self._child = EngineProcess(settings, str(store.path), self.app.bus, run_id)  # type: ignore[attr-defined]
        child.start()
        total = len(dataset.rows) * settings.samples
        while True:
            try:
                summary = child.future.result(timeout=0.5)
                break
            except TimeoutError:
                if self._stop.is_set():
                    child.cancel()
                with store.reader() as reader:
                    done = reader.query(
                        "SELECT COUNT(*) FROM rollouts WHERE run_id = ? AND is_current = 1"
                        " AND status IN ('scored', 'failed')",
                        (run_id,),
                    )[0][0]
                self._say(step, "run", f"run {run_id}: {done}/{total}")
        self._child = None
        mean = "–" if summary.mean_score is None else f"{summary.mean_score:.3f}"
        self._say(step, "ok", f"run {run_id}: {summary.done}/{summary.rollouts}, mean {mean}")
        return run_id

    def on_evaluate_screen_asked(self, message: Asked) -> None:
        self.quote = message.quote
        if message.quote is None:  # one serves the model already: use it
            self.lines["deployment"] = ("ok", f"{self.deployment} is up already: used as it is")
            self._deploy()
            return
        self.stage = "asking"
        self.lines["deployment"] = ("ask", message.quote.text())
        self._show(Text("y deploys the trained model at this rate · esc stops here (nothing bills)", style="bold"))

    def action_deploy(self) -> None:
        if self.stage == "asking":
            self._deploy()

    def _deploy(self) -> None:
        self.stage = "deploying"
        self._show("")
        self.run_worker(
            self._finish, thread=True, name="evaluate: trained model", group="evaluate", exit_on_error=False
        )

    def _finish(self) -> None:
        from svgagent.core.rft import deployments as dep
        from svgagent.core.rft.evaluate import run_settings

        target = self.target
        assert target is not None
        try:
            cp = self.source.control_plane()
            did = self.deployment or dep.deployment_id_for(target.job_id)
            self.deployment = did  # from here on it may bill
            self.app.call_from_thread(self._billing, True)
            poll = 0.1 if self.source.demo else 10.0
            made = dep.deploy(
                cp,
                target.output_model,
                did,
                f"eval of {target.job_id}",
                poll_s=poll,
                on_progress=lambda text: self._say("deployment", "run", text),
                should_stop=self._stop.is_set,
            )
            self.quote = dep.quote(made)
            self._say("deployment", "ok", f"{did} READY · {self.quote.text()}")
            settings = run_settings(self.settings, target.output_model)
            self.trained_run = self._run("trained model", settings, target.dataset, target.run_name("trained"))
            self._say("compare", "ok", f"{self.base_run} (base) ↔ {self.trained_run} (trained)")
            self.post_message(self.Done())
        except Exception as err:  # noqa: BLE001 - shown on the screen; the deployment question still comes
            self.post_message(self.Done(_one_line(err)))

    def on_evaluate_screen_done(self, message: Done) -> None:
        if message.error:
            self.stage = "stopped" if self._stop.is_set() else "failed"
            self._show(shown(f"✗ {message.error}", "bold red"))
            if self.deployment is not None and self.stage == "failed":
                self._ask_delete()
            return
        self.stage = "done"
        self._show(Text("c opens the comparison again · d deletes the deployment · esc back", style="bold"))
        self.action_compare()

    # --- the comparison and the deployment's end ----------------------------------------------------------------
    def action_compare(self) -> None:
        if self.base_run and self.trained_run and open_compare(self.app, self.base_run, self.trained_run):
            self._compare_seen = False

    def on_screen_resume(self) -> None:
        if self.stage == "done" and self.deployment is not None and not self._compare_seen:
            self._compare_seen = True
            self._ask_delete()

    def _ask_delete(self) -> None:
        cost = self.quote.text() if self.quote is not None else "it bills while it is up"
        self.app.push_screen(
            Confirm(
                f"Delete deployment {self.deployment} now?",
                f"{cost}. Keep it to evaluate again; the app reminds you when you quit.",
                yes="delete it",
                no="keep it up",
            ),
            self._answered,
        )

    def _answered(self, delete: bool | None) -> None:
        if delete:
            self.action_delete()

    def action_delete(self) -> None:
        if self.deployment is not None:
            self.run_worker(self._delete, thread=True, name="delete deployment", group="evaluate-delete")

    def _delete(self) -> None:
        did = self.deployment
        if did is None:
            return
        self.source.control_plane().delete_deployment(did)
        self.deployment = None
        self._say("deployment", "ok", f"{did} deleted: it no longer bills")
        self.app.call_from_thread(self._billing, False, did)
        if self.stage == "done":
            self.app.call_from_thread(self._show, Text("c opens the comparison again · esc back", style="bold"))

    def _billing(self, up: bool, did: str | None = None) -> None:
        """Tell the app which deployment bills (it names them when you quit)."""
        billing: dict[str, str] = getattr(self.app, "billing", {})
        name = did or self.deployment
        if name is None:
            return
        if up:
            billing[name] = self.quote.text() if self.quote is not None else "an on-demand deployment"
        else:
            billing.pop(name, None)
        self.refresh_bindings()

    def action_close(self) -> None:
        self._stop.set()
        if self._child is not None:
            self._child.cancel()
        self.dismiss(None)


def _one_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return text if text.startswith(type(err).__name__) or ":" in text else f"{type(err).__name__}: {text}"
