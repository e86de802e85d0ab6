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

import itertools
from typing import Any, Protocol

import numpy as np

from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.backends import device_hop_providers
from trnscope.core.analysis.chain_model import Chain, ChainContext, Gaps, Hop, HopMaker, chain_gaps, us
from trnscope.core.analysis.flops import COUNTED_OPS, UNKNOWN, flops_of
from trnscope.core.base.arrays import equals_any, index_by, is_member, sorted_unique, values_of_keys
from trnscope.core.base.units import fit_si
from trnscope.core.formats.kineto.lazyargs import event_args
from trnscope.core.link.linker import enclosing_op, forward_links
from trnscope.core.model.roles import LAYER_OF_ROLE, Layer, Role, group_name

LAYER_NAMES = {
    Layer.FRAMEWORK: "framework",
    Layer.ANNOTATION: "framework",
    Layer.RUNTIME: "runtime",
    Layer.DEVICE: "device",
}
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


_MAX_DEPTH = 511  # levels below an op that its chain looks through


def _rows_by_raw_parent(analysis: Analysis) -> tuple[np.ndarray, np.ndarray]:
    links = analysis.links
    return analysis.derived(("rows by raw parent", None), lambda: index_by(links.raw_parent))


def _device_rows_by_op(analysis: Analysis) -> tuple[np.ndarray, np.ndarray]:
    links = analysis.links
    return analysis.derived(("device rows by op", None), lambda: index_by(links.device_op))


def _driver_rows_by_correlation(analysis: Analysis) -> tuple[np.ndarray, np.ndarray]:
    ev = analysis.trace.events
    return analysis.derived(
        ("driver rows by correlation", None),
        lambda: index_by(np.where(ev.role == int(Role.DRIVER), ev.correlation, -1)),
    )


def prepare_chains(analysis: Analysis) -> None:
    """Build the indexes every chain looks things up in (a UI runs this after its first
    screen, beside ``Analysis.prepare_drilldown``; 15-25 ms at 2.9 M events, which the
    first chain would otherwise pay)."""
    _rows_by_raw_parent(analysis)
    _device_rows_by_op(analysis)
    _driver_rows_by_correlation(analysis)


def _subtree(analysis: Analysis, row: int) -> np.ndarray:
    """Rows of the raw tree under ``row`` (itself included) on its thread and inside its
    time, ascending: level by level through the rows by raw parent (indexed once per
    analysis), not a pass over every event per chain (3 ms at 2.9 M events)."""
    links = analysis.links
    parents, children = _rows_by_raw_parent(analysis)
    level = np.array([row], dtype=np.int64)
    found = [level]
    for _ in range(_MAX_DEPTH):
        level = values_of_keys(parents, children, level)
        if not level.size:
            break
        found.append(level)
    rows = sorted_unique(np.concatenate(found).astype(np.int64))
    ev = analysis.trace.events
    start, end = ev.ts[row], ev.ts[row] + max(int(ev.dur[row]), 0)
    inside = (ev.thread[rows] == ev.thread[row]) & (ev.ts[rows] >= start) & (ev.ts[rows] <= end)
    return rows[inside & links.in_tree[rows]]


def _ancestors(analysis: Analysis, row: int) -> list[int]:
    out: list[int] = []
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


def _add_flops(op_hop: Hop, dur_ns: int, device_us: float) -> None:
    """The instance's FLOPs by PyTorch's formula (``analysis.flops``), from the shapes
    already read for the detail pane, and the rate over its device time (its CPU time
    when it has none)."""
    dims = op_hop.details.get("Input Dims")
    if op_hop.name not in COUNTED_OPS or not isinstance(dims, list):
        return
    concrete = op_hop.details.get("Concrete Inputs")
    flops = flops_of(op_hop.name, dims, concrete if isinstance(concrete, list) else None)
    added: dict[str, Any] = {}
    if flops == UNKNOWN:
        why = "no Concrete Inputs in the trace" if not isinstance(concrete, list) else "implausible sizes"
        added["FLOPs"] = f"unknown ({why})"
    else:
        added["FLOPs"] = flops
        seconds = device_us / 1e6 if device_us > 0 else max(dur_ns, 0) / 1e9
        if flops and seconds > 0:
            added["FLOP/s"] = f"{fit_si(flops / seconds, 8)} ({'device' if device_us > 0 else 'CPU'} time)"
    # right after the shapes they come from: the detail pane is a few lines at 80×24
    items = list(op_hop.details.items())
    at = next(i for i, (key, _) in enumerate(items) if key == "Input Dims") + 1
    op_hop.details = dict(items[:at] + list(added.items()) + items[at:])


def build_chain(  # noqa: C901 - the chain's hops in their documented order; each kind is a few lines
    analysis: Analysis,
    row: int,
    *,
    instance: int = 0,
    instances: int = 1,
    lazy_args: bool = True,
    every_hops_args: bool = True,
) -> Chain:
    """The chain of op instance ``row``.  ``lazy_args``: read the events' args for the
    hops that show them; ``every_hops_args`` False: only the op's now, each other hop's
    when it is shown (``read_hop_args``): a step's chain has tens of thousands of hops
    (xDiT's ProfilerStep: 38,535; reading every one's args took ~0.4 s of its 0.6)."""
    trace = analysis.trace
    ev = trace.events
    links = analysis.links
    origin = int(ev.ts[row])
    many = _hops_maker(analysis, origin, lazy_args and every_hops_args)
    hop = _hop_maker(analysis, origin, lazy_args and every_hops_args)

    hops: list[Hop] = []
    notes: list[str] = []
    ancestors = _ancestors(analysis, row)
    depth = 0
    for a in ancestors:
        role = int(ev.role[a])
        kind = "python" if role == int(Role.PYTHON) else "parent"
        hops.append(hop(a, kind, depth, details={}))
        depth += 1
    op_hop = hop(row, "op", depth)
    if lazy_args:
        read_hop_args(analysis, op_hop)  # now, whatever the other hops wait for: its shapes give the FLOPs
    hops.append(op_hop)
    forward = int(forward_links(trace, links)[row])
    if forward >= 0:
        hops[-1].details["forward op"] = f"{trace.names[int(ev.name[forward])]} @ {us(int(ev.ts[forward]) - origin)} us"
    subtree = _subtree(analysis, row)
    subtree = subtree[subtree != row]
    subtree = subtree[np.argsort(ev.ts[subtree], kind="stable")]
    children = subtree[links.raw_parent[subtree] == row]
    children = children[~equals_any(ev.role[children], (Role.RUNTIME, Role.DRIVER))]
    hops += many(children, "child", depth + 1, args=False)

    # Runtime calls under the op: its own (no other op between) at the op's depth + 1,
    # those made inside a child op under that child (depth + 2), so nesting shows.
    launch_rows = subtree[equals_any(ev.role[subtree], (Role.RUNTIME, Role.DRIVER))]
    owner = enclosing_op(links.raw_parent, ev.role, launch_rows) if launch_rows.size else launch_rows
    launching, launched = _device_rows_by_op(analysis)
    device_rows = np.sort(values_of_keys(launching, launched, np.concatenate([[row], subtree]))).astype(np.int64)
    device_rows = device_rows[np.argsort(ev.ts[device_rows], kind="stable")]
    own = (owner == row) | (owner < 0)
    own_rows = set(launch_rows[own].tolist())
    runtime_hops = many(launch_rows, "runtime", np.where(own, depth + 1, depth + 2))
    for runtime_hop, o, is_own in zip(runtime_hops, ev.name[owner].tolist(), own.tolist()):
        if not is_own:
            runtime_hop.details["in child op"] = trace.names[o]
    hops += runtime_hops
    # driver events elsewhere (PrivateUse1 driver threads) that share a correlation
    corr = ev.correlation[launch_rows]
    corr = corr[corr >= 0]
    if corr.size:
        drivers = np.sort(values_of_keys(*_driver_rows_by_correlation(analysis), sorted_unique(corr))).astype(np.int64)
        drivers = drivers[~is_member(sorted_unique(launch_rows), drivers)]
        hops += many(drivers, "runtime", depth + 1)

    providers = device_hop_providers(analysis)
    context = ChainContext(trace=trace, hops=hops, hop=hop, origin=origin, depth=depth)
    claimed = [next((p for p in providers if p.claims(d)), None) for d in device_rows.tolist()] if providers else []
    if any(p is not None for p in claimed):
        # a backend draws its own rows (a NeuronCore execution and its engines), in place
        plain = device_rows[np.array([p is None for p in claimed], dtype=bool)]
    else:
        plain, claimed = device_rows, []
    plain_hops = iter(_device_hops(analysis, many, plain, depth + 2))
    for d, provider in itertools.zip_longest(device_rows.tolist(), claimed):
        if provider is not None:
            provider.device_hops(context, d)
        else:
            hops.append(next(plain_hops))
    for provider in providers:
        provider.extra_hops(context, np.concatenate([[row], subtree]))

    own_runtime = [h for h in hops if h.kind == "runtime" and h.row in own_rows]
    gaps = chain_gaps(hops, own_runtime, host_us=us(int(analysis.times.self_cpu[row])))
    _add_flops(op_hop, int(ev.dur[row]), gaps.device_us)
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


_KINDS_WITH_ARGS = ("op", "runtime", "kernel", "memory")  # the hops whose event's args are shown


def read_hop_args(analysis: Analysis, hop: Hop) -> None:
    """Read the args of a hop built without them (``build_chain(every_hops_args=False)``),
    placed where a chain built with them has them: after the category, before what the
    chain added (the launching call, the queue time)."""
    if hop.args_read or hop.row < 0:
        return
    read = _details(analysis, hop.row, True)
    hop.details = {**read, **{key: value for key, value in hop.details.items() if key not in read}}
    hop.args_read = True


def _hop_maker(analysis: Analysis, origin: int, lazy_args: bool) -> HopMaker:
    """Hops of this analysis's rows, times from ``origin``, one at a time (``_hops_maker``'s,
    with the hop's own ``details`` or ``name`` when given)."""
    many = _hops_maker(analysis, origin, lazy_args)

    def hop(r: int, kind: str, depth: int = 0, details: dict[str, Any] | None = None, name: str | None = None) -> Hop:
        made = many(np.array([r], dtype=np.int64), kind, depth, args=details is None)[0]
        if details is not None:
            made.details = details
        if name:
            made.name = name
        return made

    return hop


class ManyHops(Protocol):
    def __call__(
        self, rows: np.ndarray, kind: str | list[str], depth: int | np.ndarray, args: bool = True
    ) -> list[Hop]: ...


def _hops_maker(analysis: Analysis, origin: int, lazy_args: bool) -> ManyHops:
    """``_hop_maker``'s hops for many rows at once, the same hops: a step's chain has
    tens of thousands (xDiT's ProfilerStep: 38,535), and reading each one's columns one
    scalar at a time was most of its quarter second.  ``args`` False: as ``details={}``."""
    trace = analysis.trace
    ev = trace.events
    layer_of_role = {int(role): LAYER_NAMES.get(layer, "framework") for role, layer in LAYER_OF_ROLE.items()}
    cats = trace.cats

    def many(rows: np.ndarray, kind: str | list[str], depth: int | np.ndarray, args: bool = True) -> list[Hop]:
        if not rows.size:
            return []
        rows = rows.astype(np.int64, copy=False)
        n = int(rows.size)
        kinds = [kind] * n if isinstance(kind, str) else kind
        depths = depth.tolist() if isinstance(depth, np.ndarray) else [depth] * n
        names = trace.names
        # (integer nanoseconds over 1000.0 are already ``us``'s rounding to the nanosecond)
        starts = ((ev.ts[rows] - origin) / 1000.0).tolist()
        durs = (np.maximum(ev.dur[rows], 0) / 1000.0).tolist()
        thread_ids = ev.thread[rows]
        displays = {t: trace.threads[t].display for t in set(thread_ids.tolist())}
        out: list[Hop] = []
        for r, role, name, start, dur, thread, cat, k, d in zip(
            rows.tolist(),
            ev.role[rows].tolist(),
            ev.name[rows].tolist(),
            starts,
            durs,
            thread_ids.tolist(),
            ev.cat[rows].tolist(),
            kinds,
            depths,
        ):
            with_args = args and k in _KINDS_WITH_ARGS
            if not args:
                details: dict[str, Any] = {}
            elif lazy_args and with_args:
                details = _details(analysis, r, True)
            else:
                details = {"category": cats[cat] if cat < len(cats) else ""}
            out.append(
                Hop(
                    layer=layer_of_role[role],
                    name=names[name],
                    start_us=start,
                    dur_us=dur,
                    thread_or_stream=displays[thread],
                    details=details,
                    kind=k,
                    depth=d,
                    row=r,
                    args_read=lazy_args or not with_args,
                )
            )
        return out

    return many


_DEVICE_KINDS = {int(Role.MEMORY): "memory", int(Role.DEVICE_ANNOTATION): "device_annotation"}


def _device_hops(analysis: Analysis, many: ManyHops, rows: np.ndarray, depth: int) -> list[Hop]:
    """Hops of device rows no backend draws: kernels, copies and device annotations,
    each with the call that launched it and its wait in the queue."""
    ev = analysis.trace.events
    names = analysis.trace.names
    kinds = [_DEVICE_KINDS.get(role, "kernel") for role in ev.role[rows].tolist()]
    device_hops = many(rows, kinds, depth)
    launches = analysis.links.device_launch[rows]
    safe = np.maximum(launches, 0)
    launch_ends = ev.ts[safe] + np.maximum(ev.dur[safe], 0)
    queued = (np.maximum(0, ev.ts[rows] - launch_ends) / 1000.0).tolist()
    for device_hop, launch, name, queue_us in zip(device_hops, launches.tolist(), ev.name[safe].tolist(), queued):
        if launch >= 0 and device_hop.kind != "device_annotation":
            device_hop.details["launched by"] = names[name]
            device_hop.details["queue_us"] = queue_us
    return device_hops


def _unlinked_device_chain(analysis: Analysis, row: int, instance: int, instances: int) -> Chain | None:
    """A device row no op launched, drawn by its backend when one claims it (a kernel
    benchmark's NeuronCore execution: its runtime request's stages, then the execution
    and its engines); None when no backend does."""
    provider = next((p for p in device_hop_providers(analysis) if p.claims(row)), None)
    if provider is None:
        return None
    ev = analysis.trace.events
    hops: list[Hop] = []
    context = ChainContext(
        trace=analysis.trace,
        hops=hops,
        hop=_hop_maker(analysis, int(ev.ts[row]), True),
        origin=int(ev.ts[row]),
        depth=-1,
    )
    provider.device_hops(context, row)
    runtime = [h for h in hops if h.kind == "runtime"]
    device_us = next((h.dur_us for h in hops if h.kind == "execution"), us(max(int(ev.dur[row]), 0)))
    gaps = chain_gaps(hops, runtime, host_us=0.0)
    gaps.device_us = device_us
    return Chain(
        analysis.trace.names[int(ev.name[row])],
        instance,
        instances,
        row,
        hops,
        gaps,
        ["no framework op launched it (a kernel benchmark, or outside the capture window): its runtime request and "
         "execution"],
    )  # fmt: skip


_DEVICE_ROLES = frozenset(
    int(role) for role in (Role.KERNEL, Role.MEMORY, Role.DEVICE_ANNOTATION, Role.SYSTEM_HARDWARE)
)  # rows whose chain is the chain of the op that launched them
QUICK_CHAIN_ROWS = 1_000  # a chain over at most this many rows builds in a few milliseconds


def chain_is_quick(analysis: Analysis, row: int, rows: int = QUICK_CHAIN_ROWS) -> bool:
    """Whether ``row``'s chain is small enough to build at once, where a UI shows it
    (a step's chain, 38,535 hops, takes a worker ~0.13 s): the rows under its op and
    the device work they launched, at most ``rows`` of them."""
    ev = analysis.trace.events
    op = row
    if int(ev.role[row]) in _DEVICE_ROLES:
        op = int(analysis.links.device_op[row])
        if op < 0:
            return True  # a device row no op launched: itself, or its backend's few stages
    subtree = _subtree(analysis, op)
    if subtree.size > rows:
        return False
    launching, launched = _device_rows_by_op(analysis)
    return subtree.size + values_of_keys(launching, launched, subtree).size <= rows


def chain_for_row(analysis: Analysis, row: int, instance: int, instances: int, every_hops_args: bool = True) -> Chain:
    """A device row's chain is its launching op's chain; an unlinked one stands alone.
    ``every_hops_args``: as ``build_chain``'s."""
    ev = analysis.trace.events
    if int(ev.role[row]) in _DEVICE_ROLES:
        op = int(analysis.links.device_op[row])
        if op >= 0:
            chain = build_chain(analysis, op, instance=instance, instances=instances, every_hops_args=every_hops_args)
            chain.notes.insert(
                0, f"device event {analysis.trace.names[int(ev.name[row])]!r}: chain of the op that launched it"
            )
            return chain
        drawn = _unlinked_device_chain(analysis, row, instance, instances)
        if drawn is not None:
            return drawn
        hop = Hop(
            "device",
            analysis.trace.names[int(ev.name[row])],
            0.0,
            round(max(int(ev.dur[row]), 0) / 1000, 3),
            analysis.trace.threads[int(ev.thread[row])].display,
            {},
            "kernel",
            0,
            row,
        )
        return Chain(
            hop.name,
            instance,
            instances,
            row,
            [hop],
            Gaps(0.0, 0.0, hop.dur_us),
            ["not linked to any op: launched outside the capture window or by an unprofiled thread"],
        )
    return build_chain(analysis, row, instance=instance, instances=instances, every_hops_args=every_hops_args)


def op_group_of_row(analysis: Analysis, row: int) -> int | None:
    """The host group of the op table (grouped by op) that ``row`` counts in."""
    table = analysis.op_table()
    name = group_name(analysis.trace.names[int(analysis.trace.events.name[row])])
    return next((g for g in range(len(table)) if table.name[g] == name and not table.is_device[g]), None)


def find_op(analysis: Analysis, name: str) -> int:
    """Group index in the op table for ``name`` (exact, else a unique substring): a
    host op's, else — where no host op answers — a device event's (a kernel benchmark
    has no framework op: its kernels are what there is to follow)."""
    from trnscope.core.base.errors import TrnscopeError

    table = analysis.op_table()
    host = [g for g in range(len(table)) if not table.is_device[g]]
    device = [g for g in range(len(table)) if table.is_device[g]]
    for groups in (host, device):
        exact = [g for g in groups if table.name[g] == name]
        if exact:
            return exact[0]
    for groups in (host, device):
        partial = [g for g in groups if name.lower() in table.name[g].lower()]
        if len(partial) == 1:
            return partial[0]
        if partial:
            choices = ", ".join(sorted({table.name[g] for g in partial})[:8])
            raise TrnscopeError(f"{name!r} matches several ops: {choices}; give the exact name")
    raise TrnscopeError(
        f"no op named {name!r} in this trace; {_nearest_names(name, [table.name[g] for g in host + device])}"
    )


def top_op(analysis: Analysis) -> tuple[str, str] | None:
    """The op at the top of the op table as it opens (``ordering.default_op_sort``:
    self device time where the trace has any, else self CPU time), among framework ops
    (not annotations or Python frames), and why it was chosen ("the op with the most
    self device time"); a trace with no framework op (a kernel benchmark) gives its
    device event with the most device time; None where there is neither.  ``chain``
    without ``--op`` follows it: a first ``trnscope chain TRACE`` stopped at "the
    following arguments are required: --op"."""
    table = analysis.op_table()
    ops = np.flatnonzero((table.role == int(Role.OP)) & ~table.is_device & ~table.is_annotation)
    if not ops.size:  # a kernel benchmark: no framework op, its kernels' executions
        kernels = np.flatnonzero(table.is_device & ~table.is_annotation & (table.self_device > 0))
        if not kernels.size:
            return None
        best = int(kernels[np.argmax(table.self_device[kernels])])
        return table.name[best], "the device event with the most device time (no framework op in this trace)"
    by_device = bool(table.self_device[ops].any())
    figure = table.self_device if by_device else table.self_cpu
    best = int(ops[np.argmax(figure[ops])])  # the first of equals, in table order
    return table.name[best], f"the op with the most {'self device time' if by_device else 'self CPU time'}"


def _nearest_names(name: str, names: list[str]) -> str:
    """Where a user who mistyped an op name can go next: the op names closest to it,
    else that ``summary`` lists them all."""
    import difflib

    close = difflib.get_close_matches(name, sorted(set(names)), n=4, cutoff=0.6)
    if close:
        return "close names: " + ", ".join(close)
    return "`trnscope summary` lists the trace's ops"


def instance_rows(analysis: Analysis, group: int) -> np.ndarray:
    """Rows of a group, in time order."""
    table = analysis.op_table()
    rows = table.instances(group)
    return rows[np.argsort(analysis.trace.events.ts[rows], kind="stable")]


INSTANCE_PICKS = ("slowest", "median", "fastest")


def chain_for(analysis: Analysis, name: str, instance: int | str | None = None) -> Chain:
    """The chain of one instance of the op ``name``: the K-th in time order, or the
    slowest (the default), the median or the fastest by duration (the median of an
    even count: the shorter of the middle two; ties: the earlier)."""
    from trnscope.core.base.errors import TrnscopeError

    group = find_op(analysis, name)
    rows = instance_rows(analysis, group)
    if instance is None or isinstance(instance, str):
        pick = instance or "slowest"
        if pick not in INSTANCE_PICKS:
            raise TrnscopeError(f"instance {pick!r}: give a number or one of {', '.join(INSTANCE_PICKS)}")
        durations = analysis.trace.events.dur[rows]
        if pick == "slowest":  # the earliest of equals, as argmax
            instance = int(np.argmax(durations))
        else:
            by_duration = np.argsort(durations, kind="stable")
            instance = int(by_duration[0 if pick == "fastest" else (rows.size - 1) // 2])
    if not 0 <= instance < rows.size:
        raise TrnscopeError(
            f"instance {instance} out of range: {analysis.op_table().name[group]} has {rows.size} instances (0–{rows.size - 1})"
        )
    if analysis.op_table().is_device[group]:  # a device event's: the op that launched it, or its own stages
        return chain_for_row(analysis, int(rows[instance]), instance, int(rows.size))
    return build_chain(analysis, int(rows[instance]), instance=instance, instances=int(rows.size))
