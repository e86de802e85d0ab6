"""One OpenBLAS thread for the processes trnscope starts NumPy in.

trnscope never multiplies matrices, but the OpenBLAS that NumPy loads starts a thread
per core at import, and they spin: ``import numpy`` took 0.17–0.23 s of CPU for
0.11–0.16 s of wall on the 2-core benchmark machine, 0.07–0.13 s with one thread.  That
CPU comes out of the imports and the decode running beside it (the TUI's fork server
imports NumPy while Textual loads).  OpenBLAS reads the variable once, when it loads,
so it is set only around that moment: programs started later inherit the user's
environment, not this limit."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

# what the user may have set to choose a thread count; then theirs stands
_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """``OPENBLAS_NUM_THREADS=1`` while the block runs (for a NumPy imported in it, or a
    process started in it), unless the user chose a thread count."""
    if any(name in os.environ for name in _THREAD_VARIABLES):
        yield
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        yield
    finally:
        os.environ.pop("OPENBLAS_NUM_THREADS", None)
