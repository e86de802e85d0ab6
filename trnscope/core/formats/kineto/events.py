"""Typed msgspec structs for trace events, and their conversion into columns.

Only the fields that tables and links need are decoded eagerly; everything else in
``args`` is skipped by msgspec and decoded later, per event, when it is shown
(``trnscope.core.formats.kineto.lazyargs``).
"""

from __future__ import annotations

import math
from itertools import compress
from operator import attrgetter
from typing import Any

import msgspec
import numpy as np

from trnscope.core.model.vocab import (
    NONE_ID,
    PH_CODES,
    PH_FLOW_END,
    PH_FLOW_START,
    PH_FLOW_STEP,
    PH_META,
    PH_OTHER,
    PH_X,
    Interner,
)


class EagerArgs(
    msgspec.Struct,
    frozen=True,
    gc=False,
    rename={
        "external_id": "External id",
        "external_id_2021": "external id",
        "sequence_number": "Sequence number",
        "input_dims": "Input Dims",
        "call_stack": "Call stack",
    },
):
    """The few ``args`` every loader needs up front; the rest stay undecoded.

    Absent ids default to NONE_ID so that columns build with ``np.fromiter``."""

    external_id: int | str | None = NONE_ID
    external_id_2021: int | str | None = NONE_ID
    correlation: int | str | None = NONE_ID
    sequence_number: int | str | None = NONE_ID
    input_dims: msgspec.Raw = msgspec.Raw(b"")
    call_stack: str | None = None
    name: str | None = None  # process_name / thread_name metadata
    labels: str | None = None
    sort_index: int | str | None = None


NO_ARGS = EagerArgs()


class RawEvent(msgspec.Struct, gc=False):
    ph: str = ""
    cat: str | None = None
    name: str | None = None
    pid: int | str | None = None
    tid: int | str | None = None
    ts: float | str | None = math.nan
    dur: float | str | None = math.nan
    id: int | str | None = NONE_ID
    bp: str | None = None
    args: EagerArgs = NO_ARGS


class ArgsOnly(msgspec.Struct, gc=False):
    """Used to re-read one chunk when the full args of an event are shown."""

    args: msgspec.Raw = msgspec.Raw(b"null")


EVENT_LIST_DECODER = msgspec.json.Decoder(list[RawEvent])
ANY_DECODER = msgspec.json.Decoder()
ARGS_LIST_DECODER = msgspec.json.Decoder(list[ArgsOnly])


class ChunkColumns(msgspec.Struct):
    """Columns for the events of one decoded chunk, with chunk-local string ids."""

    ph: np.ndarray  # uint8
    name: np.ndarray  # int32 → names
    cat: np.ndarray  # int32 → cats
    thread: np.ndarray  # int32 → threads (raw (pid, tid) pairs)
    ts_ns: np.ndarray  # int64 ns, absolute in the file's unit (µs × 1000)
    dur_ns: np.ndarray  # int64 ns, -1 if absent
    external_id: np.ndarray  # int64, NONE_ID if absent
    correlation: np.ndarray  # int64
    sequence: np.ndarray  # int64
    flow_id: np.ndarray  # int64
    flow_bind_end: np.ndarray  # bool: "bp": "e"
    dims: np.ndarray  # int32 → shapes
    stack: np.ndarray  # int32 → stacks
    valid: np.ndarray  # bool: has what its phase needs (ts, and dur for X)
    # int64 rows of metadata events that a later one of the same kind overrides (the
    # merge folds them: only the last of each kind counts, as in the Chrome viewer)
    repeated_meta: np.ndarray
    names: list[str]
    cats: list[str]
    threads: list[tuple[Any, Any]]
    shapes: list[str]
    stacks: list[str]
    # (row, name, value, labels, sort, pid, tid): the last metadata event of each kind
    meta: list[tuple[int, str, str | None, str | None, Any, Any, Any]]
    bad_values: int = 0  # fields with a wrong type that were coerced or dropped


# -- coercion helpers (slow path only) ------------------------------------------

_INT64_MAX = (1 << 63) - 1


def _to_float(value: Any) -> float:
    if value is None or isinstance(value, bool):
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an integer of hundreds of digits
        return math.nan


def id_to_int(value: Any, text_ids: Interner) -> int:
    """An id as an int64 usable for joins: ints as is (wrapped to 64 bits), numeric
    strings parsed, any other string interned into the negative range below -1."""
    if value is None or isinstance(value, bool):
        return NONE_ID
    if isinstance(value, int):
        if -_INT64_MAX <= value <= _INT64_MAX:
            return value
        return ((value + (1 << 63)) % (1 << 64)) - (1 << 63)
    if isinstance(value, float):
        return int(value) if math.isfinite(value) else NONE_ID
    if isinstance(value, str):
        text = value.strip()
        try:
            return id_to_int(int(text, 0) if text.lower().startswith("0x") else int(text), text_ids)
        except ValueError:
            return -2 - text_ids[text]
    return NONE_ID


def _float_column(values: list[Any]) -> tuple[np.ndarray, int]:
    """float64 column; None → nan.  Returns the column and how many values were bad."""
    try:
        return np.array(values, dtype=np.float64), 0
    except (TypeError, ValueError, OverflowError):
        out = np.array([_to_float(v) for v in values], dtype=np.float64)
        bad = sum(1 for v in values if v is not None and not isinstance(v, (int, float)))
        return out, bad


def _id_column(values: list[Any], text_ids: Interner) -> np.ndarray:
    try:
        column = np.array(values, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        return np.array([id_to_int(v, text_ids) for v in values], dtype=np.int64)
    finite = np.isfinite(column)
    if finite.any() and np.abs(column[finite]).max() >= 2**53:
        return np.array([id_to_int(v, text_ids) for v in values], dtype=np.int64)
    out = np.full(column.shape, NONE_ID, dtype=np.int64)
    out[finite] = column[finite].astype(np.int64)
    return out


# Largest |time| in microseconds a trace may hold (about 142 years from its zero): any
# two such times, and a start plus a duration, still fit int64 nanoseconds.
MAX_ABS_US = 4.5e15


def us_to_ns(ts_us: np.ndarray) -> np.ndarray:
    """Microseconds (with up to three decimals) → integer nanoseconds, exactly.

    Subtracting an integer base first keeps the product below 2**53 for absolute
    16-digit microsecond timestamps (2021–2024 files), where ``ts * 1000`` alone
    would round to the nearest 256 ns."""
    finite = np.isfinite(ts_us)
    if not finite.any():
        return np.full(ts_us.shape, np.iinfo(np.int64).min, dtype=np.int64)
    base = math.floor(float(ts_us[finite].min()))
    rel = np.where(finite, ts_us - base, 0.0)
    out = np.rint(rel * 1000.0).astype(np.int64) + np.int64(base) * 1000
    out[~finite] = np.iinfo(np.int64).min
    return out


_get_ts = attrgetter("ts")
_get_dur = attrgetter("dur")
_get_external = attrgetter("args.external_id")
_get_external_2021 = attrgetter("args.external_id_2021")
_get_correlation = attrgetter("args.correlation")
_get_sequence = attrgetter("args.sequence_number")
_get_dims = attrgetter("args.input_dims")
_get_id = attrgetter("id")
_get_stack = attrgetter("args.call_stack")
LEGACY_CATEGORIES = frozenset({"Operator", "Runtime", "Kernel", "Memcpy", "Memset"})
OP_CATEGORIES = frozenset({"cpu_op", "operator", "user_annotation"})


def _fast_floats(events: list[RawEvent], getter: attrgetter[Any], n: int) -> tuple[np.ndarray, int]:
    try:
        return np.fromiter(map(getter, events), dtype=np.float64, count=n), 0
    except (TypeError, ValueError, OverflowError):
        return _float_column(list(map(getter, events)))


def _fast_ids(
    events: list[RawEvent], getter: attrgetter[Any], n: int, text_ids: Interner, only: list[bool] | None = None
) -> np.ndarray:
    """Id column of ``events`` (or of those where ``only`` is true; ``n`` of them)."""
    try:
        return np.fromiter(map(getter, events if only is None else compress(events, only)), dtype=np.int64, count=n)
    except (TypeError, ValueError, OverflowError):
        return _id_column(list(map(getter, events if only is None else compress(events, only))), text_ids)


def columns_from_events(events: list[RawEvent], text_ids: Interner) -> ChunkColumns:
    n = len(events)
    # One pass interns the fields that repeat (phase, category, name, thread, flow
    # binding) together: a trace has a few thousand such kinds, and splitting them
    # into columns is then array indexing instead of five passes over the events.
    kinds = Interner()
    kind_of = kinds.__getitem__
    # (a comprehension reads a struct's fields faster than ``attrgetter`` with several
    # names: 182 against 247 ns an event on xDiT)
    kind_col = np.fromiter(
        [kind_of((e.ph, e.cat, e.name, e.pid, e.tid, e.bp)) for e in events], dtype=np.int32, count=n
    )
    names, cats, threads = Interner(), Interner(), Interner()
    kind_table = kinds.values_in_order()
    ph = np.array([PH_CODES.get(k[0], PH_OTHER) for k in kind_table], dtype=np.uint8)[kind_col]
    cat_col = np.array([cats[k[1]] for k in kind_table], dtype=np.int32)[kind_col]
    name_col = np.array([names[k[2]] for k in kind_table], dtype=np.int32)[kind_col]
    thread_col = np.array([threads[(k[3], k[4])] for k in kind_table], dtype=np.int32)[kind_col]
    binds_end = np.array([k[5] == "e" for k in kind_table], dtype=bool)[kind_col]

    ts_us, bad_ts = _fast_floats(events, _get_ts, n)
    dur_us, bad_dur = _fast_floats(events, _get_dur, n)
    # Times that integer nanoseconds cannot hold (1e308, 2**70) are missing, not clamped.
    ts_us[np.abs(ts_us) > MAX_ABS_US] = np.nan
    dur_us[np.abs(dur_us) > MAX_ABS_US] = np.nan
    ts_ns = us_to_ns(ts_us)
    dur_ok = np.isfinite(dur_us)
    dur_ns = np.full(n, -1, dtype=np.int64)
    dur_ns[dur_ok] = np.rint(dur_us[dur_ok] * 1000.0).astype(np.int64)

    is_x = ph == PH_X
    # an event without a known phase, or without a start, cannot be placed; a complete
    # event also needs a duration that is not negative.  Metadata (thread and process
    # names) needs no time: ``ts`` is optional there in the Chrome format.
    untimed_meta = (ph == PH_META) & ~np.isfinite(ts_us)
    ts_ns[untimed_meta] = 0
    valid = (np.isfinite(ts_us) | untimed_meta) & (ph != PH_OTHER) & (~is_x | (dur_ok & (dur_ns >= 0)))

    external = _fast_ids(events, _get_external, n, text_ids)
    cat_names = [c if isinstance(c, str) else "" for c in cats.values_in_order()]
    if LEGACY_CATEGORIES.intersection(cat_names):  # 2021: lower-case "external id"
        legacy = _fast_ids(events, _get_external_2021, n, text_ids)
        external = np.where(external == NONE_ID, legacy, external)
    correlation = _fast_ids(events, _get_correlation, n, text_ids)

    # Sequence numbers and input shapes only exist on operators: read them there only.
    op_cats = np.array([c.lower() in OP_CATEGORIES for c in cat_names], dtype=bool)
    sequence = np.full(n, NONE_ID, dtype=np.int64)
    dims = np.full(n, -1, dtype=np.int32)
    shapes: list[str] = []
    op_mask = op_cats[cat_col] if op_cats.any() else np.zeros(n, dtype=bool)
    op_rows = np.flatnonzero(op_mask)
    stacks = Interner()
    stack = np.full(n, -1, dtype=np.int32)
    if op_rows.size:
        is_op = op_mask.tolist()
        count = int(op_rows.size)
        sequence[op_rows] = _fast_ids(events, _get_sequence, count, text_ids, is_op)
        shapes_raw = Interner()
        local = np.fromiter(
            map(shapes_raw.__getitem__, map(bytes, map(_get_dims, compress(events, is_op)))),
            dtype=np.int32,
            count=count,
        )
        raw_shapes = shapes_raw.values_in_order()
        kept = [raw for raw in raw_shapes if raw]
        shape_map = np.full(len(raw_shapes), -1, dtype=np.int32)
        shape_map[[i for i, raw in enumerate(raw_shapes) if raw]] = np.arange(len(kept), dtype=np.int32)
        dims[op_rows] = shape_map[local]
        shapes = [_compact(raw) for raw in kept]
        if any(map(_get_stack, compress(events, is_op))):  # 2021-era "Call stack" strings, on operators
            local = np.fromiter(map(stacks.__getitem__, map(_get_stack, compress(events, is_op))), np.int32, count)
            stack_map = np.array([-1 if not text else i for i, text in enumerate(stacks.values_in_order())], np.int32)
            stack[op_rows] = stack_map[local]

    flow_id = np.full(n, NONE_ID, dtype=np.int64)
    flow_bind_end = np.zeros(n, dtype=bool)
    is_flow = (ph == PH_FLOW_START) | (ph == PH_FLOW_END) | (ph == PH_FLOW_STEP)
    flow_rows = np.flatnonzero(is_flow)
    if flow_rows.size:
        flow_id[flow_rows] = _fast_ids(events, _get_id, int(flow_rows.size), text_ids, is_flow.tolist())
        flow_bind_end[flow_rows] = binds_end[flow_rows]

    meta: list[tuple[int, str, str | None, str | None, Any, Any, Any]] = []
    meta_rows = np.flatnonzero(ph == PH_META)
    repeated_meta = np.empty(0, dtype=np.int64)
    if meta_rows.size:
        # Some files repeat the same process and thread names hundreds of thousands of
        # times (one MTIA trace: 310,000 of them for 17 threads, two thirds of its
        # events); the last of each kind (name, category, thread) is the one that
        # counts, as in the Chrome viewer.  The others become no rows at all.
        backwards = kind_col[meta_rows][::-1]
        _, last_backwards = np.unique(backwards, return_index=True)
        last_rows = np.sort(meta_rows[::-1][last_backwards])
        if last_rows.size < meta_rows.size:
            repeated_meta = np.setdiff1d(meta_rows, last_rows, assume_unique=True)
        for i in last_rows.tolist():
            event = events[i]
            a = event.args
            meta.append((i, event.name or "", a.name, a.labels, a.sort_index, event.pid, event.tid))

    return ChunkColumns(
        ph=ph,
        name=name_col,
        cat=cat_col,
        thread=thread_col,
        ts_ns=ts_ns,
        dur_ns=dur_ns,
        external_id=external,
        correlation=correlation,
        sequence=sequence,
        flow_id=flow_id,
        flow_bind_end=flow_bind_end,
        dims=dims,
        stack=stack,
        valid=valid,
        repeated_meta=repeated_meta,
        names=[x if isinstance(x, str) else ("" if x is None else str(x)) for x in names.values_in_order()],
        cats=[x if isinstance(x, str) else "" for x in cats.values_in_order()],
        threads=threads.values_in_order(),
        shapes=shapes,
        stacks=[text or "" for text in stacks.values_in_order()],
        meta=meta,
        bad_values=bad_ts + bad_dur,
    )


_WS_TABLE = bytes.maketrans(b"", b"")


def _compact(raw: bytes) -> str:
    """Input Dims as ``str()`` of the list would print them (key_averages' shape key)."""
    text = raw.translate(_WS_TABLE, b" \n\r\t").decode("utf-8", "replace")
    return text.replace(",", ", ")


# -- lenient path: valid JSON whose values have unexpected types ------------------


def _text_or_none(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)


def _scalar_or_none(value: Any) -> int | str | None:
    if value is None or (isinstance(value, (int, str)) and not isinstance(value, bool)):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return int(value)
    return None


def _number_or_none(value: Any) -> float | str | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float, str)):
        return value
    return None


def coerce_event(obj: Any) -> RawEvent:
    """Build a RawEvent from any decoded JSON value; a value that is not an object
    becomes an event without ts/dur, so the loader counts it as skipped."""
    if not isinstance(obj, dict):
        return RawEvent()
    raw_args = obj.get("args")
    args = NO_ARGS
    if isinstance(raw_args, dict):
        dims = raw_args.get("Input Dims")
        stack = raw_args.get("Call stack")
        sort = raw_args.get("sort_index")
        args = EagerArgs(
            external_id=_scalar_or_none(raw_args.get("External id")),
            external_id_2021=_scalar_or_none(raw_args.get("external id")),
            correlation=_scalar_or_none(raw_args.get("correlation")),
            sequence_number=_scalar_or_none(raw_args.get("Sequence number")),
            input_dims=msgspec.Raw(msgspec.json.encode(dims)) if isinstance(dims, list) else msgspec.Raw(b""),
            call_stack=stack if isinstance(stack, str) else None,
            name=_text_or_none(raw_args.get("name")),
            labels=_text_or_none(raw_args.get("labels")),
            sort_index=sort if isinstance(sort, (int, str)) and not isinstance(sort, bool) else None,
        )
    ph = obj.get("ph")
    return RawEvent(
        ph=ph if isinstance(ph, str) else "",
        cat=_text_or_none(obj.get("cat")),
        name=_text_or_none(obj.get("name")),
        pid=_scalar_or_none(obj.get("pid")),
        tid=_scalar_or_none(obj.get("tid")),
        ts=_number_or_none(obj.get("ts")),
        dur=_number_or_none(obj.get("dur")),
        id=_scalar_or_none(obj.get("id")),
        bp=_text_or_none(obj.get("bp")),
        args=args,
    )
