"""Why is it slow: device busy and idle time, host- or device-bound steps, and ranked
findings with the evidence behind each.

Definitions (the README's "Diagnosis" section says the same):

* **device**: a GPU (trace ``pid`` of its streams) or a NeuronCore.  Its *span* runs
  from the start of its first device event to the end of its last; *busy* is the
  union of its device work (kernels, copies, NeuronCore executions — overlapping
  streams count once; device annotations are not work); *idle* = span − busy.
* **step**: a ``ProfilerStep#N`` (the whole trace when there is none).  *wall* is its
  length; *host busy* the union of the ops and DataLoader fetches on its thread inside
  it, less the time spent waiting in synchronisations; *device busy* the union of all device work
  inside it.  A step is *device-bound* when the device is busy at least half its
  wall time, at least as long as the host and at all, *host-bound* otherwise.
* **findings**, ranked by ``evidence_us`` (the time each one accounts for, computed
  from the events named in its message): device idle while the host fetched the next
  batch (DataLoader) or recorded a CUDA graph (stream capture), device idle between
  launches, small-kernel storms, synchronisations, long launch queues, a first
  NeuronCore execution much slower than the rest, NeuronCore engines mostly idle inside executions, and
  collectives taking most of the device time.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import msgspec
import numpy as np

from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.contracts import DeviceOut, DiagnoseOut, FindingOut, StepOut
from trnscope.core.analysis.host_work import HOST_RANGES, data_loader_rows
from trnscope.core.analysis.idle_frames import holds_a_whole_step, innermost_of_most, ran_no_op
from trnscope.core.analysis.kernel_compare import warmup_notes
from trnscope.core.analysis.name_match import names_matching
from trnscope.core.base.arrays import equals_any, split_by
from trnscope.core.base.intervals import Union, difference, intersection, unions_of_groups
from trnscope.core.base.text import plural
from trnscope.core.base.units import fmt_share, fmt_time_ns, us, us_of_ns
from trnscope.core.model.roles import Role, is_profiler_step

SMALL_KERNEL_NS = 10_000
# The longest idle gap that can be a launch's own overhead: a launch costs the host
# 5-50 µs, an eager op's dispatch up to a few hundred; a longer wait before a small
# kernel is the host busy elsewhere (Python, a collective's set-up), which fusing the
# kernels would not remove.  HTA's nccl_data trace: 107 of the 262 ms once blamed on
# small kernels lay in 17 such gaps, inside DistributedDataParallel.forward.
LAUNCH_GAP_NS = 1_000_000
LONG_QUEUE_NS = 50_000
NOISE_FLOOR_NS = 50_000  # a finding accounts for at least this …
NOISE_FLOOR_SHARE = 0.005  # … and this share of the trace's wall time, or it is not shown


def noise_floor_ns(wall: int) -> int:
    """The least time a finding must account for to be shown."""
    return max(NOISE_FLOOR_NS, int(NOISE_FLOOR_SHARE * wall))


WHOLE_TRACE = "whole trace"  # the one step of a trace without ProfilerStep

_SYNC = re.compile(
    r"(cudaDeviceSynchronize|cudaStreamSynchronize|cudaEventSynchronize|hipDeviceSynchronize|hipStreamSynchronize"
    r"|hipEventSynchronize|aten::item|aten::_local_scalar_dense|neuron::synchronize|synchronize\b|nrt_.*wait)",
    re.IGNORECASE,
)
_COLLECTIVE = re.compile(
    r"(nccl|rccl|allreduce|all_reduce|reduce_scatter|reducescatter|allgather|all_gather|alltoall|all_to_all"
    r"|broadcast|c10d::|collective|record_param_comms)",
    re.IGNORECASE,
)
_DEVICE_WORK = (int(Role.KERNEL), int(Role.MEMORY))
# A stream capture (CUDA graphs; HIP's the same): the work launched between Begin and
# End is recorded into a graph, not run, so the device idles by design meanwhile.
_CAPTURE_BEGIN = re.compile(r"^(cuda|hip|cu)StreamBeginCapture")
_CAPTURE_END = re.compile(r"^(cuda|hip|cu)StreamEndCapture$")
_DEVICE_CALL = re.compile(r"(launch|memcpy|memset)", re.IGNORECASE)  # a runtime call that puts work on the device
_CAPTURE_BEGIN_NEEDLES = ("streambegincapture",)
_CAPTURE_END_NEEDLES = ("streamendcapture",)
_DEVICE_CALL_NEEDLES = ("launch", "memcpy", "memset")
_HOST_RUNTIME = (int(Role.RUNTIME), int(Role.DRIVER))
# Lower-case text every match of each pattern contains (one of them): an ASCII name with
# none of it cannot match, so the pattern runs on the few names left.  Both patterns
# over a trace's 7,230 names: 18 ms, 3 ms this way.  (Only ASCII names are ruled out
# early: the patterns ignore case the Unicode way, where "ı" matches "i".)
_SYNC_NEEDLES = ("synchron", "aten::item", "local_scalar_dense", "nrt_")
_COLLECTIVE_NEEDLES = (
    "nccl",
    "rccl",
    "allreduce",
    "all_reduce",
    "reduce_scatter",
    "reducescatter",
    "allgather",
    "all_gather",
    "alltoall",
    "all_to_all",
    "broadcast",
    "c10d::",
    "collective",
    "record_param_comms",
)
# what torch.compile leaves in a trace: Inductor's graphs and the regions and AOTAutograd
# functions around them (Triton kernels alone are no sign: libraries ship their own)
_COMPILED = re.compile(r"(CompiledFxGraph|Torch-Compiled Region|CompiledFunction)")
_COMPILED_NEEDLES = ("compiled",)
# a CUDA / HIP graph replayed: one runtime call launches every kernel of the graph
_GRAPH_LAUNCH = re.compile(r"^(cuda|hip|cu)GraphLaunch")
_GRAPH_LAUNCH_NEEDLES = ("graphlaunch",)


def device_lanes(analysis: Analysis) -> dict[str, np.ndarray]:
    """Device name → its device-work rows, in start order."""
    trace = analysis.trace
    ev = trace.events
    rows = np.flatnonzero(equals_any(ev.role, _DEVICE_WORK) & (ev.dur >= 0))
    out: dict[str, list[np.ndarray]] = {}
    for thread, mine in split_by(ev.thread[rows], rows).items():
        info = trace.threads[thread]
        if info.pid == "NeuronCore":
            name = f"NeuronCore {info.tid.removeprefix('NC')}"
        elif trace.device_kind == "neuron":
            name = info.process_label or f"NeuronCore {info.pid}"
        else:
            kind = {"cuda": "GPU", "rocm": "GPU", "mtia": "MTIA", "xpu": "XPU"}.get(trace.device_kind, "device")
            name = f"{kind} {info.pid}"
        out.setdefault(name, []).append(mine)
    lanes = {}
    for name, chosen in sorted(out.items()):
        picked = np.concatenate(chosen)
        lanes[name] = picked[np.argsort(ev.ts[picked], kind="stable")]
    return lanes


def _instance(analysis: Analysis, row: int) -> int:
    """0-based position of ``row`` among the ops of the same name, in time order."""
    ev = analysis.trace.events
    same = np.flatnonzero(ev.name == ev.name[row])
    same = same[ev.role[same] == ev.role[row]]  # (on the few rows of that name, not every row)
    return int(np.searchsorted(np.sort(ev.ts[same]), ev.ts[row]))


def _op_name(analysis: Analysis, row: int) -> str:
    return analysis.trace.names[int(analysis.trace.events.name[row])] if row >= 0 else ""


def _severity(evidence: int, wall: int) -> str:
    share = evidence / wall if wall else 0.0
    return "high" if share >= 0.2 else "medium" if share >= 0.05 else "low"


def _finding(
    analysis: Analysis, kind: str, message: str, row: int, evidence: int, wall: int, severity: str = ""
) -> FindingOut:
    return FindingOut(
        kind=kind,
        severity=severity or _severity(evidence, wall),
        message=message,
        op=_op_name(analysis, row),
        instance=_instance(analysis, row) if row >= 0 else -1,
        evidence_us=us(evidence),
        row=row,
    )


def _devices(analysis: Analysis, lanes: dict[str, np.ndarray]) -> tuple[list[DeviceOut], dict[str, Union]]:
    """Each device lane's span, busy and idle time, and the union of its work."""
    ev = analysis.trace.events
    devices: list[DeviceOut] = []
    unions: dict[str, Union] = {}
    for name, rows in lanes.items():
        union = Union(ev.ts[rows], ev.ts[rows] + ev.dur[rows])
        unions[name] = union
        span = int(union.end[-1] - union.start[0]) if len(union) else 0
        busy = union.length
        devices.append(
            DeviceOut(
                name, us(span), us(busy), us(span - busy), round(100.0 * (span - busy) / span, 2) if span else 0.0
            )
        )
    return devices, unions


def diagnose(analysis: Analysis) -> DiagnoseOut:
    trace = analysis.trace
    ev = trace.events
    links = analysis.links
    # the trace's wall time as the summary defines it (``Trace.span_ns``), computed once
    first, last = analysis.span_ns
    wall = max(last - first, 1)
    lanes = device_lanes(analysis)
    devices, unions = _devices(analysis, lanes)
    all_rows = np.concatenate(list(lanes.values())) if lanes else np.empty(0, np.int64)
    all_device = Union(ev.ts[all_rows], ev.ts[all_rows] + ev.dur[all_rows])

    host = np.flatnonzero((ev.role == int(Role.OP)) & links.in_tree & (ev.dur >= 0))
    sync_name = names_matching(trace.names, _SYNC, _SYNC_NEEDLES)
    # rows of a synchronising name first (few), then the host calls among them that took time
    syncs = np.flatnonzero(sync_name[ev.name])
    syncs = syncs[
        equals_any(ev.role[syncs], (Role.OP, Role.RUNTIME, Role.DRIVER, Role.SYSTEM_RUNTIME)) & (ev.dur[syncs] > 0)
    ]

    steps: list[StepOut] = []
    step_list = analysis.steps()
    windows = [(s.name, s.start, s.end, int(ev.thread[s.row])) for s in step_list if is_profiler_step(s.name)]
    if not windows and trace.format != "neuron-events":
        main_thread = int(np.bincount(ev.thread[host]).argmax()) if host.size else -1
        windows = [(WHOLE_TRACE, first, last, main_thread)]
    # (a kernel benchmark's runtime events have no steps and no host work: a "whole
    # trace" step of it read "host busy 0 µs → host-bound")
    loader_rows = data_loader_rows(analysis)
    # fetching the next batch is the host's work too (not an op: PyTorch records it as
    # an annotation); without it a step that waits on its DataLoader looked idle on both sides
    # (a 2021 trace's fetch is an op already: a row twice is harmless, the busy time is a union)
    with_fetches = np.concatenate((host, loader_rows)) if loader_rows.size else host
    host_busy, device_busy, loading = _step_busy(analysis, windows, with_fetches, syncs, all_device, loader_rows)
    host_total = int(host_busy.sum())
    lengths = np.maximum(np.array([end - start for _, start, end, _ in windows], dtype=np.int64), 0)
    # the step can be no shorter than the busier side; time neither side shows busy is
    # mostly the host's (Python, I/O between ops), hence "half the wall" too
    # (a device busy for no time bounds nothing: steps of no time read "device-bound")
    device_bound = (2 * device_busy >= lengths) & (device_busy >= host_busy) & (device_busy > 0)
    bound = np.where(device_bound, "device", "host").tolist()
    # µs of whole ns (``us_of_ns``) in four array passes, not 28,000 calls
    thread_names = {t: trace.threads[t].display if t >= 0 else "" for t in {w[3] for w in windows}}
    for (name, _, _, thread), wall_us, host_us, device_us, verdict, loading_us in zip(
        windows, us_of_ns(lengths), us_of_ns(host_busy), us_of_ns(device_busy), bound, us_of_ns(loading)
    ):
        steps.append(StepOut(name, wall_us, host_us, device_us, verdict, loading_us, thread_names[thread]))

    device_bound_wall = sum(s.wall_us for s in steps if s.bound == "device")
    mostly_device_bound = 2 * device_bound_wall >= sum(s.wall_us for s in steps) and bool(steps)
    findings = _findings(
        analysis,
        lanes,
        unions,
        syncs,
        wall,
        host_total,
        all_device,
        mostly_device_bound,
        len(steps),
        loader_rows,
        captures := _captures(analysis, last),
        collectives := _HostCollectives.of(analysis),
    )
    if not lanes and trace.format != "neuron-events":  # CPU only: no device gap says where the time went
        findings += _outside_ops(analysis, windows, lengths, host_busy, with_fetches, wall, collectives)
    elif all_rows.size and trace.format != "neuron-events":  # the steps' time no device gap holds
        findings += _before_device_work(
            analysis, windows, lengths, host_busy, with_fetches, wall, collectives, all_rows, all_device, captures
        )
    # below the noise floor a finding is not a finding (a 0.011 µs gap is no advice)
    floor = noise_floor_ns(wall)
    findings = [f for f in findings if f.severity == "info" or f.evidence_us * 1000 >= floor]
    if not any(f.severity != "info" for f in findings):  # no other finding to see: say where to look instead
        findings = [
            msgspec.structs.replace(f, message=f.message.replace(_SEE_THE_OTHERS, _NO_OTHERS)) for f in findings
        ]
    # time lost first; "info" findings (not a loss) after them
    findings.sort(key=lambda f: (f.severity == "info", -f.evidence_us))
    return DiagnoseOut(trace.label or trace.source, devices, steps, findings)


_SEE_THE_OTHERS = " at times (the steps are host-bound overall: see the other findings)"
_NO_OTHERS = (
    " at times (the steps are host-bound overall, though no cause passes its threshold: "
    "the timeline shows where the host's time went)"
)
OUTSIDE_OPS_SHARE = 0.2  # of the steps' wall time in no op, from which a CPU-only trace is told so


def _outside_ops(
    analysis: Analysis,
    windows: list[tuple[str, int, int, int]],
    lengths: np.ndarray,
    host_busy: np.ndarray,
    busy_rows: np.ndarray,
    wall: int,
    collectives: _HostCollectives,
) -> list[FindingOut]:
    """A CPU-only trace's steps spend a fifth of their time or more in no op: Python
    between the ops (or a wait, a sleep) — where a device trace tells its idle gaps,
    a CPU one said "findings: none".  Names the Python call holding the most of that
    time, where the trace has its frames (``with_stack``)."""
    total, outside = int(lengths.sum()), int((lengths - host_busy).clip(min=0).sum())
    # (a trace of no op at all — ranges alone, a Python-only capture — has no ops to be between)
    if total <= 0 or outside < OUTSIDE_OPS_SHARE * total or not busy_rows.size:
        return []
    return [
        _op_free_finding(
            analysis,
            windows,
            busy_rows,
            outside,
            total,
            wall,
            collectives,
            where="",
            python=": Python between the ops, or waiting",
            remedy="fewer, larger ops (torch.compile) or less Python per step cut it",
        )
    ]


def _op_free_finding(
    analysis: Analysis,
    pieces: list[tuple[str, int, int, int]],
    busy_rows: np.ndarray,
    outside: int,
    total: int,
    wall: int,
    collectives: _HostCollectives,
    *,
    where: str,
    python: str,
    remedy: str,
) -> FindingOut:
    """``outside_ops``: the steps' thread in no op for ``outside`` of ``total`` (in the
    ``pieces`` of the steps, ``where`` them), told as waiting for other ranks where a
    host thread executed collectives for half of it or more, else as ``python`` with
    the Python call that held a quarter of it or more, and the ``remedy``."""
    whole = pieces[0][0] == WHOLE_TRACE
    whose = "the busiest thread" if whole else "the steps' thread"
    of = "the trace's" if whole else "their"
    said = f"{whose} is in no op for {fmt_time_ns(outside)} of {of} {fmt_time_ns(total)} ({fmt_share(outside, total)})"
    said += where
    starts = np.array([start for _, start, _, _ in pieces], dtype=np.int64)
    ends = np.array([end for _, _, end, _ in pieces], dtype=np.int64)
    waited = min(int(collectives.union.covered_in(starts, ends).sum()), outside) if len(collectives.union) else 0
    if 2 * waited >= outside:  # gloo's threads did the step's work: waiting, not Python
        advice = (
            f", while a host thread executed collectives for {fmt_time_ns(waited)} of the steps "
            f"({collectives.top} the longest): waiting for other ranks — trnscope ranks on the job's traces says "
            "which held them back"
        )
    else:
        frame, held = _quiet_frame(analysis, pieces, busy_rows)
        inside = f"; {fmt_time_ns(held)} of it inside {frame}" if frame and 4 * held >= outside else ""
        advice = f"{python}{inside} — {remedy}"
    return _finding(analysis, "outside_ops", said + advice, -1, outside, wall)


def _before_device_work(
    analysis: Analysis,
    windows: list[tuple[str, int, int, int]],
    lengths: np.ndarray,
    host_busy: np.ndarray,
    busy_rows: np.ndarray,
    wall: int,
    collectives: _HostCollectives,
    device_rows: np.ndarray,
    all_device: Union,
    captures: _Captures | None,
) -> list[FindingOut]:
    """A device trace's steps spend a fifth of their time or more before the host
    first launches device work, or after the devices' last work, with the steps'
    thread in no op: the device waits for the host's Python (TraceLens's TimeSformer
    step: 213 of 383 ms preprocessing video frames before its first launch, and no
    finding but "host-bound: see the other findings").  The gaps between device work
    are the idle findings' (which say where the host was), time after a launch whose
    work has not started is the queue's (vLLM's graph replay starts 7 ms after its
    launch), and time inside a stream capture records launches by design: none of
    them counts here."""
    total = int(lengths.sum())
    if total <= 0 or not busy_rows.size or not int(host_busy.sum()):  # (a step thread without ops: no "between")
        return []
    ev = analysis.trace.events
    first, last = int(all_device.start[0]), int(all_device.end[-1])
    # the steps' time outside the devices' span bounds what can count (a launch only
    # moves the start earlier): most traces stop here, before any pass over the launches
    # or the ops (2.9 M events: 58 ms for nothing)
    outside_span = sum(max(min(end, first) - start, 0) + max(end - max(start, last), 0) for _, start, end, _ in windows)
    if outside_span < OUTSIDE_OPS_SHARE * total:
        return []
    launches = analysis.links.device_launch[device_rows]
    launches = launches[launches >= 0]
    if launches.size:
        first = min(first, int(ev.ts[launches].min()))
    regions: dict[int, Union] = {}
    for thread in sorted({w[3] for w in windows}):
        mine = [(start, end) for _, start, end, t in windows if t == thread]
        starts = np.array([start for start, _ in mine], dtype=np.int64)
        ends = np.array([end for _, end in mine], dtype=np.int64)
        region = difference(Union(starts, ends), Union(np.array([first]), np.array([last])))
        regions[thread] = difference(region, captures.windows) if captures is not None else region
    outside = 0
    # (only ops reaching outside the span cover any of it; the frame below sees them all)
    near = busy_rows[(ev.ts[busy_rows] < first) | (ev.ts[busy_rows] + np.maximum(ev.dur[busy_rows], 0) > last)]
    for thread, region in regions.items():
        rows = near[ev.thread[near] == thread]
        busy = Union(ev.ts[rows], ev.ts[rows] + np.maximum(ev.dur[rows], 0))
        outside += region.length - intersection(busy, region).length
    if outside < OUTSIDE_OPS_SHARE * total:
        return []
    pieces = [
        (windows[0][0], int(start), int(end), thread)
        for thread, region in regions.items()
        for start, end in zip(region.start.tolist(), region.end.tolist(), strict=True)
    ]
    _, start, end, _ = max(pieces, key=lambda piece: piece[2] - piece[1])
    origin = analysis.span_ns[0]
    return [
        msgspec.structs.replace(
            _op_free_finding(
                analysis,
                pieces,
                busy_rows,
                outside,
                total,
                wall,
                collectives,
                where=" before its first launch of device work or after the devices' last work",
                python=": no device works meanwhile, waiting for the host's Python or untraced work",
                remedy="move that work out of the step (DataLoader workers) or onto the device",
            ),
            window_us=[us(start - origin), us(end - origin)],  # the longest stretch: the explorer opens on it
        )
    ]


def _quiet_frame(
    analysis: Analysis,
    windows: list[tuple[str, int, int, int]],
    busy_rows: np.ndarray | Callable[[], np.ndarray],
) -> tuple[str, int]:
    """Among the Python frames on the steps' threads that ran (next to) no op, the
    innermost of those holding (nearly) the most op-free time inside the steps, and
    that time; ("", 0) without frames.  ``busy_rows``: the ops (and fetches), or what
    finds them, asked only where a frame overlaps the windows."""
    ev = analysis.trace.events
    threads = np.unique(np.array([thread for _, _, _, thread in windows], dtype=np.int64))
    frames = analysis.derived(
        ("python frames with a duration", None), lambda: np.flatnonzero((ev.role == int(Role.PYTHON)) & (ev.dur > 0))
    )
    frames = frames[np.isin(ev.thread[frames], threads)]
    steps = Union(
        np.array([start for _, start, _, _ in windows], dtype=np.int64),
        np.array([end for _, _, end, _ in windows], dtype=np.int64),
    )
    # only frames that overlap the windows can hold their time (the gaps of an idle
    # finding are a few of a trace's frames: OWLv2's two calls took 19 ms on them all)
    frames = frames[steps.covered_in(ev.ts[frames], ev.ts[frames] + ev.dur[frames]) > 0]
    frames = frames[
        ~holds_a_whole_step(*analysis.profiler_step_bounds(), ev.ts[frames], ev.ts[frames] + ev.dur[frames])
    ]
    if not frames.size:
        return "", 0
    rows = busy_rows() if callable(busy_rows) else busy_rows
    # only the ops within the frames' reach change what covers them (2.9 M events: the
    # unions of every op took 50 ms of an idle gap's naming)
    lo, hi = int(ev.ts[frames].min()), int((ev.ts[frames] + ev.dur[frames]).max())
    rows = rows[(ev.ts[rows] < hi) & (ev.ts[rows] + np.maximum(ev.dur[rows], 0) > lo)]
    best_name, best_idle = "", 0
    for thread in threads.tolist():
        mine = frames[ev.thread[frames] == thread]
        ops = rows[ev.thread[rows] == thread]
        busy = Union(ev.ts[ops], ev.ts[ops] + np.maximum(ev.dur[ops], 0))
        start, end = ev.ts[mine], ev.ts[mine] + ev.dur[mine]
        in_steps = steps.covered_in(start, end)
        idle = in_steps - intersection(busy, steps).covered_in(start, end)
        quiet = np.flatnonzero(ran_no_op(busy, start, end))
        if not quiet.size:
            continue
        pick = int(quiet[innermost_of_most(idle[quiet], (end - start)[quiet])])
        if int(idle[quiet].max()) > best_idle:
            best_name, best_idle = analysis.trace.names[int(ev.name[mine[pick]])], int(idle[pick])
    return best_name, best_idle


class _Captures(msgspec.Struct, frozen=True):
    """The host's stream-capture windows (each ``…StreamBeginCapture`` to the end of the
    next ``…StreamEndCapture`` on its thread; to the trace's end without one), the
    launches they recorded, and per window the op or annotation that ran the capture."""

    starts: np.ndarray  # int64 ns, per window
    ends: np.ndarray
    launches: int  # runtime calls that would have put work on the device, inside the windows
    owners: list[int]  # per window: the op or annotation around its Begin, -1 if none
    begin: str  # the Begin and End calls' names, as the trace spells them
    end: str

    @property
    def windows(self) -> Union:
        return Union(self.starts, self.ends)


def _captures(analysis: Analysis, last: int) -> _Captures | None:
    trace = analysis.trace
    ev = trace.events
    begins = names_matching(trace.names, _CAPTURE_BEGIN, _CAPTURE_BEGIN_NEEDLES)
    if not begins.any():  # most traces: no pass over every event
        return None
    ends = names_matching(trace.names, _CAPTURE_END, _CAPTURE_END_NEEDLES)
    calls = np.flatnonzero((begins[ev.name] | ends[ev.name]) & equals_any(ev.role, _HOST_RUNTIME))
    calls = calls[np.argsort(ev.ts[calls], kind="stable")]
    starts: list[int] = []
    stops: list[int] = []
    begun_rows: list[int] = []
    open_on: dict[int, int] = {}  # thread → the Begin row of its open capture
    for row in calls.tolist():
        thread = int(ev.thread[row])
        if begins[ev.name[row]]:
            open_on.setdefault(thread, row)  # a second Begin inside a capture (the program's error) extends it
        elif thread in open_on:
            begun = open_on.pop(thread)
            starts.append(int(ev.ts[begun]))
            stops.append(int(ev.ts[row]) + max(int(ev.dur[row]), 0))
            begun_rows.append(begun)
    for begun in open_on.values():  # still capturing when the trace ends
        starts.append(int(ev.ts[begun]))
        stops.append(max(last, int(ev.ts[begun])))
        begun_rows.append(begun)
    if not starts:
        return None
    device_call = names_matching(trace.names, _DEVICE_CALL, _DEVICE_CALL_NEEDLES)
    recorded = np.flatnonzero(device_call[ev.name] & equals_any(ev.role, _HOST_RUNTIME))
    launches = 0
    for begun, start, stop in zip(begun_rows, starts, stops):
        mine = recorded[ev.thread[recorded] == ev.thread[begun]]
        launches += int(((ev.ts[mine] >= start) & (ev.ts[mine] < stop)).sum())
    end_name = next((trace.names[int(ev.name[r])] for r in calls.tolist() if not begins[ev.name[r]]), "")
    return _Captures(
        np.array(starts, dtype=np.int64),
        np.array(stops, dtype=np.int64),
        launches,
        [_enclosing_range(analysis, begun) for begun in begun_rows],
        trace.names[int(ev.name[begun_rows[int(np.argmin(starts))]])],
        end_name,
    )


def _enclosing_range(analysis: Analysis, row: int) -> int:
    """The nearest op or annotation around ``row`` (what the op table drills into), -1 if none."""
    ev = analysis.trace.events
    parent = analysis.links.raw_parent
    current = int(parent[row])
    while current >= 0 and int(ev.role[current]) not in HOST_RANGES:
        current = int(parent[current])
    return current


def _step_busy(
    analysis: Analysis,
    windows: list[tuple[str, int, int, int]],
    host: np.ndarray,
    syncs: np.ndarray,
    all_device: Union,
    loader: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per step window (name, start, end, thread): the host's busy time on its thread
    — the union of its ``host`` rows (ops and DataLoader fetches) inside the window,
    less what of it a synchronising call covers (waiting is not work) — the devices'
    busy time inside the window, and the host's time fetching batches on its thread
    (the union of the ``loader`` rows inside the window).

    The union of ops clipped to a window is the thread's union clipped to it, so each
    thread's unions are built once and every window is two binary searches in them
    (7,178 steps at 2.9 M events: 0.7 s as a loop of small unions, a few ms now)."""
    ev = analysis.trace.events
    starts = np.array([w[1] for w in windows], dtype=np.int64)
    ends = np.array([w[2] for w in windows], dtype=np.int64)
    threads, window_thread = np.unique(np.array([w[3] for w in windows], dtype=np.int64), return_inverse=True)

    def unions_per_thread(rows: np.ndarray) -> list[Union]:
        thread = ev.thread[rows].astype(np.int64)
        slot = np.minimum(np.searchsorted(threads, thread), threads.size - 1)
        on_a_step_thread = threads[slot] == thread
        rows, slot = rows[on_a_step_thread], slot[on_a_step_thread]
        return unions_of_groups(slot, ev.ts[rows], ev.ts[rows] + np.maximum(ev.dur[rows], 0), threads.size)

    host_busy = np.zeros(len(windows), dtype=np.int64)
    loading = np.zeros(len(windows), dtype=np.int64)
    fetches = unions_per_thread(loader)
    for slot, (busy, waits) in enumerate(zip(unions_per_thread(host), unions_per_thread(syncs))):
        mine = np.flatnonzero(window_thread == slot)
        waited = intersection(busy, waits)
        host_busy[mine] = busy.covered_in(starts[mine], ends[mine]) - waited.covered_in(starts[mine], ends[mine])
        loading[mine] = fetches[slot].covered_in(starts[mine], ends[mine])
    return host_busy, all_device.covered_in(starts, ends), loading


def _launch_gaps(analysis: Analysis, rows: np.ndarray, union: Union) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The idle gaps of one device between its first and last work: (gap ns, the
    position in ``rows`` of the device event that ends each gap, its launching op)."""
    ev = analysis.trace.events
    if len(union) < 2:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int64)
    gap = union.start[1:] - union.end[:-1]
    starts = ev.ts[rows]
    order = np.argsort(starts, kind="stable")
    at = np.searchsorted(starts[order], union.start[1:])
    after = order[np.minimum(at, rows.size - 1)]
    return gap, after, analysis.links.device_op[rows[after]]


def _most_frequent(rows: np.ndarray) -> int:
    """The row that occurs most often (a tie goes to the lowest), -1 if none."""
    if not rows.size:
        return -1
    distinct, counts = np.unique(rows, return_counts=True)
    return int(distinct[int(counts.argmax())])


def _most_blamed(ops: np.ndarray, gap: np.ndarray, blamed: np.ndarray) -> int:
    """The op that launched the work after the most idle time (summed over its gaps;
    a tie goes to the lowest row), or -1 when no gap is blamed on an op.  Summed per
    distinct op, not in a trace-long array: at 2.9 M events that array was 23 MB of
    fresh memory for one argmax."""
    if not blamed.any():
        return -1
    owners, owner_of_gap = np.unique(ops[blamed], return_inverse=True)
    loss = np.zeros(owners.size, dtype=np.int64)
    np.add.at(loss, owner_of_gap.reshape(-1), gap[blamed])
    return int(owners[int(loss.argmax())])


def _findings(  # noqa: C901 - one block per finding kind, sharing the same unions
    analysis: Analysis,
    lanes: dict[str, np.ndarray],
    unions: dict[str, Union],
    syncs: np.ndarray,
    wall: int,
    host_total: int,
    all_device: Union,
    device_bound: bool,
    step_count: int,
    loader_rows: np.ndarray,
    captures: _Captures | None,
    waits: _HostCollectives,
) -> list[FindingOut]:
    """Findings whose advice follows the steps' own verdict: where the steps are mostly
    device-bound, idle gaps are not called launch-bound and the host running ahead is
    the expected picture; where they are host-bound, the opposite.

    Each idle gap between a device's launches is told once, in this order: the part of
    it the host spent fetching the next batch (``data_loading``), the part inside a
    stream capture (``graph_capture``: recorded work does not run), then what is left
    of it before a small kernel (``small_kernels``) or before any other work
    (``device_idle``): the four findings' evidence adds up to the device's idle time.
    (A 122 ms wait for a batch is no launch overhead: on TraceLens's OWLv2 trace four
    of them were 493 of the 505 ms once blamed on small kernels.)"""
    trace = analysis.trace
    ev = trace.events
    links = analysis.links
    out: list[FindingOut] = []
    device_busy = all_device.length
    benchmark = trace.format == "neuron-events"  # the gaps between executions are the benchmark loop's
    if benchmark:
        warm = "".join(f"; {note}" for note in warmup_notes([analysis]))
        out.append(
            _finding(
                analysis,
                "kernel_benchmark",
                "a kernel benchmark's runtime events: the device idles between executions by the benchmark "
                "loop's design, not for a workload's reasons — compare the executions (trnscope compare) instead"
                + warm,
                -1,
                0,
                wall,
                severity="info",
            )
        )
    loader = Union(ev.ts[loader_rows], ev.ts[loader_rows] + ev.dur[loader_rows])
    # already compiled (Inductor's graphs ran): "use torch.compile" is no advice then;
    # what is left is graphs that launch the whole step at once, or larger launches
    compiled = bool(names_matching(trace.names, _COMPILED, _COMPILED_NEEDLES).any())
    graphs = trace.device_kind in ("cuda", "rocm")  # torch.cuda.graphs serves both
    if compiled:
        fuse = 'CUDA graphs (torch.compile mode="reduce-overhead")' if graphs else "fewer graph breaks"
    else:
        fuse = "torch.compile"
    graph_launch = names_matching(trace.names, _GRAPH_LAUNCH, _GRAPH_LAUNCH_NEEDLES)
    floor = noise_floor_ns(wall)
    for name, rows in ({} if benchmark else lanes).items():
        union = unions[name]
        span = int(union.end[-1] - union.start[0]) if len(union) else 0
        idle = span - union.length
        if span == 0:
            continue
        gap, after, ops = _launch_gaps(analysis, rows, union)
        fetching, capturing = _explained_gaps(union, loader, captures)
        # of the idle time: how much the host spent fetching the next batch, and capturing
        fetched, captured = int(fetching.sum()), int(capturing.sum())
        if fetched > 0:
            out.append(_data_loading(analysis, name, fetching, union, loader_rows, span, wall))
        if captured > 0 and captures is not None:
            out.append(_graph_capture(analysis, name, capturing, union, captures, span, wall))
        gap = gap - fetching - capturing
        durations = ev.dur[rows]
        # a kernel of a replayed graph pays no launch of its own: the graph's one launch
        # covers all of them, so it is no part of a launch storm ("fuse them or batch"
        # told a graph replay what it already does)
        launch = links.device_launch[rows]
        replayed = (launch >= 0) & graph_launch[ev.name[np.maximum(launch, 0)]]
        small = (durations < SMALL_KERNEL_NS) & ~replayed
        storm = rows.size >= 50 and small.mean() >= 0.5 and gap.size > 0
        # each idle gap is told once: before a small kernel, and no longer than a launch
        # can cost, it is the storm's, else plain idle time — so the two findings'
        # evidence adds up to the idle time
        before_small = small[after] & (gap <= LAUNCH_GAP_NS) if storm else np.zeros(gap.size, dtype=bool)
        if storm:
            evidence = int(gap[before_small].sum())
            launching = links.device_op[rows[small]]
            launching = launching[launching >= 0]
            top = _most_frequent(launching)
            out.append(
                _finding(
                    analysis,
                    "small_kernels",
                    f"{int(small.sum()):,} of {rows.size:,} device events on {name} run under "
                    f"{SMALL_KERNEL_NS // 1000} µs; the device is idle {fmt_time_ns(evidence)} in the gaps of up to "
                    f"{LAUNCH_GAP_NS // 1_000_000} ms before them — "
                    f"each launch costs more than its work: fuse them ({fuse}) or batch"
                    # (a finding under the noise floor is dropped: no naming of where the host was)
                    f"{_where_the_host_was(analysis, rows, after, gap, before_small, union) if evidence >= floor else ''}"
                    f"{waits.in_gaps(union, gap, before_small)}",
                    top,
                    evidence,
                    wall,
                )
            )
        rest = ~before_small
        if rest.any() and int(gap[rest].sum()) > 0:
            evidence = int(gap[rest].sum())
            top = _most_blamed(ops, gap, rest & (ops >= 0))
            long_gaps = gap[rest] > LAUNCH_GAP_NS
            advice = _idle_advice(
                host_per_device=host_total / max(union.length, 1),
                launch_bound=idle - fetched - captured >= 0.3 * span and not device_bound,
                long_gaps=int(long_gaps.sum()),
                long_ns=int(gap[rest][long_gaps].sum()),
                evidence=evidence,
                device_bound=device_bound,
                mostly_busy=union.length >= 0.7 * span,
                compiled=compiled,
                graphs=graphs,
                replayed=2 * int(replayed.sum()) >= rows.size,
            )
            out.append(
                _finding(
                    analysis,
                    "device_idle",
                    f"{name} is idle {fmt_share(idle, span)} of its {fmt_time_ns(span)} span; "
                    f"{fmt_time_ns(evidence)} of it in {int((rest & (gap > 0)).sum()):,} gaps between launches"
                    f"{_besides(storm, fetched >= noise_floor_ns(wall), captured > 0)}; {advice}"
                    f"{_where_the_host_was(analysis, rows, after, gap, rest, union) if evidence >= floor else ''}"
                    f"{waits.in_gaps(union, gap, rest)}",
                    top,
                    evidence,
                    wall,
                )
            )
    if syncs.size:
        waited = Union(ev.ts[syncs], ev.ts[syncs] + ev.dur[syncs])
        # what a sync costs is the device idling while the host waits (with nothing queued);
        # waiting while the device is busy is the device's time, not the sync's
        device_idle_in_wait = waited.length - int(all_device.covered_in(waited.start, waited.end).sum())
        if waited.length >= 0.05 * wall:
            longest = int(syncs[np.argmax(ev.dur[syncs])])
            names: dict[str, int] = {}
            for r in syncs.tolist():
                names[trace.names[int(ev.name[r])]] = names.get(trace.names[int(ev.name[r])], 0) + 1
            listed = ", ".join(f"{n} ×{c}" for n, c in sorted(names.items(), key=lambda x: -x[1])[:3])
            parent = int(links.raw_parent[longest])
            per_step = syncs.size / max(step_count, 1)
            advice = (
                "one sync per step: the host waits for the step's device work to finish — the wait is device time, "
                "not an avoidable sync"
                if per_step <= 1.0
                else "while it waits nothing new is queued — sync once per step, avoid .item() / printing tensors "
                "inside the loop"
            )
            out.append(
                _finding(
                    analysis,
                    "synchronization",
                    f"the host waited {fmt_time_ns(waited.length)} in {plural(int(syncs.size), 'synchronisation')} ({listed}); the "
                    f"device sat idle for {fmt_time_ns(device_idle_in_wait)} of it; {advice}",
                    parent if parent >= 0 and ev.role[parent] == int(Role.OP) else longest,
                    device_idle_in_wait,
                    wall,
                    severity="info" if per_step <= 1.0 else "",
                )
            )
    launched = np.flatnonzero(equals_any(ev.role, _DEVICE_WORK) & (links.device_launch >= 0))
    if launched.size:
        launch = links.device_launch[launched]
        queue = ev.ts[launched] - (ev.ts[launch] + np.maximum(ev.dur[launch], 0))
        deep = queue > LONG_QUEUE_NS
        if deep.any():
            q = Union((ev.ts[launch] + ev.dur[launch])[deep], ev.ts[launched][deep])
            worst = int(launched[deep][np.argmax(queue[deep])])
            out.append(
                _finding(
                    analysis,
                    "long_queue",
                    f"{int(deep.sum()):,} device events waited more than {LONG_QUEUE_NS // 1000} µs after their launch "
                    f"(longest {fmt_time_ns(int(queue.max()))}): the host runs ahead of the device"
                    + (
                        " — the steps are device-bound; speed up the device work itself"
                        if device_bound
                        else _SEE_THE_OTHERS
                    ),
                    int(links.device_op[worst]),
                    q.length,
                    wall,
                    severity="info",
                )
            )
    collective = names_matching(trace.names, _COLLECTIVE, _COLLECTIVE_NEEDLES)
    all_rows = np.concatenate(list(lanes.values())) if lanes else np.empty(0, np.int64)
    comm = all_rows[collective[ev.name[all_rows]]] if all_rows.size else all_rows
    if comm.size and device_busy:
        comm_union = Union(ev.ts[comm], ev.ts[comm] + ev.dur[comm])
        if comm_union.length >= 0.3 * device_busy:
            top = int(comm[np.argmax(ev.dur[comm])])
            out.append(
                _finding(
                    analysis,
                    "collectives",
                    f"collectives take {fmt_time_ns(comm_union.length)}, {fmt_share(comm_union.length, device_busy)} "
                    "of the device's busy time — overlap communication with compute, or reduce how often it runs",
                    int(links.device_op[top]),
                    comm_union.length,
                    wall,
                )
            )
    out += _neuron_findings(analysis, wall)
    return out


def _idle_advice(
    *,
    host_per_device: float,
    launch_bound: bool,
    long_gaps: int,
    long_ns: int,
    evidence: int,
    device_bound: bool,
    mostly_busy: bool,
    compiled: bool,
    graphs: bool,
    replayed: bool = False,
) -> str:
    """What a device's idle gaps between launches call for.  Launch-bound only when most
    of the idle time is in gaps a launch could cost (up to ``LAUNCH_GAP_NS``): SGLang's
    prefill trace idles 493 of 494 ms in one gap, inside one op, and read "launch-bound:
    capture it in CUDA graphs".  ``replayed``: most of the device's work came from
    graph replays, so graphs are no advice."""
    if launch_bound and 2 * long_ns >= evidence:
        return (
            f"{fmt_time_ns(long_ns)} in {plural(long_gaps, 'gap')} over {LAUNCH_GAP_NS // 1_000_000} ms, "
            "too long to be launch overhead: the host worked or waited elsewhere meanwhile"
        )
    if launch_bound:
        if replayed:
            return (
                f"the host spends {host_per_device:.1f} µs per µs of device work, though most of the work is "
                "replayed from CUDA graphs already: the gaps are the host's time between replays — capture more "
                "of the step in the graph, or move host work out of the loop"
            )
        if compiled:
            remedy = (
                'capture it in CUDA graphs (torch.compile mode="reduce-overhead")' if graphs else "fewer graph breaks"
            )
            remedy = f"the code is compiled already: {remedy}"
        else:
            remedy = "fuse ops, use torch.compile / CUDA graphs" if graphs else "fuse ops (torch.compile)"
        return (
            f"the host spends {host_per_device:.1f} µs per µs of device work — launch-bound: {remedy}, "
            "or give each launch more work"
        )
    if device_bound:
        return "the steps are device-bound; these gaps are where the host or a sync held the device up"
    if mostly_busy:
        return "the device is mostly busy; these gaps are where the host or a sync held it up"
    return "these gaps are where the host or a sync held the device up"


def _besides(storm: bool, fetched: bool, captured: bool) -> str:
    """What ``device_idle``'s gaps leave out, told by the other idle findings (a
    DataLoader wait under the noise floor is not told: not named either; a capture's
    finding is ``info``, always told)."""
    told = [
        *(["the small-kernel gaps"] if storm else []),
        *(["the DataLoader waits"] if fetched else []),
        *(["the graph captures"] if captured else []),
    ]
    if not told:
        return ""
    return f" (besides {', '.join(told[:-1])} and {told[-1]})" if len(told) > 1 else f" (besides {told[0]})"


_LAUNCH_UNKNOWN = -2


# collectives that a host thread executes (gloo's, MPI's, UCC's work ranges), whose
# time on the host is the transfer and the wait for the other ranks; NCCL's host calls
# only launch the device's kernels (HTA's V100 DDP trace: c10d::allreduce_ ~93 µs each)
_HOST_EXECUTED = re.compile(r"^(gloo|mpi|ucc):")
_HOST_EXECUTED_NEEDLES = ("gloo:", "mpi:", "ucc:")


class _HostCollectives:
    """The host's time executing collectives (``gloo:all_reduce`` …), on any thread: a
    device idle while its host waits in one is waiting for other ranks, which no fusing
    or graph removes.  (A gloo DDP rank idled 160 ms in five gaps, said to be "Python or
    untraced work", while its gloo threads waited 31 ms a step in ``gloo:all_reduce``
    for a rank that slept.)"""

    def __init__(self, union: Union, top: str) -> None:
        self.union = union
        self.top = top  # the collective holding the most of that time

    @classmethod
    def of(cls, analysis: Analysis) -> _HostCollectives:
        ev = analysis.trace.events
        collective = names_matching(analysis.trace.names, _HOST_EXECUTED, _HOST_EXECUTED_NEEDLES)
        rows = np.flatnonzero(collective[ev.name] & equals_any(ev.role, HOST_RANGES) & (ev.dur > 0))
        if not rows.size:
            return cls(Union(np.empty(0, np.int64), np.empty(0, np.int64)), "")
        longest = int(rows[np.argmax(ev.dur[rows])])
        return cls(Union(ev.ts[rows], ev.ts[rows] + ev.dur[rows]), analysis.trace.names[int(ev.name[longest])])

    def in_gaps(self, union: Union, gap: np.ndarray, chosen: np.ndarray) -> str:
        """What of the ``chosen`` gaps between ``union``'s work the host spent in
        collectives, when that is a tenth of them or more; else nothing."""
        if not len(self.union) or not chosen.any():
            return ""
        starts = union.end[:-1][chosen]
        waited = int(np.minimum(self.union.covered_in(starts, starts + gap[chosen]), gap[chosen]).sum())
        total = int(gap[chosen].sum())
        if total <= 0 or 10 * waited < total:
            return ""
        return (
            f"; the host was inside collectives ({self.top} the longest) for {fmt_time_ns(waited)} of these gaps "
            f"({fmt_share(waited, total)}): waiting for other ranks — trnscope ranks on the job's traces says "
            "which held them back"
        )


def _where_the_host_was(
    analysis: Analysis, rows: np.ndarray, after: np.ndarray, gap: np.ndarray, chosen: np.ndarray, union: Union
) -> str:
    """Where the host was during the longest of the ``chosen`` gaps (those that make up
    half their time): the innermost op or annotation, on the thread that launched the
    work after a gap, that began before the gap did — it encloses that launch, so the
    host was inside it throughout the gap.  The range holding the most of that time is
    named, with its time and number of gaps; or that the host was outside every one
    (a ``ProfilerStep`` encloses everything: it is not named); nothing where most of
    that time is before work whose launch the trace does not have."""
    lengths = np.where(chosen, gap, 0)
    total = int(lengths.sum())
    if total <= 0:
        return ""
    longest = np.argsort(-lengths, kind="stable")
    count = int(np.searchsorted(np.cumsum(lengths[longest]), (total + 1) // 2)) + 1
    longest = longest[:count]
    ev = analysis.trace.events
    parent = analysis.links.raw_parent
    gap_start = union.end[:-1][longest]
    launches = analysis.links.device_launch[rows[after[longest]]].astype(np.int64)
    current = launches.copy()
    inside = np.full(count, -1, dtype=np.int64)
    step_rows = np.sort(np.array([step.row for step in analysis.steps()] or [-1], dtype=np.int64))
    # up the launches' ancestors, all gaps at once, until each meets a range begun before its gap
    for _ in range(512):
        looking = (current >= 0) & (inside < 0)
        if not looking.any():
            break
        here = np.maximum(current, 0)
        found = looking & equals_any(ev.role[here], HOST_RANGES) & (ev.ts[here] <= gap_start)
        found &= step_rows[np.minimum(np.searchsorted(step_rows, here), step_rows.size - 1)] != here
        inside[found] = current[found]
        current = np.where(looking & ~found, parent[here], -1)
    keys = np.where(inside >= 0, ev.name[np.maximum(inside, 0)].astype(np.int64), -1)
    # work whose launch is not in the trace tells nothing of where the host was
    keys[launches < 0] = _LAUNCH_UNKNOWN
    names, key_of_gap = np.unique(keys, return_inverse=True)
    key_of_gap = key_of_gap.reshape(-1)
    time_per_name = np.zeros(names.size, dtype=np.int64)  # exact: whole nanoseconds
    np.add.at(time_per_name, key_of_gap, lengths[longest])
    top = int(np.argmax(time_per_name))
    gaps = int((key_of_gap == top).sum())
    held = fmt_time_ns(int(time_per_name[top]))
    if names[top] == _LAUNCH_UNKNOWN:
        return ""
    # the share those gaps hold, as measured: "half this time" read oddly of one gap
    # holding 76% of it
    which = "the longest gap" if count == 1 else f"the {count:,} longest gaps"
    which += f" ({fmt_share(int(lengths[longest].sum()), total)} of this time)"
    if names[top] < 0:
        mine = key_of_gap == top
        frame, in_frame = _quiet_frame(
            analysis,
            [
                ("", start, start + length, thread)
                for start, length, thread in zip(
                    gap_start[mine].tolist(),
                    lengths[longest][mine].tolist(),
                    ev.thread[launches[mine]].tolist(),
                    strict=True,
                )
            ],
            lambda: np.flatnonzero(ev.role == int(Role.OP)),
        )
        where = (
            f"; {fmt_time_ns(in_frame)} of it inside {frame}" if frame and 4 * in_frame >= time_per_name[top] else ""
        )
        return (
            f"; in {which} the host was in no op or annotation (but the "
            f"step) of the launching thread for {held} ({plural(gaps, 'gap')}: Python or untraced work{where})"
        )
    return (
        f"; in {which} the host was inside {analysis.trace.names[int(names[top])]} for {held} ({plural(gaps, 'gap')})"
    )


def _explained_gaps(union: Union, loader: Union, captures: _Captures | None) -> tuple[np.ndarray, np.ndarray]:
    """Of each idle gap between the device's runs of work: how much a DataLoader fetch
    covered, and how much of the rest a stream capture did."""
    starts, ends = union.end[:-1], union.start[1:]
    fetching = loader.covered_in(starts, ends) if len(loader) else np.zeros(starts.size, np.int64)
    if captures is None:
        return fetching, np.zeros(starts.size, np.int64)
    both = Union(np.r_[loader.start, captures.windows.start], np.r_[loader.end, captures.windows.end])
    return fetching, both.covered_in(starts, ends) - fetching


def _graph_capture(
    analysis: Analysis, device: str, capturing: np.ndarray, union: Union, captures: _Captures, span: int, wall: int
) -> FindingOut:
    """The device idle while the host recorded work into a graph (``info``: the capture's
    design, not a loss of the workload), pointing at the op or annotation that ran the
    capture which idled the device longest."""
    inside = np.maximum(np.minimum(captures.ends, union.end[-1]) - np.maximum(captures.starts, union.start[0]), 0)
    idled = inside - union.covered_in(captures.starts, captures.ends)
    owner = captures.owners[int(np.argmax(idled))]
    evidence = int(capturing.sum())
    graphs = "a graph" if len(captures.owners) == 1 else f"{len(captures.owners):,} graphs"
    return _finding(
        analysis,
        "graph_capture",
        f"{device} sat idle {fmt_time_ns(evidence)} ({fmt_share(evidence, span)} of its {fmt_time_ns(span)} span) "
        f"while the host recorded {plural(captures.launches, 'launch', 'launches')} into {graphs} "
        f"over {fmt_time_ns(captures.windows.length)} "
        f"({captures.begin} … {captures.end or 'the end of the trace'}): captured work does not run, so this idle "
        "time is the capture's, not the workload's — profile the graph's replays for its device time",
        owner,
        evidence,
        wall,
        severity="info",
    )


def _data_loading(
    analysis: Analysis,
    device: str,
    fetching: np.ndarray,
    union: Union,
    loader_rows: np.ndarray,
    span: int,
    wall: int,
) -> FindingOut:
    """The device idle while the host waited for the DataLoader (``fetching``: how much
    of each gap between the device's runs of work a fetch covered), pointing at the
    fetch that kept it waiting longest."""
    ev = analysis.trace.events
    starts, ends = ev.ts[loader_rows], ev.ts[loader_rows] + ev.dur[loader_rows]
    # per fetch: the device's idle time inside it, within the device's span (all of
    # its busy time lies there)
    inside = np.maximum(np.minimum(ends, union.end[-1]) - np.maximum(starts, union.start[0]), 0)
    waited = np.maximum(inside - union.covered_in(starts, ends), 0)
    worst = int(loader_rows[int(np.argmax(waited))])
    evidence = int(fetching.sum())
    waits = int((waited > 0).sum())
    return _finding(
        analysis,
        "data_loading",
        f"{device} sat idle {fmt_time_ns(evidence)} ({fmt_share(evidence, span)} of its {fmt_time_ns(span)} span) "
        f"while the host fetched the next batch ({plural(waits, 'DataLoader fetch', 'DataLoader fetches')}, the longest "
        f"{fmt_time_ns(int(ev.dur[worst]))}): the input pipeline holds the device up — load in worker processes "
        "(DataLoader num_workers, pin_memory) or preprocess ahead of training",
        worst,
        evidence,
        wall,
    )


def _neuron_findings(analysis: Analysis, wall: int) -> list[FindingOut]:
    data, neuron = analysis.neuron_data, analysis.neuron
    if data is None or neuron is None or not len(data.executions) or data.system is None:
        return []
    ev = analysis.trace.events
    system = data.system
    out: list[FindingOut] = []
    executions = data.executions
    duration = executions.union
    models = system.model_id[executions.system_row]
    warmup_loss, warmup_row = 0, -1
    for model in np.unique(models).tolist():
        mine = np.flatnonzero(models == model)
        if mine.size < 3:
            continue
        mine = mine[np.argsort(executions.host_start[mine], kind="stable")]
        first, rest = int(duration[mine[0]]), np.median(duration[mine[1:]])
        if first > 2 * rest and first - rest > 100_000 and first - rest > warmup_loss:
            warmup_loss, warmup_row = int(first - rest), int(mine[0])
    if warmup_row >= 0:
        op = int(neuron.by_execution.op[warmup_row])
        out.append(
            _finding(
                analysis,
                "first_execution",
                f"the first execution of {analysis.trace.names[int(ev.name[executions.trace_row[warmup_row]])]} takes "
                f"{fmt_time_ns(int(duration[warmup_row]))}, {fmt_time_ns(warmup_loss)} more than the median of the rest "
                "(NeuronCore start-up) — warm up before profiling, or profile a later execution (--profile-nth-exec=2)",
                op if op >= 0 else -1,
                warmup_loss,
                wall,
            )
        )
    compute = neuron.engines.busy[:, :5]
    if compute.size:
        share = compute.max(axis=1) / np.maximum(duration, 1)
        idle = np.where(share < 0.5, duration * (1 - share), 0).astype(np.int64)
        placed = neuron.engines.profile >= 0
        idle = np.where(placed, idle, 0)
        if idle.sum() > 0:
            worst = int(np.argmax(idle))
            op = int(neuron.by_execution.op[worst])
            out.append(
                _finding(
                    analysis,
                    "engines_idle",
                    f"in {int((idle > 0).sum()):,} NeuronCore executions the busiest engine works under half the time; "
                    f"{fmt_time_ns(int(idle.sum()))} of execution time has no engine near full — the core waits on DMA "
                    "or semaphores: larger tiles, overlapped loads (NKI), or fewer, bigger graphs",
                    op if op >= 0 else -1,
                    int(idle.sum()),
                    wall,
                )
            )
    return out
