"""Process-wide memory settings for the command line.

Opening a trace allocates and fills a few hundred arrays of millions of rows, most of
them short-lived, and so does every new grouping of the op table.  In a virtual
machine, fresh memory is the dominant cost of that work: each page the process has
not touched before must be backed by the hypervisor and cleared by the guest.  Two
settings make most arrays reuse memory the process has just freed instead:

* NumPy asks the kernel for transparent huge pages for every array of 4 MiB or more,
  each a fresh 2 MiB to clear.  Measured on the 2-core benchmark VM (bench/README.md):
  the first open of the 852 MB trace takes 3.5 s with small pages and 4.1 s with huge
  pages; nesting alone goes from 0.65 s to 0.35 s.
* glibc's malloc gives each array above its (adaptive) mmap threshold a mapping of its
  own, returned to the kernel when the array is freed, so the next array of that size
  faults in fresh pages again; and it hands the top of the heap back once 128 KiB or
  more of it is free.  Arrays up to 64 MiB (8 million rows of int64) now come from the
  heap, which keeps up to 256 MiB of freed memory for the next ones.  Measured on the
  same VM, paired runs: grouping 2.9 M events by stack 175–232 ms → 137–190 ms; peak RSS
  unchanged (the same arrays are alive at the peak either way).
* Every thread shares that one heap (glibc would give threads arenas of their own, up
  to 16 on two cores, each keeping its own freed memory: the explorer's thread workers
  then held up to 1,060 MB where one heap holds 906 MB, and ran slower, each worker
  faulting in its own arena's pages).  Under the GIL, threads seldom allocate at the
  same moment, so one heap costs no waiting.  What the process keeps after its work is
  thus bounded by that 256 MiB.

Only the CLI and TUI entry points (and the decode workers they start) call this, and
not for ``trnscope capture``, which runs the user's training script in its own
process (``cli/main.RUNS_USER_CODE``): a library import, or the user's workload, keeps
NumPy's and the C library's settings as they were."""

from __future__ import annotations

import os
from typing import Any

import numpy as np


def _numpy_hook(name: str) -> Any:
    return getattr(getattr(getattr(np, "_core", None), "multiarray", None), name, None)


# mallopt parameters (glibc's malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8
HEAP_ARRAYS_UP_TO = 64 << 20
KEEP_FREED_UP_TO = 256 << 20

_configured = False


def configure_memory() -> None:
    """Both settings above, for this process (calling it again changes nothing)."""
    global _configured
    prefer_small_pages()
    keep_freed_memory()
    _configured = True


def memory_configured() -> bool:
    """Whether ``configure_memory`` ran in this process (passed on to worker
    processes, which a fork server starts without this process's settings)."""
    return _configured


def keep_freed_memory() -> bool:
    """Ask glibc to serve arrays up to ``HEAP_ARRAYS_UP_TO`` from one heap that every
    thread shares and keep up to ``KEEP_FREED_UP_TO`` of freed memory for the next ones.
    False (and nothing changed) on a C library other than glibc.  Threads started
    before the call keep the arenas they have."""
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION"):
            return False
    except (ValueError, OSError):  # no such name here: not glibc
        return False
    import ctypes  # NumPy has imported it already: no start-up cost

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    settings = ((_M_ARENA_MAX, 1), (_M_MMAP_THRESHOLD, HEAP_ARRAYS_UP_TO), (_M_TRIM_THRESHOLD, KEEP_FREED_UP_TO))
    accepted = [mallopt(parameter, value) for parameter, value in settings]  # each on its own: none skipped
    return all(accepted)


def prefer_small_pages() -> None:
    """Stop NumPy from advising huge pages for new arrays (where it can be told)."""
    setter = _numpy_hook("_set_madvise_hugepage")
    if setter is not None:
        setter(False)
