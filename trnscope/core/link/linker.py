"""Link events: host nesting, op → runtime → device, and forward → backward.

Nesting follows PyTorch's own ``EventList._populate_cpu_children`` exactly (per
thread, sorted by start then longest first, a stack that pops events that end
before the next one starts or that it overlaps only partly), so self times match
``key_averages()``; ``trnscope.core.link.nesting`` computes it.

Device events are attributed to the op that launched them by three strategies, in
order (see ``shared/reference/kineto-trace-format.md`` §7.2):

A. ``External id`` on the device event equals an op's ``External id`` (skipped when
   it equals the event's own ``correlation``: pre-2024-10 Kineto wrote that for
   unlinked work, and such values collide with real op ids);
B. ``correlation`` → the runtime call with the same correlation → its
   ``External id``, or else the innermost op that encloses it on its thread;
C. flow events (``ac2g``, ``async_cpu_to_gpu``, ``async``) from a runtime call to the
   device event, then B's last step.

Where B or C reach a runtime call with no ``External id`` inside no aten op, only a
``record_function`` range (a CUDA graph's replay in ``ProfilerStep#N``), the op is only
the range around the call
(``LinkMethod.ENCLOSING_OP``): the drill-down and the kernel table follow it, while
the op table, which is ``key_averages()``, leaves that work out as PyTorch does
(seen on an H200 with torch 2.11: a replayed graph's kernels add nothing to
``ProfilerStep*``).

Device events that carry none of this (work launched before the capture window)
are counted as unlinkable, never guessed.
"""

from __future__ import annotations

import os
from enum import IntEnum

import msgspec
import numpy as np

from trnscope.core.base.arrays import (
    equals_any,
    first_of_each,
    is_member,
    order_by_group_start_longest_first,
    row_dtype,
    sorted_unique,
)
from trnscope.core.link.nesting import nest
from trnscope.core.model import op_tree
from trnscope.core.model.roles import (
    DEVICE_ROLES,
    FLOW_FWDBWD_CATEGORIES,
    FLOW_TO_DEVICE_CATEGORIES,
    Role,
)
from trnscope.core.model.trace import EventColumns, Trace
from trnscope.core.model.vocab import NONE_ID, PH_FLOW_END, PH_FLOW_START, PH_INSTANT, PH_X

# Names PyTorch drops before building its tree (profiler_util._filter_name).
FILTERED_NAMES = frozenset(
    {
        "[memory]",
        "[OutOfMemory]",
        "profiler::_record_function_enter",
        "profiler::_record_function_enter_new",
        "profiler::_record_function_exit",
        "aten::is_leaf",
        "aten::output_nr",
        "aten::_version",
    }
)
MEMORY_EVENT_NAMES = frozenset({"[memory]"})


class LinkMethod(IntEnum):
    """How a device event (or a NeuronCore execution) was tied to the op that launched
    it: the one vocabulary of every linker."""

    NONE = 0
    EXTERNAL_ID = 1
    CORRELATION = 2
    FLOW = 3  # ac2g / async flow events
    NEURON_MAPPING = 4  # framework_mapping_*.json: nrta_seq_id → Sequence number
    NEURON_FLOW = 5  # system-profile flow_id shared with a framework event
    NEURON_TIME = 6  # the request ran on an op's thread inside the op
    NEURON_TRACE = 7  # the device activity is in trace.json itself (correlate_device_time)
    # correlation or flow to a runtime call that carries no External id: its op is the
    # op or annotation around the call (a CUDA graph's replay).  PyTorch links no such
    # work to any op, so key_averages() figures leave it out (``optable.event_times``)
    ENCLOSING_OP = 8

    @property
    def label(self) -> str:
        return _METHOD_LABELS[self]


_METHOD_LABELS = {
    LinkMethod.NONE: "unlinked",
    LinkMethod.EXTERNAL_ID: "External id",
    LinkMethod.CORRELATION: "correlation",
    LinkMethod.FLOW: "flow",
    LinkMethod.NEURON_MAPPING: "framework_mapping",
    LinkMethod.NEURON_FLOW: "flow_id",
    LinkMethod.NEURON_TIME: "time",
    LinkMethod.NEURON_TRACE: "trace.json device activity",
    LinkMethod.ENCLOSING_OP: "enclosing op",
}


def _before_first_op(ev: EventColumns, rows: np.ndarray) -> int:
    """How many of ``rows`` start before the first profiled op: only those can have been
    launched before the capture window (the others lack link information for another
    reason — the trace does not write it for them)."""
    ops = np.flatnonzero(ev.role == int(Role.OP))
    if rows.size == 0:
        return 0
    if ops.size == 0:
        return int(rows.size)
    return int((ev.ts[rows] < ev.ts[ops].min()).sum())


class LinkReport(msgspec.Struct):
    device_events: int = 0  # kernels and memory operations
    linked: int = 0
    by_external_id: int = 0
    by_correlation: int = 0
    by_flow: int = 0
    by_enclosing_op: int = 0  # launched by a runtime call of no op id: charged to the op around it
    unlinkable: int = 0  # no External id, runtime call or flow: launched before the window
    outside_ops: int = 0  # launched by a runtime call that no profiled op encloses
    unresolved: int = 0  # carried an op link that points at nothing in the trace
    before_window: int = 0  # of the unlinkable: started before the first profiled op (checked by time)

    @property
    def linkable(self) -> int:
        """Device events whose link information leads to an op, or should."""
        return self.device_events - self.unlinkable - self.outside_ops

    @property
    def coverage(self) -> float:
        """Share of all device events that were attributed to an op (1.0 when there
        are none).  The rest are counted by reason: ``unlinkable`` (launched before the
        capture window), ``outside_ops``, ``unresolved``."""
        return self.linked / self.device_events if self.device_events else 1.0

    @property
    def linkable_coverage(self) -> float:
        """Share of the device events that carry link information which were attributed:
        how well the linker did with what the trace gave it."""
        return self.linked / self.linkable if self.linkable else 1.0


class Links(msgspec.Struct):
    """Everything derived by linking, indexed by trace row.

    Two trees of host events, built by the same stack algorithm: the *host tree* holds
    every host event, Python frames included, and is what the drill-down, stacks and
    timeline walk; the *op tree* is the one ``key_averages()`` reads, which leaves the
    frames out under the classic rule (``trnscope.core.model.op_tree``).  Where the rule
    puts them in, or the trace has none, the two are one (the same arrays)."""

    in_tree: np.ndarray  # bool: host event that takes part in the host tree
    # rows are int32 (int64 from 2**31 events on: ``_as_rows``)
    raw_parent: np.ndarray  # parent in the host tree (drill-down, stacks), -1 for roots
    depth: np.ndarray  # int32 depth in the host tree, -1 outside it
    in_op_tree: np.ndarray  # bool: host event that is a node of PyTorch's op tree
    op_depth: np.ndarray  # int32 depth in the op tree before duplicate removal, -1 outside it
    parent: np.ndarray  # parent in the op tree after duplicate removal, -1 for roots
    merged_into: np.ndarray  # row this event was folded into by duplicate removal, else -1
    device_op: np.ndarray  # for device rows: the launching op row, -1
    device_launch: np.ndarray  # for device rows: the runtime row that launched it, -1
    link_method: np.ndarray  # uint8 LinkMethod per row
    report: LinkReport
    # int64 for backward ops: their forward op row, -1.  Only the drill-down reads it,
    # so ``forward_links`` computes it on first use rather than before the first table.
    forward_of: np.ndarray | None = None


def _host_tree_mask(trace: Trace) -> np.ndarray:
    ev = trace.events
    host_roles = np.array(
        [
            int(Role.OP),
            int(Role.ANNOTATION),
            int(Role.PYTHON),
            int(Role.RUNTIME),
            int(Role.DRIVER),
            int(Role.OTHER_HOST),
        ],
        dtype=np.uint8,
    )
    is_host_role = np.zeros(256, dtype=bool)
    is_host_role[host_roles] = True
    in_tree = (ev.ph == PH_X) & is_host_role[ev.role]
    overhead = np.array([c.lower() == "overhead" for c in trace.cats] or [False], dtype=bool)
    if overhead.any():
        in_tree |= (ev.ph == PH_X) & (ev.role == int(Role.PROFILER)) & overhead[ev.cat]
    # Instants of the profiler itself ("Record Window End", iteration markers) carry no
    # category and are not PyTorch events; [memory] records are handled apart.
    instant_cat = np.array([c.lower() == "cpu_instant_event" for c in trace.cats] or [False], dtype=bool)
    if instant_cat.any():
        in_tree |= (ev.ph == PH_INSTANT) & instant_cat[ev.cat]
    filtered = np.array([n in FILTERED_NAMES for n in trace.names] or [False], dtype=bool)
    if filtered.any():
        in_tree &= ~filtered[ev.name]
    return in_tree


def _remove_duplicate_nodes(trace: Trace, parent: np.ndarray, in_tree: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """PyTorch's ``_remove_dup_nodes``: a child with its parent's name that is its only
    child is folded into the parent (its children move up).

    PyTorch repeats an in-order pass until nothing changes; its first pass already
    reaches the end state: folding a child into its parent gives the parent exactly the
    child's children, so the next link down folds iff it did in the original tree.
    Every same-name only-child chain therefore collapses into its top.  That is found
    here by pointer jumping (O(n log depth)), not by one pass per link, which took
    quadratic time on long chains (many identical events on one thread).

    Returns the input ``parent`` array itself when nothing folds (most traces)."""
    merged_into = np.full(parent.size, -1, dtype=np.int64)
    name = trace.events.name
    nested = np.flatnonzero(in_tree & (parent >= 0))
    if not (name[nested] == name[parent[nested]]).any():
        return parent, merged_into
    counts = np.bincount(parent[nested], minlength=parent.size)
    folds = np.zeros(parent.size, dtype=bool)
    p = parent[nested]
    folds[nested] = (name[nested] == name[p]) & (counts[p] == 1)
    # top[i]: i itself, or for a folded row the top of its chain (its nearest ancestor
    # that does not fold), by repeated doubling of "one step up while folding".
    top = np.arange(parent.size, dtype=np.int64)
    top[folds] = parent[folds]
    while True:
        climbing = folds[top]
        if not climbing.any():
            break
        top = np.where(climbing, top[top], top)
    parent = parent.copy()
    moved = np.flatnonzero(in_tree & (parent >= 0) & ~folds)
    parent[moved] = top[parent[moved]]
    merged_into[folds] = top[folds]
    parent[folds] = -1
    return parent, merged_into


def _op_by_external_id(trace: Trace, op_mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    rows = np.flatnonzero(op_mask & (trace.events.external_id != NONE_ID))
    ids = trace.events.external_id[rows]
    order = np.argsort(ids, kind="stable")
    return ids[order], rows[order]


def lookup(keys: np.ndarray, values: np.ndarray, query: np.ndarray) -> np.ndarray:
    if keys.size == 0 or query.size == 0:
        return np.full(query.size, -1, dtype=np.int64)
    pos = np.searchsorted(keys, query)
    pos_c = np.minimum(pos, keys.size - 1)
    found = keys[pos_c] == query
    return np.where(found, values[pos_c], -1)


def enclosing_op(parent: np.ndarray, role: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Innermost op/annotation ancestor of each row (by the raw tree), -1 if none."""
    result = np.full(rows.size, -1, dtype=np.int64)
    current = parent[rows].copy()
    todo = np.arange(rows.size)
    op_roles = (int(Role.OP), int(Role.ANNOTATION))
    while todo.size:
        valid = current[todo] >= 0
        todo = todo[valid]
        if todo.size == 0:
            break
        is_op = equals_any(role[current[todo]], op_roles)
        result[todo[is_op]] = current[todo[is_op]]
        todo = todo[~is_op]
        current[todo] = parent[current[todo]]
    return result


class _PointIndex:
    """X events of some kind sorted by (thread, start), to bind flow points to them."""

    def __init__(self, trace: Trace, candidates: np.ndarray, low: int, span: int) -> None:
        ev = trace.events
        # (among events that start together, the longest duration is the latest end)
        order = order_by_group_start_longest_first(ev.thread[candidates], ev.ts[candidates], ev.dur[candidates])
        self.rows = candidates[order]
        self.keys = ev.thread[self.rows].astype(np.int64) * span + (ev.ts[self.rows] - low)
        self.low, self.span = low, span


def _point_index(trace: Trace, candidates: np.ndarray) -> _PointIndex | None:
    ev = trace.events
    if candidates.size == 0:
        return None
    low = int(ev.ts.min())
    span = int(ev.ts.max()) - low + 2
    if (len(trace.threads) + 1) * span >= 2**62:
        return None  # pathological clock range: flows stay unbound
    return _PointIndex(trace, candidates, low, span)


def _bind_points(trace: Trace, points: np.ndarray, index: _PointIndex | None, parent: np.ndarray | None) -> np.ndarray:
    """Bind flow points to the X event on the same thread that starts at the same time,
    else to the innermost one that encloses it.  -1 if none."""
    ev = trace.events
    bound = np.full(points.size, -1, dtype=np.int64)
    if points.size == 0 or index is None:
        return bound
    cand, c_key = index.rows, index.keys
    p_key = ev.thread[points].astype(np.int64) * index.span + (ev.ts[points] - index.low)
    exact = np.searchsorted(c_key, p_key, side="left")
    exact_c = np.minimum(exact, cand.size - 1)
    hit = c_key[exact_c] == p_key
    bound[hit] = cand[exact_c[hit]]
    miss = np.flatnonzero(~hit)
    if miss.size:
        last = np.searchsorted(c_key, p_key[miss], side="right") - 1
        ok = last >= 0
        miss, last = miss[ok], last[ok]
        row = cand[last]
        same_thread = ev.thread[row] == ev.thread[points[miss]]
        miss, row = miss[same_thread], row[same_thread]
        t = ev.ts[points[miss]]
        for _ in range(64):
            inside = (ev.ts[row] <= t) & (t < ev.ts[row] + np.maximum(ev.dur[row], 0))
            bound[miss[inside]] = row[inside]
            if parent is None:
                break
            rest = ~inside
            miss, row, t = miss[rest], parent[row[rest]], t[rest]
            keep = row >= 0
            miss, row, t = miss[keep], row[keep], t[keep]
            if miss.size == 0:
                break
    return bound


def _flow_pairs(trace: Trace, categories: frozenset[str]) -> tuple[np.ndarray, np.ndarray]:
    """(start row, end row) of flow events of the given categories, paired by id."""
    ev = trace.events
    cat_ok = np.array([c.lower() in categories for c in trace.cats] or [False], dtype=bool)
    flows = cat_ok[ev.cat] & (ev.role == int(Role.FLOW))
    starts = np.flatnonzero(flows & (ev.ph == PH_FLOW_START))
    ends = np.flatnonzero(flows & (ev.ph == PH_FLOW_END))
    if starts.size == 0 or ends.size == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    s_key = ev.flow_id[starts] * 64 + ev.cat[starts]
    order = np.argsort(s_key, kind="stable")
    s_sorted, s_rows = s_key[order], starts[order]
    e_key = ev.flow_id[ends] * 64 + ev.cat[ends]
    match = lookup(s_sorted, s_rows, e_key)
    ok = match >= 0
    return match[ok], ends[ok]


class _HostTrees(msgspec.Struct):
    in_tree: np.ndarray
    raw_parent: np.ndarray
    depth: np.ndarray
    in_op_tree: np.ndarray
    op_depth: np.ndarray
    parent: np.ndarray  # the op tree's, after duplicate removal
    merged_into: np.ndarray


def _host_tree(trace: Trace) -> _HostTrees:
    """The host tree, and the op tree where the classic rule leaves Python frames out
    of it: nested on its own, since a frame that overlaps an op partly changes what the
    stack algorithm finds around it (skipping frames in the host tree would not do)."""
    ev = trace.events
    end = ev.ts + np.maximum(ev.dur, 0)
    in_tree = _host_tree_mask(trace)
    raw_parent, depth = _nested(trace, end, in_tree)
    in_op_tree, op_parent, op_depth = in_tree, raw_parent, depth
    if trace.op_tree == op_tree.CLASSIC:
        frames = in_tree & (ev.role == int(Role.PYTHON))
        if frames.any():
            in_op_tree = in_tree & ~frames
            op_parent, op_depth = _nested(trace, end, in_op_tree)
    del end
    parent, merged_into = _remove_duplicate_nodes(trace, op_parent, in_op_tree)
    return _HostTrees(in_tree, raw_parent, depth, in_op_tree, op_depth, parent, merged_into)


def _nested(trace: Trace, end: np.ndarray, members: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Parent (-1: a root or not a member) and depth (-1: not a member) of every row."""
    ev = trace.events
    rows = np.flatnonzero(members)
    p, d = nest(ev.ts, end, ev.thread, rows)
    # (allocated only now: the nesting sets the link's peak memory)
    parent = np.full(len(ev), -1, dtype=np.int64)
    depth = np.full(len(ev), -1, dtype=np.int32)
    parent[rows] = p
    depth[rows] = d
    return parent, depth


_OVERLAP_MIN_EVENTS = 1_000_000


class _DeviceLookups(msgspec.Struct):
    """What the device links need that does not depend on the host tree."""

    device_rows: np.ndarray
    launch_rows: np.ndarray  # runtime/driver calls
    launch_op: np.ndarray  # per launch row: its op by External id, -1
    launch: np.ndarray  # per device row: its launch row by correlation, -1
    d_ext: np.ndarray
    d_corr: np.ndarray
    flow_starts: np.ndarray  # flows still needed: device events correlation did not tie
    flow_ends: np.ndarray
    by_ext: np.ndarray  # per device row: its op by External id, -1
    # the per-row outputs, allocated here so that touching their fresh memory overlaps
    # the tree's construction too
    device_op: np.ndarray
    device_launch: np.ndarray
    method: np.ndarray


def _device_lookups(trace: Trace) -> _DeviceLookups:
    ev = trace.events
    op_mask = equals_any(ev.role, (Role.OP, Role.ANNOTATION)) & (ev.ph == PH_X)
    op_keys, op_rows = _op_by_external_id(trace, op_mask)
    device_mask = equals_any(ev.role, DEVICE_ROLES) & (ev.ph == PH_X)
    device_rows = np.flatnonzero(device_mask)

    # runtime/driver calls: the op each one belongs to (by External id here; by the
    # enclosing op once the host tree is known)
    launch_mask = equals_any(ev.role, (Role.RUNTIME, Role.DRIVER)) & (ev.ph == PH_X)
    launch_rows = np.flatnonzero(launch_mask)
    launch_ext = ev.external_id[launch_rows]
    launch_corr = ev.correlation[launch_rows]
    launch_op = lookup(
        op_keys, op_rows, np.where((launch_ext != launch_corr) & (launch_ext != NONE_ID), launch_ext, -(2**62))
    )

    corr_valid = launch_corr != NONE_ID
    corr_order = np.argsort(launch_corr[corr_valid], kind="stable")
    corr_keys = launch_corr[corr_valid][corr_order]
    corr_rows = launch_rows[corr_valid][corr_order]

    d_ext = ev.external_id[device_rows]
    d_corr = ev.correlation[device_rows]
    # B first for the launch row (so the drill-down can show it), then A for the op.
    launch = lookup(corr_keys, corr_rows, np.where(d_corr != NONE_ID, d_corr, -(2**62)))
    # C: flows from a runtime call to a device event — only needed for device events
    # the correlation did not already tie to their launch (flow ids are correlations).
    starts, ends = _flow_pairs(trace, FLOW_TO_DEVICE_CATEGORIES)
    if starts.size:
        needed = ~is_member(sorted_unique(d_corr[launch >= 0]), ev.flow_id[ends])
        starts, ends = starts[needed], ends[needed]
    by_ext = lookup(op_keys, op_rows, np.where((d_ext != NONE_ID) & (d_ext != d_corr), d_ext, -(2**62)))
    n = len(ev)
    return _DeviceLookups(
        device_rows,
        launch_rows,
        launch_op,
        launch,
        d_ext,
        d_corr,
        starts,
        ends,
        by_ext,
        device_op=np.full(n, -1, dtype=np.int64),
        device_launch=np.full(n, -1, dtype=np.int64),
        method=np.zeros(n, dtype=np.uint8),
    )


def link(trace: Trace) -> Links:
    ev = trace.events
    n = len(ev)
    # The host tree and the device lookups are independent: on big traces the tree is
    # built in a helper thread while this one does the lookups (NumPy's sorts and
    # searches release the GIL).
    if n >= _OVERLAP_MIN_EVENTS and (os.cpu_count() or 1) > 1:
        from concurrent.futures import ThreadPoolExecutor  # (~4 ms a small trace need not import)

        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="trnscope-tree") as pool:
            tree = pool.submit(_host_tree, trace)
            found = _device_lookups(trace)
            trees = tree.result()
    else:
        trees = _host_tree(trace)
        found = _device_lookups(trace)
    raw_parent = trees.raw_parent
    device_rows, launch_rows, launch, by_ext = found.device_rows, found.launch_rows, found.launch, found.by_ext
    starts, ends = found.flow_starts, found.flow_ends

    device_op, device_launch, method = found.device_op, found.device_launch, found.method
    via_flow = np.full(device_rows.size, -1, dtype=np.int64)
    launch_op_full, enclosed = _ops_of_launches(trace, found, raw_parent)
    if starts.size:
        s_bound = _bind_points(trace, starts, _point_index(trace, launch_rows), raw_parent)
        e_bound = _bind_points(trace, ends, _point_index(trace, device_rows), None)
        ok = (s_bound >= 0) & (e_bound >= 0)
        position = np.searchsorted(device_rows, e_bound[ok])
        via_flow[position] = s_bound[ok]

    by_corr = np.where(launch >= 0, launch_op_full[np.maximum(launch, 0)], -1)
    by_flow = np.where(via_flow >= 0, launch_op_full[np.maximum(via_flow, 0)], -1)

    op = np.where(by_ext >= 0, by_ext, np.where(by_corr >= 0, by_corr, by_flow))
    route = np.where(by_corr >= 0, launch, via_flow)
    by_time = (by_ext < 0) & (op >= 0) & enclosed[np.maximum(route, 0)]
    chosen = np.where(
        by_ext >= 0,
        LinkMethod.EXTERNAL_ID,
        np.where(
            by_time,
            LinkMethod.ENCLOSING_OP,
            np.where(by_corr >= 0, LinkMethod.CORRELATION, np.where(by_flow >= 0, LinkMethod.FLOW, LinkMethod.NONE)),
        ),
    )
    device_op[device_rows] = op
    device_launch[device_rows] = np.where(launch >= 0, launch, via_flow)
    method[device_rows] = chosen

    report = _link_report(ev, found, op, chosen, launch, via_flow)
    raw_rows = _as_rows(raw_parent)
    return Links(
        in_tree=trees.in_tree,
        raw_parent=raw_rows,
        depth=trees.depth,
        in_op_tree=trees.in_op_tree,
        op_depth=trees.op_depth,
        # one array where nothing folds and the op tree is the host tree (most traces)
        parent=raw_rows if trees.parent is raw_parent else _as_rows(trees.parent),
        merged_into=_as_rows(trees.merged_into),
        device_op=_as_rows(device_op),
        device_launch=_as_rows(device_launch),
        link_method=method,
        report=report,
    )


def _ops_of_launches(trace: Trace, found: _DeviceLookups, raw_parent: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row: the op of each runtime/driver call (by its External id, else the op
    or range around it; -1), and whether that is only a range around a call of no op id.

    Such a call runs in no aten op (a CUDA graph replayed in ProfilerStep#N): PyTorch
    pushes an op id for ops, not for ranges, and links its work nowhere.  A missing id
    inside an aten op, or an older writer's External id equal to the correlation, hides
    a link PyTorch had in memory: the op around the call is that link."""
    ev = trace.events
    n = len(ev)
    launch_rows, launch_op = found.launch_rows, found.launch_op
    unresolved = launch_op < 0
    enclosed = np.zeros(n, dtype=bool)
    if unresolved.any():
        launch_op[unresolved] = enclosing_op(raw_parent, ev.role, launch_rows[unresolved])
        in_range = unresolved & (launch_op >= 0)
        in_range[in_range] = ev.role[launch_op[in_range]] == int(Role.ANNOTATION)
        enclosed[launch_rows[in_range & (ev.external_id[launch_rows] == NONE_ID)]] = True
    launch_op_full = np.full(n, -1, dtype=np.int64)
    launch_op_full[launch_rows] = launch_op
    return launch_op_full, enclosed


def _link_report(
    ev: EventColumns,
    found: _DeviceLookups,
    op: np.ndarray,
    chosen: np.ndarray,
    launch: np.ndarray,
    via_flow: np.ndarray,
) -> LinkReport:
    """How the device events were linked, counted over kernels and memory operations."""
    device_rows, d_ext, d_corr, by_ext = found.device_rows, found.d_ext, found.d_corr, found.by_ext
    counted = equals_any(ev.role[device_rows], (Role.KERNEL, Role.MEMORY))
    has_info = (d_ext != NONE_ID) & (d_ext != d_corr) | (launch >= 0) | (via_flow >= 0)
    return LinkReport(
        device_events=int(counted.sum()),
        linked=int((counted & (op >= 0)).sum()),
        by_external_id=int((counted & (chosen == LinkMethod.EXTERNAL_ID)).sum()),
        by_correlation=int((counted & (chosen == LinkMethod.CORRELATION)).sum()),
        by_flow=int((counted & (chosen == LinkMethod.FLOW)).sum()),
        by_enclosing_op=int((counted & (chosen == LinkMethod.ENCLOSING_OP)).sum()),
        unlinkable=int((counted & ~has_info).sum()),
        outside_ops=int((counted & (op < 0) & (by_ext < 0) & ((launch >= 0) | (via_flow >= 0))).sum()),
        unresolved=int((counted & has_info & (op < 0) & ~((launch >= 0) | (via_flow >= 0))).sum()),
        before_window=_before_first_op(ev, device_rows[counted & ~has_info]),
    )


def _as_rows(rows: np.ndarray) -> np.ndarray:
    """Row numbers (or -1) as the links keep them: int32 below 2**31 rows.  Five such
    columns live as long as the trace; at half the width they take 4.8 MB less of
    xDiT's peak (239,091 events), the end of a ``summary`` where every table is built."""
    return rows.astype(row_dtype(rows.size))


def forward_links(trace: Trace, links: Links) -> np.ndarray:
    """Per row, the forward op of a backward op (-1 elsewhere); computed once."""
    if links.forward_of is None:
        ev = trace.events
        op_mask = equals_any(ev.role, (Role.OP, Role.ANNOTATION)) & (ev.ph == PH_X)
        links.forward_of = _forward_backward(trace, op_mask, links.raw_parent)
    return links.forward_of


def _forward_backward(trace: Trace, op_mask: np.ndarray, raw_parent: np.ndarray) -> np.ndarray:
    """Backward op → forward op, from fwdbwd flows, else from ``Sequence number``."""
    ev = trace.events
    n = len(ev)
    forward_of = np.full(n, -1, dtype=np.int64)
    op_rows = np.flatnonzero(op_mask)
    starts, ends = _flow_pairs(trace, FLOW_FWDBWD_CATEGORIES)
    if starts.size:
        ops = _point_index(trace, op_rows)
        fwd = _bind_points(trace, starts, ops, raw_parent)
        bwd = _bind_points(trace, ends, ops, raw_parent)
        ok = (fwd >= 0) & (bwd >= 0)
        forward_of[bwd[ok]] = fwd[ok]
    # Sequence numbers: backward ops are those inside the autograd engine's
    # evaluate_function ranges; their forward op is the outermost op with the same
    # sequence number that is not itself a backward op.
    names = trace.names
    is_bwd_name = np.array(
        [
            n.startswith("autograd::engine::evaluate_function") or n.endswith("Backward0") or n.endswith("Backward1")
            for n in names
        ]
        or [False],
        dtype=bool,
    )
    seq_rows = op_rows[ev.sequence[op_rows] >= 0]
    if seq_rows.size == 0:
        return forward_of
    bwd_rows = seq_rows[is_bwd_name[ev.name[seq_rows]]]
    fwd_rows = seq_rows[~is_bwd_name[ev.name[seq_rows]]]
    if bwd_rows.size == 0 or fwd_rows.size == 0:
        return forward_of
    # outermost forward op per (thread, sequence): the one whose parent lacks that sequence
    fwd_parent = raw_parent[fwd_rows]
    parent_seq = np.where(fwd_parent >= 0, ev.sequence[np.maximum(fwd_parent, 0)], -2)
    outer = fwd_rows[parent_seq != ev.sequence[fwd_rows]]
    order = np.lexsort((ev.ts[outer], ev.sequence[outer]))
    keys, rows = ev.sequence[outer][order], outer[order]
    unique_keys, first = first_of_each(keys)
    found = lookup(unique_keys, rows[first], ev.sequence[bwd_rows])
    todo = forward_of[bwd_rows] < 0
    forward_of[bwd_rows[todo]] = found[todo]
    return forward_of
