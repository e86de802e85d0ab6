"""The whole-array nesting must give exactly the parents and depths of PyTorch's stack
algorithm (``nest_with_stack``, a direct transcription of it), on laminar threads where
it answers alone and on partly overlapping ones where it falls back to the stack."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from trnscope.core.link.nesting import nearest_earlier_reaching, nest, nest_with_stack


def _assert_same(ts: np.ndarray, end: np.ndarray, thread: np.ndarray, rows: np.ndarray) -> None:
    fast_parent, fast_depth = nest(ts, end, thread, rows)
    ref_parent, ref_depth = nest_with_stack(ts, end, thread, rows)
    np.testing.assert_array_equal(fast_parent, ref_parent)
    np.testing.assert_array_equal(fast_depth, ref_depth)


events = st.lists(
    st.tuples(st.integers(0, 30), st.integers(0, 12), st.integers(0, 2)),
    min_size=1,
    max_size=60,
)


@settings(max_examples=400, deadline=None)
@given(events)
def test_matches_the_stack_on_arbitrary_overlaps(spec: list[tuple[int, int, int]]) -> None:
    ts = np.array([s for s, _, _ in spec], dtype=np.int64)
    end = ts + np.array([d for _, d, _ in spec], dtype=np.int64)
    thread = np.array([t for _, _, t in spec], dtype=np.int32)
    _assert_same(ts, end, thread, np.arange(ts.size))


def _laminar(rng: np.random.Generator, count: int) -> np.ndarray:
    """Properly nested intervals with zero-length and identical ones mixed in."""
    out: list[tuple[int, int]] = []

    def fill(lo: int, hi: int, level: int) -> None:
        t = lo
        while t < hi and len(out) < count:
            s = t + int(rng.integers(0, 3))
            if s > hi:
                return
            e = min(hi, s + int(rng.integers(0, 40)))
            out.append((s, e))
            if rng.random() < 0.1:
                out.append((s, e))  # an identical twin nests inside the first
            if level < 8 and e > s:
                fill(s, e, level + 1)
            t = e + int(rng.integers(0, 2))

    fill(0, 10**7, 0)
    return np.array(out, dtype=np.int64)


def test_matches_the_stack_on_nested_threads_with_a_few_partial_overlaps() -> None:
    rng = np.random.default_rng(7)
    for round_ in range(40):
        spans = _laminar(rng, 3000)
        ts, end = spans[:, 0].copy(), spans[:, 1].copy()
        if round_ % 2:  # stretch a few events past their parent's end
            picked = rng.choice(ts.size, size=3, replace=False)
            end[picked] += rng.integers(1, 50, size=3)
        thread = rng.integers(0, 4, ts.size).astype(np.int32)
        rows = np.flatnonzero(rng.random(ts.size) < 0.95)
        _assert_same(ts, end, thread, rows)


def test_clock_values_too_far_apart_for_one_key_space() -> None:
    rng = np.random.default_rng(3)
    spans = _laminar(rng, 500)
    ts = np.concatenate([spans[:, 0], spans[:, 0] + (1 << 61), spans[:, 0] - (1 << 61)])
    end = np.concatenate([spans[:, 1], spans[:, 1] + (1 << 61), spans[:, 1] - (1 << 61)])
    end[10] += 5  # one partial overlap, so the stack fallback runs on the spread clocks too
    thread = np.repeat(np.arange(3, dtype=np.int32), spans.shape[0])
    _assert_same(ts, end, thread, np.arange(ts.size))


def test_empty_and_single() -> None:
    empty = np.empty(0, np.int64)
    parent, depth = nest(empty, empty, empty.astype(np.int32), empty)
    assert parent.size == depth.size == 0
    one = np.array([5], dtype=np.int64)
    parent, depth = nest(one, one + 3, np.zeros(1, np.int32), np.arange(1))
    assert parent.tolist() == [-1] and depth.tolist() == [0]


def _pytorch_remove_dup_nodes(
    parent: list[int], names: list[int], kernel_op: list[int] | None = None
) -> tuple[list[int], list[int], list[int]]:
    """PyTorch's EventList._remove_dup_nodes, literally: in-order passes until stable;
    folding a child also sets ``parent.kernels = child.kernels``.  Returns the parents,
    where each row was folded, and which op holds each of ``kernel_op``'s kernels at the
    end (-1: no surviving op)."""
    kernel_op = kernel_op or []
    kernels: dict[int, list[int]] = {}
    for kernel, op in enumerate(kernel_op):
        if op >= 0:
            kernels.setdefault(op, []).append(kernel)
    parent = list(parent)
    children: dict[int, list[int]] = {}
    for row, p in enumerate(parent):
        if p >= 0:
            children.setdefault(p, []).append(row)
    alive = [True] * len(parent)
    merged = [-1] * len(parent)
    while True:
        deleted = set()
        for row in range(len(parent)):
            p = parent[row]
            if not alive[row] or p < 0 or names[p] != names[row] or len(children.get(p, [])) != 1:
                continue
            children[p] = children.get(row, [])
            kernels[p] = kernels.get(row, [])
            for child in children[p]:
                parent[child] = p
            merged[row] = p
            deleted.add(row)
        if not deleted:
            break
        for row in deleted:
            alive[row] = False
            parent[row] = -1
    owner = [-1] * len(kernel_op)
    for op, held in kernels.items():
        if alive[op]:
            for kernel in held:
                owner[kernel] = op
    return parent, merged, owner


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 30), st.integers(0, 2)), min_size=1, max_size=40),
)
def test_duplicate_folding_matches_pytorch(spec: list[tuple[int, int]]) -> None:
    """Random forests (a parent always precedes its children, as in start order)."""
    from types import SimpleNamespace

    from trnscope.core.link.linker import _remove_duplicate_nodes

    parent = [-1 if i == 0 else (up % (i + 1)) - 1 for i, (up, _) in enumerate(spec)]
    names = [name for _, name in spec]
    trace = SimpleNamespace(events=SimpleNamespace(name=np.array(names, dtype=np.int32)))
    got_parent, got_merged = _remove_duplicate_nodes(
        trace,
        np.array(parent, dtype=np.int64),
        np.ones(len(parent), dtype=bool),  # type: ignore[arg-type]
    )
    want_parent, want_merged, _ = _pytorch_remove_dup_nodes(parent, names)
    assert got_parent.tolist() == want_parent
    assert got_merged.tolist() == want_merged


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(-5, 40), st.integers(-5, 40)), min_size=0, max_size=200))
def test_nearest_earlier_reaching_is_the_plain_scan(pairs: list[tuple[int, int]]) -> None:
    values = np.array([v for v, _ in pairs], dtype=np.int64)
    reach = np.array([r for _, r in pairs], dtype=np.int64)
    expected = [max((j for j in range(i) if values[j] >= reach[i]), default=-1) for i in range(len(pairs))]
    np.testing.assert_array_equal(nearest_earlier_reaching(values, reach), np.array(expected, dtype=np.int64))


def test_a_thread_that_overlaps_partly_everywhere() -> None:
    """One long thread of staggered, partly overlapping events (the whole thread is one
    broken segment): still exactly the stack's answer."""
    rng = np.random.default_rng(11)
    ts = np.sort(rng.integers(0, 10**6, 20_000))
    end = ts + rng.integers(0, 5_000, ts.size)
    thread = np.zeros(ts.size, dtype=np.int32)
    _assert_same(ts, end, thread, np.arange(ts.size))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 30), st.integers(0, 2)), min_size=1, max_size=40),
    st.lists(st.integers(-1, 39), max_size=30),
)
def test_kernels_after_folding_match_pytorch(spec: list[tuple[int, int]], kernel_op: list[int]) -> None:
    """Each kernel counts where PyTorch's folding leaves it: in the surviving op, when
    its op is the deepest folded into that op, else nowhere."""
    from types import SimpleNamespace

    from trnscope.core.analysis.optable import _owner_after_folding
    from trnscope.core.link.linker import _remove_duplicate_nodes

    parent = [-1 if i == 0 else (up % (i + 1)) - 1 for i, (up, _) in enumerate(spec)]
    names = [name for _, name in spec]
    kernel_op = [op if op < len(parent) else -1 for op in kernel_op]
    depth = [0] * len(parent)
    for row, p in enumerate(parent):
        depth[row] = 0 if p < 0 else depth[p] + 1
    trace = SimpleNamespace(events=SimpleNamespace(name=np.array(names, dtype=np.int32)))
    _, merged = _remove_duplicate_nodes(
        trace,
        np.array(parent, dtype=np.int64),
        np.ones(len(parent), dtype=bool),  # type: ignore[arg-type]
    )
    links = SimpleNamespace(merged_into=merged, op_depth=np.array(depth, dtype=np.int32))
    got = _owner_after_folding(links, np.array(kernel_op, dtype=np.int64))  # type: ignore[arg-type]
    assert got.tolist() == _pytorch_remove_dup_nodes(parent, names, kernel_op)[2]
