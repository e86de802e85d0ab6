"""Shared pieces of the benchmarks: the benchmark trace and process measurements."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
OUT = ROOT / "out"
TRACE = OUT / "bench_trace.json"
TARGET_BYTES = 800 << 20


def ensure_trace(target_bytes: int = TARGET_BYTES, path: Path = TRACE) -> Path:
    """The deterministic ~800 MB benchmark trace (generated once, kept in bench/out)."""
    OUT.mkdir(exist_ok=True)
    if path.exists() and path.stat().st_size >= target_bytes * 0.95:
        return path
    sys.path.insert(0, str(ROOT.parent))
    from trnscope.testing.synth_kineto import generate

    events = int(target_bytes / 290)  # the generator writes ~290 bytes per event
    started = time.perf_counter()
    generate(path, events, seed=2026)
    print(
        f"generated {path} ({path.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - started:.0f}s",
        file=sys.stderr,
    )
    return path


def run_measured(code: str, *args: str, env: dict[str, str] | None = None) -> dict:
    """Run ``code`` in a fresh interpreter; it prints a JSON dict on its last line.
    Adds peak RSS of the process and of its children (MB)."""
    wrapper = (
        "import json, resource, sys\n"
        + code
        # VmHWM, not ru_maxrss: Linux carries the spawning process's peak (this bench's,
        # which may have just generated the trace) into a child's ru_maxrss at exec
        # (both in KiB: MB here is 10**6 bytes, as the file sizes are)
        + "\nself_rss = next(int(x.split()[1]) for x in open('/proc/self/status') if x.startswith('VmHWM:')) * 1024 / 1e6\n"
        + "child_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024 / 1e6\n"
        + "RESULT.update(peak_rss_mb=round(self_rss, 1), peak_child_rss_mb=round(child_rss, 1))\n"
        + "print(json.dumps(RESULT))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", wrapper, *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=str(ROOT.parent),
    )
    if result.returncode != 0:
        raise RuntimeError(result.stderr[-2000:])
    return json.loads(result.stdout.strip().splitlines()[-1])


def warm_page_cache(path: Path) -> None:
    """Read the file once so a measurement starts with it in the page cache, as it is
    right after a capture wrote it (the machine's memory reclaim may have dropped it)."""
    with open(path, "rb") as fh:
        while fh.read(16 << 20):
            pass


def median_of(runs: list[dict]) -> dict:
    """The run with the median time, with every run's seconds attached."""
    ordered = sorted(runs, key=lambda r: r["seconds"])
    chosen = dict(ordered[len(ordered) // 2])
    chosen["all_seconds"] = [r["seconds"] for r in runs]
    return chosen


def kib_to_mb(kib: float) -> float:
    """Linux reports memory in KiB; every bench reports MB of 10**6 bytes, the unit of
    the file sizes they are compared with (a MiB is 4.9% larger)."""
    return kib * 1024 / 1e6


def peak_rss_mb() -> float:
    return kib_to_mb(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
