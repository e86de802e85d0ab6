"""Memory per op, as ``key_averages()`` counts it with ``profile_memory=True``.

PyTorch (``torch.autograd.profiler._parse_kineto_results``) charges each ``[memory]``
record — an allocation (+bytes) or a free (−bytes) — to every host event whose
interval holds its timestamp, ends included, on any thread: that is an event's
``cpu_memory_usage`` (CPU, MKLDNN and IDEEP records) or ``device_memory_usage``
(CUDA, HIP and PrivateUse1 records).  Its self figure is that minus its children's.
Records inside no event become rows of their own, named ``[memory]``.

The trace keeps the bytes in each record's ``args``; they are read lazily (only the
``[memory]`` rows), and only when a trace has such records.
"""

from __future__ import annotations

import msgspec
import numpy as np

from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.opfigures import MemoryFigures
from trnscope.core.analysis.optable import OpTable, RowGroups
from trnscope.core.analysis.table_cache import PerAnalysisCache, PerTableCache
from trnscope.core.base.arrays import equals_any
from trnscope.core.formats.kineto.lazyargs import raw_args_by_chunk
from trnscope.core.model.roles import Role

MEMORY_EVENT = "[memory]"
_CPU_TYPES = frozenset({0, 2, 5})  # c10 DeviceType CPU, MKLDNN, IDEEP
_DEVICE_TYPES = frozenset({1, 6, 20})  # CUDA, HIP, PrivateUse1


class MemoryPerRow(msgspec.Struct):
    """The four figures of the host events with any that is not 0, aligned with ``rows``
    (every other row has four zeros).  Kept per analysis: as four columns of every trace
    row they held 92 MB at 2.9 M events, for the fifth of the rows or fewer that tables
    sum."""

    rows: np.ndarray  # int64 trace rows, ascending
    cpu: np.ndarray  # int64 bytes (host events), inclusive of children
    device: np.ndarray
    self_cpu: np.ndarray
    self_device: np.ndarray
    unmatched_cpu: int  # records inside no event: the "[memory]" row
    unmatched_device: int
    records: int

    def of_row(self, row: int) -> tuple[int, int, int, int]:
        """One trace row's CPU, device, self CPU and self device bytes."""
        at = int(np.searchsorted(self.rows, row))
        if at == self.rows.size or self.rows[at] != row:
            return 0, 0, 0, 0
        return int(self.cpu[at]), int(self.device[at]), int(self.self_cpu[at]), int(self.self_device[at])


class _MemoryArgs(msgspec.Struct):
    """The two keys of a [memory] record's args that matter (the rest is skipped)."""

    size: int | None = msgspec.field(default=None, name="Bytes")
    device_type: int | None = msgspec.field(default=None, name="Device Type")


_MEMORY_ARGS = msgspec.json.Decoder(_MemoryArgs)
_INT64 = (-(2**63), 2**63 - 1)


def _int64_or_none(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and _INT64[0] <= value <= _INT64[1]:
        return value
    return None


def _bytes_and_device(raw: msgspec.Raw) -> tuple[int | None, int | None]:
    """Bytes and device type of one record; a value of another type (or past int64)
    counts as missing."""
    try:
        args = _MEMORY_ARGS.decode(raw)
        return _int64_or_none(args.size), _int64_or_none(args.device_type)
    except (msgspec.ValidationError, msgspec.DecodeError):  # a value of another type: read leniently
        try:
            loose = msgspec.json.decode(raw)
        except (msgspec.DecodeError, RecursionError):
            return None, None
        if not isinstance(loose, dict):
            return None, None
        return _int64_or_none(loose.get("Bytes")), _int64_or_none(loose.get("Device Type"))


def has_memory_records(analysis: Analysis) -> bool:
    names = analysis.trace.names
    return MEMORY_EVENT in names


_per_analysis: PerAnalysisCache[MemoryPerRow | None] = PerAnalysisCache()


def memory_of(analysis: Analysis) -> MemoryPerRow | None:
    """``memory_per_row`` once per analysis (the TUI asks on every table rebuild)."""
    return _per_analysis.get(analysis, memory_per_row)


class MemoryRecords(msgspec.Struct):
    """What the [memory] records' args hold (the slow part: every record is read);
    kept in the index cache, so a cached reopen never reads them again."""

    rows: np.ndarray  # int64 trace rows of the records
    size: np.ndarray  # int64 bytes (+ allocated, − freed; 0 when missing)
    device_type: np.ndarray  # int64 c10 DeviceType, -1 when missing


_records: PerAnalysisCache[MemoryRecords | None] = PerAnalysisCache()


def memory_records(analysis: Analysis) -> MemoryRecords | None:
    """The records' bytes and device types, read once per analysis."""
    return _records.get(analysis, _read_records)


def seed_memory_records(analysis: Analysis, records: MemoryRecords | None) -> None:
    """What an earlier open read (the index cache)."""
    _records.seed(analysis, records)


def _read_records(analysis: Analysis) -> MemoryRecords | None:
    trace = analysis.trace
    if not has_memory_records(analysis):
        return None
    ev = trace.events
    name_id = trace.names.index(MEMORY_EVENT)
    records = np.flatnonzero(ev.name == name_id)
    size = np.zeros(records.size, dtype=np.int64)
    kind = np.full(records.size, -1, dtype=np.int64)
    for batch in raw_args_by_chunk(trace, records):  # one chunk's text at a time
        for k, raw in batch:
            record_bytes, record_device = _bytes_and_device(raw)
            if record_bytes is not None:
                size[k] = record_bytes
            if record_device is not None:
                kind[k] = record_device
    return MemoryRecords(records, size, kind)


def memory_per_row(analysis: Analysis) -> MemoryPerRow | None:
    read = memory_records(analysis)
    if read is None:
        return None
    trace = analysis.trace
    ev = trace.events
    records, size, kind = read.rows, read.size, read.device_type
    is_cpu = np.isin(kind, list(_CPU_TYPES))
    is_device = np.isin(kind, list(_DEVICE_TYPES))
    order = np.argsort(ev.ts[records], kind="stable")
    times = ev.ts[records][order]
    prefix_cpu = np.r_[0, np.cumsum(np.where(is_cpu, size, 0)[order])]
    prefix_dev = np.r_[0, np.cumsum(np.where(is_device, size, 0)[order])]
    host = np.flatnonzero(
        analysis.links.in_op_tree & equals_any(ev.role, (Role.OP, Role.ANNOTATION, Role.PYTHON)) & (ev.dur >= 0)
    )
    lo = np.searchsorted(times, ev.ts[host], side="left")
    hi = np.searchsorted(times, ev.ts[host] + ev.dur[host], side="right")  # both ends included
    n = len(ev)
    cpu = np.zeros(n, dtype=np.int64)
    device = np.zeros(n, dtype=np.int64)
    cpu[host] = prefix_cpu[hi] - prefix_cpu[lo]
    device[host] = prefix_dev[hi] - prefix_dev[lo]
    # self = own − children's (the op tree PyTorch's self times use)
    parent = analysis.links.parent
    children = host[parent[host] >= 0]
    child_cpu = np.zeros(n, dtype=np.int64)
    child_dev = np.zeros(n, dtype=np.int64)
    np.add.at(child_cpu, parent[children], cpu[children])
    np.add.at(child_dev, parent[children], device[children])
    # records inside no host event at all
    covered = np.zeros(times.size + 1, dtype=np.int64)
    np.add.at(covered, lo, 1)
    np.add.at(covered, hi, -1)
    inside = np.cumsum(covered)[:-1] > 0
    sizes = size[order]
    self_cpu = np.subtract(cpu, child_cpu, out=child_cpu)  # in place: two trace-long arrays fewer
    self_device = np.subtract(device, child_dev, out=child_dev)
    rows = np.flatnonzero((cpu != 0) | (device != 0) | (self_cpu != 0) | (self_device != 0))
    return MemoryPerRow(
        rows=rows,
        cpu=cpu[rows],
        device=device[rows],
        self_cpu=self_cpu[rows],
        self_device=self_device[rows],
        unmatched_cpu=int(sizes[~inside & is_cpu[order]].sum()),
        unmatched_device=int(sizes[~inside & is_device[order]].sum()),
        records=int(records.size),
    )


_per_table: PerTableCache[MemoryFigures | None] = PerTableCache()


def memory_columns_ready(analysis: Analysis) -> bool:
    """``memory_columns`` of any table would return after no more than a sum over the
    rows with memory (tens of milliseconds at 2.9 M events): the figures per row are
    known.  Until then a screen shows its table first and the columns after (reading
    every record's bytes takes seconds on a large trace)."""
    return _per_analysis.known(analysis)


def memory_columns(analysis: Analysis, table: OpTable, groups: RowGroups | None = None) -> MemoryFigures | None:
    """Per op-table group: CPU Mem, Self CPU Mem, device Mem, Self device Mem (once per
    table).  ``groups``: the table's row groups, shared with its FLOPs columns."""
    return _per_table.get(
        analysis,
        table,
        lambda: _memory_columns(analysis, table, groups or table.row_groups(len(analysis.trace.events))),
    )


def _memory_columns(analysis: Analysis, table: OpTable, groups: RowGroups) -> MemoryFigures | None:
    per_row = memory_of(analysis)
    if per_row is None:
        return None
    # only the rows with a figure: a fifth of the rows or fewer on real traces
    group = groups()[per_row.rows]
    inside = group >= 0
    everywhere = bool(inside.all())
    group = group if everywhere else group[inside]

    def per_group(source: np.ndarray) -> np.ndarray:
        sums = np.zeros(len(table), dtype=np.int64)
        np.add.at(sums, group, source if everywhere else source[inside])  # whole bytes: exact
        return np.where(table.is_device, 0, sums)

    out = [
        per_group(per_row.cpu),
        per_group(per_row.self_cpu),
        per_group(per_row.device),
        per_group(per_row.self_device),
    ]
    own = [g for g in range(len(table)) if table.name[g] == MEMORY_EVENT]
    for g in own:  # the records inside no event
        out[0][g] = out[1][g] = per_row.unmatched_cpu
        out[2][g] = out[3][g] = per_row.unmatched_device
    return MemoryFigures(*out)
