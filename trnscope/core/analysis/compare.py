"""Compare two or three variants of the same work, op by op.

Ops are aligned by key (name and kind).  Device work whose kernel names differ
between variants (eager kernels, a compiled graph's kernel, an NKI kernel) is aligned
through what launched it: each device event is charged to the nearest enclosing
``record_function`` region of its launching op (``rmsnorm`` in the demos), so the
region rows line up eager, compiled and fused.  Rows are sorted by the largest change
against the first variant (the baseline).
"""

from __future__ import annotations

import msgspec
import numpy as np

from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.compare_model import CompareRow, Comparison, Figures, VariantDiagnosis
from trnscope.core.analysis.distribution import RatioInterval, bootstrap_ratio
from trnscope.core.analysis.kernel_compare import compare_kernel_runs, is_kernel_benchmark
from trnscope.core.base.arrays import equals_any, sorted_unique
from trnscope.core.base.text import user_pattern
from trnscope.core.link.linker import enclosing_op
from trnscope.core.model.roles import Role, is_profiler_step

__all__ = ["METRICS", "CompareRow", "Comparison", "Figures", "VariantDiagnosis", "compare", "with_metric"]

# metric key → (column title, Figures field); the compare view cycles through them
METRICS = {
    "device_total_ns": "device total",
    "self_cpu_ns": "self CPU",
    "cpu_total_ns": "CPU total",
    "calls": "calls",
    "dispatch_ns": "host dispatch",
}


def dispatch_per_row(analysis: Analysis) -> np.ndarray:
    """Per op row, the time from its start to its first own runtime call (CUDA/HIP
    launch, Neuron dispatch), 0 when it makes none — the host cost of getting work to
    the device, as the drill-down's ``dispatch`` figure."""
    ev = analysis.trace.events
    parent = analysis.links.raw_parent
    runtime = np.flatnonzero(equals_any(ev.role, (Role.RUNTIME, Role.DRIVER)) & (parent >= 0))
    # the op around the call, past any Python frames between them (a Triton kernel's
    # launcher: op → "<string>(1): launcher" → cuLaunchKernel), as the drill-down finds it
    owner = enclosing_op(parent, ev.role, runtime)
    own = owner >= 0
    own[own] = ev.role[owner[own]] == int(Role.OP)  # a step's synchronize is not a dispatch
    runtime, owner = runtime[own], owner[own]
    first = np.full(len(ev), np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first, owner, ev.ts[runtime])
    out = np.zeros(len(ev), dtype=np.int64)
    has = first != np.iinfo(np.int64).max
    out[has] = np.maximum(first[has] - ev.ts[has], 0)
    return out


def _op_rows(analysis: Analysis, dispatch: np.ndarray) -> dict[tuple[str, str], Figures]:
    """The op table's figures per (name, kind), except a range's device total: what was
    launched inside it by every link (``launched_inside``), as in the regions view.  A
    kernel launched outside any aten op (a hand-written Triton kernel, a replayed CUDA
    graph) is no op's in ``key_averages()``, and the range around it read 0 while the
    regions view gave it the kernel's time."""
    table = analysis.op_table()
    inside = launched_inside(analysis)
    out: dict[tuple[str, str], Figures] = {}
    for g in range(len(table)):
        kind = table.kind(g)
        key = (table.name[g], kind)
        figures = out.setdefault(key, Figures())
        figures.calls += int(table.calls[g])
        figures.self_cpu_ns += int(table.self_cpu[g])
        figures.cpu_total_ns += int(table.cpu_total[g])
        figures.self_device_ns += int(table.self_device[g])
        if kind == "annotation":
            figures.device_total_ns += int(inside[table.instances(g)].sum())
        else:
            figures.device_total_ns += int(table.device_total[g])
        if not table.is_device[g]:
            figures.dispatch_ns += int(dispatch[table.instances(g)].sum())
    return out


def launched_inside(analysis: Analysis) -> np.ndarray:
    """Per row, the device time (kernels and memory operations) launched inside it in
    the host tree, by every link the drill-down follows (made once per trace)."""

    def build() -> np.ndarray:
        ev = analysis.trace.events
        links = analysis.links
        work = np.flatnonzero(equals_any(ev.role, (Role.KERNEL, Role.MEMORY)) & (links.device_op >= 0))
        launched = np.zeros(len(ev), dtype=np.int64)
        np.add.at(launched, links.device_op[work], np.maximum(ev.dur[work], 0))
        return _subtree_sums(analysis, launched)

    return analysis.derived(("device time launched inside", None), build)


def _nearest_annotation(analysis: Analysis) -> np.ndarray:
    """For each row, its nearest ``user_annotation`` ancestor that is not a
    ProfilerStep (or -1)."""
    trace = analysis.trace
    ev = trace.events
    parent = analysis.links.raw_parent
    step = np.array([is_profiler_step(n) for n in trace.names] or [False], dtype=bool)
    is_region = (ev.role == int(Role.ANNOTATION)) & ~step[ev.name]
    result = np.full(len(ev), -1, dtype=np.int64)
    rows = np.flatnonzero(analysis.links.in_tree & (parent >= 0))
    order = rows[np.argsort(analysis.links.depth[rows], kind="stable")]
    if order.size:
        levels = analysis.links.depth[order]
        for level_rows in np.split(order, np.flatnonzero(np.diff(levels)) + 1):
            p = parent[level_rows]
            result[level_rows] = np.where(is_region[p], p, result[p])
    own = np.flatnonzero(is_region)
    result[own] = np.where(result[own] >= 0, result[own], own)
    return result


def _subtree_sums(analysis: Analysis, values: np.ndarray) -> np.ndarray:
    """Per row, ``values`` summed over it and everything under it in the host tree."""
    parent = analysis.links.raw_parent
    total = values.astype(np.int64, copy=True)
    rows = np.flatnonzero(analysis.links.in_tree & (parent >= 0))
    order = rows[np.argsort(-analysis.links.depth[rows].astype(np.int64), kind="stable")]
    if order.size:
        levels = analysis.links.depth[order]
        for level_rows in np.split(order, np.flatnonzero(np.diff(levels)) + 1):
            carrying = level_rows[total[level_rows] != 0]
            np.add.at(total, parent[carrying], total[carrying])
    return total


def _regions(
    analysis: Analysis,
    dispatch: np.ndarray,
) -> tuple[dict[str, Figures], dict[str, list[str]], dict[str, dict[str, int]], dict[str, int]]:
    """Region name → figures; region → kernel names; region → kernel name → device ns;
    region → device launches."""
    trace = analysis.trace
    ev = trace.events
    links = analysis.links
    region_of = _nearest_annotation(analysis)
    step = np.array([is_profiler_step(n) for n in trace.names] or [False], dtype=bool)
    annotation_rows = np.flatnonzero((ev.role == int(Role.ANNOTATION)) & ~step[ev.name] & links.in_tree)
    figures: dict[str, Figures] = {}
    # a region's dispatch, like its device total, is that of everything inside it: a
    # compiled graph's launches sit in its own region, inside the user's
    inside = _subtree_sums(analysis, np.where((ev.role == int(Role.OP)) & links.in_tree, dispatch, 0))
    # and its device work is what was launched inside it, by every link the drill-down
    # follows: a CUDA graph replayed inside it too, which key_averages() charges to no op
    device_inside = launched_inside(analysis)
    for r in annotation_rows.tolist():
        f = figures.setdefault(trace.names[int(ev.name[r])], Figures())
        f.calls += 1
        f.cpu_total_ns += max(int(ev.dur[r]), 0)
        f.self_cpu_ns += int(analysis.times.self_cpu[r])
        f.device_total_ns += int(device_inside[r])
        f.dispatch_ns += int(inside[r])
    kernels: dict[str, dict[str, int]] = {}
    launches: dict[str, int] = {}

    def charge(rows: np.ndarray, regions: np.ndarray) -> None:
        for d, region in zip(rows.tolist(), regions.tolist(), strict=True):
            name = trace.names[int(ev.name[region])] if region >= 0 else "(outside any region)"
            per = kernels.setdefault(name, {})
            kname = trace.names[int(ev.name[d])]
            per[kname] = per.get(kname, 0) + max(int(ev.dur[d]), 0)
            launches[name] = launches.get(name, 0) + 1

    device = np.flatnonzero(equals_any(ev.role, (Role.KERNEL, Role.MEMORY)) & (links.device_op >= 0))
    region = region_of[links.device_op[device]]
    charge(device[region < 0], region[region < 0])
    # every region around the launching op, as the region's device total counts it (a
    # compiled graph's kernels belong to its own region and to the user's around it)
    while (region >= 0).any():
        device, region = device[region >= 0], region[region >= 0]
        charge(device, region)
        above = links.raw_parent[region]
        region = np.where(above >= 0, region_of[np.maximum(above, 0)], -1)
    names = {region: sorted(per, key=lambda k: -per[k]) for region, per in kernels.items()}
    return figures, names, kernels, launches


def variant_diagnosis(analysis: Analysis, walls: np.ndarray) -> VariantDiagnosis:
    """``walls``: its ProfilerSteps' wall times (``profiler_step_walls``)."""
    from trnscope.core.analysis.diagnose import diagnose

    doc = diagnose(analysis)
    span = sum(d.span_us for d in doc.devices)
    idle = sum(d.idle_us for d in doc.devices)
    ev = analysis.trace.events
    launches = sorted_unique(analysis.links.device_launch[analysis.links.device_launch >= 0]).size
    steps = max(len(doc.steps), 1)
    losses = [f for f in doc.findings if f.severity != "info"]
    return VariantDiagnosis(
        device_idle_pct=round(100.0 * idle / span, 2) if span else None,
        host_bound_steps=sum(1 for s in doc.steps if s.bound == "host"),
        steps=len(doc.steps),
        dispatches_per_step=round(launches / steps, 2) if len(ev) else 0.0,
        top_finding=losses[0].kind if losses else "",
        median_step_ns=float(np.median(walls)) if walls.size else None,
    )


def profiler_step_walls(analysis: Analysis) -> np.ndarray:
    """Each ProfilerStep's wall time (its annotation's span), ns."""
    return np.array([s.end - s.start for s in analysis.steps() if is_profiler_step(s.name)], dtype=np.float64)


MIN_STEPS_FOR_SPREAD = 3


def step_ratios(walls: list[np.ndarray]) -> list[RatioInterval | None]:
    """Each variant's median step ÷ the baseline's, with the 95% bootstrap interval of
    their steps (``walls``: each variant's ``profiler_step_walls``); None for the
    baseline and where either has fewer than ``MIN_STEPS_FOR_SPREAD`` steps."""
    if walls[0].size < MIN_STEPS_FOR_SPREAD:
        return [None] * len(walls)
    return [None] + [
        bootstrap_ratio(walls[0], w, "median") if w.size >= MIN_STEPS_FOR_SPREAD else None for w in walls[1:]
    ]


def step_noise_notes(
    analyses: list[Analysis], labels: list[str], ratios: list[RatioInterval | None] | None = None
) -> list[str]:
    """Where a variant's step time differs from the baseline's by less than their own
    step-to-step spread (the 95% bootstrap interval of the ratio of median steps holds
    1), say the difference may be noise."""
    notes = []
    if ratios is None:
        ratios = step_ratios([profiler_step_walls(a) for a in analyses])
    for label, interval in zip(labels[1:], ratios[1:], strict=True):
        if interval is not None and interval.within_noise:
            notes.append(
                f"{label}'s median step is ×{interval.ratio:.2f} {labels[0]}'s, within their own step-to-step spread "
                f"(95% interval {interval.low:.2f}–{interval.high:.2f}): the difference may be noise — more steps, or a "
                "quieter machine, would tell"
            )
    return notes


def compare(analyses: list[Analysis], labels: list[str], align: list[tuple[str, str]] | None = None) -> Comparison:
    if not 2 <= len(analyses) <= 3:
        raise ValueError("compare takes two or three variants")
    dispatches = [dispatch_per_row(a) for a in analyses]  # once per variant, for ops and regions
    ops = [_op_rows(a, d) for a, d in zip(analyses, dispatches)]
    keys = sorted(set().union(*ops))
    any_device = any(a.op_table().total_self_device > 0 for a in analyses)
    primary = "device_total_ns" if any_device else "cpu_total_ns"
    rows = [CompareRow(name, kind, [o.get((name, kind)) for o in ops]) for name, kind in keys]
    region_data = [_regions(a, d) for a, d in zip(analyses, dispatches)]
    region_names = sorted(set().union(*(figs for figs, _, _, _ in region_data)))
    regions = [
        CompareRow(
            name,
            "region",
            [figs.get(name) if figs.get(name, Figures()).calls else None for figs, _, _, _ in region_data],
            [
                ", ".join(kn.get(name, [])[:4]) + (" …" if len(kn.get(name, [])) > 4 else "")
                for _, kn, _, _ in region_data
            ],
        )
        for name in region_names
    ]
    regions = [row for row in regions if any(row.present)]
    kernel_rows: list[CompareRow] = []
    region_keys = sorted(set().union(*(k for _, _, k, _ in region_data)))
    for region in region_keys:
        values: list[Figures | None] = []
        detail: list[str] = []
        for _, names, per, launches in region_data:
            if region in per:
                values.append(
                    Figures(
                        calls=launches[region],  # launches, not distinct kernels
                        self_device_ns=sum(per[region].values()),
                        device_total_ns=sum(per[region].values()),
                        kernel_names=len(per[region]),
                    )
                )
                detail.append(
                    f"{len(per[region])} kernel{'s' if len(per[region]) != 1 else ''}: " + ", ".join(names[region][:4])
                )
            else:
                values.append(None)
                detail.append("")
        kernel_rows.append(CompareRow(region, "kernels", values, detail))

    comparison_rows = (rows, regions, kernel_rows)
    sort_rows(comparison_rows, primary)
    device_label = next((a.op_table().device_label for a in analyses if a.op_table().total_self_device > 0), "DEVICE")
    runs, notes = compare_kernel_runs(analyses, align) if align or is_kernel_benchmark(analyses) else ([], [])
    walls = [profiler_step_walls(a) for a in analyses]  # once: the medians and the ratios
    ratios = step_ratios(walls)
    notes = notes + step_noise_notes(analyses, labels, ratios)
    diagnosis = [variant_diagnosis(a, w) for a, w in zip(analyses, walls, strict=True)]
    for variant, ratio in zip(diagnosis, ratios, strict=True):
        variant.step_vs_baseline = ratio
    return Comparison(
        labels,
        rows,
        regions,
        kernel_rows,
        primary,
        device_label,
        [a.trace.synthetic for a in analyses],
        diagnosis,
        kernel_runs=runs,
        notes=notes,
    )


def _change(row: CompareRow, metric: str) -> int:
    values = row.metric(metric)
    return max(abs(v - values[0]) for v in values)


def sort_rows(lists: tuple[list[CompareRow], ...], metric: str) -> None:
    """Largest change of ``metric`` first; CPU time, then the name, break ties."""
    for rows in lists:
        rows.sort(key=lambda row: (-_change(row, metric), -_change(row, "cpu_total_ns"), row.key))


def key_matches(rows: list[CompareRow], text: str) -> list[CompareRow]:
    """The rows whose key a name filter (``base.text.user_pattern``) keeps: the
    explorer's ``/`` in the comparison, and ``compare --match``."""
    pattern = user_pattern(text)
    return rows if pattern is None else [row for row in rows if pattern.search(row.key)]


def matching(comparison: Comparison, text: str) -> Comparison:
    """The comparison with only the regions, device work and ops whose name matches
    ``text`` (a kernel benchmark's executions stay: each is one kernel already)."""
    return msgspec.structs.replace(
        comparison,
        rows=key_matches(comparison.rows, text),
        regions=key_matches(comparison.regions, text),
        kernels=key_matches(comparison.kernels, text),
    )


def with_metric(comparison: Comparison, metric: str) -> Comparison:
    """The same comparison ordered by another metric (one of ``METRICS``)."""
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; one of {', '.join(METRICS)}")
    copy = msgspec.structs.replace(
        comparison, rows=list(comparison.rows), regions=list(comparison.regions), kernels=list(comparison.kernels)
    )
    copy.primary = metric
    sort_rows((copy.rows, copy.regions, copy.kernels), metric)
    return copy
