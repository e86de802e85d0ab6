"""The signals that end a command (Ctrl+C, SIGTERM, SIGHUP), held back for a moment.

A handler that runs at the wrong moment does harm: inside a C extension's
initialisation it can leave the extension half set up, and during a ``fork`` it runs
inside an at-fork callback (logging's ``_releaseLock``), where the exception it raises
is printed as a traceback and dropped — the command then ignores the signal and runs
to its end.  Held, a signal arrives right after the moment, to the handlers in place."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager

ENDINGS = frozenset({signal.SIGINT, signal.SIGTERM, *([signal.SIGHUP] if hasattr(signal, "SIGHUP") else [])})


@contextmanager
def endings_held() -> Iterator[None]:
    """Ctrl+C, SIGTERM and SIGHUP wait until the block is done (where the platform can
    hold signals).  A process forked inside the block starts with them held: it lets
    them through itself (``let_endings_through``) once its own handlers are set."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, ENDINGS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def let_endings_through() -> None:
    """In a process forked while they were held: receive them again."""
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, ENDINGS)
