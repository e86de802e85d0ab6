"""The ``trnscope`` command line: argument parsing and the text/CSV/JSON presenters.

``run`` (the console script) parses the arguments first, then starts decompressing the
gzip traces a command reads whole (``inflate_ahead``), and only then loads NumPy and
``trnscope.cli.main``; embedders call ``trnscope.cli.main.main``."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse

__all__ = ["decode_ahead", "load_numpy_with_one_blas_thread", "parse_and_read_ahead", "run"]


def load_numpy_with_one_blas_thread(argv: Sequence[str]) -> None:
    """NumPy loaded now, under ``one_blas_thread`` (see there).  Not for ``capture``,
    which runs the user's workload in this process; nothing to do once NumPy is loaded
    (embedding, tests)."""
    if "numpy" in sys.modules or "capture" in argv:
        return
    from trnscope.core.base.blas import one_blas_thread

    with one_blas_thread():
        import numpy  # noqa: F401 - loaded now, under the limit


def run(mask_at_start: Iterable[int] | None = None) -> None:
    """The ``trnscope`` console script, after ``trnscope.console`` has held the ending
    signals from its first line (``mask_at_start``: the process's signal mask before
    that, restored once the handlers are in place; None: nothing was held before)."""
    from trnscope.core.base.errors import Terminated
    from trnscope.core.base.gcpause import collector_paused, own_this_process

    own_this_process()
    try:
        with _interrupts_held(mask_at_start), collector_paused():
            args = parse_and_read_ahead(sys.argv[1:])
            load_numpy_with_one_blas_thread(sys.argv[1:])
            decode_ahead(args)
            from trnscope.cli.main import end_through_cleanup_on_signals
            from trnscope.cli.main import run as run_command

            end_through_cleanup_on_signals()  # before the signals held so far arrive
    except KeyboardInterrupt:  # Ctrl+C in the first tenth of a second: as later, one line
        sys.stderr.write("trnscope: interrupted\n")
        sys.exit(130)
    except Terminated as ended:  # and SIGTERM or SIGHUP: the read-ahead is stopped at exit
        with suppress(OSError):  # after a hangup the terminal may be gone
            sys.stderr.write(f"trnscope: {ended.reason}\n")
        sys.exit(ended.exit_code)
    run_command(args)


def decode_ahead(args: argparse.Namespace) -> None:
    """For a command that reads one trace file whole (not ``open``, whose explorer loads
    early in its own way), start the first load's parallel decode now, before the
    command's analysis and output modules are imported: its helpers decode on the core
    the read-ahead child has finished with while this process imports.  The load that
    follows takes it over (``loader.start_decode_ahead``); nothing is started for a
    cached reopen, a small trace, or before the read-ahead child's copy is complete."""
    from trnscope.cli.arguments import traces_read_whole

    paths = traces_read_whole(args) if args.command and args.command != "open" else []
    if len(paths) != 1:
        return
    from pathlib import Path

    from trnscope.core.formats.kineto.loader import start_decode_ahead

    start_decode_ahead(Path(paths[0]), reuse=not args.no_cache, workers=getattr(args, "workers", None))


@contextmanager
def _interrupts_held(mask_at_start: Iterable[int] | None = None) -> Iterator[None]:
    """Ctrl+C, SIGTERM and SIGHUP wait until the C extensions (msgspec, NumPy) are
    loaded and the command's handlers are in place, and arrive right after: an
    interrupt inside an extension's initialisation can leave it half set up (msgspec,
    interrupted while it loaded, crashed the process 0.15 s later), and one before the
    handlers ended the process without its cleanup (a read-ahead copy left behind)."""
    from trnscope.core.base.signals import endings_held

    with endings_held(restore=mask_at_start):
        yield


def parse_and_read_ahead(argv: Sequence[str]) -> argparse.Namespace:
    """The arguments; each gzip trace a command reads whole has a child decompress it
    from now on, while this process imports (~0.15 s of one core)."""
    from trnscope.cli.arguments import parse_command_line, traces_read_whole

    args = parse_command_line(argv)
    paths = traces_read_whole(args) if args.command else []
    if paths:
        from pathlib import Path

        from trnscope.core.formats import inflate_ahead

        for path in paths:
            inflate_ahead.start(Path(path), keep=not args.no_cache)
    return args
