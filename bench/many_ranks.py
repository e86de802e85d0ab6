"""``trnscope ranks`` over many SYNTHETIC ranks: wall time, the parent's peak RSS and
throughput per worker, on the local process pool and on a Dask LocalCluster.

    python bench/many_ranks.py [--ranks 16,64,256] [--mb 20] [--workers 1,2] [--dask 2] [--keep DIR]

Each rank is an NCCL-style trace of about ``--mb`` MB (``trnscope.testing.synth_ranks``;
rank 1 is held back 5 ms in one step).  Each run is a fresh process running
``trnscope ranks FOLDER --format json --no-cache``; it reports its own peak RSS (the
parent: what must stay flat as ranks grow, since only summaries come back) and the
largest of its workers'.  Results: ``bench/out/many_ranks.json`` and a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
sys.path.insert(0, str(ROOT))

from trnscope.testing.events import trace_text  # noqa: E402
from trnscope.testing.synth_ranks import RankPlan, rank_events  # noqa: E402

OPS_PER_STEP = 400
CHILD = """
import resource, sys, time
from trnscope.cli.main import main
started = time.perf_counter()
code = main(sys.argv[1:])
seconds = time.perf_counter() - started
# VmHWM, not ru_maxrss: Linux carries the spawning process's peak into a child's
# ru_maxrss at exec, so this bench's own size would be reported as the parent's
me = next(int(x.split()[1]) for x in open("/proc/self/status") if x.startswith("VmHWM:")) * 1024 / 1e6  # KiB → MB
workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024 / 1e6
sys.stderr.write(f"BENCH {code} {seconds:.4f} {me:.1f} {workers:.1f}\\n")
"""


def write_folder(folder: Path, ranks: int, megabytes: float) -> float:
    """``ranks`` traces of about ``megabytes`` MB each; returns the total MB written."""
    # a step of 400 host ops around a matmul and its two collectives: a realistic ratio
    probe = RankPlan(world=ranks, steps=10, ops_per_step=OPS_PER_STEP)
    per_step = len(trace_text(rank_events(probe, 0))) / 10
    steps = max(3, int(megabytes * 1e6 / per_step))
    plan = RankPlan(world=ranks, steps=steps, ops_per_step=OPS_PER_STEP, held_back={(1, steps // 2): 5_000})
    header = {"trnscope": "SYNTHETIC multi-rank trace (bench/many_ranks.py)"}
    normal = trace_text(
        rank_events(plan, 0), distributedInfo={"backend": "nccl", "rank": -1, "world_size": ranks}, **header
    )
    late = trace_text(
        rank_events(plan, 1), distributedInfo={"backend": "nccl", "rank": 1, "world_size": ranks}, **header
    )
    folder.mkdir(parents=True, exist_ok=True)
    total = 0
    for rank in range(ranks):
        text = late if rank == 1 else normal.replace('"rank": -1', f'"rank": {rank}', 1)
        (folder / f"rank{rank}.json").write_text(text)
        total += len(text)
    return total / 1e6


def run(folder: Path, *extra: str, env: dict[str, str] | None = None) -> dict[str, float]:
    command = [sys.executable, "-c", CHILD, "ranks", str(folder), "--format", "json", "--no-cache", *extra]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, timeout=3600)
    line = next(x for x in done.stderr.splitlines() if x.startswith("BENCH "))
    code, seconds, parent, workers = line.split()[1:]
    if code != "0":
        raise SystemExit(f"ranks failed: {done.stderr[-2000:]}")
    document = json.loads(done.stdout)
    stragglers = [f["rank"] for f in document["findings"] if f["kind"] == "straggler"]
    assert stragglers == [1], document["findings"][:3]
    return {"seconds": float(seconds), "parent_rss_mb": float(parent), "worker_rss_mb": float(workers)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", default="16,64", help="comma-separated rank counts")
    parser.add_argument("--mb", type=float, default=20.0, help="MB per rank trace")
    parser.add_argument("--workers", default="1,2", help="local pool sizes to time")
    parser.add_argument("--dask", type=int, default=2, help="Dask LocalCluster workers (0: skip Dask)")
    parser.add_argument("--keep", type=Path, default=None, help="write the traces here and keep them")
    args = parser.parse_args()
    results = []
    base = args.keep or Path(tempfile.mkdtemp(prefix="trnscope-many-ranks-"))
    try:
        for ranks in [int(x) for x in args.ranks.split(",")]:
            folder = base / f"ranks{ranks}"
            started = time.perf_counter()
            total_mb = write_folder(folder, ranks, args.mb)
            print(f"{ranks} ranks, {total_mb:,.0f} MB written in {time.perf_counter() - started:.0f}s", flush=True)
            for workers in [int(x) for x in args.workers.split(",")]:
                figures = run(folder, "--workers", str(workers))
                results.append({"ranks": ranks, "mb": total_mb, "executor": f"pool ×{workers}", **figures})
                print(results[-1], flush=True)
            if args.dask:
                results.append(_on_dask(folder, ranks, total_mb, args.dask))
                print(results[-1], flush=True)
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)
    OUT.mkdir(parents=True, exist_ok=True)
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    (OUT / "many_ranks.json").write_text(json.dumps({"machine": machine, "results": results}, indent=2))
    print(f"\nmachine: {machine}; {args.mb:g} MB per rank\n")
    print("| ranks | total MB | executor | wall s | MB/s per worker | parent peak RSS MB | largest worker RSS MB |")
    print("|---:|---:|---|---:|---:|---:|---:|")
    for r in results:
        count = int(r["executor"].split("×")[-1]) if "×" in r["executor"] else args.dask
        per_worker = r["mb"] / r["seconds"] / max(count, 1)
        print(
            f"| {r['ranks']} | {r['mb']:,.0f} | {r['executor']} | {r['seconds']:.2f} | {per_worker:.0f} | "
            f"{r['parent_rss_mb']:.0f} | {r['worker_rss_mb']:.0f} |"
        )


def _on_dask(folder: Path, ranks: int, total_mb: float, workers: int) -> dict[str, object]:
    try:
        import distributed
    except ImportError:
        return {"ranks": ranks, "mb": total_mb, "executor": "dask (not installed)", "seconds": 0.0,
                "parent_rss_mb": 0.0, "worker_rss_mb": 0.0}  # fmt: skip
    with distributed.LocalCluster(
        n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
    ) as cluster:
        env = {**os.environ, "DASK_SCHEDULER_ADDRESS": cluster.scheduler_address}
        figures = run(folder, env=env)
        with distributed.Client(cluster) as client:
            rss = client.run(lambda: __import__("resource").getrusage(0).ru_maxrss * 1024 / 1e6)
    figures["worker_rss_mb"] = max(rss.values()) if rss else 0.0
    return {"ranks": ranks, "mb": total_mb, "executor": f"dask ×{workers}", **figures}


if __name__ == "__main__":
    main()
