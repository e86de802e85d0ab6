"""A gzip trace decompressed by a child process while the rest of trnscope loads.

Before the first byte of a trace is read, a command spends about 0.15 s of one core
importing NumPy and its own modules, and a gzip trace of 35–90 MB then takes another
0.05–0.15 s to decompress.  ``trnscope summary T.json.gz`` (and ``chain``, ``diagnose``,
``timeline``, and each variant of ``compare`` and ``open``) now forks a child per
trace as soon as its arguments are parsed; the child writes the decompressed copy
(``gzip_copy.write_copy``, exactly as the loading process would) on the other core
while the parent imports, and ``source.open_plain`` takes the copy over when the load
asks for it.

A process and not a thread: a thread decompressing beside the imports waited for the
GIL after every 1 MiB it inflated (xDiT's 62 MB took 0.12–0.2 s instead of 0.07 s, even
with a 0.2 ms switch interval), while a child runs at full speed.  It is forked only
from a process that runs no other thread and has not loaded NumPy (so the fork copies
little and holds no lock another thread could own).

The child tells the parent what it did over a pipe: progress lines while it writes,
then one line with the outcome (JSON by the standard library: this module, ``gzip_copy``
and ``cachedir`` load before msgspec, whose import takes ~20 ms, and the package's names
load on first use, so the child is forked ~18 ms into the command instead of ~38).  The
parent falls back to its own path whenever the child did not write a copy (a kept copy
already there, no writable cache folder, no room, an unreadable file: the parent then
meets the same condition and says so).  A copy nobody claims (the parsed-index cache
answered first, or the command failed) is stopped at exit and a private copy of it
removed; a child whose parent was killed finishes its copy, which is then swept as any
killed process's copy is.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import signal
import stat
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal, NamedTuple, NoReturn

from trnscope.core.base.cachedir import writable_dir
from trnscope.core.base.errors import LoadCancelled
from trnscope.core.formats.gzip_copy import (
    GZIP_MAGIC,
    Copy,
    Progress,
    copy_key,
    copy_paths,
    is_recorded,
    keep_until_exit,
    sweep_orphaned_copies,
    write_copy,
)

_WAIT_STEP_S = 0.05  # how often a waiting parent looks at its cancel flag
_STOP_PATIENCE_S = 2.0  # how long a stopped child may take to end, after SIGTERM and again after SIGKILL


class Outcome(NamedTuple):
    """What the child did: ``written`` (``copy``), ``kept`` (a kept copy was already
    there: the parent checks and uses it as always), or ``declined`` (no cache folder,
    no room, or an error the parent will meet and report itself)."""

    kind: Literal["written", "kept", "declined"]
    copy: Copy | None = None

    def encode(self) -> bytes:
        return json.dumps([self.kind, None if self.copy is None else list(self.copy)]).encode()

    @classmethod
    def decode(cls, data: bytes) -> Outcome | None:
        """The outcome in ``data``, or None if it is not one (never from our child)."""
        try:
            kind, copy = json.loads(data)
        except (ValueError, TypeError, RecursionError):
            return None
        if kind == "written" and isinstance(copy, list) and len(copy) == 2 and all(isinstance(c, str) for c in copy):
            return cls("written", Copy(*copy))
        return cls(kind) if kind in ("kept", "declined") and copy is None else None


def _names(data: bytes) -> list[str]:
    """The file names in a ``files`` line ([] if it holds none)."""
    try:
        names = json.loads(data)
    except (ValueError, RecursionError):
        return []
    return names if isinstance(names, list) and all(isinstance(n, str) for n in names) else []


class _Child:
    """A started child: its pid, the read end of its pipe, and what it reported."""

    def __init__(self, pid: int, reader: int, file_id: tuple[int, int], keep: bool) -> None:
        self.parent = os.getpid()  # a process forked from it later (a decode worker) must not claim it
        self.pid = pid
        self.reader = reader
        self.file_id = file_id
        self.keep = keep
        self.pending = b""
        self.outcome: Outcome | None = None
        self.progress: tuple[int, int] | None = None
        self.private_files: list[str] = []  # what the child writes, announced before it starts
        self.reaped = False

    def _absorb(self, data: bytes) -> None:
        self.pending += data
        *lines, self.pending = self.pending.split(b"\n")
        for line in lines:
            if line.startswith(b"p "):
                done, total = line[2:].split()
                self.progress = (int(done), int(total))
            elif line.startswith(b"files "):
                self.private_files = _names(line[6:])
                for name in self.private_files:  # this process's: removed when it exits,
                    # however it ends (a SIGTERM after the child has finished and before
                    # the copy is handed on would otherwise leave it behind)
                    keep_until_exit(Path(name))
            elif line.startswith(b"done "):
                self.outcome = Outcome.decode(line[5:])

    def _read(self, timeout: float | None) -> bool:
        """Read what the child wrote within ``timeout``; False at the end of the pipe."""
        ready, _, _ = select.select([self.reader], [], [], timeout)
        if not ready:
            return True
        data = os.read(self.reader, 1 << 16)
        if not data:
            return False
        self._absorb(data)
        return True

    def _ended_within(self, seconds: float) -> bool:
        """Whether the child's end of the pipe closed (it exited) within ``seconds``."""
        deadline = time.monotonic() + seconds
        with contextlib.suppress(OSError):
            while (left := deadline - time.monotonic()) > 0:
                if not self._read(left):
                    return True
        return False

    def _reap(self) -> None:
        if not self.reaped:
            self.reaped = True
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.pid, 0)
            with contextlib.suppress(OSError):
                os.close(self.reader)

    def wait(self, progress: Progress | None, cancelled: Callable[[], bool] | None) -> Copy | None:
        """The copy the child wrote, once it has finished (None if it wrote none)."""
        try:
            reported = None
            while self._read(_WAIT_STEP_S):
                if cancelled is not None and cancelled():
                    raise LoadCancelled()
                if progress is not None and self.progress is not None and self.progress != reported:
                    reported = self.progress
                    progress("decompress", *reported)
        except BaseException:
            self.stop()
            raise
        self._reap()
        outcome = self.outcome
        return outcome.copy if outcome is not None and outcome.kind == "written" else None

    def stop(self) -> None:
        """End the child and remove the private copy it was writing or wrote: nobody will
        use it.  (The child removes its temporary file itself when stopped, but a stop
        can land after the copy is in place and before the child has said so.)"""
        if self.reaped:
            return
        for ending, patience in ((signal.SIGTERM, _STOP_PATIENCE_S), (signal.SIGKILL, _STOP_PATIENCE_S)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, ending)
            if self._ended_within(patience):
                self._reap()
                break
        else:  # stuck in the kernel (a hung network file system): left to init, and this process still exits
            self.reaped = True
            with contextlib.suppress(OSError):
                os.close(self.reader)
        for name in self.private_files:
            with contextlib.suppress(OSError):
                os.unlink(name)


_children: list[_Child] = []


@atexit.register
def _stop_unclaimed() -> None:
    while _children:
        child = _children.pop()
        if child.parent == os.getpid():
            child.stop()


def start(path: Path, *, keep: bool) -> bool:
    """Fork a child that decompresses the gzip file ``path`` into its copy (a kept one
    when ``keep``, else one private to this process).  Does nothing (False) for a file
    that is not gzip or already has a child, where there is no fork, or once threads or
    NumPy run here."""
    if not hasattr(os, "fork") or threading.active_count() > 1 or "numpy" in sys.modules:
        return False
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):  # a FIFO or a terminal would block the read below
            return False
        with open(path, "rb") as fh:
            if fh.read(2) != GZIP_MAGIC:
                return False
    except OSError:
        return False
    if any(child.file_id == (info.st_dev, info.st_ino) for child in _children):  # the same file twice
        return False
    owner = os.getpid()
    reader, writer = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(reader)
        os.close(writer)
        return False
    if pid == 0:  # pragma: no cover - the child: measured by the parent's tests
        os.close(reader)
        _run_child(path, owner, writer, keep)
    os.close(writer)
    _children.append(_Child(pid, reader, (info.st_dev, info.st_ino), keep))
    return True


def claim(info: os.stat_result, *, keep: bool) -> _Child | None:
    """The child decompressing this file (by device and inode) into the kind of copy
    asked for, if one was started; it is this caller's to wait for from now on."""
    for child in _children:
        if child.file_id == (info.st_dev, info.st_ino) and child.keep == keep and child.parent == os.getpid():
            _children.remove(child)
            return child
    return None


def wrote_fresh_copy(info: os.stat_result, *, keep: bool) -> bool:
    """Whether the child decompressing this file has already written a fresh copy (a
    first open: none was kept from an earlier one), without waiting for it."""
    for child in _children:
        if child.file_id == (info.st_dev, info.st_ino) and child.keep == keep and child.parent == os.getpid():
            with contextlib.suppress(OSError):
                while child.outcome is None and select.select([child.reader], [], [], 0)[0]:
                    data = os.read(child.reader, 1 << 16)
                    if not data:
                        break
                    child._absorb(data)
            return child.outcome is not None and child.outcome.kind == "written"
    return False


class _Stopped(BaseException):
    """SIGTERM in the child: unwinds through ``write_copy``, which removes its temporary file."""


def _on_sigterm(signum: int, frame: object) -> NoReturn:
    raise _Stopped()


def _run_child(path: Path, owner: int, writer: int, keep: bool) -> NoReturn:  # pragma: no cover - in the child
    code = 0
    outcome = Outcome("declined")
    try:
        signal.signal(signal.SIGTERM, _on_sigterm)
        signal.signal(signal.SIGINT, _on_sigterm)  # Ctrl+C reaches the whole group: stop, tidily
        if hasattr(signal, "pthread_sigmask"):  # held by the parent while it loads (cli.run);
            # a SIGHUP stays held: the parent hears it too and stops this child itself
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
        outcome = _decompress(path, owner, writer, keep)
    except BaseException:
        code = 1
    try:
        os.set_blocking(writer, True)
        os.write(writer, b"done " + outcome.encode() + b"\n")
    finally:
        os._exit(code)


def _decompress(path: Path, owner: int, writer: int, keep: bool) -> Outcome:  # pragma: no cover - in the child
    folder = writable_dir("plain")
    if folder is None:
        return Outcome("declined")
    key = copy_key(path, keep=keep)
    sweep_orphaned_copies(folder)
    if keep and is_recorded(folder, key):
        return Outcome("kept")
    if not keep:  # the names, before anything is written: the parent removes them if it stops this child
        files = [str(name) for name in copy_paths(folder, key, owner, keep=False)]
        os.write(writer, b"files " + json.dumps(files).encode() + b"\n")
    os.set_blocking(writer, False)  # progress is dropped, never waited for, when the parent reads late

    def report(phase: str, done: int, total: int) -> None:
        with contextlib.suppress(OSError):
            os.write(writer, f"p {done} {total}\n".encode())

    copy = write_copy(path, path.stat().st_size, folder, key, owner, keep=keep, progress=report)
    return Outcome("declined") if copy is None else Outcome("written", copy)
