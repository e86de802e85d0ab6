"""The real CUDA sessions in sample_traces/ (captured by ``trnscope capture`` on an
NVIDIA H200 with torch 2.11.0+cu130): our op table is PyTorch's own key_averages(),
device columns included, to the nanosecond; and what it cannot be, and why."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import SAMPLES
from trnscope.cli.main import main
from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.parity import check_parity
from trnscope.core.analysis.summary import analysis_warnings
from trnscope.core.formats import discover, load_source
from trnscope.core.formats.options import LoadOptions
from trnscope.core.model import op_tree
from trnscope.core.model.roles import Role
from trnscope.core.model.session import read_manifest
from trnscope.core.model.vocab import NONE_ID

SINGLE = [
    "cuda_rmsnorm_session",
    "cuda_rmsnorm_large_session",
    "cuda_attention_session",
    "cuda_attention_large_session",
    "cuda_train_tiny_session",
    "cuda_rmsnorm_memory_session",  # profile_memory=True: memory columns, host and device
    "cuda_train_tiny_memory_session",
    "cuda_transformer_memory_session",  # a Transformer LM's AdamW training steps, memory too
    "cuda_graph_replay_session",  # a torch.cuda.CUDAGraph replayed by hand
    "cuda_graph_compiled_session",  # torch.compile(mode="reduce-overhead")
    "cuda_graph_eager_session",
]
DDP = SAMPLES / "cuda_ddp_gloo_session"


def _variants(folder: Path, options: LoadOptions | None = None):  # type: ignore[no-untyped-def]
    manifest = read_manifest(folder)
    ref = discover(folder)
    for variant, source in zip(manifest.ok_variants(), ref.sources, strict=True):
        yield variant, Analysis(load_source(source, options or LoadOptions(use_cache=False)))


@pytest.mark.parametrize("name", SINGLE)
def test_a_real_cuda_session_is_key_averages_to_the_nanosecond(name: str) -> None:
    """Calls, Self CPU, CPU total, Self CUDA, CUDA total and FLOPs of every key (and the
    four memory columns where captured with --memory), by op and by input shape, with
    no key missing or extra."""
    for variant, analysis in _variants(SAMPLES / name):
        assert analysis.trace.device_kind == "cuda"
        assert analysis.trace.op_tree == op_tree.CLASSIC  # torch 2.11, from session.json
        assert any(row.is_device and row.self_device_us > 0 for row in variant.reference)
        assert all(row.flops is not None for row in variant.reference)
        if "memory" in name:
            assert all(row.cpu_memory_bytes is not None for row in variant.reference)
            assert any(row.self_device_memory_bytes for row in variant.reference)
        assert not check_parity(analysis, variant.reference), variant.label
        assert not check_parity(analysis, variant.reference_grouped_by_shape, by_shape=True), variant.label


def test_the_python_frames_rule_of_a_newer_pytorch_would_not_give_these_figures() -> None:
    """The rule matters on these traces: read as PyTorch 2.12+ would count them,
    Python frames become rows and the annotations' Self CPU shrinks."""
    variant, analysis = next(
        _variants(SAMPLES / "cuda_rmsnorm_session", LoadOptions(use_cache=False, op_tree="python"))
    )
    problems = check_parity(analysis, variant.reference)
    assert {p.field for p in problems} == {"self_cpu_us", "extra"}
    assert {p.key for p in problems if p.field == "self_cpu_us"} == {"ProfilerStep*", "rmsnorm"}


def test_an_annotations_device_range_is_its_own_row_not_its_host_annotations_time() -> None:
    """PyTorch gives the host ``rmsnorm`` range no Self CUDA and, as CUDA total, only
    the kernels launched inside it; the ``gpu_user_annotation`` is a row of its own,
    2 ns per instance shorter than the file writes it."""
    variant, analysis = next(_variants(SAMPLES / "cuda_rmsnorm_session"))
    table = analysis.op_table()
    ours = {
        (table.name[g], bool(table.is_device[g])): (table.self_device[g], table.device_total[g])
        for g in range(len(table))
    }
    kernels = sum(r.self_device_us for r in variant.reference if r.is_device and not r.is_annotation)
    assert ours[("rmsnorm", False)] == (0, pytest.approx(kernels * 1000, abs=5))
    ev = analysis.trace.events
    device_ranges = ev.dur[(ev.role == 7) & (ev.name == analysis.trace.names.index("rmsnorm"))]
    assert ours[("rmsnorm", True)][0] == int(device_ranges.sum()) - 2 * device_ranges.size


def test_the_ddp_ranks_differ_from_key_averages_only_where_pytorch_mixes_two_ids() -> None:
    """Two gloo ranks sharing the GPU.  PyTorch joins device work and runtime calls to
    host events by one number, an op's id and a runtime call's CUPTI correlation
    alike; where a runtime call of no op has an op's id as its correlation, its table
    gives the call that op's device time and moves the op's runtime calls off its
    thread.  Every difference is on such a call, such an op, or their parents; every
    other row is exact, and the summary says so."""
    for rank in ("rank0", "rank1"):
        variant, analysis = next(_variants(DDP / rank))
        ev, names = analysis.trace.events, analysis.trace.names
        call = np.isin(ev.role, [int(Role.RUNTIME), int(Role.DRIVER)])
        loose = call & (ev.external_id == NONE_ID)
        op_ids = set(ev.external_id[call & (ev.external_id != NONE_ID)].tolist())
        colliding = loose & np.isin(ev.correlation, list(op_ids))
        calls = {names[i] for i in ev.name[colliding].tolist()}
        ops = {
            names[i] for i in ev.name[(ev.role == int(Role.OP)) & np.isin(ev.external_id, ev.correlation[colliding])]
        }
        assert calls and "aten::copy_" in ops, rank
        parents = {"ProfilerStep*", "DistributedDataParallel.forward", "gloo:all_reduce"}
        problems = check_parity(analysis, variant.reference)
        assert problems and {p.key for p in problems} <= calls | ops | parents, rank
        assert any("correlation id equal to an op's id" in w for w in analysis_warnings(analysis)), rank


def test_ranks_names_the_rank_held_back_by_its_sleep(capsys) -> None:
    assert main(["ranks", str(DDP), "--format", "json", "--workers", "1", "--no-cache"]) == 0
    doc = json.loads(capsys.readouterr().out)
    straggler = next(f for f in doc["findings"] if f["kind"] == "straggler")
    assert straggler["rank"] == 1
    assert straggler["late_steps"] == [4, 5, 6, 7, 8]  # it slept before every backward pass
    assert len(doc["collectives"]) == 5


def test_a_compiled_variants_region_has_its_dispatch_and_kernels() -> None:
    """torch.compile's Triton kernels are launched through a Python launcher frame and
    inside the graph's own region: the user's region still gets their dispatch (op →
    its launch, past the frame) and names them, as it counts their device time."""
    from trnscope.core.analysis.compare import compare

    analyses = [analysis for _, analysis in _variants(SAMPLES / "cuda_rmsnorm_large_session")]
    comparison = compare(analyses, ["eager", "compiled", "fused"], [])
    (region,) = [row for row in comparison.regions if row.key == "rmsnorm"]
    compiled = region.values[1]
    assert compiled is not None and compiled.device_total_ns > 0 and compiled.dispatch_ns > 0
    (work,) = [row for row in comparison.kernels if row.key == "rmsnorm"]
    assert "triton_red_fused" in (work.detail[1] if work.detail else "")


def test_the_wait_table_marks_every_step_the_straggler_held_back(capsys, monkeypatch) -> None:
    """▲ in each step its finding counts, not only the worst (rank 1 was last at all
    five all-reduces; one ▲ read as if the other four were fine)."""
    from trnscope.core.analysis.rank_view import heat_map

    monkeypatch.setenv("COLUMNS", "160")  # room for all five steps
    assert main(["ranks", str(DDP), "--workers", "1", "--no-cache"]) == 0
    table = capsys.readouterr().out.split("wait in collectives per rank and step")[1].split("last at:")[0]
    lines = table.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:1] == ["rank"])
    rank1 = next(line for line in lines[header + 1 :] if line.split()[:1] == ["1"])
    assert rank1.count("▲") == 5, table
    assert main(["ranks", str(DDP), "--format", "json", "--workers", "1", "--no-cache"]) == 0
    import msgspec

    from trnscope.core.analysis.contracts import RanksOut

    doc = msgspec.json.decode(capsys.readouterr().out, type=RanksOut)
    rows, _ = heat_map(doc, 40)
    assert next(r for r in rows if r.rank == 1).cells == "▲▲▲▲▲"


def test_a_replayed_cuda_graph_is_linked_to_the_range_around_it_but_not_charged_to_it() -> None:
    """``graph.replay()`` launches the graph with a ``cudaGraphLaunch`` that carries no
    op id (it runs in no aten op, only inside ``ProfilerStep#N``), and its kernels carry
    none either.  PyTorch charges them to no op: ProfilerStep*'s CUDA total is the
    other kernels'.  The drill-down and the kernel table still say where they came from."""
    from trnscope.core.link.linker import LinkMethod

    variant, analysis = next(_variants(SAMPLES / "cuda_graph_replay_session"))
    ev, links = analysis.trace.events, analysis.links
    graph = links.link_method == int(LinkMethod.ENCLOSING_OP)
    assert analysis.link_report.by_enclosing_op == int(graph.sum()) > 0
    launches = {analysis.trace.names[i] for i in ev.name[links.device_launch[graph]].tolist()}
    assert launches == {"cudaGraphLaunch"}
    kernels = analysis.kernel_table()
    assert kernels.top_op[kernels.name.index(analysis.trace.names[int(ev.name[np.flatnonzero(graph)[0]])])] == (
        "ProfilerStep*"
    )
    step = next(r for r in variant.reference if r.name == "ProfilerStep*" and not r.is_device)
    table = analysis.op_table()
    group = next(g for g in range(len(table)) if table.name[g] == "ProfilerStep*" and not table.is_device[g])
    assert table.device_total[group] / 1e3 == pytest.approx(step.device_total_us, abs=0.002)
    assert int(ev.dur[graph].sum()) > table.device_total[group]  # the graph's work is most of the step's


def test_the_summary_says_which_work_no_op_is_charged_for(capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # one line
    assert main(["summary", str(SAMPLES / "cuda_graph_replay_session"), "--no-cache", "--limit", "3"]) == 0
    out = capsys.readouterr().out
    assert "; 70 only to the range around a launch outside any aten op" in out
    assert "not in the op table's device figures, as in key_averages()" in out


def test_the_hand_written_triton_kernel_counts_for_its_range_in_compare() -> None:
    """The fused RMSNorm variant on CUDA is a Triton kernel launched from Python inside
    the ``rmsnorm`` range, in no aten op: key_averages() (the op table) charges it to no
    op, while compare gives the range its time in both its views."""
    from trnscope.core.analysis.compare import compare
    from trnscope.core.link.linker import LinkMethod

    variants = list(_variants(SAMPLES / "cuda_rmsnorm_large_session"))
    assert variants[2][0].description.startswith("Triton kernel")
    fused = variants[2][1]
    kernel = fused.trace.names.index("_rms_norm_rows")
    rows = np.flatnonzero(fused.trace.events.name == kernel)
    assert rows.size == 5 and (fused.links.link_method[rows] == int(LinkMethod.ENCLOSING_OP)).all()
    comparison = compare([a for _, a in variants], ["eager", "compiled", "fused"], [])
    (region,) = [row for row in comparison.regions if row.key == "rmsnorm"]
    (op,) = [row for row in comparison.rows if row.key == "rmsnorm" and row.kind == "annotation"]
    assert region.values[2].device_total_ns == op.values[2].device_total_ns == int(fused.trace.events.dur[rows].sum())


@pytest.mark.parametrize(
    ("session", "replayed"),
    [("cuda_graph_replay_session", True), ("cuda_graph_compiled_session", True), ("cuda_graph_eager_session", False)],
)
def test_a_replayed_graph_is_not_told_to_fuse_or_use_graphs(session: str, replayed: bool, capsys) -> None:
    """The same model eager, replayed by hand from a ``torch.cuda.CUDAGraph``, and under
    ``torch.compile(mode="reduce-overhead")``.  A replayed graph's kernels pay one launch
    together: they are no launch storm, and "fuse them (torch.compile)" or "use CUDA
    graphs" is no advice for work that is replayed already — the gaps are the host's
    time between replays.  Eager keeps its small-kernel finding and advice."""
    assert main(["diagnose", str(SAMPLES / session), "--format", "json", "--no-cache"]) == 0
    findings = json.loads(capsys.readouterr().out)["findings"]
    kinds = [finding["kind"] for finding in findings]
    text = " ".join(finding["message"] for finding in findings)
    if replayed:
        assert "small_kernels" not in kinds, kinds
        idle = next(finding for finding in findings if finding["kind"] == "device_idle")
        assert "replayed from CUDA graphs already" in idle["message"], idle
        assert "torch.compile" not in text and "use CUDA graphs" not in text.replace("replayed from CUDA graphs", "")
    else:
        small = next(finding for finding in findings if finding["kind"] == "small_kernels")
        assert "fuse them (torch.compile)" in small["message"]
        assert "replayed" not in text


def test_a_device_idle_while_gloo_waits_says_the_host_waited_for_other_ranks(capsys) -> None:
    """Rank 0 of the DDP sample: its GPU idles 160 ms in five gaps, told "Python or
    untraced work" of its main thread, while its gloo threads wait 31 ms a step in
    ``gloo:all_reduce`` for rank 1, which sleeps.  The finding says the host was inside
    collectives for nearly all of those gaps, and where to look next; rank 1, the one
    that slept, waited for nobody."""
    findings = {}
    for rank in (0, 1):
        assert main(["diagnose", str(DDP / f"rank{rank}"), "--format", "json", "--no-cache"]) == 0
        findings[rank] = json.loads(capsys.readouterr().out)["findings"]
    idle = next(f for f in findings[0] if f["kind"] == "device_idle")
    assert (
        "the host was inside collectives (gloo:all_reduce the longest) for 159.873ms of these gaps (99%)"
        in (idle["message"])
    )
    assert "trnscope ranks" in idle["message"]
    assert not any("inside collectives" in f["message"] for f in findings[1])
