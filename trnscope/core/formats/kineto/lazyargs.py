"""Decode the full ``args`` of one event, only when it is shown.

Rows remember where they came from (``Trace.source_index`` + ``Trace.chunks``); the
chunk is re-read from the plain JSON (the input file, or its decompressed copy in the
cache), decoded as ``list[ArgsOnly]`` — msgspec skips everything but ``args`` — and
the one ``args`` object is decoded to a dict.  The last few chunks are kept.
"""

from __future__ import annotations

import mmap
import threading
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from trnscope.core.base.jsondepth import flatten_deep
from trnscope.core.formats.kineto.events import ANY_DECODER, ARGS_LIST_DECODER
from trnscope.core.formats.kineto.jsonscan import framed
from trnscope.core.model.trace import Trace

_CACHE_SIZE = 4
_lock = threading.Lock()
_chunks: OrderedDict[tuple[str, int], list[Any]] = OrderedDict()


def _buffer(trace: Trace) -> Any:
    if trace.buffer is not None:
        return trace.buffer
    path = Path(trace.plain_path)
    if not trace.plain_path or not path.exists():
        # a cached trace whose decompressed copy was cleared: decompress again
        from trnscope.core.formats.source import open_plain

        source = open_plain(Path(trace.source))
        trace.plain_path = source.plain_path
        return source.buffer
    with open(path, "rb") as fh:
        return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)


def _chunk_args(trace: Trace, chunk_index: int) -> list[Any]:
    key = (trace.plain_path or trace.source, chunk_index)
    with _lock:
        if key in _chunks:
            _chunks.move_to_end(key)
            return _chunks[key]
    chunk = trace.chunks[chunk_index]
    buffer = _buffer(trace)
    data = framed(buffer, chunk.start, chunk.end)
    if chunk.utf8_repaired:
        data = bytearray(bytes(data).decode("utf-8", "replace").encode())
    try:
        try:
            items = [item.args for item in ARGS_LIST_DECODER.decode(data)]
        except RecursionError:  # as at load: values nested past MAX_DEPTH become null
            data = bytearray(flatten_deep(data))
            items = [item.args for item in ARGS_LIST_DECODER.decode(data)]
    except (msgspec.DecodeError, msgspec.ValidationError):
        values = ANY_DECODER.decode(data)
        items = [
            msgspec.Raw(msgspec.json.encode(v.get("args"))) if isinstance(v, dict) else msgspec.Raw(b"null")
            for v in values
        ]
    with _lock:
        _chunks[key] = items
        while len(_chunks) > _CACHE_SIZE:
            _chunks.popitem(last=False)
    return items


def raw_args_by_chunk(trace: Trace, rows: np.ndarray) -> Iterator[list[tuple[int, msgspec.Raw]]]:
    """The undecoded ``args`` of many rows, one chunk at a time: for each chunk that holds
    some of them, (position in ``rows``, raw args) pairs.  Each chunk is read once, and
    a caller that uses each batch before asking for the next holds one chunk's text at a
    time (every [memory] record of a 400 MB trace at once held all of it again).  A
    per-row loop over ``event_args`` would look each chunk up again for every row."""
    if trace.source_index is None or not trace.chunks or rows.size == 0:
        return
    firsts = np.fromiter((c.first_row for c in trace.chunks), dtype=np.int64, count=len(trace.chunks))
    valid = rows < trace.source_index.size
    original = np.full(rows.size, -1, dtype=np.int64)
    original[valid] = trace.source_index[rows[valid]]
    chunk_of = np.searchsorted(firsts, original, side="right") - 1
    usable = np.flatnonzero((original >= 0) & (chunk_of >= 0))
    for index in np.unique(chunk_of[usable]).tolist():
        try:
            items = _chunk_args(trace, int(index))
        except (OSError, ValueError, msgspec.DecodeError):
            continue
        first = trace.chunks[int(index)].first_row
        batch = []
        for k in usable[chunk_of[usable] == index].tolist():
            slot = int(original[k]) - first
            if 0 <= slot < len(items):
                batch.append((k, items[slot]))
        yield batch


def event_args(trace: Trace, row: int) -> dict[str, Any]:
    """The event's ``args`` as a dict ({} when it has none or was not from a file)."""
    if trace.source_index is None or not trace.chunks or row >= trace.source_index.size:
        return {}
    original = int(trace.source_index[row])
    if original < 0:
        return {}
    firsts = np.fromiter((c.first_row for c in trace.chunks), dtype=np.int64, count=len(trace.chunks))
    index = int(np.searchsorted(firsts, original, side="right")) - 1
    if index < 0:
        return {}
    chunk = trace.chunks[index]
    slot = original - chunk.first_row
    try:
        items = _chunk_args(trace, index)
    except (OSError, ValueError, msgspec.DecodeError):
        return {}
    if not 0 <= slot < len(items):
        return {}
    try:
        value = ANY_DECODER.decode(items[slot])
    except RecursionError:
        value = ANY_DECODER.decode(flatten_deep(bytes(items[slot])))
    except msgspec.DecodeError:
        return {}
    return value if isinstance(value, dict) else {}
