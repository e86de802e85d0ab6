"""The drill-down's figures by their definitions: unions of the listed hops, never sums
of overlapping intervals; runtime calls inside child ops shown under those children;
device annotations shown, not added."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import SAMPLES, corpus_files, requires_corpus
from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.chain import chain_for
from trnscope.core.analysis.chain_model import DEVICE_WORK, union_us
from trnscope.core.formats import discover, load_path, load_source
from trnscope.core.formats.options import NO_CACHE
from trnscope.testing.events import event, write_trace


def _hand_built(tmp_path: Path) -> Path:
    """aten::op 0–100 µs; its own runtime call 10–60 with a nested one 20–30; a child
    op 65–95 whose runtime call 70–80 launches a kernel; two overlapping kernels
    (110–150, 130–170) and a gpu_user_annotation over them."""
    events = [
        event("aten::op", "cpu_op", 0, 100, ext=1),
        event("cudaLaunchKernel", "cuda_runtime", 10, 50, correlation=11, ext=1),
        event("cudaFuncGetAttributes", "cuda_runtime", 20, 10),
        event("aten::child", "cpu_op", 65, 30, ext=2),
        event("cudaLaunchKernel", "cuda_runtime", 70, 10, correlation=12, ext=2),
        event("k1", "kernel", 110, 40, tid=7, pid=0, correlation=11, ext=1),
        event("k2", "kernel", 130, 40, tid=7, pid=0, correlation=12, ext=2),
        event("aten::op", "gpu_user_annotation", 105, 70, tid=8, pid=0, ext=1),
    ]
    return write_trace(tmp_path / "hand.json", events, deviceProperties=[{"name": "GPU"}])


def test_figures_by_definition_on_a_hand_built_trace(tmp_path: Path) -> None:
    chain = chain_for(Analysis(load_path(_hand_built(tmp_path), NO_CACHE)), "aten::op", 0)
    g = chain.gaps
    assert g.runtime_us == 60.0  # [10,60] ∪ [20,30] ∪ [70,80] = 50 + 10, not 50 + 10 + 10
    assert g.runtime_own_us == 50.0  # its own calls only
    assert g.dispatch_us == 10.0  # op start → first own runtime call
    assert g.device_us == 60.0  # [110,150] ∪ [130,170], not 80; the annotation is not added
    assert g.queue_us == 70.0  # [60,110] ∪ [80,130], not 50 + 50
    inner = [h for h in chain.hops if h.kind == "runtime" and h.details.get("in child op") == "aten::child"]
    assert len(inner) == 1 and inner[0].depth == 2  # drawn under the child, one level deeper
    assert any(h.kind == "device_annotation" for h in chain.hops)


def test_queue_is_the_union_of_the_waits(tmp_path: Path) -> None:
    chain = chain_for(Analysis(load_path(_hand_built(tmp_path), NO_CACHE)), "aten::op", 0)
    waits = [(h.start_us - h.details["queue_us"], h.start_us) for h in chain.hops if "queue_us" in h.details]
    assert sorted(waits) == [(60.0, 110.0), (80.0, 130.0)]
    assert chain.gaps.queue_us == union_us(waits) == 70.0
    assert chain.gaps.queue_max_us == 50.0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1000), st.floats(0, 100)), max_size=20))
def test_union_never_exceeds_the_sum_or_the_span(spans: list[tuple[float, float]]) -> None:
    intervals = [(s, s + d) for s, d in spans]
    total = union_us(intervals)
    slack = 1e-3  # figures are rounded to the nanosecond
    assert total <= sum(d for _, d in spans) + slack
    if intervals:
        assert total <= max(e for _, e in intervals) - min(s for s, _ in intervals) + slack
        assert total >= max(d for _, d in spans) - slack


def _check(chain) -> None:  # type: ignore[no-untyped-def]
    device = [(h.start_us, h.start_us + h.dur_us) for h in chain.hops if h.kind in DEVICE_WORK]
    runtime = [(h.start_us, h.start_us + h.dur_us) for h in chain.hops if h.kind == "runtime"]
    g = chain.gaps
    assert g.device_us == union_us(device) <= round(sum(e - s for s, e in device), 3) + 1e-6
    assert g.runtime_us == union_us(runtime)
    assert g.runtime_own_us <= g.runtime_us + 1e-6
    assert g.queue_max_us <= g.queue_us + 1e-6


@requires_corpus
@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: p.name)
def test_corpus_chains_follow_the_definitions(path: Path) -> None:
    analysis = Analysis(load_path(path))
    table = analysis.op_table()
    order = sorted(range(len(table)), key=lambda g: -int(table.device_total[g]))
    for group in [g for g in order if not table.is_device[g]][:3]:
        _check(chain_for(analysis, table.name[group]))


def test_synthetic_neuron_chain_runtime_is_not_summed() -> None:
    """The SYNTHETIC Trainium sample: nested runtime calls no longer add up past the op."""
    root = SAMPLES / "trn_synthetic_rmsnorm_session"
    analysis = Analysis(load_source(discover(root).select("eager")))
    chain = chain_for(analysis, "aten::mul")
    _check(chain)
    runtime = [h for h in chain.hops if h.kind == "runtime"]
    span = max(h.start_us + h.dur_us for h in runtime) - min(h.start_us for h in runtime)
    assert chain.gaps.runtime_us <= span + 1e-6


def _subtree_by_climbing(analysis: Analysis, row: int) -> np.ndarray:
    """The definition: events of the op's thread inside its time whose raw-parent chain
    reaches it (every such event climbed from, as the chain once did per instance)."""
    ev, links = analysis.trace.events, analysis.links
    start, end = ev.ts[row], ev.ts[row] + max(int(ev.dur[row]), 0)
    candidates = np.flatnonzero((ev.thread == ev.thread[row]) & (ev.ts >= start) & (ev.ts <= end) & links.in_tree)
    inside = np.zeros(candidates.size, dtype=bool)
    current = candidates.copy()
    for _ in range(512):
        inside |= current == row
        current = np.where((current == row) | (current < 0), -1, links.raw_parent[np.maximum(current, 0)])
    return candidates[inside]


@requires_corpus
@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: p.name)
def test_chain_lookups_equal_whole_trace_scans(path: Path) -> None:
    """A chain finds an op's subtree, its device work and its drivers through indexes
    built once per analysis; on every corpus trace they equal the whole-trace scans."""
    from trnscope.core.analysis.chain import _device_rows_by_op, _subtree
    from trnscope.core.base.arrays import values_of_keys
    from trnscope.core.model.roles import Role

    analysis = Analysis(load_path(path))
    ev, links = analysis.trace.events, analysis.links
    ops = np.flatnonzero((ev.role == int(Role.OP)) & links.in_tree)
    for row in np.random.default_rng(1).choice(ops, min(60, ops.size), replace=False).tolist() if ops.size else []:
        subtree = _subtree(analysis, row)
        np.testing.assert_array_equal(subtree, _subtree_by_climbing(analysis, row))
        owners = np.concatenate([[row], subtree[subtree != row]])
        launched = np.sort(values_of_keys(*_device_rows_by_op(analysis), owners))
        np.testing.assert_array_equal(
            launched, np.flatnonzero(np.isin(links.device_op, owners) & (links.device_op >= 0))
        )


@requires_corpus
@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: p.name)
def test_device_work_of_every_op_row_group_equals_the_scan(path: Path) -> None:
    """``Analysis.device_work`` (the timeline's highlight, the op table's "top device
    work") through its index: the kernels and copies the op rows launch, else those their
    direct children launch — as a whole-trace scan finds them, row for row."""
    from trnscope.core.model.roles import Role

    analysis = Analysis(load_path(path))
    ev, links = analysis.trace.events, analysis.links
    device = (links.device_op >= 0) & np.isin(ev.role, [int(Role.KERNEL), int(Role.MEMORY)])
    table = analysis.op_table()
    for group in range(len(table)):
        rows = table.instances(group)
        expected = np.flatnonzero(device & np.isin(links.device_op, rows))
        if not expected.size:
            expected = np.flatnonzero(device & np.isin(links.raw_parent[np.maximum(links.device_op, 0)], rows))
        np.testing.assert_array_equal(np.sort(analysis.device_work(rows)), expected)


@pytest.mark.parametrize("which", ["trn_synthetic", "hand_built"])
def test_a_chain_whose_hops_read_their_args_when_shown_equals_the_whole_chain(which: str, tmp_path: Path) -> None:
    """The explorer builds a chain with only its op's args read (a step's chain has tens
    of thousands of hops) and reads each hop's when it is shown: hop by hop, the same
    chain as one built with every args read (the CLI's, the copy's)."""
    import msgspec

    from trnscope.core.analysis.chain import chain_for_row, read_hop_args

    if which == "trn_synthetic":
        analysis = Analysis(load_source(discover(SAMPLES / "trn_synthetic_rmsnorm_session").select("eager")))
    else:
        analysis = Analysis(load_path(_hand_built(tmp_path), NO_CACHE))
    table = analysis.op_table()
    compared = 0
    for group in range(len(table)):
        rows = table.instances(group)
        if not rows.size:
            continue
        row = int(rows[np.argmax(analysis.trace.events.dur[rows])])
        whole = chain_for_row(analysis, row, 0, 1)
        lazy = chain_for_row(analysis, row, 0, 1, every_hops_args=False)
        unread = [h for h in lazy.hops if not h.args_read]
        assert all(h.kind != "op" for h in unread)  # the op's shapes give its FLOPs at once
        for hop in lazy.hops:
            read_hop_args(analysis, hop)
        assert msgspec.json.encode(lazy) == msgspec.json.encode(whole)  # details in the same order too
        compared += bool(unread)
    assert compared  # some chain had hops whose args waited


def test_a_chain_is_quick_by_the_rows_it_holds(tmp_path: Path) -> None:
    """``chain_is_quick``: the rows under the op and the device work they launched —
    the count the explorer decides by whether to build a chain at once or in a worker;
    a kernel's chain is its launching op's."""
    from trnscope.core.analysis.chain import chain_for_row, chain_is_quick

    analysis = Analysis(load_path(_hand_built(tmp_path), NO_CACHE))
    ev, names = analysis.trace.events, analysis.trace.names
    op = int(np.flatnonzero(np.array([names[i] for i in ev.name]) == "aten::op")[0])
    kernel = int(np.flatnonzero(np.array([names[i] for i in ev.name]) == "k1")[0])  # launched by aten::op itself
    # aten::op holds itself, two runtime calls, the child op and its runtime call (5
    # rows), and the device work they launched: the chain's device hops
    device_hops = [h for h in chain_for_row(analysis, op, 0, 1).hops if h.layer == "device"]
    held = 5 + len(device_hops)
    assert {h.name for h in device_hops} >= {"k1", "k2"}
    assert chain_is_quick(analysis, op, rows=held) and not chain_is_quick(analysis, op, rows=held - 1)
    assert chain_is_quick(analysis, kernel, rows=held) and not chain_is_quick(analysis, kernel, rows=held - 1)
