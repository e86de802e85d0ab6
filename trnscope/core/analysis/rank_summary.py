"""One rank's trace reduced to what a multi-rank analysis needs: per ProfilerStep its
wall, compute, communication and their overlap, and its collectives.

The summary is small (a few numbers per step and per collective) and picklable, so a
process pool or a Dask worker can build it where the trace lies and send only it back
(``core.opening.ranks``).  Every time is an integer nanosecond on the trace's absolute
clock; nothing is rounded here.

Definitions (one each, used everywhere):

* **wall**: the ProfilerStep range on the thread that ran the step.
* **compute**: the union of device kernels and copies that are not collectives inside
  the step; on a trace without device work, the union of the host's ops minus the
  collective calls, on every thread except gloo's worker threads.
* **comm**: the union of the collectives' executions inside the step (the call itself
  where there is no execution).
* **overlap**: the part of comm that compute covers (HTA's comm/compute overlap is
  overlap ÷ comm).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import msgspec
import numpy as np

from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.collective_table import CollectiveTable
from trnscope.core.analysis.collectives import (
    NO_STEP,
    CollectiveCall,
    canonical_collective,
    find_collectives,
    process_groups_of,
)
from trnscope.core.analysis.summary import SummaryFigures
from trnscope.core.base.arrays import equals_any
from trnscope.core.base.intervals import Union, difference
from trnscope.core.model.roles import Role
from trnscope.core.model.vocab import PH_X


class RankStep(msgspec.Struct, array_like=True):
    step: int  # N of ProfilerStep#N; NO_STEP: the whole trace (no steps in it)
    start_ns: int
    end_ns: int
    compute_ns: int
    comm_ns: int
    overlap_ns: int

    @property
    def wall_ns(self) -> int:
        return self.end_ns - self.start_ns


_INT64_MAX = (1 << 63) - 1
_STEP_FIELDS = ("step", "start_ns", "end_ns", "compute_ns", "comm_ns", "overlap_ns")  # RankStep's, in order


class RankSteps(msgspec.Struct):
    """A rank's steps as one int64 array (a row per step: the ``RankStep`` fields in
    order): ~50 bytes a step where objects took ~270, for every step of every rank the
    parent holds.  Iterating gives ``RankStep``s."""

    numbers: np.ndarray  # int64 (n, 6)

    @classmethod
    def from_steps(cls, steps: Sequence[RankStep]) -> RankSteps:
        rows = [[getattr(s, f) for f in _STEP_FIELDS] for s in steps]
        return cls(np.array(rows, dtype=np.int64).reshape(len(steps), 6))

    def __len__(self) -> int:
        return int(self.numbers.shape[0])

    def __iter__(self) -> Iterator[RankStep]:
        return (RankStep(*row) for row in self.numbers.tolist())

    def column(self, field: str) -> np.ndarray:
        """One field of every step; ``wall_ns`` too."""
        if field == "wall_ns":
            return self.numbers[:, 2] - self.numbers[:, 1]
        return self.numbers[:, _STEP_FIELDS.index(field)]

    def only(self, step: int) -> RankSteps:
        return RankSteps(self.numbers[self.numbers[:, 0] == step])


class RankSummary(msgspec.Struct):
    source: str
    label: str
    rank: int  # distributedInfo.rank; -1 when the trace does not say
    world_size: int  # -1 when the trace does not say
    backend: str  # distributedInfo.backend ("nccl", "gloo"), "neuron", ""
    device_kind: str
    compute_kind: str  # "device" or "host": what compute counts
    start_ns: int  # the trace's first event
    end_ns: int
    clock_is_unix: bool
    steps: RankSteps
    collectives: CollectiveTable  # its calls, as columns (small to send back)
    warnings: list[str] = []
    summary: SummaryFigures | None = None  # the op table, when asked for (summary --merge)
    # the process groups this rank is in, name → members (distributedInfo.pg_config):
    # where calls do not name their group, collectives of different groups cannot be
    # told apart by order, and a group read from elsewhere is checked against them
    process_groups: dict[str, list[int]] = {}


def _info(analysis: Analysis) -> dict[str, object]:
    info = analysis.trace.metadata.get("distributedInfo")
    return info if isinstance(info, dict) else {}


MAX_RANKS = 1 << 24  # more than any job runs; a rank or world size past it is not one


def _whole_int(value: object) -> int:
    """A rank or world size as the trace gives it; -1 for anything that cannot be one
    (a string, a negative number, 2**70)."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < MAX_RANKS:
        return value
    return -1


def _compute(analysis: Analysis, calls: list[CollectiveCall]) -> tuple[str, Union]:
    """("device" | "host", the union of compute intervals)."""
    trace = analysis.trace
    ev = trace.events
    origin = trace.origin_ns
    timed = ev.ph == PH_X
    collective_name = np.array([canonical_collective(n) != "" for n in trace.names] or [False], dtype=bool)
    device = np.flatnonzero(timed & equals_any(ev.role, (Role.KERNEL, Role.MEMORY)) & ~collective_name[ev.name])
    if device.size:
        return "device", Union(ev.ts[device] + origin, ev.ts[device] + np.maximum(ev.dur[device], 0) + origin)
    # host: ops on every thread but the ones collectives execute on (gloo's workers),
    # minus the collective calls (and the ops inside them, such as record_param_comms)
    worker_threads = np.unique(ev.thread[timed & (ev.role == int(Role.ANNOTATION)) & collective_name[ev.name]])
    call_threads = np.unique(ev.thread[timed & (ev.role == int(Role.OP)) & collective_name[ev.name]])
    workers = np.setdiff1d(worker_threads, call_threads)
    ops = np.flatnonzero(timed & (ev.role == int(Role.OP)) & ~np.isin(ev.thread, workers))
    busy = Union(ev.ts[ops] + origin, ev.ts[ops] + np.maximum(ev.dur[ops], 0) + origin)
    in_calls = Union(
        np.array([c.arrival_ns for c in calls], dtype=np.int64),
        np.array([c.call_end_ns for c in calls], dtype=np.int64),
    )
    return "host", difference(busy, in_calls)


def _comm(calls: list[CollectiveCall]) -> Union:
    starts = [c.exec_start_ns if c.exec_start_ns >= 0 else c.arrival_ns for c in calls]
    ends = [c.exec_end_ns if c.exec_start_ns >= 0 else c.call_end_ns for c in calls]
    return Union(np.array(starts, dtype=np.int64), np.array(ends, dtype=np.int64))


def rank_steps(analysis: Analysis, calls: list[CollectiveCall]) -> tuple[str, RankSteps]:
    """Per ProfilerStep (or, without steps, for the whole trace) the figures above."""
    origin = analysis.trace.origin_ns
    windows = [
        (int(s.name.rpartition("#")[2]), s.start + origin, s.end + origin)
        for s in analysis.steps()
        if s.name.startswith("ProfilerStep#")
        and s.name.rpartition("#")[2].isdigit()
        and int(s.name.rpartition("#")[2]) <= _INT64_MAX  # a number no step reaches: not a step
    ]
    if not windows:
        first, last = analysis.trace.span_ns
        windows = [(NO_STEP, first + origin, last + origin)]
    kind, compute = _compute(analysis, calls)
    comm = _comm(calls)
    # |compute ∩ comm| = |compute| + |comm| − |compute ∪ comm|
    either = Union(np.concatenate([compute.start, comm.start]), np.concatenate([compute.end, comm.end]))
    steps = []
    for number, start, end in windows:
        compute_ns = compute.covered(start, end)
        comm_ns = comm.covered(start, end)
        overlap = compute_ns + comm_ns - either.covered(start, end)
        steps.append(RankStep(number, start, end, compute_ns, comm_ns, overlap))
    return kind, RankSteps.from_steps(steps)


def summarize_collectives(analysis: Analysis, label: str, summary: SummaryFigures | None = None) -> RankSummary:
    """The summary of one rank's trace."""
    trace = analysis.trace
    facts = find_collectives(analysis)
    kind, steps = rank_steps(analysis, facts.calls)
    info = _info(analysis)
    first, last = trace.span_ns
    backend = str(info.get("backend", "")) or ("neuron" if trace.device_kind == "neuron" else "")
    # what the load lost or coerced first (a rank cut short by a crash says so, as its
    # own summary would: its collectives and steps end where its file does)
    warnings = [*trace.warnings, *facts.warnings]
    world_size = _whole_int(info.get("world_size"))
    if not facts.calls:
        warnings.append("no collective calls in this trace")
    return RankSummary(
        source=trace.source,
        label=label,
        rank=_whole_int(info.get("rank")),
        world_size=world_size,
        backend=backend,
        device_kind=trace.device_kind,
        compute_kind=kind,
        start_ns=first + trace.origin_ns,
        end_ns=last + trace.origin_ns,
        clock_is_unix=trace.origin_is_unix,
        steps=steps,
        collectives=CollectiveTable.from_calls(facts.calls),
        warnings=warnings,
        summary=summary,
        process_groups=process_groups_of(info, _whole_int(info.get("rank")), world_size),
    )
