"""FLOPs per op, as ``key_averages()`` counts them with ``with_flops=True``.

PyTorch does not write FLOP counts into the trace: ``key_averages()`` computes each
op's count from its input sizes, for seven ops only (``torch/csrc/profiler/util.cpp``,
``computeFlops``; verified against torch 2.13 by ``tests/test_parity_torch.py``):

* ``aten::mm``, ``aten::addmm`` — 2 · (mat1's elements ÷ its last dim) · mat2's
  elements (addmm's matrices are its 2nd and 3rd inputs; the bias is not counted);
* ``aten::bmm``, ``aten::baddbmm`` — the same, divided once more by the batch size;
* ``aten::conv2d`` — 2 · N · H_out · W_out · kH · kW · C_in · C_out ÷ groups, with
  stride, padding, dilation and groups read from the event's "Concrete Inputs";
* ``aten::mul``, ``aten::add`` — the first input's elements (the ``_`` in-place forms
  and every other op: no count).

The trace keeps those sizes in "Input Dims" (``record_shapes=True``), so the same
counts follow from it, for any trace with shapes — whether or not it was captured with
``with_flops``.  A conv2d without "Concrete Inputs" (traces before about torch 2.1)
has no count; a group's FLOP/s is shown only when every instance has one.
"""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np

from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.opfigures import FlopFigures
from trnscope.core.analysis.optable import OpTable, RowGroups
from trnscope.core.analysis.table_cache import PerAnalysisCache, PerTableCache
from trnscope.core.base.jsondepth import decode_bounded
from trnscope.core.formats.kineto.lazyargs import raw_args_by_chunk
from trnscope.core.model.roles import Role

CONV2D = "aten::conv2d"
_MATMUL = frozenset({"aten::mm", "aten::addmm"})
_BATCHED = frozenset({"aten::bmm", "aten::baddbmm"})
_ELEMENTWISE = frozenset({"aten::mul", "aten::add"})
_WITH_BIAS = frozenset({"aten::addmm", "aten::baddbmm"})  # matrices are inputs 1 and 2
COUNTED_OPS = _MATMUL | _BATCHED | _ELEMENTWISE | {CONV2D}
UNKNOWN = -1
# A count past this is not from a real op (a trace's sizes are untrusted): no count.
# Under 2^52, sums of up to 2^11 of them stay exact in int64; larger sums are summed
# as Python integers.
MAX_FLOPS = 1 << 52


class FlopsPerRow(msgspec.Struct):
    flops: np.ndarray  # int64 per trace row; 0 for ops PyTorch does not count, UNKNOWN where it cannot be known
    counted_rows: int  # rows of the seven ops with a count (possibly 0)
    unknown_rows: int  # rows of those ops without one (UNKNOWN): the two reasons below
    without_concrete: int = 0  # conv2d rows without "Concrete Inputs" (traces before about torch 2.1)
    # the rest: "Input Dims" that are no list of sizes, or sizes whose count is absurd


def _product(dims: list[int]) -> int:
    out = 1
    for d in dims:
        out *= d
    return out


def _is_size(value: object) -> bool:
    """A tensor's sizes: a list of non-negative integers (anything else is not one)."""
    return isinstance(value, list) and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in value)


def _int_list(text: object) -> list[int] | None:
    if not isinstance(text, str):
        return None
    try:
        value, _deep = decode_bounded(text)
    except msgspec.DecodeError:
        return None
    return value if _is_size(value) else None


def decode_sizes(text: str) -> list[object] | None:
    """An event's "Input Dims" as decoded JSON: a list (one entry per input), else None
    (a file may hold any value there, nested to any depth)."""
    try:
        value, _deep = decode_bounded(text)
    except msgspec.DecodeError:
        return None
    return value if isinstance(value, list) else None


def matmul_flops(name: str, dims: list[object]) -> int:
    """mm / addmm / bmm / baddbmm from their input sizes; 0 where PyTorch gives 0."""
    first = 1 if name in _WITH_BIAS else 0
    if len(dims) < first + 2 or not _is_size(dims[first]) or not _is_size(dims[first + 1]):
        return 0
    mat1, mat2 = dims[first], dims[first + 1]
    assert isinstance(mat1, list) and isinstance(mat2, list)
    if not mat1 or mat1[-1] == 0:
        return 0
    rows = _product(mat1) // mat1[-1]
    if name in _BATCHED:
        if mat1[0] == 0:
            return 0
        rows //= mat1[0]
    return 2 * rows * _product(mat2)


def conv2d_flops(dims: list[object], concrete: list[object]) -> int:
    """conv2d from input/weight sizes and the concrete stride, padding, dilation,
    groups (inputs 3–6); 0 where PyTorch gives 0 (too few inputs, a padding string,
    wrong ranks, zero groups or stride)."""
    if len(concrete) < 7:
        return 0
    stride, padding, dilation = (_int_list(concrete[k]) for k in (3, 4, 5))
    groups_text = concrete[6]
    if stride is None or padding is None or dilation is None or not isinstance(groups_text, str):
        return 0
    try:
        groups = int(groups_text)
    except ValueError:
        return 0
    if len(dims) < 2 or not _is_size(dims[0]) or not _is_size(dims[1]):
        return 0
    sizes, kernel = dims[0], dims[1]
    assert isinstance(sizes, list) and isinstance(kernel, list)
    if len(sizes) != 4 or len(kernel) != 4 or groups == 0 or len(padding) != 2 or len(dilation) != 2:
        return 0
    if len(stride) != 2 or min(stride) <= 0 or groups < 0 or min(padding) < 0 or min(dilation) < 0:
        return 0
    n, c_in, h, w = sizes
    c_out, _, kh, kw = kernel
    h_out = (h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    w_out = (w + 2 * padding[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    if h_out <= 0 or w_out <= 0:  # a kernel larger than its input: no valid output
        return 0
    return 2 * n * h_out * w_out * kh * kw * c_in * c_out // groups


def elementwise_flops(dims: list[object]) -> int:
    first = dims[0] if dims else None
    return _product(first) if isinstance(first, list) and _is_size(first) else 0


def flops_of(name: str, dims: object, concrete: list[object] | None = None) -> int:
    """One op instance's FLOPs by PyTorch's formula (0 for ops it does not count;
    UNKNOWN where the trace lacks what the formula needs — "Input Dims" that are no
    list of inputs — or its sizes are absurd)."""
    if name not in COUNTED_OPS:
        return 0
    if not isinstance(dims, list):
        return UNKNOWN
    if name in _MATMUL or name in _BATCHED:
        flops = matmul_flops(name, dims)
    elif name in _ELEMENTWISE:
        flops = elementwise_flops(dims)
    elif name == CONV2D:
        flops = UNKNOWN if concrete is None else conv2d_flops(dims, concrete)
    else:
        flops = 0
    return flops if -1 <= flops <= MAX_FLOPS else UNKNOWN


class _ConcreteArgs(msgspec.Struct):
    concrete: Any = msgspec.field(default=None, name="Concrete Inputs")


_CONCRETE_ARGS = msgspec.json.Decoder(_ConcreteArgs)


def _concrete_inputs(raw: msgspec.Raw | None) -> list[object] | None:
    """conv2d's "Concrete Inputs" (None when absent or not a list)."""
    if raw is None:
        return None
    try:
        value = _CONCRETE_ARGS.decode(raw).concrete
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    return value if isinstance(value, list) else None


_per_analysis: PerAnalysisCache[FlopsPerRow | None] = PerAnalysisCache()


def flops_known(analysis: Analysis) -> bool:
    """``flops_of_trace`` is already computed (see ``memory.memory_columns_ready``)."""
    return _per_analysis.known(analysis)


def seed_flops(analysis: Analysis, per_row: FlopsPerRow | None) -> None:
    """What an earlier open computed (the index cache)."""
    _per_analysis.seed(analysis, per_row)


def flops_of_trace(analysis: Analysis) -> FlopsPerRow | None:
    """``flops_per_row`` once per analysis (the TUI asks on every table rebuild)."""
    return _per_analysis.get(analysis, flops_per_row)


def _counted_rows(analysis: Analysis) -> np.ndarray:
    """Op rows of the seven ops PyTorch counts that carry input shapes."""
    trace = analysis.trace
    ev = trace.events
    counted_ids = [i for i, name in enumerate(trace.names) if name in COUNTED_OPS]
    if not counted_ids or not trace.shapes:
        return np.empty(0, dtype=np.int64)
    return np.flatnonzero(np.isin(ev.name, counted_ids) & (ev.role == int(Role.OP)) & (ev.dims >= 0))


_rows_named: PerAnalysisCache[np.ndarray] = PerAnalysisCache()


def _rows_named_as_counted(analysis: Analysis) -> np.ndarray:
    """Every row named like one of the seven ops PyTorch counts, whatever its kind."""
    trace = analysis.trace
    counted_ids = [i for i, name in enumerate(trace.names) if name in COUNTED_OPS]
    return np.flatnonzero(np.isin(trace.events.name, counted_ids)) if counted_ids else np.empty(0, dtype=np.int64)


def flops_possible(analysis: Analysis) -> bool:
    """The trace can give FLOP counts (without computing them: no args are read)."""
    return bool(_counted_rows(analysis).size)


def flops_per_row(analysis: Analysis) -> FlopsPerRow | None:
    """FLOPs of every op instance; None when the trace has no shapes for a counted op."""
    trace = analysis.trace
    ev = trace.events
    rows = _counted_rows(analysis)
    if rows.size == 0:
        return None
    flops = np.zeros(len(ev), dtype=np.int64)
    conv_id = trace.names.index(CONV2D) if CONV2D in trace.names else -1
    # one formula evaluation per distinct (op, shapes): events repeat a few shapes
    plain = rows[ev.name[rows] != conv_id]
    if plain.size:
        pairs = ev.name[plain].astype(np.int64) << 32 | ev.dims[plain].astype(np.int64)
        unique, inverse = np.unique(pairs, return_inverse=True)
        values = np.array(
            [
                flops_of(trace.names[int(p >> 32)], decode_sizes(trace.shapes[int(p & 0xFFFFFFFF)]))
                for p in unique.tolist()
            ],
            dtype=np.int64,
        )
        flops[plain] = values[inverse]
    # conv2d needs its concrete stride/padding/dilation/groups: read lazily, in file order
    convs = rows[ev.name[rows] == conv_id]
    without_concrete = 0
    if convs.size:
        seen: dict[tuple[int, str], tuple[int, bool]] = {}  # → (FLOPs, unknown for want of "Concrete Inputs")
        concrete_of: dict[int, list[object] | None] = {}  # read chunk by chunk: one chunk's text at a time
        for batch in raw_args_by_chunk(trace, convs):
            for k, raw in batch:
                concrete_of[k] = _concrete_inputs(raw)
        for k, row in enumerate(convs.tolist()):
            concrete = concrete_of.get(k)
            key = (int(ev.dims[row]), msgspec.json.encode(concrete).decode() if isinstance(concrete, list) else "")
            if key not in seen:
                dims = decode_sizes(trace.shapes[key[0]])
                count = flops_of(CONV2D, dims, concrete)
                seen[key] = (count, count == UNKNOWN and concrete is None and isinstance(dims, list))
            flops[row], lacks_concrete = seen[key]
            without_concrete += lacks_concrete
    unknown = int(np.count_nonzero(flops[rows] == UNKNOWN))
    return FlopsPerRow(flops, int(rows.size) - unknown, unknown, without_concrete)


_per_table: PerTableCache[FlopFigures | None] = PerTableCache()


def flops_columns_ready(analysis: Analysis) -> bool:
    """``flops_columns`` of any table would return after no more than a sum over the
    rows of counted ops: the figures per row are known."""
    return flops_known(analysis)


def flops_columns(analysis: Analysis, table: OpTable, groups: RowGroups | None = None) -> FlopFigures | None:
    """Per op-table group: FLOPs and achieved FLOP/s (once per table).  ``groups``: the
    table's row groups, shared with its memory columns."""
    return _per_table.get(
        analysis, table, lambda: _flops_columns(analysis, table, groups or table.row_groups(len(analysis.trace.events)))
    )


def _flops_columns(analysis: Analysis, table: OpTable, row_groups: RowGroups) -> FlopFigures | None:
    per_row = flops_of_trace(analysis)
    if per_row is None:
        return None
    # only rows of the counted ops: every other row counts 0 and is never unknown
    named = _rows_named.get(analysis, _rows_named_as_counted)
    group = row_groups()[named]
    inside = group >= 0
    group = group[inside]
    values = per_row.flops[named[inside]]
    groups = len(table)
    counts = np.where(values > 0, values, 0)
    if float(counts.sum(dtype=np.float64)) < 2**62:
        flops = np.zeros(groups, dtype=np.int64)
        np.add.at(flops, group, counts)
    else:  # past int64 (only absurd traces): exact Python integers, as PyTorch sums them
        exact = [0] * groups
        for g, v in zip(group.tolist(), counts.tolist()):
            exact[g] += v
        flops = np.array(exact, dtype=object)
    counted = (np.bincount(group[values != UNKNOWN], minlength=groups) > 0) & ~table.is_device
    unknown = np.bincount(group[values == UNKNOWN], minlength=groups)
    complete = counted & (unknown == 0)
    return FlopFigures(flops=np.where(counted, flops, 0), counted=counted, complete=complete)
