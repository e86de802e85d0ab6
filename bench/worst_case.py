"""Worst-case inputs stay near-linear: N identical events on one thread (a same-name
chain N deep, which duplicate folding collapses), events far apart in time, and N ops
each nested in the one before, grouped by stack.

    python bench/worst_case.py [--events N]

Prints seconds for file → op table, in-process, no cache.  The goal (issue 11): 200,000
identical events in under 2 s on the 2-core machine.  Then one op on each of 25k / 50k /
100k threads: summary, diagnose and the text timeline (issue 23: diagnose and timeline
within a few times the summary).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from trnscope.core.analysis.analysis import Analysis
from trnscope.core.base.memory import configure_memory
from trnscope.core.formats import load_path
from trnscope.core.formats.options import NO_CACHE


def _time(path: Path) -> tuple[float, int]:
    started = time.perf_counter()
    analysis = Analysis(load_path(path, NO_CACHE))
    table = analysis.op_table()
    return time.perf_counter() - started, len(table)


def _many_threads(folder: Path, threads: int) -> Path:
    """One op on each of ``threads`` threads (and one kernel on as many streams)."""
    path = folder / f"threads_{threads}.json"
    events = []
    for k in range(threads):
        events.append({"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": k, "ts": k, "dur": 5})
        events.append({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 1000 + k, "ts": k + 1, "dur": 2})
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def _time_many_threads(path: Path) -> dict[str, float]:
    from trnscope.core.analysis.diagnose import diagnose
    from trnscope.core.analysis.timeline import build_lanes, extent, render_text

    started = time.perf_counter()
    analysis = Analysis(load_path(path, NO_CACHE))
    analysis.op_table()
    summary = time.perf_counter() - started
    started = time.perf_counter()
    diagnose(analysis)
    diagnosed = time.perf_counter() - started
    started = time.perf_counter()
    lanes = build_lanes(analysis)
    render_text(analysis, lanes, *extent(lanes), 120)
    drawn = time.perf_counter() - started
    return {"summary": summary, "diagnose": diagnosed, "timeline": drawn}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--threads", type=int, nargs="*", default=[25_000, 50_000, 100_000])
    args = parser.parse_args()
    configure_memory()
    with tempfile.TemporaryDirectory() as folder:
        same = Path(folder) / "identical.json"
        event = {"ph": "X", "cat": "cpu_op", "name": "same", "pid": 1, "tid": 1, "ts": 0, "dur": 10}
        same.write_text(json.dumps({"traceEvents": [event] * args.events}))
        far = Path(folder) / "far_apart.json"
        spread = [dict(event, ts=i * 4.4e15 / args.events) for i in range(args.events)]
        far.write_text(json.dumps({"traceEvents": spread}))
        for label, path in (("identical events, one thread", same), ("events up to 4.4e15 us apart", far)):
            seconds, groups = _time(path)
            print(f"{label:32s} {args.events:>9,} events  {seconds:6.2f} s  ({groups} op rows)")
        # ops each nested in the one before, under one Python frame, grouped by stack:
        # every op's nearest frame is the whole chain up (84 s at 200,000 when the rows
        # climbed one step per pass; pointer jumping now)
        chain = Path(folder) / "nested_chain.json"
        nested = [{"ph": "X", "cat": "python_function", "name": "main.py(1): main", "pid": 1, "tid": 1, "ts": 0}]
        nested[0]["dur"] = 10 * args.events + 100
        nested += [
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": f"op{i % 3}",
                "pid": 1,
                "tid": 1,
                "ts": 1 + i,
                "dur": 10 * args.events - 2 * i,
            }
            for i in range(args.events)
        ]
        chain.write_text(json.dumps({"traceEvents": nested}))
        started = time.perf_counter()
        analysis = Analysis(load_path(chain, NO_CACHE))
        groups = len(analysis.op_table("stack"))
        seconds = time.perf_counter() - started
        print(f"{'nested chain, group by stack':32s} {args.events:>9,} events  {seconds:6.2f} s  ({groups} op rows)")
        # diagnose and the timeline group events by thread once: a trace with one op on
        # each of 100,000 threads costs a few times the summary, not threads × events
        for threads in args.threads:
            times = _time_many_threads(_many_threads(Path(folder), threads))
            print(
                f"one op on each of {threads:>7,} threads  summary {times['summary']:5.2f} s  "
                f"diagnose {times['diagnose']:5.2f} s  timeline {times['timeline']:5.2f} s"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
