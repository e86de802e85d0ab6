"""Check our op table against PyTorch's own ``key_averages()`` figures.

The reference rows come from ``session.json`` (written by ``capture`` while the
profiler was still in memory) or from a test holding the live profiler.
"""

from __future__ import annotations

import msgspec

from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.opfigures import FlopFigures, MemoryFigures
from trnscope.core.analysis.optable import OpTable
from trnscope.core.model.session import ReferenceRow

TOLERANCE_REL = 1e-9  # float summation in key_averages()
TOLERANCE_US = 0.0015  # torch 2.13 writes ns: a nanosecond, and the rounding of the µs float


class Mismatch(msgspec.Struct):
    key: str
    field: str
    ours: float
    theirs: float

    def __str__(self) -> str:
        return f"{self.key}: {self.field} ours={self.ours:g} pytorch={self.theirs:g}"


# reference field → the MemoryFigures column it is checked against
_MEMORY_FIELDS = (
    ("cpu_memory_bytes", "cpu"),
    ("self_cpu_memory_bytes", "self_cpu"),
    ("device_memory_bytes", "device"),
    ("self_device_memory_bytes", "self_device"),
)


def _close(ours: float, theirs: float) -> bool:
    return abs(ours - theirs) <= max(TOLERANCE_US, TOLERANCE_REL * abs(theirs))


class _Ours(msgspec.Struct):
    """Our figures per op-table group, with the optional columns the reference asks for."""

    table: OpTable
    flops: FlopFigures | None
    memory: MemoryFigures | None

    def checks(self, group: int, row: ReferenceRow, device: bool) -> list[tuple[str, float, float, bool]]:
        """(field, ours, PyTorch's, exact) of every figure ``row`` has."""
        table = self.table
        checks = [
            ("calls", float(table.calls[group]), float(row.calls), True),
            ("self_cpu_us", table.self_cpu[group] / 1e3, row.self_cpu_us, False),
            ("cpu_total_us", table.cpu_total[group] / 1e3, row.cpu_total_us, False),
        ]
        if device:
            checks += [
                ("self_device_us", table.self_device[group] / 1e3, row.self_device_us, False),
                ("device_total_us", table.device_total[group] / 1e3, row.device_total_us, False),
            ]
        if row.flops is not None:  # captured with with_flops=True: counts are exact integers
            mine = float(self.flops.flops[group]) if self.flops is not None else 0.0
            checks.append(("flops", mine, float(row.flops), True))
        if row.cpu_memory_bytes is not None:  # captured with profile_memory=True: whole bytes
            for field, column in _MEMORY_FIELDS:
                mine = float(getattr(self.memory, column)[group]) if self.memory is not None else 0.0
                checks.append((field, mine, float(getattr(row, field) or 0), True))
        return checks


def _ours(analysis: Analysis, reference: list[ReferenceRow], by_shape: bool) -> _Ours:
    table = analysis.op_table("shape" if by_shape else "op")
    flops = memory = None
    if any(row.flops is not None for row in reference):
        from trnscope.core.analysis.flops import flops_columns

        flops = flops_columns(analysis, table)
    if any(row.cpu_memory_bytes is not None for row in reference):
        from trnscope.core.analysis.memory import memory_columns

        memory = memory_columns(analysis, table)
    return _Ours(table, flops, memory)


def check_parity(
    analysis: Analysis, reference: list[ReferenceRow], by_shape: bool = False, device: bool = True
) -> list[Mismatch]:
    """Every reference key must exist with equal calls and Self CPU / CPU total (and,
    with ``device``, Self device / device total) to the nanosecond (1.5 ns, plus float
    summation error), and equal FLOPs and memory where the reference has them; and we
    must have no key PyTorch lacks."""
    figures = _ours(analysis, reference, by_shape)
    table = figures.table
    ours: dict[tuple[str, str, bool, bool], int] = {}
    for group in range(len(table)):
        key = (
            table.name[group],
            table.shape[group] if by_shape else "",
            bool(table.is_annotation[group]),
            bool(table.is_device[group]),
        )
        ours[key] = group
    problems: list[Mismatch] = []
    for row in reference:
        key = (row.name, row.input_shapes if by_shape else "", row.is_annotation, row.is_device)
        label = f"{row.name}{' ' + row.input_shapes if by_shape else ''}{' (device)' if row.is_device else ''}"
        if key not in ours:
            problems.append(Mismatch(label, "missing", 0, row.calls))
            continue
        for field, mine, theirs, exact in figures.checks(ours.pop(key), row, device):
            if (mine != theirs) if exact else not _close(mine, theirs):
                problems.append(Mismatch(label, field, mine, theirs))
    for key, group in ours.items():
        problems.append(Mismatch(f"{key[0]}{' ' + key[1] if by_shape else ''}", "extra", float(table.calls[group]), 0))
    return problems
