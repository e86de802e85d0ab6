"""The op table: ``key_averages()`` computed from a trace, vectorised.

Rules (PyTorch ``profiler_util``; ``shared/reference/kineto-trace-format.md`` §9):
every host event of the op tree and every device event is a row of its group; a host
event's self CPU time is its duration less its direct children's; its device total is
the device time it launched itself plus its children's device totals; device events
count their own duration; groups are keyed by name (``ProfilerStep#N`` →
``ProfilerStep*``), host/device, user annotation or not, and optionally input shapes
or the top of the Python stack.
"""

from __future__ import annotations

from enum import StrEnum

import msgspec
import numpy as np

from trnscope.core.analysis.distribution import Spread, group_spread
from trnscope.core.analysis.row_labels import distinct_names
from trnscope.core.base.arrays import equals_any, group_order, row_dtype, unique_inverse
from trnscope.core.base.jsondepth import decode_bounded
from trnscope.core.link.linker import MEMORY_EVENT_NAMES, LinkMethod, Links
from trnscope.core.model.roles import Role, group_name
from trnscope.core.model.trace import Trace
from trnscope.core.model.vocab import PH_INSTANT, PH_X

DEVICE_LABEL = {
    "cuda": "CUDA",
    "rocm": "HIP",
    "neuron": "NEURON",
    "mtia": "MTIA",
    "xpu": "XPU",
    "privateuse1": "PRIVATEUSE1",
}


class GroupBy(StrEnum):
    OP = "op"
    SHAPE = "shape"
    STACK = "stack"


KIND_NAMES = {
    int(Role.OP): "op",
    int(Role.ANNOTATION): "annotation",
    int(Role.PYTHON): "python",
    int(Role.RUNTIME): "runtime",
    int(Role.DRIVER): "driver",
    int(Role.KERNEL): "kernel",
    int(Role.MEMORY): "memory",
    int(Role.DEVICE_ANNOTATION): "device_annotation",
    int(Role.PROFILER): "profiler",
    int(Role.INSTANT): "instant",
    int(Role.OTHER_HOST): "other",
}


class OpTable(msgspec.Struct):
    """One row per group; times in integer nanoseconds."""

    group_by: str
    device_label: str
    name: list[str]
    shape: list[str]
    stack: list[str]
    role: np.ndarray  # uint8 Role of the group's events
    is_device: np.ndarray  # bool
    is_annotation: np.ndarray  # bool (user_annotation / gpu_user_annotation)
    calls: np.ndarray  # int64
    self_cpu: np.ndarray
    cpu_total: np.ndarray
    self_device: np.ndarray
    device_total: np.ndarray
    instance_rows: np.ndarray  # trace rows, grouped
    instance_offsets: np.ndarray  # group g owns instance_rows[off[g]:off[g+1]]
    total_self_cpu: int
    total_self_device: int  # device work: kernels, copies (device annotations excluded)
    # What "Self <device> %" is a share of: PyTorch's sum_self_device_time_total, every
    # device row's self time, device annotations included.  No row's share exceeds 100%
    # (an annotation's time is in it as its device row).
    device_share_base: int = 0
    # what a screen or a text table shows for the name: the name, with the row's kind
    # after it where another row shares its name (``row_labels.distinct_names``)
    shown_name: list[str] = msgspec.field(default_factory=list)

    def __len__(self) -> int:
        return len(self.name)

    def instances(self, group: int) -> np.ndarray:
        return self.instance_rows[self.instance_offsets[group] : self.instance_offsets[group + 1]]

    def group_of_rows(self, rows: int) -> np.ndarray:
        """Per trace row (``rows`` of them), its group here, -1 for a row in no group:
        a figure that few rows have (memory, FLOPs) is summed from those rows alone."""
        # int32 where it holds every group id: half the memory to fill on 2.9 M rows
        dtype = np.int32 if len(self) < 2**31 - 1 else np.int64
        out = np.full(rows, -1, dtype=dtype)
        out[self.instance_rows] = np.repeat(np.arange(len(self), dtype=dtype), np.diff(self.instance_offsets))
        return out

    def kind(self, group: int) -> str:
        return KIND_NAMES.get(int(self.role[group]), "other")

    def row_groups(self, rows: int) -> RowGroups:
        """``group_of_rows`` made at most once for the figures that read it together."""
        return RowGroups(self, rows)

    def find(self, name: str, shape: str | None = None) -> int:
        for index, candidate in enumerate(self.name):
            if candidate == name and (shape is None or self.shape[index] == shape):
                return index
        return -1


class RowGroups:
    """A table's ``group_of_rows``, made on first use and then shared: the memory and
    the FLOPs columns of one table each read it (8 ms apiece at 2.9 M events), and
    neither does when its figures are already known."""

    def __init__(self, table: OpTable, rows: int) -> None:
        self.table, self.rows = table, rows
        self._groups: np.ndarray | None = None

    def __call__(self) -> np.ndarray:
        if self._groups is None:
            self._groups = self.table.group_of_rows(self.rows)
        return self._groups


class EventTimes(msgspec.Struct):
    """Per-row quantities of key_averages (ns); zero where they do not apply."""

    rows: np.ndarray  # the rows that take part (tree host events, device events, top-level [memory])
    self_cpu: np.ndarray  # indexed by trace row
    cpu_total: np.ndarray
    self_device: np.ndarray
    device_total: np.ndarray


def event_times(trace: Trace, links: Links) -> EventTimes:
    ev = trace.events
    n = len(ev)
    alive = links.in_op_tree & (links.merged_into < 0)
    parent = links.parent

    # Each figure reads the durations of the rows it needs, clipped at zero (an instant
    # in the tree has none): no full-length copy of them beside the five full-length
    # figures this keeps.  Sums by np.add.at: exact in int64, and faster than a float
    # bincount here.
    cpu_total = np.where(alive, ev.dur, 0)
    np.maximum(cpu_total, 0, out=cpu_total)
    children = np.flatnonzero(alive & (parent >= 0))
    self_cpu = cpu_total.copy()
    np.subtract.at(self_cpu, parent[children], cpu_total[children])

    device_rows = np.flatnonzero(
        equals_any(ev.role, (Role.KERNEL, Role.MEMORY, Role.DEVICE_ANNOTATION)) & (ev.ph == PH_X)
    )
    device_dur = _device_durations(trace, device_rows)
    # PyTorch appends kernels and memory operations to the op that launched them; an
    # annotation's range on the device (gpu_user_annotation) is a row of its own and
    # adds nothing to its host annotation (seen in torch 2.11's key_averages on CUDA)
    # (nor is work whose op is only the one around a launch of no op id: ENCLOSING_OP)
    owner = np.where(
        (ev.role[device_rows] == int(Role.DEVICE_ANNOTATION))
        | (links.link_method[device_rows] == int(LinkMethod.ENCLOSING_OP)),
        -1,
        _owner_after_folding(links, links.device_op[device_rows]),
    )

    own_kernels = np.zeros(n, dtype=np.int64)
    attributed = owner >= 0
    np.add.at(own_kernels, owner[attributed], device_dur[attributed])
    del owner, attributed
    device_total = own_kernels.copy()
    # children before parents: deepest first
    order = children[_deepest_first(links.op_depth[children])]
    if order.size:
        levels = links.op_depth[order]
        boundaries = np.flatnonzero(np.diff(levels)) + 1
        for level_rows in np.split(order, boundaries):
            carrying = level_rows[device_total[level_rows] != 0]
            np.add.at(device_total, parent[carrying], device_total[carrying])
    del order, children
    device_total[device_rows] = device_dur
    self_device = own_kernels  # nothing reads own_kernels after this: no copy
    self_device[device_rows] = device_dur

    memory_rows = _top_level_memory_records(trace, links)
    # kept to the end of a summary, as are the op keys' inverse and the tables'
    # instance rows made from it: int32 below 2**31 rows (peak RSS, issue 20)
    rows = np.concatenate([np.flatnonzero(alive), device_rows, memory_rows], dtype=row_dtype(n), casting="same_kind")
    return EventTimes(rows, self_cpu, cpu_total, self_device, device_total)


# Kineto writes a gpu_user_annotation 1 ns before the first device op it spans and
# 1 ns after the last (kineto-trace-format.md §5.2); key_averages() has the span itself:
# 597.891 us where the file's five ranges add to 597.901 us (torch 2.11, CUDA).
DEVICE_ANNOTATION_WIDENING_NS = 2


def _device_durations(trace: Trace, device_rows: np.ndarray) -> np.ndarray:
    """Device time of each device row: its duration, less the widening Kineto gives an
    annotation's device range when it writes the file."""
    ev = trace.events
    dur = np.maximum(ev.dur[device_rows], 0)
    annotation = ev.role[device_rows] == int(Role.DEVICE_ANNOTATION)
    if annotation.any():
        dur[annotation] = np.maximum(dur[annotation] - DEVICE_ANNOTATION_WIDENING_NS, 0)
    return dur


def _deepest_first(depth: np.ndarray) -> np.ndarray:
    """Positions by depth, deepest first, ties in order (a radix sort for any real tree)."""
    if depth.size == 0:
        return np.empty(0, dtype=np.int64)
    top = int(depth.max())
    if top - int(depth.min()) < 1 << 16:
        return np.argsort((top - depth).astype(np.uint16), kind="stable")
    return np.argsort(-depth, kind="stable")


def _owner_after_folding(links: Links, owner: np.ndarray) -> np.ndarray:
    """Where PyTorch counts an op's kernels once duplicate nodes are folded.

    ``_remove_dup_nodes`` sets ``parent.kernels = child.kernels`` for each folded
    child, so a surviving op ends up with the kernels of the deepest node folded into
    it, and its own (and any intermediate node's) kernels are no longer counted."""
    merged = links.merged_into
    folded = np.flatnonzero(merged >= 0)
    if folded.size == 0:
        return owner
    survivor = merged[folded]
    while True:  # (duplicate removal points each folded row at its chain's top already)
        further = merged[survivor] >= 0
        if not further.any():
            break
        survivor[further] = merged[survivor[further]]
    # per survivor, its deepest folded row (the first of them on a tie): sorted by
    # survivor, then deepest first, then row
    by_survivor = np.lexsort((folded, -links.op_depth[folded].astype(np.int64), survivor))
    survivors = survivor[by_survivor]
    first = np.ones(survivors.size, dtype=bool)
    first[1:] = survivors[1:] != survivors[:-1]
    survivors, deepest = survivors[first], folded[by_survivor][first]

    out = owner.copy()
    valid = np.flatnonzero(owner >= 0)
    op = owner[valid]
    folded_op = merged[op] >= 0
    # a folded op's kernels count in its survivor if it is the survivor's deepest fold
    rows, ops = valid[folded_op], op[folded_op]
    top = survivor[np.searchsorted(folded, ops)]
    out[rows] = np.where(deepest[np.searchsorted(survivors, top)] == ops, top, -1)
    # an op that absorbed folded children lost its own kernels
    rows, ops = valid[~folded_op], op[~folded_op]
    at = np.minimum(np.searchsorted(survivors, ops), survivors.size - 1)
    out[rows[survivors[at] == ops]] = -1
    return out


def _top_level_memory_records(trace: Trace, links: Links) -> np.ndarray:
    """[memory] records that no host event's interval covers become rows of their own
    (``_parse_kineto_results``: "output top-level memory events")."""
    ev = trace.events
    memory_name = np.array([n in MEMORY_EVENT_NAMES for n in trace.names] or [False], dtype=bool)
    records = np.flatnonzero((ev.ph == PH_INSTANT) & memory_name[ev.name])
    if records.size == 0:
        return records
    # Every nested event lies inside its parent (the stack algorithm only nests events
    # that fit), so the op tree's roots cover the same time as all its events together.
    host = np.flatnonzero(links.in_op_tree & (links.op_depth == 0))
    if host.size == 0:
        return records
    order = np.argsort(ev.ts[host], kind="stable")
    starts = ev.ts[host][order]
    ends = np.maximum.accumulate((ev.ts[host] + np.maximum(ev.dur[host], 0))[order])
    t = ev.ts[records]
    last = np.searchsorted(starts, t, side="right") - 1
    covered = (last >= 0) & (ends[np.maximum(last, 0)] >= t)
    return records[~covered]


def _group_names(trace: Trace) -> tuple[np.ndarray, list[str]]:
    """Name id → group name id, with ProfilerStep#N → ProfilerStep*."""
    names: dict[str, int] = {}
    mapping = np.empty(max(len(trace.names), 1), dtype=np.int32)
    for index, name in enumerate(trace.names):
        key = group_name(name)
        mapping[index] = names.setdefault(key, len(names))
    return mapping, list(names.keys())


def python_stacks(trace: Trace, links: Links, depth: int) -> tuple[np.ndarray, list[str]]:
    """For every row, an id of its innermost ``depth`` Python frames (from
    ``python_function`` ancestors, or the 2021 ``Call stack`` argument)."""
    if depth < 1:
        raise ValueError(f"a stack key needs at least one frame (depth {depth})")
    ev = trace.events
    n = len(ev)
    stack_id = np.full(n, -1, dtype=np.int64)
    texts: dict[str, int] = {}
    legacy = np.flatnonzero(ev.stack >= 0)
    if legacy.size:
        for row in legacy.tolist():
            frames = [f.strip() for f in trace.stacks[int(ev.stack[row])].split(";") if f.strip()]
            stack_id[row] = texts.setdefault(" ← ".join(frames[:depth]), len(texts))
    python_frames = np.flatnonzero(ev.role == int(Role.PYTHON))
    if python_frames.size == 0:
        return stack_id, list(texts.keys())
    nearest_py = _nearest_python_ancestor(trace, links)
    rows = np.flatnonzero((nearest_py >= 0) & (stack_id < 0))
    if rows.size == 0:
        return stack_id, list(texts.keys())
    # Frames by ordinal; ordinal ``count`` is "no frame" (its name -1, its parent itself),
    # which a missing ancestor (-1) reaches as the ordinal table's last entry.
    count = python_frames.size
    ordinal = np.full(n + 1, count, dtype=np.int32 if count < 2**31 - 1 else np.int64)
    ordinal[python_frames] = np.arange(count, dtype=ordinal.dtype)
    parent_frame = np.append(ordinal[nearest_py[python_frames]], count)
    frame_name = np.append(ev.name[python_frames].astype(np.int64), -1)
    # Keys only for the frames some row sits under (often under half of them).
    row_frame = ordinal[nearest_py[rows]]
    needed = np.zeros(count, dtype=bool)
    needed[row_frame] = True
    # A frame's key names its innermost ``depth`` frames: built level by level as
    # (previous key, frame name) pairs packed into one int64 and numbered.
    width = len(trace.names) + 1
    current = np.flatnonzero(needed)
    key = np.full(current.size, -1, dtype=np.int64)
    texts_now: list[str] = []  # per key of the level built last: its frames' names, innermost first
    for level in range(depth):
        unique, key = unique_inverse((key + 1) * width + (frame_name[current] + 1))
        frames = (unique % width - 1).tolist()
        if level == 0:  # every needed frame exists: no -1 here
            texts_now = [trace.names[f] for f in frames]
        else:
            before = texts_now
            texts_now = [
                before[p] + " ← " + trace.names[f] if f >= 0 else before[p]
                for p, f in zip((unique // width - 1).tolist(), frames)
            ]
        current = parent_frame[current]
    ids = np.array([texts.setdefault(text, len(texts)) for text in texts_now], dtype=np.int64)
    # each frame's stack id first, then one lookup per row (not three)
    frame_stack = np.full(count, -1, dtype=np.int64)
    frame_stack[needed] = ids[key]
    stack_id[rows] = frame_stack[row_frame]
    return stack_id, list(texts.keys())


# Passes that climb one step each before the rows still climbing jump instead.
_CLIMB_PASSES = 32


def _nearest_python_ancestor(trace: Trace, links: Links) -> np.ndarray:
    """Per row, its nearest ``python_function`` ancestor in the raw tree (-1: none).

    One pass over every row answers those right under a frame; the rest climb their
    parent chains together, one step per pass, leaving the pass that reaches a frame
    (or a root).  Most rows sit right under a frame or one op below it, so the rows
    still climbing shrink fast.  Ops nested deeper than ``_CLIMB_PASSES`` (a hostile
    file: 200,000 nested ops took 84 s) finish by pointer jumping instead: each looks at
    the row its pointer names — a frame there is the answer, a row already answered
    hands its answer over, else the pointer jumps to that row's own pointer, twice as far
    up — about log₂(depth) passes.  No frame lies between a row and its pointer, so the
    answers stay exact."""
    ev = trace.events
    n = len(ev)
    parent = links.raw_parent
    in_tree = links.in_tree
    # one more entry each, read through a parent or pointer of -1: no frame, no answer
    is_py = np.zeros(n + 1, dtype=bool)
    is_py[:n] = ev.role == int(Role.PYTHON)
    answer = np.full(n + 1, -1, dtype=np.int64)
    answer[:n] = np.where(is_py[parent] & in_tree, parent, -1)
    rows = np.flatnonzero((answer[:n] < 0) & (parent >= 0) & in_tree)
    above = parent[parent[rows]]  # their parent is no frame: look one step higher
    for _ in range(_CLIMB_PASSES):
        has_parent = above >= 0
        rows, above = rows[has_parent], above[has_parent]
        if not rows.size:
            return answer[:n]
        found = is_py[above]
        answer[rows[found]] = above[found]
        climbing = ~found
        rows, above = rows[climbing], parent[above[climbing]]
    answered = np.ones(n + 1, dtype=bool)  # a row no longer climbing has its answer
    answered[rows] = False
    pointer = np.empty(n, dtype=parent.dtype)  # read only where a row has no answer yet
    pointer[rows] = above
    while rows.size:
        target = pointer[rows]
        frame = is_py[target]
        handed = ~frame & answered[target]
        answer[rows[frame]] = target[frame]
        answer[rows[handed]] = answer[target[handed]]
        answered[rows[frame | handed]] = True
        still = ~(frame | handed)
        rows = rows[still]
        pointer[rows] = pointer[target[still]]
    return answer[:n]


def shape_keys(shapes: list[str]) -> tuple[np.ndarray, list[str]]:
    """Input-shape id → the id of the key ``key_averages(group_by_input_shape=True)``
    groups it under, and those keys' texts.  PyTorch records a tensor-list argument
    (``TensorList`` in "Input type"; in "Input Dims" a list of shapes) as ``[]``, so
    ``cat`` of two tensors and of three share one row."""
    keys: dict[str, int] = {}
    mapping = np.empty(max(len(shapes), 1), dtype=np.int64)
    for index, text in enumerate(shapes):
        mapping[index] = keys.setdefault(_tensor_lists_as_empty(text), len(keys))
    return mapping, list(keys)


def _tensor_lists_as_empty(text: str) -> str:
    compact = text.replace(" ", "")
    if "[[[" not in compact and ",[[" not in compact:  # no argument is a list of shapes
        return text
    try:
        dims, _deep = decode_bounded(text)
    except msgspec.DecodeError:
        return text
    if not isinstance(dims, list):
        return text
    flat = [[] if isinstance(arg, list) and any(isinstance(d, list) for d in arg) else arg for arg in dims]
    return msgspec.json.encode(flat).decode().replace(",", ", ")


class OpKeys(msgspec.Struct):
    """The rows that take part in an op table and their op key (group name, device or
    host, annotation or not): ``key_averages()``'s key before shapes or stacks.  Every
    grouping refines it, so an analysis computes it once per step, not once per
    grouping."""

    rows: np.ndarray  # trace rows (int32 below 2**31 rows)
    packed: np.ndarray  # sorted distinct keys: group name id << 2 | device << 1 | annotation
    inverse: np.ndarray  # per entry of ``rows``: its key's position in ``packed`` (int32)
    group_names: list[str]  # group name id → text


_DEVICE_ROLES = np.zeros(256, dtype=np.int64)
_DEVICE_ROLES[[int(Role.KERNEL), int(Role.MEMORY), int(Role.DEVICE_ANNOTATION)]] = 1
_ANNOTATION_ROLES = np.zeros(256, dtype=np.int64)
_ANNOTATION_ROLES[[int(Role.ANNOTATION), int(Role.DEVICE_ANNOTATION)]] = 1


def op_keys(trace: Trace, times: EventTimes, rows_mask: np.ndarray | None = None) -> OpKeys:
    rows = times.rows
    if rows_mask is not None:
        rows = rows[rows_mask[rows]]
    name_map, group_names = _group_names(trace)
    role = trace.events.role[rows]
    packed = (name_map[trace.events.name[rows]].astype(np.int64) << 2) | (_DEVICE_ROLES[role] << 1)
    packed |= _ANNOTATION_ROLES[role]
    unique, inverse = unique_inverse(packed)
    return OpKeys(rows, unique, inverse.astype(np.int32), group_names)  # (fewer keys than rows)


def _refined(keys: OpKeys, extra: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Each group's (group name id, device, annotation[, extra]) and each row's group:
    the op keys, split further by ``extra`` (a shape or stack id per row, -1 none)."""
    packed = keys.packed
    decoded = [packed >> 2, (packed >> 1) & 1, packed & 1]
    if extra is None:
        return np.stack(decoded, axis=1), keys.inverse
    shifted = extra + 1
    width = int(shifted.max(initial=0)) + 1
    if packed.size * width < 2**62:  # one int64 per row: a 1-D unique, several times faster
        pairs, inverse = unique_inverse(keys.inverse.astype(np.int64) * width + shifted)
        first, value = pairs // width, pairs % width - 1
    else:
        unique, found = np.unique(np.stack([keys.inverse, extra], axis=1), axis=0, return_inverse=True)
        first, value, inverse = unique[:, 0], unique[:, 1], np.asarray(found).reshape(-1)
    return np.stack([d[first] for d in decoded] + [value], axis=1), inverse


def group_sums(values: np.ndarray, group: np.ndarray, groups: int) -> np.ndarray:
    """Per group, the int64 sum of its ``values``: exact, and faster than a float
    ``bincount`` of the same rows (NumPy's ``ufunc.at`` since 1.25: 3 against 6 ms a
    column for 1.95 M rows)."""
    sums = np.zeros(groups, dtype=np.int64)
    np.add.at(sums, group, values)
    return sums


def build_op_table(
    trace: Trace,
    links: Links,
    group_by: GroupBy | str = GroupBy.OP,
    stack_depth: int = 5,
    rows_mask: np.ndarray | None = None,
    times: EventTimes | None = None,
    keys: OpKeys | None = None,
    stack_ids: tuple[np.ndarray, list[str]] | None = None,
) -> OpTable:
    """``keys`` (``op_keys`` of the same rows) and ``stack_ids`` (``python_stacks`` at
    this depth), when given, are what an analysis already computed for another table."""
    group_by = GroupBy(group_by)
    times = times or event_times(trace, links)
    keys = keys or op_keys(trace, times, rows_mask)
    ev = trace.events
    rows = keys.rows
    stack_texts: list[str] = []
    shape_texts: list[str] = []
    extra = None
    if group_by is GroupBy.SHAPE:
        shape_of, shape_texts = shape_keys(trace.shapes)
        # one gather: a row without input shapes (-1) reads the entry appended for it
        extra = np.append(shape_of[: len(trace.shapes)], -1)[ev.dims[rows]]
    elif group_by is GroupBy.STACK:
        stack_id, stack_texts = stack_ids or python_stacks(trace, links, stack_depth)
        extra = stack_id[rows]
    uniq, inverse = _refined(keys, extra)
    groups = uniq.shape[0]

    def total(values: np.ndarray) -> np.ndarray:
        return group_sums(values[rows], inverse, groups)

    calls = np.bincount(inverse, minlength=groups).astype(np.int64)
    order = group_order(inverse, groups)
    offsets = np.zeros(groups + 1, dtype=np.int64)
    offsets[1:] = np.cumsum(calls)
    first_row = rows[order[offsets[:-1]]] if groups else np.empty(0, dtype=np.int64)
    self_cpu = total(times.self_cpu)
    self_device = total(times.self_device)
    device_rows = uniq[:, 1] == 1 if groups else np.empty(0, bool)
    annotation_rows = uniq[:, 2] == 1 if groups else np.empty(0, bool)
    names = [keys.group_names[int(k)] for k in (uniq[:, 0] if groups else [])]
    shapes = (
        [shape_texts[int(k)] if k >= 0 else "[]" for k in uniq[:, 3]]
        if group_by is GroupBy.SHAPE and groups
        else [""] * groups
    )
    stacks = (
        [stack_texts[int(k)] if k >= 0 else "" for k in uniq[:, 3]]
        if group_by is GroupBy.STACK and groups
        else [""] * groups
    )
    role = ev.role[first_row]
    return OpTable(
        group_by=str(group_by),
        device_label=DEVICE_LABEL.get(trace.device_kind, "DEVICE"),
        name=names,
        shape=shapes,
        stack=stacks,
        shown_name=distinct_names(
            list(zip(names, shapes, stacks)), [KIND_NAMES.get(r, "other") for r in role.tolist()]
        ),
        role=role,
        is_device=device_rows,
        is_annotation=annotation_rows,
        calls=calls,
        self_cpu=self_cpu,
        cpu_total=total(times.cpu_total),
        self_device=self_device,
        device_total=total(times.device_total),
        instance_rows=rows[order],
        instance_offsets=offsets,
        total_self_cpu=int(self_cpu.sum()),
        total_self_device=int(self_device[device_rows & ~annotation_rows].sum()) if groups else 0,
        device_share_base=int(self_device[device_rows].sum()) if groups else 0,
    )


class KernelTable(msgspec.Struct):
    name: list[str]
    role: np.ndarray
    calls: np.ndarray
    total: np.ndarray
    minimum: np.ndarray
    maximum: np.ndarray
    top_op: list[str]  # the op that launched most of this kernel's time ("" if none)
    top_op_share: np.ndarray  # float: that op's share of the kernel's time
    unattributed: np.ndarray  # int64 ns not attributed to any op
    instance_rows: np.ndarray
    instance_offsets: np.ndarray
    launch_times: list[dict[str, int]] = []  # per kernel: ns launched by each op name (what top_op is the largest of)
    spread: Spread | None = None  # median, p10, p90, std of each kernel's durations (``distribution``)

    def __len__(self) -> int:
        return len(self.name)

    @property
    def mean(self) -> np.ndarray:
        return np.where(self.calls > 0, self.total // np.maximum(self.calls, 1), 0)

    def instances(self, group: int) -> np.ndarray:
        return self.instance_rows[self.instance_offsets[group] : self.instance_offsets[group + 1]]


def build_kernel_table(trace: Trace, links: Links, rows_mask: np.ndarray | None = None) -> KernelTable:
    ev = trace.events
    rows = np.flatnonzero(equals_any(ev.role, (Role.KERNEL, Role.MEMORY)) & (ev.ph == PH_X))
    if rows_mask is not None:
        rows = rows[rows_mask[rows]]
    names, inverse = unique_inverse(ev.name[rows])
    groups = names.size
    dur = np.maximum(ev.dur[rows], 0)
    calls = np.bincount(inverse, minlength=groups).astype(np.int64)
    total = group_sums(dur, inverse, groups)
    minimum = np.full(groups, np.iinfo(np.int64).max, dtype=np.int64)
    maximum = np.zeros(groups, dtype=np.int64)
    np.minimum.at(minimum, inverse, dur)
    np.maximum.at(maximum, inverse, dur)
    order = group_order(inverse, groups)
    offsets = np.zeros(groups + 1, dtype=np.int64)
    offsets[1:] = np.cumsum(calls)
    op_rows = links.device_op[rows]
    op_name = np.where(op_rows >= 0, ev.name[np.maximum(op_rows, 0)], -1)
    top_op: list[str] = []
    share = np.zeros(groups, dtype=np.float64)
    unattributed = np.zeros(groups, dtype=np.int64)
    # time per (kernel, launching op name): pick the largest
    pair_keys = inverse.astype(np.int64) * (len(trace.names) + 1) + (op_name + 1)
    uniq_pairs, pair_inverse = unique_inverse(pair_keys)
    pair_time = np.bincount(pair_inverse, weights=dur.astype(np.float64))
    pair_kernel = uniq_pairs // (len(trace.names) + 1)
    pair_op = uniq_pairs % (len(trace.names) + 1) - 1
    launch_times: list[dict[str, int]] = [{} for _ in range(groups)]
    for k, op, t in zip(pair_kernel.tolist(), pair_op.tolist(), pair_time.tolist()):
        if op < 0:
            unattributed[k] += round(t)
            continue
        # by the op table's name (ProfilerStep#4 … #8 are one ProfilerStep*)
        name = group_name(trace.names[op])
        launch_times[k][name] = launch_times[k].get(name, 0) + round(t)
    for k in range(groups):
        top = max(launch_times[k].items(), key=lambda item: item[1], default=("", 0))
        top_op.append(top[0])
        share[k] = top[1] / total[k] if top[0] and total[k] > 0 else 0.0
    return KernelTable(
        spread=group_spread(dur, inverse, groups),
        name=[trace.names[int(i)] for i in names],
        role=ev.role[rows[order[offsets[:-1]]]] if groups else np.empty(0, np.uint8),
        calls=calls,
        total=total,
        minimum=np.where(calls > 0, minimum, 0),
        maximum=maximum,
        top_op=top_op,
        top_op_share=share,
        unattributed=unattributed,
        instance_rows=rows[order],
        instance_offsets=offsets,
        launch_times=launch_times,
    )
