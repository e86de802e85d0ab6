"""The timeline: one lane per host thread (its ops and DataLoader fetches; on a thread
with no ops, its ``record_function`` ranges), per runtime thread, per device stream or
NeuronCore, drawn as text at any zoom.

Each lane keeps the union of its events (``intervals.Union``) and its rows sorted by
start, so drawing a window of W cells costs O(W log n) per lane — nothing per event
— and "what is under the cursor" is one binary search.  A cell's glyph says how much
of its time the lane was busy: blank (idle), then ``▁▂▃▄▅▆▇█`` in eighths.
"""

from __future__ import annotations

import re
from collections import Counter

import msgspec
import numpy as np

from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.host_work import data_loader_rows
from trnscope.core.base.arrays import equals_any, order_by_group_then_value, split_by
from trnscope.core.base.intervals import Union, coverage_grid, unions_of_groups
from trnscope.core.base.text import cell_width, distinct_elisions, elide_middle_text, pad_cells, safe_text, user_pattern
from trnscope.core.base.units import fmt_time_short
from trnscope.core.model.roles import Role

EIGHTHS = " ▁▂▃▄▅▆▇█"
_GRID_BLOCK = 4096
_RUNTIME = (int(Role.RUNTIME), int(Role.DRIVER), int(Role.SYSTEM_RUNTIME))
_DEVICE = (int(Role.KERNEL), int(Role.MEMORY))
MAX_NESTED = 4


class Lane(msgspec.Struct, frozen=True):
    label: str
    # "host" (ops and fetches) | "annotation" (a thread with no ops: its record_function
    # ranges) | "python" (a thread with only Python frames, when asked) | "runtime" |
    # "device" | "engine" (NeuronCore engines, from device profiles)
    kind: str
    rows: np.ndarray  # event rows, by start
    starts: np.ndarray
    ends: np.ndarray
    union: Union
    # longest event: how far back an event starting before t can still cover t
    max_duration: int = 0


def _lanes(analysis: Analysis, specs: list[tuple[str, str, np.ndarray]]) -> list[Lane]:
    """Lanes from (label, kind, rows), built together: one sort and one union pass for
    every lane (not one per lane: a trace may have 100,000 threads)."""
    if not specs:
        return []
    ev = analysis.trace.events
    counts = np.array([rows.size for _, _, rows in specs], dtype=np.int64)
    group = np.repeat(np.arange(len(specs), dtype=np.int64), counts)
    rows = np.concatenate([rows for _, _, rows in specs]).astype(np.int64, copy=False)
    ts = ev.ts[rows]
    order = order_by_group_then_value(group, ts)
    # the groups come in ascending blocks already: sorting by (group, start) moves rows
    # only inside their own block, so ``group`` is its own sorted self
    rows = rows[order]
    starts = ts[order]
    ends = starts + np.maximum(ev.dur[rows], 0)
    unions = unions_of_groups(group, starts, ends, len(specs), presorted=True)
    bounds = np.r_[0, np.cumsum(counts)].tolist()
    longest = np.zeros(len(specs), dtype=np.int64)
    filled = counts > 0
    longest[filled] = np.maximum.reduceat(ends - starts, np.array(bounds[:-1])[filled])
    return [
        Lane(label, kind, rows[lo:hi], starts[lo:hi], ends[lo:hi], union, int(duration))
        for (label, kind, _), lo, hi, union, duration in zip(specs, bounds[:-1], bounds[1:], unions, longest.tolist())
    ]


def _op_depth(analysis: Analysis, rows: np.ndarray) -> np.ndarray:
    """For each op row, how many op ancestors it has (annotations and Python frames
    are not counted: nesting as the user wrote it)."""
    ev = analysis.trace.events
    parent = analysis.links.raw_parent
    depth = np.zeros(rows.size, dtype=np.int64)
    current = parent[rows]
    for _ in range(256):
        alive = current >= 0
        if not alive.any():
            break
        is_op = np.zeros(rows.size, dtype=bool)
        is_op[alive] = ev.role[current[alive]] == int(Role.OP)
        depth += is_op
        current = np.where(alive, parent[np.maximum(current, 0)], -1)
    return depth


def build_lanes(analysis: Analysis, nested: bool = False, python_threads: bool = False) -> list[Lane]:
    """Host threads (ops and DataLoader fetches; ``nested``: one sub-lane per op depth,
    up to four; a thread with no ops: its annotations; ``python_threads``: a thread
    with only Python frames, its frames), their runtime calls, then devices (streams,
    NeuronCores), in thread order.  Built once per analysis (a new list each call; the
    lanes are shared and never changed): opening the timeline again costs nothing
    (84-170 ms at 2.9 M events)."""
    return list(_built(analysis, nested, python_threads)[0])


def python_only_threads(analysis: Analysis, nested: bool = False) -> list[str]:
    """The threads whose lanes ``build_lanes`` leaves out unless asked: no op, no
    annotation (a DataLoader fetch is one or the other), only Python frames; their
    labels, in lane order.  Found while the lanes are built (``nested`` as they were:
    the same lanes, no second build; a pass of its own cost 13-17 ms at 2.9 M events)."""
    return list(_built(analysis, nested, False)[1])


def _built(analysis: Analysis, nested: bool, python_threads: bool) -> tuple[list[Lane], list[str]]:
    key = ("timeline lanes", (nested, python_threads))
    return analysis.derived(key, lambda: _build_lanes(analysis, nested, python_threads))


def _build_lanes(analysis: Analysis, nested: bool, python_threads: bool) -> tuple[list[Lane], list[str]]:
    trace = analysis.trace
    ev = trace.events
    links = analysis.links
    timed = ev.dur >= 0
    lanes: list[tuple[str, str, np.ndarray]] = []
    devices: list[tuple[str, str, np.ndarray]] = []
    python_only: list[str] = []
    ops = np.flatnonzero((ev.role == int(Role.OP)) & links.in_tree & timed)
    fetches = data_loader_rows(analysis)  # host work too (``host_work``): drawn with the ops
    if fetches.size:  # (a 2021 trace's fetch is an op already, and drawn once)
        already = (ev.role[fetches] == int(Role.OP)) & links.in_tree[fetches] & timed[fetches]
        ops = np.concatenate((ops, fetches[~already]))
    depth = _op_depth(analysis, ops) if nested and ops.size else np.zeros(ops.size, np.int64)
    # A thread with no ops may still work: gloo's collectives run on threads of their own
    # and an inference server's stages are record_function ranges.  Its ranges are its
    # lane.  A thread with only Python frames is drawn only when asked: its frames span
    # what it waits in as well as its work (a tqdm monitor's ``wait`` covers the whole
    # trace; TraceLens's vLLM trace puts four such threads' frames on one "thread 0").
    annotations = np.flatnonzero((ev.role == int(Role.ANNOTATION)) & timed)
    frames = np.flatnonzero((ev.role == int(Role.PYTHON)) & timed)
    runtime = np.flatnonzero(equals_any(ev.role, _RUNTIME) & timed)
    device = np.flatnonzero(equals_any(ev.role, _DEVICE) & timed)
    order = sorted(
        range(len(trace.threads)), key=lambda t: (trace.threads[t].is_device, trace.threads[t].sort_index, t)
    )
    empty = np.empty(0, dtype=np.int64)
    # each kind of row grouped by thread once (not one scan per thread)
    device_of = split_by(ev.thread[device], device)
    ops_of = split_by(ev.thread[ops], np.arange(ops.size))
    runtime_of = split_by(ev.thread[runtime], runtime)
    annotations_of = split_by(ev.thread[annotations], annotations)
    # which threads have frames, counted (a with_stack trace is half Python frames)
    framed = np.bincount(ev.thread[frames], minlength=len(trace.threads)) > 0
    frames_of = split_by(ev.thread[frames], frames) if python_threads else {}
    for thread in order:
        info = trace.threads[thread]
        if info.is_device:
            mine = device_of.get(thread, empty)
            if mine.size:
                devices.append((info.display, "device", mine))
            continue
        positions = ops_of.get(thread, empty)
        host = _host_lanes(info.display, ops[positions], depth[positions] if nested else None)
        if not host:
            marked = annotations_of.get(thread, empty)
            host = [(info.display, "annotation", marked)] if marked.size else []
        if not host and framed[thread]:
            python_only.append(info.display)
            if python_threads:
                host = [(info.display, "python", frames_of[thread])]
        lanes += host
        calls = runtime_of.get(thread, empty)
        if calls.size:
            label = f"{info.display} rt" if host else info.display
            lanes.append((label, "runtime", calls))
    return _lanes(analysis, lanes) + _with_engine_lanes(analysis, _lanes(analysis, devices)), python_only


def _host_lanes(display: str, ops: np.ndarray, depth: np.ndarray | None) -> list[tuple[str, str, np.ndarray]]:
    """A thread's op lane, or with ``depth`` one lane per op depth (up to four)."""
    if not ops.size:
        return []
    if depth is None:
        return [(display, "host", ops)]
    lanes = []
    for level in range(min(int(depth.max()) + 1, MAX_NESTED)):
        chosen = ops[depth == level] if level < MAX_NESTED - 1 else ops[depth >= level]
        if chosen.size:
            lanes.append((f"{display} ·{level}", "host", chosen))
    return lanes


def _with_engine_lanes(analysis: Analysis, devices: list[Lane]) -> list[Lane]:
    """Under each NeuronCore lane, one lane per engine: its instructions placed on the
    host clock through their execution's window (``link/neuron_clock``) — what a zoom
    into one execution shows.  Rows are -1: instructions are not trace events."""
    data, neuron = analysis.neuron_data, analysis.neuron
    if data is None or neuron is None or not data.profiles:
        return devices
    from trnscope.core.formats.neuron.device import ENGINES

    starts: dict[tuple[str, int], list[np.ndarray]] = {}
    ends: dict[tuple[str, int], list[np.ndarray]] = {}
    threads = analysis.trace.threads
    ev = analysis.trace.events
    engines, executions = neuron.engines, data.executions
    for index in np.flatnonzero(engines.profile >= 0).tolist():
        profile = data.profiles[int(engines.profile[index])]
        ws, we = (int(v) for v in engines.window[index])
        inst = profile.instructions
        lo, hi = np.searchsorted(inst.start, [ws, we])
        if hi <= lo:
            continue
        host0 = int(executions.host_start[index]) - analysis.trace.origin_ns
        s = inst.start[lo:hi] + inst.wait[lo:hi] - ws + host0
        e = np.minimum(inst.start[lo:hi] + inst.duration[lo:hi], we) - ws + host0
        core = threads[int(ev.thread[executions.trace_row[index]])].display
        for engine in np.unique(inst.engine[lo:hi]).tolist():
            mine = inst.engine[lo:hi] == engine
            starts.setdefault((core, engine), []).append(s[mine])
            ends.setdefault((core, engine), []).append(e[mine])
        # DMA packets and collectives of the profile: the "dma" and "cc" engines, as the
        # drill-down's engine time counts them
        for engine, begin, length in (
            (ENGINES.index("dma"), profile.dma_start, profile.dma_duration),
            (ENGINES.index("cc"), profile.cc_start, profile.cc_duration),
        ):
            inside = (begin >= ws) & (begin < we)
            if inside.any():
                b = begin[inside] - ws + host0
                starts.setdefault((core, engine), []).append(b)
                ends.setdefault((core, engine), []).append(np.minimum(begin[inside] + length[inside], we) - ws + host0)
    out: list[Lane] = []
    for lane in devices:
        out.append(lane)
        for (core, engine), parts in sorted(starts.items()):
            if core != lane.label:
                continue
            s = np.concatenate(parts)
            e = np.maximum(np.concatenate(ends[(core, engine)]), s)
            order = np.argsort(s, kind="stable")
            s, e = s[order], e[order]
            out.append(
                Lane(
                    f"{core} {ENGINES[engine]}",
                    "engine",
                    np.full(s.size, -1, np.int64),
                    s,
                    e,
                    Union(s, e),
                    int((e - s).max()) if s.size else 0,
                )
            )
    return out


def select_lanes(lanes: list[Lane], pattern: str | None) -> list[Lane]:
    compiled = user_pattern(pattern or "")
    return lanes if compiled is None else [lane for lane in lanes if compiled.search(lane.label)]


def extent(lanes: list[Lane]) -> tuple[int, int]:
    """The lanes' time range; at least 1 µs (a trace of instantaneous events has none)."""
    starts = [lane.union.start[0] for lane in lanes if len(lane.union)]
    ends = [lane.union.end[-1] for lane in lanes if len(lane.union)]
    if not starts:
        return 0, 1_000
    t0, t1 = int(min(starts)), int(max(ends))
    return t0, max(t1, t0 + 1_000)


def cell_edges(t0: int, t1: int, cells: int) -> np.ndarray:
    """The ``cells + 1`` boundaries of equal slices of [t0, t1)."""
    return np.linspace(t0, t1, cells + 1).round().astype(np.int64)


def coverage(
    lane: Lane, t0: int, t1: int, cells: int, only: Union | None = None, edges: np.ndarray | None = None
) -> np.ndarray:
    """Busy share of each of ``cells`` equal slices of [t0, t1) (0..1); ``edges``: the
    slices' boundaries when the caller draws many lanes over the same window."""
    edges = cell_edges(t0, t1, cells) if edges is None else edges
    union = only if only is not None else lane.union
    if not len(union):
        return np.zeros(cells)
    covered = np.diff(union.covered_before(edges)).astype(np.float64)
    return covered / np.maximum(np.diff(edges), 1)


_GLYPH_OF_LEVEL = {level: char for level, char in enumerate(EIGHTHS)}


def glyphs(share: np.ndarray) -> str:
    """Eighth blocks; any activity at all shows at least ▁ (a 10 ns kernel in a 1 ms
    cell must not vanish)."""
    return glyph_rows(share.reshape(1, -1))[0]


def glyph_rows(shares: np.ndarray) -> list[str]:
    """``glyphs`` of each row of a (lanes × cells) array, in one conversion."""
    lanes, cells = shares.shape
    level = np.ceil(np.clip(shares, 0, 1) * 8).astype(np.uint8)
    text = level.tobytes().decode("latin-1").translate(_GLYPH_OF_LEVEL)
    return [text[k * cells : (k + 1) * cells] for k in range(lanes)]


def under(lane: Lane, t: int) -> int:
    """The innermost (latest-starting) event of the lane covering time ``t``, or -1."""
    k = int(np.searchsorted(lane.starts, t, side="right")) - 1
    while k >= 0 and t - int(lane.starts[k]) <= lane.max_duration:
        if lane.ends[k] > t:
            return int(lane.rows[k])
        k -= 1
    return -1


def axis(t0: int, t1: int, cells: int, origin: int) -> str:
    """A tick line: labels of time since ``origin`` every ~16 cells."""
    line = [" "] * cells
    step = max(cells // 5, 12)
    for at in range(0, cells - 6, step):
        label = "|" + fmt_time_short(t0 + (t1 - t0) * at / cells - origin)
        for i, ch in enumerate(label[: cells - at]):
            line[at + i] = ch
    return "".join(line)


_LABEL_CELLS_MIN = 12  # a label column narrower than this reads worse than the cells it gives
_LABEL_CELLS_MAX = 48


def label_column_width(labels: list[str], width: int) -> int:
    """Cells for the lane labels in a ``width``-cell timeline: as many as the longest
    label needs, up to a quarter of the width (at least 18: "thread 19392 (…) rt"
    keeps its parts at 80 columns), so a wide terminal shows whole thread names and a
    narrow one keeps its cells for time; labels shortened as ``lane_labels`` shortens
    them where the whole ones do not fit."""
    safe = [safe_text(label) for label in labels]
    most = max(18, min(width // 4, _LABEL_CELLS_MAX))
    longest = max(map(cell_width, safe), default=0)
    if longest > most:  # lane_labels drops what every lane repeats first
        longest = max(map(cell_width, compact_lane_labels(safe)), default=0)
    return min(most, max(_LABEL_CELLS_MIN, longest))


def lane_labels(labels: list[str], width: int) -> list[str]:
    """Every lane's label (file text, sanitised here) in ``width`` cells, its middle
    dropped ("thread 19392 (python3) rt" keeps both the thread and the "rt" that says it
    is the runtime lane); labels that would read alike elided keep where they differ
    instead ("thread 4242 (python)" and "thread 4249 (python)" both read
    "thread 424…thon)" at 16 cells)."""
    safe = [safe_text(label) for label in labels]
    short = compact_lane_labels(safe)
    safe = [s if cell_width(s) <= width else c for s, c in zip(safe, short, strict=True)]
    alike = distinct_elisions(safe, width)
    return [alike.get(i, elide_middle_text(label, width)) for i, label in enumerate(safe)]


_HOST_LABEL = re.compile(r"^(thread -?\d+) \((.*)\)((?: rt)?(?: ·\d+)?)$")
_DEVICE_LABEL = re.compile(r"^(.*) \(([^()]+)\) / (.+)$")


def compact_lane_labels(labels: list[str]) -> list[str]:
    """Each label without what every lane of its kind repeats, for a label too long
    for its column: the host threads' common process name ("thread 3113936
    (python3.8) rt" → "thread 3113936 rt") and a device track's process before its
    device ("python3.8 (GPU 3) / stream 7" → "GPU 3 / stream 7").  A label whose short
    form another lane's shares stays whole, so no two lanes read the same."""
    hosts = [_HOST_LABEL.match(label) for label in labels]
    names = {m.group(2) for m in hosts if m}
    short = []
    for label, host in zip(labels, hosts, strict=True):
        device = _DEVICE_LABEL.match(label)
        if host and len(names) == 1:
            short.append(host.group(1) + host.group(3))
        elif not host and device:
            short.append(f"{device.group(2)} / {device.group(3)}")
        else:
            short.append(label)
    taken = Counter(short)
    return [s if taken[s] == 1 or s == label else label for s, label in zip(short, labels, strict=True)]


# As at load (``kineto.events.MAX_ABS_US``): about 142 years either way, in ns
MAX_ABS_TIME_NS = 4_500_000_000_000_000_000


def parse_time(text: str) -> int:
    """``1.5ms`` / ``200us`` / ``3s`` / ``1500`` (µs) → ns; a time no trace can hold is
    refused (ValueError) rather than overflowing later."""
    match = re.fullmatch(r"\s*(-?\d*\.?\d+|-?\d+\.)\s*(ns|us|µs|ms|s)?\s*", text)
    if not match:
        raise ValueError(f"not a time: {text!r} (use e.g. 1.5ms, 200us, 3s)")
    scale = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000, None: 1_000}[match.group(2)]
    digits = match.group(1)
    if len(digits) > 24:
        raise ValueError(f"time out of range: {text[:40]!r}{'…' if len(text) > 40 else ''}")
    value = float(digits) * scale
    if not abs(value) <= MAX_ABS_TIME_NS:
        raise ValueError(f"time out of range: {text!r} (at most ±{MAX_ABS_TIME_NS // 10**9:,} s)")
    return int(value)


def render_text(
    analysis: Analysis,
    lanes: list[Lane],
    t0: int,
    t1: int,
    width: int,
    label_width: int = 18,
) -> list[str]:
    """The timeline as plain lines, each within ``width`` columns: a time axis, then
    one line per lane (label, then one glyph per cell)."""
    cells = max(width - label_width - 1, 8)
    origin = analysis.span_ns[0]
    lines = [" " * (label_width + 1) + axis(t0, t1, cells, origin)]
    edges = cell_edges(t0, t1, cells)
    widths = np.maximum(np.diff(edges), 1)
    labels = lane_labels([lane.label for lane in lanes], label_width)  # thread names come from the file
    for first in range(0, len(lanes), _GRID_BLOCK):  # bounded memory: lanes × cells per block
        block = lanes[first : first + _GRID_BLOCK]
        rows = glyph_rows(coverage_grid([lane.union for lane in block], edges) / widths)
        for label, row in zip(labels[first : first + _GRID_BLOCK], rows):
            lines.append(f"{pad_cells(label, label_width)}│{row}")
    return lines
