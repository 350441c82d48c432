"""The `svgagent` command. Headless subcommands use only ``svgagent.core``; `tui` imports Textual lazily."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from svgagent.core.scoring.errors import SvgAgentError
from svgagent.core.startup_gc import pause_collection, resume_collection
from svgagent.core.store.run_refs import RUN_HELP
from svgagent.core.terminal_text import visible
from svgagent.tui.cli.exit_codes import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, Stopped
from svgagent.tui.cli.flags import LazyArgumentsParser, add_json, add_settings, add_store

DESCRIPTION = """\
Train and review an SVG-drawing LLM agent.

A policy model writes SVG for each prompt of a dataset; the SVG is rendered safely to PNG and a
vision-LLM judge counts how many of the prompt's numbered requirements the picture fulfils
(score = fulfilled / total). Every rollout is kept in a local SQLite run store.

Try it without keys:   svgagent eval --demo --rows 8
Open the app:          svgagent tui --demo
"""

EPILOG = """\
keys: FIREWORKS_API_KEY (policy), OPENAI_API_KEY (judge), read from the environment or ./.env
settings: flags > environment (SVGAGENT_*) > ./.env > ./svgagent.toml > user config file > defaults
"""


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions keep their line breaks; defaults are written into the help texts where they mean something."""


# The commands whose start-up has a target (BENCHMARKS.md, 4b and 4c): when argv begins with one of them, the
# parser has that command alone. The other commands' modules (serve, rft, analysis: ≈0.02 s of imports) and
# their parsers (≈0.02 s) are what `svgagent eval` and `svgagent tui` would otherwise build before they start.
ALONE = ("eval", "tui")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """Every command's parser, or with ``only`` (one of :data:`ALONE`) that command's alone."""
    parser = argparse.ArgumentParser(
        prog="svgagent", description=DESCRIPTION, epilog=EPILOG, formatter_class=_Formatter
    )
    # subcommands add their heaviest flags when they are used (svgagent --help needs none of them)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=LazyArgumentsParser)
    if only in (None, "eval"):
        _add_eval_parser(sub)
    if only is None:
        runs_sub = _add_runs_export_render_parsers(sub)
    if only in (None, "tui"):
        _add_tui_parser(sub)
    if only is None:
        from svgagent.tui.cli.serve import add_serve_parser

        add_serve_parser(sub, _Formatter)

        from svgagent.tui.cli.rft import add_rft_parser

        add_rft_parser(sub)

        from svgagent.tui.cli.demo_cmd import add_demo_parser

        add_demo_parser(sub, _Formatter)

        from svgagent.tui.cli.analysis import add_analysis_parsers  # runs compare, runs stats, import

        add_analysis_parsers(sub, runs_sub)

        from svgagent.tui.cli.leaderboard import add_leaderboard_parser  # runs leaderboard

        add_leaderboard_parser(runs_sub)

        from svgagent.tui.cli.report_cmd import add_report_parsers  # runs agreement, report

        add_report_parsers(sub, runs_sub)
        _add_store_and_trust_parsers(sub)
    return parser


def _add_eval_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "eval",
        help="run an evaluation headless",
        formatter_class=_Formatter,
        description="Generate, render and judge every row of a dataset; print a summary.\n\n"
        "exit status: 0 mean >= threshold, 1 below, 2 usage/config/store error or no rollout could "
        "reach an endpoint, 3 mean >= threshold but some rollouts failed without a valid score "
        "(endpoint or judge failures: the mean is of the rest; a missing or unrenderable SVG is a "
        "valid 0, not a failure here), 4 stopped by --budget before it finished (resumable), 130 interrupted "
        "(Ctrl-C), 143 terminated (SIGTERM)",
        epilog="examples:\n  svgagent eval --demo --rows 8 --samples 2\n"
        "  svgagent eval --dataset questions.json --model accounts/fireworks/models/gpt-oss-120b\n"
        "  svgagent eval --resume 20261130-101500-ab12\n"
        "  svgagent eval --rows 100 --samples 4 --dry-run      # the expected dollars, nothing called\n"
        "  svgagent eval --budget 5.00                         # stop before the call that would pass $5",
    )
    p.add_argument("--demo", action="store_true", help="use the built-in simulator for policy and judge (no keys)")
    add_settings(p)
    add_store(p)
    p.add_argument("--name", help="a name for the run (default: its id)")
    p.add_argument(
        "--resume",
        metavar="RUN",
        help=f"continue an interrupted run ({RUN_HELP}): finished rollouts are "
        "kept; a flag that would change what the run measures (model, sampling, judge, judge mode, "
        "render size, data, a stored threshold, --demo) is refused",
    )
    cache = p.add_mutually_exclusive_group()
    cache.add_argument(
        "--cache",
        action="store_true",
        help="reuse answers cached by earlier runs for identical requests (default: off, so a new run "
        "is a new sample; stored with the run, so a resume keeps it)",
    )
    cache.add_argument("--no-cache", action="store_true", help="never reuse cached answers (the default)")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print what the run is expected to cost (rows × samples × expected tokens → dollars) and call nothing",
    )
    add_json(p)


def _add_runs_export_render_parsers(sub: argparse._SubParsersAction) -> argparse._SubParsersAction:
    """`runs list|show`, `export`, `render`; returns the `runs` actions (analysis adds `compare` and `stats`)."""
    runs = sub.add_parser("runs", help="list and inspect stored runs", formatter_class=_Formatter)
    runs_sub = runs.add_subparsers(dest="runs_command", metavar="ACTION", required=True)
    p = runs_sub.add_parser("list", help="all runs, newest first")
    add_store(p)
    add_json(p, "JSON")
    p = runs_sub.add_parser("show", help="one run and its rollouts")
    p.add_argument("run_id", metavar="RUN", help=f"{RUN_HELP}; or a served rollout's eval-protocol rollout id")
    add_store(p)
    add_json(p, "JSON")

    p = sub.add_parser("export", help="export a run as Eval Protocol JSONL or CSV", formatter_class=_Formatter)
    p.add_argument("run_id", metavar="RUN", help=RUN_HELP)
    p.add_argument("--format", choices=["jsonl", "csv"], default="jsonl", help="output format (default jsonl)")
    p.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write to FILE instead of stdout (`-`: stdout; a FIFO or "
        "device is written through, a regular file replaced atomically, a symlink followed)",
    )
    p.add_argument(
        "--assets", metavar="DIR", help="also write each rollout's PNG and SVG into DIR (named by rollout id)"
    )
    add_store(p)

    p = sub.add_parser(
        "render", help="render an SVG file to PNG with the sandboxed renderer", formatter_class=_Formatter
    )
    p.add_argument("input", metavar="IN.svg", help="the SVG file (`-`: standard input)")
    p.add_argument("-o", "--output", metavar="OUT.png", required=True, help="the PNG to write (`-`: stdout)")
    p.add_argument(
        "--size", type=int, default=512, help="longest side of the output in pixels, 32 to 4096 (default 512)"
    )
    p.add_argument(
        "--own-size",
        action="store_true",
        help="the page size the SVG gives itself, as the ep-quickstart and svgbench judge profiles draw it "
        "(instead of --size)",
    )
    p.add_argument(
        "--renderer", choices=("cairosvg", "chromium"), default="cairosvg", help="what draws it (default cairosvg)"
    )
    p.add_argument("--chromium", metavar="PATH", help="the Chromium executable (default: chromium on PATH)")
    return runs_sub


def _add_tui_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "tui",
        help="open the terminal app",
        formatter_class=_Formatter,
        description="Open the terminal app: runs and their rollouts with pictures, the settings, the keys, RFT jobs and\n"
        "their training view. Without keys (or with --demo) it runs against the built-in simulator.\n"
        "Press ? in the app for every key.",
        epilog="examples:\n  svgagent tui --demo\n  svgagent tui --run latest\n  svgagent tui --serve",
    )
    p.add_argument("--demo", action="store_true", help="run against the built-in simulator (no keys)")
    p.add_argument(
        "--serve",
        action="store_true",
        help="also run the rollout server (svgagent serve, on 127.0.0.1) and open its training view",
    )
    p.add_argument("--serve-port", type=int, default=3000, metavar="PORT", help="its port (default 3000)")
    p.add_argument("--run", metavar="RUN", help=f"open a stored run ({RUN_HELP})")
    add_store(p)


def _add_store_and_trust_parsers(sub: argparse._SubParsersAction) -> None:
    """`svgagent store check|backup` (tui/cli/store_cmd.py) and `svgagent trust` (tui/cli/trust.py); declared here
    so building the parser imports neither module."""
    p = sub.add_parser(
        "store",
        help="check or back up the run store",
        formatter_class=_Formatter,
        description="Look after the run store file (SQLite).",
        epilog="exit status: 0 ok, 2 the store is missing, damaged or cannot be copied",
    )
    actions = p.add_subparsers(dest="store_command", metavar="ACTION", required=True)
    check = actions.add_parser("check", help="run SQLite's integrity check on the store (read-only)")
    add_store(check)
    backup = actions.add_parser(
        "backup", help="copy the store with SQLite's online backup API (safe while a run writes to it)"
    )
    backup.add_argument(
        "target",
        nargs="?",
        metavar="FILE",
        help="the new file (default: backups/runs-YYYYmmdd-HHMMSS.db next to the store)",
    )
    add_store(backup)
    p = sub.add_parser(
        "trust",
        help="list and confirm what ./svgagent.toml and ./.env set: endpoints, raised limits, the store",
        formatter_class=_Formatter,
        epilog=TRUST_EPILOG,
        description="List the settings this directory's project files decide, and confirm them (asked on a terminal).",
    )
    p.add_argument("--yes", action="store_true", help="confirm without asking (for scripts)")
    p.add_argument("--list", action="store_true", help="show every confirmation kept and change nothing")
    p.add_argument("--forget", action="store_true", help="withdraw the confirmations for ./svgagent.toml and ./.env")


TRUST_EPILOG = """A project's svgagent.toml and .env may set base_url / judge_base_url, safety limits (render_memory_mb,
render_timeout_s, render_size, concurrency, judge_concurrency, workers, max_tokens, max_retries, request_timeout_s)
and where the store lives (store, home). An endpoint that is not the default receives no key, a raised limit or a
moved store refuses every command, until you confirmed it once for that file (and host, or value): this command,
or the question `svgagent tui` asks. Settings from flags, the environment and the user config file need none.
exit status: 0 confirmed or nothing to confirm, 2 not confirmed (declined, or no terminal and no --yes)
"""


def parse_words(parser: argparse.ArgumentParser, words: list[str]) -> argparse.Namespace:
    """``parser.parse_args(words)``, except that words no parser took are refused by the (sub)command they were
    given to, with its usage and the flag most like a mistyped one (argparse has the top-level parser refuse them,
    with the top-level usage: `svgagent eval --rwos 8` printed `usage: svgagent [-h] COMMAND ...`)."""
    args, extra = parser.parse_known_args(words)
    if extra:
        command = innermost_parser(parser, args)
        hint = close_flag(command, extra)
        command.error(f"unrecognized arguments: {' '.join(extra)}" + (f" (did you mean {hint}?)" if hint else ""))
    return args


def innermost_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the (sub)command ``args`` were parsed for (`svgagent runs show` → the parser of `show`)."""
    while True:
        chosen = None
        for action in parser._actions:  # noqa: SLF001 - argparse keeps its subcommands there, and only there
            if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
                chosen = action.choices.get(getattr(args, action.dest, None) or "")
        if chosen is None:
            return parser
        parser = chosen


def close_flag(parser: argparse.ArgumentParser, words: list[str]) -> str | None:
    """The flag of ``parser`` most like the first unknown ``--word`` (None when none is close)."""
    import difflib

    flags = [flag for action in parser._actions for flag in action.option_strings]  # noqa: SLF001
    for word in words:
        if word.startswith("--"):
            close = difflib.get_close_matches(word.split("=", 1)[0], flags, n=1, cutoff=0.6)
            if close:
                return close[0]
    return None


def main(argv: Sequence[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(words[0] if words and words[0] in ALONE else None)
    args = parse_words(parser, words)
    if args.command is None:
        args = parse_words(parser, ["tui", *words])
    if args.command == "tui":
        pause_collection()  # until the first frame is composed (core/startup_gc)
    try:
        if getattr(args, "board", False):  # runs leaderboard
            from svgagent.tui.cli.leaderboard import cmd_leaderboard

            return cmd_leaderboard(args)
        if getattr(args, "analysis", None):  # runs compare | runs stats | import
            from svgagent.tui.cli.analysis import cmd_analysis

            return cmd_analysis(args)
        if getattr(args, "report_cmd", None):  # runs agreement | report
            from svgagent.tui.cli.report_cmd import cmd_report_cmd

            return cmd_report_cmd(args)
        if args.command == "eval":
            from svgagent.tui.cli.eval import cmd_eval

            return cmd_eval(args)
        if args.command == "runs":
            from svgagent.tui.cli.runs import cmd_runs

            return cmd_runs(args)
        if args.command == "export":
            from svgagent.tui.cli.runs import cmd_export

            return cmd_export(args)
        if args.command == "render":
            from svgagent.tui.cli.runs import cmd_render

            return cmd_render(args)
        if args.command == "rft":
            from svgagent.tui.cli.rft import cmd_rft

            return cmd_rft(args)
        if args.command == "serve":
            from svgagent.tui.cli.serve import cmd_serve

            return cmd_serve(args)
        if args.command == "demo":
            from svgagent.tui.cli.demo_cmd import cmd_demo

            return cmd_demo(args)
        if args.command == "trust":
            from svgagent.tui.cli.trust import cmd_trust

            return cmd_trust(args)
        if args.command == "store":
            from svgagent.tui.cli.store_cmd import cmd_store

            return cmd_store(args)
        if args.command == "tui":
            from svgagent.tui.cli.tui import cmd_tui

            return cmd_tui(args)
    except SvgAgentError as err:
        print(f"svgagent: error: {visible(str(err))}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("svgagent: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Stopped as stop:  # SIGINT / SIGTERM during a command's event loop, after its work stopped cleanly
        print(f"svgagent: stopped ({stop}); everything finished so far is saved", file=sys.stderr)
        return stop.exit_code
    except BrokenPipeError:  # e.g. `svgagent export RUN | head`: the reader left; not an error
        from svgagent.tui.cli.console import stdout_gone

        stdout_gone()
        return EXIT_OK
    finally:
        resume_collection()  # a command that stopped before its start-up was over
    parser.print_help()
    return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
