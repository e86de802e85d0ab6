"""The summary of one trace (or several merged): op and kernel rows, totals, link
coverage, Neuron linking and warnings, as the structs of the ``summary`` JSON contract
(see README, "JSON output").  Presenters render it (``trnscope.cli.render_summary``,
the TUI's status line and warnings)."""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np

from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.contracts import (
    KernelOut,
    LinkOut,
    NeuronOpOut,
    NeuronOut,
    OpOut,
    PlacementOut,
    SummaryOut,
    Totals,
)
from trnscope.core.analysis.optable import OpTable
from trnscope.core.analysis.ordering import (
    default_op_sort,
    extra_sort_values,
    kernel_table_order,
    op_table_order,
    order_ops,
)
from trnscope.core.base.units import us
from trnscope.core.model.roles import Role

HIDE_KINDS = {
    "python": (int(Role.PYTHON),),
    "annotation": (int(Role.ANNOTATION), int(Role.DEVICE_ANNOTATION)),
    "runtime": (int(Role.RUNTIME), int(Role.DRIVER)),
    "device": (int(Role.KERNEL), int(Role.MEMORY), int(Role.DEVICE_ANNOTATION)),
    "op": (int(Role.OP),),
}


def neuron_summary(analysis: Analysis) -> NeuronOut | None:
    """Per-op NeuronCore executions and engine time, and what could not be linked."""
    neuron = analysis.neuron
    data = analysis.neuron_data
    if neuron is None or data is None:
        return None
    from trnscope.core.formats.neuron.device import ENGINES

    names = analysis.trace.names
    ev = analysis.trace.events
    per_op: dict[str, NeuronOpOut] = {}
    for i, op in enumerate(neuron.exec_op.tolist()):
        if op < 0:
            continue
        name = names[int(ev.name[op])]
        out = per_op.setdefault(name, NeuronOpOut(name, 0, 0.0, {}))
        out.executions += 1
        out.device_us = round(out.device_us + us(max(int(ev.dur[int(data.exec_rows[i])]), 0)), 3)
        for e, busy in enumerate(neuron.engine_busy[i].tolist()):
            if busy:
                out.engines_us[ENGINES[e]] = round(out.engines_us.get(ENGINES[e], 0.0) + us(busy), 3)
    r = neuron.report
    return NeuronOut(
        export_format=data.export_format,
        executions=r.executions,
        linked=r.linked,
        by_mapping=r.by_mapping,
        by_flow=r.by_flow,
        by_time=r.by_time,
        unlinked_executions=r.unlinked_executions,
        executions_without_request=r.executions_without_request,
        requests_without_op=r.requests_without_op,
        instructions=r.instructions,
        instructions_outside_executions=r.instructions_outside_executions,
        profiles_without_executions=r.profiles_without_executions,
        aligned_by_sync_point=data.alignment.aligned_by_sync_point,
        max_clock_disagreement_us=us(data.alignment.max_disagreement_ns),
        ops=sorted(per_op.values(), key=lambda o: -o.device_us),
        before_window=r.before_window,
        outside_ops=r.outside_ops,
        physical_core_rows=r.physical_core_rows,
        placements=[PlacementOut(p.profile, p.nc_idx, p.method, p.matched, p.detail) for p in neuron.placements],
    )


def visible_groups(table: OpTable, hide: tuple[str, ...]) -> np.ndarray:
    mask = np.ones(len(table), dtype=bool)
    for kind in hide:
        if kind not in HIDE_KINDS:
            raise ValueError(f"unknown kind to hide {kind!r}; choose from {', '.join(HIDE_KINDS)}")
        mask &= ~np.isin(table.role, HIDE_KINDS[kind])
    return mask


def _shapes(text: str) -> Any:
    if not text:
        return None
    try:
        return msgspec.json.decode(text)
    except msgspec.DecodeError:
        return text


def build_summary(
    analysis: Analysis,
    *,
    group_by: str = "op",
    sort: str | None = None,
    limit: int = 0,
    stack_depth: int = 5,
    step: int = -1,
    hide: tuple[str, ...] = (),
    extra_warnings: list[str] | None = None,
) -> SummaryOut:
    trace = analysis.trace
    table = analysis.op_table(group_by, stack_depth, step)
    kernels = analysis.kernel_table(step)
    from trnscope.core.analysis.flops import flops_columns
    from trnscope.core.analysis.memory import memory_columns

    memory = memory_columns(analysis, table)
    flops = flops_columns(analysis, table)
    order = op_table_order(table, sort, extra=extra_sort_values(memory, flops))
    order = order[visible_groups(table, hide)[order]]
    if limit > 0:
        order = order[:limit]

    def flop_count(g: int) -> int | None:
        return int(flops.flops[g]) if flops is not None and flops.counted[g] else None

    def flop_rate(g: int) -> float | None:
        if flops is None or not np.isfinite(flops.per_second[g]):
            return None
        return round(float(flops.per_second[g]), 1)

    def mem(column: str, g: int) -> int | None:
        return int(getattr(memory, column)[g]) if memory is not None else None

    ops = [
        OpOut(
            name=table.name[g],
            input_shapes=_shapes(table.shape[g]) if table.group_by == "shape" else None,
            stack=table.stack[g].split(" ← ")
            if table.group_by == "stack" and table.stack[g]
            else ([] if table.group_by == "stack" else None),
            calls=int(table.calls[g]),
            self_cpu_us=us(table.self_cpu[g]),
            cpu_total_us=us(table.cpu_total[g]),
            self_device_us=us(table.self_device[g]),
            device_total_us=us(table.device_total[g]),
            kind=table.kind(g),
            cpu_memory_bytes=mem("cpu", g),
            self_cpu_memory_bytes=mem("self_cpu", g),
            device_memory_bytes=mem("device", g),
            self_device_memory_bytes=mem("self_device", g),
            flops=flop_count(g),
            flops_per_s=flop_rate(g),
        )
        for g in order.tolist()
    ]
    korder = kernel_table_order(kernels)
    if limit > 0:
        korder = korder[:limit]
    kernel_rows = [
        KernelOut(
            name=kernels.name[k],
            calls=int(kernels.calls[k]),
            total_us=us(kernels.total[k]),
            min_us=us(kernels.minimum[k]),
            max_us=us(kernels.maximum[k]),
            op=kernels.top_op[k],
        )
        for k in korder.tolist()
    ]
    report = analysis.link_report
    warnings = analysis_warnings(analysis, extra_warnings)
    return SummaryOut(
        source=trace.source,
        device_kind=trace.device_kind,
        totals=Totals(
            us(table.total_self_cpu), us(table.total_self_device), us(analysis.wall_ns), us(table.device_share_base)
        ),
        ops=ops,
        kernels=kernel_rows,
        link_coverage=round(report.coverage, 6),
        warnings=warnings,
        label=trace.label,
        device_name=trace.device_name,
        synthetic=trace.synthetic,
        group_by=table.group_by,
        events=len(trace.events),
        device_label=table.device_label,
        neuron=neuron_summary(analysis),
        step=analysis.steps()[step].name if step >= 0 else "",
        link=LinkOut(
            report.device_events,
            report.linked,
            report.by_external_id,
            report.by_correlation,
            report.by_flow,
            report.unlinkable,
            report.outside_ops,
            report.unresolved,
        ),
    )


def analysis_warnings(analysis: Analysis, extra: list[str] | None = None) -> list[str]:
    """Everything a reader of this analysis should know was lost, coerced or not linked
    (what is derived on demand — FLOPs — once it has been computed: the status line
    asks on the UI thread and must not compute it)."""
    return [*analysis.trace.warnings, *(extra or []), *link_warnings(analysis), *_flops_warnings(analysis)]


def _flops_warnings(analysis: Analysis) -> list[str]:
    from trnscope.core.analysis.flops import flops_known, flops_of_trace

    per_row = flops_of_trace(analysis) if flops_known(analysis) else None
    if per_row is None or not per_row.unknown_rows:
        return []
    return [
        f"FLOPs unknown for {per_row.unknown_rows:,} aten::conv2d calls: the trace has no "
        '"Concrete Inputs" (stride, padding, dilation, groups); their rows show no FLOPs'
    ]


def link_warnings(analysis: Analysis) -> list[str]:
    report = analysis.link_report
    out = []
    neuron_links = analysis.neuron
    data = analysis.neuron_data
    if neuron_links is not None and data is not None and not data.device_in_trace:
        out += _neuron_link_warnings(analysis)
        report = msgspec.structs.replace(report, unlinkable=0, outside_ops=0)  # said above, per execution
    if report.unlinkable:
        out.append(
            f"{report.unlinkable:,} of {report.device_events:,} device events carry no link to the host "
            "(launched before the capture window); they count in the kernel table only"
        )
    if report.outside_ops:
        out.append(f"{report.outside_ops:,} device events were launched by runtime calls outside any profiled op")
    if report.unresolved:
        out.append(f"{report.unresolved:,} device events point at ops missing from the trace")
    neuron = analysis.neuron.report if analysis.neuron is not None else None
    if neuron is not None and neuron.instructions_outside_executions:
        orphans = neuron.profiles_without_executions
        unmatched = (
            f" ({orphans:,} device profile{' matches' if orphans == 1 else 's match'} no execution)" if orphans else ""
        )
        out.append(
            f"{neuron.instructions_outside_executions:,} of {neuron.instructions:,} NeuronCore instructions fall "
            f"outside every execution{unmatched}; they count in no engine time"
        )
    return out


_MATCHED_BY_DURATION = ("ExecutionInfo durations", "activity matched to executions")


def _duration_error(detail: str) -> float:
    """How badly a matched placement fits, from its detail: the "durations within X%"
    figure, or 100 − the "Y% of it inside them" share (0 when neither is there)."""
    try:
        if "durations within " in detail:
            return float(detail.split("durations within ", 1)[1].split("%", 1)[0])
        if "% of it inside" in detail:
            return 100.0 - float(detail.split("% of it inside", 1)[0].rsplit(" ", 1)[-1])
    except ValueError:
        pass
    return 0.0


def _neuron_link_warnings(analysis: Analysis) -> list[str]:
    neuron = analysis.neuron
    assert neuron is not None
    r = neuron.report
    out = []
    no_link = r.unlinked_executions - r.before_window - r.outside_ops
    if r.before_window:
        out.append(
            f"{r.before_window:,} of {r.executions:,} NeuronCore executions started before the first profiled op "
            "(launched before the capture window); they count in the kernel table only"
        )
    if no_link > 0:
        out.append(
            f"{no_link:,} of {r.executions:,} NeuronCore executions have no runtime event tied to them by exec_id, "
            "flow_id or nrta_seq_id; they count in the kernel table only"
        )
    if r.outside_ops:
        out.append(
            f"{r.outside_ops:,} of {r.executions:,} NeuronCore executions were requested by runtime calls that no "
            "profiled op encloses"
        )
    placed: dict[str, list[str]] = {}
    for placement in neuron.placements:
        if placement.method != "unplaced":
            placed.setdefault(placement.method, []).append(placement.detail)
    if placed:
        parts = []
        for method, details in sorted(placed.items()):
            worst = max(details, key=_duration_error) if method in _MATCHED_BY_DURATION else ""
            parts.append(f"{len(details)} by {method}" + (f" (worst: {worst})" if worst else ""))
        out.append("device profiles placed on the host clock: " + "; ".join(parts))
    return out


_SUMMED_OPTIONAL = (
    "cpu_memory_bytes",
    "self_cpu_memory_bytes",
    "device_memory_bytes",
    "self_device_memory_bytes",
    "flops",
)
_EXTRA_SORT_FIELDS = {  # sort column → OpOut field
    "flops": "flops",
    "flops_per_s": "flops_per_s",
    "cpu_memory": "cpu_memory_bytes",
    "self_cpu_memory": "self_cpu_memory_bytes",
    "device_memory": "device_memory_bytes",
    "self_device_memory": "self_device_memory_bytes",
}


def merge_summaries(summaries: list[SummaryOut], source: str, sort: str | None = None, limit: int = 0) -> SummaryOut:
    """One summary for several traces (ranks, variants): rows with the same key summed."""
    ops: dict[tuple[str, str, str, str], OpOut] = {}
    for summary in summaries:
        for op in summary.ops:
            key = (op.name, op.kind, msgspec.json.encode(op.input_shapes).decode(), " ; ".join(op.stack or []))
            mine = ops.get(key)
            if mine is None:
                ops[key] = msgspec.structs.replace(op)
                continue
            mine.calls += op.calls
            mine.self_cpu_us = round(mine.self_cpu_us + op.self_cpu_us, 3)
            mine.cpu_total_us = round(mine.cpu_total_us + op.cpu_total_us, 3)
            mine.self_device_us = round(mine.self_device_us + op.self_device_us, 3)
            mine.device_total_us = round(mine.device_total_us + op.device_total_us, 3)
            for field in _SUMMED_OPTIONAL:  # bytes and FLOPs add up; absent stays absent
                value = getattr(op, field)
                if value is not None:
                    setattr(mine, field, (getattr(mine, field) or 0) + value)
            # FLOP/s only when every part had one: FLOPs over the merged time
            complete = mine.flops_per_s is not None and op.flops_per_s is not None
            seconds = (mine.device_total_us or mine.cpu_total_us) / 1e6
            mine.flops_per_s = round(mine.flops / seconds, 1) if complete and mine.flops and seconds > 0 else None
    kernels: dict[str, KernelOut] = {}
    for summary in summaries:
        for k in summary.kernels:
            mine_k = kernels.get(k.name)
            if mine_k is None:
                kernels[k.name] = msgspec.structs.replace(k)
                continue
            mine_k.calls += k.calls
            mine_k.total_us = round(mine_k.total_us + k.total_us, 3)
            mine_k.min_us = min(mine_k.min_us, k.min_us)
            mine_k.max_us = max(mine_k.max_us, k.max_us)
    has_device = any(s.totals.self_device_us for s in summaries)
    merged = list(ops.values())

    def optional(field: str) -> np.ndarray | None:
        values = [getattr(op, field) for op in merged]
        if all(v is None for v in values):
            return None
        return np.array([np.nan if v is None else v for v in values], dtype=np.float64)

    extra = {name: values for name, field in _EXTRA_SORT_FIELDS.items() if (values := optional(field)) is not None}
    order = order_ops(
        sort or default_op_sort(has_device),
        extra=extra,
        names=[op.name for op in merged],
        calls=np.array([op.calls for op in merged], dtype=np.float64),
        self_cpu=np.array([op.self_cpu_us for op in merged], dtype=np.float64),
        cpu_total=np.array([op.cpu_total_us for op in merged], dtype=np.float64),
        self_device=np.array([op.self_device_us for op in merged], dtype=np.float64),
        device_total=np.array([op.device_total_us for op in merged], dtype=np.float64),
    )
    rows = [merged[i] for i in order.tolist()]
    kernel_rows = sorted(kernels.values(), key=lambda k: -k.total_us)  # as kernel_table_order's default
    if limit > 0:
        rows, kernel_rows = rows[:limit], kernel_rows[:limit]
    links = [s.link for s in summaries if s.link is not None]
    linked = sum(link.linked for link in links)
    device_events = sum(link.device_events for link in links)
    first = summaries[0]
    return SummaryOut(
        source=source,
        device_kind=first.device_kind,
        totals=Totals(
            round(sum(s.totals.self_cpu_us for s in summaries), 3),
            round(sum(s.totals.self_device_us for s in summaries), 3),
            round(sum(s.totals.wall_us for s in summaries), 3),  # every total of a merge is a sum
            round(sum(s.totals.device_share_base_us for s in summaries), 3),
        ),
        ops=rows,
        kernels=kernel_rows,
        link_coverage=round(linked / device_events, 6) if device_events else 1.0,
        warnings=[f"{s.label}: {w}" for s in summaries for w in s.warnings],
        label=f"{len(summaries)} traces merged",
        device_name=first.device_name,
        synthetic=any(s.synthetic for s in summaries),
        group_by=first.group_by,
        events=sum(s.events for s in summaries),
        link=LinkOut(*[sum(getattr(link, f) for link in links) for f in LinkOut.__struct_fields__]) if links else None,
        device_label=first.device_label,
        merged=[s.label for s in summaries],
    )
