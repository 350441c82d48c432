"""The Config pane: every run setting of the core ``Settings`` model as a form, validated as you type.

The form is generated from ``Settings.model_fields`` (the field specs, checks and the project file's writer are in
``svgagent.core.config.form_fields``): ``Input`` for text and numbers, ``ChoiceField`` for enums and
literals, ``Switch`` for booleans. Keys (fields read from their own variable names) and local paths are left to the
Secrets pane and the command line. Each value is checked by assigning it through the model's own validator, so the
field's constraints and validators apply exactly as when settings load; an invalid value shows its error under the
field and ``values()`` keeps the last valid one. A text field takes typed keys only once the person chose to edit it
(Enter or ``e``; ``FieldInput``): until then every key is the app's, so ``3`` then ``1`` goes back to Rollouts.

``ctrl+s`` writes the fields the person changed into ``svgagent.toml`` in the working directory (with tomlkit: the
file's other keys, comments and layout are kept) — never the values the form was given, such as demo mode's simulator
endpoints. Start/stop/resume belong to the app: it listens for ``ConfigForm.Changed`` and uses the settings it
carries for the next run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.events import DescendantBlur
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Input, Label, Switch

from svgagent.core.config.form_fields import (
    DATASET_FILE,
    FieldSpec,
    form_fields,
    input_text,
    save_project_config,
    validate_field,
)
from svgagent.core.config.settings import PROJECT_CONFIG_FILE, Settings
from svgagent.core.run.dataset import BUILTIN, load_dataset
from svgagent.core.scoring.errors import SvgAgentError
from svgagent.core.terminal_text import cells
from svgagent.tui.own_class import set_own_class
from svgagent.tui.widgets.choice_field import ChoiceField
from svgagent.tui.widgets.field_input import FieldInput
from svgagent.tui.widgets.text_box import TextBox

LABEL_WIDTH = 19  # the field's name beside it (.field-label, .hint's margin)
STACKED = "-stacked"  # a narrow form: labels above their fields
STACKED_TARGETS = ".row, .row Input, .row ChoiceField, #dataset-kind, .hint"  # what the -stacked rules style


class FocusHome(Message):
    """Escape in a form field: the app may move focus to its main view (e.g. the rollout table)."""

    def __init__(self, origin: Widget) -> None:
        super().__init__()
        self.origin = origin


def first_screenful(specs: list[FieldSpec], width: int | None, height: int) -> int:
    """How many fields' rows fill a form of ``width`` × ``height`` (the last one may be cut): a row is its field's
    line (two when stacked: the label above) and the hint under it, folded at the hint's width."""
    stacked = width is not None and width < ConfigForm.STACK_BELOW
    hint_width = max(8, (width or 80) - 3 - (2 if stacked else LABEL_WIDTH))
    lines = 0
    for count, spec in enumerate(specs, start=1):
        hint_lines = max(1, -(-cells(spec.description) // hint_width))
        lines += (3 + hint_lines) if stacked else (1 + hint_lines)
        if lines >= height:
            return count
    return len(specs)


# --- the widget -------------------------------------------------------------------------------------------------


class _FormBody(VerticalScroll, can_focus=False):
    pass


class _Rows(Vertical):
    """A block of rows. The rows mounted after the first screenful go into a block of their own, laid out below
    the first: Textual orders focus by position, and rows not laid out yet sit at 0 — in the first block, Tab went
    from the first field to the first new one until the next layout; in their own block they are in order."""


class ConfigForm(Widget):
    """Run settings as a keyboard form. ``values()`` holds only valid values; ``errors()`` the fields in error."""

    PALETTE_TITLE: ClassVar[str] = "Config"  # its keys in the command palette (tui/palette_commands.py)

    DEFAULT_CSS = f"""
    ConfigForm {{ height: 1fr; }}
    ConfigForm > _FormBody {{ height: 1fr; padding: 0 1; }}
    ConfigForm _Rows {{ height: auto; }}
    ConfigForm .row {{ height: 1; }}
    ConfigForm .field-label {{ width: {LABEL_WIDTH}; height: 1; color: $text; }}
    ConfigForm .row Input, ConfigForm .row ChoiceField {{ width: 1fr; }}
    ConfigForm .row Switch {{ border: none; height: 1; padding: 0 1; width: auto; }}
    ConfigForm .row Switch:focus {{ border: none; background: $block-cursor-background; }}
    ConfigForm .hint {{ height: auto; margin-left: {LABEL_WIDTH}; color: $text-muted; }}
    ConfigForm .hint.-error {{ color: $text-error; }}
    ConfigForm #dataset-kind {{ width: 16; }}
    ConfigForm #field-dataset {{ width: 1fr; }}
    /* -stacked restyles only what matches STACKED_TARGETS (tui/own_class) */
    ConfigForm.-stacked .row {{ height: 2; layout: vertical; }}
    ConfigForm.-stacked .row Input, ConfigForm.-stacked .row ChoiceField {{ width: 100%; }}
    ConfigForm.-stacked #dataset-kind {{ width: 100%; }}
    ConfigForm.-stacked .hint {{ margin-left: 2; margin-bottom: 1; }}
    """
    STACK_BELOW = 64  # narrower than this, each label goes above its field and the hint gets the full width

    BINDINGS: ClassVar[list[Binding]] = [
        Binding("ctrl+s", "save", "Save config", id="config.save", tooltip=f"Write {PROJECT_CONFIG_FILE} here"),
        Binding(
            "e",
            "edit_field",
            "Edit",
            id="config.edit",
            tooltip="Type into the field with the focus (also enter); esc ends the edit. Until then keys are the app's",
        ),
        Binding("escape", "focus_home", "Back", id="config.back", tooltip="Leave the form"),
    ]

    class Changed(Message):
        """The valid values changed: ``settings`` is what the next run should use."""

        def __init__(self, form: ConfigForm, settings: Settings) -> None:
            super().__init__()
            self.form = form
            self.settings = settings

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, ConfigForm.Changed) and message.form is self.form

    class Saved(Message):
        def __init__(self, form: ConfigForm, path: Path) -> None:
            super().__init__()
            self.form = form
            self.path = path

    class _DatasetChecked(Message):
        def __init__(self, source: str, value: str | None, note: str, error: str | None) -> None:
            super().__init__()
            self.source, self.value, self.note, self.error = source, value, note, error

    def __init__(
        self,
        settings: Settings,
        *,
        save_path: Path | None = None,
        width: int | None = None,
        height: int | None = None,
        name: str | None = None,
        id: str | None = None,  # noqa: A002 - Textual's name
        classes: str | None = None,
    ) -> None:
        """``width`` and ``height``: the size the form will be laid out at, when its place knows it. The stacked
        layout is then chosen before the rows mount (choosing it once they are restyles every row: ~150 style
        applications), and only the rows that fit are mounted at first: the rest follow once those are on the
        screen (a form of 24 fields is ~120 widgets; mounting, styling and laying them all out took 150 ms)."""
        if width is not None and width < self.STACK_BELOW:
            classes = f"{classes or ''} {STACKED}".strip()
        super().__init__(name=name, id=id, classes=classes)
        self._base = settings
        self._save_path = save_path
        self._specs = form_fields()
        self._values: dict[str, Any] = {s.name: getattr(settings, s.name) for s in self._specs}
        self._saved = dict(self._values)  # what the form started with (or last saved): save writes the difference
        self._errors: dict[str, str] = {}
        self._dataset_pending: str | None = None
        # the dataset text (a path, "" or BUILTIN) whose check the hint shows the outcome of; a check reads the file
        # in a thread, so that outcome comes later than the keystroke: ``dataset_checked`` waits for it
        self._dataset_outcome: str | None = None
        self._dataset_outcome_changed = asyncio.Event()
        self._first_rows = len(self._specs) if height is None else first_screenful(self._specs, width, height)
        self._mounted: set[str] = set()  # fields whose row is mounted
        self._hints: dict[str, tuple[str, bool]] = {}  # what a field's hint says (and whether it is an error)
        self._complete = asyncio.Event()
        self._completing = False
        self._after_complete: list[Callable[[], object]] = []
        self._typed: dict[str, str] = {}  # set_text for a field whose row is not mounted yet

    # --- public API ---------------------------------------------------------------------------------------------
    def values(self) -> dict[str, Any]:
        """The last valid value of every field in the form."""
        return dict(self._values)

    def errors(self) -> dict[str, str]:
        """Fields whose current input is invalid, with the message shown next to them."""
        return dict(self._errors)

    def set_text(self, name: str, value: str) -> None:
        """Type ``value`` into field ``name`` (as if the person had), e.g. a job's output model to evaluate."""
        if name not in self._mounted:  # its row comes later: it shows the value checked now
            self._apply(name, value)
            self._typed[name] = value
            return
        for box in self.query(f"#field-{name}").results(Input):
            box.value = value

    async def dataset_checked(self, text: str) -> None:
        """Wait until the dataset field shows the outcome of checking ``text`` (the path typed, ``""``, or
        ``"builtin"`` for the built-in kind): the field's change, the file read in a thread and its result all
        arrive as messages after the keystroke."""
        while self._dataset_outcome != text:
            self._dataset_outcome_changed.clear()
            await self._dataset_outcome_changed.wait()

    def _dataset_settled(self, text: str | None) -> None:
        self._dataset_outcome = text
        self._dataset_outcome_changed.set()

    @property
    def settings(self) -> Settings:
        """The settings given to the form with its valid values applied (keys and local paths unchanged)."""
        return self._base.model_copy(update=self._values)

    @property
    def save_path(self) -> Path:
        return self._save_path or Path.cwd() / PROJECT_CONFIG_FILE

    # --- compose ------------------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        with _FormBody():
            with _Rows(id="first-rows"):
                for spec in self._specs[: self._first_rows]:
                    yield from self._row(spec)
            yield _Rows(id="other-rows")

    def _row(self, spec: FieldSpec) -> Iterable[Widget]:
        text, error = self._hints.get(spec.name, (spec.description, False))
        controls = list(self._controls(spec))
        for control in controls:
            control.set_class(error and control.id == f"field-{spec.name}", "-invalid")
        yield Horizontal(Label(spec.name, classes="field-label"), *controls, classes="row")
        yield TextBox(text, id=f"hint-{spec.name}", classes="hint -error" if error else "hint")

    async def _mount_other_rows(self) -> None:
        """The rows below the first screenful."""
        rows = [widget for spec in self._specs[self._first_rows :] for widget in self._row(spec)]
        await self.query_one("#other-rows", _Rows).mount_all(rows)
        self._rows_mounted(self._specs[self._first_rows :])
        self._complete.set()
        while self._after_complete:
            self._after_complete.pop(0)()

    async def every_row(self) -> None:
        """Wait until every field is mounted (the first screenful is, when the form first shows)."""
        await self._complete.wait()

    def _controls(self, spec: FieldSpec) -> Iterable[Widget]:
        value = self._values[spec.name]
        wid = f"field-{spec.name}"
        if spec.kind == "switch":
            yield Switch(bool(value), id=wid)
            yield Label("on" if value else "off", id=f"state-{spec.name}", classes="switch-state")
        elif spec.kind == "select":
            options = [(label, choice) for label, choice in spec.choices]
            yield ChoiceField(options, value=value, allow_blank=spec.optional, prompt="(none)", id=wid)
        elif spec.kind == "dataset":
            is_builtin = str(value).strip() == BUILTIN
            kinds = [("built-in", BUILTIN), ("file", DATASET_FILE)]
            kind = BUILTIN if is_builtin else DATASET_FILE
            yield ChoiceField(kinds, value=kind, id="dataset-kind")
            yield FieldInput(
                "" if is_builtin else str(value),
                placeholder="path to questions.json or .jsonl",
                id=wid,
                compact=True,
                disabled=is_builtin,
            )
        else:
            text = self._typed.get(spec.name)
            text = input_text(value) if text is None else text
            yield FieldInput(text, id=wid, compact=True, placeholder="(none)" if spec.optional else "")

    def reset(self, settings: Settings) -> None:
        """Start again from ``settings`` (demo mode ended: the real endpoints and models replace the simulator's);
        the fields the person changed keep their values."""
        edited = self.edited()
        self._base = settings
        for spec in self._specs:
            if spec.name in edited:
                continue
            value = getattr(settings, spec.name)
            self._values[spec.name] = self._saved[spec.name] = value
            self._errors.pop(spec.name, None)
            self._typed.pop(spec.name, None)
            if spec.name in self._mounted:  # a row not mounted yet shows the value when it is
                self._show_value(spec)
        self.post_message(self.Changed(self, self.settings))

    def _show_value(self, spec: FieldSpec) -> None:
        control = self.query_one(f"#field-{spec.name}")
        value = self._values[spec.name]
        if isinstance(control, Switch):
            control.value = bool(value)
        elif isinstance(control, ChoiceField):
            control.value = value
        elif isinstance(control, Input) and spec.kind != "dataset":
            control.value = input_text(value)

    def _rows_mounted(self, specs: Iterable[FieldSpec]) -> None:
        """These rows are mounted: what changed while they were being made (a reset, a text set, a hint) shows."""
        for spec in specs:
            self._mounted.add(spec.name)
            if (text := self._typed.pop(spec.name, None)) is not None:
                self.query_one(f"#field-{spec.name}", Input).value = text
            else:
                self._show_value(spec)
            self._paint(spec.name)

    def on_mount(self) -> None:
        self._rows_mounted(self._specs[: self._first_rows])
        self._check_dataset(str(self._values["dataset"]))
        if self._first_rows == len(self._specs):
            self._complete.set()

    def on_show(self) -> None:
        """The first screenful is on the screen (Textual sends Show as it writes the frame that shows the form): the
        rows under it follow, once."""
        if not self._complete.is_set() and not self._completing:
            self._completing = True
            self.call_later(self._mount_other_rows)

    def on_resize(self) -> None:
        """A narrow pane (the 120×40 grid gives it ~38 columns): labels above the fields, hints the whole width —
        beside a 19-column label, 17 columns were left and words were cut in the middle."""
        set_own_class(self, self.size.width < self.STACK_BELOW, STACKED, restyle=self.query(STACKED_TARGETS))

    def on_descendant_blur(self, event: DescendantBlur) -> None:
        """Leaving a text field shows its value from the start (after typing, the end was in view:
        "mulated-policy")."""
        if isinstance(event.widget, Input):
            event.widget.cursor_position = 0
            event.widget.scroll_to(x=0, animate=False)

    # --- editing ------------------------------------------------------------------------------------------------
    def _spec_for(self, widget: Widget | None) -> FieldSpec | None:
        wid = getattr(widget, "id", None) or ""
        if wid == "dataset-kind":
            wid = "field-dataset"
        name = wid.removeprefix("field-")
        return next((s for s in self._specs if s.name == name), None)

    def on_input_changed(self, event: Input.Changed) -> None:
        spec = self._spec_for(event.input)
        if spec is None:
            return
        event.stop()
        if spec.kind == "dataset":
            self._dataset_edited()
        else:
            self._apply(spec.name, event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if self._spec_for(event.input) is not None:
            event.stop()
            self.screen.focus_next()

    def on_choice_field_changed(self, event: ChoiceField.Changed) -> None:
        spec = self._spec_for(event.field)
        if spec is None:
            return
        event.stop()
        if spec.kind == "dataset":
            path_input = self.query_one("#field-dataset", Input)
            path_input.disabled = event.value != DATASET_FILE
            self._dataset_edited()
            return
        self._apply(spec.name, event.value)

    def on_switch_changed(self, event: Switch.Changed) -> None:
        spec = self._spec_for(event.switch)
        if spec is not None:
            event.stop()
            self.query_one(f"#state-{spec.name}", Label).update("on" if event.value else "off")
            self._apply(spec.name, event.value)

    def _apply(self, name: str, raw: Any) -> None:
        value, error = validate_field(self._base, name, raw)
        if error is None:
            self._accept(name, value)
        self._show(name, error)

    def _accept(self, name: str, value: Any) -> None:
        self._errors.pop(name, None)
        if self._values.get(name) != value or type(self._values.get(name)) is not type(value):
            self._values[name] = value
            self.post_message(self.Changed(self, self.settings))

    def _show(self, name: str, error: str | None, note: str | None = None) -> None:
        if error is not None:
            self._errors[name] = error
        else:
            self._errors.pop(name, None)
        spec = next(s for s in self._specs if s.name == name)
        self._hints[name] = (f"✗ {error}" if error else (note or spec.description), error is not None)
        if name in self._mounted:  # a row not mounted yet shows it when it is
            self._paint(name)

    def _paint(self, name: str) -> None:
        text, error = self._hints.get(name, ("", False))
        if not text:
            return  # the description it was made with
        hint = self.query_one(f"#hint-{name}", TextBox)  # the same text again (every key typed) is no work
        hint.show(text)
        hint.set_class(error, "-error")
        self.query_one(f"#field-{name}").set_class(error, "-invalid")

    # --- dataset ------------------------------------------------------------------------------------------------
    def _dataset_edited(self) -> None:
        kind = self.query_one("#dataset-kind", ChoiceField).value
        if kind != DATASET_FILE:
            self._check_dataset(BUILTIN)
            return
        text = self.query_one("#field-dataset", Input).value.strip()
        if not text:
            self._dataset_pending = None
            self._show("dataset", "enter the path of a dataset file (questions.json or .jsonl)")
            self._dataset_settled(text)
            return
        path = Path(text).expanduser()
        if not path.exists():
            self._dataset_pending = None
            self._show("dataset", f"no such file: {text}")
            self._dataset_settled(text)
        elif not path.is_file():
            self._dataset_pending = None
            self._show("dataset", f"not a file: {text}")
            self._dataset_settled(text)
        else:
            self._check_dataset(text)

    def _check_dataset(self, source: str) -> None:
        self._dataset_pending = source
        self._dataset_settled(None)  # checking: no outcome shown
        self._show("dataset", None, "checking…")
        self._load_dataset(source)

    @work(thread=True, exclusive=True, group="config-dataset", exit_on_error=False)
    def _load_dataset(self, source: str) -> None:
        try:
            dataset = load_dataset(source)
        except (SvgAgentError, OSError, ValueError) as err:
            self.post_message(self._DatasetChecked(source, None, "", str(err)))
            return
        label = "built-in" if source == BUILTIN else dataset.format
        note = f"{label}: {len(dataset)} rows"
        self.post_message(self._DatasetChecked(source, source, note, None))

    def on_config_form__dataset_checked(self, message: _DatasetChecked) -> None:
        message.stop()
        if message.source != self._dataset_pending:
            return  # the field changed while this file was being read
        if "dataset" in self._mounted and not self.query("#hint-dataset"):
            return  # the app is closing: Textual removed the fields before this form's queue was done
        self._dataset_pending = None
        if message.error is not None:
            self._show("dataset", message.error)
        else:
            value, error = validate_field(self._base, "dataset", message.value)
            if error is None:
                self._accept("dataset", value)
            self._show("dataset", error, message.note)
        self._dataset_settled(message.source)

    # --- actions ------------------------------------------------------------------------------------------------
    def edited(self) -> dict[str, Any]:
        """The valid values that differ from what the form started with (or last saved): what the person changed.
        Only these are saved — never what the form was given (in demo mode: the simulator's endpoints)."""
        return {
            name: value
            for name, value in self._values.items()
            if value != self._saved[name] or type(value) is not type(self._saved[name])
        }

    def action_save(self) -> None:
        if self._errors:
            names = ", ".join(self._errors)
            self.notify(f"Not saved: fix {names} first", title="Config", severity="error")
            return
        if self._dataset_pending is not None and self._dataset_pending != str(self._saved["dataset"]):
            # a dataset the person chose is being read; the start value's check (from mount) is no change
            self.notify("Not saved: the dataset is still being checked", title="Config", severity="warning")
            return
        edited = self.edited()
        if not edited:
            self.notify("Nothing to save: no field was changed", title="Config", severity="warning")
            return
        try:
            path = save_project_config(edited, self.save_path)
        except (OSError, ValueError) as err:
            self.notify(f"Not saved: {err}", title="Config", severity="error")
            return
        self._saved.update(edited)
        self.notify(f"Saved {', '.join(edited)} to {path.name}", title="Config")
        self.post_message(self.Saved(self, path))

    def point_at_error(self, *, title: str) -> None:
        """Say which field is invalid and why, and put the focus on it (e.g. when a run is refused for it)."""
        if not self._errors:
            return
        name, problem = next(iter(self._errors.items()))
        self.notify(
            f"{name}: {problem} — fix it first (until then the last valid value stays)",
            title=title,
            severity="error",
            timeout=8,
        )
        if not self._complete.is_set():
            self._after_complete.append(lambda: self._focus_field(name))
        else:
            self._focus_field(name)

    def _focus_field(self, name: str) -> None:
        for control in self.query(f"#field-{name}"):
            if control.focusable:
                self.screen.set_focus(control)
                return

    def _browsed_field(self) -> FieldInput | None:
        focused = self.screen.focused
        if isinstance(focused, FieldInput) and not focused.editing and focused in self.query(FieldInput):
            return focused
        return None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "edit_field":
            return self._browsed_field() is not None
        return True

    def action_edit_field(self) -> None:
        if (field := self._browsed_field()) is not None:
            field.start_edit()

    def action_focus_home(self) -> None:
        self.screen.set_focus(None)
        self.post_message(FocusHome(self))
