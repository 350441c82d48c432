"""`svgagent tui`: open the terminal app — against the simulator when asked (--demo) or when no keys are set."""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path
from typing import Any

from svgagent.core.config.project_trust import require_confirmed, require_trusted
from svgagent.core.config.settings import Settings, load_settings, read_settings
from svgagent.core.scoring.errors import StoreError
from svgagent.tui.cli.exit_codes import EXIT_OK, EXIT_TERMINATED


def tui_settings(args: argparse.Namespace) -> dict[str, Any]:
    return {"store": getattr(args, "store", None)}


@contextlib.contextmanager
def _serving(settings: Settings, args: argparse.Namespace) -> Any:
    """`svgagent serve` inside the app (loopback, --serve-port); its statuses go to each request's gateway."""
    from svgagent.core.serve.wiring import ServeOptions, ServerThread

    server = ServerThread(settings, ServeOptions(port=args.serve_port, grace_s=5.0))
    url = server.start()
    try:
        yield url
    finally:
        server.stop()


@contextlib.contextmanager
def _exit_on_sigterm(app: Any) -> Any:
    """SIGTERM closes the app the way `q` does (the terminal restored, a run in progress stopped and marked
    interrupted by the engine) instead of killing it mid-screen."""
    import asyncio
    import signal

    def on_term(signum: int, frame: Any) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not inside the app's loop (starting or closing): stop as Ctrl-C would
            raise KeyboardInterrupt from None
        loop.call_soon_threadsafe(lambda: app.exit(return_code=EXIT_TERMINATED))

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def trusted(settings: Settings) -> Settings:
    """``settings`` once no key would go to an unconfirmed project-file endpoint (else a one-line ConfigError)."""
    require_trusted(settings)
    return settings


def cmd_tui(args: argparse.Namespace) -> int:
    from svgagent.core.demo import demo_overrides, demo_simulator_process
    from svgagent.core.store.run_refs import resolve_run
    from svgagent.tui.cli.store_cmd import open_store_for_writing
    from svgagent.tui.cli.trust import ask, on_terminal

    overrides = tui_settings(args)
    real = read_settings(**overrides)
    implicit_demo = not args.demo and bool(real.missing_keys())
    demo = args.demo or implicit_demo
    # what a project file decides unconfirmed: ask first (an endpoint only when a key would go there)
    asked = [setting for setting in real.pending if not (setting.is_endpoint and demo)]
    if asked:
        if not on_terminal() or not ask(asked):
            require_confirmed(real)
            require_trusted(real)
        real = load_settings(**overrides)
    path = real.store_path()
    if args.run and not path.exists():  # nothing to open: say so rather than create an empty store
        raise StoreError(f"no run {args.run!r}: there is no run store at {path} yet")
    with contextlib.ExitStack() as stack:
        # The demo's simulator runs in a process of its own, started after the first frame (its URL is known now:
        # a request made before it is up waits for it), so that its boot does not share the cores with this one's.
        sim = stack.enter_context(demo_simulator_process(start=False)) if demo else None
        from svgagent.tui.imaging import configure_term_image

        configure_term_image()  # before the app starts: no terminal queries, fixed cell ratio
        store = stack.enter_context(open_store_for_writing(path))
        run_id = resolve_run(store, args.run).run_id if args.run else None  # before the screen switches
        from svgagent.tui.app import SvgAgentApp

        extra: dict[str, Any] = {}
        settings: Settings = real
        if sim is not None:
            extra = demo_overrides(sim.base_url)
            settings = load_settings(**overrides, **extra)
        serve_url = None
        if getattr(args, "serve", False):
            serve_url = stack.enter_context(_serving(settings, args))

        app = SvgAgentApp(
            settings=settings,
            store=store,
            demo=demo,
            run_id=run_id,
            env_file=Path.cwd() / ".env",
            demo_overrides=extra,
            settings_loader=(lambda: trusted(load_settings(**overrides))) if implicit_demo else None,
            serve_url=serve_url,
            after_first_frame=sim.start if sim is not None else None,
            missing_keys=real.missing_keys() if implicit_demo else (),
        )
        with _exit_on_sigterm(app):
            app.run()
    if app.return_code == EXIT_TERMINATED:
        print(
            "svgagent: terminated (SIGTERM): a run in progress was stopped and kept as interrupted; open it and "
            "press c to resume",
            file=sys.stderr,
        )
        return EXIT_TERMINATED
    if app.return_code:
        print("svgagent: the app stopped with an error (see above)", file=sys.stderr)
        return app.return_code
    return EXIT_OK
