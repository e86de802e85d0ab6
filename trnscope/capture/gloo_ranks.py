"""Record REAL multi-rank traces: ``torch.distributed`` on gloo, several processes on
127.0.0.1, each profiled with ``torch.profiler``; one rank can be held back (a sleep
before its first collective) in one step.  With ``pairs``, each pair of ranks ([0, 1],
[2, 3], …) also all-reduces in a group of its own, as tensor parallelism does; with
``grid``, four ranks all-reduce in their pair, then in their column ([0, 2], [1, 3]: data
parallelism beside it), then as one job.

Run as a module to record a folder by hand:
``python -m trnscope.capture.gloo_ranks OUT [--world 4] [--held-rank 2] [--held-step 2] [--held-ms 80] [--pairs | --grid]``.
"""

from __future__ import annotations

import argparse
import os
import socket
import time
from pathlib import Path

ACTIVE_STEPS = 3  # ProfilerStep#1 … #3 are recorded (step 0 is the warm-up)
ATTEMPTS = 3  # tries of a recording, each on a fresh port


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rank_main(
    rank: int,
    world: int,
    out: str,
    port: int,
    held_rank: int,
    held_step: int,
    held_ms: float,
    pairs: bool = False,
    grid: bool = False,
) -> None:
    import torch
    import torch.distributed as dist
    from torch.profiler import ProfilerActivity, profile, schedule

    from trnscope.capture.kineto_markers import QuietSteps

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.set_num_threads(1)
    x = torch.randn(128, 128)
    # every rank creates every group, in the same order (torch.distributed requires it)
    pair_groups = [dist.new_group([r, r + 1]) for r in range(0, world - 1, 2)] if pairs or grid else []
    # the grid's other axis: ranks r and r + 2 (data parallelism beside tensor-parallel pairs)
    column_groups = [dist.new_group([r, r + 2]) for r in range(2) if r + 2 < world] if grid else []

    def save(prof: profile) -> None:
        prof.export_chrome_trace(str(Path(out) / f"rank{rank}.json"))

    activities = [ProfilerActivity.CPU]
    with (
        profile(
            activities=activities,
            schedule=schedule(wait=0, warmup=1, active=ACTIVE_STEPS, repeat=1),
            record_shapes=True,
            on_trace_ready=save,
        ) as prof,
        QuietSteps(prof.step, wait=0, active=ACTIVE_STEPS) as profiler_step,
    ):
        for step in range(1 + ACTIVE_STEPS):
            y = x @ x
            if rank == held_rank and step == held_step:
                time.sleep(held_ms / 1000.0)
            if grid:  # its pair first, then its column: the held rank's delay travels
                dist.all_reduce(y, group=pair_groups[rank // 2])
                dist.all_reduce(y, group=column_groups[rank % 2])
            dist.all_reduce(y)
            if pairs and rank // 2 < len(pair_groups):
                dist.all_reduce(y, group=pair_groups[rank // 2])
            gathered = [torch.empty(32) for _ in range(world)]
            dist.all_gather(gathered, torch.ones(32) * rank)
            dist.broadcast(y, src=0)
            profiler_step()
    dist.barrier()
    dist.destroy_process_group()


def record(
    out: Path,
    world: int = 4,
    held_rank: int = 2,
    held_step: int = 2,
    held_ms: float = 80.0,
    pairs: bool = False,
    grid: bool = False,
) -> list[Path]:
    """Record ``world`` ranks into ``out/rank<N>.json``; rank ``held_rank`` sleeps
    ``held_ms`` before its first collective of ProfilerStep#``held_step``; with
    ``pairs``, each pair of ranks also all-reduces in its own group; with ``grid``
    (4 ranks), each all-reduces in its pair ([0, 1], [2, 3]), then in its column
    ([0, 2], [1, 3]), before the whole job's collectives."""
    if grid and world != 4:
        raise ValueError("the grid is of 4 ranks")
    import torch.multiprocessing as mp

    out.mkdir(parents=True, exist_ok=True)
    # The port is free when asked for and taken when rank 0's store binds it; on a busy
    # host another process can take it between the two, and a rank aborts (SIGABRT, seen
    # once in a CI run beside the test suite's own servers).  A new port, a new try.
    for attempt in range(ATTEMPTS):
        args = (world, str(out), free_port(), held_rank, held_step, held_ms, pairs, grid)
        try:
            mp.spawn(_rank_main, args=args, nprocs=world, join=True)
            break
        except mp.ProcessExitedException:  # (the next attempt writes every rank's file again)
            if attempt == ATTEMPTS - 1:
                raise
    return sorted(out.glob("rank*.json"))


def main() -> None:
    parser = argparse.ArgumentParser(description="record real gloo multi-rank traces on 127.0.0.1")
    parser.add_argument("out", type=Path)
    parser.add_argument("--world", type=int, default=4)
    parser.add_argument("--held-rank", type=int, default=2)
    parser.add_argument("--held-step", type=int, default=2)
    parser.add_argument("--held-ms", type=float, default=80.0)
    parser.add_argument("--pairs", action="store_true", help="each pair of ranks also all-reduces in its own group")
    parser.add_argument("--grid", action="store_true", help="4 ranks: pairs, then columns, then the whole job")
    args = parser.parse_args()
    for path in record(args.out, args.world, args.held_rank, args.held_step, args.held_ms, args.pairs, args.grid):
        print(path)


if __name__ == "__main__":
    main()
