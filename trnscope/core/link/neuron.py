"""Link framework ops to Neuron runtime requests, NeuronCore executions and instructions.

An execution (one per logical core; see the reader) is tied to the runtime events of
its request by ``exec_id`` and by the ``flow_id`` chain framework → runtime → hardware,
followed from the ``nc_exec_running`` rows themselves (real Parquet exports carry no
``exec_id``).  The op that submitted it is found by, in order:

1. ``flow_id``: a framework event in the same flow chain (Explorer's copy of a
   trace.json event — matched to trace.json by thread and start time — or, without a
   trace.json, the system profile's framework event itself);
2. ``framework_mapping_*.json``: an ``nrta_seq_id`` of the request → the op with that
   autograd ``Sequence number`` *and* submitting thread (``th_id``): a backward op
   carries its forward op's sequence number, so the number alone can name the wrong op;
3. time: a runtime event of the request runs on an op's thread inside the op.

Device profiles are placed on the host clock (``neuron_clock``), their instructions
assigned to executions, and engine busy time computed as the union of each engine's
instruction intervals minus semaphore waits — never above the execution's length.
Anything that cannot be linked is counted, by reason, in ``NeuronLinkReport``.
"""

from __future__ import annotations

import msgspec
import numpy as np

from trnscope.core.base.arrays import check_lengths, equals_any
from trnscope.core.formats.neuron.data import NeuronData
from trnscope.core.formats.neuron.mapping import FrameworkOp
from trnscope.core.formats.neuron.system import NONE, SOURCE_FRAMEWORK, SOURCE_HARDWARE, SOURCE_RUNTIME, SystemEvents
from trnscope.core.link.linker import LinkMethod, Links, enclosing_op, lookup
from trnscope.core.link.neuron_engines import EngineTime, ProfilePlacement, engine_time
from trnscope.core.model.roles import Role
from trnscope.core.model.trace import Trace

MATCH_TOLERANCE_NS = 1_000
_MAX_FLOW_COMPONENT = 256  # a flow id shared by more events than this is reused, not a chain
# which runtime event stands for the request, best first
_REQUEST_NAMES = ("nrt_execute", "nrt_model_submit", "nrta_execute_schedule", "kbl_exec_pre", "kmgr_exec_core")


class NeuronLinkReport(msgspec.Struct):
    executions: int = 0
    linked: int = 0
    by_mapping: int = 0
    by_flow: int = 0
    by_time: int = 0
    unlinked_executions: int = 0
    executions_without_request: int = 0  # no runtime event tied by exec_id or flow_id
    before_window: int = 0  # unlinked and started before the framework trace's first op
    outside_ops: int = 0  # tied to runtime events, but no op submitted them
    requests: int = 0
    requests_without_op: int = 0
    physical_core_rows: int = 0  # nc_exec_running rows merged into the executions
    instructions: int = 0
    instructions_outside_executions: int = 0
    profiles_without_executions: int = 0


class ExecutionLinks(msgspec.Struct):
    """Per execution (rows as in ``NeuronData.executions``): the op that submitted it
    and how that was found, and its runtime request."""

    op: np.ndarray  # int64 op row per execution, -1
    method: np.ndarray  # uint8 LinkMethod per execution
    request: np.ndarray  # int64 system index of the runtime request, -1
    co_ops: list[list[int]]  # other ops of a fused submission
    related: list[list[int]]  # system rows of the request (exec_id, flow chain, nrta_seq_id)

    def __post_init__(self) -> None:
        check_lengths(self, len(self.op))

    @classmethod
    def unlinked(cls, n: int) -> ExecutionLinks:
        return cls(
            np.full(n, -1, np.int64), np.zeros(n, np.uint8), np.full(n, -1, np.int64), [[] for _ in range(n)],
            [[] for _ in range(n)],
        )  # fmt: skip


class NeuronLinks(msgspec.Struct):
    by_execution: ExecutionLinks
    engines: EngineTime  # device profiles placed on the host clock, engine busy time per execution
    report: NeuronLinkReport

    @property
    def placements(self) -> list[ProfilePlacement]:
        return self.engines.placements


# -- runtime events of each execution ---------------------------------------------------------


def _flow_components(system: SystemEvents) -> np.ndarray:
    """Per system row, the id of its flow chain (rows sharing a flow id, transitively),
    or -1; chains larger than ``_MAX_FLOW_COMPONENT`` are dropped."""
    n = len(system)
    component = np.full(n, -1, dtype=np.int64)
    if system.flow_ids.size == 0:
        return component
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    owner: dict[int, int] = {}
    rows = np.repeat(np.arange(n), np.diff(system.flow_offsets))
    for row, flow in zip(rows.tolist(), system.flow_ids.tolist()):
        first = owner.setdefault(flow, row)
        if first != row:
            a, b = find(first), find(row)
            if a != b:
                parent[b] = a
    has_flow = np.diff(system.flow_offsets) > 0
    roots = np.array([find(i) for i in range(n)], dtype=np.int64)
    sizes = np.bincount(roots[has_flow], minlength=n)
    keep = has_flow & (sizes[roots] <= _MAX_FLOW_COMPONENT)
    component[keep] = roots[keep]
    return component


def _related_rows(data: NeuronData) -> tuple[list[list[int]], np.ndarray]:  # noqa: C901 - exec_id, nrta_seq_id and flow links of one execution, each optional
    """Per execution: the runtime and framework system rows of its request, and the
    request row (the best-named runtime event among them, -1 when none)."""
    system = data.system
    assert system is not None
    component = _flow_components(system)
    by_component: dict[int, list[int]] = {}
    for row in np.flatnonzero(component >= 0).tolist():
        by_component.setdefault(int(component[row]), []).append(row)
    runtime = system.source == SOURCE_RUNTIME
    by_exec: dict[int, list[int]] = {}
    for row in np.flatnonzero(runtime & (system.exec_id != NONE)).tolist():
        by_exec.setdefault(int(system.exec_id[row]), []).append(row)
    by_nrta: dict[int, list[int]] = {}
    for row in np.flatnonzero(runtime & (system.nrta_seq_id != NONE)).tolist():
        by_nrta.setdefault(int(system.nrta_seq_id[row]), []).append(row)
    priority = {name: rank for rank, name in enumerate(_REQUEST_NAMES)}
    related: list[list[int]] = []
    request = np.full(len(data.executions), -1, dtype=np.int64)
    for index, members in enumerate(data.executions.members):
        found: set[int] = set()
        for row in members:
            exec_id = int(system.exec_id[row])
            core = int(system.nc_idx[row])
            for other in by_exec.get(exec_id, []) if exec_id != NONE else []:
                if int(system.nc_idx[other]) in (core, NONE):
                    found.add(other)
            if component[row] >= 0:
                found.update(r for r in by_component[int(component[row])] if system.source[r] != SOURCE_HARDWARE)
        # the flow chains of those runtime events, and the rows of the same asynchronous
        # submission (nrta_seq_id), belong to the request too
        for row in list(found):
            if component[row] >= 0:
                found.update(r for r in by_component[int(component[row])] if system.source[r] != SOURCE_HARDWARE)
        for nrta in {int(system.nrta_seq_id[r]) for r in found} - {NONE}:
            found.update(by_nrta.get(nrta, []))
        rows = sorted(found, key=lambda r: int(system.start[r]))
        related.append(rows)
        candidates = [r for r in rows if runtime[r]]
        if candidates:
            request[index] = min(
                candidates, key=lambda r: (priority.get(system.name_of(r), len(priority)), int(system.start[r]))
            )
    return related, request


# -- ops ------------------------------------------------------------------------------------------


def _op_for_trace_row(
    trace: Trace, links: Links, row: int, op_ext: tuple[np.ndarray, np.ndarray], corr_runtime: dict[int, int]
) -> int:
    ev = trace.events
    role = int(ev.role[row])
    if role in (int(Role.OP), int(Role.ANNOTATION)):
        return row
    ext = int(ev.external_id[row])
    if ext >= 0 and ext != int(ev.correlation[row]):
        found = int(lookup(op_ext[0], op_ext[1], np.array([ext]))[0])
        if found >= 0:
            return found
    corr = int(ev.correlation[row])
    if corr >= 0 and corr in corr_runtime and corr_runtime[corr] != row:
        return _op_for_trace_row(trace, links, corr_runtime[corr], op_ext, corr_runtime)
    enclosing = enclosing_op(links.raw_parent, ev.role, np.array([row]))
    return int(enclosing[0])


class _MappingResolver:
    """``framework_mapping`` entries → op rows, by sequence number and thread.

    Forward ops record ``Fwd thread id`` 0; a backward op records its forward op's
    sequence number and the forward thread's index.  A mapping entry submitted from
    the forward thread (``th_id`` equal to that index) names the forward op; from any
    other thread, the backward op."""

    def __init__(self, trace: Trace, links: Links, fwd_thread: dict[int, int]) -> None:
        ev = trace.events
        self.trace = trace
        self.links = links
        self.by_seq: dict[int, list[int]] = {}
        for row in np.flatnonzero((ev.role == int(Role.OP)) & (ev.sequence >= 0)).tolist():
            self.by_seq.setdefault(int(ev.sequence[row]), []).append(row)
        self.fwd_thread = fwd_thread

    def op(self, entry: FrameworkOp, before_ns: int) -> int:
        rows = self.by_seq.get(entry.seq_nr, [])
        if len(rows) > 1:
            backward = [r for r in rows if self.fwd_thread.get(r, 0) > 0]
            forward = [r for r in rows if self.fwd_thread.get(r, 0) <= 0]
            if backward and forward:
                from_forward_thread = any(self.fwd_thread[r] == entry.th_id for r in backward)
                rows = forward if from_forward_thread else backward
        if not rows:
            return -1
        ev = self.trace.events
        # innermost op with the number, and of those the last one started before the request
        deepest = max(int(self.links.depth[r]) for r in rows)
        rows = [r for r in rows if int(self.links.depth[r]) == deepest]
        earlier = [r for r in rows if int(ev.ts[r]) <= before_ns]
        return max(earlier or rows, key=lambda r: int(ev.ts[r]))


class _MatchContext(msgspec.Struct):
    """What the op matchers share: the trace, its links and the executions' requests."""

    trace: Trace
    links: Links
    data: NeuronData
    system: SystemEvents
    related: list[list[int]]
    found: ExecutionLinks


def _match_by_flow(context: _MatchContext, todo: list[int]) -> None:
    """1. The flow chain of the request reaches a framework event: Explorer's copy of a
    trace.json event (matched to trace.json by thread and start time), or — without a
    trace.json — the system profile's framework event itself."""
    trace, links, data, system = context.trace, context.links, context.data, context.system
    ev = trace.events
    found = context.found
    if data.framework_from_system:
        for i in todo:
            framework = [
                r for r in context.related[i] if system.source[r] == SOURCE_FRAMEWORK and data.system_row[r] >= 0
            ]
            if framework:
                row = int(data.system_row[framework[0]])
                op = (
                    row
                    if int(ev.role[row]) == int(Role.OP)
                    else int(enclosing_op(links.raw_parent, ev.role, np.array([row]))[0])
                )
                if op >= 0:
                    found.op[i], found.method[i] = op, LinkMethod.NEURON_FLOW
        return
    op_mask = equals_any(ev.role, (Role.OP, Role.ANNOTATION))
    op_rows = np.flatnonzero(op_mask & (ev.external_id >= 0))
    order = np.argsort(ev.external_id[op_rows], kind="stable")
    op_ext = (ev.external_id[op_rows][order], op_rows[order])
    host_rows = np.flatnonzero(equals_any(ev.role, (Role.RUNTIME, Role.DRIVER, Role.OP)))
    exact = {(trace.threads[int(ev.thread[r])].tid, int(ev.ts[r])): r for r in host_rows.tolist()}
    by_tid_ts = _TimeIndex(trace, host_rows)
    corr_runtime = {
        int(ev.correlation[r]): r
        for r in np.flatnonzero((ev.role == int(Role.RUNTIME)) & (ev.correlation >= 0)).tolist()
    }
    for i in todo:
        for fw in (r for r in context.related[i] if system.source[r] == SOURCE_FRAMEWORK):
            ts = int(system.start[fw]) - trace.origin_ns
            tid = str(int(system.thread[fw]))
            row = exact.get((tid, ts), -1)
            if row < 0:
                row = by_tid_ts.nearest(tid, ts, MATCH_TOLERANCE_NS)
            if row < 0:
                continue
            op = _op_for_trace_row(trace, links, row, op_ext, corr_runtime)
            if op >= 0:
                found.op[i], found.method[i] = op, LinkMethod.NEURON_FLOW
                break


def _match_by_mapping(context: _MatchContext, todo: list[int]) -> None:
    """2. ``framework_mapping``: the request's ``nrta_seq_id`` → (sequence number,
    thread) → op; a fused submission names several ops (the rest: ``co_ops``)."""
    data, system, trace = context.data, context.system, context.trace
    if not data.mapping:
        return
    ev = trace.events
    resolver = _MappingResolver(trace, context.links, data.op_fwd_thread)
    for i in todo:
        related = context.related[i]
        nrtas = sorted({int(system.nrta_seq_id[r]) for r in related} - {NONE})
        entries = [e for nrta in nrtas for e in data.mapping.get(nrta, [])]
        if not entries:
            continue
        anchor = int(system.start[related[0]]) - trace.origin_ns
        ops = [r for r in (resolver.op(e, anchor) for e in entries) if r >= 0]
        if ops:
            ops = sorted(dict.fromkeys(ops), key=lambda r: int(ev.ts[r]))
            context.found.op[i], context.found.method[i] = ops[0], LinkMethod.NEURON_MAPPING
            context.found.co_ops[i] = ops[1:]


def _match_by_time(context: _MatchContext, todo: list[int]) -> None:
    """3. Time: a runtime event of the request runs on an op's thread inside the op."""
    if not todo:
        return
    trace, links, system = context.trace, context.links, context.system
    ev = trace.events
    op_mask = equals_any(ev.role, (Role.OP, Role.ANNOTATION))
    index = _TimeIndex(trace, np.flatnonzero(op_mask & links.in_tree))
    for i in todo:
        for r in context.related[i]:
            if system.source[r] != SOURCE_RUNTIME:
                continue
            op = index.enclosing(str(int(system.thread[r])), int(system.start[r]) - trace.origin_ns, links)
            if op >= 0:
                context.found.op[i], context.found.method[i] = op, LinkMethod.NEURON_TIME
                break


# Tried in order on the executions still without an op (the module docstring says why).
OP_MATCHERS = (_match_by_flow, _match_by_mapping, _match_by_time)


def link_neuron(trace: Trace, data: NeuronData, links: Links) -> NeuronLinks:
    """Executions → requests → ops, in stages: each execution's runtime request
    (``_related_rows``), its op by the matchers in order, the counts of what was not
    linked, the executions charged as device time to their ops (``charge_executions``),
    and the device profiles' engine time (``neuron_engines``)."""
    n_exec = len(data.executions)
    report = NeuronLinkReport(executions=n_exec)
    system = data.system
    found = ExecutionLinks.unlinked(n_exec)
    if system is not None and n_exec:
        report.physical_core_rows = sum(len(m) for m in data.executions.members)
        related, request = _related_rows(data)
        found = ExecutionLinks(found.op, found.method, request, found.co_ops, related)
        context = _MatchContext(trace, links, data, system, related, found)
        for matcher in OP_MATCHERS:
            todo = np.flatnonzero(found.op < 0).tolist()
            if todo:
                matcher(context, todo)
    early = _count(trace, data, found, report)
    if not data.device_in_trace and n_exec:
        charge_executions(links, data, found, report, early)
    engines = engine_time(data)
    report.instructions = engines.instructions
    report.instructions_outside_executions = engines.instructions_outside_executions
    report.profiles_without_executions = engines.profiles_without_executions
    return NeuronLinks(found, engines, report)


def _count(trace: Trace, data: NeuronData, found: ExecutionLinks, report: NeuronLinkReport) -> np.ndarray:
    """What the report says about the links: how each execution was linked, and why
    the unlinked ones were not (before the capture window, outside every op).  Returns
    which executions started before the first op."""
    n_exec = len(data.executions)
    report.executions_without_request = sum(1 for r in found.related if not r) if data.system is not None else 0
    report.requests = n_exec - report.executions_without_request if data.system is not None else 0
    report.linked = int((found.op >= 0).sum())
    report.by_mapping = int((found.method == LinkMethod.NEURON_MAPPING).sum())
    report.by_flow = int((found.method == LinkMethod.NEURON_FLOW).sum())
    report.by_time = int((found.method == LinkMethod.NEURON_TIME).sum())
    report.unlinked_executions = n_exec - report.linked
    has_request = np.array([bool(r) for r in found.related], dtype=bool)
    unlinked = found.op < 0
    ops = np.flatnonzero(equals_any(trace.events.role, (Role.OP, Role.ANNOTATION)))
    first_op = int(trace.events.ts[ops].min()) + trace.origin_ns if ops.size else None
    early = (data.executions.host_start < first_op) if first_op is not None else np.zeros(n_exec, dtype=bool)
    report.before_window = int((unlinked & early).sum())
    report.outside_ops = int((unlinked & has_request & ~early).sum())
    report.requests_without_op = report.outside_ops
    return early


def charge_executions(
    links: Links, data: NeuronData, found: ExecutionLinks, report: NeuronLinkReport, early: np.ndarray
) -> None:
    """Executions become device events of the op that submitted them: their rows of
    the trace-wide ``Links`` (``device_op``, ``link_method``, ``device_launch``) are
    written here, and ``link()``'s report — which saw them as device events without
    link information — is corrected.  (Not done when trace.json already carries the
    device activities: those count, as PyTorch counts them.)"""
    rows = data.executions.trace_row
    unlinked = found.op < 0
    links.device_op[rows] = found.op
    links.link_method[rows] = np.where(found.op >= 0, found.method, int(LinkMethod.NONE))
    links.device_launch[rows] = np.where(found.request >= 0, data.system_row[np.maximum(found.request, 0)], -1)
    has_request = np.array([bool(r) for r in found.related], dtype=bool)
    r = links.report
    r.unlinkable -= int(rows.size)
    r.linked += report.linked
    r.unlinkable += int((unlinked & (~has_request | early)).sum())
    r.before_window = min(r.before_window, r.unlinkable)  # the executions' own: said per execution
    r.outside_ops += report.outside_ops


class _TimeIndex:
    """Host rows per OS thread id, sorted by start, for time lookups."""

    def __init__(self, trace: Trace, rows: np.ndarray) -> None:
        self.trace = trace
        ev = trace.events
        self.by_tid: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        tids = (
            np.array([trace.threads[int(t)].tid for t in ev.thread[rows]], dtype=object)
            if rows.size
            else np.empty(0, object)
        )
        for tid in set(tids.tolist()):
            mine = rows[tids == tid]
            order = np.argsort(ev.ts[mine], kind="stable")
            self.by_tid[tid] = (ev.ts[mine][order], mine[order])

    def nearest(self, tid: str, ts: int, tolerance: int) -> int:
        if tid not in self.by_tid:
            return -1
        starts, rows = self.by_tid[tid]
        pos = int(np.searchsorted(starts, ts))
        best, best_gap = -1, tolerance + 1
        for k in (pos - 1, pos):
            if 0 <= k < starts.size and abs(int(starts[k]) - ts) < best_gap:
                best, best_gap = int(rows[k]), abs(int(starts[k]) - ts)
        return best

    def enclosing(self, tid: str, ts: int, links: Links) -> int:
        """The innermost op on thread ``tid`` whose interval holds ``ts``, or -1."""
        if tid not in self.by_tid:
            return -1
        starts, rows = self.by_tid[tid]
        ev = self.trace.events
        pos = int(np.searchsorted(starts, ts, side="right")) - 1
        current = int(rows[pos]) if pos >= 0 else -1
        while current >= 0:
            inside = ev.ts[current] <= ts < ev.ts[current] + max(int(ev.dur[current]), 0)
            if inside and ev.role[current] in (int(Role.OP), int(Role.ANNOTATION)):
                return current
            current = int(links.raw_parent[current])
        return -1
