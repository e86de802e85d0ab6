"""The one way every command opens what the user typed (``--select``, ``--merge``,
``--skip``, ``--workers``, ``--no-cache``, ``--export`` mean the same everywhere)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import msgspec

from trnscope.core.analysis.analysis import Analysis
from trnscope.core.formats.source import Progress
from trnscope.core.opening.sources import Mode, OpenOptions, SourcePlan, open_source, plan_sources


class Opened(msgspec.Struct):
    analyses: list[Analysis]
    plan: SourcePlan

    @property
    def labels(self) -> list[str]:
        return self.plan.labels

    @property
    def notes(self) -> list[str]:
        return self.plan.notes

    def finish(self) -> None:
        """Deferred work (the index cache), once the output is written."""
        for analysis in self.analyses:
            analysis.finish()


def options_from(args: argparse.Namespace) -> OpenOptions:
    return OpenOptions(
        select=getattr(args, "select", None),
        skip=tuple(getattr(args, "skip", ()) or ()),
        use_cache=not getattr(args, "no_cache", False),
        workers=getattr(args, "workers", None),
        export=getattr(args, "export", False),
    )


def _progress_printer() -> Progress | None:
    if not sys.stderr.isatty():
        return None
    last = [-1]

    def show(phase: str, done: int, total: int, events: int = 0) -> None:
        percent = int(100 * done / total) if total else 0
        if percent != last[0]:
            last[0] = percent
            sys.stderr.write(f"\r{phase} {percent:3d}%" + (f" {events:,} events" if events else ""))
            sys.stderr.flush()

    return show


def open_sources(args: argparse.Namespace, paths: Sequence[str], mode: Mode) -> Opened:
    options = options_from(args)
    plan = plan_sources(paths, mode, options.select)
    analyses = []
    for source in plan.sources:
        progress = _progress_printer()
        analyses.append(open_source(source, options, progress=progress, echo_export=sys.stderr.isatty()))
        if progress is not None:
            sys.stderr.write("\r\033[K")
    return Opened(analyses, plan)
