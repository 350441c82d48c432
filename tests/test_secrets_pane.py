"""Secrets pane: masked table, edit/add/delete to .env, reveal on a key, tests against local fake endpoints."""

from __future__ import annotations

import os
import stat
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from apps.settings_panes import (
    FAKE_ACCOUNT,
    GOOD_FIREWORKS,
    GOOD_OPENAI,
    FakeKeyServer,
    SecretsPaneApp,
    closed_port_url,
    fake_key_server,
    screen_text,
)
from dotenv import dotenv_values
from textual.widgets import DataTable, Input

from svgagent.tui.widgets.config_form import FocusHome
from svgagent.tui.widgets.secrets_form import SecretsPane

EXTRA = "extra-token-abcdefghijk-0042"
NEW_FW = "fw_brand-new-value-XYZ-7777"
ENV_TEXT = (
    "# keys for svgagent\n"
    f"FIREWORKS_API_KEY={GOOD_FIREWORKS}\n"
    "\n"
    "# judge\n"
    "OPENAI_API_KEY=skX-wrong-key-for-the-judge-1111\n"
    f"EXTRA_TOKEN={EXTRA}  # kept\n"
)
SECRETS = (GOOD_FIREWORKS, "skX-wrong-key-for-the-judge-1111", EXTRA, NEW_FW, GOOD_OPENAI)


@pytest.fixture
def env_file(isolated_env: Path) -> Path:
    path = isolated_env / ".env"
    path.write_text(ENV_TEXT)
    return path


@pytest.fixture
async def server() -> AsyncIterator[FakeKeyServer]:
    async with fake_key_server() as running:
        yield running


def _pane(app: SecretsPaneApp) -> SecretsPane:
    return app.query_one(SecretsPane)


async def _select(app: SecretsPaneApp, pilot, name: str) -> None:  # noqa: ANN001
    table = app.query_one(DataTable)
    table.focus()
    table.move_cursor(row=table.get_row_index(name))
    await pilot.pause()


def _assert_nothing_leaks(app: SecretsPaneApp, *, revealed: tuple[str, ...] = ()) -> None:
    svg = app.export_screenshot()
    text = screen_text(app)
    notes = " ".join(f"{title} {message}" for title, message in app.notes)
    for secret in SECRETS:
        assert secret not in notes
        if secret not in revealed:
            assert secret not in svg
            assert secret not in text


async def test_table_lists_keys_with_source_and_mask(env_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", GOOD_OPENAI)
    app = SecretsPaneApp(env_file)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        pane = _pane(app)
        assert [e.name for e in pane.entries] == [
            "FIREWORKS_API_KEY",
            "OPENAI_API_KEY",
            "FIREWORKS_ACCOUNT_ID",
            "EXTRA_TOKEN",
        ]
        assert pane.row_cells("FIREWORKS_API_KEY")[:3] == ["FIREWORKS_API_KEY", ".env", "fw_g…0002"]
        assert pane.row_cells("OPENAI_API_KEY")[:3] == ["OPENAI_API_KEY", "env over .env", "oa-g…0001"]
        assert pane.row_cells("FIREWORKS_ACCOUNT_ID")[1:3] == ["unset", "—"]
        assert pane.row_cells("EXTRA_TOKEN")[1:3] == [".env", "extr…0042"]
        await _select(app, pilot, "OPENAI_API_KEY")
        assert "overrides the value in .env" in screen_text(app)
        _assert_nothing_leaks(app)


async def test_edit_saves_to_env_file_with_0600(env_file: Path) -> None:
    env_file.chmod(0o644)
    app = SecretsPaneApp(env_file)
    async with app.run_test(size=(120, 40)) as pilot:
        pane = _pane(app)
        await _select(app, pilot, "FIREWORKS_API_KEY")
        await pilot.press("e")
        await pilot.pause()
        field = app.query_one("#secrets-input", Input)
        assert pane.mode == "edit"
        assert app.focused is field
        assert field.password
        await pilot.press(*NEW_FW)
        _assert_nothing_leaks(app)  # the typed value shows as dots
        await pilot.press("enter")
        await pilot.pause()
        assert pane.mode == "table"
        assert field.value == ""
        assert pane.row_cells("FIREWORKS_API_KEY")[1:3] == [".env", "fw_b…7777"]
        saved = [m for m in app.messages if isinstance(m, SecretsPane.Saved)]
        assert [m.names for m in saved] == [["FIREWORKS_API_KEY"]]
        assert any("Saved FIREWORKS_API_KEY" in message for _, message in app.notes)
        _assert_nothing_leaks(app)
    assert env_file.read_text() == ENV_TEXT.replace(GOOD_FIREWORKS, NEW_FW)
    assert stat.S_IMODE(os.stat(env_file).st_mode) == 0o600
    assert sorted(p.name for p in env_file.parent.iterdir()) == [".env"]


async def test_j_and_k_move_the_selection(env_file: Path) -> None:
    """j/k move through the keys as in every other list of the app; in the prompt they are only typed."""
    app = SecretsPaneApp(env_file)
    async with app.run_test(size=(120, 40)) as pilot:
        pane = _pane(app)
        await _select(app, pilot, "FIREWORKS_API_KEY")
        names = [entry.name for entry in pane.entries]
        await pilot.press("j")
        await pilot.pause()
        assert pane.selected == names[1]
        await pilot.press("j", "k", "k")
        await pilot.pause()
        assert pane.selected == names[0]
        await pilot.press("e", "j", "k")
        await pilot.pause()
        assert app.query_one("#secrets-input", Input).value == "jk"
        assert pane.selected == names[0]
        await pilot.press("escape")
        await _select(app, pilot, "EXTRA_TOKEN")
        await pilot.press("d", "k")  # while it asks, the key it asks about stays selected
        await pilot.pause()
        assert pane.mode == "confirm"
        assert pane.selected == "EXTRA_TOKEN"
    assert env_file.read_text() == ENV_TEXT


async def test_escape_cancels_an_edit(env_file: Path) -> None:
    app = SecretsPaneApp(env_file)
    async with app.run_test(size=(120, 40)) as pilot:
        pane = _pane(app)
        await _select(app, pilot, "EXTRA_TOKEN")
        await pilot.press("e", "a", "b", "c", "escape")
        await pilot.pause()
        assert pane.mode == "table"
        assert app.focused is app.query_one(DataTable)
        assert app.query_one("#secrets-input", Input).value == ""
        assert not app.messages
    assert env_file.read_text() == ENV_TEXT


async def test_reveal_toggles_only_on_the_key(env_file: Path) -> None:
    app = SecretsPaneApp(env_file)
    async with app.run_test(size=(120, 40)) as pilot:
        pane = _pane(app)
        await _select(app, pilot, "EXTRA_TOKEN")
        assert pane.row_cells("EXTRA_TOKEN")[2] == "extr…0042"
        await pilot.press("v")
        await pilot.pause()
        assert pane.revealed == {"EXTRA_TOKEN"}
        assert pane.row_cells("EXTRA_TOKEN")[2] == EXTRA
        assert EXTRA in screen_text(app)
        _assert_nothing_leaks(app, revealed=(EXTRA,))
        await pilot.press("v")
        await pilot.pause()
        assert pane.revealed == frozenset()
        assert pane.row_cells("EXTRA_TOKEN")[2] == "extr…0042"
        _assert_nothing_leaks(app)


async def test_verify_ok_and_rejected_against_local_server(env_file: Path, server: FakeKeyServer) -> None:
    app = SecretsPaneApp(
        env_file, control_plane_url=server.url, policy_base_url=f"{server.url}/v1", judge_base_url=f"{server.url}/v1"
    )
    async with app.run_test(size=(120, 40)) as pilot:
        pane = _pane(app)
        await _select(app, pilot, "FIREWORKS_API_KEY")
        await pilot.press("t")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert pane.status_of("FIREWORKS_API_KEY") == "ok"
        assert pane.row_cells("FIREWORKS_API_KEY")[3] == "ok"
        assert server.hits == {"verify": 1, "models": 1}  # control plane + the (non-Fireworks) policy endpoint

        await _select(app, pilot, "OPENAI_API_KEY")
        await pilot.press("t")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert pane.row_cells("OPENAI_API_KEY")[3] == "rejected"
        assert "rejected (HTTP 401): the key is wrong or revoked" in screen_text(app)
        messages = [message for _, message in app.notes]
        assert any(m.startswith("FIREWORKS_API_KEY: control plane: FIREWORKS_API_KEY accepted") for m in messages)
        assert any(FAKE_ACCOUNT in m for m in messages)
        assert "OPENAI_API_KEY: rejected (HTTP 401): the key is wrong or revoked" in messages
        _assert_nothing_leaks(app)


async def test_verify_account_id_against_the_key(env_file: Path, server: FakeKeyServer) -> None:
    env_file.write_text(ENV_TEXT + f"FIREWORKS_ACCOUNT_ID={FAKE_ACCOUNT}\n")
    app = SecretsPaneApp(env_file, control_plane_url=server.url)
    async with app.run_test(size=(120, 40)) as pilot:
        await _select(app, pilot, "FIREWORKS_ACCOUNT_ID")
        await pilot.press("t")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert _pane(app).status_of("FIREWORKS_ACCOUNT_ID") == "ok"


async def test_verify_unreachable(env_file: Path) -> None:
    dead = closed_port_url()
    app = SecretsPaneApp(env_file, judge_base_url=f"{dead}/v1")
    async with app.run_test(size=(120, 40)) as pilot:
        await _select(app, pilot, "OPENAI_API_KEY")
        await pilot.press("t")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert _pane(app).row_cells("OPENAI_API_KEY")[3] == "unreachable"
        assert any("unreachable: could not connect to host 127.0.0.1" in message for _, message in app.notes)


async def test_verify_unset_key_needs_no_network(env_file: Path) -> None:
    app = SecretsPaneApp(env_file, control_plane_url=closed_port_url())
    async with app.run_test(size=(120, 40)) as pilot:
        await _select(app, pilot, "FIREWORKS_ACCOUNT_ID")
        await pilot.press("t")
        await pilot.pause()
        assert _pane(app).status_of("FIREWORKS_ACCOUNT_ID") == "not set"


async def test_add_a_new_variable(env_file: Path) -> None:
    app = SecretsPaneApp(env_file)
    async with app.run_test(size=(120, 40)) as pilot:
        pane = _pane(app)
        await pilot.press("a", *"9BAD", "enter")
        await pilot.pause()
        assert pane.mode == "add"  # an invalid name is refused
        app.query_one("#secrets-input", Input).value = ""
        await pilot.press(*"NEW_TOKEN", "enter")
        await pilot.pause()
        assert pane.mode == "edit"
        assert app.query_one("#secrets-input", Input).password
        await pilot.press(*"tok-value-1234567890", "enter")
        await pilot.pause()
        assert pane.row_cells("NEW_TOKEN")[1:3] == [".env", "tok-…7890"]
        assert pane.selected == "NEW_TOKEN"
    assert env_file.read_text() == ENV_TEXT + "NEW_TOKEN=tok-value-1234567890\n"


async def test_delete_needs_confirmation(env_file: Path) -> None:
    app = SecretsPaneApp(env_file)
    async with app.run_test(size=(120, 40)) as pilot:
        pane = _pane(app)
        await _select(app, pilot, "EXTRA_TOKEN")
        await pilot.press("d")
        await pilot.pause()
        assert pane.mode == "confirm"
        assert "Remove EXTRA_TOKEN from .env?" in screen_text(app)
        await pilot.press("n")
        await pilot.pause()
        assert pane.mode == "table"
        assert env_file.read_text() == ENV_TEXT

        await pilot.press("d", "y")
        await pilot.pause()
        assert pane.mode == "table"
        assert "EXTRA_TOKEN" not in [e.name for e in pane.entries]
        assert [m.names for m in app.messages if isinstance(m, SecretsPane.Saved)] == [["EXTRA_TOKEN"]]

        await _select(app, pilot, "FIREWORKS_ACCOUNT_ID")  # not in .env: nothing to confirm
        await pilot.press("d")
        await pilot.pause()
        assert pane.mode == "table"
    assert dotenv_values(env_file) == {
        "FIREWORKS_API_KEY": GOOD_FIREWORKS,
        "OPENAI_API_KEY": "skX-wrong-key-for-the-judge-1111",
    }
    assert "# judge\n" in env_file.read_text()


async def test_escape_in_table_hands_focus_back(env_file: Path) -> None:
    app = SecretsPaneApp(env_file)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("escape")
        await pilot.pause()
        assert app.focused is None
        assert [type(m) for m in app.messages] == [FocusHome]


async def test_footer_shows_the_mode_keys(env_file: Path) -> None:
    app = SecretsPaneApp(env_file)
    async with app.run_test(size=(120, 40)) as pilot:
        ids = lambda: {b.binding.id for b in app.screen.active_bindings.values() if b.binding.id}  # noqa: E731
        assert {
            "secrets.edit",
            "secrets.reveal",
            "secrets.verify",
            "secrets.add",
            "secrets.delete",
            "secrets.back",
        } <= ids()
        await _select(app, pilot, "EXTRA_TOKEN")
        await pilot.press("d")
        await pilot.pause()
        assert {"secrets.confirm", "secrets.no", "secrets.cancel"} <= ids()
        assert "secrets.edit" not in ids()


def test_snapshot_80x24(env_file: Path, snap_compare) -> None:  # noqa: ANN001
    assert snap_compare(SecretsPaneApp(env_file), terminal_size=(80, 24))
