"""``trnscope open`` and ``trnscope serve``."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shlex
import signal
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from trnscope.core.base.errors import TrnscopeError

if TYPE_CHECKING:
    from trnscope.core.opening.sources import SourcePlan


def run_open(args: argparse.Namespace) -> int:
    plan = checked_plan(args)  # a bad path or --select first: the real reason
    check_terminal()
    app = explorer_app(args, plan)
    with loads_stop_on_signals(app) as ending:
        app.run()
    if ending:  # the app closed for a signal: end the command as that signal does
        raise ending[0]
    if app.return_code:
        return app.return_code
    return 0


def check_terminal() -> None:
    """One line instead of an explorer nobody can see or steer.  Textual's terminal
    driver reads keys from stdin and draws on stderr (stdout on Windows): without a
    terminal on stdin (``ssh host trnscope open …`` without ``-t``, a script) it waited
    for keys forever, and with stderr redirected (``2> log``) it drew into the file while
    the terminal stayed blank.  A driver named in ``TEXTUAL_DRIVER`` (``serve``'s web
    driver) brings its own input and output."""
    if os.environ.get("TEXTUAL_DRIVER"):
        return
    text_instead = "for text use trnscope summary, diagnose or timeline; for a browser, trnscope serve"
    if not _is_terminal(sys.__stdin__):
        raise TrnscopeError(
            f"open needs a terminal to read keys from, and stdin is not one (over ssh: ssh -t); {text_instead}"
        )
    drawn_on, name = (sys.__stdout__, "stdout") if sys.platform == "win32" else (sys.__stderr__, "stderr")
    if not _is_terminal(drawn_on):
        raise TrnscopeError(
            f"open draws on {name}, which is not a terminal (redirected?): run it without redirecting {name}; {text_instead}"
        )


def _is_terminal(stream: Any) -> bool:
    try:
        return stream is not None and bool(stream.isatty())
    except (OSError, ValueError):  # closed
        return False


@contextlib.contextmanager
def loads_stop_on_signals(app: Any) -> Iterator[list[BaseException]]:
    """Ctrl+C, SIGTERM or SIGHUP while the app runs cancels a load in progress first,
    then does what it did before (raise ``KeyboardInterrupt`` / ``Terminated``): on its
    way out the app waits for its workers, and a load left running held the exit for
    seconds.

    Inside the app's event loop the exception is not raised where the signal lands:
    asyncio hands anything but ``KeyboardInterrupt`` and ``SystemExit`` that a callback
    raises to its exception handler, and one that a task raises to the task, so a SIGTERM
    or SIGHUP during the load's last steps or the first screen's mount was lost (the app
    ran on until the cleanup's 10 s limit cut it short, leaving the private copy behind)
    or ended the app with status 0.  There the app is asked to close instead, and the
    exception goes into the list this yields, for the caller to raise once ``run``
    returns."""
    previous: dict[int, Any] = {}
    ending: list[BaseException] = []

    def stop_loading(signum: int, frame: Any) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # before the app's loop started or after it ended
            app.cancel_load()
            previous[signum](signum, frame)
            return
        try:
            previous[signum](signum, frame)  # (the command's handler also starts its time limit)
        except BaseException as raised:
            if not ending:
                ending.append(raised)
                app.close_for_signal()

    with contextlib.suppress(ValueError):  # not the main thread (embedded use): as before
        for signum in (signal.SIGINT, signal.SIGTERM, *([signal.SIGHUP] if hasattr(signal, "SIGHUP") else [])):
            handler = signal.getsignal(signum)
            if callable(handler):
                previous[signum] = handler
                signal.signal(signum, stop_loading)
    try:
        yield ending
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        app.cancel_load()


def checked_plan(args: argparse.Namespace) -> SourcePlan:
    """What ``open``'s arguments name, checked (``check_inputs``)."""
    if len(args.paths) > 3:
        raise TrnscopeError("open at most three profiles at once (several = compare)")
    return check_inputs(args.paths, getattr(args, "select", None))


def explorer_app(args: argparse.Namespace, plan: SourcePlan | None = None) -> Any:
    """The explorer for ``trnscope open``'s arguments (``plan``: ``checked_plan`` of
    them, if already made), its first trace already loading (``trnscope.tui.early_load``)
    while the UI's libraries are imported."""
    plan = plan or checked_plan(args)
    from trnscope.core.base.elsewhere import busy_elsewhere
    from trnscope.core.base.gcpause import collector_paused
    from trnscope.core.formats.kineto.parallel import start_worker_server
    from trnscope.core.opening.sources import OpenOptions
    from trnscope.tui.early_load import start_early_load

    settings = dict(
        select=args.select,
        skip=tuple(args.skip),
        use_cache=not args.no_cache,
        workers=args.workers,
        export=args.export,
        warmup=max(0, int(getattr(args, "warmup", 0) or 0)),
        op_tree=getattr(args, "op_tree", "auto") or "auto",
    )
    # the decode workers take this process's ranges meanwhile; no collection runs
    # inside Textual's import (it ran a full one of ~34 ms there)
    with busy_elsewhere(), collector_paused():
        # forks its decode's workers first, while no thread runs here
        early = start_early_load(plan, OpenOptions(**settings)) if len(args.paths) == 1 else None
        if early is None:  # folders, sessions, several traces: their loads' workers come from it
            start_worker_server()
        try:
            from trnscope.tui.app import TrnscopeApp  # ~0.2 s of imports, while the trace loads
        except BaseException:  # Ctrl+C during the import: the load stops too
            if early is not None:
                early.cancel.set()
            raise

    return TrnscopeApp(list(args.paths), theme=args.theme, early=early, **settings)


def check_inputs(paths: list[str], select: str | None) -> SourcePlan:
    """What the UI would fail on, said as one line before the UI takes the terminal:
    missing paths, a --select that names nothing, a file that is not a trace."""
    from pathlib import Path

    from trnscope.core.formats.sniff import looks_like_kineto
    from trnscope.core.opening.sources import Mode, plan_sources

    plan = plan_sources(paths, Mode.VARIANTS if len(paths) > 1 else Mode.ONE, select)
    for source in plan.sources:
        path = Path(source.path)
        if source.kind == "kineto" and path.is_file() and not looks_like_kineto(path):
            raise TrnscopeError(f"{path}: not a PyTorch profiler trace (no traceEvents array)")
    return plan


def run_serve(args: argparse.Namespace) -> int:
    try:
        import textual_serve.server  # noqa: F401 - present, or one clear line
    except ImportError:
        raise TrnscopeError("serve needs textual-serve: pip install 'trnscope[serve]'") from None
    from trnscope.core.opening.sources import Mode, plan_sources
    from trnscope.tui.serve import serve

    # the paths are checked here, so a browser never gets a page for nothing
    plan_sources(args.paths, Mode.VARIANTS if len(args.paths) > 1 else Mode.ONE, getattr(args, "select", None))
    command = " ".join([shlex.quote(sys.executable), "-m", "trnscope", "open", *map(shlex.quote, args.paths)])
    serve(command, host=args.host, port=args.port)
    return 0
