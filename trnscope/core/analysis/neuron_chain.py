"""The Neuron backend's chain hops: for a NeuronCore execution an op launched, the
runtime request that ran it, the execution, per-engine busy time, collectives and the
top instructions by HLO / NKI source location."""

from __future__ import annotations

from typing import Any

import numpy as np

from trnscope.core.analysis.chain_model import ChainContext, Hop, us
from trnscope.core.base.intervals import grouped_union
from trnscope.core.formats.neuron.data import NeuronData
from trnscope.core.formats.neuron.device import ENGINES, DeviceProfile
from trnscope.core.formats.neuron.executions import describe
from trnscope.core.formats.neuron.system import SOURCE_RUNTIME, SystemEvents
from trnscope.core.link.linker import LinkMethod
from trnscope.core.link.neuron import NeuronLinks

_TOP_INSTRUCTIONS = 8


class NeuronHops:
    """``DeviceHopProvider`` for Neuron profiles."""

    def __init__(self, data: NeuronData, links: NeuronLinks) -> None:
        self.data = data
        self.links = links
        self._exec_rows = set(data.executions.trace_row.tolist())

    def claims(self, device_row: int) -> bool:
        return self.data.system is not None and device_row in self._exec_rows

    def device_hops(self, context: ChainContext, device_row: int) -> None:
        assert self.data.system is not None
        _execution_hops(context, self.data, self.links, self.data.system, device_row)

    def extra_hops(self, context: ChainContext, op_rows: np.ndarray) -> None:
        if not self.data.device_in_trace or self.data.system is None:
            return
        # device activities came from trace.json; still show the executions behind them
        for i in np.flatnonzero(np.isin(self.links.by_execution.op, op_rows)).tolist():
            _execution_hops(context, self.data, self.links, self.data.system, int(self.data.executions.trace_row[i]))


def _execution_hops(  # noqa: C901 - request, execution, engines and instructions of one execution, in chain order
    context: ChainContext, data: NeuronData, neuron: NeuronLinks, system: SystemEvents, exec_row: int
) -> None:
    """Runtime request, execution, engines and top instructions of one NeuronCore
    execution; the execution hop carries its queueing time (``queue_us``)."""
    trace, hops, hop, origin, depth = context.trace, context.hops, context.hop, context.origin, context.depth
    ev = trace.events
    executions = data.executions
    index = int(np.flatnonzero(executions.trace_row == exec_row)[0])
    sys_exec = int(executions.system_row[index])
    exec_id = int(system.exec_id[sys_exec])
    by_execution, engines = neuron.by_execution, neuron.engines
    related = by_execution.related[index]
    exec_start = int(ev.ts[exec_row])
    last_before = None
    for s in related:
        r = int(data.system_row[s])
        if r < 0 or int(system.source[s]) != SOURCE_RUNTIME:
            continue
        details: dict[str, Any] = {}
        if system.exec_id[s] >= 0:
            details["exec_id"] = int(system.exec_id[s])
        if system.nrta_seq_id[s] >= 0:
            details["nrta_seq_id"] = int(system.nrta_seq_id[s])
        if system.flow_offsets[s + 1] > system.flow_offsets[s]:
            details["flow_id"] = [int(f) for f in system.flows_of(s)]
        hops.append(hop(r, "runtime", depth + 1, details=details))
        end = int(ev.ts[r] + ev.dur[r])
        if end <= exec_start and (last_before is None or end > last_before):
            last_before = end
    queue = max(0, exec_start - last_before) if last_before is not None else 0
    model = system.names[int(system.model_name[sys_exec])] if system.model_name[sys_exec] >= 0 else ""
    duration = max(int(ev.dur[exec_row]), 1)
    exec_details: dict[str, Any] = {
        "exec_id": exec_id if exec_id >= 0 else "not exported",
        "NeuronCore": int(system.nc_idx[sys_exec]),
        "model_id": int(system.model_id[sys_exec]),
        "NEFF": model,
        "linked by": LinkMethod(int(by_execution.method[index])).label,
        "queue_us": us(queue),
    }
    if int(system.nc_start[sys_exec]) >= 0:
        exec_details["device clock start (ns)"] = int(system.nc_start[sys_exec])
    # LNC=2: one nc_exec_running record per physical core; device time is their union
    exec_details.update(describe(executions, index))
    instr_per_core = engines.core_busy[index]
    if instr_per_core:
        exec_details["physical cores (us busy, union of instructions)"] = {
            f"pcore {core}": us(ns) for core, ns in sorted(instr_per_core.items())
        }
    co = by_execution.co_ops[index]
    if co:
        exec_details["submitted with"] = [trace.names[int(ev.name[c])] for c in co]
    hops.append(hop(exec_row, "execution", depth + 2, details=exec_details))
    busy = engines.busy[index]
    count = engines.count[index]
    profile_index = int(engines.profile[index])
    profile = data.profiles[profile_index] if profile_index >= 0 else None
    dev_start, dev_end = (int(v) for v in engines.window[index])
    for e in np.argsort(-busy).tolist():
        if busy[e] == 0:
            continue
        engine_details: dict[str, Any] = {
            "instructions": int(count[e]),
            "busy_percent": round(100.0 * int(busy[e]) / duration, 1),
        }
        if ENGINES[e] == "dma" and profile is not None and dev_start >= 0:
            engine_details.update(_dma_details(profile, dev_start, dev_end))
        hops.append(
            Hop(
                layer="device",
                name=f"{ENGINES[e]} engine",
                start_us=us(exec_start - origin),
                dur_us=us(int(busy[e])),
                thread_or_stream=trace.threads[int(ev.thread[exec_row])].display,
                details=engine_details,
                kind="engine",
                depth=depth + 3,
                row=exec_row,
            )
        )
    if profile is not None and dev_start >= 0:
        collectives = np.flatnonzero((profile.cc_start >= dev_start) & (profile.cc_start < dev_end))
        for c in collectives.tolist():
            hops.append(
                Hop(
                    layer="device",
                    name=f"collective {profile.cc_operation[c] if c < len(profile.cc_operation) else ''}".strip(),
                    start_us=us(exec_start - origin + int(profile.cc_start[c]) - dev_start),
                    dur_us=us(int(profile.cc_duration[c])),
                    thread_or_stream=trace.threads[int(ev.thread[exec_row])].display,
                    details={"bytes": int(profile.cc_bytes[c]) if c < profile.cc_bytes.size else 0},
                    kind="collective",
                    depth=depth + 3,
                    row=exec_row,
                )
            )
        inst = profile.details(dev_start, dev_end)
        if len(inst):
            key = np.where(inst.nki > 0, inst.nki, inst.hlo)
            order = np.argsort(key, kind="stable")
            uniq, first, group = np.unique(key, return_index=True, return_inverse=True)
            first = np.searchsorted(key[order], uniq)
            # the time this source location kept the core busy: the union of its
            # instructions (with LNC=2 both physical cores run them, overlapping)
            ends = np.minimum(inst.start + inst.duration, dev_end)
            sums = grouped_union(np.asarray(group).reshape(-1), inst.start, ends, uniq.size)
            counts = np.diff(np.append(first, order.size))
            for k in np.argsort(-sums)[:_TOP_INSTRUCTIONS].tolist():
                location = inst.strings[int(uniq[k])] or "(no HLO / NKI location)"
                members = order[first[k] : first[k] + counts[k]]
                opcodes = sorted({inst.strings[int(o)] for o in inst.opcode[members] if o >= 0})
                on_engines = sorted({ENGINES[int(x)] for x in inst.engine[members]})
                hops.append(
                    Hop(
                        layer="device",
                        name=location,
                        start_us=us(exec_start - origin + int(inst.start[members].min()) - dev_start),
                        dur_us=us(int(sums[k])),
                        thread_or_stream=", ".join(on_engines),
                        short_place=f"{len(on_engines)} engines" if len(on_engines) > 1 else "",
                        details={
                            "instructions": int(counts[k]),
                            "opcodes": opcodes[:6],
                            "source": "NKI" if inst.nki[members[0]] > 0 else "HLO",
                        },
                        kind="instruction",
                        depth=depth + 3,
                        row=exec_row,
                    )
                )


def _dma_details(profile: DeviceProfile, dev_start: int, dev_end: int) -> dict[str, Any]:
    """Bytes and routes of the DMA packets that start inside one execution."""
    inside = (profile.dma_start >= dev_start) & (profile.dma_start < dev_end)
    details: dict[str, Any] = {"bytes": int(profile.dma_bytes[inside].sum())}
    if profile.dma_route.size == profile.dma_start.size and profile.dma_routes:
        routes = profile.dma_route[inside]
        routes = routes[routes >= 0]
        counts = np.bincount(routes, minlength=len(profile.dma_routes))
        details["routes"] = {profile.dma_routes[r]: int(counts[r]) for r in np.argsort(-counts)[:4] if counts[r]}
    return details
