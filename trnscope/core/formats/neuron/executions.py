"""NeuronCore executions: one row per run of a model on one logical NeuronCore.

With logical NeuronCores of size 2 (the Trn2 default) every execution has one
``nc_exec_running`` record per physical core; the records that share an execution
(``exec_id``, else ``flow_id``, else overlapping records of one model on one logical
core) are one execution.  Its device time is the **union** of its cores' intervals —
never their sum; its event in the trace starts with its first core and lasts that
union.  The span (first start → last end) and the longest core are kept beside it,
as secondary figures the drill-down shows with their definitions.

Every per-execution figure the readers know lives in one ``Executions`` struct whose
lengths are checked once, when it is made.
"""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np

from trnscope.core.base.arrays import check_lengths
from trnscope.core.base.intervals import union_length


class Executions(msgspec.Struct):
    system_row: np.ndarray  # int64: the representative system-profile row of each execution
    members: list[list[int]]  # system rows of each execution (one per physical core)
    host_start: np.ndarray  # int64 Unix ns, host clock (aligned by sync point where there is one)
    host_end: np.ndarray  # int64: host_start + union
    union: np.ndarray  # int64 ns: the union of its cores' intervals — its device time
    span: np.ndarray  # int64 ns: first core start → last core end
    longest_core: np.ndarray  # int64 ns: the longest single core's interval
    core_intervals: list[dict[int, tuple[int, int]]]  # physical core (-1 unknown) → host (start, end)
    nc_start: np.ndarray  # int64 device clock of the earliest core, -1
    nc_stop: np.ndarray  # int64, -1
    trace_row: np.ndarray  # int64: the execution's row in the trace (-1 until merged)

    def __post_init__(self) -> None:
        check_lengths(self, len(self.system_row))

    def __len__(self) -> int:
        return int(self.system_row.size)

    @property
    def core_busy(self) -> list[dict[int, int]]:
        """Per execution: physical core → ns that core ran it."""
        return [{core: end - start for core, (start, end) in cores.items()} for cores in self.core_intervals]

    @classmethod
    def empty(cls) -> Executions:
        none = np.empty(0, np.int64)
        return cls(none, [], none, none, none, none, none, [], none, none, none)


def executions_from_cores(
    system_rows: list[list[int]],
    cores: list[list[int]],
    starts: list[list[int]],
    ends: list[list[int]],
    nc_start: np.ndarray,
    nc_stop: np.ndarray,
) -> Executions:
    """Executions from their physical-core records: per execution the system rows,
    physical core, host start and end of each record (an execution's records on one
    core are joined)."""
    n = len(system_rows)
    host_start = np.zeros(n, dtype=np.int64)
    union = np.zeros(n, dtype=np.int64)
    span = np.zeros(n, dtype=np.int64)
    longest = np.zeros(n, dtype=np.int64)
    intervals: list[dict[int, tuple[int, int]]] = []
    for i in range(n):
        pieces = sorted(zip(starts[i], ends[i], cores[i]))
        per_core: dict[int, tuple[int, int]] = {}
        for start, end, core in pieces:
            low, high = per_core.get(core, (start, end))
            per_core[core] = (min(low, start), max(high, end))
        intervals.append(per_core)
        host_start[i] = pieces[0][0]
        union[i] = int(union_length([p[0] for p in pieces], [p[1] for p in pieces]))
        span[i] = max(end for _, end, _ in pieces) - pieces[0][0]
        longest[i] = max(end - start for start, end in per_core.values())
    return Executions(
        system_row=np.array([rows[0] for rows in system_rows], dtype=np.int64),
        members=system_rows,
        host_start=host_start,
        host_end=host_start + union,
        union=union,
        span=span,
        longest_core=longest,
        core_intervals=intervals,
        nc_start=nc_start.astype(np.int64),
        nc_stop=nc_stop.astype(np.int64),
        trace_row=np.full(n, -1, dtype=np.int64),
    )


def describe(executions: Executions, index: int) -> dict[str, Any]:
    """The drill-down's figures of one execution, each with its definition."""
    cores = executions.core_intervals[index]
    start = int(executions.host_start[index])
    out: dict[str, Any] = {
        "device time (us, union of its cores)": round(int(executions.union[index]) / 1000, 3),
    }
    if len(cores) > 1 or any(core >= 0 for core in cores):
        out["physical cores (start → end, us from the execution's start)"] = {
            (f"pcore {core}" if core >= 0 else "pcore ?"): f"{(s - start) / 1000:.3f} → {(e - start) / 1000:.3f}"
            for core, (s, e) in sorted(cores.items())
        }
        out["span (us, first core start → last core end)"] = round(int(executions.span[index]) / 1000, 3)
        out["longest core (us)"] = round(int(executions.longest_core[index]) / 1000, 3)
    return out
