"""SYNTHETIC multi-rank NCCL-style traces, with every figure known by construction.

Each rank runs the same steps: a matmul (an ``aten::mm`` launching a GEMM kernel), an
optional idle gap (the rank held back), then the step's collectives, each a
``c10d::`` call around a ``record_param_comms`` (``Collective name``, sizes, ``dtype``,
``Group size``, ``Process Group Name``, ``Seq``, ``Comms Id`` as asked) launching an
``ncclDevKernel_*`` kernel.  A collective's kernel starts 25 µs after its rank's call and
ends on every rank when the last rank's kernel has run ``latency`` µs, as a blocking
NCCL collective does — so arrival skew, lateness, waits and latency are exact numbers a
test can state.  Times are integer µs on a Unix-epoch clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trnscope.testing.events import annotation, event, kernel, launch, op, write_trace

EPOCH_US = 1_700_000_000_000_000  # a Unix time in µs, as Kineto writes them
COMMS_ID_BASE = 10_159_970_886_766_084_423  # above int64, as real ones are
ISSUE_TO_KERNEL_US = 25
CALL_US = 20
STEP_TAIL_US = 50
_BYTES = {"Float": 4, "BFloat16": 2, "Half": 2, "Long": 8, "Int": 4}
_KERNEL = {
    "all_reduce": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
    "all_gather": "ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
    "reduce_scatter": "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
    "all_to_all": "ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)",
}
_CALL = {
    "all_reduce": "c10d::allreduce_",
    "all_gather": "c10d::_allgather_base_",
    "reduce_scatter": "c10d::_reduce_scatter_base_",
    "all_to_all": "c10d::alltoall_base_",
}


@dataclass(frozen=True)
class Collective:
    name: str = "all_reduce"
    nelems: int = 1 << 20  # input elements
    dtype: str = "Float"
    latency_us: int = 400

    @property
    def out_nelems(self) -> int:
        return self.nelems


@dataclass
class RankPlan:
    """What the synthetic job does.  Keys of ``held_back`` are (rank, step position)."""

    world: int = 4
    steps: int = 3
    first_step: int = 10  # ProfilerStep# of the first step
    compute_us: int = 2_000
    step_period_us: int = 20_000
    collectives: tuple[Collective, ...] = (Collective(), Collective("all_gather", 1 << 18, "BFloat16", 300))
    gap_us: int = 100  # between one collective's end and the next call
    ops_per_step: int = 0  # small host ops inside the matmul's time (a realistic op count per step)
    held_back: dict[tuple[int, int], int] = field(default_factory=dict)  # idle before the first call
    extra_compute: dict[int, int] = field(default_factory=dict)  # rank → µs more compute every step
    key: str = "seq"  # "comms id", "seq" or "none": what record_param_comms carries
    skip_ranks: frozenset[int] = frozenset()  # ranks whose file is not written
    late_window: frozenset[int] = frozenset()  # ranks whose first collective precedes their window
    wrong_size: dict[tuple[int, int, int], int] = field(default_factory=dict)  # (rank, step, k) → nelems
    late_call: dict[tuple[int, int, int], int] = field(default_factory=dict)  # (rank, step, k) → µs late
    epoch_us: int = EPOCH_US  # when the job's first step starts (Unix µs)
    # (rank, step position) → a Python frame (with_stack) spanning that rank's held-back
    # time before its first collective: what it was doing, as a real trace would say
    idle_frames: dict[tuple[int, int], str] = field(default_factory=dict)
    # (rank, step position) whose held-back time is a DataLoader fetch (busy, not idle)
    held_in_loader: frozenset[tuple[int, int]] = frozenset()

    def arrival(self, rank: int, step: int, k: int) -> int:
        """When ``rank`` calls collective ``k`` of step position ``step`` (µs since the
        epoch): the first after its compute and any delay, the next ones ``gap_us`` after
        the previous collective ended (on every rank at once)."""
        late = self.late_call.get((rank, step, k), 0)
        if k == 0:
            return self.step_start(step) + 10 + self.compute_us + self.delay(rank, step) + late
        return self.end(step, k - 1) + self.gap_us + late

    def delay(self, rank: int, step: int) -> int:
        return self.held_back.get((rank, step), 0) + self.extra_compute.get(rank, 0)

    def step_start(self, step: int) -> int:
        return self.epoch_us + step * self.step_period_us

    def end(self, step: int, k: int) -> int:
        """When collective ``k`` ends on every rank: the last rank's kernel ran its latency."""
        latest = max(self.arrival(r, step, k) for r in range(self.world))
        return latest + ISSUE_TO_KERNEL_US + self.collectives[k].latency_us

    def step_end(self, step: int) -> int:
        return self.end(step, len(self.collectives) - 1) + STEP_TAIL_US


def _args(plan: RankPlan, rank: int, step: int, k: int, seq: int) -> dict[str, Any]:
    c = plan.collectives[k]
    nelems = plan.wrong_size.get((rank, step, k), c.nelems)
    args: dict[str, Any] = {
        "Collective name": {"all_reduce": "allreduce", "all_gather": "_allgather_base"}.get(c.name, c.name),
        "dtype": c.dtype,
        "In msg nelems": nelems,
        "Out msg nelems": nelems * plan.world if c.name == "all_gather" else nelems,
        "Group size": plan.world,
        "Process Group Name": "0",
        "Process Group Description": "default_pg",
    }
    if plan.key in ("seq", "comms id"):
        args["Seq"] = seq
    if plan.key == "comms id":
        args["Comms Id"] = COMMS_ID_BASE + seq
    return args


DATA_LOADER_FETCH = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def rank_events(plan: RankPlan, rank: int) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": f"rank {rank}"}},
    ]
    correlation = 1
    seq = 0
    for step in range(plan.steps):
        start = plan.step_start(step)
        events.append(annotation(f"ProfilerStep#{plan.first_step + step}", start, plan.step_end(step) - start))
        compute = plan.compute_us + plan.extra_compute.get(rank, 0)
        events.append(op("aten::mm", start + 10, compute - 10, ext=correlation))
        for k in range(plan.ops_per_step):  # nested in the matmul's time, on the same thread
            at = start + 11 + k * max(1, (compute - 12) // max(plan.ops_per_step, 1))
            events.append(op("aten::view", at, 1))
        events.append(launch(start + 12, 5, correlation=correlation, ext=correlation))
        events.append(kernel("sm90_xmma_gemm_f32", start + 20, compute - 20, correlation=correlation))
        correlation += 1
        for k, c in enumerate(plan.collectives):
            seq += 1
            if rank in plan.late_window and step == 0 and k == 0:
                continue  # called before this rank's profiling window opened
            arrival = plan.arrival(rank, step, k)
            held = plan.held_back.get((rank, step), 0)
            if k == 0 and (rank, step) in plan.idle_frames:
                frame = plan.idle_frames[(rank, step)]
                events.append(event(frame, "python_function", arrival - held + 5, held - 10))
            if k == 0 and (rank, step) in plan.held_in_loader:
                events.append(annotation(DATA_LOADER_FETCH, arrival - held + 5, held - 10))
            events.append(op(_CALL[c.name], arrival, CALL_US, ext=correlation))
            events.append(op("record_param_comms", arrival + 2, CALL_US - 4, **_args(plan, rank, step, k, seq)))
            events.append(launch(arrival + 4, 5, correlation=correlation, ext=correlation))
            begin = arrival + ISSUE_TO_KERNEL_US
            events.append(kernel(_KERNEL[c.name], begin, plan.end(step, k) - begin, correlation=correlation, stream=20))
            correlation += 1
    return events


def write_ranks(folder: Path, plan: RankPlan) -> list[Path]:
    """One trace per rank, ``rank<N>.json``, marked SYNTHETIC."""
    picks = [(plan, rank, f"rank{rank}.json") for rank in range(plan.world) if rank not in plan.skip_ranks]
    return write_collected(folder, picks)


def write_collected(folder: Path, picks: list[tuple[RankPlan, int, str]]) -> list[Path]:
    """A folder of traces collected from several jobs: each (plan, rank, file name) is
    that job's rank written under that name, marked SYNTHETIC."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for plan, rank, name in picks:
        path = folder / name
        write_trace(
            path,
            rank_events(plan, rank),
            distributedInfo={"backend": "nccl", "rank": rank, "world_size": plan.world},
            trnscope="SYNTHETIC multi-rank trace (trnscope.testing.synth_ranks)",
            deviceProperties=[{"id": 0, "name": "SYNTHETIC GPU"}],
        )
        paths.append(path)
    return paths


def message_bytes(c: Collective, world: int) -> int:
    out = c.nelems * world if c.name == "all_gather" else c.nelems
    return max(c.nelems, out) * _BYTES[c.dtype]


__all__ = [
    "EPOCH_US",
    "Collective",
    "RankPlan",
    "event",
    "message_bytes",
    "rank_events",
    "write_collected",
    "write_ranks",
]
