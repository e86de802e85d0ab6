"""The ``trnscope`` command line: argument parsing and the text/CSV/JSON presenters.

``run`` (the console script) parses the arguments first, then starts decompressing the
one gzip trace a command reads (``inflate_ahead``), and only then loads NumPy and
``trnscope.cli.main``; embedders call ``trnscope.cli.main.main``."""

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
    from trnscope.cli.arguments import parse_command_line, the_one_trace

    args = parse_command_line(sys.argv[1:])
    trace = the_one_trace(args) if args.command else None
    if trace is not None:
        from pathlib import Path

        from trnscope.core.formats import inflate_ahead

        # the child decompresses while this process imports (~0.15 s of one core)
        inflate_ahead.start(Path(trace), keep=not args.no_cache)
    load_numpy_with_one_blas_thread(sys.argv[1:])
    from trnscope.cli.main import run as run_command

    run_command(args)
