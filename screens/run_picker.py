"""Pick a stored run to open (key ``o`` on the dashboard; ``svgagent tui --run ID`` opens one directly), or two
runs to compare: ``a`` marks run A, ``b`` run B, ``c`` (or enter once both are marked) opens the compare screen."""

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


def run_line(run: RunRecord, current: str | None = None, mark: str = "") -> Text:
    summary = run.summary or {}
    mean = summary.get("mean_score")
    rollouts = summary.get("rollouts", run.dataset.get("rows", "?"))
    text = Text()
    text.append("▶ " if run.run_id == current else "  ")
    if mark:
        text.append(f" {mark} ", style="bold reverse")
        text.append(" ")
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
        Binding("a", "mark('A')", "Mark A", id="picker.mark_a", tooltip="Mark the highlighted run as A, the baseline"),
        Binding("b", "mark('B')", "Mark B", id="picker.mark_b", tooltip="Mark the highlighted run as B, compared with A"),
        Binding("c", "compare", "Compare", id="app.compare",
                tooltip="Compare B with A row by row (B: the marked or else the highlighted run; enter too once "
                        "both are marked)"),
    ]

    def __init__(self, store: Store, *, current: str | None = None) -> None:
        super().__init__()
        self.store = store
        self.current = current
        self.runs = store.list_runs()
        self.marks: dict[str, str] = {}  # "A"/"B" → run id

    def compose(self) -> ComposeResult:
        with Vertical(id="picker"):
            yield Static(Text.assemble((f"Open a run — {len(self.runs)} stored, newest first", "bold"),
                                       ("   a/b: mark A/B · c: compare", "dim")))
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
        if len(self.marks) == 2:
            self.action_compare()
            return
        self.dismiss(event.option.id)

    def action_choose(self) -> None:
        if not self.runs:
            return
        if len(self.marks) == 2:
            self.action_compare()
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

    # --- compare two runs ---------------------------------------------------------------------------------
    def _highlighted(self) -> str | None:
        if not self.runs:
            return None
        options = self.query_one(OptionList)
        return options.get_option_at_index(options.highlighted).id if options.highlighted is not None else None

    def action_mark(self, side: str) -> None:
        """Mark the highlighted run as ``side`` (again: unmark it); a run is never both A and B."""
        run_id = self._highlighted()
        if run_id is None:
            return
        if self.marks.get(side) == run_id:
            del self.marks[side]
        else:
            self.marks = {k: v for k, v in self.marks.items() if v != run_id}
            self.marks[side] = run_id
        marked = {v: k for k, v in self.marks.items()}
        options = self.query_one(OptionList)
        for run in self.runs:
            options.replace_option_prompt(run.run_id, run_line(run, self.current, marked.get(run.run_id, "")))

    def action_compare(self) -> None:
        run_a = self.marks.get("A")
        run_b = self.marks.get("B") or self._highlighted()
        if run_a is None:
            self.notify("press a on the baseline run (A) first, then b on the other one", severity="warning")
            return
        if run_b is None or run_b == run_a:
            self.notify("mark run B with b, or move to the run to compare with A", severity="warning")
            return
        self.dismiss(None)
        self.app.open_compare(run_a, run_b)  # type: ignore[attr-defined]
