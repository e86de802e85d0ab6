"""The collective operations of one rank's trace: each call, what it moved, when it
arrived and when its execution ran.

A collective shows up in up to three places, and which ones depends on the backend:

* the **call** on the thread that issued it: a ``c10d::`` op (``c10d::allreduce_``), a
  ``_c10d_functional::`` op (compiled code), or, where neither encloses it, a bare
  ``record_param_comms``.  Its start is the rank's *arrival*.
* its **parameters**: the ``record_param_comms`` op inside the call (NCCL and newer
  backends: ``Collective name``, ``In msg nelems``, ``dtype``, ``Group size``,
  ``Process Group Name``, ``Seq``, ``Comms Id``), else the shapes of the
  ``nccl:<op>`` / ``gloo:<op>`` range, else the call's own input shapes.
* its **execution**: NCCL/RCCL kernels on the device (linked to the call through the
  launching op), ``gloo:<op>`` ranges on gloo's worker threads (gloo records no
  ``record_param_comms``; the k-th call of an op pairs with the next ``gloo:`` range of
  the same op that starts after it, the order gloo runs them in), or ``cc_running``
  events of a Neuron system trace.

The execution of a blocking collective lasts until the last rank arrives, so its
length on the earliest rank includes waiting; the reducer (``analysis.ranks``) takes the
shortest across ranks as the latency.  Times here are absolute (Unix ns where the file
says so), so ranks written by different processes share one axis.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec
import numpy as np

from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.flops import decode_sizes
from trnscope.core.analysis.host_work import data_loader_rows
from trnscope.core.analysis.idle_frames import holds_a_whole_step, innermost_of_most, ran_no_op
from trnscope.core.base.arrays import equals_any
from trnscope.core.base.intervals import Union
from trnscope.core.base.jsondepth import decode_bounded
from trnscope.core.formats.kineto.lazyargs import raw_args_by_chunk
from trnscope.core.model.roles import Role, is_profiler_step
from trnscope.core.model.vocab import PH_X

NO_STEP = -1  # a collective outside every ProfilerStep (or a trace without steps)

# canonical name ← the op spelled without prefixes, underscores or suffixes; checked in
# this order ("allreduce" before "reduce", "reducescatter" before "scatter")
_CANONICAL = (
    ("allreduce", "all_reduce"),
    ("reducescatter", "reduce_scatter"),
    ("allgather", "all_gather"),
    ("alltoall", "all_to_all"),
    ("broadcast", "broadcast"),
    ("bcast", "broadcast"),
    ("barrier", "barrier"),
    ("sendrecv", "send_recv"),
    ("send", "send"),
    ("recv", "recv"),
    ("reduce", "reduce"),
    ("gather", "gather"),
    ("scatter", "scatter"),
)
_PREFIX = re.compile(r"^(c10d::|_c10d_functional::|c10d_functional::|nccl:|gloo:|rccl:|ucc:|mpi:|xccl:)")
_NOISE = re.compile(r"(_base|_coalesced|into_tensor|_tensor|_single|_)")
_DEVICE_KERNEL = re.compile(r"^(nccl|rccl)(Dev)?Kernel_([A-Za-z]+)")
_NEURON_EXECUTION = ("cc_running", "cc_exec")
# ops of a functional-collective graph that wait for a result rather than start a collective
_NOT_A_CALL = re.compile(r"(wait_tensor|::wait|_wait$|work_wait)")

# bytes per element, by the spellings of "Input type" (aten) and "dtype" (record_param_comms)
ELEMENT_BYTES = {
    "float": 4, "float32": 4, "Float": 4, "int": 4, "Int": 4, "int32": 4, "unsigned int": 4,
    "double": 8, "Double": 8, "long": 8, "Long": 8, "long int": 8, "int64": 8, "ComplexFloat": 8,
    "c10::Half": 2, "Half": 2, "c10::BFloat16": 2, "BFloat16": 2, "short": 2, "Short": 2,
    "float16": 2, "bfloat16": 2, "signed char": 1, "unsigned char": 1, "Char": 1, "Byte": 1,
    "bool": 1, "Bool": 1, "c10::Float8_e4m3fn": 1, "Float8_e4m3fn": 1, "c10::Float8_e5m2": 1,
    "Float8_e5m2": 1, "ComplexDouble": 16,
}  # fmt: skip


def canonical_collective(name: str) -> str:
    """``all_reduce`` for ``c10d::allreduce_``, ``nccl:all_reduce``, ``allreduce_coalesced``,
    ``ncclDevKernel_AllReduce_Sum_f32_RING_LL``; "" for anything that is no collective."""
    kernel = _DEVICE_KERNEL.match(name)
    plain = kernel.group(3) if kernel else _PREFIX.sub("", name)
    squashed = _NOISE.sub("", plain.lower())
    for stem, canonical in _CANONICAL:
        if squashed.startswith(stem):
            return canonical
    return ""


def is_call_name(name: str) -> bool:
    return name.startswith(("c10d::", "_c10d_functional::", "c10d_functional::")) and not _NOT_A_CALL.search(name)


class CollectiveCall(msgspec.Struct, array_like=True):
    """One collective as this rank saw it.  Times absolute ns; -1 where unknown."""

    name: str  # canonical: all_reduce, all_gather, …
    op: str  # as traced: c10d::allreduce_, record_param_comms, cc_running
    group: str  # process group name ("0"), "" when the trace does not say
    seq: int  # the group's sequence number (record_param_comms ``Seq``), -1
    comms_id: str  # ``Comms Id``, ""
    step: int  # N of the ProfilerStep#N it was called in, NO_STEP
    ordinal: int  # position among this rank's calls of the same group in the same step
    arrival_ns: int  # the call's start
    call_end_ns: int
    exec_start_ns: int  # its execution (kernel, gloo worker range, cc_running), -1
    exec_end_ns: int
    in_nelems: int
    out_nelems: int
    dtype: str
    element_bytes: int  # 0 when the dtype is unknown
    group_size: int  # -1 when the trace does not say
    idle_before_ns: int  # on the calling thread: time since the last op ended (in the step)
    dims: str = ""  # input shapes of the payload, to check a gloo pairing
    # time from the end of this rank's previous collective (or its step's start) to this
    # call: what the rank itself spent before arriving, -1 when unknown
    since_previous_ns: int = -1
    # of that time, how much the thread running the step (its ProfilerStep's) spent
    # outside any op: a rank that sleeps before ``backward()`` reaches DDP's all-reduce
    # after backward's ops, so the gap just before the call is short; -1 when unknown
    step_thread_idle_ns: int = -1
    # the longest Python call in that idle time on that thread, which ran no op (with
    # with_stack: ``<built-in function sleep>``, a data loader's ``__next__``), and its
    # length; "" and -1 when the trace has no such frame
    idle_frame: str = ""
    idle_frame_ns: int = -1
    # of the time since the previous collective, how much that thread spent fetching
    # batches from the DataLoader (``host_work``): busy, yet no work of the step's own
    loading_ns: int = -1
    # gloo's calls name no process group; the worker thread that ran it does, by the
    # order gloo started them (``_gloo_thread_groups``): that group's name and size, ""
    # and -1 where unknown.  A guess the reduce checks against every rank's groups
    # before it matches by it (``ranks._by_worker_groups``)
    worker_group: str = ""
    worker_group_size: int = -1

    @property
    def end_ns(self) -> int:
        return max(self.call_end_ns, self.exec_end_ns)

    @property
    def duration_ns(self) -> int:
        """How long it ran here: the execution when there is one, else the call."""
        if self.exec_start_ns >= 0:
            return self.exec_end_ns - self.exec_start_ns
        return self.call_end_ns - self.arrival_ns

    @property
    def message_bytes(self) -> int:
        """The size NCCL's bandwidth figures use: the larger of input and output (an
        all-gather's output, a reduce-scatter's input), -1 when unknown."""
        if self.element_bytes <= 0:
            return -1
        count = max(self.in_nelems, self.out_nelems)
        return count * self.element_bytes if count >= 0 else -1


class CollectiveFacts(msgspec.Struct):
    """The collectives of one trace and what could not be matched in it."""

    calls: list[CollectiveCall]
    executions_unpaired: int = 0  # executions with no call (kept as calls of their own)
    shape_mismatches: int = 0  # gloo pairings whose shapes differ from the call's
    device_profile_collectives: int = 0  # Neuron device-profile CcOps (not matched across ranks)
    warnings: list[str] = []


class _CommArgs(msgspec.Struct):
    """The args of ``record_param_comms`` (and the collective kernels they are copied onto)
    that matching uses; any may be absent or of an unexpected type in a hostile file."""

    collective: Any = msgspec.field(default=None, name="Collective name")
    dtype: Any = None
    in_nelems: Any = msgspec.field(default=None, name="In msg nelems")
    out_nelems: Any = msgspec.field(default=None, name="Out msg nelems")
    group_size: Any = msgspec.field(default=None, name="Group size")
    group_name: Any = msgspec.field(default=None, name="Process Group Name")
    group_description: Any = msgspec.field(default=None, name="Process Group Description")
    seq: Any = msgspec.field(default=None, name="Seq")
    comms_id: Any = msgspec.field(default=None, name="Comms Id")
    input_type: Any = msgspec.field(default=None, name="Input type")
    gid: Any = None  # Neuron cc_running
    op_id: Any = None


def _int(value: object, default: int = -1) -> int:
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    return default


def _text(value: object) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)


NO_COMM_ARGS = _CommArgs()


def _comm_args_of(trace: Any, rows: np.ndarray) -> dict[int, _CommArgs]:
    """The matching args of these rows, decoded chunk by chunk (one chunk's text held at
    a time, however many collectives a long trace holds)."""
    out: dict[int, _CommArgs] = {}
    for batch in raw_args_by_chunk(trace, rows):
        for k, raw in batch:
            out[int(rows[k])] = _decode_args(raw)
    return out


def _decode_args(raw: msgspec.Raw | None) -> _CommArgs:
    if raw is None:
        return _CommArgs()
    try:
        value, _ = decode_bounded(bytes(raw), _CommArgs)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return _CommArgs()
    return value if isinstance(value, _CommArgs) else _CommArgs()


def _first_tensor(dims: list[object] | None) -> tuple[int, int]:
    """(position, element count) of the first tensor (or tensor list) among the inputs."""
    for position, entry in enumerate(dims or []):
        if isinstance(entry, list) and entry:
            if all(isinstance(d, int) for d in entry):
                return position, int(np.prod(entry, dtype=object))
            tensors = [t for t in entry if isinstance(t, list) and all(isinstance(d, int) for d in t)]
            if tensors:  # a tensor list: the collective moves their sum
                return position, sum(int(np.prod(t, dtype=object)) for t in tensors)
    return -1, -1


def _ancestor_in(start: np.ndarray, parent: np.ndarray, wanted: np.ndarray, depth: int = 64) -> np.ndarray:
    """For each row of ``start``, the nearest ancestor (itself included) with ``wanted``
    true, or -1."""
    found = np.full(start.size, -1, dtype=np.int64)
    current = start.astype(np.int64).copy()
    for _ in range(depth):
        alive = (current >= 0) & (found < 0)
        if not alive.any():
            break
        hit = alive.copy()
        hit[alive] = wanted[current[alive]]
        found[hit] = current[hit]
        moving = alive & ~hit
        current[moving] = parent[current[moving]]
        current[~moving] = -1
    return found


class _Rows:
    """The rows of a trace that take part in collectives, by kind."""

    def __init__(self, analysis: Analysis) -> None:
        trace = analysis.trace
        ev = trace.events
        canonical = np.array([canonical_collective(n) != "" for n in trace.names] or [False], dtype=bool)
        call_name = np.array([is_call_name(n) for n in trace.names] or [False], dtype=bool)
        params_name = np.array([n == "record_param_comms" for n in trace.names] or [False], dtype=bool)
        neuron_name = np.array([n.startswith(_NEURON_EXECUTION) for n in trace.names] or [False], dtype=bool)
        timed = ev.ph == PH_X
        named = canonical[ev.name]
        host = equals_any(ev.role, (Role.OP, Role.ANNOTATION)) & timed
        self.params = np.flatnonzero(host & params_name[ev.name])
        is_call = host & call_name[ev.name] & named
        parent = analysis.links.raw_parent
        # record_param_comms with no c10d call around it is a call of its own
        outer = _ancestor_in(self.params, parent, is_call)
        is_call[self.params[outer < 0]] = True
        # a call nested in another call (allreduce_coalesced's parts) belongs to the outer one
        calls = np.flatnonzero(is_call)
        nested = _ancestor_in(parent[calls], parent, is_call) >= 0
        is_call[calls[nested]] = False
        self.is_call = is_call
        self.calls = np.flatnonzero(is_call)
        # ranges named like a collective (nccl:all_reduce, gloo:all_reduce) inside a call
        # describe it; outside every call they are an execution on a worker thread
        ranges = np.flatnonzero((ev.role == int(Role.ANNOTATION)) & timed & named & ~is_call)
        owner = _ancestor_in(ranges, parent, is_call)
        self.inner_ranges, self.inner_owner = ranges[owner >= 0], owner[owner >= 0]
        self.worker_ranges = ranges[owner < 0]
        kernel = (ev.role == int(Role.KERNEL)) & timed & named
        self.kernels = np.flatnonzero(kernel)
        self.neuron = np.flatnonzero(
            equals_any(ev.role, (Role.SYSTEM_HARDWARE, Role.KERNEL)) & timed & neuron_name[ev.name]
        )


def _steps(analysis: Analysis) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start, end, number) of the ProfilerSteps, sorted by start."""
    steps = [s for s in analysis.steps() if is_profiler_step(s.name)]
    numbers = [_int(s.name.rpartition("#")[2]) for s in steps]
    return (
        np.array([s.start for s in steps], dtype=np.int64),
        np.array([s.end for s in steps], dtype=np.int64),
        np.array(numbers, dtype=np.int64),
    )


def step_of(times: np.ndarray, steps: tuple[np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
    """The ProfilerStep number each time falls in, NO_STEP outside every step."""
    start, end, number = steps
    if start.size == 0:
        return np.full(times.size, NO_STEP, dtype=np.int64)
    k = np.searchsorted(start, times, side="right") - 1
    inside = (k >= 0) & (times < end[np.maximum(k, 0)])
    return np.where(inside, number[np.maximum(k, 0)], NO_STEP)


def _idle_before(analysis: Analysis, calls: np.ndarray, steps: tuple[np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
    """Per call: on its thread, the time since the last op or range that ended before it
    (counted from the step's start at most) — the gap a rank spends outside any op,
    in Python or asleep, right before it joins the collective."""
    ev = analysis.trace.events
    out = np.full(calls.size, -1, dtype=np.int64)
    busy = _busy_rows(analysis)
    start = steps[0]
    for thread in np.unique(ev.thread[calls]).tolist():
        rows = busy[ev.thread[busy] == thread]
        ends = np.sort(ev.ts[rows] + np.maximum(ev.dur[rows], 0))
        mine = np.flatnonzero(ev.thread[calls] == thread)
        arrival = ev.ts[calls[mine]]
        k = np.searchsorted(ends, arrival, side="right") - 1
        last_end = np.where(k >= 0, ends[np.maximum(k, 0)], np.iinfo(np.int64).min)
        s = np.searchsorted(start, arrival, side="right") - 1
        step_start = np.where(s >= 0, start[np.maximum(s, 0)], np.iinfo(np.int64).min)
        floor = np.maximum(last_end, step_start)
        known = floor > np.iinfo(np.int64).min
        out[mine] = np.where(known, arrival - floor, -1)
    return out


def find_collectives(analysis: Analysis) -> CollectiveFacts:
    """Every collective call of the trace, in arrival order, with its parameters and
    execution."""
    trace = analysis.trace
    rows = _Rows(analysis)
    origin = trace.origin_ns
    parent = analysis.links.raw_parent
    steps = _steps(analysis)

    # parameters: record_param_comms inside each call (or the call itself)
    params_owner = _ancestor_in(rows.params, parent, rows.is_call)
    args_rows = np.concatenate([rows.params, rows.calls, rows.inner_ranges, rows.worker_ranges, rows.neuron])
    args_of = _comm_args_of(trace, args_rows)
    params_of: dict[int, int] = {}
    for p, owner in zip(rows.params.tolist(), params_owner.tolist(), strict=True):
        if owner >= 0:
            params_of.setdefault(owner, p)
    inner_of: dict[int, int] = {}
    for r, owner in zip(rows.inner_ranges.tolist(), rows.inner_owner.tolist(), strict=True):
        inner_of.setdefault(owner, r)

    # executions: device kernels through their launching op, gloo worker ranges in order
    exec_of: dict[int, list[int]] = {}
    unpaired: list[int] = []
    if rows.kernels.size:
        launcher = analysis.links.device_op[rows.kernels]
        launching_call = _ancestor_in(launcher, parent, rows.is_call)
        for k, c in zip(rows.kernels.tolist(), launching_call.tolist(), strict=True):
            (exec_of.setdefault(c, []) if c >= 0 else unpaired).append(k)
    mismatches = _pair_worker_ranges(trace, rows, exec_of, unpaired)
    group_of_thread = _gloo_thread_groups(trace, rows.worker_ranges)

    calls: list[CollectiveCall] = []
    call_rows = rows.calls.tolist()
    idle = _idle_before(analysis, rows.calls, steps)
    row_of: dict[int, int] = {}  # id(call) → its row, kept through the sort below
    for index, c in enumerate(call_rows):
        executions = exec_of.get(c, [])
        call = _call(analysis, c, params_of.get(c, -1), inner_of.get(c, -1), executions, args_of, int(idle[index]))
        _name_worker_group(trace, call, executions, group_of_thread)
        calls.append(call)
        row_of[id(call)] = c
    # executions nobody called: in a trace without calls (a Neuron system trace's
    # cc_running, device-only kernels) each is a collective of its own, arriving when it
    # starts; where calls exist they ran for calls outside the window and are left out
    alone = sorted(set(unpaired) | set(rows.neuron.tolist()))
    dropped = 0
    if call_rows:
        dropped, alone = len(alone), []
    for e in alone:
        calls.append(_call(analysis, e, -1, -1, [e], args_of, -1))
    calls.sort(key=lambda c: (c.arrival_ns, c.exec_start_ns))
    arrivals = np.array([c.arrival_ns - origin for c in calls], dtype=np.int64)
    numbers = step_of(arrivals, steps)
    _after_previous(calls, _step_starts(arrivals, steps) + origin)
    _step_thread_idle(analysis, calls, [row_of.get(id(call), -1) for call in calls])
    counters: dict[tuple[str, int], int] = {}
    for call, number in zip(calls, numbers.tolist(), strict=True):
        call.step = int(number)
        key = (call.group, call.step)
        call.ordinal = counters.get(key, 0)
        counters[key] = call.ordinal + 1
    device_cc = _device_profile_collectives(analysis)
    return CollectiveFacts(
        calls=calls,
        executions_unpaired=dropped,
        shape_mismatches=mismatches,
        device_profile_collectives=device_cc,
        warnings=_warnings(dropped, mismatches, device_cc),
    )


def _warnings(dropped: int, mismatches: int, device_cc: int) -> list[str]:
    """What a rank's collectives could not be matched by, said."""
    warnings = []
    if dropped:
        warnings.append(
            f"{dropped} collective executions (kernels, gloo or cc_running ranges) belong to no call in the "
            "trace (issued before the profiling window or not linked) and were left out of matching"
        )
    if mismatches:
        warnings.append(f"{mismatches} gloo executions had other input shapes than the call they were paired with")
    if device_cc:
        warnings.append(
            f"{device_cc} collective operations of the device profiles are not matched across ranks "
            "(nothing ties them to a call); the system trace's cc_running events are matched instead, where the "
            "profile has them"
        )
    return warnings


def _step_starts(times: np.ndarray, steps: tuple[np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
    """The start of the step each time falls in (relative ns); a very early time outside."""
    start, end, _ = steps
    floor = np.full(times.size, np.iinfo(np.int64).min // 2, dtype=np.int64)
    if start.size == 0:
        return floor
    k = np.searchsorted(start, times, side="right") - 1
    inside = (k >= 0) & (times < end[np.maximum(k, 0)])
    return np.where(inside, start[np.maximum(k, 0)], floor)


def _after_previous(calls: list[CollectiveCall], step_starts: np.ndarray) -> None:
    """A blocking collective's wait shows in no op: the calling thread's gap before the
    next call starts where the previous collective ended, not where its call returned.
    ``since_previous_ns`` is what the rank spent between its previous collective (or
    its step's start) and this one: a rank held up by a collective that ended late for it
    arrives late at the next without being the cause."""
    previous_end = -1
    for call, step_start in zip(calls, step_starts.tolist(), strict=True):
        if call.idle_before_ns >= 0 and 0 <= previous_end <= call.arrival_ns:
            call.idle_before_ns = min(call.idle_before_ns, call.arrival_ns - previous_end)
        reference = max(previous_end, step_start)
        if reference >= 0 and reference <= call.arrival_ns:
            call.since_previous_ns = call.arrival_ns - reference
        previous_end = max(previous_end, call.end_ns)


def _step_thread_idle(analysis: Analysis, calls: list[CollectiveCall], call_rows: list[int]) -> None:
    """``step_thread_idle_ns`` of each call: how much of the time since its previous
    collective (``since_previous_ns``) the thread running its step spent outside any
    op, in Python or asleep — wherever the call itself is made (DDP calls its
    all-reduce after backward's ops, or from the autograd thread).  One union of busy
    time per step thread, every call's window looked up in it at once."""
    steps = sorted((s for s in analysis.steps() if is_profiler_step(s.name)), key=lambda s: s.start)
    if not steps or not calls:
        return
    ev = analysis.trace.events
    starts = np.array([s.start for s in steps], dtype=np.int64)
    ends = np.array([s.end for s in steps], dtype=np.int64)
    threads = np.array([int(ev.thread[s.row]) for s in steps], dtype=np.int64)
    at = np.array([c.arrival_ns for c in calls], dtype=np.int64) - analysis.trace.origin_ns
    since = np.array([c.since_previous_ns for c in calls], dtype=np.int64)
    k = np.maximum(np.searchsorted(starts, at, side="right") - 1, 0)
    known = (np.array(call_rows) >= 0) & (since >= 0) & (starts[k] <= at) & (at < ends[k])
    thread_of = threads[k]
    busy = _busy_rows(analysis)
    loader = data_loader_rows(analysis)
    for thread in np.unique(thread_of[known]).tolist():
        chosen = np.flatnonzero(known & (thread_of == thread))
        mine = busy[ev.thread[busy] == thread]
        union = Union(ev.ts[mine], ev.ts[mine] + np.maximum(ev.dur[mine], 0))
        idle = since[chosen] - union.covered_in(at[chosen] - since[chosen], at[chosen])
        fetches = loader[ev.thread[loader] == thread]
        fetching = Union(ev.ts[fetches], ev.ts[fetches] + ev.dur[fetches])
        loading = fetching.covered_in(at[chosen] - since[chosen], at[chosen])
        worth_naming = []
        for index, value, fetched in zip(chosen.tolist(), idle.tolist(), loading.tolist(), strict=True):
            calls[index].step_thread_idle_ns = int(value)
            calls[index].loading_ns = int(fetched)
            if value >= IDLE_FRAME_MIN_NS:
                worth_naming.append(calls[index])
        _name_idle_frames(analysis, worth_naming, thread, union)


IDLE_FRAME_MIN_NS = 1_000_000  # idle time worth naming the Python call of (the ranks' noise floor is 1 ms or more)


def _name_idle_frames(analysis: Analysis, calls: list[CollectiveCall], thread: int, busy: Union) -> None:
    """``idle_frame`` of each call: among the Python frames on ``thread`` that ran (next
    to) no op, the innermost of those with (nearly) the most time outside any op inside
    its idle window (since its previous collective), and ``idle_frame_ns`` that time.  Clipped to the window: an
    asynchronous all-reduce (DDP's) may end after the next step's sleep began."""
    if not calls:
        return
    ev = analysis.trace.events
    frames = np.flatnonzero((ev.role == int(Role.PYTHON)) & (ev.thread == thread) & (ev.dur > 0))
    if not frames.size:
        return
    start = ev.ts[frames]
    end = start + ev.dur[frames]
    quiet = ran_no_op(busy, start, end) & ~holds_a_whole_step(*analysis.profiler_step_bounds(), start, end)
    order = np.flatnonzero(quiet)[np.argsort(start[quiet], kind="stable")]
    frames, start, end = frames[order], start[order], end[order]
    if not frames.size:
        return
    longest = int((end - start).max())
    origin = analysis.trace.origin_ns
    for call in calls:
        at = call.arrival_ns - origin
        since = at - call.since_previous_ns
        lo, hi = np.searchsorted(start, [since - longest, at], side="left")
        clip_start, clip_end = np.maximum(start[lo:hi], since), np.minimum(end[lo:hi], at)
        idle = np.maximum(clip_end - clip_start, 0) - busy.covered_in(clip_start, clip_end)
        if idle.size and idle.max() > 0:
            # the innermost of the frames holding nearly all of it: the script's own
            # top frames hold the same idle time (and have few ops), ``sleep`` says why
            best = innermost_of_most(idle, end[lo:hi] - start[lo:hi])
            call.idle_frame = analysis.trace.names[int(ev.name[frames[lo + best]])]
            call.idle_frame_ns = int(idle[best])


def _busy_rows(analysis: Analysis) -> np.ndarray:
    """The rows a thread is busy in: ops, runtime calls and ranges (not the
    ProfilerSteps, which span everything), made once per analysis."""

    def rows() -> np.ndarray:
        ev = analysis.trace.events
        busy = equals_any(ev.role, (Role.OP, Role.RUNTIME, Role.ANNOTATION)) & (ev.ph == PH_X)
        step_name = np.array([is_profiler_step(n) for n in analysis.trace.names] or [False], dtype=bool)
        return np.flatnonzero(busy & ~step_name[ev.name])

    return analysis.derived(("collectives: busy rows", None), rows)


def _device_profile_collectives(analysis: Analysis) -> int:
    data = analysis.neuron_data
    if data is None:
        return 0
    return sum(int(p.cc_start.size) for p in data.profiles)


def _pair_worker_ranges(trace: Any, rows: _Rows, exec_of: dict[int, list[int]], unpaired: list[int]) -> int:
    """gloo runs a group's collectives in the order they were called: the k-th call of an
    op without an execution takes the first worker range of that op starting after it."""
    ev = trace.events
    if rows.worker_ranges.size == 0:
        return 0
    by_name: dict[str, list[int]] = {}
    for r in rows.worker_ranges[np.argsort(ev.ts[rows.worker_ranges], kind="stable")].tolist():
        by_name.setdefault(canonical_collective(trace.names[int(ev.name[r])]), []).append(r)
    waiting = [c for c in rows.calls[np.argsort(ev.ts[rows.calls], kind="stable")].tolist() if c not in exec_of]
    mismatches = 0
    taken: dict[str, int] = {}
    for c in waiting:
        name = canonical_collective(trace.names[int(ev.name[c])])
        queue = by_name.get(name, [])
        k = taken.get(name, 0)
        while k < len(queue) and ev.ts[queue[k]] < ev.ts[c]:
            unpaired.append(queue[k])  # ran before any call we saw: from before the window
            k += 1
        if k < len(queue):
            exec_of[c] = [queue[k]]
            if not _shapes_agree(trace, c, queue[k]):
                mismatches += 1
            k += 1
        taken[name] = k
    for name, queue in by_name.items():
        unpaired.extend(queue[taken.get(name, 0) :])
    return mismatches


def _name_worker_group(
    trace: Any, call: CollectiveCall, executions: list[int], group_of_thread: dict[int, tuple[str, int]]
) -> None:
    """A call that names no group: the group of the worker thread that ran it, if known."""
    worker = group_of_thread.get(int(trace.events.thread[executions[0]])) if executions else None
    if worker is not None and not call.group:
        call.worker_group, call.worker_group_size = worker


MAX_GROUPS = 64  # more than a rank joins in any parallelism scheme (TP, PP, DP, EP, CP…)


def process_groups_of(info: dict[str, object], rank: int, world_size: int) -> dict[str, list[int]]:
    """The groups of ``pg_config`` that ``rank`` is in, by name; entries that are not a
    name and a list of distinct whole ranks of the world are passed over (the file's
    word, untrusted)."""
    config = info.get("pg_config")
    if not isinstance(config, list) or world_size <= 0 or rank < 0:
        return {}
    groups: dict[str, list[int]] = {}
    for entry in config:
        if not isinstance(entry, dict):
            continue
        name, members = entry.get("pg_name"), entry.get("ranks")
        if not isinstance(name, (str, int)) or isinstance(name, bool) or not isinstance(members, list) or not members:
            continue
        ranks = [r if isinstance(r, int) and not isinstance(r, bool) else -1 for r in members]
        if min(ranks) < 0 or max(ranks) >= world_size or len(set(ranks)) != len(ranks) or rank not in ranks:
            continue
        groups.setdefault(str(name), ranks)
        if len(groups) == MAX_GROUPS:
            break
    return groups


def _gloo_thread_groups(trace: Any, worker_ranges: np.ndarray) -> dict[int, tuple[str, int]]:
    """The process group each gloo worker thread serves, by the order gloo started them:
    each ``ProcessGroupGloo`` starts its own threads (two by default) as it is made, and
    the rank's groups are made in the order of their names (``pg_config``'s
    ``pg_name``, a counter every rank keeps alike); thread ids rise as threads start.
    So the rank's worker threads, by id, in equal runs, are its groups' in that order.
    Nothing where that cannot hold: not gloo, fewer than two groups, a group name or a
    thread id that is not a number, or a count of threads that does not share out
    evenly (a thread that ran nothing in the window).  A guess: the reduce keeps it only
    where every collective it matches then holds exactly its group's ranks."""
    info = trace.metadata.get("distributedInfo")
    if worker_ranges.size == 0 or not isinstance(info, dict) or info.get("backend") != "gloo":
        return {}
    groups = process_groups_of(info, _int(info.get("rank")), _int(info.get("world_size")))
    threads = np.unique(trace.events.thread[worker_ranges]).tolist()
    tids = [trace.threads[t].tid for t in threads]
    if len(groups) < 2 or not all(name.isdigit() for name in groups) or not all(t.isdigit() for t in tids):
        return {}
    if len(threads) % len(groups):
        return {}
    in_order = sorted(groups, key=int)
    each = len(threads) // len(groups)
    by_start = [t for _, t in sorted(zip((int(t) for t in tids), threads, strict=True))]
    return {thread: (in_order[k // each], len(groups[in_order[k // each]])) for k, thread in enumerate(by_start)}


def _shapes_agree(trace: Any, call: int, execution: int) -> bool:
    ev = trace.events
    _, call_count = _first_tensor(_sizes(trace, call))
    _, exec_count = _first_tensor(_sizes(trace, execution))
    return (
        call_count < 0
        or exec_count < 0
        or call_count == exec_count
        or canonical_collective(trace.names[int(ev.name[call])]) in ("all_gather", "gather", "scatter", "all_to_all")
    )


def _sizes(trace: Any, row: int) -> list[object] | None:
    d = int(trace.events.dims[row])
    return decode_sizes(trace.shapes[d]) if d >= 0 else None


def _call(
    analysis: Analysis,
    call: int,
    params: int,
    inner: int,
    executions: list[int],
    args_of: dict[int, _CommArgs],
    idle_before: int,
) -> CollectiveCall:
    trace = analysis.trace
    ev = trace.events
    origin = trace.origin_ns
    op = trace.names[int(ev.name[call])]
    args = args_of.get(params if params >= 0 else call, NO_COMM_ARGS)
    name = canonical_collective(_text(args.collective)) or canonical_collective(op) or "collective"
    in_nelems, out_nelems = _int(args.in_nelems), _int(args.out_nelems)
    dtype = _text(args.dtype)
    payload = (
        inner if inner >= 0 else executions[0] if executions and ev.role[executions[0]] != int(Role.KERNEL) else call
    )
    dims = _sizes(trace, payload)
    if in_nelems < 0 and op.endswith(_OUTPUT_FIRST):
        in_nelems, out_nelems = _output_first_counts(_sizes(trace, call))
    position, first_count = _first_tensor(dims)
    if in_nelems < 0:
        in_nelems = first_count
    if not dtype and position >= 0:
        types = args_of.get(payload, NO_COMM_ARGS).input_type
        if isinstance(types, list) and position < len(types):
            dtype = _text(types[position])
    group_size = _int(args.group_size)
    if group_size < 0:
        group_size = _group_size(trace)
    if out_nelems < 0 and in_nelems >= 0:
        out_nelems = _output_count(name, in_nelems, group_size)
    group = _text(args.group_name) or _text(args.gid)
    seq = _int(args.seq)
    if executions:
        ex = np.array(executions, dtype=np.int64)
        exec_start = int(ev.ts[ex].min()) + origin
        exec_end = int((ev.ts[ex] + np.maximum(ev.dur[ex], 0)).max()) + origin
    else:
        exec_start = exec_end = -1
    start = int(ev.ts[call]) + origin
    return CollectiveCall(
        name=name,
        op=op,
        group=group,
        seq=seq,
        comms_id=_text(args.comms_id),
        step=NO_STEP,
        ordinal=0,
        arrival_ns=start,
        call_end_ns=start + max(int(ev.dur[call]), 0),
        exec_start_ns=exec_start,
        exec_end_ns=exec_end,
        in_nelems=in_nelems,
        out_nelems=out_nelems,
        dtype=dtype,
        element_bytes=ELEMENT_BYTES.get(dtype, 0),
        group_size=group_size,
        idle_before_ns=idle_before,
        dims=trace.shapes[int(ev.dims[payload])] if int(ev.dims[payload]) >= 0 else "",
    )


# c10d ops that take (output tensor, input tensor, …): their shapes give both counts
_OUTPUT_FIRST = (
    "_allgather_base_",
    "_reduce_scatter_base_",
    "alltoall_base_",
    "all_gather_into_tensor_",
    "reduce_scatter_tensor_",
)


def _output_first_counts(dims: list[object] | None) -> tuple[int, int]:
    """(input, output) element counts of an op whose first two inputs are its output
    and input tensors; (-1, -1) when the shapes say otherwise."""
    tensors = [d for d in (dims or [])[:2] if isinstance(d, list) and d and all(isinstance(x, int) for x in d)]
    if len(tensors) < 2:
        return -1, -1
    return int(np.prod(tensors[1], dtype=object)), int(np.prod(tensors[0], dtype=object))


def _output_count(name: str, count: int, group_size: int) -> int:
    if group_size <= 0:
        return count
    if name == "all_gather":
        return count * group_size
    if name == "reduce_scatter":
        return count // group_size
    return count


def _group_size(trace: Any) -> int:
    info = trace.metadata.get("distributedInfo")
    if isinstance(info, dict):
        return _int(info.get("world_size"))
    return -1
