"""The ``trnscope`` command.

Imports are deferred to each subcommand so ``--help`` and ``summary`` never pay for
Textual (or torch).  Every error a user can cause ends as one line on stderr and exit
status 2; no traceback reaches the terminal unless ``TRNSCOPE_DEBUG=1``.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import gc
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trnscope.cli.arguments import PROG, build_parser, parse_command_line
from trnscope.core.base import settings
from trnscope.core.base.errors import Terminated, TrnscopeError
from trnscope.core.base.text import safe_text

if TYPE_CHECKING:
    from trnscope.core.analysis.contracts import SummaryOut
    from trnscope.core.analysis.summary import SummaryFigures


def _extras_asked(args: argparse.Namespace) -> set[str]:
    """``--with`` (comma-separated, repeatable) plus what ``--sort`` needs."""
    from trnscope.core.analysis.columns import COLUMNS_BY_KEY, EXTRAS

    asked = {item.strip() for value in args.extras for item in value.split(",") if item.strip()}
    if "all" in asked:
        asked = (asked - {"all"}) | set(EXTRAS.values())
    unknown = asked - set(EXTRAS.values())
    if unknown:
        raise TrnscopeError(f"--with: unknown {sorted(unknown)[0]!r}; choose from {', '.join(EXTRAS.values())}, all")
    column = COLUMNS_BY_KEY.get(args.sort or "")
    if column is not None and column.extra:
        asked.add(column.extra)
    return asked


def cmd_summary(args: argparse.Namespace) -> int:  # noqa: C901 - argument checks and the three output formats of one command
    from trnscope.cli.render_summary import extras_that_fit, render_csv, render_json, render_table
    from trnscope.cli.sources import open_sources
    from trnscope.cli.width import output_width
    from trnscope.core.analysis.ordering import check_sort_key
    from trnscope.core.analysis.summary import summary_document, summary_figures
    from trnscope.core.opening.sources import Mode

    if args.sort is not None:
        try:
            check_sort_key(args.sort)
        except ValueError as error:
            raise TrnscopeError(str(error)) from None
    asked = _extras_asked(args)
    limit = args.limit if args.limit is not None else (30 if args.format == "table" else 0)
    if limit < 0:
        raise TrnscopeError("--limit must be 0 (no limit) or more")
    if args.stack_depth < 1:
        raise TrnscopeError(f"--stack-depth must be 1 or more (it was {args.stack_depth})")
    if args.step < -1:
        raise TrnscopeError(f"--step must be a step number, 0 or more (it was {args.step})")
    hide = tuple(h for item in args.hide for h in item.split(",") if h)
    width = output_width()
    opened = None if args.merge else open_sources(args, [args.path], Mode.ONE)

    def summary_with(extras: set[str]) -> SummaryOut:
        if opened is None:
            figures = merged_figures(args, extras)
        else:
            analysis = opened.analyses[0]
            figures = summary_figures(
                analysis,
                group_by=args.group_by,
                stack_depth=args.stack_depth,
                step=analysis.step_index(args.step) if args.step >= 0 else -1,
                extras=frozenset(extras),
                extra_warnings=opened.notes,
            )
        return summary_document(figures, sort=args.sort, limit=limit, hide=hide, match=args.match or "")

    try:
        summary = summary_with(asked)
        if args.format == "table" and args.table != "kernels":
            # memory and FLOPs cost a read of every record: only for the columns this width shows
            more = extras_that_fit(summary, width)
            if more:
                summary = summary_with(asked | more)
    except (ValueError, IndexError) as error:
        raise TrnscopeError(str(error)) from None
    if args.format == "json":
        sys.stdout.write(render_json(summary) + "\n")
    elif args.format == "csv":
        sys.stdout.write(
            render_csv(summary, "kernels" if args.table == "kernels" else "ops", terminal=sys.stdout.isatty())
        )
        for warning in summary.warnings:
            sys.stderr.write(f"warning: {safe_text(warning)}\n")
    else:
        sys.stdout.write(render_table(summary, width=width, which=args.table))
    sys.stdout.flush()
    if opened is not None:
        opened.finish()
    return 0


def merged_figures(args: argparse.Namespace, extras: set[str]) -> SummaryFigures:
    """``summary --merge``: every trace's exact figures, read by the same map-reduce as
    ``ranks`` (a local process pool, or Dask), added up exactly in this process."""
    from trnscope.cli.sources import clear_progress_line, export_printer
    from trnscope.core.analysis.summary import merge_summary_figures
    from trnscope.core.formats.neuron.export import ensure_export
    from trnscope.core.formats.options import LoadOptions
    from trnscope.core.opening.executors import ExecutorChoice
    from trnscope.core.opening.ranks import SummaryRequest, map_ranks, rank_jobs
    from trnscope.core.opening.sources import Mode, plan_sources

    plan = plan_sources([args.path], Mode.ALL, args.select)
    if args.export:
        for source in plan.sources:
            if source.kind == "neuron":
                try:
                    ensure_export(Path(source.path), progress=export_printer())
                finally:
                    clear_progress_line()
    request = SummaryRequest(args.group_by, args.stack_depth, args.step, frozenset(extras))
    load = LoadOptions(
        skip=tuple(args.skip), use_cache=not args.no_cache, warmup=max(0, args.warmup), op_tree=args.op_tree
    )
    results = map_ranks(rank_jobs(plan.sources, load, request), ExecutorChoice(workers=args.workers))
    failed = [r for r in results if r.error]
    if failed:  # a sum with a trace missing would look complete: refuse it
        raise TrnscopeError(f"{failed[0].source.label}: {failed[0].error}")
    parts = [r.table for r in results if r.table is not None]
    figures = merge_summary_figures(parts, args.path) if len(parts) > 1 else parts[0]
    figures.warnings[:0] = plan.notes
    return figures


def cmd_cache(args: argparse.Namespace) -> int:
    from trnscope.core.base.cachedir import cache_size, clear_cache
    from trnscope.core.base.settings import cache_root, max_cache_bytes

    root = safe_text(cache_root())
    if args.action == "clear":
        freed = clear_cache()
        print(f"cleared trnscope's entries in {root} ({freed / 1e6:.1f} MB)")
    else:
        entries, size = cache_size()
        cap = max_cache_bytes()
        print(
            f"{root}: {entries} entries, {size / 1e6:.1f} MB of a {cap / 1e6:.0f} MB cap "
            "(least recently used evicted first; TRNSCOPE_CACHE_MAX_BYTES sets the cap, 0 turns caching off)"
        )
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "summary": cmd_summary,
    "cache": cmd_cache,
}


def _cmd_open(args: argparse.Namespace) -> int:
    from trnscope.tui.launch import run_open

    return run_open(args)


def _cmd_serve(args: argparse.Namespace) -> int:
    from trnscope.tui.launch import run_serve

    return run_serve(args)


def _cmd_chain(args: argparse.Namespace) -> int:
    from trnscope.cli.chain import cmd_chain

    return cmd_chain(args)


def _cmd_diagnose(args: argparse.Namespace) -> int:
    from trnscope.cli.diagnose import cmd_diagnose

    return cmd_diagnose(args)


def _cmd_timeline(args: argparse.Namespace) -> int:
    from trnscope.cli.timeline import cmd_timeline

    return cmd_timeline(args)


def _cmd_compare(args: argparse.Namespace) -> int:
    from trnscope.cli.compare import cmd_compare

    return cmd_compare(args)


def _cmd_ranks(args: argparse.Namespace) -> int:
    from trnscope.cli.ranks import cmd_ranks

    return cmd_ranks(args)


def _cmd_capture(args: argparse.Namespace) -> int:
    from trnscope.capture.cli import cmd_capture
    from trnscope.cli.capture_usage import CAPTURE_USAGE

    return cmd_capture(args, CAPTURE_USAGE)


def _cmd_neuron_export(args: argparse.Namespace) -> int:
    from trnscope.cli.neuron_export import cmd_export

    return cmd_export(args)


# Each handler imports its module when it runs, so `--help` and `summary` never pay
# for Textual (or torch); the imports are plain, so checkers see them.
COMMANDS.update(
    {
        "open": _cmd_open,
        "serve": _cmd_serve,
        "chain": _cmd_chain,
        "diagnose": _cmd_diagnose,
        "timeline": _cmd_timeline,
        "compare": _cmd_compare,
        "ranks": _cmd_ranks,
        "capture": _cmd_capture,
        "neuron-export": _cmd_neuron_export,
    }
)


# Commands that run the user's own code in this process (``capture`` runs a training
# script through runpy): its memory stays as Python set it up, not tuned for trnscope's
# arrays (one malloc heap for every thread would make a multi-threaded data loader wait).
RUNS_USER_CODE = frozenset({"capture"})


def _tune_memory_for(command: str) -> None:
    if command not in RUNS_USER_CODE:
        from trnscope.core.base.memory import configure_memory

        configure_memory()


def run(parsed: argparse.Namespace | None = None) -> None:
    """The ``trnscope`` console script: ``main`` (of the arguments ``parsed`` already, if
    given), then exit with its status; signals are ignored from then on, so exit handlers
    (removing private copies) are not cut short by a second Ctrl+C into a traceback."""
    code = main(parsed=parsed)
    _quiet_signals()
    _exit_without_teardown(code)


def _exit_without_teardown(code: int) -> None:
    """Flush the output, run the exit handlers (private copies removed, worker pools
    stopped), then end the process without the interpreter's teardown: freeing a
    loaded trace and every module object by object costs 30-45 ms on a 60 MB trace
    (xDiT), a tenth of its whole open, for memory the kernel reclaims at once anyway.
    The normal exit when another thread still runs (its work must not be cut short),
    when torch was loaded (``capture``: native runtimes such as Neuron's finish their
    profiles in C exit handlers, which only a normal exit runs) or when the
    exit-handler runner is missing."""
    run_exit_handlers = getattr(atexit, "_run_exitfuncs", None)
    if threading.active_count() > 1 or "torch" in sys.modules or run_exit_handlers is None:
        # the objects frozen after the start-up imports (``gcpause``) are freed in the
        # teardown as if they had never been: cycles among them would otherwise outlive it
        gc.unfreeze()
        sys.exit(code)
    for stream in (sys.stdout, sys.stderr):
        # a reader that left (`| head`) is not an error, as in `_main`
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    run_exit_handlers()
    _flush_c_streams()
    os._exit(code)


def _flush_c_streams() -> None:
    """What C code wrote to stdout waits in the C library's own buffer when stdout is a
    pipe or a file, and only a normal exit flushes it."""
    try:
        import ctypes

        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError, TypeError):  # no C library to call here: nothing buffered
        pass


def main(argv: Sequence[str] | None = None, *, parsed: argparse.Namespace | None = None) -> int:
    """Run one command (``argv``, or arguments already ``parsed``); whatever happens, the
    user sees at most one line of error.  (The signal handlers it sets are put back when
    it returns: it may be embedded.)"""
    previous = _signal_handlers()
    try:
        return _main(argv, parsed)
    except SystemExit:
        raise
    except BaseException as error:  # raised while another error was reported or cleaned up
        _quiet_signals()
        if settings.debug():
            raise
        with contextlib.suppress(BaseException):
            sys.stderr.write(f"{PROG}: {_last_words(error)}\n")
        return _exit_code_of(error)
    finally:
        for number, handler in previous.items():
            with contextlib.suppress(ValueError, OSError, TypeError):
                signal.signal(number, handler)


# SIGTERM, and SIGHUP where there is one (the terminal went away): the command ends
# through its cleanup, as on Ctrl+C
_ENDING_SIGNALS = (signal.SIGTERM, *([signal.SIGHUP] if hasattr(signal, "SIGHUP") else []))


def _signal_handlers() -> dict[int, Any]:
    return {number: signal.getsignal(number) for number in (signal.SIGINT, *_ENDING_SIGNALS)}


def _quiet_signals() -> None:
    """While the one line of error is written, no signal cuts it short."""
    with contextlib.suppress(ValueError, OSError):  # not the main thread (embedded use)
        for number in (signal.SIGINT, *_ENDING_SIGNALS):
            signal.signal(number, signal.SIG_IGN)


def _last_words(error: BaseException) -> str:
    if isinstance(error, KeyboardInterrupt):
        return "interrupted"
    if isinstance(error, Terminated):
        return error.reason
    if isinstance(error, MemoryError):
        return "error: out of memory (try --skip python, or a machine with more RAM)"
    return f"internal error: {type(error).__name__} (set TRNSCOPE_DEBUG=1 for a traceback)"


def _exit_code_of(error: BaseException) -> int:
    if isinstance(error, KeyboardInterrupt):
        return 130
    if isinstance(error, Terminated):
        return error.exit_code
    return 2 if isinstance(error, MemoryError) else 1


def _main(argv: Sequence[str] | None, parsed: argparse.Namespace | None) -> int:
    args = parsed if parsed is not None else parse_command_line(sys.argv[1:] if argv is None else argv)
    if not args.command:
        build_parser().print_help()
        return 2
    debug = settings.debug()
    end_through_cleanup_on_signals()
    try:
        _tune_memory_for(args.command)
        handler = COMMANDS[args.command]
        return handler(args)
    except TrnscopeError as error:
        _quiet_signals()
        sys.stderr.write(f"{PROG}: error: {safe_text(error)}\n")
        return error.exit_code
    except KeyboardInterrupt:
        _quiet_signals()
        sys.stderr.write(f"{PROG}: interrupted\n")
        return 130
    except Terminated as ended:
        _quiet_signals()
        with contextlib.suppress(OSError):  # after a hangup the terminal may be gone
            sys.stderr.write(f"{PROG}: {ended.reason}\n")
        return ended.exit_code
    except BrokenPipeError:
        # e.g. `trnscope summary ... | head`
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - stdout for the rest of the process
        return 0
    except OSError as error:  # any file-system error (EACCES, EIO, ENAMETOOLONG, …) is the user's to see
        sys.stderr.write(f"{PROG}: error: {safe_text(describe_os_error(error))}\n")
        return 2
    except MemoryError:
        _quiet_signals()
        sys.stderr.write(f"{PROG}: error: out of memory (try --skip python, or a machine with more RAM)\n")
        return 2
    except Exception as error:  # the last line of defence: users never see a traceback
        if debug:
            raise
        sys.stderr.write(
            f"{PROG}: internal error: {type(error).__name__}: {safe_text(error)} (set TRNSCOPE_DEBUG=1 for a traceback)\n"
        )
        return 1


# After SIGTERM, cleanup that takes longer than this is cut short: the exception that
# stops the command can land while an interrupted call holds a lock that the cleanup
# (stopping decode workers) then waits for, and a terminated command must end.
CLEANUP_SECONDS = 10


_HANDLER_PID = -1  # the process that installed ``_terminated``


def end_through_cleanup_on_signals() -> None:
    """SIGTERM and SIGHUP end the command through the same cleanup as Ctrl+C (workers
    stopped, shared memory, private copies and half-written folders removed) instead of
    dying on the spot; a SIGHUP ignored on purpose (``nohup``) stays ignored."""
    global _HANDLER_PID
    _HANDLER_PID = os.getpid()
    with contextlib.suppress(ValueError):  # not the main thread (embedded use)
        for number in _ENDING_SIGNALS:
            if number == signal.SIGTERM or signal.getsignal(number) is not signal.SIG_IGN:
                signal.signal(number, _terminated)


def _terminated(signum: int, frame: object) -> None:
    if os.getpid() != _HANDLER_PID:
        # a decode worker forked a moment ago, stopped before its initializer put the
        # default handler back: end as the default would, without a traceback
        os._exit(128 + signum)
    _end_within(CLEANUP_SECONDS, signum)
    raise Terminated(signum)


def _end_within(seconds: int, ending: int = signal.SIGTERM) -> None:
    """Exit with status 128 + ``ending`` (143 for SIGTERM) in ``seconds`` whatever the
    cleanup is doing (decode workers die with this process; their results live in memory
    files the kernel frees)."""

    def hard_exit(signum: int, frame: object) -> None:
        with contextlib.suppress(OSError):
            os.write(2, f"{PROG}: terminated (cleanup cut short after {seconds}s)\n".encode())
        os._exit(128 + ending)

    with contextlib.suppress(ValueError, OSError):  # not the main thread (embedded use)
        signal.signal(signal.SIGALRM, hard_exit)
        signal.alarm(seconds)


def describe_os_error(error: OSError) -> str:
    """``strerror: path`` without the errno noise, for one-line errors."""
    reason = error.strerror or type(error).__name__
    if error.filename is not None:
        return f"{reason}: {os.fsdecode(error.filename)}"
    return reason


if __name__ == "__main__":  # pragma: no cover
    run()
