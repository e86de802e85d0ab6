"""Neuron system profile (runtime, hardware and framework events) as columns.

Two sources, one shape:

* the legacy JSON export (``trace_event`` as real files spell it, or the documented
  ``trace_events``), under whatever name ``--output-file`` gave it, with Unix-ns
  ``timestamp``, ns ``duration``, string ids, and ``device_profile_list`` naming each
  NeuronCore's device file;
* the Parquet table ``SystemProfileEvents`` (``start_ts``/``end_ts``/``duration_ns``,
  ``trace_event_source``, ``flow_id`` lists, ``extra_attributes_json``) with
  ``DeviceProfileList`` beside it.

Payload keys are looked up at top level, under ``args`` (older files), ``data``
(the runtime's own JSON) and in ``extra_attributes_json`` (newer ones).  Every number
goes through ``tolerant.int_or_missing``: an event without a usable timestamp is
dropped and counted, never placed at the Unix epoch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from trnscope.core.base.errors import InputError
from trnscope.core.formats.neuron.parquet import column, read_table
from trnscope.core.formats.neuron.tolerant import NONE, MissingCounts, decode_lenient, int_or_missing
from trnscope.core.model.vocab import Interner

__all__ = ["NONE", "SystemEvents", "int_or_missing", "read_system_json", "read_system_parquet"]

SOURCE_RUNTIME = 0
SOURCE_HARDWARE = 1
SOURCE_FRAMEWORK = 2
FRAMEWORK_EVENT_TYPE = 99999
HARDWARE_NAMES = frozenset(
    {
        "nc_exec_running",
        "cc_running",
        "cc_exec_barrier",
        "numerical_err",
        "nrt_model_switch",
        "nc_model_switch",
        "timestamp_sync_point",
        "hw_notify",
    }
)
# the earliest plausible Unix-ns timestamp (2001): anything below is a device-relative
# or garbage value, which on the host timeline would read as decades ago
_MIN_UNIX_NS = 10**18


class SystemEvents(msgspec.Struct):
    """One row per system event; times in Unix ns (host clock, already adjusted)."""

    name: np.ndarray  # int32 → names
    source: np.ndarray  # uint8 SOURCE_*
    start: np.ndarray  # int64 Unix ns
    duration: np.ndarray  # int64 ns
    process: np.ndarray  # int64
    thread: np.ndarray  # int64
    nc_idx: np.ndarray  # int64 logical NeuronCore (lnc_idx, else nc_idx), -1
    pcore: np.ndarray  # int64 physical core inside it (pcore_idx / device_core_idx), -1
    exec_id: np.ndarray  # int64, -1
    nrta_seq_id: np.ndarray  # int64, -1
    model_id: np.ndarray  # int64, -1
    model_name: np.ndarray  # int32 → names, -1
    nc_start: np.ndarray  # int64 device ns, -1
    nc_stop: np.ndarray
    sync_cpu: np.ndarray  # int64 (timestamp_sync_point)
    sync_nc: np.ndarray
    stream: np.ndarray  # int64 framework_stream_id, -1
    flow_offsets: np.ndarray  # int64: flows of row r are flow_ids[flow_offsets[r]:flow_offsets[r+1]]
    flow_ids: np.ndarray  # int64
    names: list[str]
    instance: str = ""
    warnings: list[str] = []
    # device profile name → (logical NeuronCore, model id) from device_profile_list / DeviceProfileList
    device_profiles: dict[str, tuple[int, int]] = {}
    from_runtime_events: bool = False  # the runtime's own events JSON (a kernel benchmark), no Explorer export

    def __len__(self) -> int:
        return int(self.name.shape[0])

    def flows_of(self, row: int) -> np.ndarray:
        return self.flow_ids[self.flow_offsets[row] : self.flow_offsets[row + 1]]

    def name_of(self, row: int) -> str:
        return self.names[int(self.name[row])]


# column → payload keys, first found wins
_PAYLOAD_KEYS: dict[str, tuple[str, ...]] = {
    "process": ("process_id", "pid"),
    "thread": ("thread_id", "tid"),
    "nc_idx": ("lnc_idx", "nc_idx", "nc_id"),
    "pcore": ("pcore_idx", "device_core_idx"),
    "exec_id": ("exec_id", "execution_id"),
    "nrta_seq_id": ("nrta_seq_id", "nrt_sequence_id", "nrta_sequence_id"),
    "model_id": ("model_id",),
    "nc_start": ("nc_start_timestamp_ns", "nc_timestamp_start_ns"),
    "nc_stop": ("nc_stop_timestamp_ns", "nc_timestamp_stop_ns"),
    "sync_cpu": ("cpu_timestamp_ns", "cpu_timestamp"),
    "sync_nc": ("nc_timestamp_ns", "nc_timestamp"),
    "stream": ("framework_stream_id",),
}
_INT_COLUMNS = ("name", "source", "start", "duration", "model_name", *_PAYLOAD_KEYS)


class _Builder:
    def __init__(self) -> None:
        self.names = Interner()
        self.columns: dict[str, list[int]] = {k: [] for k in _INT_COLUMNS}
        self.flow_offsets = [0]
        self.flow_ids: list[int] = []
        self.instance = ""
        self.missing = MissingCounts()

    def add(self, name: Any, declared_source: Any, event_type: Any, start: Any, duration: Any, payload: Any) -> None:
        """``payload``: a mapping-like lookup ``key → value`` over every place a key may be."""
        start_ns = int_or_missing(start)
        if start_ns < _MIN_UNIX_NS:
            self.missing.note("events without a usable timestamp (null, NaN, out of range or not Unix ns) were dropped")
            return
        duration_ns = int_or_missing(duration)
        if duration_ns < 0:
            self.missing.note("events without a usable duration are shown as instants")
            duration_ns = 0
        text = name if isinstance(name, str) and name else "(unnamed)"
        c = self.columns
        c["name"].append(self.names[text])
        c["source"].append(_source_of(text, declared_source, event_type, payload("group")))
        c["start"].append(start_ns)
        c["duration"].append(duration_ns)
        for column_name, keys in _PAYLOAD_KEYS.items():
            value = NONE
            for key in keys:
                value = int_or_missing(payload(key))
                if value != NONE:
                    break
            c[column_name].append(value)
        model = payload("model_name")
        c["model_name"].append(self.names[model] if isinstance(model, str) and model else NONE)
        flows = payload("flow_id")
        for flow in flows if isinstance(flows, list) else [flows] if flows is not None else []:
            value = int_or_missing(flow)
            if value != NONE:
                self.flow_ids.append(value)
        self.flow_offsets.append(len(self.flow_ids))
        instance = payload("instance_id")
        if isinstance(instance, str) and instance and not self.instance:
            self.instance = instance

    def build(self, warnings: list[str], where: str, device_profiles: dict[str, tuple[int, int]]) -> SystemEvents:
        arrays = {
            k: np.array(v, dtype=np.uint8 if k == "source" else np.int32 if k in ("name", "model_name") else np.int64)
            for k, v in self.columns.items()
        }
        return SystemEvents(
            **arrays,  # type: ignore[arg-type]  # every column an ndarray; the other fields are given by name
            flow_offsets=np.array(self.flow_offsets, dtype=np.int64),
            flow_ids=np.array(self.flow_ids, dtype=np.int64),
            names=list(self.names.keys()),
            instance=self.instance,
            warnings=[*warnings, *self.missing.warnings(where)],
            device_profiles=device_profiles,
        )


def _source_of(name: str, declared: Any, event_type: Any, group: Any) -> int:
    if isinstance(declared, str) and declared:
        return {"neuron_rt": SOURCE_RUNTIME, "neuron_hw": SOURCE_HARDWARE, "framework": SOURCE_FRAMEWORK}.get(
            declared, SOURCE_RUNTIME
        )
    if int_or_missing(event_type) == FRAMEWORK_EVENT_TYPE or (isinstance(group, str) and group.startswith("framework")):
        return SOURCE_FRAMEWORK
    return SOURCE_HARDWARE if name in HARDWARE_NAMES else SOURCE_RUNTIME


def _lookup(*layers: Any) -> Any:
    """A ``key → value`` function over several dicts (non-dicts are skipped)."""
    dicts = [layer for layer in layers if isinstance(layer, dict)]

    def get(key: str) -> Any:
        for layer in dicts:
            value = layer.get(key)
            if value is not None:
                return value
        return None

    return get


def _extra(value: Any) -> Any:
    if isinstance(value, dict):
        return value
    if isinstance(value, str | bytes) and value:
        try:
            return msgspec.json.decode(value)
        except msgspec.DecodeError:
            return None
    return None


def _device_profile_list(items: Any) -> dict[str, tuple[int, int]]:
    out: dict[str, tuple[int, int]] = {}
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        name = item.get("device_profile_name") or item.get("name")
        if not isinstance(name, str) or not name:
            continue
        core = NONE
        for key in ("nc_id", "nc_idx", "lnc_idx", "neuroncore_idx"):
            core = int_or_missing(item.get(key))
            if core != NONE:
                break
        out[name] = (core, int_or_missing(item.get("model_id")))
    return out


# -- legacy JSON ------------------------------------------------------------------


class _JsonDoc(msgspec.Struct):
    trace_event: Any = None
    trace_events: Any = None
    warnings: Any = None
    device_profile_list: Any = None


def _warning_texts(items: Any) -> list[str]:
    out = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and isinstance(item.get("message"), str):
            out.append(item["message"])
        elif isinstance(item, str):
            out.append(item)
    return out


def read_system_json(path: Path) -> SystemEvents:
    try:
        doc, replaced = decode_lenient(path.read_bytes(), _JsonDoc)
    except (msgspec.DecodeError, msgspec.ValidationError) as error:
        raise InputError(f"{path}: not a Neuron Explorer system profile ({error})") from None
    events = doc.trace_event if doc.trace_event is not None else doc.trace_events
    if not isinstance(events, list):
        raise InputError(f"{path}: no trace_event list; not a Neuron Explorer system profile")
    builder = _Builder()
    if replaced:
        builder.missing.note("NaN/Infinity values read as missing", replaced)
    skipped = 0
    for event in events:
        if not isinstance(event, dict):
            skipped += 1
            continue
        payload = _lookup(event, event.get("args"), event.get("data"), _extra(event.get("extra_attributes_json")))
        builder.add(
            event.get("name"),
            event.get("trace_event_source"),
            event.get("type"),
            event.get("timestamp", event.get("start_ts")),
            event.get("duration", event.get("duration_ns")),
            payload,
        )
    builder.missing.note("trace events that were not objects were skipped", skipped)
    return builder.build(_warning_texts(doc.warnings), path.name, _device_profile_list(doc.device_profile_list))


# -- Parquet ------------------------------------------------------------------------

_SYSTEM_COLUMNS = [
    "id",
    "name",
    "start_ts",
    "end_ts",
    "duration_ns",
    "trace_event_source",
    "instance_id",
    "process_id",
    "thread_id",
    "nc_idx",
    "pcore_idx",
    "worker_gid",
    "flow_id",
    "framework_stream_id",
    "group",
    "extra_attributes_json",
]


def read_system_parquet(folder: Path) -> SystemEvents:
    table = read_table(folder, "SystemProfileEvents", _SYSTEM_COLUMNS, required=("name", "start_ts"))
    if table is None:
        raise InputError(f"{folder}: no SystemProfileEvents table")
    if "duration_ns" not in table.schema.names and "end_ts" not in table.schema.names:
        raise InputError(f"{folder}: the SystemProfileEvents table has neither duration_ns nor end_ts")
    data = table.to_pydict()
    n = table.num_rows
    builder = _Builder()
    names, starts = data["name"], data["start_ts"]
    ends = column(data, n, "end_ts")
    durations = column(data, n, "duration_ns")
    sources = column(data, n, "trace_event_source")
    plain = {k: data[k] for k in _SYSTEM_COLUMNS if k in data and k not in ("extra_attributes_json",)}
    extras = column(data, n, "extra_attributes_json")
    for i in range(n):
        row = {k: v[i] for k, v in plain.items()}
        duration = durations[i]
        if duration is None and ends[i] is not None:
            end, start = int_or_missing(ends[i]), int_or_missing(starts[i])
            duration = end - start if NONE not in (end, start) else None
        builder.add(names[i], sources[i], None, starts[i], duration, _lookup(row, _extra(extras[i])))
    warnings: list[str] = []
    warning_table = read_table(folder, "Warning", ["message"])
    if warning_table is not None:
        warnings = [str(m) for m in warning_table.to_pydict().get("message", []) if m]
    listing = read_table(folder, "DeviceProfileList")
    profiles = _device_profile_list(listing.to_pylist()) if listing is not None else {}
    return builder.build(warnings, f"{folder.name}/SystemProfileEvents", profiles)
