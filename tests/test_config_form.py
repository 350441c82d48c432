"""Config pane: generated from the settings model, validated as you type, saved to svgagent.toml."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import tomllib
from pathlib import Path

import pytest
from apps.settings_panes import ConfigFormApp, palette_hits, screen_text, wait_until
from pydantic import Field
from textual.app import App, ComposeResult
from textual.containers import Vertical
from textual.widgets import Input, Label, Static, Switch
from textual.worker import WorkerCancelled

from svgagent.core.config.form_fields import form_fields, new_config_text, save_project_config, validate_field
from svgagent.core.config.settings import KEY_FIELDS, Settings, load_settings
from svgagent.core.scoring.models import JudgeMode
from svgagent.tui.widgets.choice_field import ChoiceField
from svgagent.tui.widgets.config_form import ConfigForm, FocusHome
from svgagent.tui.widgets.field_input import FieldInput


def _form(app: ConfigFormApp) -> ConfigForm:
    return app.query_one(ConfigForm)


def _hint(app: ConfigFormApp, name: str) -> str:
    return str(app.query_one(f"#hint-{name}", Static).render())


async def _type(app: ConfigFormApp, pilot, field: str, text: str, *, keys: bool = True) -> None:  # noqa: ANN001
    """Empty the field, then type ``text`` key by key (or set it at once, like a paste, with ``keys=False``)."""
    widget = app.query_one(f"#field-{field}", FieldInput)
    widget.focus()
    await pilot.pause()
    widget.value = ""
    if keys and text:
        if not widget.editing:
            await pilot.press("enter")  # a browsed field takes typed keys once Enter started its edit
        await pilot.press(*text)
    elif text:
        widget.value = text
    await app.workers.wait_for_complete()
    await pilot.pause()


async def _choose_dataset(app: ConfigFormApp, pilot, text: str) -> None:  # noqa: ANN001
    """Put ``text`` in the dataset path field (as a paste would) and wait for the form to show the outcome of
    checking it: the field's Changed message, the file read in a worker thread and the result's message all come
    after the value is set — waiting for the workers alone missed a check whose thread had not been started yet, and
    one whose thread had not ended on a loaded machine (``'builtin' == 'questions.json'``)."""
    app.query_one("#field-dataset", Input).value = text
    await asyncio.wait_for(_form(app).dataset_checked(text), timeout=30)
    await pilot.pause()


# --- the model as a form (no UI) -------------------------------------------------------------------------------


def test_form_is_generated_from_the_model() -> None:
    specs = {s.name: s for s in form_fields()}
    expected = {
        name
        for name in Settings.model_fields
        if name not in (*KEY_FIELDS, "home", "store", "chromium_path", "keymap", "prices")
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


def test_a_new_file_round_trips_awkward_strings(isolated_env: Path) -> None:
    data = {
        "model": 'a "quoted" \\ name\twith\ncontrol\x01\x7f',
        "n": 3,
        "f": 0.1,
        "b": False,
        "none": None,
        "mode": JudgeMode.COUNT,
        "list": [1, "x"],
        "table": {"k": True},
        "weird key": "v",
    }
    text = new_config_text(data)
    assert text.startswith("# svgagent run settings")
    assert "none" not in text
    assert "\x01" not in text and "\x7f" not in text  # control characters are written escaped
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
    target = isolated_env / "svgagent.toml"
    save_project_config(data, target)
    assert target.read_text() == text


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
    """Changed values in place (their comments kept), a removed key's line gone, a new key after the last top-level
    key, CRLF line ends kept on the new line too."""
    target = isolated_env / "svgagent.toml"
    text = (
        "# project settings\r\n"
        'model = "old"   # the small one\r\n'
        '"rows" = 9\r\n'
        'judge_model = """\r\nmulti\r\nline"""\r\n'
        "\r\n"
        "[keymap]  # the keys I remap\r\n"
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
        "[keymap]  # the keys I remap\r\n"
        '"app.run" = "f5"  # mine\r\n'
    )
    assert tomllib.loads(target.read_text()) == {
        "model": 'new "one"',
        "judge_model": "one line",
        "concurrency": 16,
        "keymap": {"app.run": "f5"},
    }


# Every shape a settings file may hold, with a comment on each: a save of ``model`` changes that value and not one
# other byte, whatever is around it or however it was written. shape -> (the file, the value as written there)
SHAPES = {
    "top-level keys": ('model = "old"  # the model\n# a note\nrows = 9  # nine\n\nthreshold = 0.5\n', '"old"'),
    "tables": (
        'model = "old"\n\n# my keys\n[keymap]  # remapped\n"app.run" = "f5"  # mine\n\n'
        "[[runs]]  # an array of tables\nname = 'a'\n[runs.extra]\nk = 1 # one\n",
        '"old"',
    ),
    "dotted keys": (
        'model = "old"\nkeymap."app.run" = "f5"  # dotted, top level\nsite.owner . name = "me" # spaced\n\n'
        "[tool]\nlint.rules.max = 3  # dotted in a table\n",
        '"old"',
    ),
    "inline tables": (
        'model = "old"  # m\npoint = { x = 1, y.z = 2, s = "a = b" }  # inline\nempty = {}\n'
        "[t]\nnested = { a = { b = [1, { c = 2 }] } }  # deep\n",
        '"old"',
    ),
    "multi-line strings": (
        'model = "old"\nprompt = """\nmodel = "not this"  # not a comment\n[not_a_table]\n"""  # after\n'
        "notes = '''\nmodel = 'nor this'\n'''\nquotes = \"\"\"two quotes at the end\"\"\"\"\"\n",
        '"old"',
    ),
    "arrays": (
        'model = "old"\nsizes = [\n  1,  # one\n  2,\n  # a comment line\n  [3, 4],\n]  # closing\n'
        'mixed = [ "a", { k = "v" }, [] ]\n',
        '"old"',
    ),
    "the key quoted": ('"model" = "old"  # quoted key\nrows = 2\n', '"old"'),
    "the value a multi-line string": ('model = """\nold\nvalue"""  # was long\nrows = 2\n', '"""\nold\nvalue"""'),
    "the value a literal string": ("model = 'old'  # literal\nrows = 2\n", "'old'"),
    # the hand-written writer rewrote the whole file, every comment lost, for a value over 200 lines or a value with
    # more than 64 '#' in it
    "the value 250 lines long": (
        '# mine\nmodel = """\n' + "x\n" * 250 + '"""  # was long\n\n[keymap]  # keys\n"app.run" = "f5"  # mine\n',
        '"""\n' + "x\n" * 250 + '"""',
    ),
    "the value full of #": ('model = "' + "#" * 100 + '"  # keep\nrows = 1  # c\n', '"' + "#" * 100 + '"'),
    "no newline at the end": ('rows = 2\nmodel = "old" # last', '"old"'),
}


@pytest.mark.parametrize("shape", SHAPES)
def test_a_save_changes_only_the_saved_value_in_every_shape(isolated_env: Path, shape: str) -> None:
    target = isolated_env / "svgagent.toml"
    before, written = SHAPES[shape]
    target.write_text(before)
    save_project_config({"model": "new"}, target)
    new = "'new'" if written.startswith("'") else '"new"'  # a literal string stays one
    assert target.read_text() == before.replace(f"= {written}", f"= {new}", 1)
    assert tomllib.loads(target.read_text()) == {**tomllib.loads(before), "model": "new"}


@pytest.mark.parametrize("shape", SHAPES)
def test_adding_and_removing_a_key_touches_no_other_line(isolated_env: Path, shape: str) -> None:
    """A new key is one line more (and a blank line before a table, where tomlkit puts one); a removed key is its
    own line less; every other line is as it was, in the same order."""
    target = isolated_env / "svgagent.toml"
    before = SHAPES[shape][0].replace("rows = ", "samples = ")  # the key removed below, wherever the shape has it
    target.write_text(before)
    save_project_config({"judge_model": "new one", "samples": None}, target)
    after = target.read_text()
    old_lines = [line for line in before.splitlines() if not line.startswith("samples = ")]
    new_lines = after.splitlines()
    assert [line for line in new_lines if line not in ('judge_model = "new one"', "")] == [
        line for line in old_lines if line != ""
    ]
    assert new_lines.count('judge_model = "new one"') == 1
    expected = {k: v for k, v in tomllib.loads(before).items() if k != "samples"}
    assert tomllib.loads(after) == {**expected, "judge_model": "new one"}


def test_a_key_written_in_another_case_is_the_one_changed(isolated_env: Path) -> None:
    """Settings read a file's keys whatever their case: a save of ``concurrency`` into a file that says
    ``CONCURRENCY = 4`` changes that key, rather than adding a second one that may or may not win."""
    target = isolated_env / "svgagent.toml"
    target.write_text("CONCURRENCY = 4  # mine\n")
    save_project_config({"concurrency": 8}, target)
    assert target.read_text() == "CONCURRENCY = 8  # mine\n"
    assert load_settings().concurrency == 8


def test_the_user_config_file_keeps_its_shape_too(isolated_env: Path) -> None:
    from svgagent.core.config.settings import user_config_file
    from svgagent.core.config.toml_file import CONFIG_MAX_BYTES

    user = user_config_file()
    user.parent.mkdir(parents=True)
    before = '# mine\nmodel = "old"  # m\n\n[keymap]  # keys\n"app.run" = "f5"\n[notes]\nx.y = "z"  # dotted\n'
    user.write_text(before)
    save_project_config({"model": "new", "max_tokens": 900}, user, CONFIG_MAX_BYTES)
    assert user.read_text() == before.replace('"old"', '"new"').replace(
        "\n\n[keymap]", "\nmax_tokens = 900\n\n[keymap]"
    )
    settings = load_settings()
    assert (settings.model, settings.max_tokens) == ("new", 900)


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
    """The save checks svgagent.toml once (tomllib, when it is read; tomlkit then edits it), and writes the file it
    read: a symlink repointed between the read and the write gets none of the first's text."""
    from svgagent.core.config import form_fields as config_fields

    first, second = isolated_env / "first.toml", isolated_env / "second.toml"
    first.write_text('# mine\nmodel = "old"\nrows = 3\n')
    second.write_text('model = "other"\n')
    target = isolated_env / "svgagent.toml"
    target.symlink_to(first)
    read = config_fields.read_regular_capped

    def read_then_repoint(path: Path, max_bytes: int):  # noqa: ANN202
        found = read(path, max_bytes)
        target.unlink()
        target.symlink_to(second)
        return found

    parsed = []
    loads = tomllib.loads
    monkeypatch.setattr(config_fields, "read_regular_capped", read_then_repoint)
    monkeypatch.setattr(tomllib, "loads", lambda text: (parsed.append(text), loads(text))[1])
    save_project_config({"model": "new"}, target)
    assert first.read_text() == '# mine\nmodel = "new"\nrows = 3\n'
    assert second.read_text() == 'model = "other"\n'
    assert parsed.count('# mine\nmodel = "old"\nrows = 3\n') == 1


def test_save_refuses_a_file_too_large_to_be_a_config(isolated_env: Path) -> None:
    from svgagent.core.config.toml_file import PROJECT_CONFIG_MAX_BYTES

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
        app.query_one("#field-judge_mode", ChoiceField).focus()
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
        await asyncio.wait_for(form.dataset_checked("builtin"), timeout=30)
        await pilot.pause()
        assert _hint(app, "dataset").startswith("built-in: ")
        assert _hint(app, "dataset").endswith(" rows")
        path_input = app.query_one("#field-dataset", Input)
        assert path_input.disabled

        app.query_one("#dataset-kind", ChoiceField).focus()
        await pilot.press("enter", "down", "enter")
        await asyncio.wait_for(form.dataset_checked(""), timeout=30)
        assert not path_input.disabled
        assert "enter the path" in form.errors()["dataset"]
        assert form.values()["dataset"] == "builtin"

        await _choose_dataset(app, pilot, "missing.json")
        assert form.errors()["dataset"] == "no such file: missing.json"

        await _choose_dataset(app, pilot, "broken.json")
        assert "broken.json" in form.errors()["dataset"]
        assert form.values()["dataset"] == "builtin"

        await _choose_dataset(app, pilot, "questions.json")
        assert form.errors() == {}
        assert form.values()["dataset"] == "questions.json"
        assert _hint(app, "dataset") == "svgbench: 3 rows"


async def test_a_slow_dataset_check_is_waited_for_not_raced(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race behind a failure on a loaded machine, made certain: the file is read in a thread that has not ended
    when the app is next idle. While it reads, the hint says so and the old value stays; ``dataset_checked`` returns
    once the value is taken (waiting for the app's workers alone returned before that thread had even started)."""
    from svgagent.tui.widgets import config_form

    (isolated_env / "questions.json").write_text(json.dumps([{"prompt": "p", "requirements": ["r"]}] * 2))
    reading, release = threading.Event(), threading.Event()
    release.set()  # the first read (the form's start) goes through
    load = config_form.load_dataset

    def slow_load(source: str):  # noqa: ANN202 - a slow disk (or a busy machine): the thread ends when let go
        if source != "builtin":
            reading.set()
            release.wait(30)
        return load(source)

    monkeypatch.setattr(config_form, "load_dataset", slow_load)
    app = ConfigFormApp(load_settings(dataset=str(isolated_env / "questions.json")))
    async with app.run_test(size=(120, 40)) as pilot:
        form = _form(app)
        await asyncio.wait_for(form.dataset_checked(str(isolated_env / "questions.json")), timeout=30)
        app.query_one("#dataset-kind", ChoiceField).value = "builtin"
        await asyncio.wait_for(form.dataset_checked("builtin"), timeout=30)
        assert form.values()["dataset"] == "builtin"
        reading.clear()
        release.clear()  # this read hangs until the asserts below have looked
        app.query_one("#dataset-kind", ChoiceField).value = "file"
        app.query_one("#field-dataset", Input).value = "questions.json"
        with contextlib.suppress(WorkerCancelled):  # the built-in check's worker, superseded as it ended
            await app.workers.wait_for_complete()  # what the test did: no worker may have been started yet
        await pilot.pause()
        if reading.is_set():  # the read has started: it is still going, and the form says so
            assert _hint(app, "dataset") == "checking…"
        assert form.values()["dataset"] == "builtin"  # not taken yet, whatever the waits above saw
        release.set()
        await asyncio.wait_for(form.dataset_checked("questions.json"), timeout=30)
        assert form.values()["dataset"] == "questions.json"
        assert _hint(app, "dataset") == "svgbench: 2 rows"


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


class _HiddenFormApp(App[None]):
    """The form mounted where it is not shown yet (as the dashboard's narrow layout mounts it), with the size it
    will have: only the first screenful of rows is mounted until it is shown."""

    CSS = "#place.-hidden { display: none; }"

    def __init__(self, settings: Settings, *, width: int, height: int) -> None:
        super().__init__()
        self.settings, self.width, self.height = settings, width, height

    def compose(self) -> ComposeResult:
        with Vertical(id="place", classes="-hidden"):
            yield ConfigForm(self.settings, width=self.width, height=self.height, id="config")


def _control_ids() -> list[str]:
    """The form's controls in order; the built-in dataset's path field is disabled (no focus)."""
    return ["dataset-kind" if spec.name == "dataset" else f"field-{spec.name}" for spec in form_fields()]


@pytest.mark.parametrize(("width", "height"), [(80, 10), (38, 11)])
async def test_the_rows_under_the_first_screenful_mount_once_the_form_is_shown(width: int, height: int) -> None:
    app = _HiddenFormApp(load_settings(), width=width, height=height)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        form = app.query_one(ConfigForm)
        names = [spec.name for spec in form_fields()]
        first = form._first_rows
        assert 1 <= first < len(names) // 2
        assert form.has_class("-stacked") == (width < ConfigForm.STACK_BELOW)
        assert app.query(f"#field-{names[first - 1]}")
        assert not app.query(f"#field-{names[first]}")

        # what happens to rows not mounted yet shows when they are: a reset, a text set, its error
        form.reset(load_settings(concurrency=5))
        assert form.values()["concurrency"] == 5
        form.set_text("rows", "many")
        form.set_text("samples", "3")
        error = form.errors()["rows"]
        assert form.values()["samples"] == 3

        app.query_one("#place").remove_class("-hidden")
        await asyncio.wait_for(form.every_row(), timeout=30)
        await pilot.pause()
        assert [w.id for w in form.query(".row > FieldInput, .row > ChoiceField, .row > Switch")] == [
            *_control_ids()[: names.index("dataset") + 1],
            "field-dataset",
            *_control_ids()[names.index("dataset") + 1 :],
        ]
        rows_field = app.query_one("#field-rows", Input)
        assert rows_field.value == "many"
        assert rows_field.has_class("-invalid")
        assert _hint(app, "rows") == f"✗ {error}"
        assert app.query_one("#field-samples", Input).value == "3"
        assert app.query_one("#field-concurrency", Input).value == "5"


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_tab_goes_through_every_field_in_order_across_the_later_rows(size: tuple[int, int]) -> None:
    """The rows mounted after the first screenful come after it in focus order at once (Textual orders focus by
    position; rows not laid out yet sat at the top, and Tab jumped from the first field into them)."""
    app = _HiddenFormApp(load_settings(), width=size[0] - 2, height=size[1] // 2)
    async with app.run_test(size=size) as pilot:
        form = app.query_one(ConfigForm)
        app.query_one("#field-model", Input).focus()
        await pilot.pause()
        chains: list[list[str]] = []  # the focus order the moment the later rows are mounted, before a layout
        form._after_complete.append(lambda: chains.append([w.id for w in app.screen.focus_chain if w.id]))
        app.query_one("#place").remove_class("-hidden")
        await asyncio.wait_for(form.every_row(), timeout=30)
        assert chains == [_control_ids()]
        await pilot.pause()
        assert [w.id for w in app.screen.focus_chain if w.id] == _control_ids()  # laid out: the same
        app.query_one(f"#{_control_ids()[form._first_rows - 1]}").focus()  # the first block's last field
        await pilot.press("tab")
        assert app.focused.id == _control_ids()[form._first_rows]  # the later block's first
