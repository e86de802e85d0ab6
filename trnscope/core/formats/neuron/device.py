"""Neuron device profiles: the instructions, DMA and collectives of one NeuronCore.

A device profile covers one NeuronCore (session mode: every execution on it) or one
compiled model (model mode).  Its timestamps are in the device's own time base —
real exports give them relative to the start of the device profile
(``neuron-evidence.md`` §4) — and ``trnscope.core.link.neuron`` places them on the
host clock.  With logical NeuronCores of size 2 the rows of both physical cores are
in one profile, told apart by ``pcore_idx``.

Light columns — start, duration, engine, physical core, opcode, semaphore wait — are
read up front; the wide text columns (HLO name, NKI source location) of the Parquet
export are read only for the execution being shown, with a row filter on
``start_ts``, so million-instruction profiles stay cheap.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from trnscope.core.base.errors import InputError
from trnscope.core.formats.neuron.parquet import (
    first_row,
    int_column,
    read_table,
    require_pyarrow,
    table_files,
    text_codes,
)
from trnscope.core.formats.neuron.tolerant import NONE, MissingCounts, decode_lenient, int_or_missing, items_as
from trnscope.core.model.vocab import Interner

ENGINES = ("tensor", "vector", "scalar", "gpsimd", "sync", "dma", "cc", "other")
COMPUTE_ENGINES = 5  # the first five: the instruction-issuing engines
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
# opcodes whose whole duration is an engine waiting on a semaphore (not active time)
SEMAPHORE_WAIT_OPCODES = frozenset({"EVENT_SEMAPHORE", "SEMAPHORE_WAIT", "SEM_WAIT", "WAIT_EVENT"})
_MODEL_FILE = re.compile(r"(?:device_profile_model_|_model_)(?P<id>\d+)\.json$")
_CORE_FILE = re.compile(r"_nc_(?P<nc>\d+)_(?:session|model)_")


def engine_of(text: Any) -> int:
    if not isinstance(text, str) or not text:
        return ENGINES.index("other")
    key = text.strip().lower()
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
    """Instruction rows in the profile's own time base, sorted by start."""

    start: np.ndarray  # int64 ns
    duration: np.ndarray  # int64 ns
    engine: np.ndarray  # uint8 → ENGINES
    pcore: np.ndarray  # int16 physical core inside the logical core, -1
    wait: np.ndarray  # int64 ns of the duration spent waiting on a semaphore
    opcode: np.ndarray  # int32 → strings, -1
    hlo: np.ndarray  # int32 → strings, -1 when not loaded
    nki: np.ndarray
    strings: list[str]

    def __len__(self) -> int:
        return int(self.start.shape[0])


class DeviceProfile(msgspec.Struct):
    label: str
    nc_idx: int  # logical NeuronCore, -1 when nothing says
    model_id: int  # -1: every model run on the core (session mode)
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
    exec_start: np.ndarray = np.empty(0, np.int64)  # ExecutionInfo, profile time base
    exec_end: np.ndarray = np.empty(0, np.int64)
    first_hw_timestamp: int = NONE  # Metadata: device-clock start of the profile
    summary: dict[str, Any] = {}
    metadata: dict[str, Any] = {}
    warnings: list[str] = []
    text_loaded: bool = True  # hlo/nki present for every row

    def details(self, start: int, end: int) -> Instructions:
        """Instructions starting in [start, end) (profile time base) with text columns."""
        inst = self.instructions
        lo, hi = np.searchsorted(inst.start, [start, end])
        if self.text_loaded:
            return _slice(inst, int(lo), int(hi))
        return _read_parquet_details(Path(self.path), start, end)


def _slice(inst: Instructions, lo: int, hi: int) -> Instructions:
    return Instructions(
        inst.start[lo:hi],
        inst.duration[lo:hi],
        inst.engine[lo:hi],
        inst.pcore[lo:hi],
        inst.wait[lo:hi],
        inst.opcode[lo:hi],
        inst.hlo[lo:hi],
        inst.nki[lo:hi],
        inst.strings,
    )


def _build(
    start: np.ndarray,
    duration: np.ndarray,
    engine: np.ndarray,
    pcore: np.ndarray,
    wait: np.ndarray,
    opcode: np.ndarray,
    hlo: np.ndarray,
    nki: np.ndarray,
    strings: list[str],
    missing: MissingCounts,
) -> Instructions:
    """Drop rows without a usable start, count them, sort the rest by start; semaphore
    waits (by opcode or ``evt_wait_time_ns``) are recorded in ``wait``."""
    keep = start != NONE
    missing.note("instructions without a usable timestamp were dropped", int((~keep).sum()))
    bad_duration = keep & (duration < 0)
    missing.note("instructions without a usable duration count as instants", int(bad_duration.sum()))
    duration = np.maximum(duration, 0)
    waits = {i for i, s in enumerate(strings) if s.strip().upper() in SEMAPHORE_WAIT_OPCODES}
    if waits:
        whole = np.isin(opcode, list(waits))
        wait = np.where(whole, duration, wait)
    wait = np.clip(wait, 0, duration)
    order = np.argsort(start[keep], kind="stable")
    pick = np.flatnonzero(keep)[order]
    return Instructions(
        start[pick],
        duration[pick],
        engine[pick],
        pcore[pick].astype(np.int16),
        wait[pick],
        opcode[pick],
        hlo[pick],
        nki[pick],
        strings,
    )


# -- legacy JSON ------------------------------------------------------------------


class _JsonInstruction(msgspec.Struct, gc=False):
    timestamp: Any = None
    duration: Any = None
    label: Any = None
    subgroup: Any = None
    engine: Any = None
    opcode: Any = None
    hlo_name: Any = None
    nki_source_location: Any = None
    pcore_idx: Any = None
    evt_wait_time_ns: Any = None


class _FastInstruction(msgspec.Struct, gc=False):
    """The common case, decoded without per-value coercion; a chunk that does not fit
    it (a string timestamp, a NaN, a list) is decoded again leniently."""

    timestamp: int
    duration: int
    label: str | None = None
    subgroup: str | None = None
    engine: str | None = None
    opcode: str | None = None
    hlo_name: str | None = None
    nki_source_location: str | None = None
    pcore_idx: int | None = None
    evt_wait_time_ns: int | None = None


class _JsonDma(msgspec.Struct, gc=False):
    timestamp: Any = None
    duration: Any = None
    transfer_size: Any = None  # what explorer ≤2.30 writes
    transfer_bytes: Any = None  # the Parquet column's name


class _JsonCc(msgspec.Struct, gc=False):
    timestamp: Any = None
    duration: Any = None
    operation: Any = ""
    input_size: Any = None


class _JsonDevice(msgspec.Struct):
    instruction: msgspec.Raw = msgspec.Raw(b"null")  # decoded in chunks, never all at once
    cc_ops: Any = None
    summary: Any = None
    metadata: Any = None
    dma: Any = None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def read_device_json(path: Path, listing: dict[str, tuple[int, int]] | None = None) -> DeviceProfile:
    """One device JSON; ``listing`` (the system profile's ``device_profile_list``) names
    its NeuronCore when its file name or metadata does not."""
    try:
        doc, replaced = decode_lenient(path.read_bytes(), _JsonDevice)
    except (msgspec.DecodeError, msgspec.ValidationError) as error:
        raise InputError(f"{path}: not a Neuron Explorer device profile ({error})") from None
    missing = MissingCounts()
    missing.note("NaN/Infinity values read as missing", replaced)
    strings = Interner()
    strings[""]
    columns = _instruction_columns(doc.instruction, strings, missing)
    start, duration, engine, pcore, wait, opcode, hlo, nki = columns
    summary_doc = doc.summary[0] if isinstance(doc.summary, list) and doc.summary else doc.summary
    summary = summary_doc if isinstance(summary_doc, dict) else {}
    metadata = doc.metadata if isinstance(doc.metadata, dict) else {}
    core, model_id = _identify(path, listing or {}, metadata)
    dma = items_as(doc.dma, _JsonDma, missing, "dma")
    cc = items_as(doc.cc_ops, _JsonCc, missing, "cc_ops")
    dma_start = np.array([int_or_missing(d.timestamp) for d in dma], dtype=np.int64)
    dma_ok = dma_start != NONE
    cc_start = np.array([int_or_missing(c.timestamp) for c in cc], dtype=np.int64)
    cc_ok = cc_start != NONE
    missing.note(
        "DMA or collective rows without a usable timestamp were dropped", int((~dma_ok).sum() + (~cc_ok).sum())
    )
    instructions = _build(start, duration, engine, pcore, wait, opcode, hlo, nki, list(strings.keys()), missing)
    return DeviceProfile(
        label=path.stem,
        nc_idx=core,
        model_id=model_id,
        format="json",
        path=str(path),
        instructions=instructions,
        dma_start=dma_start[dma_ok],
        dma_duration=np.array([max(int_or_missing(d.duration), 0) for d in dma], dtype=np.int64)[dma_ok],
        dma_bytes=np.array(
            [max(int_or_missing(d.transfer_size if d.transfer_size is not None else d.transfer_bytes), 0) for d in dma],
            dtype=np.int64,
        )[dma_ok],
        cc_start=cc_start[cc_ok],
        cc_duration=np.array([max(int_or_missing(c.duration), 0) for c in cc], dtype=np.int64)[cc_ok],
        cc_bytes=np.array([max(int_or_missing(c.input_size), 0) for c in cc], dtype=np.int64)[cc_ok],
        cc_operation=[_text(c.operation) for c, ok in zip(cc, cc_ok.tolist()) if ok],
        first_hw_timestamp=int_or_missing(metadata.get("first_hw_timestamp")),
        summary=summary,
        metadata=metadata,
        warnings=missing.warnings(path.name),
    )


_CHUNK = 50_000  # instructions decoded to objects at a time


def _instruction_columns(raw: msgspec.Raw, strings: Interner, missing: MissingCounts) -> tuple[np.ndarray, ...]:
    """The ``instruction`` array as columns, decoded ``_CHUNK`` rows at a time from the
    raw bytes of each element (a 600 MB device file must not become millions of
    Python objects at once)."""
    elements: list[msgspec.Raw] = []
    head = bytes(memoryview(raw)[:1])
    if head == b"[":
        elements = msgspec.json.decode(raw, type=list[msgspec.Raw])
    elif head != b"n":  # anything but null
        missing.note("instruction list was not a list and was ignored")
    parts: list[tuple[np.ndarray, ...]] = []
    for at in range(0, len(elements), _CHUNK):
        chunk = elements[at : at + _CHUNK]
        body = b"[" + b",".join(bytes(e) for e in chunk) + b"]"
        try:
            fast = msgspec.json.decode(body, type=list[_FastInstruction])
        except msgspec.ValidationError:
            fast = None
        if fast is not None and all(0 <= r.timestamp <= _INT64_MAX and 0 <= r.duration <= _INT64_MAX for r in fast):
            try:
                parts.append(_fast_columns(fast, strings))
                continue
            except OverflowError:  # an index beyond 64 bits: the lenient path counts it
                pass
        try:
            rows = msgspec.json.decode(body, type=list[_JsonInstruction])
        except msgspec.ValidationError:
            rows = items_as(msgspec.json.decode(body), _JsonInstruction, missing, "instruction")
        parts.append(
            (
                np.array([int_or_missing(r.timestamp) for r in rows], dtype=np.int64),
                np.array([int_or_missing(r.duration) for r in rows], dtype=np.int64),
                np.array([engine_of(r.engine or r.label or r.subgroup) for r in rows], dtype=np.uint8),
                np.array([int_or_missing(r.pcore_idx) for r in rows], dtype=np.int64),
                np.array([max(int_or_missing(r.evt_wait_time_ns), 0) for r in rows], dtype=np.int64),
                np.array([strings[_text(r.opcode)] for r in rows], dtype=np.int32),
                np.array([strings[_text(r.hlo_name)] for r in rows], dtype=np.int32),
                np.array([strings[_text(r.nki_source_location)] for r in rows], dtype=np.int32),
            )
        )
        del rows
    if not parts:
        empty_i64 = np.empty(0, np.int64)
        empty_i32 = np.empty(0, np.int32)
        return empty_i64, empty_i64, np.empty(0, np.uint8), empty_i64, empty_i64, empty_i32, empty_i32, empty_i32
    return tuple(np.concatenate([p[k] for p in parts]) for k in range(8))


_INT64_MAX = 2**63 - 1


def _fast_columns(rows: list[_FastInstruction], strings: Interner) -> tuple[np.ndarray, ...]:
    n = len(rows)
    engines: dict[str | None, int] = {}

    def engine(row: _FastInstruction) -> int:
        key = row.engine or row.label or row.subgroup
        found = engines.get(key)
        if found is None:
            found = engines[key] = engine_of(key)
        return found

    return (
        np.fromiter((r.timestamp for r in rows), np.int64, n),
        np.fromiter((r.duration for r in rows), np.int64, n),
        np.fromiter((engine(r) for r in rows), np.uint8, n),
        np.fromiter((NONE if r.pcore_idx is None else r.pcore_idx for r in rows), np.int64, n),
        np.fromiter((max(r.evt_wait_time_ns or 0, 0) for r in rows), np.int64, n),
        np.fromiter((strings[r.opcode or ""] for r in rows), np.int32, n),
        np.fromiter((strings[r.hlo_name or ""] for r in rows), np.int32, n),
        np.fromiter((strings[r.nki_source_location or ""] for r in rows), np.int32, n),
    )


def _identify(path: Path, listing: dict[str, tuple[int, int]], metadata: dict[str, Any]) -> tuple[int, int]:
    """(logical NeuronCore, model id) of a device file: the system profile's listing,
    then the file name (``…_nc_<N>_session_<S>`` / ``…_model_<id>``), then metadata."""
    core, model = listing.get(path.stem, listing.get(path.name, (NONE, NONE)))
    name_core = _CORE_FILE.search(path.name)
    if core == NONE and name_core:
        core = int(name_core.group("nc"))
    name_model = _MODEL_FILE.search(path.name)
    if model == NONE and name_model:
        model = int(name_model.group("id"))
    if core == NONE:
        core = int_or_missing(metadata.get("neuroncore_idx"))
    if model == NONE and not name_core:
        model = int_or_missing(metadata.get("model_id"))
    return core, model


# -- Parquet ------------------------------------------------------------------------


def _start_and_duration(table: Any) -> tuple[np.ndarray, np.ndarray]:
    """``start_ts`` and ``duration_ns`` (else ``end_ts`` − start), -1 where unusable
    (counted where the rows are built)."""
    start, _ = int_column(table, "start_ts")
    if "duration_ns" in table.schema.names:
        duration, _ = int_column(table, "duration_ns")
    else:
        end, _ = int_column(table, "end_ts")
        duration = np.where((end != NONE) & (start != NONE), end - start, NONE)
    return start, duration


def read_device_parquet(folder: Path, listing: dict[str, tuple[int, int]]) -> DeviceProfile:
    """``listing``: device_profile_name → (nc_id, model_id), from DeviceProfileList."""
    missing = MissingCounts()
    table = read_table(
        folder,
        "Instruction",
        ["start_ts", "duration_ns", "end_ts", "engine", "timeline_track", "pcore_idx", "opcode", "evt_wait_time_ns"],
        required=("start_ts", "duration_ns|end_ts"),
    )
    if table is None:
        raise InputError(f"{folder}: no Instruction table")
    start, duration = _start_and_duration(table)
    n = table.num_rows
    names = table.schema.names
    engine_column = "engine" if "engine" in names else "timeline_track" if "timeline_track" in names else None
    if engine_column:
        codes, values = text_codes(table, engine_column)
        lookup = np.array([engine_of(v) for v in values] + [ENGINES.index("other")], dtype=np.uint8)
        engine = lookup[codes]
    else:
        engine = np.full(n, ENGINES.index("other"), np.uint8)
    pcore = int_column(table, "pcore_idx")[0] if "pcore_idx" in names else np.full(n, NONE, np.int64)
    wait = (
        np.maximum(int_column(table, "evt_wait_time_ns")[0], 0)
        if "evt_wait_time_ns" in names
        else np.zeros(n, np.int64)
    )
    strings = [""]
    opcode = np.full(n, -1, np.int32)
    if "opcode" in names:
        codes, values = text_codes(table, "opcode")
        strings = ["", *values]
        opcode = np.where(codes >= 0, codes + 1, -1).astype(np.int32)
    unloaded = np.full(n, -1, dtype=np.int32)
    metadata = first_row(read_table(folder, "Metadata"))
    summary = first_row(read_table(folder, "Summary"))
    label = folder.name.removesuffix("@latest")
    profile_name = str(metadata.get("profile_name") or "")
    core, model_id = listing.get(label, listing.get(profile_name, (NONE, NONE)))
    if core == NONE:
        core = int_or_missing(metadata.get("neuroncore_idx"))
    dma_start, dma_duration, dma_bytes, dma_aggregation = _dma_packets(folder, missing)
    cc_start, cc_duration, cc_bytes, cc_operation = _collectives(folder, missing)
    dma_route, dma_routes = _dma_routes(folder, dma_aggregation, dma_start.size)
    exec_start, exec_end = _execution_info(folder)
    instructions = _build(start, duration, engine, pcore, wait, opcode, unloaded, unloaded, strings, missing)
    return DeviceProfile(
        label=label,
        nc_idx=core,
        model_id=model_id,
        format="parquet",
        path=str(folder),
        instructions=instructions,
        dma_start=dma_start,
        dma_duration=dma_duration,
        dma_bytes=dma_bytes,
        cc_start=cc_start,
        cc_duration=cc_duration,
        cc_bytes=cc_bytes,
        cc_operation=cc_operation,
        dma_route=dma_route,
        dma_routes=dma_routes,
        exec_start=exec_start,
        exec_end=exec_end,
        first_hw_timestamp=int_or_missing(metadata.get("first_hw_timestamp")),
        summary=summary,
        metadata=metadata,
        warnings=missing.warnings(f"{label}/Instruction"),
        text_loaded=False,
    )


def _dma_packets(folder: Path, missing: MissingCounts) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    table = read_table(
        folder,
        "DmaPacket",
        ["start_ts", "duration_ns", "end_ts", "transfer_bytes", "transfer_size", "packet_aggregation_id"],
    )
    empty = np.empty(0, np.int64)
    if table is None or "start_ts" not in table.schema.names or table.num_rows == 0:
        return empty, empty, empty, None
    if "duration_ns" not in table.schema.names and "end_ts" not in table.schema.names:
        return empty, empty, empty, None
    start, duration = _start_and_duration(table)
    names = table.schema.names
    size_column = (
        "transfer_bytes" if "transfer_bytes" in names else "transfer_size" if "transfer_size" in names else None
    )
    size = np.maximum(int_column(table, size_column)[0], 0) if size_column else np.zeros(start.size, np.int64)
    aggregation = int_column(table, "packet_aggregation_id")[0] if "packet_aggregation_id" in names else None
    ok = start != NONE
    missing.note("DMA packets without a usable timestamp were dropped", int((~ok).sum()))
    return start[ok], np.maximum(duration[ok], 0), size[ok], aggregation[ok] if aggregation is not None else None


def _collectives(folder: Path, missing: MissingCounts) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    table = read_table(folder, "CcOp", ["start_ts", "duration_ns", "end_ts", "operation", "input_size"])
    empty = np.empty(0, np.int64)
    if table is None or "start_ts" not in table.schema.names or table.num_rows == 0:
        return empty, empty, empty, []
    if "duration_ns" not in table.schema.names and "end_ts" not in table.schema.names:
        return empty, empty, empty, []
    start, duration = _start_and_duration(table)
    names = table.schema.names
    size = (
        np.maximum(int_column(table, "input_size")[0], 0) if "input_size" in names else np.zeros(start.size, np.int64)
    )
    operation = (
        [str(v or "") for v in table.column("operation").to_pylist()] if "operation" in names else [""] * start.size
    )
    ok = start != NONE
    return start[ok], np.maximum(duration[ok], 0), size[ok], [o for o, k in zip(operation, ok.tolist()) if k]


def _execution_info(folder: Path) -> tuple[np.ndarray, np.ndarray]:
    """ExecutionInfo: each execution's start and end relative to the profile start."""
    empty = np.empty(0, np.int64)
    table = read_table(folder, "ExecutionInfo")
    if table is None or table.num_rows == 0:
        return empty, empty
    names = table.schema.names
    start_name = next((c for c in ("execution_start_ts", "start_ts") if c in names), None)
    end_name = next((c for c in ("execution_end_ts", "end_ts") if c in names), None)
    if start_name is None or end_name is None:
        return empty, empty
    start, end = int_column(table, start_name)[0], int_column(table, end_name)[0]
    ok = (start != NONE) & (end != NONE) & (end >= start)
    order = np.argsort(start[ok], kind="stable")
    return start[ok][order], end[ok][order]


def _dma_routes(folder: Path, aggregation_ids: np.ndarray | None, packets: int) -> tuple[np.ndarray, list[str]]:
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
    at = np.minimum(np.searchsorted(ids, aggregation_ids), n - 1)
    return np.where(ids[at] == aggregation_ids, route_of_row[at], -1).astype(np.int32), routes.values_in_order()


def _read_parquet_details(folder: Path, start: int, end: int) -> Instructions:
    pq = require_pyarrow(str(folder))
    import pyarrow as pa

    wanted = [
        "start_ts",
        "duration_ns",
        "end_ts",
        "engine",
        "timeline_track",
        "pcore_idx",
        "evt_wait_time_ns",
        "opcode",
        "hlo_name",
        "nki_source_location",
    ]
    parts = []
    for file in table_files(folder, "Instruction"):
        try:
            names = pq.read_schema(file).names
            parts.append(
                pq.read_table(
                    file,
                    columns=[c for c in wanted if c in names],
                    filters=[("start_ts", ">=", start), ("start_ts", "<", end)],
                )
            )
        except (pa.ArrowException, OSError) as error:
            raise InputError(f"{file}: not a readable Parquet table ({error})") from None
    try:
        table = pa.concat_tables(parts, promote_options="default") if parts else None
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        table = None
    data = table.to_pydict() if table is not None else {}
    strings = Interner()
    strings[""]
    n = len(data.get("start_ts", []))
    start_col = np.array([int_or_missing(v) for v in data.get("start_ts", [])], dtype=np.int64)
    if "duration_ns" in data:
        duration = np.array([int_or_missing(v) for v in data["duration_ns"]], dtype=np.int64)
    else:
        duration = np.array([int_or_missing(v) for v in data.get("end_ts", [])], dtype=np.int64) - start_col
    engines = data.get("engine") or data.get("timeline_track") or [None] * n

    def ids(column: str) -> np.ndarray:
        return np.array([strings[_text(v)] for v in data.get(column, [None] * n)], dtype=np.int32)

    return _build(
        start_col,
        duration,
        np.array([engine_of(v) for v in engines], dtype=np.uint8),
        np.array([int_or_missing(v) for v in data.get("pcore_idx", [None] * n)], dtype=np.int64),
        np.array([max(int_or_missing(v), 0) for v in data.get("evt_wait_time_ns", [None] * n)], dtype=np.int64),
        ids("opcode"),
        ids("hlo_name"),
        ids("nki_source_location"),
        list(strings.keys()),
        MissingCounts(),
    )
