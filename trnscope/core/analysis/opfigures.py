"""An op table's figures per group, exact and small: what every op-table column is
computed from (``trnscope.core.analysis.columns``), what travels between processes
when ranks are summarised in parallel, and what several traces add up to.

Times are integer nanoseconds, memory bytes and FLOP counts integers; nothing is
rounded until a presenter shows a value, so adding traces up is exact and does not
depend on the order: ``merge_figures([a, b, c])`` equals ``merge_figures([merge_figures([a,
b]), c])`` to the nanosecond.  Averages, shares and FLOP/s are not stored: they are
derived from these sums by the column that shows them.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import numpy as np

from trnscope.core.analysis.optable import KIND_NAMES, OpTable
from trnscope.core.base.arrays import equals_any
from trnscope.core.model.roles import Role


class MemoryFigures(msgspec.Struct):
    """key_averages(profile_memory=True) per group: bytes allocated minus freed."""

    cpu: np.ndarray  # int64, the op and its children
    self_cpu: np.ndarray
    device: np.ndarray
    self_device: np.ndarray


class FlopFigures(msgspec.Struct):
    """key_averages(with_flops=True) per group."""

    flops: np.ndarray  # int64 (object of Python ints past int64): sum over instances with a count
    counted: np.ndarray  # bool: some instance has a count
    complete: np.ndarray  # bool: every instance has one (FLOP/s is defined only then)


class OpFigures(msgspec.Struct):
    """One row per group of an op table (``key_averages()``'s rows)."""

    group_by: str  # op | shape | stack
    device_label: str  # CUDA, HIP, NEURON, …
    name: list[str]
    shape: list[str]  # "" unless grouped by shape
    stack: list[str]  # "" unless grouped by stack
    role: np.ndarray  # uint8 Role of the group's events
    calls: np.ndarray  # int64
    self_cpu: np.ndarray  # int64 ns
    cpu_total: np.ndarray
    self_device: np.ndarray
    device_total: np.ndarray
    total_self_cpu: int  # ns, every row's self CPU time
    total_self_device: int  # ns of device work (kernels, copies; device annotations excluded)
    device_share_base: int  # ns: what "Self <device> %" is a share of (every device row's self time)
    memory: MemoryFigures | None = None  # None: not computed, or the trace has no [memory] records
    flops: FlopFigures | None = None  # None: not computed, or no shapes of an op PyTorch counts

    def __len__(self) -> int:
        return len(self.name)

    def kind(self, group: int) -> str:
        return KIND_NAMES.get(int(self.role[group]), "other")

    @property
    def is_device(self) -> np.ndarray:
        return equals_any(self.role, (Role.KERNEL, Role.MEMORY, Role.DEVICE_ANNOTATION))

    @property
    def has_device_time(self) -> bool:
        return self.total_self_device > 0 or bool(self.device_total.any())


def figures_of(table: OpTable, memory: MemoryFigures | None = None, flops: FlopFigures | None = None) -> OpFigures:
    """The table's figures (its arrays, not copies) with the extra columns that were computed."""
    return OpFigures(
        group_by=table.group_by,
        device_label=table.device_label,
        name=table.name,
        shape=table.shape,
        stack=table.stack,
        role=table.role,
        calls=table.calls,
        self_cpu=table.self_cpu,
        cpu_total=table.cpu_total,
        self_device=table.self_device,
        device_total=table.device_total,
        total_self_cpu=table.total_self_cpu,
        total_self_device=table.total_self_device,
        device_share_base=table.device_share_base,
        memory=memory,
        flops=flops,
    )


_SUMMED = ("calls", "self_cpu", "cpu_total", "self_device", "device_total")


def _exact_sum(target_size: int, index: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Values added up per target slot: int64 when the total cannot overflow, else
    Python integers (an object array), as PyTorch sums them."""
    magnitude = float(np.abs(values.astype(np.float64)).sum()) if values.size else 0.0
    if values.dtype != object and magnitude < 2**62:
        out = np.zeros(target_size, dtype=np.int64)
        np.add.at(out, index, values.astype(np.int64))
        return out
    exact = [0] * target_size
    for slot, value in zip(index.tolist(), values.tolist()):
        exact[slot] += int(value)
    return np.array(exact, dtype=object)


def merge_figures(parts: Sequence[OpFigures]) -> OpFigures:  # noqa: C901 - one exact sum per figure family (time, memory, FLOPs)
    """Rows with the same (name, kind, shape, stack) added up; every sum exact.

    Memory: summed over the traces that have [memory] records (None when none has).
    FLOPs: summed; a group is counted when it is in any trace, complete only when it
    is complete in every trace that holds it (a trace without shapes makes it
    incomplete, so FLOP/s is not shown for it)."""
    if not parts:
        raise ValueError("nothing to merge")
    if len({p.group_by for p in parts}) > 1:
        raise ValueError("cannot merge op tables grouped differently")
    slots: dict[tuple[str, int, str, str], int] = {}
    indices: list[np.ndarray] = []
    for part in parts:
        index = np.empty(len(part), dtype=np.int64)
        for g, key in enumerate(zip(part.name, part.role.tolist(), part.shape, part.stack)):
            index[g] = slots.setdefault(key, len(slots))
        indices.append(index)
    size = len(slots)
    keys = list(slots)
    first = parts[0]

    def summed(field: str) -> np.ndarray:
        if size == 0:
            return np.zeros(0, dtype=np.int64)
        return _exact_sum(size, np.concatenate(indices), np.concatenate([getattr(p, field) for p in parts]))

    memory = None
    with_memory = [(p.memory, i) for p, i in zip(parts, indices) if p.memory is not None]
    if with_memory:
        index = np.concatenate([i for _, i in with_memory])
        memory = MemoryFigures(
            *[
                _exact_sum(size, index, np.concatenate([getattr(m, f) for m, _ in with_memory]))
                for f in MemoryFigures.__struct_fields__
            ]
        )
    flops = None
    if any(p.flops is not None for p in parts):
        counts: list[np.ndarray] = []
        counted = np.zeros(size, dtype=bool)
        complete = np.ones(size, dtype=bool)
        for part, index in zip(parts, indices):
            if part.flops is None:
                complete[index] = False
                counts.append(np.zeros(len(part), dtype=np.int64))
                continue
            counts.append(part.flops.flops)
            counted[index[part.flops.counted]] = True
            complete[index[~part.flops.complete]] = False
        flops = FlopFigures(
            _exact_sum(size, np.concatenate(indices), np.concatenate(counts)) if size else np.zeros(0, np.int64),
            counted,
            complete & counted,
        )
    return OpFigures(
        group_by=first.group_by,
        device_label=first.device_label,
        name=[k[0] for k in keys],
        shape=[k[2] for k in keys],
        stack=[k[3] for k in keys],
        role=np.array([k[1] for k in keys], dtype=np.uint8),
        **{field: summed(field) for field in _SUMMED},
        total_self_cpu=sum(p.total_self_cpu for p in parts),
        total_self_device=sum(p.total_self_device for p in parts),
        device_share_base=sum(p.device_share_base for p in parts),
        memory=memory,
        flops=flops,
    )
