"""The Neuron runtime's system-trace events JSON (``nrt_sys_trace_fetch_events``): what
NKI / nkipy / nrtpy kernel benchmarks save (``benchmark_events.json``,
``system-trace.json``, ``<stem>-<scenario>-trace.json``, a bare list, or the whole text
under ``"events_json"`` in a ``kernel_profile.json``).  ``neuron-evidence.md`` §8 is the
layout; no real file is public, so every fixture is synthetic.

Each event has ``event_type``, ``phase`` (start / stop / instant / unknown), ``nc_idx``,
``tracking_id``, ``thread_id``, ``data`` and ``timestamp_ns``.  START and STOP are
separate events, paired here by (``nc_idx``, ``tracking_id``, ``event_type``); the array
is emission order, not time order.  The pairs become rows of the same ``SystemEvents``
the Neuron Explorer readers produce, so executions, lanes, links and the drill-down are
the Neuron pipeline's own.

Clocks: ``nc_exec_running`` carries the physical core's device clock in
``data.nc_timestamp_ns``; its ``timestamp_ns`` is that device time in some captures
and already host time in others.  A file whose executions' ``timestamp_ns`` equals their
``nc_timestamp_ns`` is on the device clock, and each execution is placed by the
``timestamp_sync_point`` of its own ``exec_id`` (host = cpu + (device − nc); offsets
drift between executions); otherwise ``timestamp_ns`` is host time and is kept.  Which
was used, and how many executions lie inside their ``kbl_exec_wait``, is said.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from trnscope.core.base.errors import InputError
from trnscope.core.base.jsondepth import decode_bounded
from trnscope.core.formats.neuron.system import NONE, SOURCE_HARDWARE, SOURCE_RUNTIME, SystemEvents
from trnscope.core.formats.neuron.tolerant import int_or_missing
from trnscope.core.model.vocab import Interner

EXECUTION = "nc_exec_running"
SYNC_POINT = "timestamp_sync_point"
WAIT = "kbl_exec_wait"
# device-side records: placed on the host clock like executions, shown on NeuronCore lanes
_HARDWARE = frozenset({EXECUTION, "nc_model_switch", "cc_running", "cc_exec_barrier", "numerical_err", "hw_notify"})
_MIN_UNIX_NS = 10**18


class _Data(msgspec.Struct):
    device_core_idx: Any = None
    exec_id: Any = None
    nc_timestamp_ns: Any = None
    cpu_timestamp_ns: Any = None
    model_id: Any = None
    model_name: Any = None


class _Event(msgspec.Struct):
    event_type: Any = None
    phase: Any = None
    nc_idx: Any = None
    tracking_id: Any = None
    thread_id: Any = None
    worker_gid: Any = None
    data: _Data | None = None
    timestamp_ns: Any = None
    nrta_seq_id: Any = None


class _Envelope(msgspec.Struct):
    events: list[_Event] | None = None
    data_version: Any = None
    events_json: str | None = None


_FAST = msgspec.json.Decoder(_Envelope | list[_Event])


# the tolerant readers' one coercion: ints (in range), whole floats, numeric strings; else NONE
_int = int_or_missing


def _event_of(item: Any) -> _Event | None:
    """An event from a decoded object whose fields may have any type (the slow path)."""
    if not isinstance(item, dict):
        return None
    data = item.get("data")
    fields = {k: item.get(k) for k in _Event.__struct_fields__ if k != "data"}
    values = {k: data.get(k) for k in _Data.__struct_fields__} if isinstance(data, dict) else {}
    return _Event(**fields, data=_Data(**values))


def event_list(raw: bytes | str, where: str) -> tuple[list[_Event | None], list[str]]:
    """The events of any of the layouts (None for an entry that is no object), and notes.
    Typed decoding first; a file with a field of an unexpected type is read leniently."""
    notes: list[str] = []
    try:
        value: Any = _FAST.decode(raw)
    except (msgspec.ValidationError, RecursionError):
        return _lenient(raw, where, notes)
    if isinstance(value, _Envelope) and value.events_json is not None:
        notes.append('the events are the "events_json" text of a kernel profile')
        events, inner = event_list(value.events_json, where)
        return events, notes + inner
    if isinstance(value, _Envelope):
        if value.data_version not in (None, 2):
            notes.append(f"data_version {value.data_version!r} (this reader knows 2): read as 2")
        if value.events is None:
            raise InputError(f"{where}: not Neuron runtime events (no events list)")
        return list(value.events), notes
    return list(value), notes


def _lenient(raw: bytes | str, where: str, notes: list[str]) -> tuple[list[_Event | None], list[str]]:
    value, flattened = decode_bounded(raw)
    if flattened:
        notes.append("values nested deeper than 64 levels were dropped")
    if isinstance(value, dict) and isinstance(value.get("events_json"), str):
        notes.append('the events are the "events_json" text of a kernel profile')
        events, inner = event_list(value["events_json"], where)
        return events, notes + inner
    if isinstance(value, dict):
        version = value.get("data_version")
        if version not in (None, 2):
            notes.append(f"data_version {version!r} (this reader knows 2): read as 2")
        value = value.get("events")
    if not isinstance(value, list):
        raise InputError(f"{where}: not Neuron runtime events (no events list)")
    return [_event_of(item) for item in value], notes


class _Pair(msgspec.Struct):
    kind: str
    nc_idx: int
    thread: int
    start: int  # timestamp_ns of START
    stop: int  # of STOP
    data: _Data
    stop_data: _Data
    nrta_seq_id: int


def _pairs(events: list[_Event | None]) -> tuple[list[_Pair], list[tuple[int, _Data]], Counter[str]]:  # noqa: C901 - one branch per phase and per broken-pair kind, each counted
    """START/STOP pairs by (nc_idx, tracking_id, event_type) in any order; the sync
    points; counts of what could not be used."""
    problems: Counter[str] = Counter()
    starts: dict[tuple[int, int, str], list[_Event]] = {}
    stops: dict[tuple[int, int, str], list[_Event]] = {}
    syncs: list[tuple[int, _Data]] = []
    for event in events:
        if event is None:
            problems["entries that are not objects"] += 1
            continue
        kind = event.event_type if isinstance(event.event_type, str) and event.event_type else ""
        if not kind:
            problems["events without an event_type"] += 1
            continue
        phase = event.phase if isinstance(event.phase, str) else ""
        if kind == SYNC_POINT:
            syncs.append((_int(event.timestamp_ns), event.data or _Data()))
            continue
        key = (_int(event.nc_idx), _int(event.tracking_id), kind)
        if phase == "start":
            starts.setdefault(key, []).append(event)
        elif phase == "stop":
            stops.setdefault(key, []).append(event)
        elif phase == "instant":
            problems["instant events other than sync points (not shown)"] += 1
        else:
            problems[f"events of phase {phase or 'none'!r} (neither start nor stop)"] += 1
    pairs: list[_Pair] = []
    for key, opened in starts.items():
        closed = stops.pop(key, [])
        if len(opened) > 1 or len(closed) > 1:
            problems["repeated START or STOP of one tracking id (left out)"] += len(opened) + len(closed)
            continue
        if not closed:
            problems["START without STOP (left out)"] += 1
            continue
        begin, end = opened[0], closed[0]
        t0, t1 = _int(begin.timestamp_ns), _int(end.timestamp_ns)
        if t0 == NONE or t1 == NONE:
            problems["pairs without a usable timestamp (left out)"] += 1
            continue
        if t1 < t0:
            problems["pairs whose STOP comes before their START in time (left out)"] += 1
            continue
        pairs.append(
            _Pair(
                key[2],
                key[0],
                _int(begin.thread_id),
                t0,
                t1,
                begin.data or _Data(),
                end.data or _Data(),
                _int(begin.nrta_seq_id),
            )
        )
    problems["STOP without START (left out)"] += sum(len(v) for v in stops.values())
    return pairs, syncs, problems


def _device_clock(pairs: list[_Pair]) -> bool:
    """Whether executions' timestamp_ns are their device clock (equal to nc_timestamp_ns)."""
    runs = [p for p in pairs if p.kind == EXECUTION and _int(p.data.nc_timestamp_ns) != NONE]
    if not runs:
        return False
    same = sum(1 for p in runs if p.start == _int(p.data.nc_timestamp_ns))
    return same * 2 > len(runs)


def _place(  # noqa: C901 - both clock conventions and the three fallbacks, said once
    pairs: list[_Pair], syncs: list[tuple[int, _Data]], notes: list[str]
) -> tuple[list[int], list[int], list[int], list[int]]:
    """Host-clock start/end of every pair, and the device-clock start/stop of hardware ones."""
    on_device = _device_clock(pairs)
    by_exec: dict[int, tuple[int, int]] = {}
    for _, data in syncs:
        exec_id, cpu, nc = _int(data.exec_id), _int(data.cpu_timestamp_ns), _int(data.nc_timestamp_ns)
        if exec_id != NONE and cpu != NONE and nc != NONE:
            by_exec.setdefault(exec_id, (cpu, nc))
    waits = {_int(p.data.exec_id): (p.start, p.stop) for p in pairs if p.kind == WAIT and _int(p.data.exec_id) != NONE}
    starts, ends, nc_start, nc_stop = [], [], [], []
    unplaced = borrowed = 0
    ordered_sync = sorted(by_exec)
    for p in pairs:
        device = p.kind in _HARDWARE
        dev0 = _int(p.data.nc_timestamp_ns) if device else NONE
        dev1 = _int(p.stop_data.nc_timestamp_ns) if device else NONE
        nc_start.append(dev0)
        nc_stop.append(dev1)
        if not (device and on_device):
            starts.append(p.start)
            ends.append(p.stop)
            continue
        exec_id = _int(p.data.exec_id)
        sync = by_exec.get(exec_id)
        if sync is None and ordered_sync:  # another execution's offset: said, as it may drift
            nearest = min(ordered_sync, key=lambda e: abs(e - exec_id) if exec_id != NONE else 0)
            sync = by_exec[nearest]
            borrowed += 1
        if sync is None:
            wait = waits.get(exec_id)
            if wait is None:
                unplaced += 1
                starts.append(NONE)
                ends.append(NONE)
                continue
            starts.append(wait[0])  # no sync point at all: at the start of its wait
            ends.append(wait[0] + (p.stop - p.start))
            continue
        cpu, nc = sync
        starts.append(cpu + (p.start - nc))
        ends.append(cpu + (p.stop - nc))
    if on_device:
        notes.append(
            "device events carry the NeuronCore clock: placed on the host clock by the sync point of their exec_id"
        )
    else:
        notes.append("device events carry host time already (timestamp_ns ≠ nc_timestamp_ns): kept as they are")
    if borrowed:
        notes.append(f"{borrowed} device events had no sync point of their own exec_id: placed by the nearest one")
    if unplaced:
        notes.append(f"{unplaced} device events could not be placed on the host clock (no sync point, no wait)")
    inside = outside = 0
    for p, s, e in zip(pairs, starts, ends, strict=True):
        wait = waits.get(_int(p.data.exec_id))
        if p.kind == EXECUTION and wait is not None and s != NONE:
            if wait[0] <= s and e <= wait[1]:
                inside += 1
            else:
                outside += 1
    if outside:
        notes.append(f"{outside} of {inside + outside} executions are not inside their kbl_exec_wait")
    return starts, ends, nc_start, nc_stop


def read_runtime_events(path: Path) -> SystemEvents:
    """The events of one runtime events file as ``SystemEvents``."""
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise InputError(f"cannot read {path}: {error.strerror or error}") from None
    try:
        events, notes = event_list(raw, str(path))
    except msgspec.DecodeError as error:
        raise InputError(f"{path}: not JSON ({error})") from None
    pairs, syncs, problems = _pairs(events)
    starts, ends, nc_start, nc_stop = _place(pairs, syncs, notes)
    keep = [k for k, s in enumerate(starts) if s != NONE and s >= _MIN_UNIX_NS]
    dropped_time = sum(1 for s in starts if s != NONE and s < _MIN_UNIX_NS)
    if dropped_time:
        problems["events whose time is not Unix ns after placement (left out)"] += dropped_time
    names = Interner()
    kept = [pairs[k] for k in keep]
    columns: dict[str, np.ndarray] = {
        "name": np.array([names[p.kind] for p in kept], dtype=np.int32),
        "source": np.array([SOURCE_HARDWARE if p.kind in _HARDWARE else SOURCE_RUNTIME for p in kept], dtype=np.uint8),
        "start": np.array([starts[k] for k in keep], dtype=np.int64),
        "duration": np.array([ends[k] - starts[k] for k in keep], dtype=np.int64),
        "process": np.zeros(len(kept), dtype=np.int64),
        "thread": np.array([p.thread for p in kept], dtype=np.int64),
        "nc_idx": np.array([p.nc_idx for p in kept], dtype=np.int64),
        "pcore": np.array([_int(p.data.device_core_idx) for p in kept], dtype=np.int64),
        "exec_id": np.array([_int(p.data.exec_id) for p in kept], dtype=np.int64),
        "nrta_seq_id": np.array([p.nrta_seq_id for p in kept], dtype=np.int64),
        "model_id": np.array([_int(p.data.model_id) for p in kept], dtype=np.int64),
        "model_name": np.array(
            [
                names[p.data.model_name] if isinstance(p.data.model_name, str) and p.data.model_name else NONE
                for p in kept
            ],
            dtype=np.int32,
        ),
        "nc_start": np.array([nc_start[k] for k in keep], dtype=np.int64),
        "nc_stop": np.array([nc_stop[k] for k in keep], dtype=np.int64),
        "sync_cpu": np.full(len(kept), NONE, dtype=np.int64),  # placed here already
        "sync_nc": np.full(len(kept), NONE, dtype=np.int64),
        "stream": np.full(len(kept), NONE, dtype=np.int64),
    }
    _same_model_everywhere(columns)
    warnings = [*notes, *(f"{count} {what}" for what, count in sorted(problems.items()) if count)]
    return SystemEvents(
        **columns,  # type: ignore[arg-type]  # every column is an ndarray, as SystemEvents wants
        flow_offsets=np.zeros(len(kept) + 1, dtype=np.int64),
        flow_ids=np.empty(0, dtype=np.int64),
        names=list(names.keys()),
        warnings=warnings,
        from_runtime_events=True,
    )


def _same_model_everywhere(columns: dict[str, np.ndarray]) -> None:
    """Runtime events of an execution name its model only now and then (kbl_exec_pre,
    nrt_execute): every row of an exec_id gets the model its execution names."""
    exec_id, model, name = columns["exec_id"], columns["model_id"], columns["model_name"]
    known = (exec_id != NONE) & (model != NONE)
    if not known.any():
        return
    model_of = dict(zip(exec_id[known].tolist(), model[known].tolist(), strict=True))
    named = (exec_id != NONE) & (name != NONE)
    name_of = dict(zip(exec_id[named].tolist(), name[named].tolist(), strict=True))
    for row in np.flatnonzero(exec_id != NONE).tolist():
        e = int(exec_id[row])
        if model[row] == NONE and e in model_of:
            model[row] = model_of[e]
        if name[row] == NONE and e in name_of:
            name[row] = name_of[e]
