"""Cut the ``traceEvents`` array into chunks that msgspec can decode on their own.

A chunk is a byte range ``[start, end)`` that begins with the ``{`` of one event and
ends after the ``}`` of another, at the top level of the array.  Candidate cuts are
found with a regular expression (``}`` , ``{``); a candidate is *proven* when the text
from a proven cut up to it decodes as a JSON array, since then the parser is back
at the array's top level there.  A candidate inside a string or inside nested
``args`` never decodes, so it is never taken.

When a chunk does not decode, the chunk is read piece by piece, from candidate to
candidate: pieces that decode are kept, pieces that never do (an unescaped quote,
a cut in the middle of the file) are counted as lost, and a missing end (a
truncated file) stops the scan with the number of bytes that could not be read.
"""

from __future__ import annotations

import contextlib
import mmap
import re
from collections.abc import Callable
from enum import Enum
from typing import Any

import msgspec

from trnscope.core.base.jsondepth import flatten_deep
from trnscope.core.formats.kineto.events import ANY_DECODER, EVENT_LIST_DECODER, RawEvent, coerce_event

# what an event's start looks like: "{" and a key.  A cut found inside a string is
# followed by the string's text, where every '"' is escaped: it cannot look like this.
EVENT_START = re.compile(rb'\{\s*"[^"\\]*"\s*:')
BOUNDARY = re.compile(rb"\}\s*,\s*\{")
_ARRAY_END = re.compile(rb"\}\s*\]")
_MAX_PIECE_BYTES = 4 << 20


class Cut(msgspec.Struct, frozen=True):
    end: int  # index just after the closing brace of the last event of a chunk
    next_start: int  # index of the next event's "{", or -1 when the array closes
    array_end: int  # index of the closing "]" when next_start == -1, else -1


class Piece(msgspec.Struct):
    """A decoded range of events, ready to be turned into columns."""

    start: int
    end: int
    events: list[RawEvent]
    utf8_repaired: bool = False


class ScanReport(msgspec.Struct):
    array_end: int = -1  # -1: the array never closed (truncated input)
    lost_events: int = 0
    lost_bytes: int = 0
    repaired_chunks: int = 0
    lenient_chunks: int = 0
    flattened_chunks: int = 0  # chunks with values nested deeper than MAX_DEPTH (dropped)
    stopped_at: int = -1  # where a limited scan ended (a proven cut), -1 if at the array end


def next_cut(buf: Any, after: int) -> Cut | None:
    """The first candidate cut at or after ``after``; None when there is none.  A
    "}, {" whose "{" does not start something like an event (one inside a string) is
    passed over, for up to 4 MiB."""
    boundary = BOUNDARY.search(buf, after)
    first = boundary
    while boundary is not None and not EVENT_START.match(buf, boundary.end() - 1):
        if boundary.end() - after > _MAX_PIECE_BYTES:
            boundary = first
            break
        boundary = BOUNDARY.search(buf, boundary.end() - 1)
    limit = boundary.start() if boundary is not None else len(buf)
    array_end = _ARRAY_END.search(buf, after, limit + 1)
    if array_end is None:
        if boundary is None:
            return None
        return Cut(end=boundary.start() + 1, next_start=boundary.end() - 1, array_end=-1)
    return Cut(end=array_end.start() + 1, next_start=-1, array_end=array_end.end() - 1)


# entries that are not objects after the last event: `, 7`, `, "text"`, `, null`
_SCALAR_TAIL = re.compile(rb'(?:\s*,\s*(?:-?[0-9][0-9.eE+-]*|"[^"\\]*"|true|false|null))+\s*\Z')
_TAIL_WINDOW = 4096


def last_array_end(buf: Any, after: int) -> Cut | None:
    """The last "}" "]" in the file after ``after``: where a complete events array ends
    unless the file goes on with more nested lists (then decoding reports it).  Scalar
    entries between the last event and the "]" stay inside the chunk, so they are
    decoded (and counted as skipped) like such entries anywhere else."""
    close = len(buf)
    while True:
        close = buf.rfind(b"]", after, close)
        if close < 0:
            return None
        end = _entries_end(buf, after, close)
        if end >= 0:
            return Cut(end=end, next_start=-1, array_end=close)


def _entries_end(buf: Any, after: int, close: int) -> int:
    """Where the array's last entry ends before its "]" at ``close``: just after a "}",
    or after scalar entries that follow the last "}"; -1 if neither."""
    index = close - 1
    while index > after and buf[index : index + 1] in (b" ", b"\n", b"\r", b"\t"):
        index -= 1
    if buf[index : index + 1] in (b"}", b"]"):  # an event, or a list standing where one should (skipped later)
        return index + 1
    brace = buf.rfind(b"}", max(after, close - _TAIL_WINDOW), close)
    if brace >= 0 and _SCALAR_TAIL.match(bytes(buf[brace + 1 : index + 1])):
        return index + 1
    return -1


def cut_before(buf: Any, start: int) -> Cut | None:
    """The candidate cut whose next event starts at ``start`` (for parallel ranges)."""
    window_start = max(0, start - 4096)
    last = None
    for match in BOUNDARY.finditer(buf, window_start, start + 1):
        if match.end() - 1 == start:
            last = match
    if last is None:
        return None
    return Cut(end=last.start() + 1, next_start=start, array_end=-1)


def find_events_array(buf: Any) -> tuple[str, int]:
    """Where the events array starts: ("object", index of "[") for a Kineto object,
    ("array", index) for a bare legacy array.  Raises ValueError with a reason."""
    size = len(buf)
    head = bytes(buf[: min(size, 64)]).lstrip(b"\xef\xbb\xbf \t\r\n")
    if not head:
        raise ValueError("empty file" if size == 0 else "file holds only whitespace")
    first = head[:1]
    if first == b"[":
        return "array", bytes(buf[:64]).index(b"[")
    if first != b"{":
        raise ValueError("not JSON (does not start with '{' or '[')")
    opening = bytes(buf[:64]).index(b"{")
    array = top_level_array(buf, b"traceEvents", opening + 1)
    if array < 0:
        raise LookupError("JSON object without a traceEvents array")
    return "object", array


_STRUCTURE = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')
_KEY_VALUE = re.compile(rb"\s*:\s*")


def top_level_array(buf: Any, key: bytes, start: int, depth: int = 1) -> int:
    """Index of the "[" that opens the array under ``key`` of the top-level object, or
    -1.  Scanning starts at ``start`` at nesting ``depth`` (1: inside the top-level
    object).  Only keys of the top-level object count: a ``traceEvents`` inside
    ``deviceProperties`` or ``distributedInfo`` is skipped with its value.  Candidates
    are found with one regular expression; the scan for nesting runs only over the text
    before them, which in a trace is the short header."""
    quoted = b'"' + key + b'"'
    scanned_to = start
    while True:
        candidate = buf.find(quoted, scanned_to)
        if candidate < 0:
            return -1
        for token in _STRUCTURE.finditer(buf, scanned_to, candidate + 1):
            if token.start() >= candidate:
                break
            char = token.group()[:1]
            if char in (b"[", b"{"):
                depth += 1
            elif char in (b"]", b"}"):
                depth -= 1
            elif token.end() > candidate:  # the candidate is inside a string
                break
        else:
            token = None
        inside_string = token is not None and token.group()[:1] == b'"' and token.start() < candidate
        if inside_string:
            assert token is not None
            scanned_to = token.end()
            continue
        colon = _KEY_VALUE.match(buf, candidate + len(quoted))
        if depth == 1 and colon is not None and buf[colon.end() : colon.end() + 1] == b"[":
            return colon.end()
        scanned_to = candidate + len(quoted)


class Opening(Enum):
    """What follows the events array's "[" ."""

    FIRST_EVENT = "first event"  # a "{": events to decode
    EMPTY = "empty"  # a "]": no events
    TRUNCATED = "truncated"  # the file ends right after "["
    NOT_OBJECTS = "not objects"  # something other than an object: not a trace


class ArrayOpening(msgspec.Struct, frozen=True):
    kind: Opening
    index: int  # of the first "{" (FIRST_EVENT) or of the "]" (EMPTY); else -1


def array_opening(buf: Any, array_open: int) -> ArrayOpening:
    """What the events array opened at ``array_open`` starts with."""
    index = array_open + 1
    size = len(buf)
    while index < size and buf[index : index + 1] in (b" ", b"\n", b"\r", b"\t"):
        index += 1
    if index >= size:
        return ArrayOpening(Opening.TRUNCATED, -1)
    char = buf[index : index + 1]
    if char == b"{":
        return ArrayOpening(Opening.FIRST_EVENT, index)
    if char == b"]":
        return ArrayOpening(Opening.EMPTY, index)
    return ArrayOpening(Opening.NOT_OBJECTS, -1)


def _decode(data: bytes | bytearray) -> list[RawEvent]:
    return EVENT_LIST_DECODER.decode(data)


def _decode_lenient(data: bytes | bytearray) -> list[RawEvent]:
    values = ANY_DECODER.decode(data)
    if not isinstance(values, list):
        raise msgspec.DecodeError("not an array")
    return [coerce_event(v) for v in values]


def framed(buf: Any, start: int, end: int) -> bytearray:
    data = bytearray(b"[")
    data += memoryview(buf)[start:end]
    data += b"]"
    return data


class Decoded(msgspec.Struct):
    events: list[RawEvent]
    lenient: bool  # values of unexpected types were converted or ignored
    repaired: bool  # invalid UTF-8 was replaced
    flattened: bool  # values nested deeper than MAX_DEPTH were dropped


def _decode_any_depth(data: bytes | bytearray) -> tuple[list[RawEvent], bool, bool]:
    """(events, lenient, flattened)."""
    try:
        return _decode(data), False, False
    except msgspec.ValidationError:
        try:
            return _decode_lenient(data), True, False
        except RecursionError:  # an element that is no event, nested past the bound
            pass
    except RecursionError:
        pass
    shallow = flatten_deep(data)
    try:
        return _decode(shallow), False, True
    except msgspec.ValidationError:
        return _decode_lenient(shallow), True, True


def decode_range(buf: Any, start: int, end: int) -> Decoded:
    """Decode events in ``buf[start:end]``.

    Raises msgspec.DecodeError when the range is not valid JSON even after repair."""
    data = framed(buf, start, end)
    try:
        events, lenient, flattened = _decode_any_depth(data)
        return Decoded(events, lenient, False, flattened)
    except msgspec.DecodeError as error:
        if "UTF-8" not in str(error):
            raise
    repaired = bytes(data).decode("utf-8", "replace").encode("utf-8")
    events, lenient, flattened = _decode_any_depth(repaired)
    return Decoded(events, lenient, True, flattened)


_TRAILING = re.compile(r"trailing characters \(byte (\d+)\)")


_ERROR_AT = re.compile(r"\(byte (\d+)\)")


def _longer_piece_may_decode(error: msgspec.DecodeError, framed_length: int) -> bool:
    """Whether a piece that failed could decode if it ran on past its cut.  JSON is read
    left to right, so an error before the piece's end stays whatever follows it: only a
    piece that ends inside a string (its cut lies in one) can be helped, and that one
    fails as truncated.  (Anything else failing fast matters: a start inside a string
    used to be retried at every later "}, {" up to 4 MiB.)"""
    text = str(error)
    if "truncated" in text or "UTF-8" in text:  # (a repaired piece's offsets have moved)
        return True
    at = _ERROR_AT.search(text)
    return at is None or int(at.group(1)) >= framed_length - 2


def _array_closed_early(buf: Any, start: int, end: int, error: msgspec.DecodeError) -> Cut | None:
    """When the framed range parsed up to a "]" and then found more text, the events
    array really closed inside the range: return the cut at that "]"."""
    match = _TRAILING.search(str(error))
    if match is None:
        return None
    limit = min(end, start + int(match.group(1)) - 1)
    close = buf.rfind(b"]", start, limit)
    entries_end = _entries_end(buf, start, close) if close >= 0 else -1
    if entries_end < 0:
        brace = buf.rfind(b"}", start, close) if close >= 0 else -1
        if brace < 0:
            return None
        entries_end = brace + 1
    return Cut(end=entries_end, next_start=-1, array_end=close)


def scan(  # noqa: C901 - the scanner's states (string, escape, depth) in one loop: the hot path
    buf: Any,
    start: int,
    *,
    chunk_bytes: int = 8 << 20,
    stop: int | None = None,
    on_piece: Callable[[Piece], None],
    report: ScanReport,
    cancelled: Callable[[], bool] = lambda: False,
    on_stop_unproven: Callable[[], None] = lambda: None,
) -> None:
    """Decode events from the proven start ``start`` (the index of an event's "{").

    With ``stop`` (the "{" of a later event, found heuristically), the scan ends at the
    cut just before it and sets ``report.stopped_at`` to ``stop`` if that cut proved
    right; a scan that could not prove it says so (``on_stop_unproven``, once, as soon
    as it has gone past ``stop``) and runs on to the end of the array."""
    position = start
    size = len(buf)
    stop_cut = cut_before(buf, stop) if stop is not None else None
    if stop is not None and stop_cut is None:
        on_stop_unproven()
    while position >= 0:
        if cancelled():
            return
        if stop_cut is not None and position == stop_cut.next_start:
            report.stopped_at = position
            return
        if stop_cut is not None and position > stop_cut.next_start:
            stop_cut = None  # a cut inside a string: this range runs on to the end
            on_stop_unproven()
        target = position + chunk_bytes
        cut: Cut | None
        if stop_cut is not None and stop_cut.end > position and target >= stop_cut.end:
            cut = stop_cut
        elif target < size:
            cut = next_cut(buf, target) or last_array_end(buf, position)
        else:
            cut = last_array_end(buf, position)
        if cut is None:
            _piecewise(buf, position, size, on_piece, report, stop_cut)
            return
        try:
            decoded = decode_range(buf, position, cut.end)
        except msgspec.DecodeError as error:
            early = _array_closed_early(buf, position, cut.end, error)
            if early is not None:
                cut = early
                try:
                    decoded = decode_range(buf, position, cut.end)
                except msgspec.DecodeError:
                    position = _piecewise(buf, position, cut.end, on_piece, report, stop_cut)
                    continue
            else:
                position = _piecewise(buf, position, cut.end, on_piece, report, stop_cut)
                continue
        _count(report, decoded)
        on_piece(Piece(position, cut.end, decoded.events, decoded.repaired))
        release(buf, position, cut.end)
        if cut.next_start < 0:
            report.array_end = cut.array_end
            return
        position = cut.next_start


def _count(report: ScanReport, decoded: Decoded) -> None:
    report.lenient_chunks += int(decoded.lenient)
    report.repaired_chunks += int(decoded.repaired)
    report.flattened_chunks += int(decoded.flattened)


def release(buf: Any, start: int, end: int) -> None:
    """Let the kernel drop the pages of a mapped file region we are done with, so the
    whole file never sits in this process's resident memory (they are clean file pages:
    dropping them costs nothing, touching them again re-reads from the page cache)."""
    madvise = getattr(buf, "madvise", None)
    if madvise is None:
        return
    page = mmap.PAGESIZE
    lo = (start // page) * page
    hi = (end // page) * page
    if hi > lo:
        with contextlib.suppress(OSError, ValueError):
            madvise(mmap.MADV_DONTNEED, lo, hi - lo)


def _piecewise(
    buf: Any,
    position: int,
    until: int,
    on_piece: Callable[[Piece], None],
    report: ScanReport,
    stop_cut: Cut | None,
) -> int:
    """Decode event by event from ``position`` until past ``until``.  Returns where the
    normal scan resumes (a cut's next start), or -1 when the input has ended."""
    in_lost_run = False  # the last piece failed too
    while position >= 0 and (position < until or in_lost_run):  # a lost run ends on a good piece
        if stop_cut is not None and position == stop_cut.next_start:
            return position
        first = next_cut(buf, position + 1)
        if first is None:  # no end anywhere after this point: a truncated tail
            return _truncated_tail(buf, position, on_piece, report)
        decoded, cut = _decode_piece(buf, position, first)
        if decoded is not None:
            in_lost_run = False
            _count(report, decoded)
            on_piece(Piece(position, cut.end, decoded.events, decoded.repaired))
            if cut.next_start < 0:
                report.array_end = cut.array_end
                return -1
            position = cut.next_start
            continue
        # Nothing starting here decodes: skip to the next cut.  A broken event whose
        # strings hold "}, {" fails at each of them: one lost event, not one per cut.
        if not in_lost_run or EVENT_START.match(buf, position):
            report.lost_events += 1
        in_lost_run = True
        if first.next_start < 0:
            report.lost_bytes += first.end - position
            report.array_end = first.array_end
            return -1
        report.lost_bytes += first.next_start - position
        position = first.next_start
    return position


def _decode_piece(buf: Any, position: int, first: Cut) -> tuple[Decoded | None, Cut]:
    """The events from ``position`` to the first cut, or, when that cut lies inside a
    string, to the end of the event that starts at ``position``; and the cut used.
    (None when the event does not decode.)  A string can hold thousands of "}, {":
    trying the cuts one by one re-decoded the piece at each of them."""
    try:
        return decode_range(buf, position, first.end), first
    except msgspec.DecodeError as error:
        if first.next_start < 0 or not _longer_piece_may_decode(error, first.end - position + 2):
            return None, first
    end = _value_end(buf, position)
    cut = next_cut(buf, end - 1) if end > first.end else None
    if cut is None:
        return None, first
    try:
        return decode_range(buf, position, cut.end), cut
    except msgspec.DecodeError:
        return None, first


def _value_end(buf: Any, position: int) -> int:
    """Where the JSON value that starts at ``position`` ends (a byte offset; -1 when it
    does not parse within 4 MiB).  The standard library's parser, because it says where
    a value ends and msgspec does not; used only on pieces that failed (and imported
    then: ~2 ms of every start otherwise)."""
    import json

    parser = json.JSONDecoder(strict=False)  # control characters in strings, as msgspec allows
    window = 64 << 10
    while True:
        raw = bytes(buf[position : position + window])
        text = raw.decode("utf-8", "surrogateescape")  # one character per byte it cannot decode
        try:
            _, end = parser.raw_decode(text)
        except json.JSONDecodeError as error:
            cut_short = error.pos >= len(text) - 1 or error.msg.startswith("Unterminated string")
            if not cut_short or len(raw) < window or window >= _MAX_PIECE_BYTES:
                return -1
            window *= 4
            continue
        except RecursionError:
            return -1
        return position + len(text[:end].encode("utf-8", "surrogateescape"))


_TAIL_ATTEMPTS = 64


def _truncated_tail(buf: Any, position: int, on_piece: Callable[[Piece], None], report: ScanReport) -> int:
    """The input ends inside the array.  The last complete event(s) may be followed by
    a comma and nothing else, so try the last closing braces as ends, latest first."""
    size = len(buf)
    close = size
    for _ in range(_TAIL_ATTEMPTS):
        close = buf.rfind(b"}", position, close)
        if close < 0:
            break
        try:
            decoded = decode_range(buf, position, close + 1)
        except msgspec.DecodeError:
            continue
        _count(report, decoded)
        on_piece(Piece(position, close + 1, decoded.events, decoded.repaired))
        position = close + 1
        break
    report.lost_bytes += size - position
    if buf[position:size].strip(b" \t\r\n,"):
        report.lost_events += 1
    return -1
