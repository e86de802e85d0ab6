"""Hand-built Kineto events and traces for tests: one place that knows their shape.

Times are in microseconds, as Kineto writes them.  ``ext`` and ``correlation`` become
the ``"External id"`` and ``"correlation"`` args that link an op, its runtime call and
its kernel; any other keyword becomes an arg as given (``**{"Input Dims": [...]}``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def event(
    name: str,
    cat: str,
    ts: float,
    dur: float,
    *,
    pid: int | str = 1,
    tid: int | str = 1,
    ext: int | None = None,
    correlation: int | None = None,
    **args: Any,
) -> dict[str, Any]:
    """A complete ("X") event."""
    if ext is not None:
        args["External id"] = ext
    if correlation is not None:
        args["correlation"] = correlation
    out: dict[str, Any] = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if args:
        out["args"] = args
    return out


def op(name: str, ts: float, dur: float, **kw: Any) -> dict[str, Any]:
    """An operator (``cpu_op``) on the host thread."""
    return event(name, "cpu_op", ts, dur, **kw)


def annotation(name: str, ts: float, dur: float, **kw: Any) -> dict[str, Any]:
    """A ``record_function`` range (``ProfilerStep#N`` is one)."""
    return event(name, "user_annotation", ts, dur, **kw)


def runtime(name: str, ts: float, dur: float, *, correlation: int, **kw: Any) -> dict[str, Any]:
    """A CUDA runtime call (a launch, a synchronisation)."""
    return event(name, "cuda_runtime", ts, dur, correlation=correlation, **kw)


def kernel(
    name: str, ts: float, dur: float, *, correlation: int | None = None, stream: int = 7, **kw: Any
) -> dict[str, Any]:
    """A kernel on a GPU stream (pid 0, the stream as tid)."""
    kw.setdefault("pid", 0)
    kw.setdefault("device", 0)
    return event(name, "kernel", ts, dur, tid=stream, correlation=correlation, stream=stream, **kw)


def launch(ts: float, dur: float, *, correlation: int, ext: int | None = None, tid: int = 1) -> dict[str, Any]:
    return runtime("cudaLaunchKernel", ts, dur, correlation=correlation, ext=ext, tid=tid)


def trace_text(events: list[dict[str, Any]], **header: Any) -> str:
    """A Kineto trace document: the header keys, then ``traceEvents``."""
    return json.dumps({"schemaVersion": 1, **header, "traceEvents": events})


def write_trace(path: Path, events: list[dict[str, Any]], **header: Any) -> Path:
    path.write_text(trace_text(events, **header))
    return path
