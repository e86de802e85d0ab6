"""Link framework ops to Neuron runtime requests, NeuronCore executions and instructions.

An execution (``nc_exec_running``) is tied to the runtime request that ran it by
``exec_id``; the request is tied to the op that submitted it by, in order:

1. ``framework_mapping_*.json``: the request's ``nrta_seq_id`` → the op's autograd
   ``Sequence number`` (innermost op carrying it; fused submissions list several ops,
   the first is charged and the rest are shown beside it);
2. ``flow_id``: a framework event of the system profile (Explorer's copy of a
   ``privateuse1_driver``/``_runtime`` event, matched to trace.json by thread and start
   time) shares a flow id with the request → that event's op (its ``External id``, the
   runtime event with the same ``correlation``, or the op that encloses it);
3. time: the request's scheduling event runs on an op's thread inside the op.

Instructions are placed in executions by device time (same core and model).  Anything
that cannot be linked is counted in ``NeuronLinkReport``.
"""

from __future__ import annotations

import msgspec
import numpy as np

from trnscope.core.formats.neuron.data import NeuronData
from trnscope.core.formats.neuron.device import ENGINES
from trnscope.core.formats.neuron.system import SOURCE_FRAMEWORK, SOURCE_RUNTIME
from trnscope.core.link.linker import LinkMethod, Links, enclosing_op, lookup
from trnscope.core.model.roles import Role
from trnscope.core.model.trace import Trace

MATCH_TOLERANCE_NS = 1_000


class NeuronLinkReport(msgspec.Struct):
    executions: int = 0
    linked: int = 0
    by_mapping: int = 0
    by_flow: int = 0
    by_time: int = 0
    unlinked_executions: int = 0
    executions_without_request: int = 0
    requests: int = 0
    requests_without_op: int = 0
    instructions: int = 0
    instructions_outside_executions: int = 0
    profiles_without_executions: int = 0


class NeuronLinks(msgspec.Struct):
    exec_op: np.ndarray  # op row per execution (-1)
    exec_method: np.ndarray  # uint8 LinkMethod per execution
    exec_request: np.ndarray  # system index of the runtime request (nrt_execute), -1
    exec_co_ops: list[list[int]]  # other ops of a fused submission
    exec_profile: np.ndarray  # index into NeuronData.profiles, -1
    engine_busy: np.ndarray  # int64 [executions, len(ENGINES)]: summed instruction time
    engine_count: np.ndarray  # int64 [executions, len(ENGINES)]
    report: NeuronLinkReport


def _request_of_exec(data: NeuronData) -> np.ndarray:
    system = data.system
    assert system is not None
    runtime = np.flatnonzero((system.source == SOURCE_RUNTIME) & (system.exec_id >= 0))
    names = np.array([system.names[int(i)] for i in system.name[runtime]], dtype=object)
    preferred = runtime[names == "nrt_execute"]
    others = runtime[names != "nrt_execute"]
    request = np.full(len(data.exec_system), -1, dtype=np.int64)
    exec_ids = system.exec_id[data.exec_system]
    for candidates in (preferred, others):
        if candidates.size == 0:
            continue
        order = np.argsort(system.exec_id[candidates], kind="stable")
        found = lookup(system.exec_id[candidates][order], candidates[order], exec_ids)
        todo = request < 0
        request[todo] = found[todo]
    return request


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


def link_neuron(trace: Trace, data: NeuronData, links: Links) -> NeuronLinks:
    ev = trace.events
    n_exec = len(data.exec_system)
    exec_op = np.full(n_exec, -1, dtype=np.int64)
    method = np.zeros(n_exec, dtype=np.uint8)
    co_ops: list[list[int]] = [[] for _ in range(n_exec)]
    report = NeuronLinkReport(executions=n_exec)
    system = data.system
    if system is None or n_exec == 0:
        return _finish(trace, links, data, exec_op, method, np.full(n_exec, -1, np.int64), co_ops, report)
    request = _request_of_exec(data)
    report.executions_without_request = int((request < 0).sum())
    runtime_rows = np.flatnonzero(system.source == SOURCE_RUNTIME)
    report.requests = int(np.unique(system.exec_id[runtime_rows][system.exec_id[runtime_rows] >= 0]).size)

    op_mask = np.isin(ev.role, [int(Role.OP), int(Role.ANNOTATION)])
    op_rows = np.flatnonzero(op_mask & (ev.external_id >= 0))
    order = np.argsort(ev.external_id[op_rows], kind="stable")
    op_ext = (ev.external_id[op_rows][order], op_rows[order])

    # 1. framework_mapping: nrta_seq_id → Sequence number → innermost op with it
    if data.mapping:
        seq_rows = np.flatnonzero((ev.role == int(Role.OP)) & (ev.sequence >= 0))
        innermost: dict[int, int] = {}
        for row in seq_rows.tolist():
            seq = int(ev.sequence[row])
            best = innermost.get(seq)
            if best is None or links.depth[row] > links.depth[best]:
                innermost[seq] = row
        req_nrta = np.where(request >= 0, system.nrta_seq_id[np.maximum(request, 0)], -1)
        for i in range(n_exec):
            ops = data.mapping.get(int(req_nrta[i]))
            if not ops:
                continue
            rows = [innermost[o.seq_nr] for o in ops if o.seq_nr in innermost]
            if rows:
                rows.sort(key=lambda r: int(ev.ts[r]))
                exec_op[i], method[i] = rows[0], LinkMethod.NEURON_MAPPING
                co_ops[i] = rows[1:]

    # 2. flow ids: framework event (Explorer's copy of a trace.json event) ↔ request
    todo = np.flatnonzero((exec_op < 0) & (request >= 0))
    if todo.size and system.flow_ids.size:
        framework = np.flatnonzero(system.source == SOURCE_FRAMEWORK)
        flow_to_framework: dict[int, int] = {}
        for row in framework.tolist():
            for flow in system.flows_of(row).tolist():
                flow_to_framework.setdefault(flow, row)
        host_rows = np.flatnonzero(np.isin(ev.role, [int(Role.RUNTIME), int(Role.DRIVER), int(Role.OP)]))
        key = {(trace.threads[int(ev.thread[r])].tid, int(ev.ts[r])): r for r in host_rows.tolist()}
        by_tid_ts = _TimeIndex(trace, host_rows)
        corr_runtime = {
            int(ev.correlation[r]): r
            for r in np.flatnonzero((ev.role == int(Role.RUNTIME)) & (ev.correlation >= 0)).tolist()
        }
        for i in todo.tolist():
            flows = system.flows_of(int(request[i])).tolist()
            fw = next((flow_to_framework[f] for f in flows if f in flow_to_framework), -1)
            if fw < 0:
                continue
            ts = int(system.start[fw]) - trace.origin_ns
            row = key.get((str(int(system.thread[fw])), ts), -1)
            if row < 0:
                row = by_tid_ts.nearest(str(int(system.thread[fw])), ts, MATCH_TOLERANCE_NS)
            if row < 0:
                continue
            op = _op_for_trace_row(trace, links, row, op_ext, corr_runtime)
            if op >= 0:
                exec_op[i], method[i] = op, LinkMethod.NEURON_FLOW

    # 3. time: the request's scheduling event inside an op on the same thread
    todo = np.flatnonzero((exec_op < 0) & (request >= 0))
    if todo.size:
        index = _TimeIndex(trace, np.flatnonzero(op_mask & links.in_tree))
        nrta = system.nrta_seq_id
        schedule_rows = {}
        for r in runtime_rows.tolist():
            if system.names[int(system.name[r])] == "nrta_execute_schedule" and nrta[r] >= 0:
                schedule_rows[int(nrta[r])] = r
        for i in todo.tolist():
            req = int(request[i])
            anchor = schedule_rows.get(int(nrta[req]), req)
            op = index.enclosing(str(int(system.thread[anchor])), int(system.start[anchor]) - trace.origin_ns, links)
            if op >= 0:
                exec_op[i], method[i] = op, LinkMethod.NEURON_TIME
    return _finish(trace, links, data, exec_op, method, request, co_ops, report)


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


def _finish(
    trace: Trace,
    links: Links,
    data: NeuronData,
    exec_op: np.ndarray,
    method: np.ndarray,
    request: np.ndarray,
    co_ops: list[list[int]],
    report: NeuronLinkReport,
) -> NeuronLinks:
    n_exec = len(data.exec_system)
    report.linked = int((exec_op >= 0).sum())
    report.by_mapping = int((method == LinkMethod.NEURON_MAPPING).sum())
    report.by_flow = int((method == LinkMethod.NEURON_FLOW).sum())
    report.by_time = int((method == LinkMethod.NEURON_TIME).sum())
    report.unlinked_executions = n_exec - report.linked
    if data.system is not None:
        linked_requests = (
            set(data.system.exec_id[request[(request >= 0) & (exec_op >= 0)]].tolist()) if n_exec else set()
        )
        report.requests_without_op = max(report.requests - len(linked_requests), 0)

    # device time of ops: executions become kernels of the op that submitted them,
    # unless trace.json already carries the device activities (then those count).
    if not data.device_in_trace and n_exec:
        rows = data.exec_rows
        links.device_op[rows] = exec_op
        links.link_method[rows] = np.where(exec_op >= 0, method, int(LinkMethod.NONE))
        launch = (
            np.where(request >= 0, data.system_row[np.maximum(request, 0)], -1) if data.system is not None else request
        )
        links.device_launch[rows] = launch
        # link() saw these rows as device events without link information; recount them
        r = links.report
        r.unlinkable -= int(rows.size)
        r.linked += report.linked
        r.unlinkable += int(((exec_op < 0) & (request < 0)).sum())
        r.outside_ops += int(((exec_op < 0) & (request >= 0)).sum())

    profile_of = np.full(n_exec, -1, dtype=np.int64)
    busy = np.zeros((n_exec, len(ENGINES)), dtype=np.int64)
    counts = np.zeros((n_exec, len(ENGINES)), dtype=np.int64)
    system = data.system
    for p_index, profile in enumerate(data.profiles):
        inst = profile.instructions
        report.instructions += len(inst)
        if system is None or n_exec == 0:
            report.instructions_outside_executions += len(inst)
            report.profiles_without_executions += 1
            continue
        cores = system.nc_idx[data.exec_system]
        models = system.model_id[data.exec_system]
        mine = np.flatnonzero(
            (np.maximum(cores, 0) == profile.nc_idx) & ((models == profile.model_id) | (profile.model_id < 0))
        )
        if mine.size == 0:
            report.instructions_outside_executions += len(inst)
            report.profiles_without_executions += 1
            continue
        dev_start = system.nc_start[data.exec_system[mine]]
        dev_end = system.nc_stop[data.exec_system[mine]]
        order = np.argsort(dev_start, kind="stable")
        mine, dev_start, dev_end = mine[order], dev_start[order], dev_end[order]
        which = np.searchsorted(dev_start, inst.start, side="right") - 1
        inside = (which >= 0) & (inst.start < dev_end[np.maximum(which, 0)])
        report.instructions_outside_executions += int((~inside).sum())
        profile_of[mine] = p_index
        executions = mine[which[inside]]
        np.add.at(busy, (executions, inst.engine[inside].astype(np.int64)), inst.duration[inside])
        np.add.at(counts, (executions, inst.engine[inside].astype(np.int64)), 1)
        # DMA packets and collectives of the profile count as the "dma" / "cc" engines
        for start, duration, engine in (
            (profile.dma_start, profile.dma_duration, "dma"),
            (profile.cc_start, profile.cc_duration, "cc"),
        ):
            if start.size == 0:
                continue
            at = np.searchsorted(dev_start, start, side="right") - 1
            within = (at >= 0) & (start < dev_end[np.maximum(at, 0)])
            np.add.at(busy, (mine[at[within]], ENGINES.index(engine)), duration[within])
            np.add.at(counts, (mine[at[within]], ENGINES.index(engine)), 1)
    return NeuronLinks(exec_op, method, request, co_ops, profile_of, busy, counts, report)
