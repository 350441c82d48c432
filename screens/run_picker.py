"""Pick a stored run to open (key ``o`` on the dashboard; ``svgagent tui --run ID`` opens one directly)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option

from svgagent.core.records import RunRecord
from svgagent.core.store import Store


def run_line(run: RunRecord, current: str | None = None) -> Text:
    summary = run.summary or {}
    mean = summary.get("mean_score")
    rollouts = summary.get("rollouts", run.dataset.get("rows", "?"))
    text = Text()
    text.append("▶ " if run.run_id == current else "  ")
    text.append(run.name, style="bold")
    if run.name != run.run_id:
        text.append(f"  {run.run_id}", style="dim")
    text.append(f"\n    {run.created[:16].replace('T', ' ')} · {run.status} · {run.settings.get('model', '?')} · "
                f"{run.dataset.get('name', '?')} · {rollouts} rollouts · mean "
                + ("–" if mean is None else f"{mean:.3f}"), style="dim")
    return text


class RunPicker(ModalScreen[str | None]):
    """Dismisses with the chosen run id, or None."""

    BINDINGS = [
        Binding("escape,q", "cancel", "Cancel", id="picker.cancel"),
        Binding("enter", "choose", "Open", id="picker.open", show=True),
        Binding("j", "move(1)", "Down", show=False, id="picker.down"),
        Binding("k", "move(-1)", "Up", show=False, id="picker.up"),
    ]

    def __init__(self, store: Store, *, current: str | None = None) -> None:
        super().__init__()
        self.store = store
        self.current = current
        self.runs = store.list_runs()

    def compose(self) -> ComposeResult:
        with Vertical(id="picker"):
            yield Static(Text(f"Open a run — {len(self.runs)} stored, newest first", style="bold"))
            if self.runs:
                yield OptionList(*(Option(run_line(r, self.current), id=r.run_id) for r in self.runs), id="runs")
            else:
                yield Static("No runs yet: press escape, then r to start one.", id="runs-empty")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        if self.runs:
            self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_choose(self) -> None:
        if not self.runs:
            return
        options = self.query_one(OptionList)
        if options.highlighted is not None:
            self.dismiss(options.get_option_at_index(options.highlighted).id)

    def action_move(self, step: int) -> None:
        if self.runs:
            options = self.query_one(OptionList)
            options.action_cursor_down() if step > 0 else options.action_cursor_up()

    def action_cancel(self) -> None:
        self.dismiss(None)
