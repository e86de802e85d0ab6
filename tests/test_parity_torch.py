"""Our op table reproduces PyTorch's key_averages() on real profiles, key by key.

Each test runs a small workload under torch.profiler on the CPU, keeps
prof.key_averages() from memory, exports the trace, loads it with trnscope and
requires equal call counts and Self CPU / CPU total to the nanosecond for every key,
with no key missing or extra.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from trnscope.capture.reference import reference_rows  # noqa: E402
from trnscope.core.analysis.analysis import Analysis  # noqa: E402
from trnscope.core.analysis.parity import check_parity  # noqa: E402
from trnscope.core.formats import load_path  # noqa: E402
from trnscope.core.formats.options import LoadOptions  # noqa: E402
from trnscope.core.model import op_tree  # noqa: E402

pytestmark = pytest.mark.torch


def _mlp_steps(steps: int = 3) -> None:
    from torch.profiler import record_function

    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.LayerNorm(128), torch.nn.Linear(128, 32)
    )
    x = torch.randn(16, 64)
    for _ in range(steps):
        with record_function("train_step"):
            loss = model(x).relu().sum()
            with record_function("backward"):
                loss.backward()


def _profile(tmp_path: Path, workload, **options):  # type: ignore[no-untyped-def]
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], **options) as prof:
        workload()
    trace = tmp_path / "trace.json"
    prof.export_chrome_trace(str(trace))
    # a bare trace does not say which PyTorch wrote it: the test knows (op_tree.resolve)
    return prof, Analysis(load_path(trace, LoadOptions(op_tree=op_tree.resolve(op_tree.AUTO, torch.__version__))))


def _assert_parity(prof, analysis: Analysis, by_shape: bool) -> None:  # type: ignore[no-untyped-def]
    reference = reference_rows(prof, group_by_input_shape=by_shape)
    assert len(reference) > 10
    problems = check_parity(analysis, reference, by_shape=by_shape, device=False)
    assert not problems, "\n".join(map(str, problems[:20]))


def test_parity_record_shapes_and_annotations(tmp_path: Path) -> None:
    prof, analysis = _profile(tmp_path, _mlp_steps, record_shapes=True)
    _assert_parity(prof, analysis, by_shape=False)
    _assert_parity(prof, analysis, by_shape=True)
    table = analysis.op_table()
    assert table.is_annotation[table.find("train_step")]


def test_parity_with_stack_python_frames(tmp_path: Path) -> None:
    prof, analysis = _profile(tmp_path, _mlp_steps, with_stack=True, record_shapes=True)
    _assert_parity(prof, analysis, by_shape=False)
    # python_function frames are rows of key_averages too
    assert any(analysis.op_table().kind(g) == "python" for g in range(len(analysis.op_table())))
    # our stack grouping refines PyTorch's (whose stacks are empty): same totals per name
    stacked = analysis.op_table("stack", stack_depth=3)
    plain = analysis.op_table()
    g = plain.find("aten::addmm")
    assert sum(stacked.calls[k] for k in range(len(stacked)) if stacked.name[k] == "aten::addmm") == plain.calls[g]
    assert len({stacked.stack[k] for k in range(len(stacked)) if stacked.name[k] == "aten::addmm"}) >= 1


def test_parity_autograd_backward_and_memory(tmp_path: Path) -> None:
    prof, analysis = _profile(tmp_path, _mlp_steps, record_shapes=True, profile_memory=True)
    _assert_parity(prof, analysis, by_shape=False)
    backward = analysis.op_table().find("autograd::engine::evaluate_function: AddmmBackward0")
    assert backward >= 0
    # CPU Mem and Self CPU Mem equal key_averages(), byte for byte, for every key
    from trnscope.core.analysis.memory import memory_columns

    table = analysis.op_table()
    memory = memory_columns(analysis, table)
    assert memory is not None
    ours = {
        table.name[g]: (int(memory.cpu[g]), int(memory.self_cpu[g]))
        for g in range(len(table))
        if not table.is_device[g]
    }
    theirs = {e.key: (int(e.cpu_memory_usage), int(e.self_cpu_memory_usage)) for e in prof.key_averages()}
    assert any(c for c, _ in theirs.values())  # the workload allocates
    assert {k: v for k, v in ours.items() if k in theirs} == theirs
    # the same figures in `summary --format json`, and in the TUI's columns
    from trnscope.core.analysis.summary import build_summary

    summary = {op.name: (op.cpu_memory_bytes, op.self_cpu_memory_bytes) for op in build_summary(analysis).ops}
    assert {k: v for k, v in summary.items() if k in theirs} == theirs
    # and printed as key_averages().table() prints them: "13.30 MB", "-16.00 KB", "0 B"
    from torch.autograd.profiler_util import _format_memory

    from trnscope.core.base.units import fmt_bytes

    for count in {*(b for pair in theirs.values() for b in pair), 0, 1023, 1024, -(1 << 20), 5 << 30}:
        assert fmt_bytes(count) == _format_memory(count), count


def _flop_counted_ops() -> None:
    """Every op PyTorch counts FLOPs of, with the argument forms that change the count:
    strided, padded, dilated and grouped conv2d; linear on 2-D and 3-D input (addmm);
    matmul → bmm; baddbmm; mul/add with tensor, wrapped-scalar and Scalar operands;
    in-place add_ (no count); a zero-size addmm (count 0)."""
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(3, 8, 3, stride=2, padding=1)
    grouped = torch.nn.Conv2d(8, 8, (3, 5), stride=(1, 2), padding=(2, 0), dilation=(2, 1), groups=4)
    linear = torch.nn.Linear(16, 32)
    a, b = torch.randn(5, 16), torch.randn(16, 7)
    left, right = torch.randn(3, 5, 6), torch.randn(3, 6, 2)
    for _ in range(2):
        grouped(conv(torch.randn(4, 3, 17, 19)))
        linear(a)
        linear(torch.randn(2, 3, 16))
        torch.mm(a, b)
        torch.matmul(left, right)
        torch.baddbmm(torch.randn(3, 5, 2), left, right)
        torch.mul(a, 2.0)
        _ = a * a + a
        torch.add(a, 1)
        a.add_(1)
        torch.addmm(torch.randn(7), torch.randn(3, 0), torch.randn(0, 7))


def test_parity_flops(tmp_path: Path) -> None:
    """FLOPs per key, and per key and input shape, equal key_averages(with_flops=True)
    exactly: PyTorch does not write them to the trace, trnscope recomputes them from
    "Input Dims" and "Concrete Inputs" by the same formula."""
    from trnscope.core.analysis.columns import flops_per_second
    from trnscope.core.analysis.flops import flops_columns
    from trnscope.core.analysis.opfigures import figures_of

    prof, analysis = _profile(tmp_path, _flop_counted_ops, record_shapes=True, with_flops=True)
    for by_shape in (False, True):
        reference = reference_rows(prof, group_by_input_shape=by_shape)
        assert sum(row.flops or 0 for row in reference) > 0
        problems = check_parity(analysis, reference, by_shape=by_shape, device=False)
        assert not problems, "\n".join(map(str, problems[:20]))
    table = analysis.op_table()
    columns = flops_columns(analysis, table)
    assert columns is not None
    rate = flops_per_second(figures_of(table, flops=columns)).sort_key()  # NaN: no rate
    ours = {table.name[g]: int(columns.flops[g]) for g in range(len(table)) if columns.counted[g]}
    theirs = {e.key: int(e.flops) for e in prof.key_averages() if e.flops}
    assert ours == theirs
    conv = table.find("aten::conv2d")
    assert columns.complete[conv] and rate[conv] == pytest.approx(columns.flops[conv] / (table.cpu_total[conv] / 1e9))
    # an op PyTorch does not count (the in-place add_) has no FLOPs value
    assert not columns.counted[table.find("aten::add_")]


def test_parity_multiple_threads(tmp_path: Path) -> None:
    def workload() -> None:
        def worker() -> None:
            for _ in range(4):
                a = torch.randn(48, 48)
                (a @ a.t()).softmax(dim=-1).sum()

        threads = [threading.Thread(target=worker) for _ in range(3)]
        for thread in threads:
            thread.start()
        _mlp_steps(2)
        for thread in threads:
            thread.join()

    from torch._C._profiler import _ExperimentalConfig

    prof, analysis = _profile(
        tmp_path, workload, record_shapes=True, experimental_config=_ExperimentalConfig(profile_all_threads=True)
    )
    _assert_parity(prof, analysis, by_shape=False)
    _assert_parity(prof, analysis, by_shape=True)
    table = analysis.op_table()
    host_threads = {int(analysis.trace.events.thread[r]) for r in table.instances(table.find("aten::softmax"))}
    assert len(host_threads) == 3


def test_parity_after_gzip_export(tmp_path: Path) -> None:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        _mlp_steps(2)
    path = tmp_path / "trace.json.gz"
    prof.export_chrome_trace(str(path))
    analysis = Analysis(load_path(path))
    assert analysis.trace.stats.compressed
    _assert_parity(prof, analysis, by_shape=False)


def _tensor_lists() -> None:
    a, b = torch.randn(2, 3), torch.randn(2, 3)
    for _ in range(2):
        torch.cat([a, b])
        torch.cat([a, b, a])
        torch.stack([a, b])
        torch.cat([a, b], dim=1)
        (a + b).sum()


def test_parity_group_by_input_shape_with_tensor_lists(tmp_path: Path) -> None:
    """A tensor-list argument is ``[]`` in key_averages(group_by_input_shape=True): one
    aten::cat row for every list length, as PyTorch keeps it."""
    prof, analysis = _profile(tmp_path, _tensor_lists, record_shapes=True)
    reference = reference_rows(prof, group_by_input_shape=True)
    problems = check_parity(analysis, reference, by_shape=True, device=False)
    assert not problems, "\n".join(map(str, problems[:20]))
    table = analysis.op_table("shape")
    cat_rows = [g for g in range(len(table)) if table.name[g] == "aten::cat"]
    assert [table.shape[g] for g in cat_rows] == ["[[], []]"] and table.calls[cat_rows[0]] == 8
