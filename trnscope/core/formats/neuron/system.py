"""Neuron system profile (runtime, hardware and framework events) as columns.

Two sources, one shape:

* the legacy JSON export ``system_profile.json`` (``trace_event`` — or the documented
  spelling ``trace_events`` — with Unix-ns ``timestamp``, ns ``duration``, string ids),
* the Parquet table ``SystemProfileEvents`` (``start_ts``/``end_ts``/``duration_ns``,
  ``trace_event_source``, ``flow_id`` lists, ``extra_attributes_json``).

Numbers arrive as ints or strings depending on writer and version; every id is
coerced, and payload keys are looked up at top level, under ``args`` (older files)
and in ``extra_attributes_json`` (newer ones).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from trnscope.core.base.errors import InputError
from trnscope.core.model.vocab import Interner

NONE = -1
SOURCE_RUNTIME = 0
SOURCE_HARDWARE = 1
SOURCE_FRAMEWORK = 2
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


class SystemEvents(msgspec.Struct):
    """One row per system event; times in Unix ns (host clock, already adjusted)."""

    name: np.ndarray  # int32 → names
    source: np.ndarray  # uint8 SOURCE_*
    start: np.ndarray  # int64 Unix ns
    duration: np.ndarray  # int64 ns
    process: np.ndarray  # int64
    thread: np.ndarray  # int64
    nc_idx: np.ndarray  # int64, -1
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

    def __len__(self) -> int:
        return int(self.name.shape[0])

    def flows_of(self, row: int) -> np.ndarray:
        return self.flow_ids[self.flow_offsets[row] : self.flow_offsets[row + 1]]


def int_or_missing(value: Any) -> int:
    if value is None or isinstance(value, bool):
        return NONE
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value == value else NONE
    try:
        text = str(value).strip()
        return int(text, 16) if text.lower().startswith("0x") else int(float(text)) if "." in text else int(text)
    except ValueError:
        return NONE


class _Builder:
    def __init__(self) -> None:
        self.names = Interner()
        self.columns: dict[str, list[int]] = {k: [] for k in _INT_COLUMNS}
        self.flow_offsets = [0]
        self.flow_ids: list[int] = []
        self.instance = ""

    def add(
        self, name: str, source: int, start: int, duration: int, payload: dict[str, Any], flows: list[Any] | None
    ) -> None:
        c = self.columns
        c["name"].append(self.names[name])
        c["source"].append(source)
        c["start"].append(start)
        c["duration"].append(max(duration, 0))
        for key in (
            "process",
            "thread",
            "nc_idx",
            "exec_id",
            "nrta_seq_id",
            "model_id",
            "nc_start",
            "nc_stop",
            "sync_cpu",
            "sync_nc",
            "stream",
        ):
            c[key].append(int_or_missing(payload.get(_PAYLOAD_KEYS[key][0], payload.get(_PAYLOAD_KEYS[key][1]))))
        model = payload.get("model_name")
        c["model_name"].append(self.names[str(model)] if model else NONE)
        for flow in flows or []:
            value = int_or_missing(flow)
            if value != NONE:
                self.flow_ids.append(value)
        self.flow_offsets.append(len(self.flow_ids))

    def build(self, warnings: list[str]) -> SystemEvents:
        arrays = {
            k: np.array(v, dtype=np.uint8 if k == "source" else np.int32 if k in ("name", "model_name") else np.int64)
            for k, v in self.columns.items()
        }
        return SystemEvents(
            **arrays,
            flow_offsets=np.array(self.flow_offsets, dtype=np.int64),
            flow_ids=np.array(self.flow_ids, dtype=np.int64),
            names=list(self.names.keys()),
            instance=self.instance,
            warnings=warnings,
        )


_INT_COLUMNS = (
    "name",
    "source",
    "start",
    "duration",
    "process",
    "thread",
    "nc_idx",
    "exec_id",
    "nrta_seq_id",
    "model_id",
    "model_name",
    "nc_start",
    "nc_stop",
    "sync_cpu",
    "sync_nc",
    "stream",
)
_PAYLOAD_KEYS = {
    "process": ("process_id", "pid"),
    "thread": ("thread_id", "tid"),
    "nc_idx": ("nc_idx", "lnc_idx"),
    "exec_id": ("exec_id", "execution_id"),
    "nrta_seq_id": ("nrta_seq_id", "nrt_sequence_id"),
    "model_id": ("model_id", "model"),
    "nc_start": ("nc_start_timestamp_ns", "nc_timestamp_start_ns"),
    "nc_stop": ("nc_stop_timestamp_ns", "nc_timestamp_stop_ns"),
    "sync_cpu": ("cpu_timestamp_ns", "cpu_timestamp"),
    "sync_nc": ("nc_timestamp_ns", "nc_timestamp"),
    "stream": ("framework_stream_id", "stream_id"),
}


def _source_of(name: str, declared: str | None, event_type: Any) -> int:
    if declared:
        return {"neuron_rt": SOURCE_RUNTIME, "neuron_hw": SOURCE_HARDWARE, "framework": SOURCE_FRAMEWORK}.get(
            declared, SOURCE_RUNTIME
        )
    if int_or_missing(event_type) == 99999:
        return SOURCE_FRAMEWORK
    return SOURCE_HARDWARE if name in HARDWARE_NAMES else SOURCE_RUNTIME


# -- legacy JSON ------------------------------------------------------------------


class _JsonEvent(msgspec.Struct, gc=False):
    name: str = ""
    timestamp: int | float | str | None = None
    duration: int | float | str | None = None
    type: int | str | None = None
    trace_event_source: str | None = None
    process_id: int | str | None = None
    thread_id: int | str | None = None
    lnc_idx: int | str | None = None
    nc_idx: int | str | None = None
    exec_id: int | str | None = None
    nrta_seq_id: int | str | None = None
    model_id: int | str | None = None
    model_name: str | None = None
    nc_start_timestamp_ns: int | str | None = None
    nc_stop_timestamp_ns: int | str | None = None
    cpu_timestamp_ns: int | str | None = None
    nc_timestamp_ns: int | str | None = None
    framework_stream_id: int | str | None = None
    flow_id: list[int | str] | int | str | None = None
    instance_id: str | None = None
    args: dict[str, Any] | None = None


class _Warning(msgspec.Struct):
    message: str = ""


class _JsonDoc(msgspec.Struct):
    trace_event: list[_JsonEvent] | None = None
    trace_events: list[_JsonEvent] | None = None
    warnings: list[_Warning | str] = []


def read_system_json(path: Path) -> SystemEvents:
    try:
        doc = msgspec.json.decode(path.read_bytes(), type=_JsonDoc)
    except (msgspec.DecodeError, msgspec.ValidationError) as error:
        raise InputError(f"{path}: not a Neuron Explorer system profile ({error})") from None
    events = doc.trace_event if doc.trace_event is not None else doc.trace_events
    if events is None:
        raise InputError(f"{path}: no trace_event list; not a Neuron Explorer system profile")
    builder = _Builder()
    for event in events:
        payload = {f: getattr(event, f) for f in _JsonEvent.__struct_fields__ if f not in ("args", "flow_id")}
        if event.args:  # older files nest the payload under args
            for key, value in event.args.items():
                if payload.get(key) is None:
                    payload[key] = value
        if payload.get("nc_idx") is None:
            payload["nc_idx"] = payload.get("lnc_idx")
        if event.instance_id and not builder.instance:
            builder.instance = event.instance_id
        start = int_or_missing(event.timestamp)
        flows = (
            event.flow_id
            if isinstance(event.flow_id, list)
            else ([event.flow_id] if event.flow_id is not None else None)
        )
        builder.add(
            event.name,
            _source_of(event.name, event.trace_event_source, event.type),
            start,
            int_or_missing(event.duration),
            payload,
            flows,
        )
    warnings = [w.message if isinstance(w, _Warning) else str(w) for w in doc.warnings]
    return builder.build(warnings)


# -- Parquet ------------------------------------------------------------------------


def require_pyarrow(what: str) -> Any:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError(
            f"{what} is a Neuron Explorer Parquet export; reading it needs pyarrow: pip install 'trnscope[parquet]'"
        ) from None
    return pq


def table_files(folder: Path, table: str) -> list[Path]:
    """``<Table>.parquet`` and the split ``<Table>_<n>.parquet`` parts, in order."""
    exact = folder / f"{table}.parquet"
    parts = sorted(
        (p for p in folder.glob(f"{table}_*.parquet") if p.stem[len(table) + 1 :].isdigit()),
        key=lambda p: int(p.stem[len(table) + 1 :]),
    )
    return ([exact] if exact.exists() else []) + parts


def read_table(folder: Path, table: str, columns: list[str] | None = None) -> Any:
    pq = require_pyarrow(str(folder))
    import pyarrow as pa

    files = table_files(folder, table)
    if not files:
        return None
    tables = []
    for file in files:
        schema = pq.read_schema(file)
        wanted = [c for c in columns if c in schema.names] if columns else None
        tables.append(pq.read_table(file, columns=wanted))
    return pa.concat_tables(tables, promote_options="default") if len(tables) > 1 else tables[0]


def read_system_parquet(folder: Path) -> SystemEvents:
    table = read_table(folder, "SystemProfileEvents")
    if table is None:
        raise InputError(f"{folder}: no SystemProfileEvents table")
    data = table.to_pydict()
    n = table.num_rows
    builder = _Builder()
    extras = data.get("extra_attributes_json") or [None] * n
    for i in range(n):
        payload: dict[str, Any] = {
            "process_id": data.get("process_id", [None] * n)[i],
            "thread_id": data.get("thread_id", [None] * n)[i],
            "nc_idx": data.get("nc_idx", [None] * n)[i],
            "framework_stream_id": data.get("framework_stream_id", [None] * n)[i],
        }
        extra = extras[i]
        if extra:
            try:
                decoded = msgspec.json.decode(extra)
            except msgspec.DecodeError:
                decoded = {}
            if isinstance(decoded, dict):
                for key, value in decoded.items():
                    payload.setdefault(key, value)
                    if payload.get(key) is None:
                        payload[key] = value
        instance = data.get("instance_id", [None] * n)[i]
        if instance and not builder.instance:
            builder.instance = instance
        start = int_or_missing(data["start_ts"][i])
        duration = (
            int_or_missing(data["duration_ns"][i])
            if "duration_ns" in data
            else int_or_missing(data["end_ts"][i]) - start
        )
        name = data["name"][i] or ""
        builder.add(
            name,
            _source_of(name, data.get("trace_event_source", [None] * n)[i], None),
            start,
            duration,
            payload,
            data.get("flow_id", [None] * n)[i],
        )
    warnings: list[str] = []
    warning_table = read_table(folder, "Warning")
    if warning_table is not None:
        warnings = [str(m) for m in warning_table.to_pydict().get("message", [])]
    return builder.build(warnings)
