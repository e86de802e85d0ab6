"""Every public corpus trace loads, links and gives consistent tables."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conftest import corpus_files, requires_corpus
from trnscope.core.analysis.analysis import Analysis
from trnscope.core.formats import LoadOptions, load_path
from trnscope.core.link.linker import forward_links
from trnscope.core.model.roles import Role

# Event counts from an independent json.load of each file (len(traceEvents)).
EXPECTED = {
    "hta_cpu_only.json.gz": (30, "cpu"),
    "hta_diff_control_a100.json.gz": (109123, "cuda"),
    "hta_diff_test_v100.json.gz": (105167, "cuda"),
    "hta_mtia_inference.json.gz": (16158, "mtia"),
    "hta_rocm_mi250_minitoy.json.gz": (220, "rocm"),
    "hta_triton_example.json.gz": (71, "cuda"),
    "kineto_resnet50_2021.json.gz": (75718, "cuda"),
    "tracelens_b200_eager_stack.json.gz": (24656, "cuda"),
    "tracelens_compile_triton_mi300.json.gz": (246, "rocm"),
    "tracelens_h100_bert_small.json.gz": (2551, "cuda"),
    "tracelens_mi300_resnet_ckpt.json.gz": (56451, "rocm"),
}


@requires_corpus
def test_corpus_is_complete() -> None:
    assert {p.name for p in corpus_files()} == set(EXPECTED)


@requires_corpus
@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: p.name)
def test_corpus_trace_loads_and_links(path: Path) -> None:
    trace = load_path(path, LoadOptions(workers=1))
    events, kind = EXPECTED[path.name]
    assert trace.event_count == events
    # repeated process/thread names (Kineto writes thread_name twice) are no rows
    assert len(trace.events) == events - trace.stats.folded_metadata
    assert trace.device_kind == kind
    assert not trace.stats.truncated and trace.stats.lost_events == 0
    analysis = Analysis(trace)
    report = analysis.link_report
    # Every device event that carries link information is attributed to an op.
    assert report.linkable_coverage >= 0.99, report
    # and the coverage shown is the share of all device events
    assert report.coverage == (report.linked / report.device_events if report.device_events else 1.0)
    assert report.linked + report.unlinkable + report.outside_ops + report.unresolved == report.device_events

    table = analysis.op_table()
    assert (table.self_cpu <= table.cpu_total).all()
    assert (table.self_device <= table.device_total).all()
    assert table.calls.sum() > 0
    # Self times partition the host time: per thread, the self CPU of every tree event
    # sums to the total duration of the tree's roots.
    links = analysis.links
    alive = links.in_op_tree & (links.merged_into < 0)
    roots = alive & (links.parent < 0)
    ev = trace.events
    self_sum = np.bincount(ev.thread[alive], weights=analysis.times.self_cpu[alive], minlength=len(trace.threads))
    root_sum = np.bincount(ev.thread[roots], weights=np.maximum(ev.dur[roots], 0), minlength=len(trace.threads))
    assert np.allclose(self_sum, root_sum)


@requires_corpus
def test_2021_schema_uses_lower_case_external_id() -> None:
    trace = load_path(next(p for p in corpus_files() if p.name == "kineto_resnet50_2021.json.gz"))
    analysis = Analysis(trace)
    assert analysis.link_report.by_external_id == analysis.link_report.device_events
    table = analysis.op_table()
    conv = table.find("aten::cudnn_convolution")
    assert table.self_device[conv] > 0
    # 2021 traces carry their Python stacks in a "Call stack" argument
    stacked = analysis.op_table("stack", stack_depth=2)
    assert any(s for s in stacked.stack)


@requires_corpus
def test_pre_2024_unlinked_traces_link_through_correlation() -> None:
    trace = load_path(next(p for p in corpus_files() if p.name == "hta_diff_control_a100.json.gz"))
    report = Analysis(trace).link_report
    # kernels carry External id == correlation (unlinked marker), so strategy A must not fire
    assert report.by_external_id == 0
    assert report.by_correlation == report.device_events == 9450


@requires_corpus
def test_mtia_runtime_outside_ops_is_reported_not_guessed() -> None:
    trace = load_path(next(p for p in corpus_files() if p.name == "hta_mtia_inference.json.gz"))
    report = Analysis(trace).link_report
    assert report.device_events == 1313
    assert report.outside_ops > 0 and report.unlinkable > 0
    assert report.linked == 112 and report.linkable_coverage == 1.0
    assert report.coverage == 112 / 1313  # not "100%": most of its device events reach no op


@requires_corpus
def test_backward_ops_pair_with_forward_ops() -> None:
    trace = load_path(next(p for p in corpus_files() if p.name == "tracelens_mi300_resnet_ckpt.json.gz"))
    analysis = Analysis(trace)
    assert analysis.links.forward_of is None  # not needed for the first table
    forward_of = forward_links(trace, analysis.links)
    backward = np.flatnonzero(forward_of >= 0)
    assert backward.size > 100
    ev = trace.events
    # A backward op and its forward op share the autograd sequence number.
    same = ev.sequence[backward] == ev.sequence[forward_of[backward]]
    assert same.mean() > 0.95
    assert all(trace.events.role[forward_of[backward]] == int(Role.OP))


@requires_corpus
def test_status_line_and_json_agree_on_coverage_and_rocm_says_hip() -> None:
    from trnscope.core.analysis.summary import build_summary
    from trnscope.tui.status import status_text

    mtia = Analysis(load_path(next(p for p in corpus_files() if p.name == "hta_mtia_inference.json.gz")))
    assert "link 8.5%" in status_text(mtia).plain
    assert build_summary(mtia).link_coverage == round(112 / 1313, 6)
    rocm = Analysis(load_path(next(p for p in corpus_files() if p.name == "hta_rocm_mi250_minitoy.json.gz")))
    assert rocm.op_table().device_label == "HIP"


@requires_corpus
@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: p.name)
def test_no_share_exceeds_what_it_is_a_share_of(path: Path) -> None:
    """Self CPU % and Self device % of any row stay within 100% (PyTorch's denominators:
    every row's self CPU time; every device row's self time, annotations included)."""
    table = Analysis(load_path(path)).op_table()
    assert table.self_cpu.max() <= table.total_self_cpu
    if table.device_share_base:
        assert table.self_device.max() <= table.device_share_base
