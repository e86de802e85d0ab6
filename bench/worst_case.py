"""Worst-case inputs stay near-linear: N identical events on one thread (a same-name
chain N deep, which duplicate folding collapses) and events far apart in time.

    python bench/worst_case.py [--events N]

Prints seconds for file → op table, in-process, no cache.  The goal (issue 11): 200,000
identical events in under 2 s on the 2-core machine.
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
from trnscope.core.base.memory import prefer_small_pages
from trnscope.core.formats import load_path


def _time(path: Path) -> tuple[float, int]:
    started = time.perf_counter()
    analysis = Analysis(load_path(path, use_cache=False))
    table = analysis.op_table()
    return time.perf_counter() - started, len(table)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=200_000)
    args = parser.parse_args()
    prefer_small_pages()
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
