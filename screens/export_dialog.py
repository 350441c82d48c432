"""Export the open run from the TUI (key ``x``): format, file and an optional assets directory, written by
``core.export.export_run`` — the same code as ``svgagent export`` — in a thread worker, then a notification of what
was written. The file goes by default to the user's exports directory (``Settings.exports_dir``, made on the first
export), not the working directory; the format's radio buttons show ● / ○, readable without colour. Dismissed with
the :class:`~svgagent.core.exchange.export.ExportResult`, or None when cancelled."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, RadioButton, RadioSet, Static

from svgagent.core.exchange.export import FORMATS, ExportResult, export_run
from svgagent.core.store.run_store import Store
from svgagent.core.terminal_text import cells, short_path
from svgagent.tui.widgets.keys_footer import KeysFooter
from svgagent.tui.widgets.screen_text import shown, shown_line

FORMAT_LABELS = {"jsonl": "JSONL (Eval Protocol rows)", "csv": "CSV (flat table)"}


def default_path(directory: Path, run_id: str, fmt: str) -> str:
    """``directory/<run id>.<fmt>``, with ``~`` for the home directory."""
    path = directory / f"{run_id}.{fmt}"
    try:
        return str(Path("~") / path.relative_to(Path.home()))
    except ValueError:
        return str(path)


class FormatButton(RadioButton):
    """A radio button whose state shows in its glyph — ● chosen, ○ not — not only in its colour."""

    @property  # type: ignore[override]
    def BUTTON_INNER(self) -> str:  # noqa: N802 - the name Textual's ToggleButton reads
        return "●" if self.value else "○"


def resolve(text: str) -> Path:
    """A path as typed: ``~`` expanded, relative to the working directory."""
    path = Path(text.strip()).expanduser()
    return path if path.is_absolute() else Path.cwd() / path


def describe(result: ExportResult) -> str:
    text = f"{result.rollouts} rollouts of {result.run_id} as {result.format.upper()} to {result.path}"
    if result.assets_dir is not None:
        text += f"; {result.pngs} PNGs and {result.svgs} SVGs to {result.assets_dir}"
    return text


class ExportDialog(ModalScreen[ExportResult | None]):
    SCOPED_CSS = False
    DEFAULT_CSS = """
    ExportDialog { align: center middle; }
    ExportDialog #export-box {
        width: 90%; max-width: 100; height: auto; border: round $accent; background: $surface; padding: 0 1;
    }
    ExportDialog .export-row { height: auto; margin-top: 1; }
    ExportDialog .export-label { width: 8; padding-top: 0; color: $text-muted; }
    ExportDialog #export-format { width: 1fr; border: none; padding: 0; layout: horizontal; height: auto; }
    ExportDialog #export-format RadioButton { width: auto; margin-right: 2; }
    ExportDialog Input { width: 1fr; }
    ExportDialog #export-status { height: auto; margin-top: 1; }
    ExportDialog #export-buttons { height: auto; margin-top: 1; align-horizontal: right; }
    ExportDialog #export-buttons Button { margin-left: 2; }
    """
    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="export.cancel"),
        Binding("ctrl+s", "export", "Export", id="export.write", tooltip="Write the file (enter in a field too)"),
        Binding("ctrl+t", "toggle_format", "JSONL/CSV", id="export.format", tooltip="Switch the format"),
    ]

    class Done(Message):
        def __init__(self, result: ExportResult | None, error: str = "") -> None:
            super().__init__()
            self.result, self.error = result, error

    def __init__(self, store: Store, run_id: str, *, directory: Path, name: str = "") -> None:
        super().__init__()
        self.store = store
        self.directory = directory
        self.run_id = run_id
        self.run_name = name
        self.format = "jsonl"
        self.busy = False

    def compose(self) -> ComposeResult:
        title = (
            f"Export {self.run_name} ({self.run_id})"
            if self.run_name and self.run_name != self.run_id
            else f"Export {self.run_id}"
        )
        with Vertical(id="export-box"):
            yield Static(Text(title, style="bold"))
            with Horizontal(classes="export-row"):
                yield Label("format", classes="export-label")
                with RadioSet(id="export-format"):
                    for fmt in FORMATS:
                        yield FormatButton(FORMAT_LABELS[fmt], value=fmt == self.format, id=f"format-{fmt}")
            with Horizontal(classes="export-row"):
                yield Label("file", classes="export-label")
                yield Input(default_path(self.directory, self.run_id, self.format), id="export-path", compact=True)
            with Horizontal(classes="export-row"):
                yield Label("assets", classes="export-label")
                yield Input(
                    placeholder="optional: a directory for each rollout's PNG and SVG", id="export-assets", compact=True
                )
            yield Static(id="export-status")
            with Horizontal(id="export-buttons"):
                yield Button("Export", id="export-go", variant="primary", compact=True)
                yield Button("Cancel", id="export-cancel", compact=True)
        yield KeysFooter()

    def on_mount(self) -> None:
        self.query_one("#export-path", Input).focus()
        self._check_path()

    # --- fields -------------------------------------------------------------------------------------------
    @on(RadioSet.Changed, "#export-format")
    def _format_chosen(self, event: RadioSet.Changed) -> None:
        chosen = (event.pressed.id or "format-jsonl").removeprefix("format-")
        self._set_format(chosen)

    def _set_format(self, fmt: str) -> None:
        old, self.format = self.format, fmt
        box = self.query_one("#export-path", Input)
        if old != fmt and box.value.endswith(f".{old}"):
            box.value = box.value[: -len(old)] + fmt
        button = self.query_one(f"#format-{fmt}", RadioButton)
        if not button.value:
            button.value = True
        self._check_path()

    def action_toggle_format(self) -> None:
        self._set_format(FORMATS[(FORMATS.index(self.format) + 1) % len(FORMATS)])

    @on(Input.Changed, "#export-path")
    @on(Input.Changed, "#export-assets")
    def _check_path(self) -> None:
        status = self.query_one("#export-status", Static)
        text = self.query_one("#export-path", Input).value.strip()
        if not text:
            status.update(Text("type a file name", style="yellow"))
            return
        path = resolve(text)
        assets_text = self.query_one("#export-assets", Input).value.strip()
        # one line the width of the dialog: each path as a person knows it (~, the file's name whole), so the field
        # above, scrolled to its end, is never the only place the path shows
        room = (status.content_region.width or max(20, min(100, self.app.size.width * 9 // 10) - 4)) - 1
        if path.is_dir():
            line, style = "{} is a directory: add a file name", "yellow"
        elif path.exists():
            line, style = "{} exists: it will be replaced", "yellow"
        elif path.parent == self.directory and not path.parent.exists():
            line, style = "writes {} (makes the directory)", "dim"
        elif not path.parent.is_dir():
            line, style, path = "no directory {}", "yellow", path.parent
        else:
            line, style = "writes {}", "dim"
        text = Text(line.format(short_path(path, max(12, room - cells(line.format(""))))), style=style)
        if assets_text:  # where the pictures go too (a relative directory is the working directory's, as the file's)
            pictures = "PNGs and SVGs to {}"
            text.append("\n" + pictures.format(short_path(resolve(assets_text), room - cells(pictures))), style="dim")
        status.update(text)

    @on(Input.Submitted)
    def _submitted(self) -> None:
        self.action_export()

    @on(Button.Pressed, "#export-go")
    def _go(self) -> None:
        self.action_export()

    @on(Button.Pressed, "#export-cancel")
    def _cancel_pressed(self) -> None:
        self.action_cancel()

    # --- writing ------------------------------------------------------------------------------------------
    def action_export(self) -> None:
        if self.busy:
            return
        text = self.query_one("#export-path", Input).value.strip()
        if not text:
            self.notify("type a file name to export to", severity="warning")
            return
        target = resolve(text)
        if target.is_dir():
            self.notify(f"{target} is a directory: add a file name", severity="warning")
            return
        assets_text = self.query_one("#export-assets", Input).value.strip()
        assets = resolve(assets_text) if assets_text else None
        self.busy = True
        self.query_one("#export-status", Static).update(shown_line(f"writing {target}…", style="italic"))
        self._write(self.format, target, assets)

    @work(thread=True, exclusive=True, group="export", exit_on_error=False)
    def _write(self, fmt: str, target: Path, assets: Path | None) -> None:
        try:
            if target.parent == self.directory:
                self.directory.mkdir(parents=True, exist_ok=True)
            result = export_run(self.store, self.run_id, fmt, target, assets=assets)
        except Exception as err:  # noqa: BLE001 - reported in the dialog, which stays open
            self.post_message(self.Done(None, str(err) or type(err).__name__))
            return
        self.post_message(self.Done(result))

    def on_export_dialog_done(self, message: Done) -> None:
        self.busy = False
        if message.result is None:
            self.query_one("#export-status", Static).update(shown(message.error, style="bold red"))
            self.notify(message.error, title="Export failed", severity="error", timeout=8)
            return
        self.app.notify(describe(message.result), title="Exported", timeout=6)
        self.dismiss(message.result)

    def action_cancel(self) -> None:
        if not self.busy:
            self.dismiss(None)
