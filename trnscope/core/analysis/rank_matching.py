"""Which calls of different ranks are one collective.

Matching uses the best key every rank's calls carry: ``Comms Id`` (when unique per call
on every rank); else the process group and its sequence number ``Seq``; else the process
group, the ProfilerStep and the call's position among that group's calls in the step.
In the last case a rank whose list for a step is shorter (its profiling window opened
one collective later) is aligned by the names of its calls, from the end in the first
step it has and from the start elsewhere.

Everything works on the columns of all ranks' calls at once (``CollectiveTable.concat``),
so matching 256 ranks × 2,000 collectives builds no object per call.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import numpy as np

from trnscope.core.analysis.collective_table import CollectiveTable
from trnscope.core.analysis.collectives import NO_STEP

BY_COMMS_ID = "comms id"
BY_SEQ = "group + seq"
BY_ORDER = "order in step"


class Matched(msgspec.Struct):
    """Every rank's calls and the collectives they form.

    Instance ``i`` is made of the calls ``rows[bounds[i]:bounds[i + 1]]`` (rows of
    ``calls``), one per rank, by ascending rank; instances are numbered by first arrival.
    """

    level: str
    calls: CollectiveTable
    rank: np.ndarray  # per row of ``calls``: its rank
    rows: np.ndarray
    bounds: np.ndarray  # len = instances + 1
    group: list[str]  # per instance, from the call that opened it
    step: np.ndarray
    index: np.ndarray  # its position among the group's collectives in the step
    duplicates: int  # calls that shared a key with another call of the same rank (left out)

    def __len__(self) -> int:
        return int(self.bounds.size) - 1

    def members(self, instance: int) -> np.ndarray:
        return self.rows[self.bounds[instance] : self.bounds[instance + 1]]


def group_ids(*keys: np.ndarray) -> np.ndarray:
    """An id per row, the same for rows whose keys are all equal (ids follow the keys'
    sorted order)."""
    n = keys[0].size
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.lexsort(keys[::-1])
    change = np.zeros(n, dtype=bool)
    change[0] = True
    for key in keys:
        ordered = key[order]
        change[1:] |= ordered[1:] != ordered[:-1]
    ids = np.empty(n, dtype=np.int64)
    ids[order] = np.cumsum(change) - 1
    return ids


def _each_unique_per_rank(position: np.ndarray, *keys: np.ndarray) -> bool:
    ids = group_ids(position, *keys)
    return int(ids.max(initial=-1)) + 1 == ids.size


def matching_level(calls: CollectiveTable, position: np.ndarray, ranks: int) -> str:
    """The best key all ranks' calls carry, unique per call within each rank."""
    if ranks == 0 or (np.bincount(position, minlength=ranks) == 0).any():
        return BY_ORDER
    empty = calls.strings.index("") if "" in calls.strings else -1
    comms = calls.code("comms_id")
    if (comms != empty).all() and _each_unique_per_rank(position, comms):
        return BY_COMMS_ID
    seq = calls.ints("seq")
    if (seq >= 0).all() and _each_unique_per_rank(position, calls.code("group"), seq):
        return BY_SEQ
    return BY_ORDER


def _best_offset(reference: list[int], names: list[int], *, from_end: bool) -> int:
    """Where ``names`` sits inside ``reference``: the offset with the most equal names;
    ties go to the end in a rank's first step (its window opened late), else the start."""
    spare = len(reference) - len(names)
    if spare <= 0:
        return 0
    scores = [sum(a == b for a, b in zip(reference[o:], names, strict=False)) for o in range(spare + 1)]
    best = max(scores)
    candidates = [o for o, s in enumerate(scores) if s == best]
    return candidates[-1] if from_end else candidates[0]


def _first_steps(step: np.ndarray, position: np.ndarray, ranks: int) -> np.ndarray:
    """Per rank position: the first ProfilerStep it has a collective in, else NO_STEP."""
    big = np.iinfo(np.int64).max
    first = np.full(ranks, big, dtype=np.int64)
    stepped = step != NO_STEP
    np.minimum.at(first, position[stepped], step[stepped])
    first[first == big] = NO_STEP
    return first


def aligned_index(
    calls: CollectiveTable, position: np.ndarray, rank_numbers: Sequence[int], warnings: list[str]
) -> np.ndarray:
    """Per call: its index within its (group, step), aligned across ranks by the names of
    the calls when the ranks' lists differ in length."""
    n = len(calls)
    rows = np.arange(n, dtype=np.int64)
    step = calls.ints("step")
    bucket = group_ids(calls.code("group"), step)
    per_rank = group_ids(bucket, position)  # (bucket, position) ids, bucket-major
    order = np.lexsort((rows, per_rank))
    sorted_ids = per_rank[order]
    starts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]]) if n else np.zeros(0, np.int64)
    ordinal = np.empty(n, dtype=np.int64)
    ordinal[order] = np.arange(n) - np.repeat(starts, np.diff(np.r_[starts, n]))
    counts = np.diff(np.r_[starts, n])
    block_bucket = bucket[order[starts]]
    block_position = position[order[starts]]
    longest = np.zeros(int(bucket.max(initial=-1)) + 1, dtype=np.int64)
    np.maximum.at(longest, block_bucket, counts)
    short = np.flatnonzero(counts < longest[block_bucket])
    if short.size == 0:
        return ordinal
    first_row = np.full(longest.size, n, dtype=np.int64)
    np.minimum.at(first_row, bucket, rows)
    first_step = _first_steps(step, position, len(rank_numbers))
    names = calls.code("name")
    offsets = np.zeros(n, dtype=np.int64)
    shifted: list[tuple[int, int, str]] = []
    # each bucket's reference: the lowest rank position with the most calls in it
    longest_blocks = np.flatnonzero(counts == longest[block_bucket])
    buckets_seen, first_longest = np.unique(block_bucket[longest_blocks], return_index=True)
    reference_of = np.zeros(longest.size, dtype=np.int64)
    reference_of[buckets_seen] = longest_blocks[first_longest]
    for block in short.tolist():
        b = int(block_bucket[block])
        reference_block = int(reference_of[b])
        reference = names[order[starts[reference_block] : starts[reference_block] + counts[reference_block]]]
        mine = order[starts[block] : starts[block] + counts[block]]
        p = int(block_position[block])
        bucket_step = int(step[mine[0]])
        offset = _best_offset(reference.tolist(), names[mine].tolist(), from_end=bucket_step == first_step[p])
        if offset:
            offsets[mine] = offset
            shifted.append((int(first_row[b]), p, f"rank {rank_numbers[p]} step {bucket_step}"))
    if shifted:
        shifted.sort()
        shown = ", ".join(s[2] for s in shifted[:4]) + (" …" if len(shifted) > 4 else "")
        warnings.append(
            f"some ranks have fewer collectives in a step than others (a profiling window that opened later); "
            f"aligned by name: {shown}"
        )
    return ordinal + offsets


def match_collectives(tables: Sequence[CollectiveTable], rank_numbers: Sequence[int], warnings: list[str]) -> Matched:
    """The collectives of these ranks' calls (``tables[p]`` is rank ``rank_numbers[p]``'s)."""
    calls = CollectiveTable.concat(tables)
    n = len(calls)
    position = np.repeat(np.arange(len(tables), dtype=np.int64), [len(t) for t in tables])
    rank = np.asarray(rank_numbers, dtype=np.int64)[position] if n else np.zeros(0, np.int64)
    level = matching_level(calls, position, len(tables))
    index = calls.ints("ordinal")
    if level == BY_COMMS_ID:
        key = group_ids(calls.code("comms_id"))
    elif level == BY_SEQ:
        key = group_ids(calls.code("group"), calls.ints("seq"))
    else:
        index = aligned_index(calls, position, rank_numbers, warnings)
        key = group_ids(calls.code("group"), calls.ints("step"), index)
    keys = int(key.max(initial=-1)) + 1
    rows = np.arange(n, dtype=np.int64)
    opened_by = np.full(keys, n, dtype=np.int64)  # the first call of each key
    np.minimum.at(opened_by, key, rows)
    # one call per rank and key: the first; later ones are left out
    _, kept = np.unique(key * max(len(tables), 1) + position, return_index=True)
    duplicates = n - int(kept.size)
    if duplicates:
        warnings.append(f"{duplicates} calls shared a key with another call of the same rank and were left out")
    arrival = calls.ints("arrival_ns")
    first_arrival = np.full(keys, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first_arrival, key[kept], arrival[kept])
    by_arrival = np.lexsort((opened_by, first_arrival))  # ties: the order they were met
    number = np.empty(keys, dtype=np.int64)
    number[by_arrival] = np.arange(keys)
    instance = number[key[kept]]
    members = kept[np.lexsort((rank[kept], instance))]
    bounds = np.r_[0, np.cumsum(np.bincount(instance, minlength=keys))].astype(np.int64)
    opening = opened_by[by_arrival]
    return Matched(
        level=level,
        calls=calls,
        rank=rank,
        rows=members,
        bounds=bounds,
        group=[calls.text("group", int(r)) for r in opening.tolist()],
        step=calls.ints("step")[opening],
        index=index[opening],
        duplicates=duplicates,
    )
