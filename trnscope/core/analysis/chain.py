"""Follow one op instance from dispatch to the device: the drill-down chain.

Hops, in order: the Python stack and parent ops (framework), the op itself and its
child ops, the runtime calls it issued (CUDA/HIP/MTIA/PrivateUse1 runtime and, for
Neuron, the runtime request: ``nrta_execute_schedule``, ``nrt_execute``, ``kbl_exec_*``,
``kmgr_exec_core``, ``dmem_buf_copy*``), then the device work (kernels, copies,
NeuronCore executions with their engine breakdown and top instructions by HLO / NKI
source location).  Every hop has its start offset from the op's start and its
duration; ``gaps`` sums where the time went.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np

from trnscope.core.analysis.analysis import Analysis
from trnscope.core.formats.kineto.lazyargs import event_args
from trnscope.core.link.linker import forward_links
from trnscope.core.model.roles import LAYER_OF_ROLE, Layer, Role

if TYPE_CHECKING:
    from trnscope.core.formats.neuron.device import DeviceProfile

LAYER_NAMES = {
    Layer.FRAMEWORK: "framework",
    Layer.ANNOTATION: "framework",
    Layer.RUNTIME: "runtime",
    Layer.DEVICE: "device",
}
_TOP_INSTRUCTIONS = 8
_SHOWN_ARGS = (
    "Input Dims",
    "Input type",
    "Concrete Inputs",
    "Sequence number",
    "External id",
    "correlation",
    "cbid",
    "stream",
    "device",
    "grid",
    "block",
    "registers per thread",
    "shared memory",
    "est. achieved occupancy %",
    "bytes",
    "memory bandwidth (GB/s)",
    "kernel_backend",
    "kernel_file",
    "Module Hierarchy",
    "nrta_seq_id",
)


class Hop(msgspec.Struct):
    layer: str  # "framework" | "runtime" | "device"
    name: str
    start_us: float  # from the start of the op instance
    dur_us: float
    thread_or_stream: str
    details: dict[str, Any] = {}
    kind: str = ""  # python, parent, op, child, runtime, kernel, memory, execution, engine, instruction
    depth: int = 0
    row: int = -1


class Gaps(msgspec.Struct):
    dispatch_us: float  # op start → its first runtime call
    queue_us: float  # launch calls' end → their device work's start, summed
    device_us: float  # device time of the work the op launched
    runtime_us: float = 0.0  # host time inside runtime calls
    host_us: float = 0.0  # the op's own CPU time


class Chain(msgspec.Struct):
    op: str
    instance: int
    instances: int
    row: int
    hops: list[Hop]
    gaps: Gaps
    notes: list[str] = []


def _us(ns: float) -> float:
    return round(float(ns) / 1000.0, 3)


def _subtree(analysis: Analysis, row: int) -> np.ndarray:
    """Rows of the raw tree under ``row`` (itself included)."""
    parent = analysis.links.raw_parent
    ev = analysis.trace.events
    thread = ev.thread[row]
    start, end = ev.ts[row], ev.ts[row] + max(int(ev.dur[row]), 0)
    candidates = np.flatnonzero((ev.thread == thread) & (ev.ts >= start) & (ev.ts <= end) & analysis.links.in_tree)
    inside = np.zeros(candidates.size, dtype=bool)
    current = candidates.copy()
    for _ in range(512):
        hit = current == row
        inside |= hit
        current = np.where(hit | (current < 0), -1, parent[np.maximum(current, 0)])
        if (current < 0).all():
            break
    return candidates[inside]


def _ancestors(analysis: Analysis, row: int) -> list[int]:
    out = []
    current = int(analysis.links.raw_parent[row])
    while current >= 0 and len(out) < 256:
        out.append(current)
        current = int(analysis.links.raw_parent[current])
    return out[::-1]


def _details(analysis: Analysis, row: int, lazy: bool) -> dict[str, Any]:
    trace = analysis.trace
    ev = trace.events
    details: dict[str, Any] = {"category": trace.cats[int(ev.cat[row])] if ev.cat[row] < len(trace.cats) else ""}
    if lazy:
        args = event_args(trace, row)
        for key in _SHOWN_ARGS:
            if key in args:
                details[key] = args[key]
    return details


def build_chain(
    analysis: Analysis, row: int, *, instance: int = 0, instances: int = 1, lazy_args: bool = True
) -> Chain:
    trace = analysis.trace
    ev = trace.events
    links = analysis.links
    origin = int(ev.ts[row])

    def hop(r: int, kind: str, depth: int = 0, details: dict[str, Any] | None = None, name: str | None = None) -> Hop:
        role = Role(int(ev.role[r]))
        layer = LAYER_NAMES.get(LAYER_OF_ROLE[role], "framework")
        return Hop(
            layer=layer,
            name=name or trace.names[int(ev.name[r])],
            start_us=_us(int(ev.ts[r]) - origin),
            dur_us=_us(max(int(ev.dur[r]), 0)),
            thread_or_stream=trace.threads[int(ev.thread[r])].display,
            details=details
            if details is not None
            else _details(analysis, r, lazy_args and kind in ("op", "runtime", "kernel", "memory")),
            kind=kind,
            depth=depth,
            row=int(r),
        )

    hops: list[Hop] = []
    notes: list[str] = []
    ancestors = _ancestors(analysis, row)
    depth = 0
    for a in ancestors:
        role = int(ev.role[a])
        kind = "python" if role == int(Role.PYTHON) else "parent"
        hops.append(hop(a, kind, depth, details={}))
        depth += 1
    hops.append(hop(row, "op", depth))
    forward = int(forward_links(trace, links)[row])
    if forward >= 0:
        hops[-1].details["forward op"] = (
            f"{trace.names[int(ev.name[forward])]} @ {_us(int(ev.ts[forward]) - origin)} us"
        )
    subtree = _subtree(analysis, row)
    subtree = subtree[subtree != row]
    subtree = subtree[np.argsort(ev.ts[subtree], kind="stable")]
    children = subtree[links.raw_parent[subtree] == row]
    for c in children.tolist():
        role = int(ev.role[c])
        if role in (int(Role.RUNTIME), int(Role.DRIVER)):
            continue
        hops.append(hop(c, "child", depth + 1, details={}))

    # runtime calls anywhere under the op, with the device work each launched
    launch_rows = subtree[np.isin(ev.role[subtree], [int(Role.RUNTIME), int(Role.DRIVER)])]
    device_rows = np.flatnonzero(np.isin(links.device_op, np.concatenate([[row], subtree])) & (links.device_op >= 0))
    device_rows = device_rows[np.argsort(ev.ts[device_rows], kind="stable")]
    for r in launch_rows.tolist():
        hops.append(hop(r, "runtime", depth + 1))
    # driver events elsewhere (PrivateUse1 driver threads) that share a correlation
    corr = ev.correlation[launch_rows]
    corr = corr[corr >= 0]
    if corr.size:
        drivers = np.flatnonzero(
            (ev.role == int(Role.DRIVER)) & np.isin(ev.correlation, corr) & ~np.isin(np.arange(len(ev)), launch_rows)
        )
        for r in drivers.tolist():
            hops.append(hop(r, "runtime", depth + 1))

    queue = 0
    neuron = analysis.neuron
    data = trace.neuron
    for d in device_rows.tolist():
        launch = int(links.device_launch[d])
        if neuron is not None and data is not None and np.any(data.exec_rows == d):
            queue += _neuron_hops(analysis, d, hops, hop, origin, depth)
            continue
        kind = "memory" if int(ev.role[d]) == int(Role.MEMORY) else "kernel"
        device_hop = hop(d, kind, depth + 2)
        if launch >= 0:
            launch_end = int(ev.ts[launch] + max(int(ev.dur[launch]), 0))
            wait = max(0, int(ev.ts[d]) - launch_end)
            device_hop.details["launched by"] = trace.names[int(ev.name[launch])]
            device_hop.details["queue_us"] = _us(wait)
            queue += wait
        hops.append(device_hop)
    if neuron is not None and data is not None and data.device_in_trace:
        # device activities came from trace.json; still show the executions behind them
        execs = np.flatnonzero(np.isin(neuron.exec_op, np.concatenate([[row], subtree])))
        for i in execs.tolist():
            queue += _neuron_hops(analysis, int(data.exec_rows[i]), hops, hop, origin, depth)

    runtime_hops = [h for h in hops if h.layer == "runtime"]
    device_hops = [h for h in hops if h.kind in ("kernel", "memory", "execution")]
    first_runtime = min((h.start_us for h in runtime_hops), default=None)
    gaps = Gaps(
        dispatch_us=round(first_runtime, 3) if first_runtime is not None and first_runtime > 0 else 0.0,
        queue_us=_us(queue),
        device_us=round(sum(h.dur_us for h in device_hops), 3),
        runtime_us=round(sum(h.dur_us for h in runtime_hops if h.kind == "runtime"), 3),
        host_us=_us(int(analysis.times.self_cpu[row])),
    )
    if device_rows.size == 0 and not any(h.kind == "execution" for h in hops):
        if trace.device_kind == "cpu":
            notes.append("CPU-only trace: no device work")
        else:
            notes.append("no device work is attributed to this op instance")
    return Chain(
        op=trace.names[int(ev.name[row])],
        instance=instance,
        instances=instances,
        row=int(row),
        hops=hops,
        gaps=gaps,
        notes=notes,
    )


def _neuron_hops(analysis: Analysis, exec_row: int, hops: list[Hop], hop: Any, origin: int, depth: int) -> int:
    """Runtime request, execution, engines and top instructions of one NeuronCore
    execution; returns its queueing time (ns)."""
    from trnscope.core.formats.neuron.device import ENGINES
    from trnscope.core.link.neuron import METHOD_NAMES

    trace = analysis.trace
    ev = trace.events
    data = trace.neuron
    neuron = analysis.neuron
    system = data.system
    index = int(np.flatnonzero(data.exec_rows == exec_row)[0])
    sys_exec = int(data.exec_system[index])
    exec_id = int(system.exec_id[sys_exec])
    request = int(neuron.exec_request[index])
    related = np.flatnonzero((system.exec_id == exec_id) & (system.source == 0))
    if request >= 0 and system.nrta_seq_id[request] >= 0:
        related = np.union1d(
            related, np.flatnonzero((system.nrta_seq_id == system.nrta_seq_id[request]) & (system.source == 0))
        )
    related = related[np.argsort(system.start[related], kind="stable")]
    exec_start = int(ev.ts[exec_row])
    last_before = None
    for s in related.tolist():
        r = int(data.system_row[s])
        if r < 0:
            continue
        details = {"exec_id": exec_id}
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
    details: dict[str, Any] = {
        "exec_id": exec_id,
        "NeuronCore": int(system.nc_idx[sys_exec]),
        "model_id": int(system.model_id[sys_exec]),
        "NEFF": model,
        "linked by": METHOD_NAMES.get(int(neuron.exec_method[index]), "unlinked"),
        "queue_us": _us(queue),
        "device clock start (ns)": int(system.nc_start[sys_exec]),
    }
    co = neuron.exec_co_ops[index]
    if co:
        details["submitted with"] = [trace.names[int(ev.name[c])] for c in co]
    hops.append(hop(exec_row, "execution", depth + 2, details=details))
    busy = neuron.engine_busy[index]
    count = neuron.engine_count[index]
    profile_index = int(neuron.exec_profile[index])
    profile = data.profiles[profile_index] if profile_index >= 0 else None
    dev_start, dev_end = int(system.nc_start[sys_exec]), int(system.nc_stop[sys_exec])
    for e in np.argsort(-busy).tolist():
        if busy[e] == 0:
            continue
        engine_details: dict[str, Any] = {
            "instructions": int(count[e]),
            "busy_percent": round(100.0 * int(busy[e]) / duration, 1),
        }
        if ENGINES[e] == "dma" and profile is not None:
            engine_details.update(_dma_details(profile, dev_start, dev_end))
        hops.append(
            Hop(
                layer="device",
                name=f"{ENGINES[e]} engine",
                start_us=_us(exec_start - origin),
                dur_us=_us(int(busy[e])),
                thread_or_stream=trace.threads[int(ev.thread[exec_row])].display,
                details=engine_details,
                kind="engine",
                depth=depth + 3,
                row=exec_row,
            )
        )
    if profile is not None:
        collectives = np.flatnonzero((profile.cc_start >= dev_start) & (profile.cc_start < dev_end))
        for c in collectives.tolist():
            hops.append(
                Hop(
                    layer="device",
                    name=f"collective {profile.cc_operation[c] if c < len(profile.cc_operation) else ''}".strip(),
                    start_us=_us(exec_start - origin + int(profile.cc_start[c]) - dev_start),
                    dur_us=_us(int(profile.cc_duration[c])),
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
            uniq, first = np.unique(key[order], return_index=True)
            sums = np.add.reduceat(inst.duration[order], first) if first.size else np.empty(0)
            counts = np.diff(np.append(first, order.size))
            for k in np.argsort(-sums)[:_TOP_INSTRUCTIONS].tolist():
                location = inst.strings[int(uniq[k])] or "(no HLO / NKI location)"
                members = order[first[k] : first[k] + counts[k]]
                opcodes = sorted({inst.strings[int(o)] for o in inst.opcode[members] if o >= 0})
                engines = sorted({ENGINES[int(x)] for x in inst.engine[members]})
                hops.append(
                    Hop(
                        layer="device",
                        name=location,
                        start_us=_us(exec_start - origin + int(inst.start[members].min()) - dev_start),
                        dur_us=_us(int(sums[k])),
                        thread_or_stream=", ".join(engines),
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
    return queue


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


def find_op(analysis: Analysis, name: str) -> int:
    """Group index in the op table for ``name`` (exact, else a unique substring)."""
    from trnscope.core.base.errors import TrnscopeError

    table = analysis.op_table()
    host = [g for g in range(len(table)) if not table.is_device[g]]
    exact = [g for g in host if table.name[g] == name]
    if exact:
        return exact[0]
    partial = [g for g in host if name.lower() in table.name[g].lower()]
    if len(partial) == 1:
        return partial[0]
    if not partial:
        raise TrnscopeError(f"no op named {name!r} in this trace")
    choices = ", ".join(sorted({table.name[g] for g in partial})[:8])
    raise TrnscopeError(f"{name!r} matches several ops: {choices}; give the exact name")


def instance_rows(analysis: Analysis, group: int) -> np.ndarray:
    """Rows of a group, in time order."""
    table = analysis.op_table()
    rows = table.instances(group)
    return rows[np.argsort(analysis.trace.events.ts[rows], kind="stable")]


def chain_for(analysis: Analysis, name: str, instance: int | None = None) -> Chain:
    from trnscope.core.base.errors import TrnscopeError

    group = find_op(analysis, name)
    rows = instance_rows(analysis, group)
    if instance is None:
        instance = int(np.argmax(analysis.trace.events.dur[rows]))
    if not 0 <= instance < rows.size:
        raise TrnscopeError(
            f"instance {instance} out of range: {analysis.op_table().name[group]} has {rows.size} instances (0–{rows.size - 1})"
        )
    return build_chain(analysis, int(rows[instance]), instance=instance, instances=int(rows.size))


def render_chain_text(chain: Chain) -> str:
    lines = [f"{chain.op}  (instance {chain.instance} of {chain.instances})"]
    lines.append(f"{'start':>12} {'duration':>12}  {'layer':<9} hop")
    for h in chain.hops:
        indent = "  " * h.depth
        lines.append(
            f"{h.start_us:>10.3f}us {h.dur_us:>10.3f}us  {h.layer:<9} {indent}{h.name}  [{h.thread_or_stream}]"
        )
        shown = {k: v for k, v in h.details.items() if k != "category"}
        if shown and h.kind not in ("python", "parent", "child"):
            text = ", ".join(f"{k}={v}" for k, v in shown.items())
            lines.append(f"{'':>26}  {'':<9} {indent}  {text[:200]}")
    g = chain.gaps
    lines.append(
        f"dispatch {g.dispatch_us:.3f}us · runtime {g.runtime_us:.3f}us · queue {g.queue_us:.3f}us · device {g.device_us:.3f}us · host self {g.host_us:.3f}us"
    )
    lines += [f"note: {n}" for n in chain.notes]
    return "\n".join(lines) + "\n"
