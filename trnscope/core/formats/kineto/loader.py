"""Read a Kineto / Chrome-trace JSON file into the columnar model.

The ``traceEvents`` array is cut into chunks (``jsonscan``) that are decoded with
msgspec and turned into columns (``events``).  Large files are decoded by several
processes at once: each starts at a heuristic cut, and the cut is accepted only when
the process before it decodes up to exactly there (see ``jsonscan``), so a wrong
guess costs time, never events.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from trnscope.core.base.errors import InputError
from trnscope.core.base.jsondepth import MAX_DEPTH
from trnscope.core.formats.gzip_copy import GZIP_MAGIC
from trnscope.core.formats.kineto import jsonscan
from trnscope.core.formats.kineto.decode import CHUNK_BYTES, RangeResult, decode_sequentially
from trnscope.core.formats.kineto.header import decode_header, detect_device_kind
from trnscope.core.formats.kineto.merge import (
    MergedColumns,
    assign_roles,
    mark_device_threads,
    merge_ranges,
    pair_begin_end,
    thread_table,
)
from trnscope.core.formats.options import DEFAULT, LoadOptions
from trnscope.core.formats.source import PlainSource, Progress, open_plain
from trnscope.core.model.roles import Role
from trnscope.core.model.trace import EventColumns, LoadStats, Trace
from trnscope.core.model.vocab import PH_INSTANT, PH_X

PARALLEL_MIN_BYTES = 16 << 20


def default_workers() -> int:
    """Processes a big file is decoded by, this one included: one per core, up to 8."""
    return max(1, min(os.cpu_count() or 1, 8))


def decodes_in_parallel(path: Path, workers: int | None) -> bool:
    """Whether a first load of ``path`` would decode it in several processes: at least
    ``PARALLEL_MIN_BYTES`` of plain JSON — for a gzip file, as its trailer states (the
    size modulo 4 GiB; a compressed file that big is big enough anyway)."""
    if (default_workers() if workers is None else workers) < 2:
        return False
    try:
        size = path.stat().st_size
        if size >= PARALLEL_MIN_BYTES:
            return True
        with open(path, "rb") as fh:
            if fh.read(2) != GZIP_MAGIC or size < 18:  # a gzip header and trailer at the least
                return False
            fh.seek(size - 4)
            return int.from_bytes(fh.read(4), "little") >= PARALLEL_MIN_BYTES
    except OSError:
        return False


SKIPPABLE = {"python": ("python_function",)}


def start_decode_ahead(path: Path, *, reuse: bool, workers: int | None) -> bool:
    """Begin a first load's parallel decode of ``path`` before the caller imports what
    comes after the load (the command line: the analysis and output modules, ~25 ms,
    while the second core waits once the read-ahead child has inflated the file).  The
    opened file and the running decode are kept for the load that follows
    (``source.remember_opened``, ``parallel.start_decode_ahead``); a decode that no load
    takes is stopped at exit.  Only when a first open is certain and the copy is ready:
    a gzip file whose read-ahead child has written a fresh copy, or a plain file read
    without the cache (``reuse`` false); never waits.  False when nothing was started."""
    count = default_workers() if workers is None else max(1, workers)
    if count < 2:
        return False
    try:
        info = path.stat()
        with open(path, "rb") as fh:
            gzipped = fh.read(2) == GZIP_MAGIC
        if gzipped:
            from trnscope.core.formats import inflate_ahead

            if not inflate_ahead.wrote_fresh_copy(info, keep=reuse):
                return False
        elif reuse or info.st_size < PARALLEL_MIN_BYTES:
            return False
        source = open_plain(path, reuse=reuse)
    except (OSError, InputError):
        return False
    from trnscope.core.formats.source import remember_opened

    remember_opened(info, reuse, source)
    if not source.plain_path or len(source.buffer) < PARALLEL_MIN_BYTES:
        return False
    try:
        _kind, _array_open, opening = _events_array(path, source.buffer)
    except InputError:  # said by the load itself, in its own words
        return False
    if opening.kind is not jsonscan.Opening.FIRST_EVENT:
        return False
    from trnscope.core.formats.kineto.parallel import start_decode_ahead as start_parallel

    return start_parallel(source, opening.index, count, CHUNK_BYTES)


class _Decoded(msgspec.Struct):
    """What decoding the events array gave: its ranges' results and how many workers."""

    results: list[RangeResult]
    workers: int

    def total(self, field: str) -> int:
        return sum(getattr(r.report, field) for r in self.results)


# Other profilers' JSON that users open by mistake, by a key near the start, and what to say
_OTHER_PROFILERS = (
    (b'"rocprofiler-sdk-tool"', " (a rocprofv3 results file: ROCm's own profiler, not torch.profiler)"),
)


def _what_array(first: bytes) -> str:
    """What a top-level JSON array that holds no event objects holds, by its first byte."""
    if first == b"[":
        # [[time, action, bytes, category], …]: what profile.export_memory_timeline writes
        # to a .raw.gz (HTA's memory analysis reads it), not the trace it was made from
        return (
            "a JSON array of arrays, not of trace events — a memory timeline (export_memory_timeline's "
            ".raw.gz?), not a PyTorch profiler trace; open the trace it was made from"
        )
    held = "strings" if first == b'"' else "numbers" if first[:1].isdigit() or first == b"-" else "values"
    return f"a JSON array of {held}, not of trace events; not a PyTorch profiler trace"


def _events_array(path: Path, buf: Any) -> tuple[str, int, jsonscan.ArrayOpening]:
    """Where the events are: the kind of document, the array's "[" and its first event."""
    try:
        kind, array_open = jsonscan.find_events_array(buf)
    except LookupError:
        known = next((what for key, what in _OTHER_PROFILERS if key in bytes(buf[:4096])), "")
        raise InputError(
            f"{path}: JSON object without a traceEvents array{known}; not a PyTorch profiler trace"
        ) from None
    except ValueError as error:
        raise InputError(f"{path}: {error}; not a PyTorch profiler trace") from None
    opening = jsonscan.array_opening(buf, array_open)
    if opening.kind is jsonscan.Opening.NOT_OBJECTS:
        if kind == "array":
            raise InputError(f"{path}: {_what_array(bytes(buf[array_open + 1 : array_open + 64]).lstrip()[:1])}")
        raise InputError(f"{path}: traceEvents is not a list of event objects; not a PyTorch profiler trace")
    return kind, array_open, opening


def _decode(
    source: PlainSource,
    opening: jsonscan.ArrayOpening,
    workers: int | None,
    progress: Progress | None,
    is_cancelled: Callable[[], bool],
    chunk_bytes: int,
) -> _Decoded:
    """The events array decoded: by worker processes for a big plain file, else here."""
    if opening.kind is jsonscan.Opening.TRUNCATED:
        return _Decoded([RangeResult([], jsonscan.ScanReport(array_end=-1))], 1)
    if opening.kind is jsonscan.Opening.EMPTY:
        return _Decoded([RangeResult([], jsonscan.ScanReport(array_end=opening.index))], 1)
    count = default_workers() if workers is None else max(1, workers)
    if count > 1 and bool(source.plain_path) and len(source.buffer) >= PARALLEL_MIN_BYTES:
        # (imported here: multiprocessing and its pool are ~7 ms of a small trace's start)
        from trnscope.core.formats.kineto.parallel import decode_in_parallel

        in_parallel = decode_in_parallel(source, opening.index, count, progress, is_cancelled, chunk_bytes)
        if in_parallel is not None:
            return _Decoded(in_parallel, count)
    return _Decoded(decode_sequentially(source, opening.index, progress, is_cancelled, chunk_bytes), 1)


def _no_events(path: Path, decoded: _Decoded, merged: MergedColumns) -> InputError:
    """Why a trace gave no usable event, in one line."""
    if decoded.total("lost_events"):
        return InputError(f"{path}: no complete event could be read ({decoded.total('lost_bytes'):,} bytes unreadable)")
    if merged.invalid or merged.skipped:
        dropped = [
            f"{merged.invalid:,} without a usable ts/dur" if merged.invalid else "",
            f"{merged.skipped:,} skipped by --skip" if merged.skipped else "",
        ]
        return InputError(f"{path}: no usable event ({'; '.join(d for d in dropped if d)})")
    return InputError(f"{path}: the trace holds no events")


def _origin(columns: EventColumns, base: Any) -> tuple[int, bool, int]:
    """(origin in ns, whether it is Unix time, the file's own zero subtracted from ts):
    ts become nanoseconds from the first timed event."""
    timed = ((columns.ph == PH_X) | (columns.ph == PH_INSTANT)) & (columns.role != int(Role.PROFILER))
    origin_file = (
        int(columns.ts[timed].min()) if timed.any() else int(columns.ts[columns.ts > np.iinfo(np.int64).min].min())
    )
    if isinstance(base, (int, float)) and math.isfinite(base) and base > 0:
        return int(base) + origin_file, True, origin_file
    if origin_file > 10**18:  # absolute microseconds since the epoch, ×1000
        return origin_file, True, origin_file
    return origin_file, False, origin_file


def _load_warnings(  # noqa: C901 - one sentence per kind of loss, each conditional
    source: PlainSource, decoded: _Decoded, merged: MergedColumns, events: int, header_problem: str, second_array: bool
) -> list[str]:
    """What the load lost, coerced or repaired, one sentence each."""
    report = decoded.results[-1].report
    lost_events, lost_bytes = decoded.total("lost_events"), decoded.total("lost_bytes")
    flattened = decoded.total("flattened_chunks")
    warnings: list[str] = []
    if source.gzip_damage:
        warnings.append(f"{source.gzip_damage}: loaded the events before the damage")
    if report.array_end < 0:
        warnings.append(
            f"trace is truncated: the events array never closes; loaded {events:,} complete events, "
            f"lost {lost_bytes:,} bytes at the end"
        )
    elif lost_events:
        warnings.append(f"{lost_events:,} malformed events skipped ({lost_bytes:,} bytes)")
    if merged.invalid:
        warnings.append(f"{merged.invalid:,} events without a usable ts/dur skipped")
    if merged.bad_values:
        warnings.append(f"{merged.bad_values:,} timestamps or durations had a wrong type and were coerced")
    if decoded.total("lenient_chunks"):
        warnings.append("some event fields had unexpected JSON types and were converted or ignored")
    if flattened:
        warnings.append(
            f"values nested deeper than {MAX_DEPTH} levels (events or their args) were dropped "
            f"in {flattened:,} chunk(s); the events themselves were kept"
        )
    if decoded.total("repaired_chunks"):
        warnings.append("invalid UTF-8 bytes in names were replaced with U+FFFD")
    if header_problem:
        warnings.append(header_problem)
    if second_array:
        warnings.append("the file has a second top-level traceEvents array after the first; only the first was read")
    return warnings


def load_kineto(
    path: Path,
    options: LoadOptions = DEFAULT,
    *,
    progress: Progress | None = None,
    cancelled: Callable[[], bool] | None = None,
    chunk_bytes: int = CHUNK_BYTES,
    source: PlainSource | None = None,
) -> Trace:
    """A Kineto (or bare Chrome-array) trace: find the events array, decode it (in
    parallel when big), merge the ranges into columns, give events their roles, read
    the header, count what was lost."""
    started = time.perf_counter()
    is_cancelled = cancelled or (lambda: False)
    if source is None:
        if decodes_in_parallel(path, options.workers):
            # imported now, while a child may still be decompressing the file (inflate_ahead)
            import trnscope.core.formats.kineto.parallel  # noqa: F401
        source = open_plain(path, progress, is_cancelled, reuse=options.use_cache)
    buf = source.buffer
    kind, array_open, opening = _events_array(path, buf)
    decoded = _decode(source, opening, options.workers, progress, is_cancelled, chunk_bytes)
    report = decoded.results[-1].report
    skip_cats = frozenset(cat for key in options.skip for cat in SKIPPABLE.get(key, (key,)))
    merged = merge_ranges(decoded.results, skip_cats)
    columns = merged.columns
    if len(columns) == 0:
        raise _no_events(path, decoded, merged)
    assign_roles(columns, merged.cats, merged.names)
    paired = pair_begin_end(columns)
    if paired is not None:
        columns = columns.take(paired)
        merged.source_index = merged.source_index[paired]
    header, metadata, header_problem = decode_header(buf, kind, array_open, report.array_end)
    threads, columns.thread = thread_table(merged, columns)
    mark_device_threads(threads, columns)
    origin_ns, is_unix, origin_file = _origin(columns, header.baseTimeNanoseconds)
    columns.ts -= origin_file
    second_array = (
        kind == "object"
        and report.array_end >= 0
        and jsonscan.top_level_array(buf, b"traceEvents", report.array_end + 1) >= 0
    )
    warnings = _load_warnings(source, decoded, merged, len(columns), header_problem, second_array)
    props = header.deviceProperties or []
    stats = LoadStats(
        path=str(path),
        file_bytes=source.file_bytes,
        plain_bytes=len(buf),
        compressed=source.compressed,
        events=len(columns),
        seconds=time.perf_counter() - started,
        lost_events=decoded.total("lost_events"),
        lost_bytes=decoded.total("lost_bytes"),
        truncated=report.array_end < 0 or bool(source.gzip_damage),
        invalid_events=merged.invalid,
        bad_values=merged.bad_values,
        skipped_events=merged.skipped,
        folded_metadata=merged.folded_meta,
        workers=decoded.workers,
    )
    trace = Trace(
        source=str(path),
        format="kineto" if kind == "object" else "chrome-array",
        device_kind=detect_device_kind(merged.cats, merged.names, header, metadata),
        device_name=str(props[0].get("name", "")) if props and isinstance(props[0], dict) else "",
        events=columns,
        names=merged.names,
        cats=merged.cats,
        shapes=merged.shapes,
        stacks=merged.stacks,
        threads=threads,
        chunks=merged.chunks,
        origin_ns=origin_ns,
        origin_is_unix=is_unix,
        stats=stats,
        metadata=metadata,
        warnings=warnings,
        synthetic=bool(header.trnscope) or "synthetic" in str(metadata.get("trnscope_synthetic", "")).lower(),
        plain_path=source.plain_path,
        source_index=merged.source_index,
        buffer=None if source.plain_path else buf,
    )
    if source.plain_path:
        source.close()
    return trace
