"""Parent and depth of host events, exactly as PyTorch's stack algorithm finds them.

PyTorch (``EventList._populate_cpu_children``) walks each thread's events sorted by
start, longest first, keeping a stack: an event pops every entry that ends at or before
its start, or that ends before it does (a partial overlap), and becomes a child of
what is left on top.  A Python loop over millions of events is the slowest step of an
open, so this module computes the same answer with whole-array operations and keeps the
loop only for the stretches of a thread where it is needed:

* When every two events of a thread are either disjoint or nested (a *laminar*
  family), the stack always holds exactly an event's enclosing events.  An event's
  depth is then the number of earlier events that end after it starts, and its parent
  is the last earlier event one level up.  Both come from sorts and binary searches.
* Whether the family is laminar is checked on the result: every event must lie inside
  its parent, and each event must start at or after its previous sibling's end.  A
  tree that passes both checks can only come from a laminar family, so the answer is
  then exactly the stack algorithm's.
* Where the check fails (events that overlap partly, or zero-length events at a
  parent's very end), the *segments* that hold a failure are nested again by a second
  whole-array method that is exact on any input (a segment starts wherever an event
  starts after everything before it on its thread has ended, and there the stack is
  empty in both methods).  It rests on one property of the stack: its ends never
  increase from bottom to top, so an event pops exactly the entries that end before
  its *reach* (its end, or its end + 1 ns when it has zero length: the loop pops
  ``top <= start`` then), and the entry left on top — its parent — is the nearest
  earlier event of the segment that ends at or after that reach.  (An entry popped in
  between by some event k would have needed k to end later still, making k the nearer
  answer.)  "Nearest earlier position whose value reaches q" is answered for every
  event at once by climbing and descending a max segment tree (O(n log n), no loop
  per event), and depth is the parent's depth + 1 by pointer jumping.
* An event that starts inside its predecessor and ends after it shows before any
  laminar pass that its segment needs the exact method.  On real traces one frame
  that runs through a whole thread makes that thread one segment (xDiT, vLLM, OWLv2:
  over 99% of their host events): when such segments hold a third of the events or
  more, the exact method nests every segment at once and the laminar pass, which
  would only be thrown away, is not run (xDiT: 31 instead of 56 ms).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from trnscope.core.base.arrays import order_by_group_start_longest_first, running_max_per_group, sorted_unique


def nest(ts: np.ndarray, end: np.ndarray, thread: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Parent row (-1 for roots) and depth of each of ``rows`` by PyTorch's stack algorithm."""
    return _in_start_order(nest_sorted, ts, end, thread, rows)


def nest_with_stack(
    ts: np.ndarray, end: np.ndarray, thread: np.ndarray, rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The stack algorithm itself over every event: the reference ``nest`` must agree with."""
    return _in_start_order(_stack_sorted, ts, end, thread, rows)


SortedNesting = Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


def _in_start_order(
    nest_in_order: SortedNesting, ts: np.ndarray, end: np.ndarray, thread: np.ndarray, rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Sort ``rows`` by (thread, start, -end, row), nest them, map positions back to rows."""
    if rows.size == 0:
        return np.full(0, -1, dtype=np.int64), np.zeros(0, dtype=np.int32)
    order = order_by_group_start_longest_first(thread[rows], ts[rows], end[rows], rows)
    ordered = rows[order]
    local_parent, local_depth = nest_in_order(ts[ordered], end[ordered], thread[ordered])
    parent = np.full(rows.size, -1, dtype=np.int64)  # (allocated only now: the nesting sets the peak)
    depth = np.zeros(rows.size, dtype=np.int32)
    parent[order] = np.where(local_parent >= 0, ordered[np.maximum(local_parent, 0)], -1)
    depth[order] = local_depth
    return parent, depth


# Where at least 1/3 of a trace's events lie in segments that the laminar method cannot
# nest, the exact method over all of them costs less than the laminar pass and a redo
# (it costs 1.5-1.8x the laminar method per event: 146 ns on xDiT against 83 on df_index).
_REDO_ALL_BEYOND = 3


def nest_sorted(start: np.ndarray, stop: np.ndarray, thread: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Like ``nest`` for events already sorted by (thread, start, -stop, row); parents
    are positions in that order."""
    n = start.size
    first_of_thread = np.empty(n, dtype=bool)
    first_of_thread[0] = True
    np.not_equal(thread[1:], thread[:-1], out=first_of_thread[1:])
    group = np.cumsum(first_of_thread) - 1
    segment = None
    overlapping = _overlaps_its_predecessor(start, stop, first_of_thread)
    if overlapping.any():
        # On real traces one long-running frame that some event overlaps partly often
        # makes a whole thread one segment to redo: the laminar pass there would only
        # be thrown away (15 ms of 56 on xDiT).
        segment = _segments(start, stop, group)
        if np.count_nonzero(_in_segments_of(segment, overlapping)) * _REDO_ALL_BEYOND >= n:
            # what only the laminar pass reads goes first: this path sets the link's peak
            del group, first_of_thread, overlapping
            return _nest_any_sorted(start, stop, segment)
    del overlapping
    group_start = np.flatnonzero(first_of_thread)

    depth = _depths(start, stop, group, group_start)
    # Positions sorted by (depth, position): within it, an event's previous sibling
    # candidate is simply the entry before it, and the parent searches come in order.
    if depth.max() < 2**16:
        by_depth = np.argsort(depth.astype(np.uint16), kind="stable")  # radix sort
    else:
        by_depth = np.argsort(depth, kind="stable")
    sorted_depth = depth[by_depth]
    keys = sorted_depth * n + by_depth

    parent = np.full(n, -1, dtype=np.int64)
    index = np.searchsorted(keys, keys - n, side="left") - 1
    one_up = (sorted_depth > 0) & (index >= 0)
    one_up[one_up] = keys[index[one_up]] >= (sorted_depth[one_up] - 1) * n
    parent[by_depth[one_up]] = by_depth[index[one_up]]
    # an event deeper than 0 always has an earlier event one level up when the family
    # is laminar; a partial overlap can leave none
    orphan = np.zeros(n, dtype=bool)
    orphan[by_depth] = (sorted_depth > 0) & ~one_up

    previous = np.full(n, -1, dtype=np.int64)
    same_level = np.zeros(n, dtype=bool)
    same_level[1:] = sorted_depth[1:] == sorted_depth[:-1]
    previous[by_depth[same_level]] = by_depth[np.flatnonzero(same_level) - 1]
    floor = np.where(parent >= 0, parent, group_start[group] - 1)
    has_sibling = previous > floor

    p = np.maximum(parent, 0)
    outside_parent = (parent >= 0) & ((stop > stop[p]) | (start >= stop[p]))
    overlaps_sibling = has_sibling & (stop[np.maximum(previous, 0)] > start)
    broken = orphan | outside_parent | overlaps_sibling
    if broken.any():
        # The redo allocates as much again: let go of what the checks above used first
        # (on a trace of partial overlaps this step sets the load's peak memory).  Only
        # here: released earlier on a laminar trace, glibc's adaptive mmap threshold
        # would keep later temporaries resident instead (measured: +13 MB at 1.3 M events).
        del keys, index, one_up, orphan, previous, same_level, floor, has_sibling, p
        del outside_parent, overlaps_sibling, by_depth, sorted_depth, group_start
        segment = _segments(start, stop, group) if segment is None else segment
        if np.count_nonzero(_in_segments_of(segment, broken)) * 10 >= n * 9:
            # nearly all of them: no copies of the columns for the few left out
            return _nest_any_sorted(start, stop, segment)
        _redo_with_stack(start, stop, segment, broken, parent, depth)
    return parent, depth.astype(np.int32)


def _depths(start: np.ndarray, stop: np.ndarray, group: np.ndarray, group_start: np.ndarray) -> np.ndarray:
    """Per event, how many earlier events of its thread end after it starts (its depth
    when the family is laminar)."""
    n = start.size
    low = int(min(start.min(), stop.min()))
    span = int(max(start.max(), stop.max())) - low + 1
    groups = int(group[-1]) + 1
    if groups * span >= 2**62:
        # Clock values too far apart to share one key space: their ranks keep every
        # comparison this needs (<, =) and span at most 2n.
        values = sorted_unique(np.concatenate([start, stop]))
        start = np.searchsorted(values, start)
        stop = np.searchsorted(values, stop)
        low, span = 0, int(values.size)
    offset = group.astype(np.int64) * span - low
    start_key = start + offset
    # ends come nearly in order (children end before their parent), which timsort likes
    first_of_own_thread = group_start[group]
    ended = np.searchsorted(np.sort(stop + offset, kind="stable"), start_key, side="right")
    ended -= first_of_own_thread
    del offset
    # ``ended`` also counts the event itself when it has zero length, and zero-length
    # events that start at the same time and sort after it: neither is earlier.
    zero = (start == stop).astype(np.int64)
    zeros_through = np.cumsum(zero)
    last_of_run = np.empty(n, dtype=bool)
    last_of_run[-1] = True
    np.not_equal(start_key[1:], start_key[:-1], out=last_of_run[:-1])
    del start_key
    run_end = np.where(last_of_run, np.arange(n), n)
    del last_of_run
    run_end = np.minimum.accumulate(run_end[::-1])[::-1]
    ended -= zero  # (in place: each of these is as large as the trace's host events)
    ended -= zeros_through[run_end] - zeros_through  # zero-length events later in the same start run
    del zero, zeros_through, run_end
    depth = np.arange(n, dtype=np.int64)
    depth -= first_of_own_thread
    depth -= ended
    return depth


def _redo_with_stack(
    start: np.ndarray,
    stop: np.ndarray,
    segment: np.ndarray,
    broken: np.ndarray,
    parent: np.ndarray,
    depth: np.ndarray,
) -> None:
    """Nest again the segments that hold a broken event, by the method exact on any
    overlaps."""
    redo = np.flatnonzero(_in_segments_of(segment, broken))
    redo_segment = segment[redo]
    local_parent, local_depth = _nest_any_sorted(start[redo], stop[redo], redo_segment)
    parent[redo] = np.where(local_parent >= 0, redo[np.maximum(local_parent, 0)], -1)
    depth[redo] = local_depth


def _overlaps_its_predecessor(start: np.ndarray, stop: np.ndarray, first_of_thread: np.ndarray) -> np.ndarray:
    """Events that start inside the event before them on their thread and end after it:
    a partial overlap, so their stretch of the thread is not laminar.  (Not every
    partial overlap is between neighbours: the laminar checks find the others.)"""
    overlapping = np.zeros(start.size, dtype=bool)
    previous_stop = stop[:-1]
    after = overlapping[1:]  # (a view: the comparisons write into the result in place)
    np.less(start[1:], previous_stop, out=after)
    after &= stop[1:] > previous_stop
    after &= ~first_of_thread[1:]
    return overlapping


def _segments(start: np.ndarray, stop: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Per event, its segment: a new one begins wherever an event starts after every
    earlier event of its thread has ended (the stack is empty there)."""
    n = start.size
    thread_begins = np.r_[True, group[1:] != group[:-1]]
    previous_stop = np.empty(n, dtype=np.int64)
    previous_stop[1:] = stop[:-1]
    previous_stop[thread_begins] = np.iinfo(np.int64).min
    # latest end so far in the thread (reset where a thread begins)
    latest = running_max_per_group(previous_stop, group)
    del previous_stop
    opens = (start >= latest) | thread_begins
    del latest
    return np.cumsum(opens) - 1


def _in_segments_of(segment: np.ndarray, marked: np.ndarray) -> np.ndarray:
    """Per event, whether its segment holds a marked event (segments ascend)."""
    holds = np.zeros(int(segment[-1]) + 1, dtype=bool)
    holds[segment[marked]] = True
    return holds[segment]


def _nest_any_sorted(start: np.ndarray, stop: np.ndarray, group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The stack loop's answer for events sorted by (group, start, -stop), on any
    overlaps, without the loop: each event's parent is the nearest earlier event of its
    group that ends at or after its reach (module docstring)."""
    parent = nearest_earlier_reaching(stop, stop + (stop == start))
    # the nearest such event may belong to an earlier group: then there is none (a
    # parent is earlier, and groups ascend, so it is in another group exactly when its
    # group differs)
    found = np.flatnonzero(parent >= 0)
    parent[found[group[parent[found]] != group[found]]] = -1
    del found
    return parent, _depth_from_parents(parent)


def nearest_earlier_reaching(values: np.ndarray, reach: np.ndarray) -> np.ndarray:
    """For each position i, the largest j < i with ``values[j] >= reach[i]``, else -1
    (int32 below 2**30 positions, else int64).

    A max segment tree over ``values``; every query climbs from leaf i - 1, checking
    the left sibling of each node on its way up (the subtrees it checks cover the
    positions before i, nearest first), and once a sibling holds a large enough value
    descends into it, always to the right child when that one does.  Queries move
    together, one tree level per step: O(n log n) work in whole-array operations."""
    n = values.size
    if n < 2:
        return np.full(n, -1, dtype=np.int64)
    size = 1 << (n - 1).bit_length()
    # Positions and tree nodes fit int32 below 2**30 events: the queries in flight then
    # take half the memory (this function sets the peak of a link that needs it).
    position = np.int32 if 2 * size < 2**31 else np.int64
    tree = np.full(2 * size, np.iinfo(np.int64).min, dtype=np.int64)
    tree[size : size + n] = values
    level = size
    while level > 1:
        half = level // 2
        np.maximum(tree[level : 2 * level : 2], tree[level + 1 : 2 * level : 2], out=tree[half:level])
        level = half
    answer: np.ndarray = np.full(n, -1, dtype=position)
    query: np.ndarray = np.arange(1, n, dtype=position)
    node: np.ndarray = query - 1 + size
    want = reach[1:]
    at_leaf = tree[node] >= want
    answer[query[at_leaf]] = query[at_leaf] - 1
    keep = ~at_leaf
    query, node, want = query[keep], node[keep], want[keep]
    del at_leaf, keep
    down_query: list[np.ndarray] = []
    down_node: list[np.ndarray] = []
    while query.size:
        sibling_holds = ((node & 1) == 1) & (tree[node - 1] >= want)
        down_query.append(query[sibling_holds])
        down_node.append(node[sibling_holds] - 1)
        node = node >> 1
        keep = ~sibling_holds & (node > 1)
        query, node, want = query[keep], node[keep], want[keep]
    # The nodes found at climbing step h sit h levels above the leaves and need h steps
    # down.  Highest first, the queries still descending at step r are a prefix (those
    # found at steps above r): each step works on a slice, not a mask of every query.
    still_descending = np.cumsum([part.size for part in reversed(down_node)])
    query = np.concatenate(down_query[::-1]) if down_query else np.empty(0, dtype=position)
    node = np.concatenate(down_node[::-1]) if down_node else np.empty(0, dtype=position)
    del down_query, down_node
    want = reach[query]
    for step in range(still_descending.size - 1):
        active = int(still_descending[-step - 2])  # found at climbing steps above ``step``
        right = 2 * node[:active] + 1
        node[:active] = np.where(tree[right] >= want[:active], right, right - 1)
    del tree, want
    answer[query] = node - size
    return answer


def _depth_from_parents(parent: np.ndarray) -> np.ndarray:
    """Number of ancestors of each node (parents point to earlier positions), by
    pointer jumping: O(n log depth)."""
    # (positions fit int32 below 2**31 events: half the memory of int64)
    position = np.int32 if parent.size < 2**31 else np.int64
    depth: np.ndarray = (parent >= 0).astype(position)  # edges from each node up to ``up``
    up: np.ndarray = parent.astype(position)
    live = np.flatnonzero(up >= 0)
    while live.size:
        above = up[live]
        depth[live] += depth[above]
        up[live] = up[above]
        live = live[up[live] >= 0]
    return depth.astype(np.int32, copy=False)


def _stack_sorted(start: np.ndarray, stop: np.ndarray, group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """PyTorch's stack loop over events sorted by (group, start, -stop); the stack
    starts empty in each group.  Parents are positions in this order."""
    parent = [-1] * start.size
    depth = [0] * start.size
    stack_end: list[int] = []
    stack_pos: list[int] = []
    current = None
    for k, (begin, finish, g) in enumerate(zip(start.tolist(), stop.tolist(), group.tolist())):
        if g != current:
            stack_end.clear()
            stack_pos.clear()
            current = g
        while stack_end:
            top = stack_end[-1]
            if begin >= top or finish > top:
                stack_end.pop()
                stack_pos.pop()
            else:
                parent[k] = stack_pos[-1]
                break
        depth[k] = len(stack_end)
        stack_end.append(finish)
        stack_pos.append(k)
    return np.array(parent, dtype=np.int64), np.array(depth, dtype=np.int32)
