"""The one way every command opens what the user typed (``--select``, ``--merge``,
``--skip``, ``--workers``, ``--no-cache``, ``--export`` mean the same everywhere)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

import msgspec

from trnscope.core.analysis.analysis import Analysis
from trnscope.core.base.errors import TrnscopeError
from trnscope.core.formats.source import Progress
from trnscope.core.opening.sources import Mode, OpenOptions, SourcePlan, open_source, plan_sources

if TYPE_CHECKING:  # (the export module is only loaded for raw Neuron captures)
    from trnscope.core.formats.neuron.export import ExportProgress


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
        warmup=_warmup(args),
        op_tree=getattr(args, "op_tree", "auto") or "auto",
    )


def _warmup(args: argparse.Namespace) -> int:
    value = int(getattr(args, "warmup", 0) or 0)
    if value < 0:
        raise TrnscopeError("--warmup must be 0 or more")
    return value


def _progress_printer() -> Progress | None:
    """Load progress redrawn in place on a terminal; None for a file or pipe (which
    must get no carriage returns or escape sequences)."""
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


def export_printer() -> ExportProgress | None:
    """neuron-explorer's progress on a terminal (None for a file or pipe)."""
    if not sys.stderr.isatty():
        return None

    def show(seconds: float, written: int) -> None:
        sys.stderr.write(f"\rneuron-explorer: {seconds:5.1f}s, {written / 1e6:.1f} MB written")
        sys.stderr.flush()

    return show


def clear_progress_line() -> None:
    if sys.stderr.isatty():
        sys.stderr.write("\r\033[K")


def open_sources(args: argparse.Namespace, paths: Sequence[str], mode: Mode) -> Opened:
    options = options_from(args)
    plan = plan_sources(paths, mode, options.select)
    analyses = []
    for source in plan.sources:
        try:
            analyses.append(
                open_source(source, options, progress=_progress_printer(), export_progress=export_printer())
            )
        finally:
            clear_progress_line()
    return Opened(analyses, plan)
