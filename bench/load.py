"""Load throughput and memory: trnscope (first and cached open) vs json.load (and HTA if installed).

    python bench/load.py [--bytes N]

Each measurement runs in a fresh process, so peak RSS is that measurement's own.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile

from common import OUT, TARGET_BYTES, ensure_trace, median_of, run_measured, warm_page_cache

TRNSCOPE = """
import time
from pathlib import Path
from trnscope.core.formats import LoadOptions, SourceRef
from trnscope.core.opening.open import open_analysis
from trnscope.core.base.memory import configure_memory
configure_memory()  # as the CLI and TUI entry point does
path = sys.argv[1]
started = time.perf_counter()
analysis = open_analysis(SourceRef("bench", path), LoadOptions(use_cache=sys.argv[2] == "cache", workers=int(sys.argv[3]) if sys.argv[3] != "auto" else None))
table = analysis.op_table()
elapsed = time.perf_counter() - started
analysis.finish()  # the cache is written after the first table, as the CLI and TUI do
RESULT = dict(seconds=round(elapsed, 3), events=len(analysis.trace.events), groups=len(table), workers=analysis.trace.stats.workers, from_cache=analysis.trace.stats.from_cache)
"""

JSON_LOAD = """
import time
path = sys.argv[1]
started = time.perf_counter()
with open(path) as fh:
    doc = json.load(fh)
elapsed = time.perf_counter() - started
RESULT = dict(seconds=round(elapsed, 3), events=len(doc["traceEvents"]))
"""

HTA = """
import time, os, shutil, tempfile
path = sys.argv[1]
folder = tempfile.mkdtemp()
os.symlink(path, os.path.join(folder, "rank-0.pt.trace.json"))
from hta.trace_analysis import TraceAnalysis
started = time.perf_counter()
analyzer = TraceAnalysis(trace_dir=folder)
elapsed = time.perf_counter() - started
RESULT = dict(seconds=round(elapsed, 3))
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bytes", type=int, default=TARGET_BYTES)
    parser.add_argument("--skip-json", action="store_true")
    parser.add_argument("--repeat", type=int, default=5, help="runs of each trnscope measurement (median reported)")
    args = parser.parse_args()
    trace = ensure_trace(
        args.bytes,
        OUT / f"bench_trace_{args.bytes >> 20}MB.json" if args.bytes != TARGET_BYTES else OUT / "bench_trace.json",
    )
    size_mb = trace.stat().st_size / 1e6
    results: dict[str, dict] = {"file": {"path": str(trace), "mb": round(size_mb, 1)}}
    # The machine's timing varies by ±10% from run to run: trnscope's runs are repeated
    # and the median is reported (each first open with an empty cache folder).
    first_runs, cached_runs, single_runs = [], [], []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as cache:
            env = {"TRNSCOPE_CACHE_DIR": cache}
            warm_page_cache(trace)
            first_runs.append(run_measured(TRNSCOPE, str(trace), "cache", "auto", env=env))
            warm_page_cache(trace)
            cached_runs.append(run_measured(TRNSCOPE, str(trace), "cache", "auto", env=env))
    for _ in range(max(1, args.repeat // 2)):
        with tempfile.TemporaryDirectory() as cache:
            warm_page_cache(trace)
            single_runs.append(run_measured(TRNSCOPE, str(trace), "nocache", "1", env={"TRNSCOPE_CACHE_DIR": cache}))
    results["trnscope_first_open"] = median_of(first_runs)
    results["trnscope_cached_open"] = median_of(cached_runs)
    results["trnscope_one_process"] = median_of(single_runs)
    if not args.skip_json:
        warm_page_cache(trace)
        results["json_load"] = run_measured(JSON_LOAD, str(trace))
    if importlib.util.find_spec("hta") is not None:
        warm_page_cache(trace)
        results["hta_trace_analysis"] = run_measured(HTA, str(trace))
    else:
        results["hta_trace_analysis"] = {"skipped": "HolisticTraceAnalysis is not installed"}
    for value in results.values():
        if "seconds" in value:
            value["mb_per_s"] = round(size_mb / value["seconds"], 1)
    out = OUT / ("load_results.json" if args.bytes == TARGET_BYTES else f"load_results_{args.bytes >> 20}MB.json")
    out.write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2))
    first = results["trnscope_first_open"]
    print(f"\nfile {size_mb:.0f} MB, {first['events']:,} events", file=sys.stderr)
    for key in ("trnscope_first_open", "trnscope_one_process", "trnscope_cached_open", "json_load"):
        if key in results and "seconds" in results[key]:
            r = results[key]
            print(
                f"{key:24s} {r['seconds']:7.2f}s {r['mb_per_s']:7.1f} MB/s  peak RSS {r['peak_rss_mb']:7.0f} MB (children {r['peak_child_rss_mb']:.0f} MB)",
                file=sys.stderr,
            )


if __name__ == "__main__":
    main()
