"""Neuron profiles (SYNTHETIC fixtures generated from the documented formats)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from conftest import assert_ops_match
from trnscope.cli.main import main
from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.chain import chain_for
from trnscope.core.analysis.summary import analysis_warnings, neuron_summary
from trnscope.core.formats import discover, load_neuron_profile, load_source
from trnscope.core.formats.neuron.data import neuron_data
from trnscope.testing.standins import standin_explorer
from trnscope.testing.synth_neuron import (
    BASE_TIME_NS,
    write_multi_rank,
    write_process_session,
    write_raw_only,
    write_synthetic_session,
)

pytest.importorskip("pyarrow")


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("trn") / "session"
    truths = write_synthetic_session(root)
    return root, truths


def _check_truth(analysis: Analysis, truth) -> None:  # type: ignore[no-untyped-def]
    assert_ops_match(analysis.op_table(), truth.ops)


@pytest.mark.parametrize("variant", ["eager", "compiled", "fused"])
def test_device_time_per_op_equals_ground_truth(session, variant: str) -> None:
    root, truths = session
    ref = discover(root)
    assert ref.kind == "session" and [s.label for s in ref.sources] == ["eager", "compiled", "fused"]
    analysis = Analysis(load_source(ref.select(variant)))
    assert analysis.trace.device_kind == "neuron" and analysis.trace.synthetic
    _check_truth(analysis, truths[variant])
    report = analysis.neuron.report
    assert report.executions == len(truths[variant].executions) + truths[variant].unlinked_executions
    assert report.linked == len(truths[variant].executions)
    assert report.unlinked_executions == truths[variant].unlinked_executions == 1
    assert report.instructions == truths[variant].instructions
    assert report.instructions_outside_executions == 0


def test_device_profile_matching_no_execution_is_reported(session, capsys) -> None:
    root, truths = session
    trace = load_source(discover(root).select("eager"))
    profiles = neuron_data(trace).profiles
    orphan = profiles[0]
    orphan.model_id = 424242  # a NEFF no execution of this capture ran
    analysis = Analysis(trace)
    report = analysis.neuron.report
    assert report.profiles_without_executions == 1
    assert report.instructions_outside_executions == len(orphan.instructions) > 0
    warning = (
        f"{len(orphan.instructions):,} of {truths['eager'].instructions:,} NeuronCore instructions fall outside "
        "every execution (1 device profile matches no execution); they count in no engine time"
    )
    assert warning in analysis_warnings(analysis)
    assert neuron_summary(analysis).profiles_without_executions == 1


def test_json_and_parquet_exports_read_the_same(tmp_path: Path) -> None:
    truth = write_process_session(tmp_path / "p", "eager")
    tables = {}
    for prefer in ("json", "parquet"):
        analysis = Analysis(load_neuron_profile(tmp_path / "p", prefer=prefer))
        assert analysis.neuron_data.export_format == prefer
        _check_truth(analysis, truth)
        busy = analysis.neuron.engines.busy.sum(axis=0)
        tables[prefer] = busy
    assert (tables["json"] == tables["parquet"]).all()


@pytest.mark.parametrize(
    ("options", "method"),
    [({}, "by_flow"), ({"flows": False}, "by_mapping"), ({"mapping": False, "flows": False}, "by_time")],
)
def test_every_linking_strategy_alone(tmp_path: Path, options: dict, method: str) -> None:
    truth = write_process_session(tmp_path / "p", "eager", **options)
    analysis = Analysis(load_neuron_profile(tmp_path / "p"))
    assert getattr(analysis.neuron.report, method) == len(truth.executions)
    _check_truth(analysis, truth)


def test_correlate_device_time_activities_in_trace_json(tmp_path: Path) -> None:
    """With device activities in trace.json (correlate_device_time), those give the
    device time (as key_averages would) and the executions are shown, not recounted."""
    truth = write_process_session(tmp_path / "p", "eager", device_in_trace=True)
    analysis = Analysis(load_neuron_profile(tmp_path / "p"))
    assert analysis.neuron_data.device_in_trace
    _check_truth(analysis, truth)
    assert analysis.link_report.by_external_id == len(truth.executions)


def test_instructions_and_executions_align_with_the_host_clock(tmp_path: Path) -> None:
    truth = write_process_session(tmp_path / "p", "fused")
    analysis = Analysis(load_neuron_profile(tmp_path / "p"))
    data = analysis.neuron_data
    starts = {int(s): int(e) for s, e in zip(data.executions.host_start, data.executions.host_end)}
    for execution in truth.executions:
        assert starts[execution.host_start_ns] == execution.host_end_ns
    assert data.alignment.aligned_by_sync_point == len(truth.executions)
    assert data.alignment.max_disagreement_ns == 0
    for index, execution in enumerate(truth.executions):
        i = int(np.flatnonzero(data.executions.host_start == execution.host_start_ns)[0])
        counts = analysis.neuron.engines.count[i][:5].sum()  # the five compute engines, not DMA
        assert counts == execution.instructions, index


def test_sync_point_formula_is_used_over_exported_timestamps(tmp_path: Path) -> None:
    """Shift the exported nc_exec_running timestamps: the reader must still place the
    executions by ``cpu + (device − device_sync)`` and warn about the disagreement."""
    truth = write_process_session(tmp_path / "p", "eager", exports=("json",))
    path = next((tmp_path / "p").rglob("system_profile.json"))
    doc = json.loads(path.read_text())
    for event in doc["trace_event"]:
        if event["name"] == "nc_exec_running":
            event["timestamp"] += 5_000
    path.write_text(json.dumps(doc))
    analysis = Analysis(load_neuron_profile(tmp_path / "p"))
    _check_truth(analysis, truth)
    assert analysis.neuron_data.alignment.max_disagreement_ns == 5_000
    assert any("sync points differ" in w for w in analysis.trace.warnings)


def test_chain_lists_every_hop_with_timings(session) -> None:
    root, _ = session
    analysis = Analysis(load_source(discover(root).select("eager")))
    chain = chain_for(analysis, "aten::rsqrt", 2)
    hops = {h.name: h for h in chain.hops}
    for name in (
        "aten::rsqrt",
        "neuron::dispatch",
        "neuron::submit",
        "nrta_execute_schedule",
        "nrt_execute",
        "kbl_exec_pre",
        "kmgr_exec_core",
        "kbl_exec_wait",
        "kbl_exec_post",
    ):
        assert name in hops, name
    execution = next(h for h in chain.hops if h.kind == "execution")
    assert execution.details["linked by"] == "flow_id"  # the documented chain comes first
    assert execution.start_us > hops["kmgr_exec_core"].start_us
    engines = [h for h in chain.hops if h.kind == "engine"]
    assert {h.name for h in engines} >= {"tensor engine", "vector engine"}
    assert any(h.kind == "instruction" and h.name.startswith("%rsqrt") for h in chain.hops)
    assert chain.gaps.device_us == execution.dur_us
    assert chain.gaps.queue_us > 0 and chain.gaps.dispatch_us > 0


def test_nki_source_locations_in_fused_chain(session) -> None:
    root, _ = session
    analysis = Analysis(load_source(discover(root).select("fused")))
    chain = chain_for(analysis, "trnscope::nki_rms_norm")
    assert any(h.kind == "instruction" and h.name.startswith("capture/nki_kernels.py:") for h in chain.hops)


def test_summary_json_reports_ground_truth(session, capsys) -> None:
    root, truths = session
    code = main(["summary", str(root), "--select", "compiled", "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["device_kind"] == "neuron" and doc["synthetic"]
    ops = {(op["name"], op["kind"]): op for op in doc["ops"]}
    expected = truths["compiled"].ops["Torch-Compiled Region: 0/0"]
    assert ops[("Torch-Compiled Region: 0/0", "op")]["self_device_us"] == pytest.approx(expected.self_device_ns / 1000)
    assert doc["link"]["unlinkable"] == 1  # the stray execution is counted, not guessed
    assert any("launched before the capture window" in w for w in doc["warnings"])


def test_multi_rank_folder_lists_ranks(tmp_path: Path, capsys) -> None:
    truths = write_multi_rank(tmp_path / "ranks", ranks=2)
    ref = discover(tmp_path / "ranks")
    assert ref.kind == "neuron" and [s.label for s in ref.sources] == [
        "pid 5000 @1778730986045717776",
        "pid 5001 @1778730986045717776",
    ]
    for rank, source in enumerate(ref.sources):
        analysis = Analysis(load_source(source))
        assert analysis.neuron_data.export_format == ("parquet" if rank % 2 else "json")
        _check_truth(analysis, truths[rank])
    code = main(["summary", str(tmp_path / "ranks"), "--format", "json", "--select", "1"])
    assert code == 0 and json.loads(capsys.readouterr().out)["label"].startswith("pid 5001")


def test_raw_only_folder_loads_framework_trace_and_says_what_to_run(tmp_path: Path, monkeypatch) -> None:
    write_raw_only(tmp_path / "raw")
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    analysis = Analysis(load_source(discover(tmp_path / "raw").sources[0]))
    assert analysis.neuron_data.export_format == "none"
    assert any("neuron-explorer view -d" in w for w in analysis.trace.warnings)
    assert analysis.op_table().find("aten::mul") >= 0


def test_neuron_export_runs_standin_explorer_into_the_cache(
    tmp_path: Path, monkeypatch, capsys, isolated_cache: Path
) -> None:
    truth = write_raw_only(tmp_path / "raw")
    standin_explorer(tmp_path / "bin")
    log = tmp_path / "explorer-args.json"
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("STANDIN_LOG", str(log))
    before = sorted(p.name for p in (tmp_path / "raw").rglob("*"))
    code = main(["neuron-export", str(tmp_path / "raw"), "--yes"])
    assert code == 0
    args = json.loads(log.read_text())
    assert args[:2] == ["view", "-d"] and str(isolated_cache) in args[-1]
    assert sorted(p.name for p in (tmp_path / "raw").rglob("*")) == before  # the capture is untouched
    analysis = Analysis(load_source(discover(tmp_path / "raw").sources[0]))
    assert analysis.neuron_data.export_format == "parquet"
    _check_truth(analysis, truth)


def test_explorer_failure_is_one_line(tmp_path: Path, monkeypatch, capsys) -> None:
    write_raw_only(tmp_path / "raw")
    bin_dir = tmp_path / "bin"
    standin_explorer(bin_dir, fail=(3, "ERROR: NTFF version not supported\n"))
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    code = main(["neuron-export", str(tmp_path / "raw"), "--yes"])
    err = capsys.readouterr().err
    assert code == 2 and "status 3" in err and "NTFF version" in err and err.count("\n") == 1


def test_system_profile_json_alone(tmp_path: Path) -> None:
    """An env-var capture converted to JSON has no trace.json: ops come from Explorer's
    framework events, executions and runtime events still load."""
    write_process_session(tmp_path / "p", "eager", exports=("json",), framework_trace=False)
    analysis = Analysis(load_neuron_profile(tmp_path / "p"))
    assert analysis.neuron_data.executions.trace_row.size == 31
    assert any("no framework trace" in w for w in analysis.trace.warnings)
    kernels = analysis.kernel_table()
    assert "MODULE_7001_pow" in kernels.name


def test_times_are_unix_aligned(session) -> None:
    root, truths = session
    analysis = Analysis(load_source(discover(root).select("eager")))
    trace = analysis.trace
    row = int(neuron_data(trace).executions.trace_row[1])
    assert trace.origin_ns + int(trace.events.ts[row]) == truths["eager"].executions[0].host_start_ns
    assert trace.origin_ns > BASE_TIME_NS


def test_export_flag_runs_explorer_before_loading(tmp_path: Path, monkeypatch, capsys, isolated_cache: Path) -> None:
    truth = write_raw_only(tmp_path / "raw")
    standin_explorer(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("STANDIN_LOG", str(tmp_path / "log.json"))
    code = main(["summary", str(tmp_path / "raw"), "--export", "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and (tmp_path / "log.json").exists()
    ops = {(op["name"], op["kind"]): op for op in doc["ops"]}
    assert ops[("aten::pow", "op")]["self_device_us"] == pytest.approx(truth.ops["aten::pow"].self_device_ns / 1000)


def test_collectives_dma_and_engine_time_per_op(session, capsys) -> None:
    root, truths = session
    for prefer in ("json", "parquet"):
        analysis = Analysis(load_neuron_profile(next(p for p in (root / "compiled").rglob("*_pid_*")), prefer=prefer))
        profile = analysis.neuron_data.profiles[0]
        assert profile.cc_operation == ["AllReduce"] * 5 and profile.dma_start.size == 10
        chain = chain_for(analysis, "Torch-Compiled Region: 0/0")
        assert any(h.kind == "collective" and h.name == "collective AllReduce" for h in chain.hops)
        engines = {h.name: h for h in chain.hops if h.kind == "engine"}
        assert {"dma engine", "cc engine", "tensor engine"} <= engines.keys()
        dma = engines["dma engine"].details
        assert dma["bytes"] == 2 * 65536  # one input and one output packet per execution
        if prefer == "parquet":  # routes come from DmaPacketAggregated, a Parquet-only table
            assert dma["routes"] == {"read [HBM]→[SB]": 1, "write [SB]→[HBM]": 1}
        else:
            assert "routes" not in dma
    assert main(["summary", str(root), "--select", "compiled", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    neuron = doc["neuron"]
    assert neuron["executions"] == 6 and neuron["linked"] == 5 and neuron["unlinked_executions"] == 1
    # the stray execution has no sync point: it keeps its exported timestamp
    # (counted per nc_exec_running row: the bundled session is LNC=2, two rows per execution)
    assert neuron["aligned_by_sync_point"] == 10 and neuron["physical_core_rows"] == 12
    assert neuron["max_clock_disagreement_us"] == 0
    op = neuron["ops"][0]
    assert op["name"] == "Torch-Compiled Region: 0/0" and op["executions"] == 5
    busy = sum(e.engine_busy_ns["tensor"] for e in truths["compiled"].executions)
    assert op["engines_us"]["tensor"] == pytest.approx(busy / 1000)


def test_build_samples_writes_a_loadable_session_and_guards_foreign_folders(tmp_path: Path) -> None:
    from trnscope.testing.build_samples import SESSION_NAME, build, main

    assert main(["--out", str(tmp_path)]) == 0
    target = tmp_path / SESSION_NAME
    ref = discover(target)
    assert [s.label for s in ref.sources] == ["eager", "compiled", "fused"]
    assert Analysis(load_source(ref.select("eager"))).trace.synthetic
    build(tmp_path)  # replaces its own sample
    foreign = tmp_path / "other"
    (foreign / SESSION_NAME).mkdir(parents=True)
    (foreign / SESSION_NAME / "mine.txt").write_text("keep")
    with pytest.raises(SystemExit):
        build(foreign)
    assert (foreign / SESSION_NAME / "mine.txt").read_text() == "keep"


@pytest.mark.parametrize("command", ["chain", "compare"])
def test_export_flag_means_the_same_for_chain_and_compare(
    tmp_path: Path, monkeypatch, capsys, isolated_cache: Path, command: str
) -> None:
    """--export used to do nothing for compare: every command now opens through one helper."""
    write_raw_only(tmp_path / "a")
    write_raw_only(tmp_path / "b", seed=1)
    standin_explorer(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("STANDIN_LOG", str(tmp_path / "log.json"))
    argv = (
        ["chain", str(tmp_path / "a"), "--op", "aten::pow"]
        if command == "chain"
        else ["compare", str(tmp_path / "a"), str(tmp_path / "b")]
    )
    assert main([*argv, "--export", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (tmp_path / "log.json").exists()
    if command == "chain":
        assert any(h["kind"] == "execution" for h in doc["hops"])  # device data from the export
    else:
        assert doc["kernels"] or any(r["values"]["a"] and r["values"]["a"]["device_total_us"] for r in doc["ops"])


def test_compare_counts_device_launches_not_kernel_names(session) -> None:
    from trnscope.core.analysis.compare import compare

    root, truths = session
    ref = discover(root)
    analyses = [Analysis(load_source(ref.select(v))) for v in ("eager", "compiled", "fused")]
    comparison = compare(analyses, ["eager", "compiled", "fused"])
    (row,) = [r for r in comparison.kernels if r.key == "rmsnorm"]
    eager, compiled, fused = row.values
    assert eager is not None and compiled is not None and fused is not None
    assert eager.calls == len(truths["eager"].executions) == 30 and eager.kernel_names == 6
    assert compiled.calls == len(truths["compiled"].executions) and compiled.kernel_names == 1
    # the host dispatch of the region: the ops' start → their first own runtime call
    regions = {r.key: r for r in comparison.regions}
    assert regions["rmsnorm"].values[0].dispatch_ns > regions["rmsnorm"].values[1].dispatch_ns > 0


def test_a_cut_cached_export_says_corrupt_not_unconverted(
    tmp_path: Path, monkeypatch, capsys, isolated_cache: Path
) -> None:
    write_raw_only(tmp_path / "raw")
    standin_explorer(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("STANDIN_LOG", str(tmp_path / "log.json"))
    assert main(["neuron-export", str(tmp_path / "raw"), "--yes"]) == 0
    capsys.readouterr()
    parts = sorted(isolated_cache.rglob("SystemProfileEvents*.parquet"))
    assert parts
    parts[0].write_bytes(parts[0].read_bytes()[:100])  # cut short
    code = main(["summary", str(tmp_path / "raw"), "--format", "json"])
    out, err = capsys.readouterr()
    text = out + err
    assert "corrupt" in text and "export again" in text and "not converted yet" not in text
    assert code in (0, 2)


def test_export_progress_never_reaches_a_file(tmp_path: Path, monkeypatch, capsys, isolated_cache: Path) -> None:
    """Redrawn progress (carriage returns, erase-line) is for terminals only."""
    write_raw_only(tmp_path / "raw")
    standin_explorer(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("STANDIN_LOG", str(tmp_path / "log.json"))
    assert main(["neuron-export", str(tmp_path / "raw"), "--yes"]) == 0
    out, err = capsys.readouterr()
    assert "\r" not in out + err and "\x1b" not in out + err
