"""Start-up: what a command imports before it does anything (the times are in bench/startup.py, not here).

`svgagent --help` must not pay for pydantic (the settings flags), the openai or fireworks clients, aiohttp or the
UI libraries; a subcommand's own `--help` still shows every flag it had.
"""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("pydantic", "pydantic_settings", "openai", "fireworks", "aiohttp", "httpx", "textual", "rich", "PIL",
         "asyncio")


def _imported_after(code: str) -> set[str]:
    probe = f"import sys, json\n{code}\nprint(json.dumps(sorted(m for m in sys.modules)))"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(json.loads(proc.stdout.splitlines()[-1]))


def test_top_level_help_imports_nothing_heavy() -> None:
    modules = _imported_after("from svgagent.tui.cli.main import build_parser\nbuild_parser().format_help()")
    assert sorted(name for name in HEAVY if name in modules) == []


def test_building_the_parser_for_a_command_imports_nothing_heavy() -> None:
    """argv decides which subcommand parses; the others' deferred flags are never built."""
    code = ("from svgagent.tui.cli.main import build_parser\n"
            "build_parser().parse_args(['runs', 'list'])")
    modules = _imported_after(code)
    assert sorted(name for name in HEAVY if name in modules) == []


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


def test_the_engine_and_eval_do_not_import_the_openai_or_fireworks_clients() -> None:
    """`svgagent eval` talks to the endpoints through core.chat_http (aiohttp): the openai client, most of a second
    to import, is for key checks and the RFT bundle only."""
    modules = _imported_after("import svgagent.tui.cli.eval\nimport svgagent.core.engine_process")
    assert "openai" not in modules
    assert "fireworks" not in modules
