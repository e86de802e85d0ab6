"""Kineto's start and stop markers kept off the capture's terminal.

PyTorch 2.13's Kineto writes a line to stderr whenever a trace starts or stops
(``USDT:2026-12-04 09:11:35 17456:17456 SyncActivityProfilerHandler.cpp:52]
profiler_start``): six lines of noise among a three-variant capture's dozen, two per rank
under ``torchrun``.  They come at a severity above Kineto's errors, so no
``KINETO_LOG_LEVEL`` hides them and keeps the errors (a CUDA host's "insufficient
privileges" must still reach the user).  So around the two profiler steps that start
and stop the trace, and only those (the steps between are not slowed), file descriptor
2 is spooled to a temporary file and written back without those two lines: everything
else written meanwhile (Kineto's errors, the script's own output) comes through, in
order, right after the step.
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


@contextlib.contextmanager
def markers_dropped() -> Iterator[None]:
    """Within this block, what reaches stderr is held and written back at its end,
    Kineto's markers left out.  Where stderr cannot be redirected (no descriptor 2),
    the block runs as it is."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):
        yield
        return
    with tempfile.TemporaryFile(prefix="trnscope-stderr-") as spool:
        os.dup2(spool.fileno(), 2)
        try:
            yield
        finally:
            with contextlib.suppress(OSError, ValueError, AttributeError):
                sys.stderr.flush()  # Python's own buffered writes belong to the block
            os.dup2(saved, 2)
            os.close(saved)
            spool.seek(0)
            kept = without_markers(spool.read())
            if kept:
                with contextlib.suppress(OSError):
                    _write_all(2, kept)


class QuietSteps:
    """``prof.step`` for a schedule of ``wait`` idle, one warm-up and ``active``
    recorded steps (``repeat=1``): the call that starts the trace (number ``wait + 1``)
    and the one that stops it (``wait + 1 + active``) run with the markers dropped."""

    def __init__(self, step: Callable[[], object], wait: int, active: int) -> None:
        self._step = step
        self._calls = 0
        self._marked = {wait + 1, wait + 1 + active}

    def __call__(self) -> None:
        self._calls += 1
        if self._calls in self._marked:
            with markers_dropped():
                self._step()
        else:
            self._step()
