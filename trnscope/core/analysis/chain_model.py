"""The drill-down chain's data (hops, gaps) and the plug-in point for backends that add
device layers to it (``DeviceHopProvider``)."""

from __future__ import annotations

from typing import Any, Protocol

import msgspec
import numpy as np

from trnscope.core.base.intervals import union_length
from trnscope.core.model.trace import Trace


def us(ns: float) -> float:
    """Nanoseconds → microseconds, rounded to the nanosecond."""
    return round(float(ns) / 1000.0, 3)


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
    # False while the event's args are still unread (a chain built with every hop's
    # args left for later: ``chain.read_hop_args`` reads them when the hop is shown)
    args_read: bool = True
    # a shorter form of ``thread_or_stream`` that still says it, for a narrow terminal
    # ("5 engines" for "gpsimd, scalar, sync, tensor, vector"); "" where the maker has none
    short_place: str = ""


class Gaps(msgspec.Struct):
    """Where an op instance's time went.  Each figure is computed from the listed hops
    by its definition, and overlapping intervals are merged (union), never summed."""

    dispatch_us: float  # op start → its first own runtime call (0 when it has none)
    queue_us: float  # union over device work of [its launch call's end, its start]
    device_us: float  # union of the device work the op and its children launched (annotations shown, not added)
    runtime_us: float = 0.0  # union of the runtime calls under the op (its own and its children's)
    host_us: float = 0.0  # the op's own CPU time (self CPU, as key_averages counts it)
    runtime_own_us: float = 0.0  # union of the op's own runtime calls
    queue_max_us: float = 0.0  # the longest single launch → start wait


DEVICE_WORK = ("kernel", "memory", "execution")


def union_us(intervals: list[tuple[float, float]]) -> float:
    """Length of the union of [start, end) intervals (µs), to the nanosecond."""
    return round(union_length([s for s, _ in intervals], [e for _, e in intervals]), 3)


def chain_gaps(hops: list[Hop], own_runtime: list[Hop], host_us: float) -> Gaps:
    """The chain's figures, from its hops (see ``Gaps``)."""
    runtime = [(h.start_us, h.start_us + h.dur_us) for h in hops if h.kind == "runtime"]
    device = [h for h in hops if h.kind in DEVICE_WORK]
    waits = [
        (h.start_us - float(h.details["queue_us"]), h.start_us)
        for h in device
        if isinstance(h.details.get("queue_us"), (int, float))
    ]
    first_own = min((h.start_us for h in own_runtime), default=0.0)
    return Gaps(
        dispatch_us=round(max(first_own, 0.0), 3),
        queue_us=union_us(waits),
        device_us=union_us([(h.start_us, h.start_us + h.dur_us) for h in device]),
        runtime_us=union_us(runtime),
        host_us=host_us,
        runtime_own_us=union_us([(h.start_us, h.start_us + h.dur_us) for h in own_runtime]),
        queue_max_us=round(max((end - start for start, end in waits), default=0.0), 3),
    )


class Chain(msgspec.Struct):
    op: str
    instance: int
    instances: int
    row: int
    hops: list[Hop]
    gaps: Gaps
    notes: list[str] = []


CONTEXT_KINDS = ("parent", "python")  # the hops above the op: where it was called from


def visible_hops(chain: Chain, show_context: bool) -> list[int]:
    """Hop indices to draw, -1 standing for one line that sums up the op's parents and
    Python frames (the first screen shows the op, its runtime calls and its device
    work; the context is one keypress away)."""
    leading = 0
    while leading < len(chain.hops) and chain.hops[leading].kind in CONTEXT_KINDS:
        leading += 1
    if show_context or leading == 0:
        return list(range(len(chain.hops)))
    return [-1, *range(leading, len(chain.hops))]


def context_summary(chain: Chain) -> str:
    """ "in rmsnorm ← ProfilerStep#4 ← 12 Python frames": the op's parents, innermost
    first, and how many Python frames surround it."""
    parents: list[str] = []
    python = 0
    for hop in chain.hops:
        if hop.kind not in CONTEXT_KINDS:
            break
        if hop.kind == "python":
            python += 1
        else:
            parents.append(hop.name)
    parts = parents[::-1]
    if python:
        parts.append(f"{python} Python frame{'s' if python != 1 else ''}")
    return "in " + " ← ".join(parts) if parts else ""


def _us(ns: float) -> float:
    return round(float(ns) / 1000.0, 3)


class HopMaker(Protocol):
    """Builds the hop for one trace row (the chain builder's own ``hop``)."""

    def __call__(
        self, r: int, kind: str, depth: int = 0, details: dict[str, Any] | None = None, name: str | None = None
    ) -> Hop: ...


class ChainContext(msgspec.Struct):
    """What a provider needs to add hops to the chain being built."""

    trace: Trace
    hops: list[Hop]
    hop: HopMaker
    origin: int  # ns: the op instance's start
    depth: int  # the op's own depth in the chain


class DeviceHopProvider(Protocol):
    """A backend's device layers in the chain (``trnscope.core.analysis.backends``).

    ``claims`` says whether the provider draws a device row the op launched (instead of
    the plain kernel hop); ``device_hops`` appends that row's hops (its device-work hop
    carries ``queue_us`` in its details when the launch is known); ``extra_hops`` appends
    device work the linker did not give rows to (e.g. executions behind device
    activities that trace.json already holds)."""

    def claims(self, device_row: int) -> bool: ...

    def device_hops(self, context: ChainContext, device_row: int) -> None: ...

    def extra_hops(self, context: ChainContext, op_rows: np.ndarray) -> None: ...
