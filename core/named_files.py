"""The one way svgagent writes a file a person named: exports, assets, rendered PNGs, ``.env``, ``svgagent.toml``.

What a path *is* decides how it is written, and nothing is ever half-written:

- ``-``: standard output; and so is any name of the very file standard output is (``/dev/stdout``,
  ``/proc/self/fd/1``, the file it was redirected to), as the standard error's names are standard error: those
  names lead through ``/proc`` to a pipe that cannot be opened by its resolved name, or to a regular file that must
  not be replaced (``-o /dev/stdout >> log`` would have replaced the log).
- a new path, or an existing regular file: a temporary file in the same directory, fsynced, then renamed over the
  target (a reader sees the old file or the new one; a failure leaves the old one as it was). An existing file
  keeps its permission bits unless ``mode`` says otherwise; a new one gets ``mode`` or ``0666 & ~umask``.
- a symlink: followed — what it points to is written by these rules, and the link stays a link.
- a FIFO or a device (``/dev/null``, ``/dev/stdout``, a terminal): written through, never replaced.
- a directory, a socket, or a path whose directory does not exist: refused with one line (:class:`OutputError`).
- a SQLite database or its write-ahead log (a run store, a backup of one): refused too, never replaced by an
  export or a picture (`export RUN -o runs.db` in the data directory would have replaced every run there).

Streams (standard output, FIFOs, devices) receive the content only once all of it was produced (it is spooled in
a temporary file meanwhile), so an error half-way writes nothing there either.
"""

from __future__ import annotations

import io
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import IO, Any

from svgagent.core.scoring.errors import SvgAgentError

STDOUT = "-"
_SPOOL_IN_MEMORY = 8 * 1024 * 1024


class OutputError(SvgAgentError, OSError):
    """A file cannot be written where the person asked (one line saying why). An ``OSError`` too, so callers
    that handle file errors keep handling it."""


class TargetKind(StrEnum):
    STDOUT = "stdout"
    STDERR = "stderr"  # a name of the file standard error is (/dev/stderr): written to it, as standard output
    NEW = "new"  # no such file yet (its directory exists)
    FILE = "file"  # an existing regular file: replaced atomically
    STREAM = "stream"  # a FIFO or a device: written through


def resolve_target(target: str | Path) -> tuple[TargetKind, Path | None]:
    """What ``target`` is and the path to write (symlinks followed); raises :class:`OutputError` for a
    directory, a socket or a missing directory."""
    if str(target) == STDOUT:
        return TargetKind.STDOUT, None
    given = Path(target).expanduser()
    stream = _standard_stream(given)
    if stream is not None:
        return stream, None
    path = Path(os.path.realpath(given)) if given.is_symlink() else given
    try:
        info = path.stat()
    except FileNotFoundError:
        parent = path.parent
        if not parent.is_dir():
            raise OutputError(f"cannot write {given}: the directory {parent} does not exist") from None
        return TargetKind.NEW, path
    except OSError as err:
        raise OutputError(f"cannot write {given}: {err.strerror or err}") from None
    if stat.S_ISREG(info.st_mode):
        return TargetKind.FILE, path
    if stat.S_ISDIR(info.st_mode):
        raise OutputError(f"cannot write {given}: it is a directory")
    if stat.S_ISFIFO(info.st_mode) or stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode):
        return TargetKind.STREAM, path
    raise OutputError(f"cannot write {given}: it is not a file, a FIFO or a device")


_SQLITE_HEADER = b"SQLite format 3\x00"
_WAL_MAGIC = (b"\x37\x7f\x06\x82", b"\x37\x7f\x06\x83")


def _refuse_database(path: Path, target: str | Path) -> None:
    """An :class:`OutputError` when the regular file at ``path`` is a SQLite database or write-ahead log."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(_SQLITE_HEADER))
    except OSError:
        return  # not readable: the write says what is wrong with it
    if head.startswith(_SQLITE_HEADER) or head[:4] in _WAL_MAGIC:
        raise OutputError(
            f"cannot write {target}: it is a SQLite database (a run store or its backup?), which an "
            "output never replaces; name another file"
        )


def _standard_stream(path: Path) -> TargetKind | None:
    """STDOUT or STDERR when ``path`` (its links followed, /proc's too) is the file this process's standard output
    or error is; None otherwise."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    for fd, kind in ((1, TargetKind.STDOUT), (2, TargetKind.STDERR)):
        try:
            own = os.fstat(fd)
        except OSError:
            continue
        if (own.st_dev, own.st_ino) == (info.st_dev, info.st_ino):
            return kind
    return None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def open_output(
    target: str | Path, *, binary: bool = False, mode: int | None = None, stdout: IO[Any] | None = None
) -> Iterator[IO[Any]]:
    """A stream to write ``target`` (see the module docstring); the content lands when the block ends without an
    exception. Text is UTF-8 with line endings as written. ``stdout`` replaces ``sys.stdout`` for ``-``."""
    kind, path = resolve_target(target)
    if kind is TargetKind.FILE:
        assert path is not None
        _refuse_database(path, target)
    if kind in (TargetKind.NEW, TargetKind.FILE):
        assert path is not None
        keep = stat.S_IMODE(path.stat().st_mode) if kind is TargetKind.FILE else 0o666 & ~_umask()
        with _replacing(path, keep if mode is None else mode, binary) as stream:
            yield stream
        return
    with tempfile.SpooledTemporaryFile(max_size=_SPOOL_IN_MEMORY, mode="w+b") as spool:
        with _wrapped(spool, binary) as stream:
            yield stream
        spool.seek(0)
        if kind is TargetKind.STDOUT:
            _copy_to_stdout(spool, stdout if stdout is not None else sys.stdout, binary)
        elif kind is TargetKind.STDERR:
            _copy_to_stdout(spool, sys.stderr, binary)
        else:
            assert path is not None
            _copy_to_stream(spool, path)


@contextmanager
def _wrapped(raw: IO[bytes], binary: bool) -> Iterator[IO[Any]]:
    """``raw`` itself, or a UTF-8 text layer over it that is flushed on success and detached in any case (so
    closing it never closes ``raw`` behind the caller's back)."""
    if binary:
        yield raw
        raw.flush()
        return
    text = io.TextIOWrapper(raw, encoding="utf-8", newline="")  # type: ignore[arg-type]
    try:
        yield text
        text.flush()
    finally:
        try:
            text.detach()
        except (OSError, ValueError):  # the failed write's buffered rest: dropped with the temporary file
            pass


@contextmanager
def _replacing(path: Path, mode: int, binary: bool) -> Iterator[IO[Any]]:
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as err:
        raise OutputError(f"cannot write {path}: {err.strerror or err}") from None
    try:
        os.fchmod(fd, mode)
        with open(fd, "wb") as raw:
            with _wrapped(raw, binary) as stream:
                yield stream
            os.fsync(raw.fileno())
        os.replace(tmp, path)
    except BaseException as err:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(err, OSError):
            raise OutputError(f"cannot write {path}: {err.strerror or err}") from None
        raise
    _sync_directory(path.parent)


def _sync_directory(directory: Path) -> None:
    """Make a rename durable; not every platform lets a directory be opened."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _copy_to_stdout(spool: IO[bytes], out: IO[Any], binary: bool) -> None:
    buffer = getattr(out, "buffer", None)
    if buffer is not None:
        out.flush()
        shutil.copyfileobj(spool, buffer)
        buffer.flush()
    elif binary:
        shutil.copyfileobj(spool, out)
    else:
        out.write(spool.read().decode("utf-8"))
    out.flush()


def _copy_to_stream(spool: IO[bytes], path: Path) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | getattr(os, "O_NOCTTY", 0))  # no O_CREAT, no O_TRUNC: write through
    except OSError as err:
        raise OutputError(f"cannot write {path}: {err.strerror or err}") from None
    try:
        with open(fd, "wb", closefd=True) as sink:
            shutil.copyfileobj(spool, sink)
    except OSError as err:
        raise OutputError(f"cannot write {path}: {err.strerror or err}") from None


def write_output(
    target: str | Path, data: str | bytes, *, mode: int | None = None, stdout: IO[Any] | None = None
) -> TargetKind:
    """Write all of ``data`` to ``target`` by the rules above; returns what the target was."""
    kind, _ = resolve_target(target)
    with open_output(target, binary=isinstance(data, bytes), mode=mode, stdout=stdout) as stream:
        stream.write(data)
    return kind
