"""The Secrets pane: the keys the app uses, where each comes from, masked; edit, reveal, test, add, delete.

Values are shown masked (first 4 + last 4); ``v`` reveals the selected one inside this widget only. Edits are typed
into a password field and saved to ``.env`` with ``write_env_file`` (atomic, mode 0600, other lines kept). ``t``
checks the selected key against its endpoint in a worker; the row shows ok / rejected / unreachable and a
notification says why, never with the key in it. After every save or delete the pane posts ``SecretsPane.Saved``
so the app can reload its settings.

(Over 400 lines: one table of keys with its edit, reveal, test, add and delete flows, which share the selection,
the prompt and the .env writer; where a key comes from and how it is masked are core's (secrets, verify_keys).)
"""

from __future__ import annotations

import os
from collections.abc import Collection
from pathlib import Path
from typing import ClassVar, Literal
from urllib.parse import urlsplit

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.widget import Widget
from textual.widgets import DataTable, Input, Label, Static

from svgagent.core.config.key_checks import VerifyResult, control_plane_url, verify_fireworks_key, verify_openai_key
from svgagent.core.config.secrets import SecretEntry, is_valid_name, read_env_file, read_secrets, write_env_file
from svgagent.core.config.settings import Settings
from svgagent.core.terminal_text import visible
from svgagent.tui.widgets.config_form import FocusHome
from svgagent.tui.widgets.screen_text import shown_line

Mode = Literal["table", "edit", "add", "confirm"]
SOURCE_LABELS = {"env-file": ".env", "environment": "environment", "unset": "unset"}
STATUS_STYLES = {
    "ok": "green",
    "rejected": "red",
    "unreachable": "yellow",
    "error": "red",
    "testing…": "dim",
    "simulator": "yellow",
}
COLUMNS = (("Name", "name", 22), ("Source", "source", 13), ("Value", "value", 22), ("Test", "test", 11))


def _is_fireworks(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    return host == "fireworks.ai" or host.endswith(".fireworks.ai")


class SecretsPane(Widget):
    """A table of keys with their source and masked value; every action is a key (see ``BINDINGS``)."""

    PALETTE_TITLE: ClassVar[str] = "Secrets"  # its keys in the command palette (tui/palette_commands.py)

    DEFAULT_CSS = """
    SecretsPane { height: 1fr; layout: vertical; }
    SecretsPane > DataTable { height: auto; max-height: 1fr; }
    SecretsPane > #secrets-detail { height: auto; padding: 0 1; margin-top: 1; color: $text-muted; }
    SecretsPane > #secrets-editor { height: 1; margin-top: 1; display: none; }
    SecretsPane > #secrets-editor.-open { display: block; }
    SecretsPane #secrets-prompt { width: auto; padding: 0 1; }
    SecretsPane #secrets-input { width: 1fr; }
    """

    BINDINGS: ClassVar[list[Binding]] = [
        # the arrow keys are the table's own; j/k as in every other list of the app
        Binding("j", "cursor(1)", "Down", show=False, id="secrets.down", tooltip="Select the next key"),
        Binding("k", "cursor(-1)", "Up", show=False, id="secrets.up", tooltip="Select the previous key"),
        Binding("e", "edit", "Edit", id="secrets.edit", tooltip="Type a new value for the selected key"),
        Binding("v", "reveal", "Reveal", id="secrets.reveal", tooltip="Show or hide the selected value"),
        Binding("t", "verify", "Test", id="secrets.verify", tooltip="Check the selected key against its endpoint"),
        Binding("a", "add", "Add", id="secrets.add", tooltip="Add a new variable to .env"),
        Binding("d", "delete", "Delete", id="secrets.delete", tooltip="Remove the selected variable from .env"),
        Binding("y", "confirm", "Yes, delete", id="secrets.confirm", tooltip="Confirm removing it from .env"),
        Binding("n", "decline", "No", id="secrets.no", tooltip="Keep it"),
        Binding("escape", "cancel", "Cancel", id="secrets.cancel", tooltip="Drop what was typed"),
        Binding("escape", "back", "Back", id="secrets.back", tooltip="Leave the pane"),
    ]

    class Saved(Message):
        """``.env`` changed: ``names`` were written or removed. Reload settings."""

        def __init__(self, pane: SecretsPane, names: list[str]) -> None:
            super().__init__()
            self.pane = pane
            self.names = names

    class _Verified(Message):
        def __init__(self, name: str, result: VerifyResult) -> None:
            super().__init__()
            self.name, self.result = name, result

    def __init__(
        self,
        env_file: Path,
        *,
        control_plane_url: str | None = None,
        policy_base_url: str = Settings.model_fields["base_url"].default,
        judge_base_url: str = Settings.model_fields["judge_base_url"].default,
        simulated: Collection[str] = (),
        name: str | None = None,
        id: str | None = None,  # noqa: A002 - Textual's name
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.env_file = Path(env_file)
        self.control_plane_url = control_plane_url
        self.policy_base_url = policy_base_url
        self.judge_base_url = judge_base_url
        self.simulated = frozenset(simulated)  # endpoints that are demo mode's simulator, not the real service
        self._entries: dict[str, SecretEntry] = {}
        self._revealed: set[str] = set()
        self._status: dict[str, tuple[str, str]] = {}  # name -> (short status, message)
        self._mode: Mode = "table"
        self._target: str | None = None  # the key being edited or deleted

    def _path_label(self) -> str:
        """The .env path for people: relative to the working directory when it is inside it."""
        try:
            return str(self.env_file.resolve().relative_to(Path.cwd().resolve()))
        except (ValueError, OSError):
            return str(self.env_file)

    # --- public API -------------------------------------------------------------------------------------------
    @property
    def entries(self) -> list[SecretEntry]:
        return list(self._entries.values())

    @property
    def mode(self) -> Mode:
        return self._mode

    @property
    def revealed(self) -> frozenset[str]:
        return frozenset(self._revealed)

    def status_of(self, name: str) -> str:
        """The short test status shown in the row ('' when not tested)."""
        return self._status.get(name, ("", ""))[0]

    def row_cells(self, name: str) -> list[str]:
        """The plain text of a row as the table shows it."""
        table = self.query_one(DataTable)
        return [str(cell) for cell in table.get_row(name)]

    @property
    def selected(self) -> str | None:
        table = self.query_one(DataTable)
        if not table.row_count:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key
        return key.value

    def reload(self) -> None:
        """Read ``.env`` and the environment again and redraw the table, keeping the cursor on its key."""
        current = self.selected if self.is_mounted else None
        self._entries = {e.name: e for e in read_secrets(self.env_file, os.environ)}
        self._revealed &= {n for n, e in self._entries.items() if e.value}
        table = self.query_one(DataTable)
        with self.app.batch_update():
            table.clear()
            for entry in self._entries.values():
                table.add_row(*self._cells(entry), key=entry.name)
            if current in self._entries:
                table.move_cursor(row=table.get_row_index(current))
        self._update_detail()

    # --- compose ----------------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        table: DataTable[str | Text] = DataTable(id="secrets-table", cursor_type="row", zebra_stripes=True)
        for label, key, width in COLUMNS:
            table.add_column(label, key=key, width=width)
        yield table
        yield Static("", id="secrets-detail", markup=False)
        with Horizontal(id="secrets-editor"):
            yield Label("", id="secrets-prompt", markup=False)
            yield Input(id="secrets-input", password=True, compact=True)

    def on_mount(self) -> None:
        self.reload()

    def _cells(self, entry: SecretEntry) -> list[str | Text]:
        source = SOURCE_LABELS[entry.source]
        if entry.shadowed:
            source = "env over .env"
        if entry.name in self._revealed and entry.value:  # names and values may come from a project's .env: data
            value = shown_line(entry.value, style="bold")
        else:
            value = shown_line(entry.masked) if entry.masked else Text("—", style="dim")
        status = self._status.get(entry.name, ("", ""))[0]
        return [shown_line(entry.name), source, value, Text(status, style=STATUS_STYLES.get(status, ""))]

    def _refresh_row(self, name: str) -> None:
        entry = self._entries.get(name)
        if entry is None:
            return
        table = self.query_one(DataTable)
        for (_, column, _), cell in zip(COLUMNS, self._cells(entry), strict=True):
            table.update_cell(name, column, cell)
        self._update_detail()

    def _update_detail(self) -> None:
        detail = self.query_one("#secrets-detail", Static)
        if self._mode == "confirm" and self._target:
            detail.update(f"Remove {self._target} from {self.env_file.name}?  y = yes   n / esc = no")
            return
        if self._mode == "edit" and self._target:
            detail.update(
                f"Type the new value of {self._target}: Enter saves it to {self._path_label()} (mode 0600), "
                "Esc cancels."
            )
            return
        if self._mode == "add":
            detail.update("Name of the new variable (letters, digits, _): Enter continues, Esc cancels.")
            return
        name = self.selected
        entry = self._entries.get(name or "")
        if entry is None:
            detail.update("")
            return
        if entry.source == "environment":
            where = "from the environment" + (
                f" (it overrides the value in {self.env_file.name})" if entry.shadowed else ""
            )
        elif entry.source == "env-file":
            where = f"from {self._path_label()}"
        else:
            where = f"not set: press e to save it in {self.env_file.name}"
        lines = [f"{entry.name} · {where}"]
        if entry.name in self._revealed and entry.value:
            lines.append(f"value: {entry.value}")
        message = self._status.get(entry.name, ("", ""))[1]
        if message:
            lines.append(message)
        detail.update(visible("\n".join(lines)))  # a value from a project's .env: outside text

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self._update_detail()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()  # Enter on a row edits it
        self.action_edit()

    # --- modes ------------------------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("confirm", "decline"):
            return self._mode == "confirm"
        if action == "cancel":
            return self._mode != "table"
        if action in ("cursor", "edit", "reveal", "verify", "add", "delete", "back"):
            return self._mode == "table"
        return True

    def _set_mode(self, mode: Mode, target: str | None = None) -> None:
        self._mode, self._target = mode, target
        editor = self.query_one("#secrets-editor")
        field = self.query_one("#secrets-input", Input)
        prompt = self.query_one("#secrets-prompt", Label)
        field.value = ""  # a typed secret never outlives its edit
        if mode in ("edit", "add"):
            field.password = mode == "edit"
            if mode == "edit":
                prompt.update(f"{target} =")
                field.placeholder = "new value"
            else:
                prompt.update("New variable:")
                field.placeholder = "NAME"
            editor.add_class("-open")
            field.focus()
        else:
            editor.remove_class("-open")
            if mode == "table":
                self.query_one(DataTable).focus()
        self._update_detail()
        self.refresh_bindings()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "secrets-input":
            event.stop()  # the value may be a secret: it goes no further than this widget

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "secrets-input":
            return
        event.stop()
        text = event.value.strip()
        event.input.value = ""
        try:
            if self._mode == "add":
                self._submit_name(text)
            elif self._mode == "edit" and self._target:
                self._submit_value(self._target, text)
        except Exception as err:  # noqa: BLE001 - a crash report would print locals, and one of them is the secret
            self.notify(f"Not saved: unexpected {type(err).__name__}", title="Secrets", severity="error")

    def _submit_name(self, name: str) -> None:
        if not is_valid_name(name):
            self.notify("Use letters, digits and _ (not starting with a digit)", title="Invalid name", severity="error")
            return
        self._set_mode("edit", name)

    def _submit_value(self, name: str, value: str) -> None:
        if not value:
            self.notify(
                f"Nothing saved: the value is empty (d removes {name} from .env)", title="Secrets", severity="warning"
            )
            return
        if not self._write({name: value}):
            return
        self._status.pop(name, None)
        self._set_mode("table")
        self.reload()
        self._select(name)
        message = f"Saved {name} to {self.env_file.name}"
        if self._entries[name].source == "environment":
            self.notify(message + ", but the environment variable still wins", title="Secrets", severity="warning")
        else:
            self.notify(message, title="Secrets")
        self.post_message(self.Saved(self, [name]))

    def _write(self, updates: dict[str, str | None]) -> bool:
        try:
            write_env_file(self.env_file, updates)
        except (OSError, ValueError) as err:
            self.notify(f"Not saved: {err}", title="Secrets", severity="error")
            return False
        return True

    def _select(self, name: str) -> None:
        table = self.query_one(DataTable)
        if name in self._entries:
            table.move_cursor(row=table.get_row_index(name))

    # --- actions ----------------------------------------------------------------------------------------------
    def action_cursor(self, step: int) -> None:
        if self._mode != "table":
            return
        table = self.query_one(DataTable)
        table.action_cursor_down() if step > 0 else table.action_cursor_up()

    def action_edit(self) -> None:
        if self._mode == "table" and (name := self.selected):
            self._set_mode("edit", name)

    def action_add(self) -> None:
        if self._mode == "table":
            self._set_mode("add")

    def action_reveal(self) -> None:
        name = self.selected
        if self._mode != "table" or not name:
            return
        entry = self._entries[name]
        if not entry.value:
            self.notify(f"{name} is not set", title="Secrets", severity="warning")
            return
        self._revealed.symmetric_difference_update({name})
        self._refresh_row(name)

    def action_delete(self) -> None:
        name = self.selected
        if self._mode != "table" or not name:
            return
        if name not in read_env_file(self.env_file):
            where = "it comes from the environment" if self._entries[name].source == "environment" else "nothing to do"
            self.notify(f"{name} is not in {self.env_file.name}: {where}", title="Secrets", severity="warning")
            return
        self._set_mode("confirm", name)

    def action_confirm(self) -> None:
        name = self._target
        if self._mode != "confirm" or not name:
            return
        if not self._write({name: None}):
            self._set_mode("table")
            return
        self._revealed.discard(name)
        self._status.pop(name, None)
        self._set_mode("table")
        self.reload()
        self.notify(f"Removed {name} from {self.env_file.name}", title="Secrets")
        self.post_message(self.Saved(self, [name]))

    def action_cancel(self) -> None:
        if self._mode != "table":
            self._set_mode("table")

    def action_decline(self) -> None:
        self.action_cancel()

    def action_back(self) -> None:
        if self._mode != "table":
            self._set_mode("table")
            return
        self.screen.set_focus(None)
        self.post_message(FocusHome(self))

    def action_verify(self) -> None:
        name = self.selected
        if self._mode != "table" or not name:
            return
        entry = self._entries[name]
        if not entry.value:
            self._status[name] = ("not set", "")
            self._refresh_row(name)
            self.notify(f"{name} is not set", title="Test", severity="warning")
            return
        self._status[name] = ("testing…", "")
        self._refresh_row(name)
        self.run_worker(
            self._verify(name, entry.value), group=f"secrets-verify-{name}", exclusive=True, exit_on_error=False
        )

    # --- verification -----------------------------------------------------------------------------------------
    async def _verify(self, name: str, value: str) -> None:
        try:
            result = await self._check(name, value)
        except Exception as err:  # noqa: BLE001 - the row must get an answer; the message never holds the key
            result = VerifyResult("error", f"error: {type(err).__name__}")
        self.post_message(self._Verified(name, result))

    @classmethod
    def for_settings(
        cls,
        env_file: Path,
        settings: Settings,
        *,
        simulated: bool,
        id: str | None = None,  # noqa: A002
    ) -> SecretsPane:
        """The pane testing keys against ``settings``' endpoints (``simulated``: they are demo mode's simulator)."""
        return cls(
            env_file,
            control_plane_url=control_plane_url(),
            policy_base_url=settings.base_url,
            judge_base_url=settings.judge_base_url,
            simulated={settings.base_url, settings.judge_base_url} if simulated else (),
            id=id,
        )

    def use_endpoints(self, settings: Settings) -> None:
        """Demo mode ended: test keys against ``settings``' endpoints, which are real."""
        self.policy_base_url, self.judge_base_url = settings.base_url, settings.judge_base_url
        self.simulated = frozenset()
        self._status.clear()
        self.reload()

    def _against(self, url: str, result: VerifyResult) -> VerifyResult:
        """A check against demo mode's simulator says so: it accepts any key, so it tells nothing of the real one."""
        if url not in self.simulated:
            return result
        verdict = "answered" if result.ok else f"did not answer ({result.message})"
        return VerifyResult(
            "simulator" if result.ok else result.status,
            f"the demo simulator {verdict} — demo mode does not check keys with the real service "
            "(save both keys to leave it, then t tests them for real)",
            result.account_id,
        )

    async def _check(self, name: str, value: str) -> VerifyResult:
        if name == "OPENAI_API_KEY":
            return self._against(self.judge_base_url, await verify_openai_key(self.judge_base_url, value, name=name))
        if name == "FIREWORKS_API_KEY":
            results = [("control plane", await verify_fireworks_key(value, self.control_plane_url))]
            if self.policy_base_url and not _is_fireworks(self.policy_base_url):
                policy = await verify_openai_key(self.policy_base_url, value, name=name)
                results.append(("policy endpoint", self._against(self.policy_base_url, policy)))
            if len(results) == 1:
                return results[0][1]
            bad = next((r for _, r in results if not r.ok), None)
            message = "; ".join(f"{label}: {r.message}" for label, r in results)
            return VerifyResult(bad.status if bad else "ok", message, results[0][1].account_id)
        if name == "FIREWORKS_ACCOUNT_ID":
            key_entry = self._entries.get("FIREWORKS_API_KEY")
            if key_entry is None or not key_entry.value:
                return VerifyResult("error", "set FIREWORKS_API_KEY to check the account id")
            result = await verify_fireworks_key(key_entry.value, self.control_plane_url)
            if not result.ok:
                return VerifyResult(result.status, f"FIREWORKS_API_KEY {result.message}")
            if result.account_id is None:
                return VerifyResult("error", "the control plane did not report an account id")
            if result.account_id == value:
                return VerifyResult("ok", "matches the account of FIREWORKS_API_KEY", result.account_id)
            return VerifyResult(
                "rejected", f"FIREWORKS_API_KEY belongs to account {result.account_id}", result.account_id
            )
        return VerifyResult("error", f"no endpoint is known for {name}")

    def on_secrets_pane__verified(self, message: _Verified) -> None:
        message.stop()
        result = message.result
        self._status[message.name] = (result.status, result.message)
        self._refresh_row(message.name)
        severity = {"ok": "information", "unreachable": "warning", "simulator": "warning"}.get(result.status, "error")
        self.notify(f"{message.name}: {result.message}", title="Test", severity=severity)  # type: ignore[arg-type]
