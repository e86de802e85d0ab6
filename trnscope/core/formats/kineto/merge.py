"""Merging decoded ranges into one set of columns: string ids remapped to one
interning, skipped categories dropped, roles assigned, B/E pairs joined into complete
events, and the thread table built."""

from __future__ import annotations

import contextlib
from typing import Any

import msgspec
import numpy as np

from trnscope.core.base.arrays import equals_any, row_dtype
from trnscope.core.formats.kineto.decode import RangeResult
from trnscope.core.model.roles import Role, role_of
from trnscope.core.model.trace import ChunkRef, EventColumns, ThreadInfo
from trnscope.core.model.vocab import (
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
    Interner,
)


class MergedColumns(msgspec.Struct):
    columns: EventColumns
    source_index: np.ndarray
    names: list[str]
    cats: list[str]
    shapes: list[str]
    stacks: list[str]
    raw_threads: list[tuple[Any, Any]]
    chunks: list[ChunkRef]
    meta: list[tuple[int, str, str | None, str | None, Any, Any, Any]]  # see ChunkColumns.meta
    invalid: int
    skipped: int
    bad_values: int
    folded_meta: int = 0  # metadata events a later one of the same kind overrides: no rows


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


def _overridden_metadata(results: list[RangeResult]) -> list[set[int]]:
    """Per chunk, in file order: its metadata rows that an event of the same kind in a
    later chunk overrides.  (A chunk folds its own repeats: only its last event of each
    kind is in its ``meta``.)  So the rows a trace keeps do not depend on where chunks
    and ranges were cut."""
    seen: set[tuple[Any, ...]] = set()
    per_chunk: list[set[int]] = []
    for chunk in reversed([chunk for result in results for chunk in result.chunks]):
        c = chunk.columns
        later: set[int] = set()
        for row, name, _value, _labels, _sort, pid, tid in reversed(c.meta):
            kind = (name, c.cats[int(c.cat[row])], pid, tid)
            if kind in seen:
                later.add(row)
            else:
                seen.add(kind)
        per_chunk.append(later)
    return per_chunk[::-1]


def merge_ranges(results: list[RangeResult], skip_cats: frozenset[str]) -> MergedColumns:  # noqa: C901 - one pass over the decoded ranges, re-interning each column
    """All chunks' columns in one set of arrays, with global string ids.  Consumes
    the ranges' chunks (their ``chunks`` lists are empty afterwards).

    The arrays are allocated once at their final size and filled chunk by chunk: fresh
    memory costs a page fault per page, and per-chunk pieces joined afterwards would
    touch every byte twice."""
    names, cats, shapes, stacks, threads = Interner(), Interner(), Interner(), Interner(), Interner()
    chunks: list[ChunkRef] = []
    meta: list[tuple[int, str, str | None, str | None, Any, Any, Any]] = []
    invalid = skipped = bad = folded = 0
    kept_rows: list[np.ndarray | None] = []  # per chunk: the rows kept, None for all
    overridden = _overridden_metadata(results)
    total = decoded = 0
    for result in results:
        for chunk in result.chunks:
            c = chunk.columns
            n = len(c.ph)
            decoded += n
            later = overridden[len(kept_rows)]
            repeated = c.repeated_meta if not later else np.concatenate([c.repeated_meta, np.fromiter(later, np.int64)])
            keep = c.valid
            invalid += int(n - np.count_nonzero(keep))
            if skip_cats:
                skip_local = np.array([cat in skip_cats for cat in c.cats], dtype=bool)
                if skip_local.any():
                    skip = skip_local[c.cat]
                    skipped += int(np.count_nonzero(skip & keep))
                    keep = keep & ~skip
            if repeated.size:
                folded += int(np.count_nonzero(keep[repeated]))
                keep = keep.copy()  # (it may still be the chunk's own valid column)
                keep[repeated] = False
            kept = int(np.count_nonzero(keep))
            kept_rows.append(None if kept == n else np.flatnonzero(keep))
            total += kept
    columns = EventColumns(
        **{field: np.empty(total, dtype=dtype) for field, dtype in EventColumns.empty().dtypes().items()}
    )
    columns.role[:] = 0
    # each kept row's position among the decoded events: int32 unless a file holds 2**31
    source_index = np.empty(total, dtype=row_dtype(decoded))
    position = original = 0
    chunk_index = 0
    for result in results:
        # Each chunk's columns are let go once copied (the ranges are consumed): the
        # merged arrays fill as the decoded ones go, instead of both being resident.
        pending, result.chunks = result.chunks[::-1], []
        while pending:
            chunk = pending.pop()
            c = chunk.columns
            n = len(c.ph)
            rows, kept_rows[chunk_index] = kept_rows[chunk_index], None
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
                source_index[out] = np.arange(original, original + n, dtype=source_index.dtype)
            else:
                source_index[out] = rows + original
            bad += c.bad_values
            chunks.append(ChunkRef(chunk.start, chunk.end, original, n, chunk.repaired))
            gone = overridden[chunk_index - 1]
            for row, *entry in c.meta:
                if row not in gone:
                    meta.append((original + row, *entry))
            original += n
            position += count
            del chunk, c, rows
    return MergedColumns(
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
        folded,
    )


def assign_roles(columns: EventColumns, cats: list[str], names: list[str]) -> None:
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


def pair_begin_end(columns: EventColumns) -> np.ndarray | None:
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


def thread_table(merged: MergedColumns, columns: EventColumns) -> tuple[list[ThreadInfo], np.ndarray]:
    """Canonical (pid, tid) threads (25738 and "25738" are one thread), labelled from
    the process_name / thread_name / *_sort_index metadata events."""
    canonical = Interner()
    raw_to_canonical = np.array(
        [canonical[(_key(pid), _key(tid))] for pid, tid in merged.raw_threads] or [0], dtype=np.int32
    )
    infos = [ThreadInfo(pid=pid, tid=tid) for pid, tid in canonical.values_in_order()]
    thread = raw_to_canonical[columns.thread] if len(columns) else columns.thread
    process_names: dict[str, str] = {}
    process_labels: dict[str, str] = {}
    thread_names: dict[tuple[str, str], str] = {}
    sort_index: dict[tuple[str, str], int] = {}
    for _row, name, text, labels, sort, pid, tid in merged.meta:  # in file order: the last one counts
        index = canonical.get((_key(pid), _key(tid)))
        if index is None:  # its event was dropped (--skip)
            continue
        info = infos[index]
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
        extra = process_labels.get(info.pid, "")
        if extra.strip() and extra.strip() != label.strip():  # MTIA names a process "MTIA 17" and labels it so
            label = f"{label} ({extra})".strip()
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


def mark_device_threads(trace_threads: list[ThreadInfo], columns: EventColumns) -> None:
    device_role = equals_any(columns.role, (Role.KERNEL, Role.MEMORY, Role.DEVICE_ANNOTATION))
    if device_role.any():
        for index in np.flatnonzero(np.bincount(columns.thread[device_role], minlength=len(trace_threads))).tolist():
            trace_threads[index].is_device = True
