"""Start-up: what a command imports before it does anything (the times are in bench/startup.py, not here).

`svgagent --help` must not pay for pydantic (the settings flags), the openai or fireworks clients, aiohttp or the
UI libraries; a subcommand's own `--help` still shows every flag it had.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = (
    "pydantic",
    "pydantic_settings",
    "openai",
    "fireworks",
    "aiohttp",
    "httpx",
    "textual",
    "rich",
    "PIL",
    "asyncio",
)


def _imported_after(code: str) -> set[str]:
    probe = f"import sys, json\n{code}\nprint(json.dumps(sorted(m for m in sys.modules)))"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(json.loads(proc.stdout.splitlines()[-1]))


def test_top_level_help_imports_nothing_heavy() -> None:
    modules = _imported_after("from svgagent.tui.cli.main import build_parser\nbuild_parser().format_help()")
    assert sorted(name for name in HEAVY if name in modules) == []


def test_building_the_parser_for_a_command_imports_nothing_heavy() -> None:
    """argv decides which subcommand parses; the others' deferred flags are never built."""
    code = "from svgagent.tui.cli.main import build_parser\nbuild_parser().parse_args(['runs', 'list'])"
    modules = _imported_after(code)
    assert sorted(name for name in HEAVY if name in modules) == []


OTHER_COMMANDS = ("svgagent.tui.cli.serve", "svgagent.tui.cli.rft", "svgagent.tui.cli.analysis")


@pytest.mark.parametrize("argv", [["tui", "--demo"], ["eval", "--demo", "--rows", "2"]])
def test_eval_and_tui_build_their_own_parser_alone(argv: list[str]) -> None:
    """`svgagent eval` and `svgagent tui` (start-up targets) neither import nor build the other commands' parsers;
    what they parse is what the whole parser gives."""
    code = (
        "from svgagent.tui.cli.main import build_parser\n"
        f"alone = vars(build_parser({argv[0]!r}).parse_args({argv!r}))\n"
        "import sys\n"
        "early = sorted(m for m in sys.modules if m.startswith('svgagent.tui.cli.'))\n"
        f"whole = vars(build_parser().parse_args({argv!r}))\n"
        "assert alone == whole, (alone, whole)\n"
        "print(json.dumps(early))"
    )
    probe = f"import sys, json\n{code}"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    early = set(json.loads(proc.stdout.splitlines()[-1]))
    assert "svgagent.tui.cli.main" in early
    assert sorted(name for name in OTHER_COMMANDS if name in early) == []


def test_the_whole_parser_still_lists_every_command() -> None:
    from svgagent.tui.cli.main import build_parser

    text = build_parser().format_help()
    for command in ("eval", "runs", "export", "render", "tui", "serve", "rft", "import", "store", "trust"):
        assert f"    {command} " in text or f"    {command}\n" in text, command


def test_subcommand_help_still_lists_the_generated_flags() -> None:
    from svgagent.tui.cli.main import build_parser

    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices
    eval_help = commands["eval"].format_help()
    for flag in ("--model", "--judge-mode", "--concurrency", "--samples", "--store", "--resume"):
        assert flag in eval_help
    create = commands["rft"]._subparsers._group_actions[0].choices["create"]
    create_help = create.format_help()
    assert "--epochs" in create_help
    assert "--judge-model" in create_help
    assert "--epochs" not in commands["rft"]._subparsers._group_actions[0].choices["status"].format_help()
    assert "--max-body" in commands["serve"].format_help()
    assert "--judge-model" in commands["serve"].format_help()


def test_deferred_flags_parse() -> None:
    from svgagent.tui.cli.main import build_parser

    args = build_parser().parse_args(["eval", "--concurrency", "7", "--judge-mode", "count", "--rows", "2"])
    assert (args.concurrency, args.judge_mode, args.rows) == (7, "count", 2)
    args = build_parser().parse_args(["rft", "create", "--epochs", "2", "--demo"])
    assert args.epochs == 2


def test_the_engine_and_eval_do_not_import_the_fireworks_client_nor_the_openai_client_before_a_call() -> None:
    """`svgagent eval` talks to the endpoints through the openai client (core/scoring/endpoint.py), imported when
    the engine makes its clients, not when its modules are imported; the fireworks client is the RFT commands'."""
    modules = _imported_after("import svgagent.tui.cli.eval\nimport svgagent.core.run.engine_process")
    assert "openai" not in modules
    assert "fireworks" not in modules


_FIRST_REQUEST_PROBE = """
import json, os, socket, sys, threading

listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(8)
url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"


def first_request():
    conn, _ = listener.accept()
    conn.recv(1)  # the first byte of the first request: report what the process had imported by then
    print(json.dumps(sorted(sys.modules)), flush=True)
    os._exit(0)


threading.Thread(target=first_request, daemon=True).start()
import svgagent.tui.cli.eval as cli_eval

cli_eval.PROGRESS_EVERY_S = 3600.0  # the display's first tick never comes: what is imported is the path's own
from svgagent.tui.cli.main import main

main(["eval", "--base-url", url, "--judge-base-url", url, "--rows", "1", "--store", sys.argv[1], "--max-retries", "0"])
"""


def test_eval_sends_its_first_request_before_importing_the_display_or_the_renderer(tmp_path) -> None:
    """`svgagent eval` imports rich (its progress bar), cairosvg (only the render workers draw) and the fireworks /
    UI libraries only after its first request is out."""
    env = {**os.environ, "FIREWORKS_API_KEY": "FAKEFW-startup", "OPENAI_API_KEY": "FAKEOA-startup"}
    proc = subprocess.run(
        [sys.executable, "-c", _FIRST_REQUEST_PROBE, str(tmp_path / "runs.db")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    modules = set(json.loads(proc.stdout.splitlines()[-1]))
    assert {"svgagent.core.scoring.endpoint", "openai", "httpx2"} <= modules  # the probe saw the real request path
    late = (
        "rich",
        "cairosvg",
        "cairocffi",
        "PIL",
        "fireworks",
        "textual",
        "term_image",
        "httpx",  # (fireworks-ai's transport; openai's is httpx2)
        # (aiohttp is not here: openai's package imports its vendored aiohttp transport when aiohttp is installed)
        "svgagent.core.scoring.render_path",  # only the render workers draw
        "svgagent.core.scoring.extract",  # its patterns compile once the first answer is in
        *OTHER_COMMANDS,
    )  # the parser is eval's alone (tui/cli/main.ALONE)
    assert sorted(name for name in late if name in modules) == []


def test_the_demo_job_source_is_made_without_the_fireworks_client() -> None:
    """The Jobs pane makes its source on the app's loop when first shown (at 120x40: right after the first frame);
    in demo mode that imported the fireworks-ai client there (≈0.5 s of CPU, a frozen screen). It connects — and
    imports the client — in its polling thread."""
    modules = _imported_after(
        "from svgagent.core.demo import job_source_for\n"
        "from svgagent.core.config.settings import Settings\n"
        "job_source_for(Settings(), demo=True)"
    )
    assert "fireworks" not in modules


_FIRST_FRAME_PROBE = """
import asyncio, json, sys, threading
from pathlib import Path

on_loop = set()  # modules the app's own thread imported (the Jobs pane's polling thread may import more, off it)


class Recorder:
    def find_spec(self, name, path=None, target=None):
        if threading.current_thread() is threading.main_thread():
            on_loop.add(name)
        return None


sys.meta_path.insert(0, Recorder())
sys.path.insert(0, sys.argv[2])
import gc
from svgagent.core.startup_gc import pause_collection

pause_collection()  # what `svgagent tui` does first (tui/cli/main.py)
from job_fakes import NOW, fake_source  # the Jobs pane never reaches Fireworks from a test
from svgagent.tui.imaging import configure_term_image

configure_term_image()  # what cmd_tui does before the app starts
from svgagent.core.config.settings import load_settings
from svgagent.core.store.run_store import Store
from svgagent.screens.dashboard import Dashboard
from svgagent.tui.app import SvgAgentApp

before_panes = []  # what the app's thread had imported when the panes after the first frame started to mount
mount_panes = Dashboard.mount_panes


async def recording_mount_panes(self):
    before_panes.append(sorted(on_loop))
    await mount_panes(self)


Dashboard.mount_panes = recording_mount_panes


async def first_frame():
    store = Store(Path(sys.argv[1]))
    settings = load_settings(store=sys.argv[1], fireworks_api_key="fw-test", openai_api_key="sk-test")
    app = SvgAgentApp(settings=settings, store=store, demo=False, env_file=Path(sys.argv[1]).with_name(".env"),
                      job_source=fake_source([]), wall_clock=lambda: NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert app.screen.__class__.__name__ == "Dashboard", app.screen
        print(json.dumps({"gc_enabled": gc.isenabled()}), flush=True)
        print(json.dumps(before_panes[:1]), flush=True)
        print(json.dumps(sorted(on_loop)), flush=True)
        app.exit()


asyncio.run(first_frame())
"""


@pytest.fixture(scope="module")
def first_frame_probe(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The probe's output lines: the GC state, the modules imported before the later panes mount, all of them."""
    tmp_path = tmp_path_factory.mktemp("first-frame")
    proc = subprocess.run(
        [sys.executable, "-c", _FIRST_FRAME_PROBE, str(tmp_path / "runs.db"), str(Path(__file__).parent)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.splitlines()


def test_the_tuis_first_frame_comes_before_pillow_and_rich_syntax_and_ends_the_gc_pause(first_frame_probe) -> None:
    """The dashboard's first frame (an empty store) shows no picture and no SVG source: Pillow (≈65 ms of CPU) waits
    for the first picture decoded, rich.syntax (≈55 ms, Pygments) for the first source shown. Counted: what the
    app's thread imports (the Jobs pane polls in a thread of its own, which imports the fireworks client)."""
    modules = set(json.loads(first_frame_probe[-1]))
    assert "svgagent.screens.dashboard" in modules  # the probe saw the real first frame
    late = (
        "PIL",
        "rich.syntax",
        "pygments",
        "openai",
        "cairosvg",
        "svgagent.screens.help",  # the help screen imports every other screen: only a keymap needs it at start
        "svgagent.core.analysis.stats",  # ≈10 ms of dataclasses: the histogram needs it once there are scores
        "svgagent.core.scoring.render_path",
    )  # the store's caps import the renderer's limits, not its drawing
    assert sorted(name for name in late if name in modules) == []
    assert json.loads(first_frame_probe[-3]) == {"gc_enabled": True}  # the app ended the start-up pause


def test_the_later_panes_and_the_screens_keys_open_are_imported_after_the_first_frame(first_frame_probe) -> None:
    """The Secrets, Jobs and Config panes mount after the first frame (the Config form when first shown), and the
    pickers and screens open on a key: their modules — the Secrets pane's with Textual's DataTable — are imported
    then, not before the first frame (≈0.04 – 0.1 s of CPU)."""
    snapshots = json.loads(first_frame_probe[-2])
    assert snapshots, "the later panes never started to mount"
    before = set(snapshots[0])
    assert "svgagent.screens.dashboard" in before and "svgagent.tui.widgets.rollout_table" in before
    late = (
        "svgagent.tui.widgets.secrets_form",
        "svgagent.tui.widgets.job_panel",
        "svgagent.tui.widgets.config_form",
        "textual.widgets._data_table",
        "svgagent.screens.rollout_detail",
        "svgagent.screens.run_picker",
        "svgagent.screens.sort_picker",
        "svgagent.screens.confirm",
    )
    assert sorted(name for name in late if name in before) == []
    assert "svgagent.tui.widgets.secrets_form" in set(json.loads(first_frame_probe[-1]))  # the panes did mount
