"""Table models for the explorer: op table, kernel table, instances, chain, compare.

Each builder turns a core result into a ``TableModel`` (columns + a cell function that
formats only the rows being drawn).  ``op_order`` / ``kernel_order`` compute the
display permutation for a sort and filter; they are pure numpy/regex work, run by
the screens in thread workers.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
from rich.text import Text

from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.chain_model import Chain, context_summary
from trnscope.core.analysis.columns import COLUMNS_BY_KEY, NAME_SORT, OP_COLUMNS, SORT_KEYS, Unit, Values, has_what
from trnscope.core.analysis.compare import CompareRow, Comparison
from trnscope.core.analysis.opfigures import FlopFigures, MemoryFigures, OpFigures, figures_of
from trnscope.core.analysis.optable import KernelTable, OpTable
from trnscope.core.analysis.ordering import (
    KERNEL_SORT_COLUMNS,
    default_op_sort,
    kernel_table_order,
    kernels_matching,
    order_figures,
    rows_matching,
)
from trnscope.core.analysis.row_labels import distinct_names
from trnscope.core.base.arrays import equals_any, stable_argsort
from trnscope.core.base.text import cell_width, safe_text, user_pattern
from trnscope.core.base.units import fit_bytes, fit_count, fit_ratio, fit_si, fit_time_short
from trnscope.core.model.roles import Role
from trnscope.tui.vtable import Column, TableModel

BAR_CHARS = " ▏▎▍▌▋▊▉█"
KIND_STYLE = {
    "python": "dim",
    "annotation": "italic",
    "runtime": "",
    "driver": "",
    "kernel": "bold",
    "memory": "bold",
    "device_annotation": "italic dim",
}
LAYER_STYLE = {"framework": "", "runtime": "cyan", "device": "green"}


def bar(fraction: float, width: int) -> str:
    fraction = max(0.0, min(1.0, fraction))
    eighths = round(fraction * width * 8)
    full, part = divmod(eighths, 8)
    text = "█" * full + (BAR_CHARS[part] if part and full < width else "")
    return text.ljust(width)


@dataclass
class OpViewState:
    mode: str = "ops"  # "ops" | "kernels"
    group_by: str = "op"
    sort_key: str = ""
    descending: bool = True
    filter_text: str = ""
    hide_python: bool = False
    hide_annotations: bool = False
    step: int = -1
    columns: dict[str, bool] = field(default_factory=dict)  # the column chooser's overrides: key → shown


RATIO_INTERVAL_WIDTH = 22  # ×0.499 [0.492–0.506], fewer decimals past ×10
RATIO_WIDTH = 8  # a comparison's B÷A: 0.00001x, 123.45x and 1.2Mx fit whole
KERNEL_SORT_KEYS = KERNEL_SORT_COLUMNS


def compile_filter(text: str) -> re.Pattern[str] | None:
    return user_pattern(text)


def op_figures(table: OpTable, extras: OpExtras | None = None) -> OpFigures:
    memory, flops = extras if extras is not None else NO_EXTRAS
    return figures_of(table, memory, flops)


def default_sort_of(table: OpTable) -> str:
    return default_op_sort(op_figures(table).has_device_time)


def op_sort_keys(table: OpTable, extras: OpExtras | None = None) -> list[str]:
    """What ``s`` cycles through: the columns this table has, left to right, then the name."""
    figures = op_figures(table, extras)
    return [c.key for c in OP_COLUMNS if c.sortable and has_what(figures, c.needs)] + [NAME_SORT]


def shown_names(table: OpTable | KernelTable) -> list[str]:
    """What a screen shows as each row's name: an op table's names carry a row's kind
    where another row shares its name (``OpTable.shown_name``); a kernel table has one
    row per name already."""
    return table.shown_name if isinstance(table, OpTable) else table.name


def op_order(table: OpTable, state: OpViewState, extras: OpExtras | None = None) -> np.ndarray:
    """Display order: the core's sort (``trnscope.core.analysis.ordering``), then the
    screen's filters (hidden kinds, the name regex).  A sort by a memory or FLOPs
    column needs ``extras``; without them (not computed yet) the default sort."""
    mask = np.ones(len(table), dtype=bool)
    if state.hide_python:
        mask &= table.role != int(Role.PYTHON)
    if state.hide_annotations:
        mask &= ~equals_any(table.role, (Role.ANNOTATION, Role.DEVICE_ANNOTATION))
    pattern = compile_filter(state.filter_text)
    if pattern is not None:
        grouped = table.group_by != "op"
        mask &= rows_matching(
            pattern,
            table.name,
            table.shape if grouped else (),
            table.stack if grouped else (),
            table.shown_name,
        )
    figures = op_figures(table, extras)
    key = state.sort_key or default_op_sort(figures.has_device_time)
    column = COLUMNS_BY_KEY.get(key)
    if key not in SORT_KEYS or (column is not None and column.extra and not has_what(figures, column.needs)):
        key = default_op_sort(figures.has_device_time)
    order = order_figures(figures, key, state.descending)
    return order[mask[order]]


def kernel_order(table: KernelTable, state: OpViewState) -> np.ndarray:
    """Display order: the core's sort, then the name/op regex filter."""
    mask = np.ones(len(table), dtype=bool)
    pattern = compile_filter(state.filter_text)
    if pattern is not None:
        mask &= kernels_matching(pattern, table.name, table.top_op)
    order = kernel_table_order(table, state.sort_key, state.descending)
    return order[mask[order]]


class OpExtras(NamedTuple):
    """Columns the trace has only sometimes: memory ([memory] records) and FLOPs
    (input shapes of ops PyTorch counts)."""

    memory: MemoryFigures | None = None
    flops: FlopFigures | None = None


NO_EXTRAS = OpExtras()


def op_columns(table: OpTable, width: int, extras: OpExtras = NO_EXTRAS) -> list[tuple[str, Column, bool]]:
    """Every column the op table can show (the catalogue's columns this table has), in
    order, and whether the width shows it by default (the share bar from 96 columns,
    the catalogue's "wide" columns from 130).  The column chooser overrides either way."""
    figures = op_figures(table, extras)
    wide = width >= 130
    out: list[tuple[str, Column, bool]] = []
    if table.group_by == "shape":
        out.append(("shape", Column("shape", "Input shapes", 18 if wide else 12, "left", flex=True), True))
    if table.group_by == "stack":
        out.append(("stack", Column("stack", "Stack", 30 if wide else 14, "left", flex=True), True))
    for column in OP_COLUMNS:
        if has_what(figures, column.needs):
            shown = column.tui_shown == "always" or (column.tui_shown == "wide" and wide)
            out.append((column.key, Column(column.key, column.tui_header(table.device_label), column.tui_width), shown))
    out.append(("share", Column("share", "share", 8 if wide else 6, "left"), width >= 96))
    return out


def _cell(unit: Unit, values: Values, group: int, width: int) -> str:
    if not values.has(group):
        return ""
    value = values.values[group]
    if unit is Unit.COUNT:
        return fit_count(int(value), width)
    if unit is Unit.NS:
        return fit_time_short(float(value), width)
    if unit is Unit.PERCENT:
        return f"{float(value):5.1f}%"
    if unit is Unit.BYTES:
        return fit_bytes(int(value), width)
    return fit_si(float(value), width)  # FLOPs, FLOP/s


def op_model(  # noqa: C901 - one cell per kind of op-table column
    table: OpTable, order: np.ndarray, state: OpViewState, width: int, extras: OpExtras = NO_EXTRAS
) -> TableModel:
    figures = op_figures(table, extras)
    has_device = figures.has_device_time
    sort_key = state.sort_key or default_op_sort(has_device)
    columns = [Column("name", "Name", 16, "left", flex=True)]
    for key, column, shown_by_width in op_columns(table, width, extras):
        if state.columns.get(key, shown_by_width):
            columns.append(column)
    values = {c.key: c.values(figures) for c in OP_COLUMNS if any(c.key == shown.key for shown in columns)}
    share_column = (
        sort_key
        if sort_key in ("self_device", "device_total", "self_cpu", "cpu_total")
        else ("self_device" if has_device else "self_cpu")
    )
    share_values = getattr(table, share_column)
    share_max = max(int(np.max(share_values)) if len(table) else 1, 1)

    def cells(g: int) -> list[str | Text]:
        out: list[str | Text] = []
        for column in columns:
            key = column.key
            if key == "name":
                out.append(Text(table.shown_name[g], style=KIND_STYLE.get(table.kind(g), "")))
            elif key == "shape":
                out.append(table.shape[g])
            elif key == "stack":
                out.append(table.stack[g])
            elif key == "share":
                out.append(
                    Text(
                        bar(float(share_values[g]) / share_max, column.width),
                        style="green" if share_column.startswith(("self_device", "device")) else "yellow",
                    )
                )
            else:
                out.append(_cell(COLUMNS_BY_KEY[key].unit, values[key], g, column.width))
        return out

    names: dict[str, Callable[[int], str]] = {"name": lambda g: table.shown_name[g]}
    for key in ("shape", "stack"):
        if any(c.key == key for c in columns):
            names[key] = (lambda g: table.shape[g]) if key == "shape" else (lambda g: table.stack[g])
    # the cells depend on the table, the columns shown and their widths, which extra
    # columns are known, and which column the share bar follows (not on the order or
    # the filter: a filter keystroke keeps the rows already rendered)
    cells_key = (
        "ops",
        id(table),
        tuple((c.key, c.width) for c in columns),
        extras.memory is not None,
        extras.flops is not None,
        share_column,
    )
    return TableModel(
        columns,
        len(table),
        cells,
        order=order,
        sort_key=sort_key,
        sort_descending=state.descending,
        names=names,
        cells_key=cells_key,
    )


def kernel_model(table: KernelTable, order: np.ndarray, state: OpViewState, width: int) -> TableModel:  # noqa: C901 - one cell per column of the kernel table
    wide = width >= 130
    columns = [
        Column("name", "Device event", 16, "left", flex=True),
        Column("calls", "Calls", 7),
        Column("total", "Total", 8),
        Column("mean", "Mean", 8),
    ]
    if wide:
        columns += [Column("min", "Min", 8), Column("max", "Max", 8)]
    columns.append(Column("op", "Launched by", 22 if wide else 14, "left"))
    total = max(int(table.total.sum()), 1)
    if width >= 96:
        columns.append(Column("share", "share", 8 if wide else 6, "left"))
    mean = table.mean

    def cells(k: int) -> list[str | Text]:
        out: list[str | Text] = []
        for column in columns:
            key = column.key
            if key == "name":
                out.append(table.name[k])
            elif key == "calls":
                out.append(fit_count(int(table.calls[k]), column.width))
            elif key == "total":
                out.append(fit_time_short(table.total[k], column.width))
            elif key == "mean":
                out.append(fit_time_short(mean[k], column.width))
            elif key == "min":
                out.append(fit_time_short(table.minimum[k], column.width))
            elif key == "max":
                out.append(fit_time_short(table.maximum[k], column.width))
            elif key == "op":
                out.append(Text(table.top_op[k] or "— unlinked", style="" if table.top_op[k] else "dim"))
            elif key == "share":
                out.append(Text(bar(float(table.total[k]) / total, column.width), style="green"))
        return out

    key = state.sort_key if state.sort_key in KERNEL_SORT_KEYS else "total"
    return TableModel(
        columns,
        len(table),
        cells,
        order=order,
        sort_key=key,
        sort_descending=state.descending,
        # the op that launched most of a kernel: two ops that share a head
        # (aten::_flash_attention_forward / _backward) read alike cut at the end
        names={"name": lambda g: table.name[g], "op": lambda g: table.top_op[g] or "— unlinked"},
        cells_key=("kernels", id(table), tuple((c.key, c.width) for c in columns)),
    )


def time_ranks(analysis: Analysis, rows: np.ndarray) -> np.ndarray:
    """Each instance's number: #0 is the first in time (the # column, the drill-down's
    title and ``chain --instance`` count alike)."""
    rank = np.empty(rows.size, dtype=np.int64)
    rank[np.argsort(analysis.trace.events.ts[rows], kind="stable")] = np.arange(rows.size)
    return rank


def instances_model(
    analysis: Analysis, rows: np.ndarray, order: np.ndarray, sort_key: str, time_rank: np.ndarray
) -> TableModel:
    """``time_rank``: ``time_ranks(analysis, rows)``, which the caller keeps (a sort of
    every instance: 0.3 ms for 351,722 that come in time order, as an op's instances
    do in a trace written in time order, 30 ms for as many in random order)."""
    ev = analysis.trace.events
    times = analysis.times
    origin = analysis.span_ns[0]
    columns = [
        Column("n", "#", 6),
        Column("start", "Start", 9),
        Column("dur", "Duration", 9),
        Column("self_cpu", "Self CPU", 9),
        Column("device", "Device", 9),
        Column("thread", "Thread", 12, "left", flex=True),
    ]

    def cells(i: int) -> list[str | Text]:
        r = int(rows[i])
        device = int(times.device_total[r])
        return [
            str(int(time_rank[i])),
            fit_time_short(int(ev.ts[r]) - origin, 9),
            fit_time_short(max(int(ev.dur[r]), 0), 9),
            fit_time_short(int(times.self_cpu[r]), 9),
            fit_time_short(device, 9) if device else "",
            analysis.trace.threads[int(ev.thread[r])].display,
        ]

    return TableModel(
        columns,
        int(rows.size),
        cells,
        order=order,
        sort_key=sort_key,
        sort_descending=sort_key == "dur",
        cells_key=("instances", id(rows), id(time_rank)),  # sorting them again keeps their rows
    )


def instance_order(analysis: Analysis, rows: np.ndarray, by: str, time_rank: np.ndarray) -> np.ndarray:
    """The instances by duration (longest first) or by time; by time is the inverse of
    ``time_ranks`` (no second sort: up to 30 ms for 351,722 instances)."""
    if by == "dur":
        return stable_argsort(analysis.trace.events.dur[rows], descending=True)
    order = np.empty(time_rank.size, dtype=np.int64)
    order[time_rank] = np.arange(time_rank.size)
    return order


def chain_model(chain: Chain, shown: list[int] | None = None) -> TableModel:
    """The chain's hops, one a row (``shown``: the hops on rows, -1 for the folded
    context).  Not fitted to a width: the table lays the columns out for the width it
    has, so the pane can show a chain before its first layout."""
    shown = shown if shown is not None else list(range(len(chain.hops)))
    summary = context_summary(chain)
    # with the context folded, indent from the op: its nesting under 30 frames is one line up
    base = chain.hops[shown[1]].depth if shown and shown[0] < 0 and len(shown) > 1 else 0
    columns = [
        Column("start", "Start", 10),
        Column("dur", "Duration", 10),
        Column("layer", "Layer", 9, "left"),
        Column("hop", "Hop", 20, "left", flex=True),
        # where each hop ran, in a table 120 cells wide or more (its scroll bar's column
        # aside): in a narrower one the hops' names have the room
        Column("where", "Thread / stream", 24, "left", shown_from=_WIDE_CHAIN - 1),
    ]

    def cells(i: int) -> list[str | Text]:
        if shown[i] < 0:
            return [
                "",
                "",
                Text("context", style="dim"),
                Text("▸ (e) " + summary, style="dim italic"),
                Text("⏎ / e expands", style="dim"),
            ]
        hop = chain.hops[shown[i]]
        indent = "  " * min(max(hop.depth - base, 0), 8)
        style = LAYER_STYLE.get(hop.layer, "")
        if hop.kind in ("python", "parent"):
            style = "dim"
        elif hop.kind == "op":
            style = "bold"
        return [
            fit_time_short(hop.start_us * 1000, 10),
            fit_time_short(hop.dur_us * 1000, 10),
            Text(hop.layer, style=LAYER_STYLE.get(hop.layer, "")),
            Text(indent + hop.name, style=style),
            Text(hop.thread_or_stream, style="dim"),
        ]

    # where each hop ran, elided as names are: "python3 (GPU 2) / stream 7" and "… stream
    # 13" cut at the end read alike
    where = {"where": lambda i: chain.hops[shown[i]].thread_or_stream if shown[i] >= 0 else "⏎ / e expands"}
    return TableModel(columns, len(shown), cells, names=where)


_WIDE_CHAIN = 120  # the chain table's width (scroll bar included) from which it shows where each hop ran


VARIANT_LETTERS = "ABC"
NAME_KEEPS = 24  # the cells a comparison's names keep before a ratio column goes


def compare_row_names(rows: list[CompareRow]) -> list[str]:
    """Per row of a comparison's view, its name, with its kind where another row of the
    view shares the name (below 110 columns no kind column tells twins apart)."""
    return distinct_names([(row.key,) for row in rows], [row.kind for row in rows])


def compare_model(  # noqa: C901 - one cell per column of the compare table
    comparison: Comparison, rows: list[CompareRow], width: int, names: list[str] | None = None
) -> TableModel:
    """``names``: ``compare_row_names(rows)``, where the caller has them already."""
    labels = comparison.labels
    value_width = 9
    if names is None:
        names = compare_row_names(rows)
    # the names keep up to 24 cells (as many as the longest needs) while a ratio column
    # can go instead: at 80 columns, three variants, they had 10, where
    # "aten::_efficient_attention_forward" read "aten::…ard" and the twins "X
    # (annotation)" and "X (device annotation)" could not be told apart
    longest = max((cell_width(safe_text(name)) for name in names), default=0)
    columns = [Column("name", "Name", max(min(longest, NAME_KEEPS), len("Name")), "left", flex=True)]
    if width >= 110:
        columns.append(Column("kind", "kind", 10, "left"))
    # Short distinct headers (A, B, C); the title line is the legend (A:eager …), so two
    # labels that share a long prefix can still be told apart.
    for i in range(len(labels)):
        columns.append(Column(f"v{i}", VARIANT_LETTERS[i], value_width))
    for i in range(1, len(labels)):
        columns.append(Column(f"d{i}", f"Δ{VARIANT_LETTERS[i]}", value_width))
        # each ratio follows from its variant's figure and A's: left out first when
        # narrow, as ``trnscope compare`` leaves out its × columns first
        columns.append(Column(f"r{i}", f"{VARIANT_LETTERS[i]}÷A", RATIO_WIDTH, drop_first=True))
    metric = comparison.primary

    def number(value: int, width: int) -> str:
        return fit_count(value, width) if metric == "calls" else fit_time_short(value, width)

    def cells(i: int) -> list[str | Text]:
        row = rows[i]
        values = row.metric(metric)
        present = row.present
        out: list[str | Text] = []
        for column in columns:
            key = column.key
            if key == "name":
                out.append(names[i])
            elif key == "kind":
                out.append(Text(row.kind, style="dim"))
            elif key.startswith("v"):
                k = int(key[1:])
                out.append(number(values[k], column.width) if present[k] else Text("—", style="dim"))
            elif key.startswith("d"):
                k = int(key[1:])
                if not (present[0] and present[k]):  # absent on one side: no difference to show
                    out.append(Text("new" if present[k] else "gone" if present[0] else "—", style="dim"))
                    continue
                delta = values[k] - values[0]
                style = "green" if delta < 0 else "red" if delta > 0 else "dim"
                sign = "+" if delta > 0 else ""
                out.append(Text(sign + number(delta, column.width - len(sign)), style=style))
            elif key.startswith("r"):
                k = int(key[1:])
                out.append(
                    fit_ratio(values[k], values[0], column.width)
                    if present[0] and present[k]
                    else Text("—", style="dim")
                )
        return out

    return TableModel(columns, len(rows), cells, names={"name": lambda i: names[i]})


def kernel_runs_model(comparison: Comparison) -> tuple[TableModel, list[tuple[int, int]]]:
    """Kernel benchmarks: a row per (aligned kernel, variant) with its distribution and,
    for B and C, the ratio of medians to A with its bootstrap interval."""
    rows = [(k, v) for k, row in enumerate(comparison.kernel_runs) for v, r in enumerate(row.runs) if r is not None]
    columns = [
        Column("v", "", 2, "left"),
        Column("name", "Kernel", 12, "left", flex=True),
        Column("calls", "Calls", 6),
        Column("median", "Median", 8),
        Column("p10", "P10", 8),
        Column("p90", "P90", 8),
        Column("ratio", "Median ÷ A [95%]", RATIO_INTERVAL_WIDTH),
    ]

    def cells(i: int) -> list[str | Text]:
        k, v = rows[i]
        row = comparison.kernel_runs[k]
        runs = row.runs[v]
        assert runs is not None
        interval = row.median_ratio[v] if v < len(row.median_ratio) else None
        if interval is None or interval.ratio != interval.ratio:
            ratio: str | Text = Text("baseline" if v == 0 else "—", style="dim")
        else:
            style = "dim" if interval.within_noise else "green" if interval.high < 1 else "red"
            ratio = Text(interval.text(RATIO_INTERVAL_WIDTH), style=style)
        return [
            Text(VARIANT_LETTERS[v], style="bold"),
            runs.name,
            fit_count(runs.calls, 6),
            fit_time_short(runs.median_ns, 8),
            fit_time_short(runs.p10_ns, 8),
            fit_time_short(runs.p90_ns, 8),
            ratio,
        ]

    return TableModel(columns, len(rows), cells), rows
