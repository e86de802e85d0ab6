"""Read a Kineto / Chrome-trace JSON file into the columnar model.

The ``traceEvents`` array is cut into chunks (``jsonscan``) that are decoded with
msgspec and turned into columns (``events``).  Large files are decoded by several
processes at once: each starts at a heuristic cut, and the cut is accepted only when
the process before it decodes up to exactly there (see ``jsonscan``), so a wrong
guess costs time, never events.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from trnscope.core.base.errors import InputError
from trnscope.core.base.jsondepth import MAX_DEPTH
from trnscope.core.formats.kineto import jsonscan
from trnscope.core.formats.kineto.decode import CHUNK_BYTES, RangeResult, decode_sequentially
from trnscope.core.formats.kineto.header import decode_header, detect_device_kind
from trnscope.core.formats.kineto.merge import (
    assign_roles,
    mark_device_threads,
    merge_ranges,
    pair_begin_end,
    thread_table,
)
from trnscope.core.formats.kineto.parallel import decode_in_parallel, default_workers
from trnscope.core.formats.options import DEFAULT, LoadOptions
from trnscope.core.formats.source import PlainSource, Progress, open_plain
from trnscope.core.model.roles import Role
from trnscope.core.model.trace import LoadStats, Trace
from trnscope.core.model.vocab import PH_INSTANT, PH_X

PARALLEL_MIN_BYTES = 16 << 20


SKIPPABLE = {"python": ("python_function",)}


def load_kineto(
    path: Path,
    options: LoadOptions = DEFAULT,
    *,
    progress: Progress | None = None,
    cancelled: Callable[[], bool] | None = None,
    chunk_bytes: int = CHUNK_BYTES,
    source: PlainSource | None = None,
) -> Trace:
    started = time.perf_counter()
    is_cancelled = cancelled or (lambda: False)
    skip, workers = options.skip, options.workers
    if source is None:
        source = open_plain(path, progress, is_cancelled, reuse=options.use_cache)
    buf = source.buffer
    try:
        kind, array_open = jsonscan.find_events_array(buf)
    except LookupError:
        raise InputError(f"{path}: JSON object without a traceEvents array; not a PyTorch profiler trace") from None
    except ValueError as error:
        raise InputError(f"{path}: {error}; not a PyTorch profiler trace") from None
    opening = jsonscan.array_opening(buf, array_open)
    if opening.kind is jsonscan.Opening.NOT_OBJECTS:
        raise InputError(f"{path}: traceEvents is not a list of event objects; not a PyTorch profiler trace")
    first = opening.index
    workers = default_workers() if workers is None else max(1, workers)
    parallel = workers > 1 and bool(source.plain_path) and len(buf) >= PARALLEL_MIN_BYTES
    if opening.kind is jsonscan.Opening.TRUNCATED:
        results = [RangeResult([], jsonscan.ScanReport(array_end=-1))]
    elif opening.kind is jsonscan.Opening.EMPTY:
        results = [RangeResult([], jsonscan.ScanReport(array_end=opening.index))]
    else:
        in_parallel = (
            decode_in_parallel(source, first, workers, progress, is_cancelled, chunk_bytes) if parallel else None
        )
        if in_parallel is not None:
            results = in_parallel
        else:
            results = decode_sequentially(source, first, progress, is_cancelled, chunk_bytes)
            workers = 1
    report = results[-1].report
    lost_events = sum(r.report.lost_events for r in results)
    lost_bytes = sum(r.report.lost_bytes for r in results)
    repaired_chunks = sum(r.report.repaired_chunks for r in results)
    lenient_chunks = sum(r.report.lenient_chunks for r in results)
    flattened_chunks = sum(r.report.flattened_chunks for r in results)
    skip_cats = frozenset(cat for key in skip for cat in SKIPPABLE.get(key, (key,)))
    merged = merge_ranges(results, skip_cats)
    columns = merged.columns
    if len(columns) == 0:
        if lost_events:
            raise InputError(f"{path}: no complete event could be read ({lost_bytes:,} bytes unreadable)")
        if merged.invalid or merged.skipped:
            dropped = [
                f"{merged.invalid:,} without a usable ts/dur" if merged.invalid else "",
                f"{merged.skipped:,} skipped by --skip" if merged.skipped else "",
            ]
            raise InputError(f"{path}: no usable event ({'; '.join(d for d in dropped if d)})")
        raise InputError(f"{path}: the trace holds no events")
    assign_roles(columns, merged.cats, merged.names)
    paired = pair_begin_end(columns)
    if paired is not None:
        columns = columns.take(paired)
        merged.source_index = merged.source_index[paired]
    header, metadata, header_problem = decode_header(buf, kind, array_open, report.array_end)
    threads, columns.thread = thread_table(merged, columns)
    mark_device_threads(threads, columns)

    timed = ((columns.ph == PH_X) | (columns.ph == PH_INSTANT)) & (columns.role != int(Role.PROFILER))
    origin_file = (
        int(columns.ts[timed].min()) if timed.any() else int(columns.ts[columns.ts > np.iinfo(np.int64).min].min())
    )
    columns.ts -= origin_file
    base = header.baseTimeNanoseconds
    if isinstance(base, (int, float)) and math.isfinite(base) and base > 0:
        origin_ns, is_unix = int(base) + origin_file, True
    elif origin_file > 10**18:  # absolute microseconds since the epoch, ×1000
        origin_ns, is_unix = origin_file, True
    else:
        origin_ns, is_unix = origin_file, False

    truncated = report.array_end < 0 or bool(source.gzip_damage)
    warnings: list[str] = []
    if source.gzip_damage:
        warnings.append(f"{source.gzip_damage}: loaded the events before the damage")
    if report.array_end < 0:
        warnings.append(
            f"trace is truncated: the events array never closes; loaded {len(columns):,} complete events, "
            f"lost {lost_bytes:,} bytes at the end"
        )
    elif lost_events:
        warnings.append(f"{lost_events:,} malformed events skipped ({lost_bytes:,} bytes)")
    if merged.invalid:
        warnings.append(f"{merged.invalid:,} events without a usable ts/dur skipped")
    if merged.bad_values:
        warnings.append(f"{merged.bad_values:,} timestamps or durations had a wrong type and were coerced")
    if lenient_chunks:
        warnings.append("some event fields had unexpected JSON types and were converted or ignored")
    if flattened_chunks:
        warnings.append(
            f"values nested deeper than {MAX_DEPTH} levels (events or their args) were dropped "
            f"in {flattened_chunks:,} chunk(s); the events themselves were kept"
        )
    if repaired_chunks:
        warnings.append("invalid UTF-8 bytes in names were replaced with U+FFFD")
    if header_problem:
        warnings.append(header_problem)
    if (
        kind == "object"
        and report.array_end >= 0
        and jsonscan.top_level_array(buf, b"traceEvents", report.array_end + 1) >= 0
    ):
        warnings.append("the file has a second top-level traceEvents array after the first; only the first was read")

    props = header.deviceProperties or []
    device_name = str(props[0].get("name", "")) if props and isinstance(props[0], dict) else ""
    device_kind = detect_device_kind(merged.cats, merged.names, header, metadata)
    plain_bytes = len(buf)
    stats = LoadStats(
        path=str(path),
        file_bytes=source.file_bytes,
        plain_bytes=plain_bytes,
        compressed=source.compressed,
        events=len(columns),
        seconds=time.perf_counter() - started,
        lost_events=lost_events,
        lost_bytes=lost_bytes,
        truncated=truncated,
        invalid_events=merged.invalid,
        bad_values=merged.bad_values,
        skipped_events=merged.skipped,
        workers=workers,
    )
    synthetic = bool(header.trnscope) or "synthetic" in str(metadata.get("trnscope_synthetic", "")).lower()
    trace = Trace(
        source=str(path),
        format="kineto" if kind == "object" else "chrome-array",
        device_kind=device_kind,
        device_name=device_name,
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
        synthetic=synthetic,
        plain_path=source.plain_path,
        source_index=merged.source_index,
        buffer=None if source.plain_path else buf,
    )
    if source.plain_path:
        source.close()
    return trace
