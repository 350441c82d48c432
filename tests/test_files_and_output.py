"""Files svgagent writes where a person points it: what a path is decides how it is written (never clobbered),
spreadsheets never run a cell, `render` errors are one line, the store and .env are private, and only commands
that write create a store."""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from cli_process import svgagent_argv

from svgagent.core.config.secrets import write_env_file
from svgagent.core.named_files import OutputError
from svgagent.core.store.run_store import Store

sys.path.insert(0, str(Path(__file__).parent))
from factories import Spec, build_run  # noqa: E402

SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>'


def svgagent(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(svgagent_argv(*args), capture_output=True, timeout=120, cwd=cwd)


@pytest.fixture
def db(tmp_path: Path) -> tuple[Path, str]:
    path = tmp_path / "runs.db"
    with Store(path) as store:
        run_id = build_run(store)
    return path, run_id


def _read_fifo(path: Path, into: list[bytes]) -> threading.Thread:
    def read() -> None:
        with path.open("rb") as handle:
            into.append(handle.read())

    thread = threading.Thread(target=read)
    thread.start()
    return thread


# --- 8. one safe writer for every command ----------------------------------------------------------------------------


def test_export_writes_through_a_fifo_and_keeps_it_a_fifo(db: tuple[Path, str], tmp_path: Path) -> None:
    store, run_id = db
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = _read_fifo(fifo, got)
    out = svgagent("export", run_id, "-o", str(fifo), "--store", str(store))
    reader.join(timeout=60)
    assert out.returncode == 0, out.stderr
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert len(got[0].decode().splitlines()) == 6


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root (the FIFO case runs everywhere)")
def test_export_and_render_write_through_a_device_node(db: tuple[Path, str], tmp_path: Path) -> None:
    store, run_id = db
    null = tmp_path / "null"
    os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # a /dev/null of our own
    assert svgagent("export", run_id, "-o", str(null), "--store", str(store)).returncode == 0
    (tmp_path / "in.svg").write_text(SVG)
    assert svgagent("render", str(tmp_path / "in.svg"), "-o", str(null), "--size", "32").returncode == 0
    assert stat.S_ISCHR(null.lstat().st_mode)


def test_export_follows_a_symlink_and_keeps_the_link(db: tuple[Path, str], tmp_path: Path) -> None:
    store, run_id = db
    target = tmp_path / "real.jsonl"
    target.write_text("old\n")
    target.chmod(0o640)
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    assert svgagent("export", run_id, "-o", str(link), "--store", str(store)).returncode == 0
    assert link.is_symlink()
    assert os.readlink(link) == str(target)
    assert len(target.read_text().splitlines()) == 6
    assert stat.S_IMODE(target.stat().st_mode) == 0o640  # an existing file keeps its permissions


def test_export_to_a_directory_or_a_missing_directory_is_one_line(db: tuple[Path, str], tmp_path: Path) -> None:
    store, run_id = db
    for target, needle in ((tmp_path, "is a directory"), (tmp_path / "no" / "x.jsonl", "does not exist")):
        out = svgagent("export", run_id, "-o", str(target), "--store", str(store))
        assert out.returncode == 2
        assert needle in out.stderr.decode()
        assert out.stderr.decode().count("\n") == 1
        assert not out.stdout


def test_export_dash_is_stdout_and_assets_follow_the_same_rules(db: tuple[Path, str], tmp_path: Path) -> None:
    store, run_id = db
    assets = tmp_path / "assets"
    assets.mkdir()
    elsewhere = tmp_path / "elsewhere.png"
    elsewhere.write_bytes(b"keep")
    (assets / f"{run_id}.0.0.png").symlink_to(elsewhere)  # a link inside the assets dir: followed, not replaced
    out = svgagent("export", run_id, "-o", "-", "--assets", str(assets), "--store", str(store), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert len(out.stdout.decode().splitlines()) == 6
    assert not (tmp_path / "-").exists()
    assert (assets / f"{run_id}.0.0.png").is_symlink()
    assert elsewhere.read_bytes().startswith(b"\x89PNG")


def test_env_and_toml_saves_follow_symlinks_and_write_through_fifos(tmp_path: Path) -> None:
    from svgagent.core.config.form_fields import save_project_config

    real = tmp_path / "real.toml"
    real.write_text("rows = 1\n")
    link = tmp_path / "svgagent.toml"
    link.symlink_to(real)
    save_project_config({"concurrency": 8}, link)
    assert link.is_symlink()
    assert "concurrency = 8" in real.read_text()
    fifo = tmp_path / ".env"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = _read_fifo(fifo, got)
    write_env_file(fifo, {"A": "1"})
    reader.join(timeout=30)
    assert got == [b"A=1\n"]
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    with pytest.raises(OutputError, match="is a directory"):
        write_env_file(tmp_path, {"A": "1"})


def test_a_toml_save_into_a_fifo_writes_through_it_without_reading_it(tmp_path: Path) -> None:
    """svgagent.toml as a FIFO: the save writes the changed keys into it and never waits to read from it."""
    from svgagent.core.config.form_fields import save_project_config

    fifo = tmp_path / "svgagent.toml"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = _read_fifo(fifo, got)
    saver = threading.Thread(target=save_project_config, args=({"concurrency": 8}, fifo), daemon=True)
    saver.start()
    saver.join(timeout=30)
    reader.join(timeout=30)
    if saver.is_alive() or reader.is_alive():  # unblock both before failing (a writer ends the readers' open)
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("the save read from the FIFO")
    assert b"concurrency = 8\n" in got[0]
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


def test_a_failed_write_leaves_the_old_file_and_nothing_on_stdout(tmp_path: Path) -> None:
    from svgagent.core.named_files import open_output

    (tmp_path / "out").mkdir()
    target = tmp_path / "out" / "x.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError), open_output(target) as stream:
        stream.write("half")
        raise RuntimeError("the producer broke")
    assert target.read_text() == "old"
    assert sorted(p.name for p in target.parent.iterdir()) == ["x.txt"]
    shown = io.StringIO()
    with pytest.raises(RuntimeError), open_output("-", stdout=shown) as stream:
        stream.write("half")
        raise RuntimeError("the producer broke")
    assert shown.getvalue() == ""


# --- 9. CSV cells a spreadsheet would run --------------------------------------------------------------------------


def test_csv_export_neutralises_formula_cells(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    hostile = ['=HYPERLINK("http://x")', "+1+1", "-2+3", "@SUM(A1)", "\tTAB", "\rCR"]
    written = [*hostile[:5], "\\x0dCR"]  # a carriage return is a control: shown as an escape
    with Store(path) as store:
        run_id = build_run(store, [Spec(i, fulfilled=1, prompt=text, reason=text) for i, text in enumerate(hostile)])
    out = svgagent("export", run_id, "--format", "csv", "--store", str(path))
    assert out.returncode == 0, out.stderr
    rows = list(csv.DictReader(io.StringIO(out.stdout.decode())))
    assert [r["prompt"] for r in rows] == ["'" + text for text in written]
    assert [r["reason"] for r in rows] == ["'" + text for text in written]
    assert rows[0]["score"] == "0.25"  # numbers stay numbers


def test_csv_export_neutralises_a_formula_after_leading_blanks() -> None:
    """issue 31 item 5: spreadsheets trim leading spaces and newlines before they look for a formula."""
    from svgagent.core.exchange.export import neutralise_cell

    for text in ("  =1+1", '\n=HYPERLINK("http://x")', " \n @SUM(A1)", "\u00a0+1", "\t\t-2+3", "\r\n=1"):
        assert neutralise_cell(text).startswith("'"), repr(text)
    for text in ("a = b", "x-1", "1e-3 @ 2", "  plain", "\n\ntext", "\\x1b=1"):
        assert neutralise_cell(text) == text, repr(text)  # not a formula: left as it is
    assert neutralise_cell(0.25) == 0.25 and neutralise_cell(None) is None and neutralise_cell(3) == 3


HOSTILE_CELL = "ok\x1b]52;c;cHduZWQ=\x07\x1b]0;title\x07\x1b[2J\x9b31m\u202eevil\u2066x\nnext\tline"


def test_csv_export_to_a_terminal_shows_controls_as_escapes(tmp_path: Path) -> None:
    """issue 31 item 5: `runs export --format csv -o -` passed ESC and C1 bytes to the terminal; every text column
    now holds visible escapes (tab and newline kept: quoting holds them)."""
    path = tmp_path / "runs.db"
    text = HOSTILE_CELL
    spec = Spec(
        0, fulfilled=1, prompt=text, reason=text, rationale=text, error=text, requirements=(text, "b", "c", "d")
    )
    with Store(path) as store:
        run_id = build_run(store, [spec], name="run " + text)
    out = svgagent("export", run_id, "--format", "csv", "-o", "-", "--store", str(path))
    assert out.returncode == 0, out.stderr
    raw = out.stdout.decode()
    for control in ("\x1b", "\x07", "\x9b", "\u202e", "\u2066"):
        assert control not in raw, repr(control)
    row = next(csv.DictReader(io.StringIO(raw)))
    shown = "ok\\x1b]52;c;cHduZWQ=\\x07\\x1b]0;title\\x07\\x1b[2J\\x9b31m\\u202eevil\\u2066x\nnext\tline"
    for column in ("prompt", "reason", "rationale", "error"):
        assert row[column] == shown, column


# --- 10. render: one line, exit 2, `-` is stdout ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--size", "-5"], "--size -5"),
        (["--size", "100000"], "--size 100000"),
        (["-o", "missing/out.png"], "does not exist"),
        (["-o", "."], "is a directory"),
    ],
)
def test_render_errors_are_one_line_exit_2(tmp_path: Path, extra: list[str], needle: str) -> None:
    (tmp_path / "in.svg").write_text(SVG)
    args = ["render", "in.svg", "-o", "out.png", *extra]
    out = svgagent(*args, cwd=tmp_path)
    text = out.stderr.decode()
    assert out.returncode == 2, text
    assert needle in text
    assert "Traceback" not in text
    assert text.count("\n") == 1


def test_render_missing_input_and_dash_output(tmp_path: Path) -> None:
    missing = svgagent("render", "nope.svg", "-o", "out.png", cwd=tmp_path)
    assert missing.returncode == 2
    assert missing.stderr.decode().count("\n") == 1
    (tmp_path / "in.svg").write_text(SVG)
    out = svgagent("render", "in.svg", "-o", "-", "--size", "32", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(b"\x89PNG")
    assert not (tmp_path / "-").exists()


# --- 11. private store files, .env line endings ----------------------------------------------------------------------


def test_a_new_store_is_private(tmp_path: Path) -> None:
    os.umask(0o022)
    with Store(tmp_path / "data" / "svgagent" / "runs.db") as store:
        store.create_run(name="r", settings={}, dataset={}, rows=[], samples=1)
        made = [store.path, store.path.with_name("runs.db-wal"), store.path.with_name("runs.db-shm")]
        assert [stat.S_IMODE(p.stat().st_mode) for p in made] == [0o600, 0o600, 0o600]
    assert stat.S_IMODE((tmp_path / "data" / "svgagent").stat().st_mode) == 0o700


def test_env_save_keeps_crlf_line_endings(tmp_path: Path) -> None:
    env = tmp_path / ".env"
    env.write_bytes(b"# keys\r\nFIREWORKS_API_KEY=old\r\nOTHER=1\r\n")
    write_env_file(env, {"FIREWORKS_API_KEY": "fw-new-value", "OPENAI_API_KEY": "sk-added"})
    assert env.read_bytes() == b"# keys\r\nFIREWORKS_API_KEY=fw-new-value\r\nOTHER=1\r\nOPENAI_API_KEY=sk-added\r\n"


# --- 12. only commands that write create a store, after saying so ----------------------------------------------------


def test_reading_commands_never_create_a_store(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "x.db"
    for command in (
        ["runs", "show", "r"],
        ["export", "r"],
        ["runs", "stats", "r"],
        ["store", "check"],
        ["tui", "--run", "r"],
    ):
        out = svgagent(*command, "--store", str(missing))
        assert out.returncode == 2 and "no run store at" in out.stderr.decode(), command
    # a fresh machine has no runs to list: said so, with where the store will be, and exit 0 (it was 2, an error)
    out = svgagent("runs", "list", "--store", str(missing))
    assert out.returncode == 0, out.stderr
    assert out.stdout.decode().strip() == f"no runs yet (the run store will be {missing}): try `svgagent eval --demo`"
    out = svgagent("runs", "list", "--json", "--store", str(missing))
    assert (out.returncode, json.loads(out.stdout)) == (0, [])
    assert not missing.parent.exists()


def test_a_writing_command_says_it_creates_the_store(tmp_path: Path) -> None:
    target = tmp_path / "new" / "dir" / "x.db"
    out = svgagent("eval", "--demo", "--rows", "1", "--store", str(target))
    assert out.returncode in (0, 1), out.stderr
    assert f"creating a new run store at {target}" in out.stderr.decode()
    assert target.exists()


def test_the_tui_says_it_creates_the_store_before_it_starts(tmp_path: Path) -> None:
    target = tmp_path / "new" / "dir" / "x.db"
    env = {**os.environ, "SVGAGENT_HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "svgagent.tui.cli.main", "tui", "--demo", "--store", str(target)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        env=env,
    )
    try:
        deadline = time.monotonic() + 60  # only against a hang: nothing here measures time
        while not target.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert target.exists(), err[-2000:]
    assert err.decode().splitlines()[0] == f"svgagent: creating a new run store at {target}"
    assert stat.S_IMODE(target.parent.stat().st_mode) == 0o700
