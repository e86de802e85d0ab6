"""Interval unions on sorted numpy columns: the one way busy and idle time is counted.

Every busy figure in the timeline and the diagnosis is the length of a union of
intervals — overlapping kernels on two streams, or an execution's rows on two
physical cores, count once.
"""

from __future__ import annotations

import itertools

import numpy as np

from trnscope.core.base.arrays import running_max_per_group


class Union:
    """The union of intervals [start, end) as disjoint sorted runs, with the prefix
    of covered length so that "how much of [a, b) is covered" is two lookups."""

    def __init__(self, start: np.ndarray, end: np.ndarray) -> None:
        start = np.asarray(start, dtype=np.int64)
        end = np.maximum(np.asarray(end, dtype=np.int64), start)
        if start.size <= 1:  # most lanes of a trace with many threads: nothing to merge
            self.start, self.end = start.copy(), end.copy()
        else:
            if (start[1:] < start[:-1]).any():
                order = np.argsort(start, kind="stable")
                start, end = start[order], end[order]
            reach = np.maximum.accumulate(end)
            new_run = np.ones(start.size, dtype=bool)
            new_run[1:] = start[1:] > reach[:-1]
            firsts = np.flatnonzero(new_run)
            lasts = np.empty_like(firsts)
            lasts[:-1] = firsts[1:] - 1
            lasts[-1] = start.size - 1
            self.start = start[firsts]
            self.end = reach[lasts]
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


def unions_of_groups(group: np.ndarray, start: np.ndarray, end: np.ndarray, groups: int) -> list[Union]:
    """One ``Union`` per group id ``0 .. groups - 1`` of the intervals [start, end),
    built in whole-array passes (a trace may have 100,000 threads: one pass per thread
    would dominate)."""
    start = np.asarray(start, dtype=np.int64)
    end = np.maximum(np.asarray(end, dtype=np.int64), start)
    empty = np.empty(0, np.int64)
    if start.size == 0:
        return [Union(empty, empty) for _ in range(groups)]
    order = np.lexsort((start, group))
    g, s, e = group[order], start[order], end[order]
    reach = running_max_per_group(e, g)
    new_run = np.ones(s.size, dtype=bool)
    new_run[1:] = (s[1:] > reach[:-1]) | (g[1:] != g[:-1])
    firsts = np.flatnonzero(new_run)
    lasts = np.empty_like(firsts)
    lasts[:-1] = firsts[1:] - 1
    lasts[-1] = s.size - 1
    run_group, run_start, run_end = g[firsts], s[firsts], reach[lasts]
    covered = np.zeros(firsts.size + 1, dtype=np.int64)
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
