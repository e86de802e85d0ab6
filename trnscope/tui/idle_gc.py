"""Python's full garbage collections, run while the user is idle instead of inside a key.

A full collection (the oldest generation) traverses every container object the process
holds: Textual's widgets, styles and render caches, the loaded traces' Python objects.
With a trace of 2.9 M events open that took 50-175 ms each on the 2-core VM, 18 of them
in one `bench/tui_latency.py` run (1.5 s in all), and each landed inside whichever key
press happened to allocate the object that tipped Python's counters: the long tail of
every key's latency.  Here:

* the objects alive once the explorer has started (modules, classes, functions, the
  app: ~47,000, and they live until exit) are frozen (``gc.freeze``), so no collection
  traverses them again;
* Python never starts a full collection by itself while the explorer runs; one runs
  instead when one is due (as many young collections have passed as Python's own rule
  asks) and the user has pressed nothing for ``IDLE_S`` and no worker is busy, or, so
  that cyclic garbage cannot pile up under a key held down, when ``OVERDUE`` times that
  many have passed;
* the young generations collect as before, so short-lived cycles still go at once.

Everything is put back when the explorer stops (it may be embedded, or run in tests
after one another); where something else had frozen objects before, they all stay frozen
(Python cannot unfreeze only some).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

IDLE_S = 0.75  # no key or mouse event for this long: the user is reading, not typing
CHECK_EVERY_S = 0.5
NEVER = 1 << 30  # a full-collection threshold no count reaches
OVERDUE = 20  # times Python's own threshold: collect even while keys keep coming


class IdleCollector:
    """Owns the interpreter's collector settings between ``start`` and ``stop``."""

    def __init__(self, busy: Callable[[], bool], clock: Callable[[], float] = time.monotonic) -> None:
        self._busy = busy  # work in progress (a worker thread): a collection would stall it
        self._clock = clock
        self._last_input = clock()
        self._saved: tuple[int, int, int] | None = None
        self._frozen_before = 0  # objects someone else froze before ``start``
        self.collections = 0  # full collections run here (tests, the bench)

    @property
    def started(self) -> bool:
        return self._saved is not None

    def start(self) -> None:
        if self._saved is not None:
            return
        self._saved = gc.get_threshold()
        self._frozen_before = gc.get_freeze_count()
        gc.freeze()
        young, middle, _ = self._saved
        gc.set_threshold(young, middle, NEVER)

    def stop(self) -> None:
        if self._saved is None:
            return
        gc.set_threshold(*self._saved)
        if not self._frozen_before:  # an embedder's own frozen objects stay frozen (and ours with them)
            gc.unfreeze()  # back to the oldest generation: collected as Python sees fit again
        self._saved = None

    def input_seen(self) -> None:
        self._last_input = self._clock()

    def due(self) -> bool:
        """Whether to collect now (``gc.get_count()[2]``: young collections since the
        last full one, the count Python compares with its threshold)."""
        if self._saved is None:
            return False
        threshold = max(self._saved[2], 1)
        pending = gc.get_count()[2]
        if pending >= OVERDUE * threshold:
            return True
        idle = self._clock() - self._last_input >= IDLE_S
        return pending >= threshold and idle and not self._busy()

    def tick(self) -> None:
        """Called every ``CHECK_EVERY_S``."""
        if self.due():
            gc.collect()
            self.collections += 1
