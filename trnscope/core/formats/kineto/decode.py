"""Decoding one byte range of the events array in this process: chunks cut by
``jsonscan``, decoded by msgspec into typed events, turned into columns."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import msgspec

from trnscope.core.base.errors import LoadCancelled
from trnscope.core.formats.kineto import jsonscan
from trnscope.core.formats.kineto.events import ChunkColumns, columns_from_events
from trnscope.core.formats.source import PlainSource, Progress
from trnscope.core.model.vocab import Interner

# A chunk's events live as Python objects (~500 bytes each on python_function-heavy
# traces) until they become columns: the chunk size sets that transient.  2 MiB rather
# than 8: peak RSS on real traces 75 vs 90 MB (A100), 84 vs 100 (vLLM), 110 vs 122
# (xDiT), at the same speed (bench/real_traces.py, 2026-12-01).
CHUNK_BYTES = 2 << 20


class DecodedChunk(msgspec.Struct):
    start: int
    end: int
    repaired: bool
    columns: ChunkColumns


class RangeResult(msgspec.Struct):
    chunks: list[DecodedChunk]
    report: jsonscan.ScanReport


def decode_buffer(
    buf: Any,
    start: int,
    stop: int | None,
    chunk_bytes: int,
    progress: Callable[[int, int], None] | None = None,
    cancelled: Callable[[], bool] = lambda: False,
    on_stop_unproven: Callable[[], None] = lambda: None,
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
        if progress is not None:
            progress(piece.end, decoded[0])

    jsonscan.scan(
        buf,
        start,
        chunk_bytes=chunk_bytes,
        stop=stop,
        on_piece=on_piece,
        report=report,
        cancelled=cancelled,
        on_stop_unproven=on_stop_unproven,
    )
    if text_ids:
        # Text ids (non-numeric id strings) are interned per range: make them global by
        # re-keying on the text itself.  Rare, so done with plain Python.
        rekey_text_ids(chunks, text_ids)
    return RangeResult(chunks, report)


def rekey_text_ids(chunks: list[DecodedChunk], text_ids: Interner) -> None:
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


def decode_sequentially(
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

    result = decode_buffer(source.buffer, first, None, chunk_bytes, progress=on_progress, cancelled=cancelled)
    if cancelled():
        raise LoadCancelled()
    return [result]
