"""Python's cyclic garbage collector held off while modules are imported.

Importing NumPy, msgspec and trnscope's modules creates ~100,000 objects (modules,
classes, functions, their dicts) that live until the process exits, and Python counts
every one of them towards its next collection.  Counted with ``gc.callbacks`` on the
2-core VM: ``summary`` ran ~65 collections (~15 ms) before it read its first event, and
``open`` ran 180 (79 ms, one of them a full collection of 34 ms) while it imported
Textual beside the early load; together they freed a few hundred objects.

Paused, nothing is collected while the imports run.  In trnscope's own process (the
console script, ``own_this_process``) what they created is then frozen (``gc.freeze``:
it is never garbage), so the counts Python kept meanwhile do not turn into one large
collection right after; an embedder's or a test's objects are never frozen.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

_owned = False


def own_this_process() -> None:
    """Called by the console script: every object alive here is trnscope's."""
    global _owned
    _owned = True


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic collection inside; afterwards the objects alive are frozen (in
    trnscope's own process) and the collector is on again if it was on before."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if _owned:
            gc.freeze()
        if was_enabled:
            gc.enable()
