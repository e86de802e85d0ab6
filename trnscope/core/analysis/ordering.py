"""How op and kernel rows are ordered: the one place sort rules live.

Every presenter (``summary`` text/CSV/JSON, merged summaries, the TUI's tables) asks
here.  ``descending`` means what it says (names Z→A); each column's natural direction
(``natural_descending``: numbers largest first, names A→Z) is the default.  Ties keep
the table's own order in both directions (stable sorts).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from trnscope.core.analysis.optable import KernelTable, OpTable

if TYPE_CHECKING:
    from trnscope.core.analysis.flops import FlopsColumns
    from trnscope.core.analysis.memory import MemoryColumns

OP_SORT_COLUMNS = ("self_cpu", "cpu_total", "cpu_avg", "self_device", "device_total", "device_avg", "calls", "name")
# columns a trace has only sometimes (key_averages' sort_by="flops", "cpu_memory_usage", …)
EXTRA_SORT_COLUMNS = ("flops", "flops_per_s", "cpu_memory", "self_cpu_memory", "device_memory", "self_device_memory")


def extra_sort_values(memory: MemoryColumns | None, flops: FlopsColumns | None) -> dict[str, np.ndarray]:
    """The extra columns this op table has, by sort name (none when the trace lacks
    them)."""
    out: dict[str, np.ndarray] = {}
    if flops is not None:
        out["flops"] = np.asarray(flops.flops, dtype=np.float64)
        out["flops_per_s"] = np.asarray(flops.per_second, dtype=np.float64)
    if memory is not None:
        out["cpu_memory"] = memory.cpu
        out["self_cpu_memory"] = memory.self_cpu
        out["device_memory"] = memory.device
        out["self_device_memory"] = memory.self_device
    return out


KERNEL_SORT_COLUMNS = ("total", "calls", "mean", "max", "min", "name")


def default_op_sort(has_device_time: bool) -> str:
    """Self device time when the trace has any, else self CPU time."""
    return "self_device" if has_device_time else "self_cpu"


def default_op_sort_of(table: OpTable) -> str:
    return default_op_sort(table.total_self_device > 0)


def op_sort_values(
    column: str,
    *,
    calls: np.ndarray,
    self_cpu: np.ndarray,
    cpu_total: np.ndarray,
    self_device: np.ndarray,
    device_total: np.ndarray,
) -> np.ndarray:
    """The numbers ``column`` sorts by (averages are per call)."""
    per_call = np.maximum(np.asarray(calls, dtype=np.float64), 1.0)
    values = {
        "self_cpu": self_cpu,
        "cpu_total": cpu_total,
        "cpu_avg": np.asarray(cpu_total, dtype=np.float64) / per_call,
        "self_device": self_device,
        "device_total": device_total,
        "device_avg": np.asarray(device_total, dtype=np.float64) / per_call,
        "calls": calls,
    }
    if column not in values:
        raise ValueError(
            f"unknown sort column {column!r}; choose one of {', '.join(OP_SORT_COLUMNS + EXTRA_SORT_COLUMNS)}"
        )
    return np.asarray(values[column], dtype=np.float64)


def natural_descending(column: str) -> bool:
    return column != "name"


def _sorted(values: np.ndarray | Sequence[str], descending: bool) -> np.ndarray:
    if isinstance(values, np.ndarray):
        return np.argsort(-values if descending else values, kind="stable")
    return np.array(sorted(range(len(values)), key=values.__getitem__, reverse=descending), dtype=np.int64)


def order_ops(
    column: str,
    *,
    names: Sequence[str],
    calls: np.ndarray,
    self_cpu: np.ndarray,
    cpu_total: np.ndarray,
    self_device: np.ndarray,
    device_total: np.ndarray,
    descending: bool | None = None,
    extra: Mapping[str, np.ndarray] | None = None,
) -> np.ndarray:
    """Row order for ``column`` (``descending`` None: the column's natural direction;
    ``extra``: the memory / FLOPs columns the table has, see ``extra_sort_values``).
    Rows without a value (NaN FLOP/s) come last either way."""
    if descending is None:
        descending = natural_descending(column)
    if column == "name":
        return _sorted(names, descending)
    if column in EXTRA_SORT_COLUMNS:
        if extra is None or column not in extra:
            what = (
                "FLOP counts (no input shapes of an op PyTorch counts)"
                if column.startswith("flops")
                else "[memory] records (captured without profile_memory)"
            )
            raise ValueError(f"cannot sort by {column}: this trace has no {what}")
        values = np.asarray(extra[column], dtype=np.float64)
        return _sorted(np.nan_to_num(values, nan=-np.inf if descending else np.inf), descending)
    values = op_sort_values(
        column, calls=calls, self_cpu=self_cpu, cpu_total=cpu_total, self_device=self_device, device_total=device_total
    )
    return _sorted(values, descending)


def op_table_order(
    table: OpTable,
    column: str | None = None,
    descending: bool | None = None,
    extra: Mapping[str, np.ndarray] | None = None,
) -> np.ndarray:
    """Row order of an op table (``column`` None: the default sort)."""
    return order_ops(
        column or default_op_sort_of(table),
        names=table.name,
        calls=table.calls,
        self_cpu=table.self_cpu,
        cpu_total=table.cpu_total,
        self_device=table.self_device,
        device_total=table.device_total,
        descending=descending,
        extra=extra,
    )


def kernel_table_order(table: KernelTable, column: str | None = None, descending: bool | None = None) -> np.ndarray:
    """Row order of a kernel table: ``total`` device time unless another column is named."""
    column = column if column in KERNEL_SORT_COLUMNS else "total"
    if descending is None:
        descending = natural_descending(column)
    if column == "name":
        return _sorted(table.name, descending)
    values = {
        "total": table.total,
        "calls": table.calls,
        "mean": table.mean,
        "max": table.maximum,
        "min": table.minimum,
    }[column]
    return _sorted(np.asarray(values, dtype=np.float64), descending)
