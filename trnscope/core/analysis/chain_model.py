"""The drill-down chain's data (hops, gaps) and the plug-in point for backends that add
device layers to it (``DeviceHopProvider``)."""

from __future__ import annotations

from typing import Any, Protocol

import msgspec
import numpy as np

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
    the plain kernel hop); ``device_hops`` appends that row's hops and returns its
    queueing time (ns); ``extra_hops`` appends device work the linker did not give rows
    to (e.g. executions behind device activities that trace.json already holds)."""

    def claims(self, device_row: int) -> bool: ...

    def device_hops(self, context: ChainContext, device_row: int) -> int: ...

    def extra_hops(self, context: ChainContext, op_rows: np.ndarray) -> int: ...
