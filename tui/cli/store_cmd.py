"""Opening the run store the same way in every command, and `svgagent store check|backup`.

Commands that only read (`runs list|show|compare|stats`, `export`, `store check|backup`) open the store read-only
(also on a read-only file system) and never create one: a missing store is one line saying so (for `runs list`,
that there are no runs yet: exit 0). Commands that write (`eval`, `import`, `tui`, `serve`, `rft`) create a missing
store — a private 0700 directory and 0600 file — after saying where.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from svgagent.core.named_files import OutputError, TargetKind, resolve_target
from svgagent.core.scoring.errors import StoreError, StoreOutdated
from svgagent.tui.cli.exit_codes import EXIT_OK, EXIT_USAGE

if TYPE_CHECKING:  # settings (pydantic) and the store are imported when a command opens one, not to build the parser
    from svgagent.core.store.run_store import Store


def store_path(args: argparse.Namespace) -> Path:
    from svgagent.core.config.settings import load_settings

    return load_settings(store=getattr(args, "store", None)).store_path()


def open_store(args: argparse.Namespace) -> Store:
    """The store for a command that only reads: read-only, never created. A store from an older svgagent is
    upgraded first when the file may be written (the upgrade is the only write)."""
    from svgagent.core.store.run_store import Store

    path = store_path(args)
    if not path.exists():
        raise StoreError(f"no run store at {path} yet: run `svgagent eval --demo` to make one")
    try:
        return Store(path, readonly=True)
    except StoreOutdated:
        if not os.access(path, os.W_OK):
            raise
    Store(path).close()  # migrate, then read as asked
    return Store(path, readonly=True)


def open_store_for_writing(path: Path, *, announce: Callable[[str], None] | None = None) -> Store:
    """The store for a command that writes; a missing one is created after one line saying where (on stderr, or
    through ``announce`` for a command whose stderr has a format of its own)."""
    from svgagent.core.store.run_store import Store

    if not path.exists():
        message = f"creating a new run store at {path}"
        if announce is not None:
            announce(message)
        else:
            print(f"svgagent: {message}", file=sys.stderr)
    return Store(path)


# --- svgagent store check | backup ------------------------------------------------------------------------------


def cmd_store(args: argparse.Namespace) -> int:
    from svgagent.core.store.run_store import Store

    path = store_path(args)
    if args.store_command == "check":
        if not path.exists():
            raise StoreError(f"no run store at {path}")
        try:
            store = Store(path, readonly=True)
        except StoreError as err:
            print(f"svgagent: {err}", file=sys.stderr)
            return EXIT_USAGE
        with store:
            problems = store.integrity_problems()
            version = 0 if problems else store.schema_version
        if problems:
            print(
                f"svgagent: the run store {path} is damaged ({len(problems)} problem"
                f"{'s' if len(problems) != 1 else ''} found, first: {problems[0]}); restore it from a backup",
                file=sys.stderr,
            )
            return EXIT_USAGE
        print(f"{path}: ok (schema v{version})")
        return EXIT_OK
    target = Path(args.target) if args.target else path.parent / "backups" / time.strftime("runs-%Y%m%d-%H%M%S.db")
    return _backup(path, target)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _backup(path: Path, target: Path) -> int:
    from svgagent.core.store.run_store import FILE_MODE, Store

    if not path.exists():
        raise StoreError(f"no run store at {path}")
    if not target.parent.exists() and target.parent == path.parent / "backups":
        target.parent.mkdir(mode=0o700, parents=True)
    kind, resolved = resolve_target(target)
    if kind not in (TargetKind.NEW, TargetKind.FILE) or resolved is None:
        raise OutputError(
            f"cannot back up to {target}: a backup is a regular file (not standard output, a FIFO or a device)"
        )
    target = resolved
    if kind is TargetKind.FILE and any(_same_file(target, Path(f"{path}{suffix}")) for suffix in ("", "-wal", "-shm")):
        raise OutputError(
            f"cannot back up to {target}: it is the run store itself (name a new file, or omit FILE "
            "for one in backups/)"
        )
    with Store(path, readonly=True) as store:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        os.close(fd)
        os.chmod(tmp, FILE_MODE)
        try:
            store.backup_to(Path(tmp))
            with Store(tmp, readonly=True) as copy:
                problems = copy.integrity_problems()
            if problems:
                raise StoreError(
                    f"the backup of {path} failed its integrity check ({problems[0]}): the store may "
                    "be damaged (see `svgagent store check`)"
                )
            os.replace(tmp, target)
        except BaseException:
            for leftover in (tmp, f"{tmp}-wal", f"{tmp}-shm", f"{tmp}-journal"):
                Path(leftover).unlink(missing_ok=True)
            raise
    print(f"backed up {path} to {target}", file=sys.stderr)
    print(target)
    return EXIT_OK
