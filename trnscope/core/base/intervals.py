"""Unions of intervals: the one way busy, idle and device time are counted.

Every busy figure — a device's busy time, an engine's, an execution's on its physical
cores, a timeline cell, a chain's device time — is the length of a union of intervals
[start, end): overlapping intervals (kernels on two streams, one execution on two
physical cores) count once, never summed.  ``union_runs`` is the one merge; the rest
are views of it: ``Union`` (runs with a prefix of covered length, so "how much of [a, b)
is covered" is two binary searches), ``unions_of_groups`` (many at once),
``grouped_union`` and ``union_length`` (lengths only) and ``coverage_grid`` (cells of a
timeline).
"""

from __future__ import annotations

import itertools

import numpy as np

from trnscope.core.base.arrays import order_by_group_then_value, running_max_per_group, sorted_unique


def union_runs(
    group: np.ndarray, start: np.ndarray, end: np.ndarray, *, presorted: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The disjoint runs the intervals [start, end) of each group make, sorted by
    (group, start): (run group, run start, run end).  An empty or inverted interval
    covers nothing.  ``presorted``: the intervals already come by (group, start)."""
    start = np.asarray(start)
    end = np.maximum(np.asarray(end), start)
    group = np.asarray(group, dtype=np.int64)
    if start.size == 0:
        return group[:0], start[:0], end[:0]
    if presorted:
        g, s, e = group, start, end
        reach = running_max_per_group(e, g)
    elif group.size and group[0] == group[-1] and (group == group[0]).all():
        order = np.argsort(start, kind="stable")
        g, s, e = group[order], start[order], end[order]
        reach = np.maximum.accumulate(e)
    else:
        order = order_by_group_then_value(group, start)
        g, s, e = group[order], start[order], end[order]
        reach = running_max_per_group(e, g)
    new_run = np.ones(s.size, dtype=bool)
    new_run[1:] = (s[1:] > reach[:-1]) | (g[1:] != g[:-1])
    firsts = np.flatnonzero(new_run)
    lasts = np.empty_like(firsts)
    lasts[:-1] = firsts[1:] - 1
    lasts[-1] = s.size - 1
    return g[firsts], s[firsts], reach[lasts]


def grouped_union(group: np.ndarray, start: np.ndarray, end: np.ndarray, groups: int) -> np.ndarray:
    """Per group (0 ≤ group < ``groups``), the length of the union of its intervals."""
    out = np.zeros(groups, dtype=np.int64)
    run_group, run_start, run_end = union_runs(group, start, end)
    np.add.at(out, run_group, (run_end - run_start).astype(np.int64))
    return out


def union_length(start: np.ndarray | list[int] | list[float], end: np.ndarray | list[int] | list[float]) -> float:
    """Length of the union of the intervals [start, end): integer ns stay integers
    (exact at Unix-epoch magnitudes), µs floats stay floats."""
    s, e = np.asarray(start), np.asarray(end)
    if s.dtype.kind == "f" or e.dtype.kind == "f":
        s, e = s.astype(np.float64), e.astype(np.float64)
    else:
        s, e = s.astype(np.int64), e.astype(np.int64)
    _, run_start, run_end = union_runs(np.zeros(s.size, np.int64), s, e)
    total = (run_end - run_start).sum()
    return float(total) if s.dtype.kind == "f" else int(total)


class Union:
    """The union of intervals [start, end) as disjoint sorted runs, with the prefix
    of covered length so that "how much of [a, b) is covered" is two lookups."""

    def __init__(self, start: np.ndarray, end: np.ndarray) -> None:
        start = np.asarray(start, dtype=np.int64)
        end = np.maximum(np.asarray(end, dtype=np.int64), start)
        if start.size <= 1:  # most lanes of a trace with many threads: nothing to merge
            self.start, self.end = start.copy(), end.copy()
        else:
            _, self.start, self.end = union_runs(np.zeros(start.size, np.int64), start, end)
        self.prefix = np.zeros(self.start.size + 1, dtype=np.int64)
        np.cumsum(self.end - self.start, out=self.prefix[1:])

    def __len__(self) -> int:
        return int(self.start.size)

    @property
    def length(self) -> int:
        return int(self.prefix[-1])

    def covered_before(self, t: np.ndarray) -> np.ndarray:
        """Covered length in (-inf, t) for each t."""
        t = np.asarray(t, dtype=np.int64)
        k = np.searchsorted(self.start, t, side="right") - 1
        inside = np.clip(t - self.start[np.maximum(k, 0)], 0, (self.end - self.start)[np.maximum(k, 0)])
        return np.where(k >= 0, self.prefix[np.maximum(k, 0)] + inside, 0)

    def covered(self, a: int, b: int) -> int:
        """Covered length of [a, b)."""
        if b <= a or not len(self):
            return 0
        before = self.covered_before(np.array([a, b]))
        return int(before[1] - before[0])

    def covered_in(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Covered length of each [a[k], b[k]) (``covered`` of many windows in whole-array
        passes: a trace of 7,000 steps is not 7,000 small computations)."""
        a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
        if not len(self):
            return np.zeros(a.shape, dtype=np.int64)
        return np.where(b > a, self.covered_before(b) - self.covered_before(a), 0)

    def gaps(self, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
        """The uncovered pieces of [a, b), as (start, end) arrays."""
        if b <= a:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        lo = np.maximum(self.start, a)
        hi = np.minimum(self.end, b)
        keep = hi > lo
        lo, hi = lo[keep], hi[keep]
        starts = np.r_[a, hi]
        ends = np.r_[lo, b]
        real = ends > starts
        return starts[real], ends[real]

    @classmethod
    def of_runs(cls, start: np.ndarray, end: np.ndarray, prefix: np.ndarray) -> Union:
        """A union from runs already disjoint and sorted, with their prefix of covered length."""
        union = cls.__new__(cls)
        union.start, union.end, union.prefix = start, end, prefix
        return union


def difference(a: Union, b: Union) -> Union:
    """The part of ``a`` that ``b`` does not cover."""
    if not len(a) or not len(b):
        return a
    points = sorted_unique(np.concatenate([a.start, a.end, b.start, b.end]))
    lo, hi = points[:-1], points[1:]
    in_a = np.diff(a.covered_before(points)) > 0  # each elementary piece is wholly in or out
    in_b = np.diff(b.covered_before(points)) > 0
    keep = in_a & ~in_b
    return Union(lo[keep], hi[keep])


def intersection(a: Union, b: Union) -> Union:
    """The part of ``a`` that ``b`` covers too: each run of ``b`` clipped against the
    runs of ``a`` it overlaps (both sets of runs are disjoint and sorted, so there are
    fewer such pairs than runs in all, found by two binary searches per run of ``b``)."""
    if not len(a) or not len(b):
        return Union(np.empty(0, np.int64), np.empty(0, np.int64))
    first = np.searchsorted(a.end, b.start, side="right")  # the first run of a ending after b's start
    stop = np.searchsorted(a.start, b.end, side="left")  # past the last run of a starting before b's end
    pairs = np.maximum(stop - first, 0)
    of_b = np.repeat(np.arange(len(b)), pairs)
    offset = np.arange(of_b.size) - np.repeat(np.cumsum(pairs) - pairs, pairs)
    of_a = np.repeat(first, pairs) + offset
    start = np.maximum(a.start[of_a], b.start[of_b])
    end = np.minimum(a.end[of_a], b.end[of_b])
    keep = end > start
    return Union(start[keep], end[keep])


def unions_of_groups(
    group: np.ndarray, start: np.ndarray, end: np.ndarray, groups: int, *, presorted: bool = False
) -> list[Union]:
    """One ``Union`` per group id ``0 .. groups - 1`` of the intervals [start, end),
    built in whole-array passes (a trace may have 100,000 threads: one pass per thread
    would dominate).  ``presorted``: the intervals already come by (group, start)."""
    run_group, run_start, run_end = union_runs(
        np.asarray(group, dtype=np.int64),
        np.asarray(start, dtype=np.int64),
        np.asarray(end, dtype=np.int64),
        presorted=presorted,
    )
    covered = np.zeros(run_start.size + 1, dtype=np.int64)
    np.cumsum(run_end - run_start, out=covered[1:])
    bounds = np.searchsorted(run_group, np.arange(groups + 1)).tolist()
    return [
        Union.of_runs(run_start[lo:hi], run_end[lo:hi], covered[lo : hi + 1] - covered[lo])
        for lo, hi in itertools.pairwise(bounds)
    ]


def coverage_grid(unions: list[Union], edges: np.ndarray) -> np.ndarray:
    """Covered length of each cell [edges[k], edges[k+1]) for each union, as one
    (unions × cells) array built in whole-array passes (a text timeline of 100,000
    lanes is not 100,000 small computations)."""
    cells = edges.size - 1
    grid = np.zeros((len(unions), cells), dtype=np.float64)
    if not unions or cells <= 0:
        return grid
    counts = np.array([len(u) for u in unions], dtype=np.int64)
    if not counts.any():
        return grid
    lane = np.repeat(np.arange(len(unions)), counts)
    s = np.maximum(np.concatenate([u.start for u in unions]), edges[0])
    e = np.minimum(np.concatenate([u.end for u in unions]), edges[-1])
    keep = e > s
    lane, s, e = lane[keep], s[keep], e[keep]
    first = np.clip(np.searchsorted(edges, s, side="right") - 1, 0, cells - 1)
    last = np.clip(np.searchsorted(edges, e, side="left") - 1, 0, cells - 1)
    one_cell = first == last
    np.add.at(grid, (lane[one_cell], first[one_cell]), (e - s)[one_cell])
    many = ~one_cell
    lane, s, e, first, last = lane[many], s[many], e[many], first[many], last[many]
    np.add.at(grid, (lane, first), edges[first + 1] - s)
    np.add.at(grid, (lane, last), e - edges[last])
    # the cells strictly between a run's first and last are covered whole (runs are
    # disjoint, so a cell is covered whole by at most one run)
    inner = np.zeros((len(unions), cells + 1), dtype=np.int64)
    np.add.at(inner, (lane, first + 1), 1)
    np.add.at(inner, (lane, last), -1)
    grid += np.cumsum(inner, axis=1)[:, :cells] * np.diff(edges)
    return grid
