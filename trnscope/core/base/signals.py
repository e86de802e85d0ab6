"""The signals that end a command (Ctrl+C, SIGTERM, SIGHUP), held back for a moment.

A handler that runs at the wrong moment does harm: inside a C extension's
initialisation it can leave the extension half set up, and during a ``fork`` it runs
inside an at-fork callback (logging's ``_releaseLock``), where the exception it raises
is printed as a traceback and dropped — the command then ignores the signal and runs
to its end.  Held, a signal arrives right after the moment, to the handlers in place."""

from __future__ import annotations

import signal
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

ENDINGS = frozenset({signal.SIGINT, signal.SIGTERM, *([signal.SIGHUP] if hasattr(signal, "SIGHUP") else [])})


@contextmanager
def endings_held(restore: Iterable[int] | None = None) -> Iterator[None]:
    """Ctrl+C, SIGTERM and SIGHUP wait until the block is done (where the platform can
    hold signals).  A process forked inside the block starts with them held: it lets
    them through itself (``let_endings_through``) once its own handlers are set.

    At the end the mask is as it was before the block, or ``restore``: the mask from
    before an earlier hold that this block ends (the console script's, from its first
    line: ``trnscope.console``)."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, ENDINGS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous if restore is None else restore)


def let_endings_through() -> None:
    """In a process forked while they were held: receive them again."""
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, ENDINGS)


@contextmanager
def endings_deferred() -> Iterator[None]:
    """Ctrl+C, SIGTERM and SIGHUP noted during the block and delivered, to the handlers
    in place before it, when it ends.  Unlike ``endings_held`` this holds them whatever
    thread the kernel gives them to: a mask holds a signal only from the threads that
    block it, and in a process with other threads (torch's, a test runner's) one of
    those took SIGTERM and the main thread ran its handler at once.  Main thread only
    (elsewhere the block runs as it is)."""
    arrived: list[int] = []

    def note(signum: int, frame: Any) -> None:
        arrived.append(signum)

    previous: dict[int, Any] = {}
    try:
        try:
            for ending in ENDINGS:
                previous[ending] = signal.signal(ending, note)
        except ValueError:  # not the main thread: nothing to defer with
            pass
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        for signum in arrived:
            signal.raise_signal(signum)
