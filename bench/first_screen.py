"""The explorer's first screen against ``summary``, on real traces.

    python bench/first_screen.py [PATH ...] [--rounds 3] [--no-corpus] [--min-mb 0]

Issue 20 asks that the TUI's first screen appear no later than ``summary`` would print.
Each round runs, in fresh processes and alternating: ``trnscope summary PATH --format
json --no-cache`` (wall time to exit) and the explorer as ``trnscope open PATH
--no-cache`` starts it (the console script's parsing and read-ahead, then ``run_open``'s
own ``explorer_app``: the fork server, the early load, then the app), driven headless at 80×24, timed from the moment the process was started until the first
screen after loading is mounted (the op table, or the ranks view).  Medians and spread;
a Markdown table on stdout and ``bench/out/first_screen.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# results go here; TRNSCOPE_BENCH_OUT moves them (the smoke test keeps bench/out as it is)
OUT = Path(os.environ.get("TRNSCOPE_BENCH_OUT") or ROOT / "bench" / "out")
CORPUS = ROOT.parent / "shared" / "corpus"

# Runs in the child: seconds from the process's start (its /proc start time) to the
# first screen after loading, printed on the last line.
FIRST_SCREEN = r"""
import asyncio, os, sys, time
def since_start():
    ticks = os.sysconf("SC_CLK_TCK")
    with open("/proc/self/stat") as fh:
        start = int(fh.read().rsplit(")", 1)[1].split()[19]) / ticks
    with open("/proc/uptime") as fh:
        now = float(fh.read().split()[0])
    return now - start
from trnscope.cli import load_numpy_with_one_blas_thread, parse_and_read_ahead
from trnscope.core.base.gcpause import collector_paused, own_this_process
own_this_process()  # as the console script does
with collector_paused():  # as the console script does
    args = parse_and_read_ahead(["open", sys.argv[1], "--no-cache"])  # gunzip starts
    load_numpy_with_one_blas_thread(["open"])
    import trnscope.cli.main
from trnscope.core.base.memory import configure_memory
configure_memory()  # as the CLI does
from trnscope.tui.launch import explorer_app
app = explorer_app(args)  # as run_open makes it
from trnscope.tui.app import LoadingScreen
async def main():
    async with app.run_test(size=(80, 24)) as pilot:
        while not (app.screen_stack and not isinstance(app.screen, LoadingScreen) and app.screen.is_mounted):
            await asyncio.sleep(0.002)
        print(f"{since_start():.3f}")
        app.exit()
asyncio.run(main())
"""


def _summary_seconds(path: Path) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "trnscope", "summary", str(path), "--format", "json", "--no-cache"],
        cwd=str(ROOT),
        stdout=subprocess.DEVNULL,
        check=True,
    )
    return time.perf_counter() - started


def _first_screen_seconds(path: Path) -> float:
    # /proc's start time has a resolution of one clock tick (10 ms): the bench reports it
    # as measured, and the parent's own wall clock as a check that nothing was missed
    done = subprocess.run(
        [sys.executable, "-c", FIRST_SCREEN, str(path)], cwd=str(ROOT), capture_output=True, text=True, check=True
    )
    return float(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("paths", nargs="*", metavar="PATH")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-corpus", action="store_true")
    parser.add_argument("--min-mb", type=float, default=0.0, help="skip traces smaller than this (on disk, packed)")
    args = parser.parse_args()
    traces = [Path(p).resolve() for p in args.paths]
    if not args.no_corpus and CORPUS.is_dir():
        traces += sorted(p for p in CORPUS.iterdir() if p.name.endswith((".json", ".json.gz")))
    traces = [t for t in traces if t.stat().st_size >= args.min_mb * 1e6]
    env_cache = OUT / "first_screen_cache"
    os.environ["TRNSCOPE_CACHE_DIR"] = str(env_cache)
    results = []
    for trace in traces:
        summary: list[float] = []
        screen: list[float] = []
        for round_ in range(args.rounds):
            order = (
                (_summary_seconds, _first_screen_seconds)
                if round_ % 2 == 0
                else (_first_screen_seconds, _summary_seconds)
            )
            for measure in order:
                (summary if measure is _summary_seconds else screen).append(measure(trace))
        row = {
            "trace": trace.name,
            "summary_s": round(statistics.median(summary), 3),
            "summary_range": [round(min(summary), 3), round(max(summary), 3)],
            "first_screen_s": round(statistics.median(screen), 3),
            "first_screen_range": [round(min(screen), 3), round(max(screen), 3)],
        }
        row["screen_minus_summary_s"] = round(row["first_screen_s"] - row["summary_s"], 3)
        results.append(row)
        print(
            f"{trace.name:44s} summary {row['summary_s']:.3f}s  first screen {row['first_screen_s']:.3f}s",
            file=sys.stderr,
        )
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "first_screen.json").write_text(json.dumps(results, indent=2))
    print("| real trace | summary (exit) | TUI first screen | screen − summary |")
    print("|---|---:|---:|---:|")
    for row in results:
        print(
            f"| {row['trace']} | {row['summary_s']:.3f} s ({row['summary_range'][0]:.3f}–{row['summary_range'][1]:.3f}) "
            f"| {row['first_screen_s']:.3f} s ({row['first_screen_range'][0]:.3f}–{row['first_screen_range'][1]:.3f}) "
            f"| {row['screen_minus_summary_s']:+.3f} s |"
        )


if __name__ == "__main__":
    main()
