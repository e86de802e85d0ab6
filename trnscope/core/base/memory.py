"""Process-wide memory settings for the command line.

Opening a trace allocates and fills a few hundred arrays of millions of rows, most of
them short-lived.  NumPy asks the kernel for transparent huge pages for every array
of 4 MiB or more; in a virtual machine each new huge page is typically fresh memory
the hypervisor must back and the guest must clear 2 MiB at a time, while small pages
come from memory the process (or the machine) has just freed.  Measured on the 2-core
benchmark VM (bench/README.md): the first open of the 852 MB trace takes 3.5 s with
small pages and 4.1 s with huge pages; nesting alone goes from 0.65 s to 0.35 s.

Only the CLI and TUI entry points call this: a library import does not change NumPy's
settings for its host program."""

from __future__ import annotations

from typing import Any

import numpy as np


def _numpy_hook(name: str) -> Any:
    return getattr(getattr(getattr(np, "_core", None), "multiarray", None), name, None)


def prefer_small_pages() -> None:
    """Stop NumPy from advising huge pages for new arrays (where it can be told)."""
    setter = _numpy_hook("_set_madvise_hugepage")
    if setter is not None:
        setter(False)


def small_pages_preferred() -> bool:
    """Whether ``prefer_small_pages`` is in effect (passed on to worker processes,
    which a fork server starts without this process's NumPy settings)."""
    getter = _numpy_hook("_get_madvise_hugepage")
    return getter is not None and not getter()
