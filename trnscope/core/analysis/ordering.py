"""How op and kernel rows are ordered: the one place sort rules live.

Every presenter (``summary`` text/CSV/JSON, merged summaries, the TUI's tables) asks
here, for the order and for which rows a name filter keeps (``rows_matching``).
Op-table sort keys are the catalogue's columns (``columns.SORT_KEYS``).
``descending`` means what it says (names Z→A); each column's natural direction
(numbers largest first, names A→Z) is the default.  Rows without a value (no FLOP
count) come last either way; ties keep the table's own order in both directions
(stable sorts).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from trnscope.core.analysis.columns import COLUMNS_BY_KEY, NAME_SORT, SORT_KEYS, Needs, has_what
from trnscope.core.analysis.opfigures import OpFigures
from trnscope.core.analysis.optable import KernelTable

KERNEL_SORT_COLUMNS = ("total", "calls", "mean", "max", "min", "name")

_MISSING = {
    Needs.DEVICE: "device time",
    Needs.MEMORY: "[memory] records (captured without profile_memory)",
    Needs.DEVICE_MEMORY: "device [memory] records",
    Needs.FLOPS: "FLOP counts (no input shapes of an op PyTorch counts)",
}


def default_op_sort(has_device_time: bool) -> str:
    """Self device time when the trace has any, else self CPU time."""
    return "self_device" if has_device_time else "self_cpu"


def natural_descending(column: str) -> bool:
    return column != NAME_SORT


def check_sort_key(column: str) -> None:
    if column not in SORT_KEYS:
        raise ValueError(f"unknown sort column {column!r}; choose one of {', '.join(SORT_KEYS)}")


def _sorted(values: np.ndarray | Sequence[str], descending: bool) -> np.ndarray:
    if isinstance(values, np.ndarray):
        return np.argsort(-values if descending else values, kind="stable")
    return np.array(sorted(range(len(values)), key=values.__getitem__, reverse=descending), dtype=np.int64)


def order_figures(figures: OpFigures, column: str | None = None, descending: bool | None = None) -> np.ndarray:
    """Row order of an op table's figures for ``column`` (None: the default sort;
    ``descending`` None: the column's natural direction).  A column the figures lack
    (memory or FLOPs not computed, or not in the trace) is refused with the reason."""
    column = column or default_op_sort(figures.has_device_time)
    check_sort_key(column)
    if descending is None:
        descending = natural_descending(column)
    if column == NAME_SORT:
        return _sorted(figures.name, descending)
    spec = COLUMNS_BY_KEY[column]
    if spec.needs not in (Needs.NOTHING, Needs.DEVICE) and not has_what(figures, spec.needs):
        raise ValueError(f"cannot sort by {column}: this trace has no {_MISSING[spec.needs]}")
    values = spec.values(figures).sort_key()
    return _sorted(np.nan_to_num(values, nan=-np.inf if descending else np.inf), descending)


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


def rows_matching(
    pattern: re.Pattern[str],
    names: Sequence[str],
    shapes: Sequence[str] = (),
    stacks: Sequence[str] = (),
    shown: Sequence[str] = (),
) -> np.ndarray:
    """Which rows a name filter (``base.text.user_pattern``: the TUI's ``/``, ``summary
    --match``) keeps: the name as the trace has it, with its input shape and stack
    where the table is grouped by them, or the name as shown (a twin's kind after it:
    "ProfilerStep* (device annotation)")."""
    grouped = bool(shapes) or bool(stacks)
    texts = (
        [f"{n} {s}{t}" for n, s, t in zip(names, shapes or [""] * len(names), stacks or [""] * len(names), strict=True)]
        if grouped
        else names
    )
    shown = shown or names
    return np.fromiter(
        (
            pattern.search(text) is not None or (twin != name and pattern.search(twin) is not None)
            for text, name, twin in zip(texts, names, shown, strict=True)
        ),
        dtype=bool,
        count=len(names),
    )


def kernels_matching(pattern: re.Pattern[str], names: Sequence[str], top_ops: Sequence[str]) -> np.ndarray:
    """Which kernel-table rows a name filter keeps: the device event's name, or the
    op that launched most of its time."""
    return np.fromiter(
        (pattern.search(name) is not None or pattern.search(op) is not None for name, op in zip(names, top_ops)),
        dtype=bool,
        count=len(names),
    )
