"""Run every benchmark and write bench/out/RESULTS.md (``make bench``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"


def main() -> None:
    OUT.mkdir(exist_ok=True)
    for script in ("load.py", "tui_latency.py"):
        subprocess.run([sys.executable, str(HERE / script), *sys.argv[1:]], check=True)
    subprocess.run([sys.executable, str(HERE / "worst_case.py")], check=True)
    # the real corpus traces (first open, cached reopen, peak RSS against json.load) and
    # many ranks (pool and Dask): their tables go into RESULTS.md as they print them
    real = subprocess.run([sys.executable, str(HERE / "real_traces.py")], check=True, capture_output=True, text=True)
    ranks = subprocess.run(
        [sys.executable, str(HERE / "many_ranks.py"), "--ranks", "16,64"], check=True, capture_output=True, text=True
    )
    screen = subprocess.run([sys.executable, str(HERE / "first_screen.py")], check=True, capture_output=True, text=True)
    phases = subprocess.run([sys.executable, str(HERE / "phases.py")], check=True, capture_output=True, text=True)
    load = json.loads((OUT / "load_results.json").read_text())
    tui = json.loads((OUT / "tui_latency.json").read_text())
    lines = [
        "## Real traces",
        "",
        real.stdout.strip(),
        "",
        "## Where a first open's time goes",
        "",
        phases.stdout.strip(),
        "",
        "## The explorer's first screen against summary",
        "",
        screen.stdout.strip(),
        "",
        "## Many ranks",
        "",
        ranks.stdout.strip(),
        "",
        "## Synthetic",
    ]
    lines += [
        "",
        f"Benchmark trace: {load['file']['mb']:.0f} MB, {load['trnscope_first_open']['events']:,} events.",
        "",
    ]
    lines += [
        "| load | seconds (median) | MB/s | peak RSS (MB) | peak RSS of worker processes (MB) | every run (s) |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for key, title in (
        ("trnscope_first_open", "trnscope, first open (file → op table)"),
        ("trnscope_one_process", "trnscope, one process, no cache"),
        ("trnscope_cached_open", "trnscope, second open (index cache)"),
        ("json_load", "json.load alone"),
        ("hta_trace_analysis", "HTA TraceAnalysis"),
    ):
        r = load.get(key, {})
        if "seconds" in r:
            lines.append(
                f"| {title} | {r['seconds']:.2f} | {r['mb_per_s']:.0f} | {r['peak_rss_mb']:.0f} | {r['peak_child_rss_mb']:.0f}"
                f" | {', '.join(f'{s:.2f}' for s in r.get('all_seconds', [r['seconds']]))} |"
            )
        elif r:
            lines.append(f"| {title} | — | — | — | {r.get('skipped', '')} | |")
    lines += [
        "",
        f"TUI on the same trace ({tui['events']:,} events; op table grouped by stack: {tui['op_table_rows_by_stack']} rows; drill-down into an op with {tui['drill_instances']:,} instances):",
        "",
    ]
    lines += [
        "| action | wall median (ms) | wall p95 (ms) | CPU median (ms) | CPU p95 (ms) |",
        "|---|---:|---:|---:|---:|",
    ]
    for label, v in tui["latency"].items():
        lines.append(f"| {label} | {v['median_ms']} | {v['p95_ms']} | {v['cpu_median_ms']} | {v['cpu_p95_ms']} |")
    text = "\n".join(lines) + "\n"
    (OUT / "RESULTS.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
