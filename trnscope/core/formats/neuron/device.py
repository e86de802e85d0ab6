"""Neuron device profiles: the instructions (and DMA) of one NeuronCore / compiled model.

Light columns — start, duration, engine — are read up front to place instructions in
executions and sum engine time; the wide text columns (opcode, HLO name, NKI source
location, operands) of the Parquet export are read only for the execution being
shown, with a row filter on ``start_ts``, so million-instruction profiles stay cheap.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from trnscope.core.base.errors import InputError
from trnscope.core.formats.neuron.system import int_or_missing, read_table, table_files
from trnscope.core.model.vocab import Interner

ENGINES = ("tensor", "vector", "scalar", "gpsimd", "sync", "dma", "cc", "other")
_ENGINE_ALIASES = {
    "tensor": "tensor",
    "pe": "tensor",
    "te": "tensor",
    "tensore": "tensor",
    "tensormatrix": "tensor",
    "tensormatrixe": "tensor",
    "vector": "vector",
    "dve": "vector",
    "ve": "vector",
    "scalar": "scalar",
    "act": "scalar",
    "activation": "scalar",
    "gpsimd": "gpsimd",
    "pool": "gpsimd",
    "sync": "sync",
    "sp": "sync",
    "cc_instruction": "cc",
    "cc": "cc",
    "dma": "dma",
}
_MODEL_FILE = re.compile(r"device_profile_model_(?P<id>\d+)\.json$")


def engine_of(text: str | None) -> int:
    if not text:
        return ENGINES.index("other")
    key = str(text).strip().lower()
    if key in _ENGINE_ALIASES:
        return ENGINES.index(_ENGINE_ALIASES[key])
    for prefix in ("pe", "act", "dve", "pool", "sp"):
        if key.startswith(prefix):
            return ENGINES.index(_ENGINE_ALIASES[prefix])
    for name in ("tensor", "vector", "scalar", "gpsimd", "sync"):
        if key.startswith(name):
            return ENGINES.index(name)
    return ENGINES.index("other")


class Instructions(msgspec.Struct):
    """Instruction rows (device clock), sorted by start."""

    start: np.ndarray  # int64 device ns
    duration: np.ndarray  # int64 ns
    engine: np.ndarray  # uint8 → ENGINES
    opcode: np.ndarray  # int32 → strings, -1 when not loaded
    hlo: np.ndarray
    nki: np.ndarray
    strings: list[str]

    def __len__(self) -> int:
        return int(self.start.shape[0])


class DeviceProfile(msgspec.Struct):
    label: str
    nc_idx: int
    model_id: int
    format: str  # "json" | "parquet"
    path: str
    instructions: Instructions
    dma_start: np.ndarray
    dma_duration: np.ndarray
    dma_bytes: np.ndarray
    cc_start: np.ndarray = np.empty(0, np.int64)  # collective operations (CcOp / cc_ops)
    cc_duration: np.ndarray = np.empty(0, np.int64)
    cc_bytes: np.ndarray = np.empty(0, np.int64)
    cc_operation: list[str] = []
    dma_route: np.ndarray = np.empty(0, np.int32)  # per DMA packet: index into dma_routes, -1
    dma_routes: list[str] = []  # DmaPacketAggregated "op source→dest", e.g. "read [HBM]→[SB]"
    summary: dict[str, Any] = {}
    metadata: dict[str, Any] = {}
    text_loaded: bool = True  # opcode/hlo/nki present for every row

    def details(self, start: int, end: int) -> Instructions:
        """Instructions starting in [start, end) with their text columns."""
        inst = self.instructions
        lo, hi = np.searchsorted(inst.start, [start, end])
        if self.text_loaded:
            return _slice(inst, lo, hi)
        return _read_parquet_details(Path(self.path), start, end)


def _slice(inst: Instructions, lo: int, hi: int) -> Instructions:
    return Instructions(
        inst.start[lo:hi],
        inst.duration[lo:hi],
        inst.engine[lo:hi],
        inst.opcode[lo:hi],
        inst.hlo[lo:hi],
        inst.nki[lo:hi],
        inst.strings,
    )


def _sorted(
    start: np.ndarray,
    duration: np.ndarray,
    engine: np.ndarray,
    opcode: np.ndarray,
    hlo: np.ndarray,
    nki: np.ndarray,
    strings: list[str],
) -> Instructions:
    order = np.argsort(start, kind="stable")
    return Instructions(start[order], duration[order], engine[order], opcode[order], hlo[order], nki[order], strings)


# -- legacy JSON ------------------------------------------------------------------


class _JsonInstruction(msgspec.Struct, gc=False):
    timestamp: int | float | str | None = None
    duration: int | float | str | None = None
    label: str | None = None
    subgroup: str | None = None
    engine: str | None = None
    opcode: str | None = None
    hlo_name: str | None = None
    nki_source_location: str | None = None


class _JsonDma(msgspec.Struct, gc=False):
    timestamp: int | float | str | None = None
    duration: int | float | str | None = None
    transfer_bytes: int | str | None = None


class _JsonCc(msgspec.Struct, gc=False):
    timestamp: int | float | str | None = None
    duration: int | float | str | None = None
    operation: str = ""
    input_size: int | str | None = None


class _JsonDevice(msgspec.Struct):
    instruction: list[_JsonInstruction] = []
    cc_ops: list[_JsonCc] = []
    summary: list[dict[str, Any]] | dict[str, Any] = []
    metadata: dict[str, Any] = {}
    dma: list[_JsonDma] = []


def read_device_json(path: Path) -> DeviceProfile:
    try:
        doc = msgspec.json.decode(path.read_bytes(), type=_JsonDevice)
    except (msgspec.DecodeError, msgspec.ValidationError) as error:
        raise InputError(f"{path}: not a Neuron Explorer device profile ({error})") from None
    rows = doc.instruction
    strings = Interner()
    strings[""]
    start = np.array([int_or_missing(r.timestamp) for r in rows], dtype=np.int64)
    duration = np.array([max(int_or_missing(r.duration), 0) for r in rows], dtype=np.int64)
    engine = np.array([engine_of(r.engine or r.label or r.subgroup) for r in rows], dtype=np.uint8)
    opcode = np.array([strings[r.opcode or ""] for r in rows], dtype=np.int32)
    hlo = np.array([strings[r.hlo_name or ""] for r in rows], dtype=np.int32)
    nki = np.array([strings[r.nki_source_location or ""] for r in rows], dtype=np.int32)
    summary = (
        doc.summary[0]
        if isinstance(doc.summary, list) and doc.summary
        else (doc.summary if isinstance(doc.summary, dict) else {})
    )
    match = _MODEL_FILE.search(path.name)
    model_id = int(match.group("id")) if match else int_or_missing(doc.metadata.get("model_id"))
    dma = doc.dma
    return DeviceProfile(
        label=path.stem,
        nc_idx=max(int_or_missing(doc.metadata.get("neuroncore_idx")), 0),
        model_id=model_id,
        format="json",
        path=str(path),
        instructions=_sorted(start, duration, engine, opcode, hlo, nki, list(strings.keys())),
        dma_start=np.array([int_or_missing(d.timestamp) for d in dma], dtype=np.int64),
        dma_duration=np.array([max(int_or_missing(d.duration), 0) for d in dma], dtype=np.int64),
        dma_bytes=np.array([max(int_or_missing(d.transfer_bytes), 0) for d in dma], dtype=np.int64),
        cc_start=np.array([int_or_missing(c.timestamp) for c in doc.cc_ops], dtype=np.int64),
        cc_duration=np.array([max(int_or_missing(c.duration), 0) for c in doc.cc_ops], dtype=np.int64),
        cc_bytes=np.array([max(int_or_missing(c.input_size), 0) for c in doc.cc_ops], dtype=np.int64),
        cc_operation=[c.operation for c in doc.cc_ops],
        summary=summary,
        metadata=doc.metadata,
    )


# -- Parquet ------------------------------------------------------------------------


def read_device_parquet(folder: Path, profile_list: dict[str, tuple[int, int]]) -> DeviceProfile:
    """``profile_list``: device_profile_name → (nc_id, model_id), from DeviceProfileList."""
    table = read_table(folder, "Instruction", ["start_ts", "duration_ns", "end_ts", "engine", "timeline_track"])
    if table is None:
        raise InputError(f"{folder}: no Instruction table")
    data = table.to_pydict()
    start = np.array(data["start_ts"], dtype=np.int64)
    if "duration_ns" in data:
        duration = np.array(data["duration_ns"], dtype=np.int64)
    else:
        duration = np.array(data["end_ts"], dtype=np.int64) - start
    engines = data.get("engine") or data.get("timeline_track") or [None] * len(start)
    lookup = {value: engine_of(value) for value in set(engines)}
    engine = np.array([lookup[v] for v in engines], dtype=np.uint8)
    missing = np.full(start.shape, -1, dtype=np.int32)
    metadata = _first_row(read_table(folder, "Metadata"))
    summary = _first_row(read_table(folder, "Summary"))
    name = str(metadata.get("profile_name") or folder.name)
    nc_id, model_id = profile_list.get(
        name, profile_list.get(folder.name, (int_or_missing(metadata.get("neuroncore_idx")), -1))
    )
    dma = read_table(
        folder, "DmaPacket", ["start_ts", "duration_ns", "end_ts", "transfer_bytes", "packet_aggregation_id"]
    )
    dma_data = dma.to_pydict() if dma is not None else {}
    dma_start = np.array(dma_data.get("start_ts", []), dtype=np.int64)
    dma_duration = (
        np.array(dma_data.get("duration_ns", []), dtype=np.int64)
        if "duration_ns" in dma_data
        else np.array(dma_data.get("end_ts", []), dtype=np.int64) - dma_start
    )
    cc = read_table(folder, "CcOp", ["start_ts", "duration_ns", "end_ts", "operation", "input_size"])
    cc_data = cc.to_pydict() if cc is not None else {}
    cc_start = np.array(cc_data.get("start_ts", []), dtype=np.int64)
    cc_duration = (
        np.array(cc_data["duration_ns"], dtype=np.int64)
        if "duration_ns" in cc_data
        else np.array(cc_data.get("end_ts", []), dtype=np.int64) - cc_start
    )
    dma_route, dma_routes = _dma_routes(folder, dma_data.get("packet_aggregation_id"), dma_start.size)
    return DeviceProfile(
        cc_start=cc_start,
        cc_duration=np.maximum(cc_duration, 0),
        cc_bytes=np.array([max(int_or_missing(v), 0) for v in cc_data.get("input_size", [])], dtype=np.int64),
        cc_operation=[str(v) for v in cc_data.get("operation", [])],
        dma_route=dma_route,
        dma_routes=dma_routes,
        label=name,
        nc_idx=max(nc_id, 0),
        model_id=model_id,
        format="parquet",
        path=str(folder),
        instructions=_sorted(start, np.maximum(duration, 0), engine, missing, missing, missing, [""]),
        dma_start=dma_start,
        dma_duration=np.maximum(dma_duration, 0),
        dma_bytes=np.array(dma_data.get("transfer_bytes", [0] * len(dma_start)), dtype=np.int64),
        summary=summary,
        metadata=metadata,
        text_loaded=False,
    )


def _first_row(table: Any) -> dict[str, Any]:
    if table is None or table.num_rows == 0:
        return {}
    return {k: v[0] for k, v in table.slice(0, 1).to_pydict().items()}


def _dma_routes(folder: Path, aggregation_ids: list[Any] | None, packets: int) -> tuple[np.ndarray, list[str]]:
    """Each DMA packet's route ("op source→dest") through its DmaPacketAggregated row."""
    aggregated = read_table(folder, "DmaPacketAggregated", ["id", "op", "source", "dest"])
    if aggregated is None or aggregation_ids is None or aggregated.num_rows == 0:
        return np.full(packets, -1, dtype=np.int32), []
    n = aggregated.num_rows
    agg = aggregated.to_pydict()
    routes = Interner()
    route_of_row = np.array(
        [
            routes[f"{op} {src}→{dst}"]
            for op, src, dst in zip(agg.get("op", [""] * n), agg.get("source", [""] * n), agg.get("dest", [""] * n))
        ],
        dtype=np.int32,
    )
    ids = np.array([int_or_missing(v) for v in agg.get("id", range(n))], dtype=np.int64)
    order = np.argsort(ids, kind="stable")
    ids, route_of_row = ids[order], route_of_row[order]
    wanted = np.array([int_or_missing(v) for v in aggregation_ids], dtype=np.int64)
    at = np.minimum(np.searchsorted(ids, wanted), n - 1)
    return np.where(ids[at] == wanted, route_of_row[at], -1).astype(np.int32), routes.values_in_order()


def _read_parquet_details(folder: Path, start: int, end: int) -> Instructions:
    from trnscope.core.formats.neuron.system import require_pyarrow

    pq = require_pyarrow(str(folder))
    import pyarrow as pa

    wanted = [
        "start_ts",
        "duration_ns",
        "end_ts",
        "engine",
        "timeline_track",
        "opcode",
        "hlo_name",
        "nki_source_location",
    ]
    parts = []
    for file in table_files(folder, "Instruction"):
        names = pq.read_schema(file).names
        parts.append(
            pq.read_table(
                file,
                columns=[c for c in wanted if c in names],
                filters=[("start_ts", ">=", start), ("start_ts", "<", end)],
            )
        )
    table = pa.concat_tables(parts, promote_options="default") if parts else None
    data = table.to_pydict() if table is not None else {}
    strings = Interner()
    strings[""]
    n = len(data.get("start_ts", []))
    start_col = np.array(data.get("start_ts", []), dtype=np.int64)
    duration = (
        np.array(data["duration_ns"], dtype=np.int64)
        if "duration_ns" in data
        else np.array(data.get("end_ts", []), dtype=np.int64) - start_col
    )
    engines = data.get("engine") or data.get("timeline_track") or [None] * n

    def ids(column: str) -> np.ndarray:
        return np.array([strings[v or ""] for v in data.get(column, [None] * n)], dtype=np.int32)

    return _sorted(
        start_col,
        duration,
        np.array([engine_of(v) for v in engines], dtype=np.uint8),
        ids("opcode"),
        ids("hlo_name"),
        ids("nki_source_location"),
        list(strings.keys()),
    )


def profile_list(folder: Path) -> dict[str, tuple[int, int]]:
    table = read_table(folder, "DeviceProfileList")
    if table is None:
        return {}
    data = table.to_pydict()
    return {
        str(name): (int_or_missing(nc), int_or_missing(model))
        for name, nc, model in zip(data.get("device_profile_name", []), data.get("nc_id", []), data.get("model_id", []))
    }


def is_device_parquet_dir(folder: Path) -> bool:
    return bool(table_files(folder, "Instruction"))


def is_system_parquet_dir(folder: Path) -> bool:
    return bool(table_files(folder, "SystemProfileEvents"))
