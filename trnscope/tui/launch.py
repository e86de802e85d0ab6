"""``trnscope open`` and ``trnscope serve``."""

from __future__ import annotations

import argparse
import shlex
import sys

from trnscope.core.base.errors import TrnscopeError


def run_open(args: argparse.Namespace) -> int:
    if len(args.paths) > 3:
        raise TrnscopeError("open at most three profiles at once (several = compare)")
    check_inputs(args.paths, getattr(args, "select", None))
    from trnscope.core.formats.kineto.parallel import start_worker_server
    from trnscope.tui.app import TrnscopeApp

    start_worker_server()
    app = TrnscopeApp(
        list(args.paths),
        select=args.select,
        skip=tuple(args.skip),
        use_cache=not args.no_cache,
        theme=args.theme,
        workers=args.workers,
        export=args.export,
        warmup=max(0, int(getattr(args, "warmup", 0) or 0)),
    )
    app.run()
    if app.return_code:
        return app.return_code
    return 0


def check_inputs(paths: list[str], select: str | None) -> None:
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
