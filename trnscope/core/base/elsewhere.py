"""This process busy elsewhere for a moment: work it would share is left to helpers.

``trnscope open TRACE`` starts loading before it imports the UI (about 0.2 s of one
core, holding the GIL).  A parallel decode shares its ranges between worker processes
and the loading process; while the import runs, the loading process's own share would
only fight the import for the GIL, so it waits, and the worker processes claim those
ranges instead.  Once the import is done the loading process claims ranges again.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_free = threading.Event()
_free.set()


# How soon a thread that holds the GIL hands it over to one that waits for it, while
# busy elsewhere.  At Python's default (5 ms) the loading thread, which gives the GIL up
# around every 1 MiB it inflates, waited that long each time for the importing one:
# gunzip of a 62 MB trace took 0.34 s instead of 0.1 s.
_SWITCH_INTERVAL_S = 0.0002


@contextmanager
def busy_elsewhere() -> Iterator[None]:
    """For the duration: parallel work waits before taking a share in this process, and
    threads take turns at the GIL quickly."""
    _free.clear()
    interval = sys.getswitchinterval()
    sys.setswitchinterval(min(interval, _SWITCH_INTERVAL_S))
    try:
        yield
    finally:
        sys.setswitchinterval(interval)
        _free.set()


def wait_until_free(cancelled: Callable[[], bool]) -> None:
    """Return once this process is not busy elsewhere (at once, usually), or cancelled."""
    while not _free.wait(0.05):
        if cancelled():
            return
