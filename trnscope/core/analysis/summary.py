"""The summary of one trace (or several merged): op and kernel rows, totals, link
coverage, Neuron linking and warnings, as the structs of the ``summary`` JSON contract
(see README, "JSON output").  Presenters render it (``trnscope.cli.render_summary``,
the TUI's status line and warnings)."""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np

from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.columns import ALL_EXTRAS, EXTRAS, OP_COLUMNS, Unit
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
from trnscope.core.analysis.opfigures import OpFigures, figures_of, merge_figures
from trnscope.core.analysis.ordering import kernels_matching, order_figures, rows_matching
from trnscope.core.base.arrays import equals_any, is_member, sorted_unique
from trnscope.core.base.jsondepth import decode_bounded
from trnscope.core.base.text import plural, user_pattern
from trnscope.core.base.units import fmt_time_ns, us
from trnscope.core.model.roles import DEVICE_ROLES, Role
from trnscope.core.model.vocab import NONE_ID, PH_X

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
    for i, op in enumerate(neuron.by_execution.op.tolist()):
        if op < 0:
            continue
        name = names[int(ev.name[op])]
        out = per_op.setdefault(name, NeuronOpOut(name, 0, 0.0, {}))
        out.executions += 1
        out.device_us = round(out.device_us + us(max(int(ev.dur[int(data.executions.trace_row[i])]), 0)), 3)
        for e, busy in enumerate(neuron.engines.busy[i].tolist()):
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


def visible_groups(figures: OpFigures, hide: tuple[str, ...]) -> np.ndarray:
    mask = np.ones(len(figures), dtype=bool)
    for kind in hide:
        if kind not in HIDE_KINDS:
            raise ValueError(f"unknown kind to hide {kind!r}; choose from {', '.join(HIDE_KINDS)}")
        mask &= ~equals_any(figures.role, HIDE_KINDS[kind])
    return mask


def _shapes(text: str) -> Any:
    if not text:
        return None
    try:
        return decode_bounded(text)[0]
    except msgspec.DecodeError:
        return text


class KernelFigures(msgspec.Struct):
    """The kernel table's figures per device-event name, exact (ns)."""

    name: list[str]
    calls: list[int]
    total: list[int]
    minimum: list[int]
    maximum: list[int]
    launch_times: list[dict[str, int]]  # ns launched by each op name: the top one is "op"
    # the spread of each kernel's durations (ns; -1 unknown: a merge of traces has none)
    median: list[float] = []
    p10: list[float] = []
    p90: list[float] = []
    std: list[float] = []


def _known(values: object) -> list[float]:
    array = np.asarray(values, dtype=np.float64)
    return np.where(np.isnan(array), -1.0, array).tolist()


class SummaryFigures(msgspec.Struct):
    """What a summary is made of, before anything is rounded, sorted or cut: small,
    picklable, and added up exactly over traces (ranks) by ``merge_summary_figures``."""

    source: str
    label: str
    device_kind: str
    device_name: str
    synthetic: bool
    events: int
    wall_ns: int
    ops: OpFigures
    kernels: KernelFigures
    link: LinkOut
    warnings: list[str]
    extras: dict[str, str]
    step: str = ""
    neuron: NeuronOut | None = None
    merged: list[str] = []
    # the rule Self CPU follows where the trace has Python frames (``model.op_tree``):
    # "classic" or "python"; "" without frames, where both give the same figures
    op_tree: str = ""


def extras_available(analysis: Analysis) -> dict[str, bool]:
    """Which extra figures the trace can give (cheap: no record is read)."""
    from trnscope.core.analysis.flops import flops_possible
    from trnscope.core.analysis.memory import has_memory_records

    return {"memory": has_memory_records(analysis), "flops": flops_possible(analysis)}


def summary_figures(
    analysis: Analysis,
    *,
    group_by: str = "op",
    stack_depth: int = 5,
    step: int = -1,
    extras: frozenset[str] | set[str] = ALL_EXTRAS,
    extra_warnings: list[str] | None = None,
) -> SummaryFigures:
    """The figures of one trace; the memory and FLOPs columns only when in ``extras``
    (each reads every [memory] record or shape the trace holds)."""
    from trnscope.core.analysis.flops import flops_columns
    from trnscope.core.analysis.memory import memory_columns

    unknown = set(extras) - set(EXTRAS.values())
    if unknown:
        raise ValueError(f"unknown extra {sorted(unknown)[0]!r}; choose from {', '.join(EXTRAS.values())}")
    trace = analysis.trace
    table = analysis.op_table(group_by, stack_depth, step)
    kernels = analysis.kernel_table(step)
    groups = table.row_groups(len(analysis.trace.events))  # made once for both
    memory = memory_columns(analysis, table, groups) if "memory" in extras else None
    flops = flops_columns(analysis, table, groups) if "flops" in extras else None
    available = extras_available(analysis)
    state = {
        name: ("computed" if name in extras else "not computed") if available[name] else "absent"
        for name in EXTRAS.values()
    }
    report = analysis.link_report
    return SummaryFigures(
        op_tree=analysis.op_tree_rule,
        source=trace.source,
        label=trace.label,
        device_kind=trace.device_kind,
        device_name=trace.device_name,
        synthetic=trace.synthetic,
        events=trace.event_count,
        wall_ns=analysis.wall_ns,
        ops=figures_of(table, memory, flops),
        kernels=KernelFigures(
            name=kernels.name,
            calls=kernels.calls.tolist(),
            total=kernels.total.tolist(),
            minimum=kernels.minimum.tolist(),
            maximum=kernels.maximum.tolist(),
            launch_times=kernels.launch_times,
            median=_known(kernels.spread.median) if kernels.spread else [],
            p10=_known(kernels.spread.p10) if kernels.spread else [],
            p90=_known(kernels.spread.p90) if kernels.spread else [],
            std=_known(kernels.spread.std) if kernels.spread else [],
        ),
        link=LinkOut(
            report.device_events,
            report.linked,
            report.by_external_id,
            report.by_correlation,
            report.by_flow,
            report.unlinkable,
            report.outside_ops,
            report.unresolved,
            report.before_window,
            report.by_enclosing_op,
        ),
        warnings=analysis_warnings(analysis, extra_warnings),
        extras=state,
        step=analysis.steps()[step].name if step >= 0 else "",
        neuron=neuron_summary(analysis),
    )


def _spread_note(parts: list[SummaryFigures]) -> list[str]:
    """A merge adds exact sums; percentiles of several traces' executions cannot be
    added up from theirs, so a merged kernel table has none — said, not faked."""
    if any(c > 1 for p in parts for c in p.kernels.calls):
        return ["kernel median, p10/p90 and std are per trace: the merged table shows none (open one trace for them)"]
    return []


def _spread_us(values: list[float], i: int) -> float | None:
    return us(values[i]) if i < len(values) and values[i] >= 0 else None


def merge_summary_figures(parts: list[SummaryFigures], source: str) -> SummaryFigures:
    """Several traces' figures added up exactly (every total of a merge is a sum, wall
    time included); rows with the same key become one."""
    kernel_slots: dict[str, int] = {}
    calls: list[int] = []
    total: list[int] = []
    minimum: list[int] = []
    maximum: list[int] = []
    launch_times: list[dict[str, int]] = []
    for part in parts:
        k = part.kernels
        for i, name in enumerate(k.name):
            slot = kernel_slots.get(name)
            if slot is None:
                kernel_slots[name] = len(calls)
                calls.append(k.calls[i])
                total.append(k.total[i])
                minimum.append(k.minimum[i])
                maximum.append(k.maximum[i])
                launch_times.append(dict(k.launch_times[i]) if i < len(k.launch_times) else {})
                continue
            calls[slot] += k.calls[i]
            total[slot] += k.total[i]
            minimum[slot] = min(minimum[slot], k.minimum[i])
            maximum[slot] = max(maximum[slot], k.maximum[i])
            for op, ns in (k.launch_times[i] if i < len(k.launch_times) else {}).items():
                launch_times[slot][op] = launch_times[slot].get(op, 0) + ns
    first = parts[0]
    states = {name: [p.extras.get(name, "absent") for p in parts] for name in EXTRAS.values()}
    rules = sorted({p.op_tree for p in parts if p.op_tree})
    mixed = [f"Self CPU is summed over traces read by different op-tree rules ({' and '.join(rules)})"]
    return SummaryFigures(
        op_tree=rules[0] if len(rules) == 1 else ("mixed" if rules else ""),
        source=source,
        label=f"{len(parts)} traces merged",
        device_kind=first.device_kind,
        device_name=first.device_name,
        synthetic=any(p.synthetic for p in parts),
        events=sum(p.events for p in parts),
        wall_ns=sum(p.wall_ns for p in parts),
        ops=merge_figures([p.ops for p in parts]),
        kernels=KernelFigures(list(kernel_slots), calls, total, minimum, maximum, launch_times),
        link=LinkOut(*[sum(getattr(p.link, f) for p in parts) for f in LinkOut.__struct_fields__]),
        warnings=[f"{p.label}: {w}" for p in parts for w in p.warnings]
        + _spread_note(parts)
        + (mixed if len(rules) > 1 else []),
        extras={
            name: "computed" if "computed" in found else ("not computed" if "not computed" in found else "absent")
            for name, found in states.items()
        },
        step=first.step if all(p.step == first.step for p in parts) else "",
        merged=[p.label for p in parts],
    )


def _json_values(unit: Unit, values: np.ndarray) -> list[Any]:
    """A column's values as JSON numbers: times in µs rounded to the nanosecond, rates
    to 0.1 FLOP/s, shares to 4 decimals, counts, bytes and FLOPs as exact integers."""
    if unit is Unit.NS:
        microseconds = (np.asarray(values, dtype=np.float64) / 1000.0).tolist()
        if np.asarray(values).dtype.kind in "iu":
            # whole nanoseconds: k / 1000 is already the double nearest its 3-decimal value
            return microseconds
        return [round(v, 3) for v in microseconds]
    if unit is Unit.RATE:
        return [round(v, 1) for v in np.asarray(values, dtype=np.float64).tolist()]
    if unit is Unit.PERCENT:
        return [round(v, 4) for v in np.asarray(values, dtype=np.float64).tolist()]
    return [int(v) for v in values.tolist()]


_ALWAYS_NUMBER = frozenset({"calls", "self_cpu_us", "cpu_total_us", "self_device_us", "device_total_us", "cpu_avg_us"})


def op_documents(figures: OpFigures, order: np.ndarray) -> list[OpOut]:
    """The rows ``order`` picks, one ``OpOut`` each, a field per catalogue column."""
    rows = order.tolist()
    fields: dict[str, list[Any]] = {}
    for column in OP_COLUMNS:
        values = column.values(figures)
        numbers = _json_values(column.unit, np.asarray(values.values)[order])
        if values.present is not None and column.field not in _ALWAYS_NUMBER:  # a plain figure: 0 rather than null
            numbers = [n if p else None for n, p in zip(numbers, values.present[order].tolist())]
        fields[column.field] = numbers
    fields["name"] = [figures.name[g] for g in rows]
    fields["input_shapes"] = (
        [_shapes(figures.shape[g]) for g in rows] if figures.group_by == "shape" else [None] * len(rows)
    )
    fields["stack"] = (
        [figures.stack[g].split(" ← ") if figures.stack[g] else [] for g in rows]
        if figures.group_by == "stack"
        else [None] * len(rows)
    )
    fields["kind"] = [figures.kind(g) for g in rows]
    # one positional call per row, the columns zipped in the struct's field order (a
    # keyword dictionary per row took most of a 2,000-row document's 10 ms)
    return [OpOut(*row) for row in zip(*(fields[name] for name in OpOut.__struct_fields__), strict=True)]


def summary_document(
    figures: SummaryFigures,
    *,
    sort: str | None = None,
    limit: int = 0,
    hide: tuple[str, ...] = (),
    match: str = "",
) -> SummaryOut:
    """The ``summary`` JSON contract from the figures: rows sorted, filtered (``hide``
    kinds; ``match``, a name filter as the TUI's ``/``) and cut to ``limit``; every time
    rounded to the nanosecond here, once.  ``op_rows`` and ``kernel_rows`` say how
    many rows there were before the cut."""
    pattern = user_pattern(match)
    ops = figures.ops
    order = order_figures(ops, sort)
    keep = visible_groups(ops, hide)
    if pattern is not None:
        grouped = ops.group_by != "op"
        keep &= rows_matching(pattern, ops.name, ops.shape if grouped else (), ops.stack if grouped else ())
    order = order[keep[order]]
    op_rows = len(order)
    if limit > 0:
        order = order[:limit]
    k = figures.kernels
    korder = sorted(range(len(k.name)), key=lambda i: -k.total[i])  # as kernel_table_order's default
    if pattern is not None:
        kept = kernels_matching(pattern, k.name, [_top_op(k, i) for i in range(len(k.name))])
        korder = [i for i in korder if kept[i]]
    kernel_count = len(korder)
    if limit > 0:
        korder = korder[:limit]
    kernel_rows = []
    for i in korder:
        top = _top_op(k, i)
        kernel_rows.append(
            KernelOut(
                k.name[i],
                k.calls[i],
                us(k.total[i]),
                us(k.minimum[i]),
                us(k.maximum[i]),
                top,
                median_us=_spread_us(k.median, i),
                p10_us=_spread_us(k.p10, i),
                p90_us=_spread_us(k.p90, i),
                std_us=_spread_us(k.std, i),
            )
        )
    link = figures.link
    return SummaryOut(
        source=figures.source,
        device_kind=figures.device_kind,
        totals=Totals(
            us(ops.total_self_cpu), us(ops.total_self_device), us(figures.wall_ns), us(ops.device_share_base)
        ),
        ops=op_documents(ops, order),
        kernels=kernel_rows,
        link_coverage=round(link.linked / link.device_events, 6) if link.device_events else 1.0,
        warnings=figures.warnings,
        label=figures.label,
        device_name=figures.device_name,
        synthetic=figures.synthetic,
        group_by=ops.group_by,
        events=figures.events,
        link=link,
        device_label=ops.device_label,
        merged=figures.merged,
        neuron=figures.neuron,
        step=figures.step,
        extras=figures.extras,
        op_tree=figures.op_tree,
        op_rows=op_rows,
        kernel_rows=kernel_count,
        match=match,
    )


def _top_op(kernels: KernelFigures, row: int) -> str:
    """The op that launched most of a kernel row's time ("" if none did)."""
    launched = kernels.launch_times[row] if row < len(kernels.launch_times) else {}
    return max(launched.items(), key=lambda item: item[1])[0] if launched else ""


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
    extras: frozenset[str] | set[str] = ALL_EXTRAS,
) -> SummaryOut:
    """One trace's summary (``summary_figures`` then ``summary_document``)."""
    figures = summary_figures(
        analysis, group_by=group_by, stack_depth=stack_depth, step=step, extras=extras, extra_warnings=extra_warnings
    )
    return summary_document(figures, sort=sort, limit=limit, hide=hide)


def analysis_warnings(analysis: Analysis, extra: list[str] | None = None) -> list[str]:
    """Everything a reader of this analysis should know was lost, coerced or not linked
    (what is derived on demand — FLOPs — once it has been computed: the status line
    asks on the UI thread and must not compute it)."""
    return [
        *analysis.trace.warnings,
        *(extra or []),
        *link_warnings(analysis),
        *_flops_warnings(analysis),
        *analysis.derived(("negative self warnings", None), lambda: _negative_self_warnings(analysis)),
        *analysis.derived(("id collision warnings", None), lambda: _id_collision_warnings(analysis)),
    ]


def _id_collision_warnings(analysis: Analysis) -> list[str]:
    """Where PyTorch's own table of this trace is wrong, and why ours differs from it.

    ``key_averages()`` joins work to host events by one number, an op's id (the
    trace's ``External id``) and a runtime call's CUPTI correlation alike.  A runtime
    call of no op (no ``External id``) whose correlation equals an op's id gets that
    op's device work as its own and takes the op's runtime calls to its thread.  Seen
    on a gloo DDP rank on CUDA (torch 2.11): ``cudaEventRecord`` with 8.8 us of CUDA
    time it never ran, ``aten::copy_`` with 46 us more Self CPU.  Ours joins each by
    its own kind: said, not copied."""
    ev = analysis.trace.events
    names = analysis.trace.names
    call = equals_any(ev.role, (Role.RUNTIME, Role.DRIVER)) & (ev.ph == PH_X)
    # (an External id equal to the event's own correlation is older Kineto's mark of
    # unlinked work, not an op's id: the linker skips it too)
    joined = (
        (call | equals_any(ev.role, DEVICE_ROLES)) & (ev.external_id != NONE_ID) & (ev.external_id != ev.correlation)
    )
    loose = np.flatnonzero(call & (ev.external_id == NONE_ID) & (ev.correlation != NONE_ID))
    if loose.size == 0 or not joined.any():
        return []
    colliding = loose[is_member(sorted_unique(ev.external_id[joined]), ev.correlation[loose])]
    if colliding.size == 0:
        return []
    which = sorted({names[int(i)] for i in ev.name[colliding]})
    return [
        f"{plural(int(colliding.size), 'runtime call')} of no op ({', '.join(which[:4])}"
        f"{', …' if len(which) > 4 else ''}) carry a correlation id equal to an op's id: PyTorch's key_averages() "
        "gives them that op's device time and moves the op's runtime calls off its thread, so its table differs "
        "from this one on those rows, the op and their parents; here each is joined by its own kind"
    ]


def _negative_self_warnings(analysis: Analysis) -> list[str]:
    """Why a row's self CPU time reads below zero (SGLang's decode trace: ProfilerStep*
    at −257 µs, with no word): its children's times add up to more than its own —
    children that overlap one another, events that nest only partly, which PyTorch
    leaves side by side — and ``key_averages()`` subtracts each whole.  Said, not
    changed."""
    below = np.flatnonzero(analysis.times.self_cpu < 0)
    if below.size == 0:
        return []
    names = analysis.trace.names
    ev = analysis.trace.events
    worst = int(below[np.argmin(analysis.times.self_cpu[below])])
    return [
        f"{plural(int(below.size), 'op instance')} with a negative self CPU time (the lowest: "
        f"{names[int(ev.name[worst])]}, {fmt_time_ns(int(analysis.times.self_cpu[worst]))}): their children overlap "
        "one another (events that nest only partly, which PyTorch leaves side by side) and key_averages() "
        "subtracts each whole, so these rows read below zero as in PyTorch's table"
    ]


def _flops_warnings(analysis: Analysis) -> list[str]:
    from trnscope.core.analysis.flops import flops_known, flops_of_trace

    per_row = flops_of_trace(analysis) if flops_known(analysis) else None
    if per_row is None or not per_row.unknown_rows:
        return []
    out = []
    if per_row.without_concrete:
        out.append(
            f"FLOPs unknown for {per_row.without_concrete:,} aten::conv2d calls: the trace has no "
            '"Concrete Inputs" (stride, padding, dilation, groups); their rows show no FLOPs'
        )
    others = per_row.unknown_rows - per_row.without_concrete
    if others:
        out.append(
            f'FLOPs unknown for {others:,} calls of ops PyTorch counts: their "Input Dims" are not sizes '
            "(not a list of inputs, or sizes past any real tensor); their rows show no FLOPs"
        )
    return out


def link_warnings(analysis: Analysis) -> list[str]:
    report = analysis.link_report
    out = []
    neuron_links = analysis.neuron
    data = analysis.neuron_data
    if neuron_links is not None and data is not None and not data.device_in_trace:
        out += _neuron_link_warnings(analysis)
        report = msgspec.structs.replace(report, unlinkable=0, outside_ops=0)  # said above, per execution
    if report.unlinkable:
        early, other = report.before_window, report.unlinkable - report.before_window
        if early:
            out.append(
                f"{early:,} of {report.device_events:,} device events start before the first profiled op and carry "
                "no link to the host (launched before the capture window); they count in the kernel table only"
            )
        if other:
            out.append(
                f"{other:,} of {report.device_events:,} device events inside the capture window carry no link to the "
                "host (no External id, correlation or flow in the trace for them); they count in the kernel table only"
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
    if r.outside_ops and analysis.trace.format != "neuron-events":  # a kernel benchmark has no ops
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
