"""Kineto's start and stop markers kept off the capture's terminal.

PyTorch 2.13's Kineto writes a line to stderr whenever a trace starts or stops
(``USDT:2026-12-04 09:11:35 17456:17456 SyncActivityProfilerHandler.cpp:52]
profiler_start``): six lines of noise among a three-variant capture's dozen, two per rank
under ``torchrun``.  They come at a severity above Kineto's errors, so no
``KINETO_LOG_LEVEL`` hides them and keeps the errors (a CUDA host's "insufficient
privileges" must still reach the user).  So around the two profiler steps that start
and stop the trace, and only those (the steps between are not slowed), file descriptor
2 is spooled to a temporary file and written back without those two lines: everything
else written meanwhile (Kineto's errors, the script's own output) comes through, once
the trace has stopped (read back inside the recorded window, it would take ~90 us of the
first recorded step).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterator

_MARKER = re.compile(rb"USDT:[^\n]*\] profiler_(?:start|stop)\r?\n?")


def without_markers(written: bytes) -> bytes:
    """``written`` less Kineto's start and stop lines."""
    return b"".join(line for line in written.splitlines(keepends=True) if not _MARKER.fullmatch(line))


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class _Spool:
    """A temporary file that descriptor 2 can point at for a while, and be given back."""

    def __init__(self) -> None:
        # closed by written(), once read back (it outlives the recorded window)
        self.file = tempfile.TemporaryFile(prefix="trnscope-stderr-")  # noqa: SIM115
        self.saved = -1

    def begin(self) -> None:
        """Descriptor 2 to the file (a flush and two system calls)."""
        with contextlib.suppress(OSError, ValueError, AttributeError):
            sys.stderr.flush()  # what Python buffered before belongs before the block
        self.saved = os.dup(2)
        try:
            os.dup2(self.file.fileno(), 2)
        except OSError:
            os.close(self.saved)
            self.saved = -1
            raise

    def give_back(self) -> None:
        """Descriptor 2 is stderr again (a flush and two system calls)."""
        if self.saved < 0:
            return
        with contextlib.suppress(OSError, ValueError, AttributeError):
            sys.stderr.flush()  # Python's own buffered writes belong to the block
        os.dup2(self.saved, 2)
        os.close(self.saved)
        self.saved = -1

    def written(self) -> bytes:
        self.file.seek(0)
        data = self.file.read()
        self.file.close()
        return data


def _write_back(spools: list[_Spool]) -> None:
    kept = without_markers(b"".join(spool.written() for spool in spools))
    if kept:
        with contextlib.suppress(OSError):
            _write_all(2, kept)


@contextlib.contextmanager
def markers_dropped() -> Iterator[None]:
    """Within this block, what reaches stderr is held and written back at its end,
    Kineto's markers left out.  Where stderr cannot be redirected (no descriptor 2),
    the block runs as it is."""
    try:
        spool = _Spool()
        spool.begin()
    except OSError:
        yield
        return
    try:
        yield
    finally:
        spool.give_back()
        _write_back([spool])


class QuietSteps:
    """``prof.step`` for a schedule of ``wait`` idle, one warm-up and ``active``
    recorded steps (``repeat=1``): the call that starts the trace (number ``wait + 1``)
    and the one that stops it (``wait + 1 + active``) run with stderr spooled.  Both
    files are made before the trace starts and read back only once it has stopped (or
    at the end of the ``with`` block), so that inside the recorded window this costs a
    few system calls (~10 us) and no file made, read or written (made there, one took
    ~140 us of the last recorded step); what Kineto wrote at the start (its errors)
    then follows the recorded steps' own output."""

    def __init__(self, step: Callable[[], object], wait: int, active: int) -> None:
        self._step = step
        self._calls = 0
        self._start, self._stop = wait + 1, wait + 1 + active
        self._spools: dict[int, _Spool] = {}

    def __enter__(self) -> QuietSteps:
        return self

    def __exit__(self, *_: object) -> None:
        self.write_back()

    def write_back(self) -> None:
        """What the spooled steps wrote, less the markers, to stderr (once)."""
        spools, self._spools = list(self._spools.values()), {}
        for spool in spools:
            spool.give_back()
        _write_back(spools)

    def __call__(self) -> None:
        self._calls += 1
        if self._calls == self._start:
            with contextlib.suppress(OSError):  # no temporary file: the markers go through
                self._spools = {self._start: _Spool(), self._stop: _Spool()}
        spool = self._spools.get(self._calls)
        if spool is None:
            self._step()
            return
        try:
            spool.begin()
        except OSError:
            self._step()
            return
        try:
            self._step()
        finally:
            spool.give_back()
        if self._calls == self._stop:
            self.write_back()
