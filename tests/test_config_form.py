"""Config pane: generated from the settings model, validated as you type, saved to svgagent.toml."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from apps.settings_panes import ConfigFormApp, palette_hits, screen_text, wait_until
from pydantic import Field
from textual.widgets import Input, Label, Select, Static, Switch

from svgagent.core.config_fields import dump_toml, form_fields, save_project_config, toml_string, validate_field
from svgagent.core.scoring.models import JudgeMode
from svgagent.core.settings import KEY_FIELDS, Settings, load_settings
from svgagent.tui.widgets.config_form import ConfigForm, FocusHome


def _form(app: ConfigFormApp) -> ConfigForm:
    return app.query_one(ConfigForm)


def _hint(app: ConfigFormApp, name: str) -> str:
    return str(app.query_one(f"#hint-{name}", Static).render())


async def _type(app: ConfigFormApp, pilot, field: str, text: str, *, keys: bool = True) -> None:  # noqa: ANN001
    """Empty the field, then type ``text`` key by key (or set it at once, like a paste, with ``keys=False``)."""
    widget = app.query_one(f"#field-{field}", Input)
    widget.focus()
    await pilot.pause()
    widget.value = ""
    if keys and text:
        await pilot.press(*text)
    elif text:
        widget.value = text
    await app.workers.wait_for_complete()
    await pilot.pause()


# --- the model as a form (no UI) -------------------------------------------------------------------------------


def test_form_is_generated_from_the_model() -> None:
    specs = {s.name: s for s in form_fields()}
    expected = {
        name for name in Settings.model_fields if name not in (*KEY_FIELDS, "home", "store", "chromium_path", "keymap")
    }
    assert set(specs) == expected
    assert {"fireworks_api_key", "openai_api_key", "fireworks_account_id", "home", "store"}.isdisjoint(specs)
    assert specs["judge_mode"].kind == "select"
    assert [c[1] for c in specs["judge_mode"].choices] == list(JudgeMode)
    assert specs["reasoning_effort"].kind == "select"
    assert specs["reasoning_effort"].optional
    assert specs["cache"].kind == "switch"
    assert specs["dataset"].kind == "dataset"
    assert specs["rows"].kind == "input"
    assert specs["rows"].optional
    assert specs["concurrency"].description == "policy requests in flight"


def test_a_new_model_field_gets_a_control() -> None:
    class More(Settings):
        dry_run: bool = Field(False, description="do nothing")
        colour: str = Field("red", description="a colour")

    specs = {s.name: s for s in form_fields(More)}
    assert specs["dry_run"].kind == "switch"
    assert specs["colour"].kind == "input"


@pytest.mark.parametrize(
    ("name", "raw", "value", "error"),
    [
        ("concurrency", "32", 32, None),
        ("concurrency", "0", None, "out of range — allowed: an integer from 1 to 1024"),
        ("concurrency", "many", None, "not a whole number — allowed: an integer from 1 to 1024"),
        ("temperature", "abc", None, "not a number — allowed: a number from 0 to 2"),
        ("request_timeout_s", "0", None, "out of range — allowed: a number above 0 and up to 3600"),
        ("rows", "", None, None),
        ("rows", " 5 ", 5, None),
        ("base_url", "ftp://x", None, "must start with http:// or https://"),
        ("base_url", "http://localhost:8000/v1/", "http://localhost:8000/v1", None),
        ("model", "  ", None, "must not be empty"),
        ("judge_mode", JudgeMode.PER_REQUIREMENT, JudgeMode.PER_REQUIREMENT, None),
    ],
)
def test_validate_field_uses_the_model(name: str, raw: object, value: object, error: str | None) -> None:
    assert validate_field(Settings(), name, raw) == (value, error)


def test_toml_writer_round_trips_awkward_strings() -> None:
    data = {
        "model": 'a "quoted" \\ name\twith\ncontrol\x01',
        "n": 3,
        "f": 0.1,
        "b": False,
        "none": None,
        "mode": JudgeMode.COUNT,
        "list": [1, "x"],
        "table": {"k": True},
        "weird key": "v",
    }
    text = dump_toml(data, "header line")
    assert text.startswith("# header line\n")
    assert "none" not in text
    back = tomllib.loads(text)
    assert back == {
        "model": data["model"],
        "n": 3,
        "f": 0.1,
        "b": False,
        "mode": "count",
        "list": [1, "x"],
        "table": {"k": True},
        "weird key": "v",
    }
    assert toml_string("é") == '"é"'


def test_save_writes_what_changed_and_keeps_the_rest_of_the_file(isolated_env: Path) -> None:
    target = isolated_env / "svgagent.toml"
    target.write_text('home = "/data/svg"\nconcurrency = 4\nmodel = "old"\nrows = 9\n')
    save_project_config({"model": "new", "threshold": 0.75, "concurrency": 16, "rows": None}, target)
    assert tomllib.loads(target.read_text()) == {
        "home": "/data/svg",
        "concurrency": 16,
        "model": "new",
        "threshold": 0.75,
    }  # rows: cleared in the form, gone


def test_save_changes_only_the_lines_of_the_saved_keys(isolated_env: Path) -> None:
    target = isolated_env / "svgagent.toml"
    text = (
        "# project settings\r\n"
        'model = "old"   # the small one\r\n'
        '"rows" = 9\r\n'
        'judge_model = """\r\nmulti\r\nline"""\r\n'
        "\r\n"
        "  # the keys I remap\r\n"
        "[keymap]\r\n"
        '"app.run" = "f5"  # mine\r\n'
    )
    target.write_bytes(text.encode())
    save_project_config({"model": 'new "one"', "rows": None, "judge_model": "one line", "concurrency": 16}, target)
    assert target.read_bytes().decode() == (
        "# project settings\r\n"
        'model = "new \\"one\\""   # the small one\r\n'
        'judge_model = "one line"\r\n'
        "concurrency = 16\r\n"
        "\r\n"
        "  # the keys I remap\r\n"
        "[keymap]\r\n"
        '"app.run" = "f5"  # mine\r\n'
    )
    assert tomllib.loads(target.read_text()) == {
        "model": 'new "one"',
        "judge_model": "one line",
        "concurrency": 16,
        "keymap": {"app.run": "f5"},
    }


def test_a_value_full_of_hashes_costs_a_bounded_few_parses(isolated_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """svgagent.toml is untrusted: each '#' in a saved key's value line is tried as the start of a comment (a parse
    each); 20,000 of them inside a string must not mean 20,000 parses of the line."""
    from svgagent.core import toml_edit

    target = isolated_env / "svgagent.toml"
    target.write_text('model = "' + "#" * 20_000 + '"  # mine\nrows = 3\n')
    parses = []
    loads = toml_edit.tomllib.loads
    monkeypatch.setattr(toml_edit.tomllib, "loads", lambda text: (parses.append(len(text)), loads(text))[1])
    save_project_config({"model": "short"}, target)
    assert len(parses) < 3 * toml_edit.MAX_HASHES_TRIED
    assert tomllib.loads(target.read_text()) == {"model": "short", "rows": 3}
    # and a value over 150 lines of 5,000 characters: no more than MAX_PARSED_CHARS parsed to find its end
    long_text = 'model = """' + "\n".join("x" * 5_000 for _ in range(150)) + '"""\nrows = 3\n'
    target.write_text(long_text)
    parses.clear()
    save_project_config({"model": "short"}, target)
    # the whole file is parsed a few times (read, edit, check); line by line to the end it would be 56 MB
    assert sum(parses) < toml_edit.MAX_PARSED_CHARS + 4 * len(long_text)
    assert tomllib.loads(target.read_text()) == {"model": "short", "rows": 3}


def test_save_does_not_take_a_line_inside_a_string_for_the_key(isolated_env: Path) -> None:
    target = isolated_env / "svgagent.toml"
    target.write_text('# mine\nsystem_prompt = """\nmodel = "in the text"\n"""\nmodel = "in the text"\n')
    save_project_config({"model": "new"}, target)
    assert tomllib.loads(target.read_text()) == {"system_prompt": 'model = "in the text"\n', "model": "new"}


def test_save_keeps_comments_and_another_keys_multiline_string_that_reads_like_the_key(isolated_env: Path) -> None:
    """A line inside another key's multi-line string that reads ``model = …`` (or ``[table]``) is text, not the
    key: the save changes the real ``model`` line only, every comment and both strings stay byte for byte."""
    target = isolated_env / "svgagent.toml"
    strings = (
        'system_prompt = """\nmodel = "x"  # not a comment either\n[not_a_table]\n"""  # after the string\n'
        "notes = '''\nmodel = 'y'\n'''\n"
    )
    before = (
        "# my project\n"
        + strings
        + 'model = "old"  # the small one\n\n# the keys I remap\n[keymap]\n"app.run" = "f5"\n'
    )
    target.write_text(before)
    save_project_config({"model": "new"}, target)
    assert target.read_text() == before.replace('model = "old"', 'model = "new"')
    assert tomllib.loads(target.read_text())["system_prompt"] == 'model = "x"  # not a comment either\n[not_a_table]\n'


def test_save_parses_the_file_once_and_writes_the_file_it_read(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The save parses svgagent.toml once (the check when it is read; the edit and the fallback reuse that), and
    writes the file it read: a symlink repointed between the read and the write gets none of the first's text."""
    from svgagent.core import config_fields, toml_edit

    first, second = isolated_env / "first.toml", isolated_env / "second.toml"
    first.write_text('# mine\nmodel = "old"\nrows = 3\n')
    second.write_text('model = "other"\n')
    target = isolated_env / "svgagent.toml"
    target.symlink_to(first)
    read = config_fields.read_regular_capped

    def read_then_repoint(path: Path):  # noqa: ANN202
        found = read(path)
        target.unlink()
        target.symlink_to(second)
        return found

    parsed = []
    loads = tomllib.loads
    monkeypatch.setattr(config_fields, "read_regular_capped", read_then_repoint)
    monkeypatch.setattr(toml_edit.tomllib, "loads", lambda text: (parsed.append(text), loads(text))[1])
    save_project_config({"model": "new"}, target)
    assert first.read_text() == '# mine\nmodel = "new"\nrows = 3\n'
    assert second.read_text() == 'model = "other"\n'
    assert parsed.count('# mine\nmodel = "old"\nrows = 3\n') == 1


def test_save_refuses_a_file_too_large_to_be_a_config(isolated_env: Path) -> None:
    from svgagent.core.config_file import CONFIG_MAX_BYTES as PROJECT_CONFIG_MAX_BYTES

    target = isolated_env / "svgagent.toml"
    big = "# " + "x" * PROJECT_CONFIG_MAX_BYTES + "\nrows = 1\n"
    target.write_text(big)
    with pytest.raises(ValueError, match="too large"):
        save_project_config({"model": "x"}, target)
    assert target.read_text() == big


def test_save_refuses_a_file_that_is_not_utf8(isolated_env: Path) -> None:
    target = isolated_env / "svgagent.toml"
    target.write_bytes(b'model = "\xff"\n')
    with pytest.raises(ValueError, match="not valid TOML"):
        save_project_config({"model": "x"}, target)
    assert target.read_bytes() == b'model = "\xff"\n'


def test_save_refuses_to_overwrite_a_broken_file(isolated_env: Path) -> None:
    target = isolated_env / "svgagent.toml"
    target.write_text("model = \n")
    with pytest.raises(ValueError, match="not valid TOML"):
        save_project_config({"model": "x"}, target)
    assert target.read_text() == "model = \n"


# --- the widget ---------------------------------------------------------------------------------------------------


async def test_invalid_concurrency_shows_error_and_keeps_valid_value() -> None:
    app = ConfigFormApp(load_settings())
    async with app.run_test(size=(120, 40)) as pilot:
        form = _form(app)
        await _type(app, pilot, "concurrency", "0")
        assert form.errors() == {"concurrency": "out of range — allowed: an integer from 1 to 1024"}
        assert form.values()["concurrency"] == 16
        assert _hint(app, "concurrency") == "✗ out of range — allowed: an integer from 1 to 1024"
        assert app.query_one("#field-concurrency").has_class("-invalid")
        assert "✗ out of range" in screen_text(app)
        assert not [m for m in app.messages if isinstance(m, ConfigForm.Changed)]

        await pilot.press("backspace", "3", "2")
        await pilot.pause()
        assert form.errors() == {}
        assert form.values()["concurrency"] == 32
        assert _hint(app, "concurrency") == "policy requests in flight"
        assert not app.query_one("#field-concurrency").has_class("-invalid")
        changed = [m for m in app.messages if isinstance(m, ConfigForm.Changed)]
        assert changed
        assert changed[-1].settings.concurrency == 32
        assert form.settings.concurrency == 32


async def test_optional_blank_and_other_fields() -> None:
    app = ConfigFormApp(load_settings(rows=10))
    async with app.run_test(size=(120, 40)) as pilot:
        form = _form(app)
        assert app.query_one("#field-rows", Input).value == "10"
        await _type(app, pilot, "rows", "")
        assert form.values()["rows"] is None
        assert form.errors() == {}
        await _type(app, pilot, "base_url", "ftp://nope", keys=False)
        assert form.errors()["base_url"] == "must start with http:// or https://"
        assert form.values()["base_url"] == "https://api.fireworks.ai/inference/v1"
        await _type(app, pilot, "temperature", "1.5")
        assert form.values()["temperature"] == 1.5


async def test_select_and_switch_by_keyboard() -> None:
    app = ConfigFormApp(load_settings())
    async with app.run_test(size=(120, 40)) as pilot:
        form = _form(app)
        app.query_one("#field-judge_mode", Select).focus()
        await pilot.press("enter", "down", "enter")
        await pilot.pause()
        assert form.values()["judge_mode"] is JudgeMode.PER_REQUIREMENT

        app.query_one("#field-cache", Switch).focus()
        await pilot.press("space")
        await pilot.pause()
        assert form.values()["cache"] is True
        assert str(app.query_one("#state-cache", Label).render()) == "on"
        assert [m.settings.cache for m in app.messages if isinstance(m, ConfigForm.Changed)][-1] is True


async def test_dataset_builtin_file_and_errors(isolated_env: Path) -> None:
    good = isolated_env / "questions.json"
    good.write_text(json.dumps([{"prompt": "a red circle", "requirements": ["red", "circle"]}] * 3))
    bad = isolated_env / "broken.json"
    bad.write_text("{not json")
    app = ConfigFormApp(load_settings())
    async with app.run_test(size=(120, 40)) as pilot:
        form = _form(app)
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert _hint(app, "dataset").startswith("built-in: ")
        assert _hint(app, "dataset").endswith(" rows")
        path_input = app.query_one("#field-dataset", Input)
        assert path_input.disabled

        app.query_one("#dataset-kind", Select).focus()
        await pilot.press("enter", "down", "enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert not path_input.disabled
        assert "enter the path" in form.errors()["dataset"]
        assert form.values()["dataset"] == "builtin"

        await _type(app, pilot, "dataset", "missing.json", keys=False)
        assert form.errors()["dataset"] == "no such file: missing.json"

        await _type(app, pilot, "dataset", "broken.json", keys=False)
        assert "broken.json" in form.errors()["dataset"]
        assert form.values()["dataset"] == "builtin"

        await _type(app, pilot, "dataset", "questions.json", keys=False)
        assert form.errors() == {}
        assert form.values()["dataset"] == "questions.json"
        assert _hint(app, "dataset") == "svgbench: 3 rows"


async def test_a_dataset_check_that_ends_while_the_form_is_taken_down_is_dropped(isolated_env: Path) -> None:
    """Quitting while the dataset file is read: Textual removes the form's fields before its own queue is done; the
    check's result then met no hint to show itself in (NoMatches, a traceback at exit)."""
    app = ConfigFormApp(load_settings())
    async with app.run_test(size=(120, 40)) as pilot:
        form = _form(app)
        await app.workers.wait_for_complete()
        await pilot.pause()
        form._dataset_pending = "questions.json"
        await form.query_one("#hint-dataset").remove()
        form.on_config_form__dataset_checked(ConfigForm._DatasetChecked("questions.json", "questions.json", "", None))
        assert form.values()["dataset"] == "builtin"  # nothing taken from a check nobody can see


async def test_ctrl_s_writes_toml_that_load_settings_reads(isolated_env: Path) -> None:
    app = ConfigFormApp(load_settings())
    async with app.run_test(size=(120, 40)) as pilot:
        await _type(app, pilot, "concurrency", "8")
        await _type(app, pilot, "judge_model", 'gpt "4o"')
        await _type(app, pilot, "rows", "5")
        app.query_one("#field-cache", Switch).focus()
        await pilot.press("space", "ctrl+s")
        await pilot.pause()
        saved = [m for m in app.messages if isinstance(m, ConfigForm.Saved)]
        assert saved
        assert saved[0].path == isolated_env / "svgagent.toml"
    text = (isolated_env / "svgagent.toml").read_text()
    assert tomllib.loads(text) == {"concurrency": 8, "judge_model": 'gpt "4o"', "rows": 5, "cache": True}
    assert "key" not in text.lower()
    settings = load_settings()
    assert (settings.concurrency, settings.judge_model, settings.rows, settings.cache) == (8, 'gpt "4o"', 5, True)


async def test_ctrl_s_keeps_what_the_person_wrote_in_the_file(isolated_env: Path) -> None:
    """After a save, a comment and a key added by hand survive the next ctrl+s; only the saved key's line changes."""
    target = isolated_env / "svgagent.toml"
    app = ConfigFormApp(load_settings())
    async with app.run_test(size=(120, 40)) as pilot:
        await _type(app, pilot, "max_tokens", "900")
        await pilot.press("ctrl+s")
        await pilot.pause()
        first = target.read_text()
        assert tomllib.loads(first) == {"max_tokens": 900}
        by_hand = (
            first.replace("max_tokens = 900\n", "max_tokens = 900  # was 900\n")
            + "\n# my note: keep this\nthreshold = 0.6\n"
        )
        target.write_text(by_hand)
        await _type(app, pilot, "max_tokens", "1200")
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert len([m for m in app.messages if isinstance(m, ConfigForm.Saved)]) == 2
    assert target.read_text() == by_hand.replace("max_tokens = 900 ", "max_tokens = 1200 ")


async def test_save_is_refused_while_a_field_is_invalid(isolated_env: Path) -> None:
    app = ConfigFormApp(load_settings())
    async with app.run_test(size=(120, 40)) as pilot:
        await _type(app, pilot, "samples", "0")
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert not (isolated_env / "svgagent.toml").exists()
        assert any("fix samples" in message for _, message in app.notes)
        assert not [m for m in app.messages if isinstance(m, ConfigForm.Saved)]


async def test_escape_hands_focus_back() -> None:
    app = ConfigFormApp(load_settings())
    async with app.run_test(size=(120, 40)) as pilot:
        assert app.focused is app.query_one("#field-model")
        await pilot.press("escape")
        await pilot.pause()
        assert app.focused is None
        assert [m for m in app.messages if isinstance(m, FocusHome)][0].origin is _form(app)


async def test_save_from_the_command_palette(isolated_env: Path) -> None:
    app = ConfigFormApp(load_settings(concurrency=5))
    async with app.run_test(size=(120, 40)) as pilot:
        await _type(app, pilot, "concurrency", "3")
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"Config: Save")
        await wait_until(pilot, lambda: palette_hits(app) and "Save config" in palette_hits(app)[0])
        assert palette_hits(app)[0].startswith("Config: Save config")
        await pilot.press("enter")
        await pilot.pause()
        await pilot.pause()
    assert tomllib.loads((isolated_env / "svgagent.toml").read_text()) == {"concurrency": 3}


def test_snapshot_80x24(snap_compare) -> None:  # noqa: ANN001
    assert snap_compare(ConfigFormApp(Settings()), terminal_size=(80, 24), run_before=_settle)


async def _settle(pilot) -> None:  # noqa: ANN001
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
