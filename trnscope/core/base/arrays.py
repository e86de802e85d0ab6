"""Grouping helpers that stay fast on millions of rows.

``np.unique`` hashes when asked only for the values (slow once most values are
distinct: ~0.6 s for 700,000 distinct ids) and sorts for ``return_inverse``.  Event
keys here are mostly small dense integers (name ids, group ids), where a lookup table
is an order of magnitude faster than either."""

from __future__ import annotations

import itertools
from collections.abc import Iterable

import numpy as np

# a lookup table this many times the number of rows is still cheaper than a sort
_DENSE_FACTOR = 4


def row_dtype(count: int) -> type[np.signedinteger]:
    """The type of row numbers kept as long as a trace of ``count`` rows (links, the
    op keys, the rows' places in the file): int32 below 2**31 rows, half of int64's
    memory in the columns that set a summary's peak."""
    return np.int32 if count < 2**31 else np.int64


def unique_inverse(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct values of a 1-D integer array and, per element, the index of its
    value among them (``np.unique(keys, return_inverse=True)``)."""
    if keys.size == 0:
        return keys.copy(), np.empty(0, dtype=np.int64)
    low, high = int(keys.min()), int(keys.max())
    if high - low <= max(_DENSE_FACTOR * keys.size, 1 << 16):
        offset = keys - low
        present = np.zeros(high - low + 1, dtype=bool)
        present[offset] = True
        rank = np.cumsum(present, dtype=np.int64) - 1
        return np.flatnonzero(present).astype(keys.dtype) + low, rank[offset]
    unique, inverse = np.unique(keys, return_inverse=True)
    return unique, np.asarray(inverse, dtype=np.int64).reshape(-1)


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """Sorted distinct values (``np.unique`` by sorting, which stays fast when most
    values are distinct)."""
    if values.size == 0:
        return values.copy()
    ordered = np.sort(values)
    keep = np.empty(ordered.size, dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


def first_of_each(sorted_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct values of an already sorted array and the index of each one's first
    occurrence (``np.unique(sorted_keys, return_index=True)``)."""
    if sorted_keys.size == 0:
        return sorted_keys.copy(), np.empty(0, dtype=np.int64)
    first = np.empty(sorted_keys.size, dtype=bool)
    first[0] = True
    np.not_equal(sorted_keys[1:], sorted_keys[:-1], out=first[1:])
    index = np.flatnonzero(first)
    return sorted_keys[index], index


def group_order(inverse: np.ndarray, groups: int) -> np.ndarray:
    """Row positions ordered by group, keeping row order within a group (a stable
    argsort; a radix sort when the group ids fit in 16 bits)."""
    if groups <= 1 << 16:
        return np.argsort(inverse.astype(np.uint16), kind="stable")
    return np.argsort(inverse, kind="stable")


def equals_any(column: np.ndarray, values: Iterable[int]) -> np.ndarray:
    """Per element, whether it equals one of a few ``values`` (``np.isin`` for a short
    list: one comparison per value, in the column's own dtype).  ``np.isin`` builds a
    lookup table in a wider type first: 28 ms against 0.4 ms for three roles over
    2.9 M events."""
    mask = np.zeros(column.shape, dtype=bool)
    for value in values:
        mask |= column == int(value)
    return mask


def order_by_group_then_value(group: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``np.lexsort((values, group))``: positions by group, then by value, ties in their
    original order.  One stable sort of a combined integer key where (group, value)
    fit in 64 bits (timsort also finds the runs of rows that are already in order),
    instead of lexsort's one sort per key: 5-7 ms against 18-23 ms for a million
    timeline rows."""
    if values.size == 0:
        return np.empty(0, dtype=np.int64)
    group_fits = group.dtype.kind == "i" or (group.dtype.kind == "u" and group.dtype.itemsize < 8)
    if values.dtype.kind == "i" and group_fits:
        value_low, value_high = int(values.min()), int(values.max())
        group_low, group_high = int(group.min()), int(group.max())
        span = value_high - value_low + 1
        if (group_high - group_low + 1) * span < 1 << 63:
            key = values.astype(np.int64) - np.int64(value_low)  # in [0, span): no overflow
            key += (group.astype(np.int64) - np.int64(group_low)) * np.int64(span)
            return np.argsort(key, kind="stable")
    return np.lexsort((values, group))


def order_by_group_start_longest_first(
    group: np.ndarray, start: np.ndarray, stop: np.ndarray, tiebreak: np.ndarray | None = None
) -> np.ndarray:
    """``np.lexsort((tiebreak, -stop, start, group))`` (without ``tiebreak``: ties in
    position order): intervals by group and start, the longest first among those that
    start together.  One stable sort of (group, start), which timsort finds nearly in
    order on a trace's events, then a lexsort of only the runs that start together:
    1.0 ms against 8.8 ms of lexsort over vLLM's 126,849 host events."""
    order = order_by_group_then_value(group, start)
    if order.size < 2:
        return order
    sorted_group, sorted_start = group[order], start[order]
    tied = sorted_start[1:] == sorted_start[:-1]
    tied &= sorted_group[1:] == sorted_group[:-1]
    if not tied.any():
        return order
    in_run = np.zeros(order.size, dtype=bool)
    in_run[1:] = tied
    in_run[:-1] |= tied
    run = np.cumsum(~np.r_[False, tied])  # the same number along a run that starts together
    spots = np.flatnonzero(in_run)
    members = order[spots]
    keys: tuple[np.ndarray, ...] = (-stop[members], run[spots])
    if tiebreak is not None:
        keys = (tiebreak[members], *keys)
    order[spots] = members[np.lexsort(keys)]
    return order


def stable_argsort(values: np.ndarray, *, descending: bool = False) -> np.ndarray:
    """``np.argsort(values, kind="stable")`` (``descending``: largest first), ties in
    their original order.  For integers, where the values' range times their count fits
    in 63 bits, one unstable SIMD sort of the unique keys ``value * n + position`` and a
    remainder: 3.6 ms against 34 ms for 351,722 random durations.  Timsort stays the
    better choice for values already nearly in order (times in row order): not here."""
    n = values.size
    if n == 0:
        return np.empty(0, dtype=np.int64)
    if values.dtype.kind == "i" or (values.dtype.kind == "u" and values.dtype.itemsize < 8):
        low, high = int(values.min()), int(values.max())
        if (high - low + 1) * n < 1 << 63:
            if descending:
                key = np.int64(high) - values.astype(np.int64)  # in [0, high - low]
            else:
                key = values.astype(np.int64) - np.int64(low)
            key *= np.int64(n)
            key += np.arange(n, dtype=np.int64)
            key.sort()
            return np.remainder(key, np.int64(n), out=key)
    if not descending:
        return np.argsort(values, kind="stable")
    # largest first, ties in their original order: the ascending order of the reversed
    # values, reversed (negating would wrap unsigned values)
    return np.ascontiguousarray((n - 1 - np.argsort(values[::-1], kind="stable"))[::-1])


def index_by(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows of ``keys`` (one key per row, -1 or less: no key) grouped by key, for
    ``values_of_keys``: (keys ascending, their rows), each group in row order; 32-bit
    where rows and keys fit (the indexes of a 2.9 M-event trace: ~28 MB, not ~56)."""
    rows = np.flatnonzero(keys >= 0)
    if keys.size < 1 << 31:
        rows = rows.astype(np.int32)
    keyed = keys[rows]
    order = np.argsort(keyed, kind="stable")
    ordered = keyed[order]
    if ordered.size and int(ordered[-1]) < 1 << 31:  # (ids of any size stay as they are)
        ordered = ordered.astype(np.int32)
    return ordered, rows[order]


def values_of_keys(sorted_keys: np.ndarray, values: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """The ``values`` whose key is in ``wanted`` (``sorted_keys`` ascending, one per
    value), grouped by wanted key: a lookup in an index built once, where a whole-column
    ``np.isin`` would read every row each time."""
    if sorted_keys.size == 0 or wanted.size == 0:
        return np.empty(0, dtype=np.int64)
    if wanted.dtype != sorted_keys.dtype and sorted_keys.dtype.kind in "iu" and wanted.dtype.kind in "iu":
        # searched in the keys' own type (a mixed search converts the whole index first);
        # a wanted key the keys' type cannot hold matches nothing
        limits = np.iinfo(sorted_keys.dtype)
        wanted = wanted[(wanted >= limits.min) & (wanted <= limits.max)].astype(sorted_keys.dtype)
        if wanted.size == 0:
            return np.empty(0, dtype=np.int64)
    if wanted.size * 8 > sorted_keys.size and sorted_keys.dtype.kind in "iu" and wanted.dtype.kind in "iu":
        by_flags = _values_of_many_keys(sorted_keys, values, wanted)
        if by_flags is not None:
            return by_flags
    lo = np.searchsorted(sorted_keys, wanted, side="left")
    hi = np.searchsorted(sorted_keys, wanted, side="right")
    counts = hi - lo
    if not counts.any():
        return np.empty(0, dtype=np.int64)
    starts = np.repeat(lo, counts)
    offsets = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
    return values[starts + offsets]


def _values_of_many_keys(sorted_keys: np.ndarray, values: np.ndarray, wanted: np.ndarray) -> np.ndarray | None:
    """``values_of_keys`` for many wanted keys, strictly ascending, over keys of a small
    range (row numbers): one flag per key in the range and one pass over the index,
    where two binary searches per wanted key cost more (351,722 op rows against 358,900
    kernel owners among 2.9 M rows: 2 ms, not 14).  None where it does not apply."""
    low, high = int(sorted_keys[0]), int(sorted_keys[-1])
    if high - low > 32 * (sorted_keys.size + wanted.size) or (
        wanted.size > 1 and not bool(np.all(wanted[1:] > wanted[:-1]))
    ):
        return None  # sparse keys (ids), or wanted keys out of order or repeated: the order would differ
    inside = wanted[(wanted >= low) & (wanted <= high)].astype(np.int64) - low
    flags = np.zeros(high - low + 1, dtype=bool)
    flags[inside] = True
    return values[flags[sorted_keys.astype(np.int64) - low]]


def is_member(sorted_values: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Per query value, whether it occurs in ``sorted_values``."""
    if sorted_values.size == 0 or query.size == 0:
        return np.zeros(query.size, dtype=bool)
    index = np.minimum(np.searchsorted(sorted_values, query), sorted_values.size - 1)
    return sorted_values[index] == query


def split_by(keys: np.ndarray, rows: np.ndarray) -> dict[int, np.ndarray]:
    """``rows`` grouped by their key (``keys[i]`` belongs to ``rows[i]``), each group in
    its original order: one sort for all groups, not one scan of every row per group
    (a trace may hold 100,000 threads)."""
    if rows.size == 0:
        return {}
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    bounds = np.flatnonzero(ordered[1:] != ordered[:-1]) + 1
    starts = np.r_[0, bounds]
    ends = np.r_[bounds, ordered.size]
    grouped = rows[order]
    return {int(ordered[s]): grouped[s:e] for s, e in zip(starts.tolist(), ends.tolist())}


def running_max_per_group(values: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Running maximum of ``values`` that restarts at each new group (groups are
    contiguous and ascending)."""
    if group[-1] == group[0]:
        return np.maximum.accumulate(values)
    # Lift each group above every earlier one so a single running maximum restarts.
    # The int64 minimum stands for "no value" (a thread's first event has no previous
    # end): it lifts to 0, below every real value, and comes back as itself.
    floor = np.iinfo(np.int64).min
    missing = values == floor
    has_missing = bool(missing.any())
    if has_missing and bool(missing.all()):
        return values.copy()
    high = int(values.max())
    low = int(values.min(where=~missing, initial=high)) if has_missing else int(values.min())
    base = low - 1 if has_missing else low
    span = high - base + 1
    if (int(group[-1]) + 1) * span < 1 << 62:
        lifted = values.astype(np.int64)  # a copy: the caller's values stay as they are
        if has_missing:
            lifted[missing] = base
        lifted -= np.int64(base)  # in [0, span)
        lift = np.multiply(group, np.int64(span), dtype=np.int64)
        lifted += lift
        np.maximum.accumulate(lifted, out=lifted)
        lifted -= lift
        lifted += np.int64(base)
        if has_missing:  # a running maximum of no value yet
            lifted[lifted == base] = floor
        return lifted
    out = np.empty_like(values)
    bounds = [*np.flatnonzero(np.r_[True, group[1:] != group[:-1]]).tolist(), values.size]
    for lo, hi in itertools.pairwise(bounds):
        out[lo:hi] = np.maximum.accumulate(values[lo:hi])
    return out


def check_lengths(struct: object, n: int, skip: tuple[str, ...] = ()) -> None:
    """Every array and list field (but ``skip``) of a msgspec struct of per-row columns
    has ``n`` rows (checked once where it is made, so its users need no length guards)."""
    for name in getattr(type(struct), "__struct_fields__", ()):
        if name in skip:
            continue
        value = getattr(struct, name)
        if isinstance(value, np.ndarray | list) and len(value) != n:
            raise ValueError(f"{type(struct).__name__}.{name} has {len(value)} rows, not {n}")


def medians_without_each(values: np.ndarray) -> np.ndarray:
    """For each k, the median of ``values`` with element k left out (n ≥ 2), in one
    sort: the leave-one-out medians a per-rank lateness needs, without n medians of n."""
    values = np.asarray(values, dtype=np.float64)
    n = values.size
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    position = np.empty(n, dtype=np.int64)
    position[order] = np.arange(n)
    rest = n - 1
    lo, hi = (rest - 1) // 2, rest // 2  # the median's positions among the rest

    def pick(i: int) -> np.ndarray:
        # position i among the rest is i in the sorted whole below k's place, i + 1 from it
        return ordered[np.where(i < position, i, i + 1)]

    return (pick(lo) + pick(hi)) / 2.0
