"""Bench helper, put on PYTHONPATH by ``bench/phases.py``: times the steps of one
``trnscope summary`` run from inside it, without changing what it imports or when.

A finder placed first on ``sys.meta_path`` lets each of the modules below load as it
would, then wraps the named functions in it (before any other module binds them with
``from … import``).  Each call's start and end (``time.perf_counter``: the system's
monotonic clock, which the bench reads too, so the times line up with the process's own
start) go, at exit, as JSON to the file ``TRNSCOPE_BENCH_PHASES_FILE`` names.  A forked
decode worker writes nothing."""

import atexit
import functools
import json
import os
import sys
import time

_STARTED_IN = os.getpid()
_CALLS = []

# module → functions ("Class.method" for a method) whose calls are timed
_TIMED = {
    "trnscope.core.opening.open": ("open_analysis",),
    "trnscope.core.formats.inflate_ahead": ("_Child.wait",),
    "trnscope.core.formats.kineto.parallel": ("decode_in_parallel",),
    "trnscope.core.formats.kineto.decode": ("decode_sequentially",),
    "trnscope.core.formats.kineto.merge": ("merge_ranges",),
    "trnscope.core.link.linker": ("link",),
    "trnscope.core.analysis.optable": ("event_times", "build_op_table", "build_kernel_table"),
}


def _timed(label, function):
    @functools.wraps(function)
    def call(*args, **kwargs):
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            if os.getpid() == _STARTED_IN:
                _CALLS.append((label, started, time.perf_counter()))

    return call


def _wrap(module):
    for dotted in _TIMED[module.__name__]:
        owner_name, _, name = dotted.rpartition(".")
        owner = getattr(module, owner_name) if owner_name else module
        setattr(owner, name, _timed(dotted.rpartition(".")[2], getattr(owner, name)))


class _WrapAfterLoading:
    def find_spec(self, fullname, path=None, target=None):
        if fullname not in _TIMED:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
                run = spec.loader.exec_module

                def exec_module(module, run=run):
                    run(module)
                    _wrap(module)

                spec.loader.exec_module = exec_module
                return spec
        return None


def _write():
    target = os.environ.get("TRNSCOPE_BENCH_PHASES_FILE")
    if target and os.getpid() == _STARTED_IN:
        with open(target, "w") as out:
            json.dump({"calls": _CALLS, "exit": time.perf_counter()}, out)


if os.environ.get("TRNSCOPE_BENCH_PHASES_FILE"):
    sys.meta_path.insert(0, _WrapAfterLoading())
    atexit.register(_write)
