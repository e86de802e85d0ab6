"""The first trace's load, started before the explorer's UI libraries are imported.

Importing Textual and the screens takes about 0.2 s of one core, and the explorer used
to start loading only once its first screen was mounted after it.  ``trnscope open
TRACE`` now starts the load first, in a thread, and imports the UI while it runs: the
thread inflates and cuts the file, and the decode worker processes claim the ranges
this process leaves them while it imports (``core.base.elsewhere``).  Those workers are
forked before the thread starts (``parallel.fork_helpers_ahead``); a plan of one trace
file loads nothing else, so the explorer then starts no fork server, whose start-up
took CPU the UI's import needed.  The app picks
the load up when it mounts, from then on showing its progress; Esc cancels it as
before.

Only a single trace file starts early; folders, sessions, Neuron profiles and several
paths take the app's own path, which decides first what they are.  Nothing here imports
Textual.
"""

from __future__ import annotations

import threading
from pathlib import Path

from trnscope.core.analysis.analysis import Analysis
from trnscope.core.formats import SourceRef
from trnscope.core.formats.kineto.parallel import close_helpers_ahead
from trnscope.core.formats.source import Progress
from trnscope.core.opening.sources import OpenOptions, SourcePlan, fork_helpers_for, open_source


class EarlyLoad:
    """One source opened in a background thread, with its first op table built; its
    progress is kept until someone asks to see it."""

    def __init__(self, source: SourceRef, options: OpenOptions) -> None:
        self.source = source
        self.cancel = threading.Event()
        self._lock = threading.Lock()
        self._report: Progress | None = None
        self._latest: tuple[object, ...] | None = None
        self._analysis: Analysis | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(options,), name="trnscope-early-load", daemon=True)
        self._thread.start()

    def _progress(self, *update: object) -> None:
        with self._lock:
            report = self._report
            if report is None:
                self._latest = update
                return
        report(*update)

    def _run(self, options: OpenOptions) -> None:
        try:
            analysis = open_source(self.source, options, progress=self._progress, cancelled=self.cancel.is_set)
            analysis.op_table()  # the first table, as the app's own load builds it
            self._analysis = analysis
        except BaseException as error:  # re-raised in the thread that waits for the result
            self._error = error
        finally:
            close_helpers_ahead()  # forked for this load's decode (its decode took them, or none ran)

    def result(self, report: Progress) -> Analysis:
        """Wait for the analysis; progress goes to ``report`` from now on (starting with
        the latest update so far).  Raises what the load raised."""
        with self._lock:
            self._report = report
            latest = self._latest
        if latest is not None:
            report(*latest)
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._analysis is not None
        return self._analysis


def early_source(plan: SourcePlan) -> SourceRef | None:
    """What loads early: the source of a plan that is one trace file, else None.  Such
    a plan loads nothing else later (the explorer's pickers list the plan's traces)."""
    if len(plan.refs) != 1 or plan.refs[0].kind != "trace" or len(plan.sources) != 1:
        return None
    source = plan.sources[0]
    if source.kind != "kineto" or not Path(source.path).is_file():
        return None
    return source


def start_early_load(plan: SourcePlan, options: OpenOptions) -> EarlyLoad | None:
    """An early load for a plan that is one trace file, else None.  Call it while this
    process runs no other thread: its decode's worker processes are forked first when
    it will decode in parallel (``fork_helpers_for``)."""
    source = early_source(plan)
    if source is None:
        return None
    fork_helpers_for(source, options)
    return EarlyLoad(source, options)
