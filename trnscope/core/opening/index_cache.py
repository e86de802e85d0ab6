"""Parsed-index cache: a loaded and linked trace, stored so the next open is instant.

One file per (input file identity + content fingerprint + load options + format
version) under ``<user cache>/index``.  Layout: magic, header length, a msgpack header
(every non-array field, plus name/dtype/shape/offset of each array and a CRC-32 of
the payload), then the arrays, 64-byte aligned.  Reading maps the file and builds
numpy views on it without copying; a wrong magic, version, key, size or checksum
means the file is ignored and rebuilt, never trusted.  Writes go through a
temporary file and ``os.replace``, so concurrent openers see a whole file or none.
"""

from __future__ import annotations

import mmap
import os
import struct
import zlib
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.flops import FlopsPerRow, flops_of_trace
from trnscope.core.analysis.memory import MemoryRecords, memory_records
from trnscope.core.analysis.optable import EventTimes
from trnscope.core.base.cachedir import enforce_cap, fingerprint, name_for, touch, writable_dir
from trnscope.core.link.linker import LinkReport, Links, forward_links
from trnscope.core.model.trace import EventColumns, Trace

MAGIC = b"TRNSCOPE-INDEX\x00\x02"
FORMAT_VERSION = 15  # 15: LinkMethod.ENCLOSING_OP, LinkReport.by_enclosing_op; 14: the op tree apart from the host tree (in_op_tree, op_depth); 13: a process label equal to its name is not repeated; 12: repeated metadata folded across chunks too; 11: repeated metadata events are no rows; 10: LinkReport.before_window; 9: the [memory] records' bytes and FLOPs per row
_ALIGN = 64
_LINK_ARRAYS = (
    "in_tree",
    "parent",
    "raw_parent",
    "depth",
    "in_op_tree",
    "op_depth",
    "merged_into",
    "device_op",
    "device_launch",
    "link_method",
    "forward_of",
)


class ArraySpec(msgspec.Struct, array_like=True):
    name: str
    dtype: str
    shape: list[int]
    offset: int
    nbytes: int


# Every Trace field but the arrays (stored as arrays), the caller's label and the
# in-memory handles; derived from Trace so that a new field is cached without a change here.
_NOT_IN_HEADER = frozenset({"events", "source_index", "buffer", "backend", "label"})
CachedTraceFields = msgspec.defstruct(
    "CachedTraceFields",
    [(field.name, field.type) for field in msgspec.structs.fields(Trace) if field.name not in _NOT_IN_HEADER],
)


class ExtrasHeader(msgspec.Struct, frozen=True):
    """Which figures read from ``args`` the file holds (arrays ``memory.*``, ``flops.*``)."""

    memory: bool = False  # the [memory] records' bytes (False: the trace has none)
    flops: bool = False  # FLOPs per op row (False: the trace has no shapes of a counted op)
    flops_counted_rows: int = 0
    flops_unknown_rows: int = 0
    flops_without_concrete: int = 0


class CacheHeader(msgspec.Struct):
    version: int
    key: str
    payload_bytes: int
    payload_crc: int
    arrays: list[ArraySpec]
    trace: msgspec.Raw  # CachedTraceFields, msgpack: decoded with that type on load
    link_report: LinkReport
    extras: ExtrasHeader = ExtrasHeader()


class Cached(msgspec.Struct):
    """What a cache file gives back."""

    trace: Trace
    links: Links
    times: EventTimes | None
    memory: MemoryRecords | None
    flops: FlopsPerRow | None


def cache_key(path: Path, options: dict[str, Any]) -> str:
    return f"v{FORMAT_VERSION}:{fingerprint(path)}:{msgspec.json.encode(options).decode()}"


def _cache_file(key: str) -> Path | None:
    folder = writable_dir("index")
    if folder is None:
        return None
    return folder / (name_for(key) + ".idx")


def _arrays_of(analysis: Analysis) -> tuple[dict[str, np.ndarray], ExtrasHeader]:
    trace, links = analysis.trace, analysis.links
    arrays = {f"events.{f}": getattr(trace.events, f) for f in trace.events.__struct_fields__}
    if trace.source_index is not None:
        arrays["source_index"] = trace.source_index
    forward_links(trace, links)
    for name in _LINK_ARRAYS:
        arrays[f"links.{name}"] = getattr(links, name)
    for name in EventTimes.__struct_fields__:
        arrays[f"times.{name}"] = getattr(analysis.times, name)
    # What only the args hold is read now, after the first result, so that no later
    # open (nor a later column of this one) reads every record again.
    memory = memory_records(analysis)
    if memory is not None:
        for name in MemoryRecords.__struct_fields__:
            arrays[f"memory.{name}"] = getattr(memory, name)
    flops = flops_of_trace(analysis)
    if flops is not None:
        rows = np.flatnonzero(flops.flops != 0)
        arrays["flops.rows"], arrays["flops.values"] = rows, flops.flops[rows]
    return arrays, ExtrasHeader(
        memory=memory is not None,
        flops=flops is not None,
        flops_counted_rows=flops.counted_rows if flops is not None else 0,
        flops_unknown_rows=flops.unknown_rows if flops is not None else 0,
        flops_without_concrete=flops.without_concrete if flops is not None else 0,
    )


def store(path: Path, options: dict[str, Any], analysis: Analysis) -> Path | None:
    """Write the cache entry for ``path``; returns where, or None if it could not."""
    key = cache_key(path, options)
    target = _cache_file(key)
    if target is None:
        return None
    specs: list[ArraySpec] = []
    blobs: list[bytes | memoryview] = []
    offset = 0
    crc = 0
    arrays, extras = _arrays_of(analysis)
    trace, links = analysis.trace, analysis.links
    for name, array in arrays.items():
        data = np.ascontiguousarray(array)
        raw = data.data.cast("B") if data.size else memoryview(b"")
        pad = (-offset) % _ALIGN
        if pad:
            blobs.append(b"\x00" * pad)
            crc = zlib.crc32(b"\x00" * pad, crc)
            offset += pad
        specs.append(ArraySpec(name, data.dtype.str, list(data.shape), offset, data.nbytes))
        blobs.append(raw)
        crc = zlib.crc32(raw, crc)
        offset += data.nbytes
    header = CacheHeader(
        version=FORMAT_VERSION,
        key=key,
        payload_bytes=offset,
        payload_crc=crc,
        arrays=specs,
        trace=msgspec.Raw(
            msgspec.msgpack.encode(
                CachedTraceFields(**{f: getattr(trace, f) for f in CachedTraceFields.__struct_fields__})
            )
        ),
        link_report=links.report,
        extras=extras,
    )
    try:
        head = msgspec.msgpack.encode(header)
    except (TypeError, msgspec.EncodeError):
        return None
    # the header (which holds the payload's CRC) has a CRC of its own: every byte of the
    # file is checked before any of it is believed
    prefix = MAGIC + struct.pack("<QI", len(head), zlib.crc32(head)) + head
    prefix += b"\x00" * ((-len(prefix)) % _ALIGN)
    import tempfile  # (with shutil and random, ~2.8 ms: only a load that writes its index needs it)

    try:
        handle, temp = tempfile.mkstemp(dir=target.parent, prefix=".idx-", suffix=".tmp")
        try:
            with os.fdopen(handle, "wb") as fh:
                fh.write(prefix)
                for blob in blobs:
                    fh.write(blob)
            os.replace(temp, target)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
    except OSError:
        return None
    enforce_cap(keep=target)
    return target


def present(path: Path, options: dict[str, Any]) -> bool:
    """Whether an index for ``path`` is stored (``load`` still checks it)."""
    target = _cache_file(cache_key(path, options))
    return target is not None and target.exists()


def load(path: Path, options: dict[str, Any]) -> Cached | None:
    """The cached trace and links for ``path``, or None when absent or not trustworthy."""
    key = cache_key(path, options)
    target = _cache_file(key)
    if target is None or not target.exists():
        return None
    try:
        with open(target, "rb") as fh:
            buffer = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None
    try:
        found = _decode(buffer, key)
    except (ValueError, KeyError, TypeError, struct.error, msgspec.DecodeError, msgspec.ValidationError):
        return None
    if found is not None:
        touch(target)  # least recently used goes first when the cache is over its cap
    return found


def _decode(buffer: mmap.mmap, key: str) -> Cached | None:
    if buffer[: len(MAGIC)] != MAGIC:
        return None
    head_len, head_crc = struct.unpack_from("<QI", buffer, len(MAGIC))
    start = len(MAGIC) + struct.calcsize("<QI")
    head = buffer[start : start + head_len]
    if len(head) != head_len or zlib.crc32(head) != head_crc:
        return None
    header = msgspec.msgpack.decode(head, type=CacheHeader)
    if header.version != FORMAT_VERSION or header.key != key:
        return None
    payload_start = start + head_len
    payload_start += (-payload_start) % _ALIGN
    if len(buffer) - payload_start != header.payload_bytes:
        return None
    payload = memoryview(buffer)[payload_start:]
    if zlib.crc32(payload) != header.payload_crc:
        return None
    arrays: dict[str, np.ndarray] = {}
    for spec in header.arrays:
        count = int(np.prod(spec.shape)) if spec.shape else 1
        arrays[spec.name] = np.frombuffer(payload, dtype=np.dtype(spec.dtype), count=count, offset=spec.offset).reshape(
            spec.shape
        )
    events = EventColumns(**{f: arrays[f"events.{f}"] for f in EventColumns.__struct_fields__})
    trace = Trace(
        events=events,
        source_index=arrays.get("source_index"),
        **msgspec.structs.asdict(msgspec.msgpack.decode(header.trace, type=CachedTraceFields)),
    )
    trace.stats.from_cache = True
    links = Links(**{name: arrays[f"links.{name}"] for name in _LINK_ARRAYS}, report=header.link_report)
    times = None
    if all(f"times.{name}" in arrays for name in EventTimes.__struct_fields__):
        times = EventTimes(**{name: arrays[f"times.{name}"] for name in EventTimes.__struct_fields__})
    extras = header.extras
    memory = (
        MemoryRecords(**{name: arrays[f"memory.{name}"] for name in MemoryRecords.__struct_fields__})
        if extras.memory
        else None
    )
    flops = None
    if extras.flops:
        per_row = np.zeros(len(events), dtype=np.int64)  # zero pages: only the counted rows are touched
        per_row[arrays["flops.rows"]] = arrays["flops.values"]
        flops = FlopsPerRow(
            per_row, extras.flops_counted_rows, extras.flops_unknown_rows, extras.flops_without_concrete
        )
    return Cached(trace, links, times, memory, flops)
