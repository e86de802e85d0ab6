"""Kernel variants compared by their executions: what an NKI kernel developer asks of
two or three benchmark files — is B's kernel faster than A's, and is the difference
real?

Kernels are aligned across variants: by ``align`` pairs (``--align NAME=NAME``: the
baseline's kernel = another variant's); else when every variant runs one kernel, those;
else by name, and the rest by position (their order of first execution).  Each row gives
every variant's distribution (``distribution.py`` defines each figure) and, against the
baseline, the ratio of medians and of means with a bootstrap 95% interval; a ratio
whose interval holds 1 is *within noise*.
"""

from __future__ import annotations

import numpy as np

from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.compare_model import KernelRunRow, KernelRuns
from trnscope.core.analysis.distribution import RatioInterval, bootstrap_ratio, group_spread
from trnscope.core.model.roles import Role
from trnscope.core.model.vocab import PH_X

MIN_EXECUTIONS = 3  # fewer than this is not a distribution


def kernel_runs(analysis: Analysis) -> list[KernelRuns]:
    """Every device kernel of the trace with its executions, in order of first execution."""
    ev = analysis.trace.events
    rows = np.flatnonzero((ev.role == int(Role.KERNEL)) & (ev.ph == PH_X))
    rows = rows[np.argsort(ev.ts[rows], kind="stable")]
    if rows.size == 0:
        return []
    names, first, inverse = np.unique(ev.name[rows], return_index=True, return_inverse=True)
    durations = np.maximum(ev.dur[rows], 0)
    spread = group_spread(durations, inverse, names.size)
    out = []
    for k in np.argsort(first, kind="stable").tolist():
        mine = durations[inverse == k]
        out.append(
            KernelRuns(
                name=analysis.trace.names[int(names[k])],
                calls=int(mine.size),
                total_ns=int(mine.sum()),
                mean_ns=float(mine.mean()),
                median_ns=float(spread.median[k]),
                p10_ns=float(spread.p10[k]),
                p90_ns=float(spread.p90[k]),
                min_ns=int(mine.min()),
                max_ns=int(mine.max()),
                std_ns=float(spread.std[k]),
                durations=mine.tolist(),
            )
        )
    return out


WARMUP_FACTOR = 2.0  # a leading execution this many times the typical one is a warm-up
MAX_WARMUP = 10


def leading_warmups(durations: list[int]) -> tuple[int, float, float]:
    """How many executions at the start each take more than ``WARMUP_FACTOR`` × the median
    of the others (a cold cache, a first load), and the least and most of those ratios."""
    values = np.asarray(durations, dtype=np.float64)
    if values.size < 2 * MIN_EXECUTIONS:
        return 0, 0.0, 0.0
    typical = float(np.median(values[MAX_WARMUP:] if values.size >= 2 * MAX_WARMUP else values))
    if typical <= 0:
        return 0, 0.0, 0.0
    ratios = values[:MAX_WARMUP] / typical
    slow = ratios > WARMUP_FACTOR
    count = int(slow.argmin()) if not slow.all() else int(slow.size)
    if count == 0 or values.size - count < MIN_EXECUTIONS:
        return 0, 0.0, 0.0
    return count, float(ratios[:count].min()), float(ratios[:count].max())


def _first(count: int) -> str:
    return "first execution takes" if count == 1 else f"first {count} executions take"


def warmup_notes(analyses: list[Analysis]) -> list[str]:
    """Notes on kernels that start with slow executions: they pull the mean and the
    spread, and ``--warmup N`` leaves them out (one note when every kernel has the same)."""
    found = []  # (who, count, low, high)
    for analysis in analyses:
        label = analysis.trace.label or analysis.trace.source
        for runs in kernel_runs(analysis):
            count, low, high = leading_warmups(runs.durations)
            if count:
                who = label if runs.name == label else f"{label}: {runs.name}"
                found.append((who, count, runs.calls, low, high))
    if not found:
        return []

    def times(low: float, high: float) -> str:
        return f"{low:.1f}×" if f"{low:.1f}" == f"{high:.1f}" else f"{low:.1f}–{high:.1f}×"

    counts = {f[1] for f in found}
    total = sum(len(kernel_runs(a)) for a in analyses)
    if len(counts) == 1 and len(found) == total > 1:
        count = found[0][1]
        low, high = min(f[3] for f in found), max(f[4] for f in found)
        return [
            f"every kernel's {_first(count)} {times(low, high)} its typical time (warm-up?): "
            f"--warmup {count} leaves {'them' if count > 1 else 'it'} out of every figure"
        ]
    return [
        f"{who}: the first {f'{count} ' if count > 1 else ''}of {calls} executions "
        f"take{'s' if count == 1 else ''} {times(low, high)} the typical time "
        f"(warm-up?): --warmup {count} leaves {'them' if count > 1 else 'it'} out of every figure"
        for who, count, calls, low, high in found
    ]


def is_kernel_benchmark(analyses: list[Analysis]) -> bool:
    """Variants that are kernel benchmarks (runtime events files), or that each run one
    kernel many times: their executions are what there is to compare."""
    if all(a.trace.format == "neuron-events" for a in analyses):
        return True
    runs = [kernel_runs(a) for a in analyses]
    return all(len(r) == 1 and r[0].calls >= MIN_EXECUTIONS for r in runs)


def compare_kernel_runs(  # noqa: C901 - the four ways kernels align (--align, single, name, position) in order of precedence
    analyses: list[Analysis], align: list[tuple[str, str]] | None = None
) -> tuple[list[KernelRunRow], list[str]]:
    """Aligned kernels with their distributions and ratios; notes on the alignment."""
    per_variant = [kernel_runs(a) for a in analyses]
    notes: list[str] = []
    groups: list[tuple[list[KernelRuns | None], str]] = []
    used: list[set[str]] = [set() for _ in per_variant]
    for base_name, other_name in align or []:
        row: list[KernelRuns | None] = []
        for v, runs in enumerate(per_variant):
            wanted = base_name if v == 0 else other_name
            match = next((r for r in runs if r.name == wanted or (v > 0 and r.name == base_name)), None)
            row.append(match)
            if match is not None:
                used[v].add(match.name)
        if row[0] is None:
            notes.append(f"--align {base_name}={other_name}: the baseline has no kernel {base_name!r}")
        groups.append((row, "align"))
    rest = [[r for r in runs if r.name not in used[v]] for v, runs in enumerate(per_variant)]
    if all(len(r) == 1 for r in rest):
        single: list[KernelRuns | None] = [r[0] for r in rest]
        groups.append((single, "name" if len({r[0].name for r in rest}) == 1 else "single"))
    else:
        names = [{r.name: r for r in runs} for runs in rest]
        shared = [r.name for r in rest[0] if all(r.name in n for n in names[1:])]
        for name in shared:
            by_name: list[KernelRuns | None] = [n[name] for n in names]
            groups.append((by_name, "name"))
        leftovers = [[r for r in runs if r.name not in shared] for runs in rest]
        for position in range(max((len(x) for x in leftovers), default=0)):
            placed: list[KernelRuns | None] = [x[position] if position < len(x) else None for x in leftovers]
            groups.append((placed, "position"))
        if any(kind == "position" for _, kind in groups):
            notes.append(
                "kernels with different names were aligned by their order of first execution; "
                "say which go together with --align BASELINE_NAME=OTHER_NAME"
            )
    rows = []
    for aligned, how in groups:
        base = aligned[0]
        medians: list[RatioInterval | None] = [None]
        means: list[RatioInterval | None] = [None]
        for other in aligned[1:]:
            if base is None or other is None or base.calls < MIN_EXECUTIONS or other.calls < MIN_EXECUTIONS:
                medians.append(None)
                means.append(None)
                continue
            a, b = np.array(base.durations), np.array(other.durations)
            medians.append(bootstrap_ratio(a, b, "median"))
            means.append(bootstrap_ratio(a, b, "mean"))
        rows.append(KernelRunRow(aligned, medians, means, how))
    return rows, notes + warmup_notes(analyses)
