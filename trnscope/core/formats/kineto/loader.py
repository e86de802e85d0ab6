"""Read a Kineto / Chrome-trace JSON file into the columnar model.

The ``traceEvents`` array is cut into chunks (``jsonscan``) that are decoded with
msgspec and turned into columns (``events``).  Large files are decoded by several
processes at once: each starts at a heuristic cut, and the cut is accepted only when
the process before it decodes up to exactly there (see ``jsonscan``), so a wrong
guess costs time, never events.
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from trnscope.core.base.errors import InputError, LoadCancelled
from trnscope.core.base.memory import prefer_small_pages, small_pages_preferred
from trnscope.core.formats.kineto import jsonscan
from trnscope.core.formats.kineto.events import (
    PH_BEGIN,
    PH_COUNTER,
    PH_END,
    PH_FLOW_END,
    PH_FLOW_START,
    PH_FLOW_STEP,
    PH_INSTANT,
    PH_META,
    PH_OTHER,
    PH_X,
    ChunkColumns,
    Interner,
    columns_from_events,
)
from trnscope.core.formats.source import PlainSource, Progress, open_plain
from trnscope.core.model.roles import Role, role_of
from trnscope.core.model.trace import ChunkRef, EventColumns, LoadStats, ThreadInfo, Trace

PARALLEL_MIN_BYTES = 48 << 20
CHUNK_BYTES = 8 << 20
SKIPPABLE = {"python": ("python_function",)}


class DecodedChunk(msgspec.Struct):
    start: int
    end: int
    repaired: bool
    columns: ChunkColumns


class RangeResult(msgspec.Struct):
    chunks: list[DecodedChunk]
    report: jsonscan.ScanReport


# -- worker side ------------------------------------------------------------------

_progress_slots: Any = None


def _init_worker(slots: Any, small_pages: bool) -> None:
    global _progress_slots
    _progress_slots = slots
    if small_pages:  # as the parent was told (a fork server's child does not inherit it)
        prefer_small_pages()


_ARRAY_FIELDS = tuple(
    f
    for f in ChunkColumns.__struct_fields__
    if f not in ("names", "cats", "threads", "shapes", "stacks", "meta", "bad_values")
)


class SpilledRange(msgspec.Struct):
    """A worker's result with its column arrays in a file: pickling ~100 MB of arrays
    through a pipe costs more than writing them to shared memory and mapping them."""

    path: str
    report: jsonscan.ScanReport
    chunks: list[tuple[int, int, bool, dict[str, Any], list[tuple[str, str, int, int]]]]


def _spill_folder() -> str | None:
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def decode_range_of_file(
    plain_path: str, start: int, stop: int | None, slot: int, chunk_bytes: int
) -> RangeResult | SpilledRange:
    """Decode events from ``start`` up to the cut before ``stop`` (runs in a worker)."""
    import mmap
    import tempfile

    with open(plain_path, "rb") as fh:
        buf = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        result = _decode_buffer(buf, start, stop, chunk_bytes, slot=slot)
    finally:
        buf.close()
    try:
        handle, path = tempfile.mkstemp(prefix="trnscope-range-", dir=_spill_folder())
    except OSError:
        return result
    chunks = []
    offset = 0
    with os.fdopen(handle, "wb") as out:
        for chunk in result.chunks:
            columns = chunk.columns
            specs = []
            for field in _ARRAY_FIELDS:
                array = np.ascontiguousarray(getattr(columns, field))
                out.write(memoryview(array).cast("B") if array.size else b"")
                specs.append((field, array.dtype.str, array.size, offset))
                offset += array.nbytes
            small = {
                f: getattr(columns, f) for f in ("names", "cats", "threads", "shapes", "stacks", "meta", "bad_values")
            }
            chunks.append((chunk.start, chunk.end, chunk.repaired, small, specs))
    return SpilledRange(path, result.report, chunks)


def _unspill(result: RangeResult | SpilledRange) -> RangeResult:
    if isinstance(result, RangeResult):
        return result
    import mmap

    # Mapped, not read: the worker has already touched these pages, and new memory for a
    # copy would cost more (first use of a page is the dominant cost of memory here).
    with open(result.path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        # populated up front: one call instead of a page fault per 4 KiB page
        populate = getattr(mmap, "MAP_POPULATE", 0)
        data = mmap.mmap(fh.fileno(), 0, flags=mmap.MAP_SHARED | populate, prot=mmap.PROT_READ) if size else b""
    os.unlink(result.path)  # the mapping keeps the pages until it is dropped
    chunks = []
    for start, end, repaired, small, specs in result.chunks:
        arrays = {
            field: np.frombuffer(data, dtype=np.dtype(dtype), count=count, offset=offset)
            for field, dtype, count, offset in specs
        }
        chunks.append(DecodedChunk(start, end, repaired, ChunkColumns(**arrays, **small)))
    return RangeResult(chunks, result.report)


def _decode_buffer(
    buf: Any,
    start: int,
    stop: int | None,
    chunk_bytes: int,
    slot: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    cancelled: Callable[[], bool] = lambda: False,
) -> RangeResult:
    text_ids = Interner()
    chunks: list[DecodedChunk] = []
    report = jsonscan.ScanReport()

    decoded = [0]

    def on_piece(piece: jsonscan.Piece) -> None:
        chunks.append(
            DecodedChunk(piece.start, piece.end, piece.utf8_repaired, columns_from_events(piece.events, text_ids))
        )
        decoded[0] += len(piece.events)
        if slot is not None and _progress_slots is not None:
            _progress_slots[2 * slot] = piece.end - start
            _progress_slots[2 * slot + 1] = decoded[0]
        if progress is not None:
            progress(piece.end, decoded[0])

    jsonscan.scan(buf, start, chunk_bytes=chunk_bytes, stop=stop, on_piece=on_piece, report=report, cancelled=cancelled)
    if text_ids:
        # Text ids (non-numeric id strings) are interned per range: make them global by
        # re-keying on the text itself.  Rare, so done with plain Python.
        _rekey_text_ids(chunks, text_ids)
    return RangeResult(chunks, report)


def _rekey_text_ids(chunks: list[DecodedChunk], text_ids: Interner) -> None:
    # Non-numeric id strings become stable negative ids derived from their text.
    import zlib

    mapping = {-2 - index: -(2 + (zlib.crc32(text.encode()) & 0x3FFFFFFF)) for text, index in text_ids.items()}
    for chunk in chunks:
        for column in (
            chunk.columns.external_id,
            chunk.columns.correlation,
            chunk.columns.sequence,
            chunk.columns.flow_id,
        ):
            low = column < -1
            if low.any():
                column[low] = [mapping.get(int(v), int(v)) for v in column[low]]


# -- orchestration ------------------------------------------------------------------


def _pool_context() -> Any:
    """``fork`` when this process has no other thread (the CLI: children start instantly
    with everything imported); otherwise the fork server (the TUI runs threads, and
    forking a threaded process can deadlock a child); ``spawn`` where neither exists."""
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


def start_worker_server() -> None:
    """Start the fork server for parallel decoding now, while stdio is still the
    process's own: a full-screen UI replaces stdout/stderr, and starting a server
    process then fails.  Cheap when already running; harmless where unsupported."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return
    try:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["trnscope.core.formats.kineto.loader"])
        from multiprocessing import forkserver

        forkserver.ensure_running()
    except (OSError, ValueError):
        pass


def default_workers() -> int:
    return max(1, min(os.cpu_count() or 1, 8))


def _split_points(buf: Any, first: int, size: int, workers: int) -> list[int]:
    points: list[int] = []
    for k in range(1, workers):
        guess = first + (size - first) * k // workers
        match = jsonscan._BOUNDARY.search(buf, guess)
        if match is None:
            break
        start = match.end() - 1
        if not points or start > points[-1]:
            points.append(start)
    return points


def _parallel_decode(
    source: PlainSource,
    first: int,
    workers: int,
    progress: Progress | None,
    cancelled: Callable[[], bool],
    chunk_bytes: int,
) -> list[RangeResult]:
    size = len(source.buffer)
    starts = [first, *_split_points(source.buffer, first, size, workers)]
    stops: list[int | None] = [*starts[1:], None]
    ctx = _pool_context()
    slots = ctx.Array("q", 2 * len(starts), lock=False)  # per worker: bytes done, events decoded
    done_event = threading.Event()

    def report_progress() -> None:
        while not done_event.wait(0.1):
            if progress is not None:
                values = slots[:]
                progress("parse", first + sum(values[0::2]), size, sum(values[1::2]))

    reporter = threading.Thread(target=report_progress, daemon=True)
    reporter.start()
    executor = ProcessPoolExecutor(
        max_workers=len(starts), mp_context=ctx, initializer=_init_worker, initargs=(slots, small_pages_preferred())
    )
    try:
        futures = [
            executor.submit(decode_range_of_file, source.plain_path, start, stop, index, chunk_bytes)
            for index, (start, stop) in enumerate(zip(starts, stops))
        ]
        results: list[RangeResult] = []
        for future in futures:
            while True:
                if cancelled():
                    for process in list(getattr(executor, "_processes", {}).values()):
                        process.terminate()
                    raise LoadCancelled()
                try:
                    results.append(_unspill(future.result(timeout=0.1)))
                    break
                except TimeoutError:
                    continue
    finally:
        done_event.set()
        executor.shutdown(wait=True, cancel_futures=True)
    # Keep ranges up to the first one whose end could not be proven: that range ran
    # on to the end of the array by itself, so later ranges are redundant.
    kept: list[RangeResult] = []
    for index, result in enumerate(results):
        kept.append(result)
        if index + 1 < len(results) and result.report.stopped_at != starts[index + 1]:
            break
    return kept


def _try_parallel(
    source: PlainSource,
    first: int,
    workers: int,
    progress: Progress | None,
    cancelled: Callable[[], bool],
    chunk_bytes: int,
) -> list[RangeResult] | None:
    """Parallel decoding, or None when worker processes cannot be started here (the
    caller then decodes in this process)."""
    try:
        return _parallel_decode(source, first, workers, progress, cancelled, chunk_bytes)
    except (OSError, ValueError, RuntimeError):  # BrokenPipeError is an OSError
        return None


def _sequential_decode(
    source: PlainSource,
    first: int,
    progress: Progress | None,
    cancelled: Callable[[], bool],
    chunk_bytes: int,
) -> list[RangeResult]:
    size = len(source.buffer)
    last = [0.0]

    def on_progress(position: int, events: int) -> None:
        now = time.monotonic()
        if progress is not None and now - last[0] > 0.05:
            last[0] = now
            progress("parse", position, size, events)

    result = _decode_buffer(source.buffer, first, None, chunk_bytes, progress=on_progress, cancelled=cancelled)
    if cancelled():
        raise LoadCancelled()
    return [result]


class _Merged(msgspec.Struct):
    columns: EventColumns
    source_index: np.ndarray
    names: list[str]
    cats: list[str]
    shapes: list[str]
    stacks: list[str]
    raw_threads: list[tuple[Any, Any]]
    chunks: list[ChunkRef]
    meta: list[tuple[int, str, str | None, str | None, Any]]
    invalid: int
    skipped: int
    bad_values: int


def _remap(local: list[Any], interner: Interner) -> np.ndarray:
    return (
        np.fromiter(map(interner.__getitem__, local), dtype=np.int32, count=len(local))
        if local
        else np.empty(0, np.int32)
    )


# Columns copied as they are, and columns whose chunk-local ids are mapped to global ones.
_PLAIN = (
    ("ph", "ph"),
    ("ts", "ts_ns"),
    ("dur", "dur_ns"),
    ("external_id", "external_id"),
    ("correlation", "correlation"),
    ("sequence", "sequence"),
    ("flow_id", "flow_id"),
    ("flow_bind_end", "flow_bind_end"),
)


def _merge(results: list[RangeResult], skip_cats: frozenset[str]) -> _Merged:
    """All chunks' columns in one set of arrays, with global string ids.

    The arrays are allocated once at their final size and filled chunk by chunk: fresh
    memory costs a page fault per page, and per-chunk pieces joined afterwards would
    touch every byte twice."""
    names, cats, shapes, stacks, threads = Interner(), Interner(), Interner(), Interner(), Interner()
    chunks: list[ChunkRef] = []
    meta: list[tuple[int, str, str | None, str | None, Any]] = []
    invalid = skipped = bad = 0
    kept_rows: list[np.ndarray | None] = []  # per chunk: the rows kept, None for all
    total = 0
    for result in results:
        for chunk in result.chunks:
            c = chunk.columns
            n = len(c.ph)
            keep = c.valid
            invalid += int(n - np.count_nonzero(keep))
            if skip_cats:
                skip_local = np.array([cat in skip_cats for cat in c.cats], dtype=bool)
                if skip_local.any():
                    skip = skip_local[c.cat]
                    skipped += int(np.count_nonzero(skip & keep))
                    keep = keep & ~skip
            kept = int(np.count_nonzero(keep))
            kept_rows.append(None if kept == n else np.flatnonzero(keep))
            total += kept
    columns = EventColumns(
        **{field: np.empty(total, dtype=dtype) for field, dtype in EventColumns.empty().dtypes().items()}
    )
    columns.role[:] = 0
    source_index = np.empty(total, dtype=np.int64)
    position = original = 0
    chunk_index = 0
    for result in results:
        for chunk in result.chunks:
            c = chunk.columns
            n = len(c.ph)
            rows = kept_rows[chunk_index]
            chunk_index += 1
            count = n if rows is None else rows.size
            out = slice(position, position + count)
            for field, source in _PLAIN:
                values = getattr(c, source)
                getattr(columns, field)[out] = values if rows is None else values[rows]
            for field, local, interner in (
                ("name", c.names, names),
                ("cat", c.cats, cats),
                ("thread", c.threads, threads),
            ):
                ids = getattr(c, field)
                np.take(_remap(local, interner), ids if rows is None else ids[rows], out=getattr(columns, field)[out])
            for field, local, interner in (("dims", c.shapes, shapes), ("stack", c.stacks, stacks)):
                target = getattr(columns, field)[out]
                if not local:
                    target[:] = -1
                    continue
                ids = getattr(c, field)
                # -1 (absent) indexes the appended -1
                np.take(
                    np.append(_remap(local, interner), np.int32(-1)), ids if rows is None else ids[rows], out=target
                )
            if rows is None:
                source_index[out] = np.arange(original, original + n, dtype=np.int64)
            else:
                source_index[out] = rows + original
            bad += c.bad_values
            chunks.append(ChunkRef(chunk.start, chunk.end, original, n, chunk.repaired))
            for row, name, value, labels, sort in c.meta:
                meta.append((original + row, name, value, labels, sort))
            original += n
            position += count
    return _Merged(
        columns,
        source_index,
        [n if n is not None else "" for n in names.values_in_order()],
        cats.values_in_order(),
        shapes.values_in_order(),
        stacks.values_in_order(),
        threads.values_in_order(),
        chunks,
        meta,
        invalid,
        skipped,
        bad,
    )


def _assign_roles(columns: EventColumns, cats: list[str], names: list[str]) -> None:
    """Role of every event, from its phase and category (one lookup in a small
    phase × category table)."""
    by_cat = np.array([int(role_of(c)) for c in cats] or [int(Role.OTHER_HOST)], dtype=np.uint8)
    table = np.tile(by_cat, (PH_OTHER + 1, 1))
    table[PH_INSTANT, :] = Role.INSTANT
    table[[PH_FLOW_START, PH_FLOW_END, PH_FLOW_STEP], :] = Role.FLOW
    table[PH_META, :] = Role.METADATA
    table[PH_COUNTER, :] = Role.COUNTER
    # An X event that carries a flow/counter/metadata/instant category is odd but
    # harmless: it is shown as host "other".
    odd = np.isin(table[PH_X], [int(Role.FLOW), int(Role.COUNTER), int(Role.METADATA), int(Role.INSTANT)])
    table[PH_X, odd] = Role.OTHER_HOST
    columns.role = table[columns.ph, columns.cat] if len(columns) else np.empty(0, np.uint8)


def _pair_begin_end(columns: EventColumns) -> np.ndarray | None:
    """Turn Chrome-trace B/E pairs (not written by Kineto, but by other tools) into X
    events, matched per thread as a stack; unmatched ones are dropped."""
    rows = np.flatnonzero((columns.ph == PH_BEGIN) | (columns.ph == PH_END))
    if rows.size == 0:
        return None
    order = rows[np.lexsort((rows, columns.ts[rows], columns.thread[rows]))]
    stacks: dict[int, list[int]] = {}
    keep_begin: list[int] = []
    for row in order.tolist():
        thread = int(columns.thread[row])
        if columns.ph[row] == PH_BEGIN:
            stacks.setdefault(thread, []).append(row)
        elif stacks.get(thread):
            begin = stacks[thread].pop()
            columns.dur[begin] = max(0, int(columns.ts[row] - columns.ts[begin]))
            columns.ph[begin] = PH_X
            keep_begin.append(begin)
    drop = np.setdiff1d(rows, np.array(keep_begin, dtype=np.int64))
    keep = np.ones(len(columns), dtype=bool)
    keep[drop] = False
    return np.flatnonzero(keep)


def _thread_table(merged: _Merged, columns: EventColumns) -> tuple[list[ThreadInfo], np.ndarray]:
    """Canonical (pid, tid) threads (25738 and "25738" are one thread), labelled from
    the process_name / thread_name / *_sort_index metadata events."""
    canonical = Interner()
    raw_to_canonical = np.array(
        [canonical[(_key(pid), _key(tid))] for pid, tid in merged.raw_threads] or [0], dtype=np.int32
    )
    infos = [ThreadInfo(pid=pid, tid=tid) for pid, tid in canonical.values_in_order()]
    thread = raw_to_canonical[columns.thread] if len(columns) else columns.thread
    meta_by_row = {row: (name, value, labels, sort) for row, name, value, labels, sort in merged.meta}
    process_names: dict[str, str] = {}
    process_labels: dict[str, str] = {}
    thread_names: dict[tuple[str, str], str] = {}
    sort_index: dict[tuple[str, str], int] = {}
    for row in np.flatnonzero(columns.ph == PH_META).tolist():
        entry = meta_by_row.get(int(merged.source_index[row]))
        if entry is None:
            continue
        name, text, labels, sort = entry
        info = infos[int(thread[row])]
        if name == "process_name" and text:
            process_names[info.pid] = text
        elif name == "process_labels" and (labels or text):
            process_labels[info.pid] = labels or text or ""
        elif name == "thread_name" and text:
            thread_names[(info.pid, info.tid)] = text
        elif name in ("thread_sort_index", "process_sort_index") and sort is not None:
            with contextlib.suppress(TypeError, ValueError):
                sort_index[(info.pid, info.tid)] = int(sort)
    for info in infos:
        label = process_names.get(info.pid, "")
        if info.pid in process_labels:
            label = f"{label} ({process_labels[info.pid]})".strip()
        info.process_label = label
        info.thread_label = thread_names.get((info.pid, info.tid), "")
        info.sort_index = sort_index.get((info.pid, info.tid), 0)
    return infos, thread


def _key(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _mark_device_threads(trace_threads: list[ThreadInfo], columns: EventColumns) -> None:
    device_role = np.isin(columns.role, [int(Role.KERNEL), int(Role.MEMORY), int(Role.DEVICE_ANNOTATION)])
    if device_role.any():
        for index in np.flatnonzero(np.bincount(columns.thread[device_role], minlength=len(trace_threads))).tolist():
            trace_threads[index].is_device = True


class TraceHeader(msgspec.Struct):
    """The top-level keys outside ``traceEvents`` that readers act on."""

    schemaVersion: int | None = None
    deviceProperties: list[dict[str, Any]] | None = None
    displayTimeUnit: str | None = None
    baseTimeNanoseconds: int | float | None = None
    traceName: str | None = None
    distributedInfo: dict[str, Any] | None = None
    trnscope: str | None = None


def _decode_header(buf: Any, kind: str, array_open: int, array_end: int) -> tuple[TraceHeader, dict[str, Any], str]:
    if kind != "object":
        return TraceHeader(), {}, ""
    tail = bytes(buf[array_end + 1 :]) if array_end >= 0 else b"}"
    text = bytes(buf[:array_open]) + b"[]" + tail
    try:
        header = msgspec.json.decode(text, type=TraceHeader)
        everything = msgspec.json.decode(text)
    except msgspec.DecodeError as error:
        if array_end >= 0:
            try:
                text = bytes(buf[:array_open]) + b"[]}"
                return msgspec.json.decode(text, type=TraceHeader), msgspec.json.decode(text), ""
            except msgspec.DecodeError:
                pass
        return TraceHeader(), {}, f"top-level metadata unreadable ({error})"
    everything.pop("traceEvents", None)
    return header, everything if isinstance(everything, dict) else {}, ""


def detect_device_kind(cats: list[str], names: list[str], header: TraceHeader, metadata: dict[str, Any]) -> str:
    lowered = {c.lower() for c in cats if c}
    props = header.deviceProperties or []
    device_names = " ".join(str(p.get("name", "")) for p in props if isinstance(p, dict)).lower()
    if any(c.startswith("privateuse1") for c in lowered) or "neuron" in device_names or "trainium" in device_names:
        return (
            "neuron"
            if ("neuron" in device_names or "trainium" in device_names or _mentions_neuron(names, metadata))
            else "privateuse1"
        )
    if any(c.startswith("mtia") for c in lowered):
        return "mtia"
    if any(c.startswith("xpu") for c in lowered):
        return "xpu"
    if (
        "roctracer_version" in metadata
        or "hip_runtime_version" in metadata
        or any(n.startswith("hip") for n in names[:20000])
    ):
        return "rocm"
    if lowered & {"kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime", "cuda_driver", "runtime", "memcpy", "memset"}:
        return "cuda"
    if "amd" in device_names or "instinct" in device_names:
        return "rocm"
    if props:
        return "cuda"
    return "cpu"


def _mentions_neuron(names: list[str], metadata: dict[str, Any]) -> bool:
    if any("neuron" in str(k).lower() for k in metadata):
        return True
    return any("neuron" in n.lower() or n.startswith("nrt_") for n in names[:20000])


def load_kineto(
    path: Path,
    *,
    progress: Progress | None = None,
    cancelled: Callable[[], bool] | None = None,
    skip: tuple[str, ...] = (),
    workers: int | None = None,
    chunk_bytes: int = CHUNK_BYTES,
    source: PlainSource | None = None,
) -> Trace:
    started = time.perf_counter()
    is_cancelled = cancelled or (lambda: False)
    if source is None:
        source = open_plain(path, progress, is_cancelled)
    buf = source.buffer
    try:
        kind, array_open = jsonscan.find_events_array(buf)
    except LookupError:
        raise InputError(f"{path}: JSON object without a traceEvents array; not a PyTorch profiler trace") from None
    except ValueError as error:
        raise InputError(f"{path}: {error}; not a PyTorch profiler trace") from None
    first = jsonscan.first_event_start(buf, array_open)
    if first == -3:
        raise InputError(f"{path}: traceEvents is not a list of event objects; not a PyTorch profiler trace")
    workers = default_workers() if workers is None else max(1, workers)
    parallel = workers > 1 and bool(source.plain_path) and len(buf) >= PARALLEL_MIN_BYTES
    if first < 0:
        results = [RangeResult([], jsonscan.ScanReport(array_end=-1 if first == -2 else array_open + 1))]
        if first == -1:
            end = bytes(buf[array_open + 1 :]).find(b"]")
            results[0].report.array_end = array_open + 1 + end
    elif (
        parallel and (results := _try_parallel(source, first, workers, progress, is_cancelled, chunk_bytes)) is not None
    ):
        pass
    else:
        results = _sequential_decode(source, first, progress, is_cancelled, chunk_bytes)
        workers = 1
    report = results[-1].report
    lost_events = sum(r.report.lost_events for r in results)
    lost_bytes = sum(r.report.lost_bytes for r in results)
    repaired_chunks = sum(r.report.repaired_chunks for r in results)
    lenient_chunks = sum(r.report.lenient_chunks for r in results)
    skip_cats = frozenset(cat for key in skip for cat in SKIPPABLE.get(key, (key,)))
    merged = _merge(results, skip_cats)
    columns = merged.columns
    if len(columns) == 0:
        if lost_events:
            raise InputError(f"{path}: no complete event could be read ({lost_bytes:,} bytes unreadable)")
        raise InputError(f"{path}: the trace holds no events")
    _assign_roles(columns, merged.cats, merged.names)
    paired = _pair_begin_end(columns)
    if paired is not None:
        columns = columns.take(paired)
        merged.source_index = merged.source_index[paired]
    header, metadata, header_problem = _decode_header(buf, kind, array_open, report.array_end)
    threads, columns.thread = _thread_table(merged, columns)
    _mark_device_threads(threads, columns)

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
    if repaired_chunks:
        warnings.append("invalid UTF-8 bytes in names were replaced with U+FFFD")
    if header_problem:
        warnings.append(header_problem)

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
