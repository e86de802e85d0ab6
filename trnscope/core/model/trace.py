"""The one columnar model every reader produces and every analysis consumes.

Events live in numpy columns, one row per event, in file order; strings are
interned into lists (``names``, ``cats``, ``shapes``, ``stacks``).  Times are integer
nanoseconds relative to ``origin_ns`` (the first host/device event), so arithmetic is
exact and independent of the file's time unit or era.
"""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np

from trnscope.core.model.roles import Role

# rows per slice where a figure over every event needs copies of its columns
_SPAN_ROWS = 1 << 16


class ThreadInfo(msgspec.Struct):
    pid: str
    tid: str
    process_label: str = ""
    thread_label: str = ""
    is_device: bool = False
    sort_index: int = 0

    @property
    def display(self) -> str:
        if self.is_device:
            lane = self.thread_label.strip() or f"stream {self.tid}"
            device = self.process_label or f"device {self.pid}"
            # a device track named like its device (a NeuronCore's): once, not "NC0 / NC0"
            return lane if lane == device.strip() else f"{device} / {lane}"
        return self.thread_label.strip() or f"thread {self.tid}"


class ChunkRef(msgspec.Struct):
    """Where a run of events came from, so their full args can be re-read lazily."""

    start: int  # byte offset of the first event's "{" in the plain file
    end: int  # byte offset just after the last event's "}"
    first_row: int
    rows: int
    utf8_repaired: bool = False


class LoadStats(msgspec.Struct):
    path: str
    file_bytes: int
    plain_bytes: int
    compressed: bool
    events: int
    seconds: float = 0.0
    lost_events: int = 0
    lost_bytes: int = 0
    truncated: bool = False
    invalid_events: int = 0
    bad_values: int = 0
    skipped_events: int = 0
    folded_metadata: int = 0  # metadata events overridden by a later one of their kind: no rows
    workers: int = 1
    from_cache: bool = False


class EventColumns(msgspec.Struct):
    ph: np.ndarray  # uint8 phase code (trnscope.core.formats.kineto.events.PH_*)
    role: np.ndarray  # uint8 trnscope.core.model.roles.Role
    name: np.ndarray  # int32 → Trace.names
    cat: np.ndarray  # int32 → Trace.cats
    thread: np.ndarray  # int32 → Trace.threads
    ts: np.ndarray  # int64 ns since Trace.origin_ns
    dur: np.ndarray  # int64 ns, -1 for events without a duration
    external_id: np.ndarray  # int64, -1 if absent
    correlation: np.ndarray  # int64, -1 if absent
    sequence: np.ndarray  # int64 autograd sequence number, -1 if absent
    flow_id: np.ndarray  # int64 for flow events
    flow_bind_end: np.ndarray  # bool, flow "bp": "e"
    dims: np.ndarray  # int32 → Trace.shapes, -1 if absent
    stack: np.ndarray  # int32 → Trace.stacks (2021 "Call stack"), -1 if absent

    def __len__(self) -> int:
        return int(self.ph.shape[0])

    def take(self, rows: np.ndarray) -> EventColumns:
        return EventColumns(**{f: getattr(self, f)[rows] for f in self.__struct_fields__})

    @classmethod
    def concatenate(cls, parts: list[EventColumns]) -> EventColumns:
        return cls(**{f: np.concatenate([getattr(p, f) for p in parts]) for f in cls.__struct_fields__})

    def dtypes(self) -> dict[str, np.dtype]:
        return {f: getattr(self, f).dtype for f in self.__struct_fields__}

    @classmethod
    def empty(cls) -> EventColumns:
        return cls(
            ph=np.empty(0, np.uint8),
            role=np.empty(0, np.uint8),
            name=np.empty(0, np.int32),
            cat=np.empty(0, np.int32),
            thread=np.empty(0, np.int32),
            ts=np.empty(0, np.int64),
            dur=np.empty(0, np.int64),
            external_id=np.empty(0, np.int64),
            correlation=np.empty(0, np.int64),
            sequence=np.empty(0, np.int64),
            flow_id=np.empty(0, np.int64),
            flow_bind_end=np.empty(0, bool),
            dims=np.empty(0, np.int32),
            stack=np.empty(0, np.int32),
        )


class BackendData(msgspec.Struct):
    """Base of the typed data a backend reader attaches to a ``Trace`` beyond the event
    columns (``trnscope.core.formats.neuron.data.NeuronData``).  Consumers narrow it with
    ``isinstance``; the model itself never looks inside."""


class Trace(msgspec.Struct):
    """A loaded profile: columns plus what is known about where it came from."""

    source: str
    format: str  # "kineto", "chrome-array", "neuron-system", …
    device_kind: str  # neuron / cuda / rocm / mtia / xpu / cpu
    device_name: str
    events: EventColumns
    names: list[str]
    cats: list[str]
    shapes: list[str]
    stacks: list[str]
    threads: list[ThreadInfo]
    chunks: list[ChunkRef]
    origin_ns: int  # absolute Unix ns of ts == 0 when the file says so, else the file's own zero
    origin_is_unix: bool
    stats: LoadStats
    metadata: dict[str, Any] = {}
    warnings: list[str] = []
    synthetic: bool = False
    plain_path: str = ""  # the uncompressed JSON the chunks point into (may be a cache file)
    label: str = ""  # variant / rank label when part of a session
    source_index: np.ndarray | None = None  # int64: each row's position among the file's events
    buffer: Any = None  # the decompressed text when no cache file could hold it
    backend: BackendData | None = None  # what a backend adds beyond the columns (NeuronData)
    op_tree: str = "classic"  # whether Python frames are nodes of the op tree (``op_tree.resolve``)

    @property
    def event_count(self) -> int:
        """The events the load kept, as the user counts them: one row each, except
        metadata events that a later one of their kind overrides (a process or thread
        name written again), which are folded away and counted here only."""
        return len(self.events) + self.stats.folded_metadata

    @property
    def span_ns(self) -> tuple[int, int]:
        """(first start, last end) over events that carry time, excluding metadata,
        flows and the profiler's own window span.  The first start is where every
        displayed time counts from (metadata written at ts 0 by some exporters would
        otherwise put it days away)."""
        ev = self.events
        timed = (ev.ph == 0) & (ev.role != int(Role.PROFILER))
        if not timed.any():
            return 0, 0
        first, last = np.iinfo(np.int64).max, np.iinfo(np.int64).min
        # A slice at a time: the whole columns' copies would be the peak of a command
        # that asks for the span last (xDiT's `summary`: 4 MB above everything else).
        for low in range(0, len(ev), _SPAN_ROWS):
            rows = slice(low, low + _SPAN_ROWS)
            starts = ev.ts[rows][timed[rows]]
            if starts.size:
                first = min(first, int(starts.min()))
                last = max(last, int((starts + np.maximum(ev.dur[rows][timed[rows]], 0)).max()))
        return first, last
