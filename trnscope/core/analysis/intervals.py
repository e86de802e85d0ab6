"""Interval unions on sorted numpy columns: the one way busy and idle time is counted.

Every busy figure in the timeline and the diagnosis is the length of a union of
intervals — overlapping kernels on two streams, or an execution's rows on two
physical cores, count once.
"""

from __future__ import annotations

import numpy as np


class Union:
    """The union of intervals [start, end) as disjoint sorted runs, with the prefix
    of covered length so that "how much of [a, b) is covered" is two lookups."""

    def __init__(self, start: np.ndarray, end: np.ndarray) -> None:
        start = np.asarray(start, dtype=np.int64)
        end = np.maximum(np.asarray(end, dtype=np.int64), start)
        if start.size == 0:
            self.start = np.empty(0, np.int64)
            self.end = np.empty(0, np.int64)
        else:
            order = np.argsort(start, kind="stable")
            s, e = start[order], end[order]
            reach = np.maximum.accumulate(e)
            new_run = np.ones(s.size, dtype=bool)
            new_run[1:] = s[1:] > reach[:-1]
            firsts = np.flatnonzero(new_run)
            lasts = np.r_[firsts[1:] - 1, s.size - 1]
            self.start = s[firsts]
            self.end = reach[lasts]
        self.prefix = np.r_[0, np.cumsum(self.end - self.start)].astype(np.int64)

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
