"""The ``trnscope`` command line: argument parsing and the text/CSV/JSON presenters.

``run`` (the console script) loads ``trnscope.cli.main`` when called, so that it can set
up the process before NumPy is imported; embedders call ``trnscope.cli.main.main``."""

from __future__ import annotations

import sys
from collections.abc import Sequence

__all__ = ["load_numpy_with_one_blas_thread", "run"]


def load_numpy_with_one_blas_thread(argv: Sequence[str]) -> None:
    """NumPy loaded now, under ``one_blas_thread`` (see there).  Not for ``capture``,
    which runs the user's workload in this process; nothing to do once NumPy is loaded
    (embedding, tests)."""
    if "numpy" in sys.modules or "capture" in argv:
        return
    from trnscope.core.base.blas import one_blas_thread

    with one_blas_thread():
        import numpy  # noqa: F401 - loaded now, under the limit


def run() -> None:
    """The ``trnscope`` console script."""
    load_numpy_with_one_blas_thread(sys.argv[1:])
    from trnscope.cli.main import run as run_command

    run_command()
