"""Diagnosis and timeline: definitions checked on hand-built traces, the corpus and the
SYNTHETIC Neuron sample."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tui_helpers import press, settle, wait_loaded

from conftest import CORPUS, SAMPLES, requires_corpus
from trnscope.cli.main import main
from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.contracts import DiagnoseOut
from trnscope.core.analysis.diagnose import (
    _CAPTURE_BEGIN,
    _CAPTURE_BEGIN_NEEDLES,
    _CAPTURE_END,
    _CAPTURE_END_NEEDLES,
    _COLLECTIVE,
    _COLLECTIVE_NEEDLES,
    _DEVICE_CALL,
    _DEVICE_CALL_NEEDLES,
    _SYNC,
    _SYNC_NEEDLES,
    diagnose,
    noise_floor_ns,
)
from trnscope.core.analysis.host_work import _DATA_LOADER_NEEDLES, DATA_LOADER
from trnscope.core.analysis.name_match import names_matching
from trnscope.core.analysis.timeline import build_lanes, coverage, glyphs, parse_time, python_only_threads, under
from trnscope.core.base.intervals import Union
from trnscope.core.base.units import us, us_of_ns
from trnscope.core.formats import load_path
from trnscope.testing.events import annotation, event, kernel, launch, op, runtime, write_trace
from trnscope.testing.synth_neuron import SynthOptions, write_process_session

CORPUS_TRACES = sorted(CORPUS.glob("*.json.gz")) if CORPUS.exists() else []


def test_union_counts_overlap_once() -> None:
    union = Union(np.array([0, 5, 20, 21]), np.array([10, 12, 25, 22]))
    assert union.length == 12 + 5
    assert union.covered(4, 22) == 8 + 2
    starts, ends = union.gaps(0, 30)
    assert list(zip(starts.tolist(), ends.tolist())) == [(12, 20), (25, 30)]


def _trace(tmp_path: Path, events: list[dict]) -> Analysis:
    return Analysis(load_path(write_trace(tmp_path / "t.json", events, baseTimeNanoseconds=1_700_000_000_000_000_000)))


def test_diagnosis_definitions_on_a_hand_built_trace(tmp_path: Path) -> None:
    """Two 100 µs kernels 400 µs apart (device idle 80% of its span), one overlapping
    kernel on a second stream (counted once), a step of 1 ms."""
    events = [
        annotation("ProfilerStep#1", 0, 1000, ext=1),
        op("aten::mm", 10, 50, ext=2),
        launch(20, 10, correlation=100, ext=2),
        kernel("gemm", 100, 100, correlation=100, ext=2),
        kernel("gemm_b", 150, 100, correlation=101, ext=2, stream=8),
        op("aten::mm", 300, 60, ext=3),
        launch(310, 10, correlation=102, ext=3),
        kernel("gemm", 600, 100, correlation=102, ext=3),
        op("aten::item", 720, 200, ext=4),
        runtime("cudaStreamSynchronize", 730, 180, correlation=103, ext=4),
    ]
    doc = diagnose(_trace(tmp_path, events))
    (device,) = doc.devices
    assert device.span_us == 600 and device.busy_us == 250 and device.idle_us == 350  # 100–250 ∪ 600–700
    (step,) = doc.steps
    assert step.wall_us == 1000 and step.device_busy_us == 250
    # ops 10–60, 300–360, 720–920 = 310 µs, less the 200 µs spent in synchronisations
    # (aten::item is one: it waits for the device; its cudaStreamSynchronize is inside it)
    assert step.host_busy_us == 110 and step.bound == "host"
    kinds = {f.kind: f for f in doc.findings}
    assert kinds["device_idle"].evidence_us == 350 and kinds["device_idle"].op == "aten::mm"
    assert kinds["device_idle"].instance == 1  # the launch after the gap is the second aten::mm
    # that launch's enclosing ranges: the second aten::mm began after the gap did (300 >
    # 250 µs), then the step, which encloses everything: no range is named
    assert "the host was in no op or annotation (but the step) of the launching thread for 350.000us (1 gap:" in (
        kinds["device_idle"].message
    )
    # which gaps, and the share of the idle time they hold (it read "in the 1 longest gap
    # (half this time)" of one gap holding all of it)
    assert "; in the longest gap (100% of this time) the host was" in kinds["device_idle"].message
    assert kinds["synchronization"].evidence_us == 200 and kinds["synchronization"].op == "aten::item"
    assert doc.findings[0].evidence_us >= doc.findings[-1].evidence_us


IDLE_FINDINGS = ("data_loading", "graph_capture", "device_idle", "small_kernels")  # they partition the idle time


def test_idle_time_waiting_for_the_dataloader_is_data_loading_not_launch_overhead(tmp_path: Path) -> None:
    """Small kernels with a 1 µs gap between each, then a 5,000 µs gap of which the host
    spent 4,000 µs in a DataLoader fetch; an earlier fetch (0–150 µs) starts before the
    device's span and covers its first ten 1 µs gaps.  Those 4,010 µs are
    ``data_loading``, and only the rest of the gaps is charged to the small kernels and
    the launches."""
    events = [annotation("ProfilerStep#1", 0, 20_000, ext=1)]
    events.append(annotation("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 150))
    t, correlation = 100.0, 100
    for batch in range(2):
        for _ in range(60):
            events.append(op("aten::add", t - 60, 20, ext=correlation))
            events.append(launch(t - 50, 5, correlation=correlation, ext=correlation))
            events.append(kernel("add_kernel", t, 4, correlation=correlation, ext=correlation))
            t += 5  # 4 µs of work, 1 µs idle
            correlation += 1
        if batch == 0:
            # the gap after the first batch: 5,000 µs, 4,000 of them fetching
            events.append(annotation("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", t + 500, 4_000))
            t += 5_000 - 1
    doc = diagnose(_trace(tmp_path, events))
    (device,) = doc.devices
    kinds = {f.kind: f for f in doc.findings}
    assert kinds["data_loading"].evidence_us == pytest.approx(4_000 + 10, abs=1e-3)
    assert kinds["data_loading"].op == "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
    assert kinds["data_loading"].instance == 1  # the fetch that kept the device idle longest: the second
    assert kinds["data_loading"].severity == "high"
    assert "2 DataLoader fetches, the longest 4.000ms" in kinds["data_loading"].message
    # the rest: 108 gaps of 1 µs before small kernels, and the 1,000 µs of the long gap not fetching
    assert kinds["small_kernels"].evidence_us == pytest.approx(108 + 1_000, abs=1e-3)
    assert "device_idle" not in kinds  # every gap was before a small kernel
    assert sum(kinds[k].evidence_us for k in IDLE_FINDINGS if k in kinds) == pytest.approx(device.idle_us, abs=1e-3)
    # fetching is the host's work: its busy time is the union of the ops and the fetches
    busy = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e["cat"] == "cpu_op" or "DataLoader" in e["name"])
    merged: list[list[float]] = []
    for start, end in busy:
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    (step,) = doc.steps
    assert step.host_busy_us == pytest.approx(sum(end - start for start, end in merged), abs=1e-3)
    assert step.host_busy_us > 4_150  # the fetches alone
    assert step.data_loading_us == pytest.approx(150 + 4_000, abs=1e-3)  # both fetches, inside the step
    # without the fetches, the 5,000 µs gap is too long to be a launch's overhead: the
    # host was busy elsewhere (device_idle); the 118 gaps of 1 µs stay the small kernels'
    plain = [e for e in events if not e["name"].startswith("enumerate(DataLoader)")]
    kinds = {f.kind: f for f in diagnose(_trace(tmp_path, plain)).findings}
    assert "data_loading" not in kinds
    assert kinds["small_kernels"].evidence_us == pytest.approx(118, abs=1e-3)
    assert kinds["device_idle"].evidence_us == pytest.approx(5_000, abs=1e-3)


@pytest.mark.parametrize("long_gap_us", [999, 1_000, 1_001, 3_000])
def test_a_gap_longer_than_a_launch_can_cost_is_not_the_small_kernels(tmp_path: Path, long_gap_us: int) -> None:
    """Sixty 4 µs kernels 1 µs apart, and one more after a long gap: a gap of up to 1 ms
    before a small kernel is its launch's cost (``small_kernels``), a longer one is the
    host busy elsewhere (``device_idle``, blamed on the op launching after it); either
    way the two findings add up to the device's idle time."""
    events = [annotation("ProfilerStep#1", 0, 5_000, ext=1)]  # short: 59 µs clears the noise floor
    t = 100.0
    for correlation in range(100, 161):
        events.append(op("aten::add", t - 60, 20, ext=correlation))
        events.append(launch(t - 50, 5, correlation=correlation, ext=correlation))
        events.append(kernel("add_kernel", t, 4, correlation=correlation, ext=correlation))
        t += long_gap_us + 4 if correlation == 159 else 5
    (device,) = (doc := diagnose(_trace(tmp_path, events))).devices
    kinds = {f.kind: f for f in doc.findings}
    assert device.idle_us == pytest.approx(59 + long_gap_us, abs=1e-3)
    if long_gap_us <= 1_000:
        assert kinds["small_kernels"].evidence_us == pytest.approx(59 + long_gap_us, abs=1e-3)
        assert "device_idle" not in kinds
    else:
        assert kinds["small_kernels"].evidence_us == pytest.approx(59, abs=1e-3)
        assert "gaps of up to 1 ms before them" in kinds["small_kernels"].message
        assert kinds["device_idle"].evidence_us == pytest.approx(long_gap_us, abs=1e-3)
        assert kinds["device_idle"].op == "aten::add" and kinds["device_idle"].instance == 60


def _captured_launches(closed: bool = True) -> list[dict]:
    """A kernel at 50 µs, a capture from 110 µs (to 910 µs when ``closed``) recording two
    kernel launches and a copy, and a kernel at 1,200 µs launched after it."""
    events = [
        annotation("graph_capture_region", 100, 1_000),
        op("aten::add", 10, 30, ext=1),
        launch(20, 5, correlation=1, ext=1),
        kernel("add_kernel", 50, 10, correlation=1, ext=1),
        runtime("cudaStreamBeginCapture", 110, 5, correlation=2),
        launch(200, 5, correlation=3),
        launch(300, 5, correlation=4),
        runtime("cudaMemcpyAsync", 400, 5, correlation=5),
        op("aten::add", 1_150, 30, ext=6),
        launch(1_160, 5, correlation=6, ext=6),
        kernel("add_kernel", 1_200, 10, correlation=6, ext=6),
    ]
    if closed:
        events.append(runtime("cudaStreamEndCapture", 900, 10, correlation=7))
    return events


@pytest.mark.parametrize("closed", [True, False], ids=["captured", "still-capturing-at-the-end"])
def test_idle_time_inside_a_cuda_graph_capture_is_the_captures_not_launch_overhead(
    tmp_path: Path, closed: bool
) -> None:
    """Launches between ``cudaStreamBeginCapture`` and ``cudaStreamEndCapture`` are
    recorded, not run: the device's idle time inside the capture (110–910 µs) is
    ``graph_capture`` (info), and no "launch-bound … use CUDA graphs" advice is given for
    it.  A capture the trace ends inside lasts to the trace's end."""
    doc = diagnose(_trace(tmp_path, _captured_launches(closed)))
    (device,) = doc.devices
    assert device.span_us == 1_160 and device.idle_us == 1_140
    kinds = {f.kind: f for f in doc.findings}
    capture = kinds["graph_capture"]
    # closed: [110, 910) of the gap [60, 1200); still capturing: [110, 1200), to the trace's last end
    assert capture.evidence_us == (800 if closed else 1_090)
    assert capture.severity == "info" and capture.op == "graph_capture_region" and capture.instance == 0
    # two kernel launches and a copy; without an End, the launch at 1,160 µs is inside too
    assert f"{3 if closed else 4} launches into a graph" in capture.message
    # how long the host spent capturing, whatever of it the device's span holds
    assert f"into a graph over {'800.000us' if closed else '1.100ms'} (" in capture.message
    assert ("cudaStreamEndCapture" in capture.message) is closed
    idle = kinds["device_idle"]
    assert idle.evidence_us == device.idle_us - capture.evidence_us
    assert "launch-bound" not in idle.message and "besides the graph captures" in idle.message
    # the gap before the last kernel: its aten::add began inside the gap, and no range encloses it
    assert "the host was in no op or annotation (but the step) of the launching thread" in idle.message
    assert sum(kinds[k].evidence_us for k in IDLE_FINDINGS if k in kinds) == device.idle_us


def test_device_idle_names_the_range_the_host_was_in_during_its_longest_gaps(tmp_path: Path) -> None:
    """The gap 110–1,600 µs ends with a launch by an op that began inside it (1,500 µs);
    the optimizer's annotation around that op began before the gap (40 µs): the host was
    inside it throughout."""
    events = [
        annotation("ProfilerStep#1", 0, 3_000),
        annotation("Optimizer.step#Adam.step", 40, 1_960),
        op("aten::_foreach_mul_", 50, 20, ext=1),
        launch(55, 5, correlation=1, ext=1),
        kernel("mul_kernel", 100, 10, correlation=1, ext=1),
        op("aten::_foreach_add_", 1_500, 20, ext=2),
        launch(1_510, 5, correlation=2, ext=2),
        kernel("add_kernel", 1_600, 10, correlation=2, ext=2),
    ]
    (idle,) = [f for f in diagnose(_trace(tmp_path, events)).findings if f.kind == "device_idle"]
    assert idle.evidence_us == 1_490 and idle.op == "aten::_foreach_add_"
    assert idle.message.endswith(
        "; in the longest gap (100% of this time) the host was inside Optimizer.step#Adam.step for 1.490ms (1 gap)"
    )
    # a kernel whose launch the trace does not have says nothing of where the host was
    unlinked = [*events[:-1], kernel("add_kernel", 1_600, 10, correlation=99)]
    (idle,) = [f for f in diagnose(_trace(tmp_path, unlinked)).findings if f.kind == "device_idle"]
    assert idle.evidence_us == 1_490 and "the host was" not in idle.message


@requires_corpus
def test_dataloader_waits_of_the_2021_resnet50_trace_equal_an_independent_count() -> None:
    """On the corpus's 2021 ResNet-50 trace (single-process DataLoader), ``data_loading``
    is the part of the GPU's idle gaps inside ``enumerate(DataLoader)#…`` ranges,
    recomputed here from the raw JSON with the standard library."""
    import gzip
    import itertools

    path = CORPUS / "kineto_resnet50_2021.json.gz"
    with gzip.open(path, "rt") as fh:
        events = json.load(fh)["traceEvents"]
    device_cats = {"Kernel", "Memcpy", "Memset", "kernel", "gpu_memcpy", "gpu_memset"}

    def merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        for start, end in sorted(spans):
            if out and start <= out[-1][1]:
                out[-1] = (out[-1][0], max(out[-1][1], end))
            else:
                out.append((start, end))
        return out

    timed = [e for e in events if e.get("ph") == "X" and "dur" in e]
    busy = merged([(e["ts"], e["ts"] + e["dur"]) for e in timed if e.get("cat") in device_cats])
    fetches = merged(
        [
            (e["ts"], e["ts"] + e["dur"])
            for e in timed
            if e["name"].startswith("enumerate(DataLoader)#") and e.get("cat") not in device_cats
        ]
    )
    gaps = [(a[1], b[0]) for a, b in itertools.pairwise(busy)]
    expected = sum(
        max(0, min(g_end, f_end) - max(g_start, f_start)) for g_start, g_end in gaps for f_start, f_end in fetches
    )
    doc = diagnose(Analysis(load_path(path)))
    (finding,) = [f for f in doc.findings if f.kind == "data_loading"]
    assert expected > 0.2 * doc.devices[0].idle_us  # a large share of the idle time: it must not be missed
    assert finding.evidence_us == pytest.approx(expected, abs=1e-3)
    assert doc.findings[0] is finding  # the largest loss
    # the step's (here the whole trace's) own figure: the host's time fetching batches,
    # the union of the fetches on its thread (all on the main thread in this trace)
    loader = [e for e in timed if e["name"].startswith("enumerate(DataLoader)#") and e.get("cat") not in device_cats]
    assert len({(e["pid"], e["tid"]) for e in loader}) == 1
    (step,) = doc.steps
    assert step.data_loading_us == pytest.approx(sum(end - start for start, end in fetches), abs=1e-3)
    assert step.data_loading_us > finding.evidence_us  # fetching while the GPU still worked counts here


@requires_corpus
@pytest.mark.parametrize("path", CORPUS_TRACES, ids=lambda p: p.name.split(".")[0])
def test_diagnosis_explains_the_idle_time_of_every_corpus_trace(path: Path) -> None:
    """The idle findings partition each device's idle time: their evidence adds up to
    it exactly (one device per corpus trace), less any part under the noise floor (not
    shown: a 0.011 µs gap is no finding)."""
    analysis = Analysis(load_path(path))
    doc = diagnose(analysis)
    floor_us = noise_floor_ns(analysis.wall_ns) / 1000
    msgspec.json.decode(msgspec.json.encode(doc), type=DiagnoseOut)  # the contract round-trips
    for device in doc.devices:
        assert 0 <= device.busy_us <= device.span_us + 1e-3
        assert device.idle_us == pytest.approx(device.span_us - device.busy_us, abs=2e-3)
    if len(doc.devices) == 1:
        explained = sum(f.evidence_us for f in doc.findings if f.kind in IDLE_FINDINGS)
        idle = doc.devices[0].idle_us
        assert explained <= idle + 3e-3
        # each of the three findings may be under the floor, and then not shown
        assert explained == pytest.approx(idle, abs=3e-3) or idle - explained < 3 * floor_us
    severities = [f.severity for f in doc.findings]
    assert severities == sorted(severities, key=lambda s: s == "info")  # losses first
    # busy and span recomputed independently from the raw JSON (stdlib json, a plain
    # merge of the current-schema device categories), where the trace has one device
    independent = _raw_device_union(path)
    if independent is not None and len(doc.devices) == 1:
        busy, span = independent
        assert doc.devices[0].busy_us == pytest.approx(busy, abs=2e-3)
        assert doc.devices[0].span_us == pytest.approx(span, abs=2e-3)


def _raw_device_union(path: Path) -> tuple[float, float] | None:
    import gzip

    with gzip.open(path, "rt") as fh:
        data = json.load(fh)
    events = data["traceEvents"] if isinstance(data, dict) else data

    # in integer nanoseconds: float µs sums of ~1e12-µs timestamps drift by ~10 ns, and
    # whole-µs Unix timestamps (~1.6e15) times 1000 are past a float's exact integers
    def ns(value: int | float) -> int:
        return value * 1000 if isinstance(value, int) else round(value * 1000)

    spans = sorted(
        (ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]))
        for e in events
        if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
    )
    if not spans:
        return None
    busy, (start, end) = 0, spans[0]
    for s, e in spans[1:]:
        if s > end:
            busy += end - start
            start, end = s, e
        else:
            end = max(end, e)
    busy += end - start
    return busy / 1000, (max(e for _, e in spans) - spans[0][0]) / 1000


@requires_corpus
def test_h100_bert_is_launch_bound(capsys) -> None:
    assert main(["diagnose", str(CORPUS / "tracelens_h100_bert_small.json.gz"), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) == {"source", "devices", "steps", "findings", "schema_version"}
    (device,) = doc["devices"]
    assert device["busy_us"] == pytest.approx(309.437) and device["idle_pct"] > 90
    assert doc["steps"][0]["bound"] == "host"
    assert {f["kind"] for f in doc["findings"]} >= {"small_kernels", "device_idle"}
    assert all(
        set(f) == {"kind", "severity", "message", "op", "instance", "evidence_us", "row", "window_us"}
        for f in doc["findings"]
    )


def _launching_op(
    k: int, at: int, *, host_us: int, launch_after_us: int, kernel_after_us: int, kernel_us: int
) -> list[dict]:
    """The k-th "aten::mm" at ``at`` µs, its launch and its "gemm" kernel, linked."""
    return [
        op("aten::mm", at, host_us, ext=100 + k),
        launch(at + launch_after_us, 5, correlation=200 + k, ext=100 + k),
        kernel("gemm", at + kernel_after_us, kernel_us, correlation=200 + k, ext=100 + k),
    ]


@pytest.mark.parametrize("compiled", [False, True])
def test_launch_bound_advice_knows_compiled_code(tmp_path: Path, compiled: bool) -> None:
    """TraceLens's xDiT step runs Inductor's graphs; "use torch.compile" was its advice."""
    events = [annotation("ProfilerStep#1", 0, 10_000, ext=1)]
    if compiled:
        events.append(annotation("Torch-Compiled Region: 0/0", 1, 9_990))
    for k in range(20):  # 400 µs of host work before each 50 µs kernel: the device waits
        events += _launching_op(k, 10 + 480 * k, host_us=400, launch_after_us=390, kernel_after_us=420, kernel_us=50)
    doc = diagnose(_trace(tmp_path, events))
    (idle,) = [f for f in doc.findings if f.kind == "device_idle"]
    assert doc.steps[0].bound == "host" and "launch-bound" in idle.message
    if compiled:
        assert 'the code is compiled already: capture it in CUDA graphs (torch.compile mode="reduce-overhead")' in (
            idle.message
        )
        assert "use torch.compile" not in idle.message
    else:
        assert "fuse ops, use torch.compile / CUDA graphs" in idle.message


def test_one_long_wait_is_not_launch_bound(tmp_path: Path) -> None:
    """SGLang's prefill trace idles 493 of 494 ms in one gap, inside one op: "launch-bound,
    capture it in CUDA graphs" was its advice.  Idle time mostly in gaps longer than a
    launch can cost is the host busy with other work."""
    events = [annotation("ProfilerStep#1", 0, 20_000, ext=1), op("prepare", 10, 19_900, ext=50)]
    for k in range(10):  # ten kernels 30 µs apart, then one 12 ms wait before the last
        at = 20 + 60 * k + (12_000 if k == 9 else 0)
        events += _launching_op(k, at, host_us=20, launch_after_us=5, kernel_after_us=30, kernel_us=30)
    doc = diagnose(_trace(tmp_path, events))
    (idle,) = [f for f in doc.findings if f.kind == "device_idle"]
    assert "launch-bound" not in idle.message, idle.message
    assert (
        "12.030ms in 1 gap over 1 ms, too long to be launch overhead: the host worked or waited elsewhere meanwhile"
        in (idle.message)
    )


def test_neuron_sample_diagnosis_sees_idle_engines(capsys) -> None:
    assert main(["diagnose", str(SAMPLES / "trn_synthetic_rmsnorm_session"), "--select", "eager"]) == 0
    out = capsys.readouterr().out
    assert "NeuronCore 0" in out and "engines_idle" in out


def test_first_neuron_execution_outlier(tmp_path: Path) -> None:
    """A first execution much longer than the rest (NeuronCore start-up, ~1 ms) is a
    finding whose evidence is its excess over the median."""
    write_process_session(tmp_path / "p", "compiled", exports=("json",), options=SynthOptions())
    system = next((tmp_path / "p").rglob("system_profile.json"))
    doc = json.loads(system.read_text())
    runs = sorted((e for e in doc["trace_event"] if e["name"] == "nc_exec_running" and "stray" not in e["model_name"]),
                  key=lambda e: e["timestamp"])  # fmt: skip
    runs[0]["duration"] += 1_000_000
    runs[0]["nc_stop_timestamp_ns"] += 1_000_000
    system.write_text(json.dumps(doc))
    analysis = Analysis(load_path(tmp_path / "p"))
    finding = next(f for f in diagnose(analysis).findings if f.kind == "first_execution")
    durations = sorted(int(e["duration"]) for e in runs[1:])
    median = float(np.median(durations))
    assert finding.evidence_us == pytest.approx((runs[0]["duration"] - median) / 1000, abs=1e-3)
    assert finding.op == "Torch-Compiled Region: 0/0"


def test_timeline_lanes_and_shading(tmp_path: Path) -> None:
    analysis = Analysis(load_path(SAMPLES / "trn_synthetic_rmsnorm_session"))
    lanes = build_lanes(analysis)
    kinds = [lane.kind for lane in lanes]
    assert kinds[0] == "host" and "runtime" in kinds and "device" in kinds
    core = next(lane for lane in lanes if lane.kind == "device")
    assert core.label.startswith("NC0")
    engines = [lane.label for lane in lanes if lane.kind == "engine"]  # under their core, from the device profiles
    assert engines[0] == f"{core.label} tensor" and kinds.index("engine") == kinds.index("device") + 1
    # shading: a lane's coverage over the whole extent equals its busy share
    t0, t1 = int(core.union.start[0]), int(core.union.end[-1])
    share = coverage(core, t0, t1, 1)[0]
    assert share == pytest.approx(core.union.length / (t1 - t0))
    assert glyphs(np.array([0, 0.01, 0.5, 1.0])) == " ▁▄█"
    row = under(core, int(core.starts[3]) + 1)
    assert row == int(core.rows[3])
    assert parse_time("1.5ms") == 1_500_000 and parse_time("200us") == 200_000 and parse_time("3") == 3_000
    # built once per analysis and kind: opening the timeline again reuses the lanes
    again = build_lanes(analysis)
    assert again is not lanes and all(a is b for a, b in zip(again, lanes, strict=True))
    nested = build_lanes(analysis, nested=True)
    assert nested[0] is not lanes[0] and build_lanes(analysis, nested=True)[0] is nested[0]


def test_the_timeline_draws_dataloader_fetches_in_the_host_lane(tmp_path: Path) -> None:
    """A DataLoader fetch is host work (``host_work``): the thread's host lane holds it,
    as a step's host busy time does, so the host does not look idle while it loads."""
    fetch = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"
    events = [
        annotation(fetch, 0, 500),
        op("aten::mm", 600, 50, ext=1),
        launch(610, 5, correlation=1, ext=1),
        kernel("gemm", 700, 100, correlation=1, ext=1),
    ]
    analysis = _trace(tmp_path, events)
    host = next(lane for lane in build_lanes(analysis) if lane.kind == "host")
    names = [analysis.trace.names[int(analysis.trace.events.name[row])] for row in host.rows]
    assert names == [fetch, "aten::mm"] and host.union.length == (500 + 50) * 1000
    assert analysis.trace.names[int(analysis.trace.events.name[under(host, host.starts[0] + 250_000)])] == fetch
    nested = next(lane for lane in build_lanes(analysis, nested=True) if lane.kind == "host")
    assert nested.rows.size == 2  # at depth 0, beside the op


def test_a_thread_without_ops_is_drawn_from_its_annotations(tmp_path: Path) -> None:
    """gloo runs a collective on a thread of its own, recorded as a ``record_function``
    range with no op under it (HTA's CPU-only trace: ``gloo:all_reduce`` for 173 ms): the
    thread gets a lane of its ranges, and its runtime calls move to an ``rt`` lane beside
    it.  A thread with only Python frames (a tqdm monitor waiting the whole trace) gets
    no lane: its frames are not work."""
    events = [
        op("aten::add", 0, 50, tid=1),
        annotation("gloo:all_reduce", 10, 300, tid=2),
        annotation("gloo:all_reduce", 100, 50, tid=2),  # inside the first: counted once
        runtime("cudaStreamSynchronize", 20, 5, correlation=9, tid=2),
        event("threading.py(359): wait", "python_function", 0, 1000, tid=3),
    ]
    analysis = _trace(tmp_path, events)
    lanes = build_lanes(analysis)
    assert [(lane.kind, lane.label) for lane in lanes] == [
        ("host", "thread 1"),
        ("annotation", "thread 2"),
        ("runtime", "thread 2 rt"),
    ]
    assert lanes[1].union.length == 300_000 and lanes[1].rows.size == 2  # the inner range counted once
    # with ``--nested`` too: one lane of ranges, not one per depth
    assert [lane.kind for lane in build_lanes(analysis, nested=True)].count("annotation") == 1
    # the Python-only thread is named as left out, and drawn when asked
    assert python_only_threads(analysis) == ["thread 3"]
    asked = build_lanes(analysis, python_threads=True)
    assert [(lane.kind, lane.label) for lane in asked][3:] == [("python", "thread 3")]
    assert asked[3].union.length == 1_000_000


def test_the_timeline_text_says_which_python_only_threads_it_leaves_out(tmp_path: Path, capsys) -> None:
    """Our own capture of a script whose worker thread multiplies matrices: the worker
    has only Python frames (ops are recorded on the profiled thread), so its lane is left
    out by default — said in a line within the width — and drawn on --python-threads."""
    events = [
        op("aten::mm", 0, 50, tid=1),
        event("train.py(6): side", "python_function", 10, 6000, tid=2),
        *[event("threading.py(359): wait", "python_function", 0, 9000, tid=tid) for tid in range(3, 12)],
    ]
    path = write_trace(tmp_path / "t.json", events)
    assert main(["timeline", str(path), "--no-cache", "--width", "60"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split("│")[0].strip() for line in out if "│" in line] == ["thread 1"]
    note = " ".join(out[3:])
    assert all(len(line) <= 60 for line in out)
    assert note.startswith("(not drawn: 10 threads with only Python frames") and "thread 2, thread 3" in note
    assert "and 4 more" in note and note.endswith("--python-threads draws them)")
    assert main(["timeline", str(path), "--no-cache", "--width", "60", "--python-threads"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len([line for line in out if "│" in line]) == 11 and "not drawn" not in " ".join(out)


@pytest.mark.parametrize("width", [60, 80, 132])
def test_timeline_text_fits_and_has_no_escape_codes(width: int, capsys) -> None:
    sample = SAMPLES / "trn_synthetic_rmsnorm_session"
    assert main(["timeline", str(sample), "--width", str(width), "--step", "2"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert all(len(line) <= width for line in lines) and "\x1b" not in out
    assert any(line.startswith("NC0") for line in lines) and "ProfilerStep" not in lines[0]
    assert main(["timeline", str(sample), "--lanes", "^NC0$", "--from", "1ms", "--to", "1.5ms", "--width", "80"]) == 0
    lanes = capsys.readouterr().out.splitlines()[2:]
    assert len(lanes) == 1 and lanes[0].startswith("NC0")
    capsys.readouterr()
    assert main(["timeline", str(sample), "--lanes", "nothing-matches"]) == 2
    # the error says how the lanes are named, so the next pattern can match
    err = capsys.readouterr().err
    assert "no lane matches --lanes 'nothing-matches'; the lanes are: " in err and "NC0" in err
    assert err.count("\n") == 1 and "more)" in err


async def test_timeline_and_diagnosis_panes() -> None:
    from trnscope.tui.app import TrnscopeApp
    from trnscope.tui.screen_diagnose import DiagnoseScreen
    from trnscope.tui.screen_drill import DrillScreen
    from trnscope.tui.screen_timeline import TimelineScreen

    app = TrnscopeApp([str(SAMPLES / "trn_synthetic_rmsnorm_session")])
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot)
        ops = app.screen
        await press(pilot, "T")
        timeline = app.screen
        assert isinstance(timeline, TimelineScreen)
        await settle(pilot)
        assert timeline.lanes and any(m is not None for m in timeline.marks)  # the selected op, highlighted
        span = timeline.t1 - timeline.t0
        await press(pilot, "plus")
        assert timeline.t1 - timeline.t0 == pytest.approx(span / 2, rel=0.01)
        t0 = timeline.t0
        await press(pilot, "l")
        assert timeline.t0 > t0
        t0 = timeline.t0
        await press(pilot, "h")
        assert timeline.t0 < t0
        span = timeline.t1 - timeline.t0
        await press(pilot, "minus")
        assert timeline.t1 - timeline.t0 == pytest.approx(span * 2, rel=0.01)
        lane = timeline.lane
        await press(pilot, "j")
        assert timeline.lane == lane + 1
        engines = sum(lane.kind == "engine" for lane in timeline.lanes)
        assert engines == 6  # NC0's five instruction engines and its DMA, under its lane
        assert any(lane.label.endswith(" dma") for lane in timeline.lanes)
        from trnscope.core.analysis.timeline import extent

        lo, hi = extent(timeline.lanes)
        first, last = timeline.analysis.span_ns  # the trace's events, drawn or not
        lo, hi = min(lo, first), max(hi, last)
        for key in ("minus", "minus", "minus", "l", "l", "l", "l"):  # zoomed out and panned: still on the trace
            await press(pilot, key)
            assert lo <= timeline.t0 < timeline.t1 <= hi
        count = len(timeline.lanes)
        await press(pilot, "e")
        assert len(timeline.lanes) == count - engines and all(lane.kind != "engine" for lane in timeline.lanes)
        await press(pilot, "e")
        assert len(timeline.lanes) == count
        await press(pilot, "k", "n")
        await settle(pilot)
        assert timeline.nested and timeline.lanes
        await press(pilot, "n")
        await settle(pilot)
        cursor = timeline.cursor
        await press(pilot, "right")
        assert timeline.cursor == cursor + 1
        await press(pilot, "0", "right_square_bracket")
        assert timeline.step == 0
        body = str(timeline.query_one("#tl-body").render())
        assert all(len(line) <= 80 for line in body.splitlines())
        assert "@" in str(timeline.query_one("#tl-info").render())
        await press(pilot, "escape")
        assert app.screen is ops
        await press(pilot, "d")
        pane = app.screen
        assert isinstance(pane, DiagnoseScreen)
        await settle(pilot)
        assert pane.doc is not None and pane.doc.findings
        pointing = next(i for i, f in enumerate(pane.doc.findings) if f.row >= 0)
        from trnscope.tui.vtable import VirtualTable

        pane.query_one(VirtualTable).move_to(pointing)
        await press(pilot, "enter")
        assert isinstance(app.screen, DrillScreen)
        await press(pilot, "T")
        assert isinstance(app.screen, TimelineScreen)
        await settle(pilot)
        assert app.screen.highlight.size > 0


@requires_corpus
def test_times_count_from_the_first_timed_event_not_metadata(capsys) -> None:
    """The MTIA trace writes its metadata at absolute ts 0, 8 days before its events:
    the axis still starts at the first event with a duration."""
    assert main(["timeline", str(CORPUS / "hta_mtia_inference.json.gz"), "--width", "80"]) == 0
    header = capsys.readouterr().out.splitlines()[0]
    assert "0.0us → 459.7ms" in header


def test_diagnose_text_summarises_many_steps(tmp_path: Path, capsys) -> None:
    """More steps than the text lists: a summary line and the slowest; --all-steps and
    JSON give every one."""
    from trnscope.cli.diagnose import STEPS_SHOWN
    from trnscope.testing.synth_kineto import generate

    path = tmp_path / "many_steps.json"
    generate(path, 20_000, seed=5)
    assert main(["diagnose", str(path), "--format", "json", "--no-cache"]) == 0
    steps = json.loads(capsys.readouterr().out)["steps"]
    assert len(steps) > STEPS_SHOWN
    assert main(["diagnose", str(path), "--no-cache"]) == 0
    text = capsys.readouterr().out
    listed = [line.split()[0] for line in text.splitlines() if line.startswith("ProfilerStep#")]
    slowest = [s["step"] for s in sorted(steps, key=lambda s: -s["wall_us"])[:STEPS_SHOWN]]
    assert listed == slowest and f"{len(steps):,} steps:" in text
    assert main(["diagnose", str(path), "--no-cache", "--all-steps"]) == 0
    assert sum(line.startswith("ProfilerStep#") for line in capsys.readouterr().out.splitlines()) == len(steps)


@requires_corpus
async def test_diagnosis_pane_steps_open_the_timeline_on_a_step() -> None:
    """`s` shows the steps (time order, then slowest first); Enter on one opens the
    timeline on exactly that step, and `]` goes on to the next."""
    from trnscope.tui.app import TrnscopeApp
    from trnscope.tui.screen_diagnose import DiagnoseScreen
    from trnscope.tui.screen_timeline import TimelineScreen
    from trnscope.tui.vtable import VirtualTable

    app = TrnscopeApp([str(CORPUS / "hta_diff_control_a100.json.gz")])
    async with app.run_test(size=(80, 24)) as pilot:
        pane = await _diagnosis_pane(app, pilot)
        assert pane.doc is not None and len(pane.doc.steps) == 6
        await press(pilot, "s")
        table = pane.query_one(VirtualTable)
        assert pane.view == "steps" and table.model.size == 6
        await press(pilot, "s")  # slowest first
        walls = [pane.doc.steps[i].wall_us for i in pane.step_order]
        assert walls == sorted(walls, reverse=True)
        await press(pilot, "enter")
        timeline = app.screen
        assert isinstance(timeline, TimelineScreen)
        await settle(pilot)
        slowest = pane.doc.steps[pane.step_order[0]].step
        step = next(s for s in pane.analysis.steps() if s.name == slowest)
        assert (timeline.t0, timeline.t1) == (step.start, step.end) and timeline.title_text == slowest
        lanes = len(timeline.lanes)
        await press(pilot, "e")  # a CUDA trace has no engine lanes: said, nothing hidden
        assert len(timeline.lanes) == lanes and timeline.show_engines
        steps = pane.analysis.steps()
        position = steps.index(step)
        if position + 1 < len(steps):
            await press(pilot, "right_square_bracket")
            assert timeline.t0 == steps[position + 1].start
        await press(pilot, "escape", "s")
        assert app.screen is pane and pane.view == "findings"
        # opened again: the same diagnosis, not a second run of it
        await press(pilot, "escape", "d")
        await settle(pilot)
        assert isinstance(app.screen, DiagnoseScreen) and app.screen is not pane and app.screen.doc is pane.doc


def test_a_trace_of_instantaneous_events_still_draws(tmp_path: Path, capsys) -> None:
    events = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 0},
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 0, "dur": 0},
    ]
    path = tmp_path / "zero.json"
    path.write_text(json.dumps({"traceEvents": events}))
    assert main(["timeline", str(path), "--width", "60", "--no-cache"]) == 0
    assert "0.0us → 1.0us" in capsys.readouterr().out
    assert main(["diagnose", str(path), "--no-cache"]) == 0


def test_a_trace_without_timed_events_has_no_lane_to_show(tmp_path: Path, capsys) -> None:
    """Metadata alone: one line that says why there is nothing to draw, whatever --lanes."""
    events = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 1, "args": {"name": "p"}}]
    path = tmp_path / "metadata_only.json"
    path.write_text(json.dumps({"traceEvents": events}))
    for lanes in ([], ["--lanes", "x"]):
        assert main(["timeline", str(path), "--no-cache", *lanes]) == 2
        assert capsys.readouterr().err == "trnscope: error: no lane to show (the trace has no timed events)\n"


async def test_engine_lanes_are_never_marked_by_a_highlighted_last_row() -> None:
    """Engine lanes hold instructions, not trace rows (their rows are -1): highlighting
    the trace's last row marks no engine lane."""
    from trnscope.tui.app import TrnscopeApp
    from trnscope.tui.messages import ShowTimeline
    from trnscope.tui.screen_timeline import TimelineScreen

    app = TrnscopeApp([str(SAMPLES / "trn_synthetic_rmsnorm_session")])
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot)
        analysis = app.screen.analysis  # type: ignore[attr-defined]
        last = len(analysis.trace.events) - 1
        app.screen.post_message(ShowTimeline(analysis, np.array([last], dtype=np.int64), "last row"))
        await settle(pilot)
        timeline = app.screen
        assert isinstance(timeline, TimelineScreen)
        built = timeline._built
        assert any(lane.kind == "engine" for lane, _ in built)
        assert all(mark is None for lane, mark in built if lane.kind == "engine")


async def _timeline_of_the_trace(pilot) -> Any:
    """Once the trace is open, its timeline (``T`` with nothing selected): the screen."""
    from trnscope.tui.messages import ShowTimeline
    from trnscope.tui.screen_timeline import TimelineScreen

    await wait_loaded(pilot)
    app = pilot.app
    app.screen.post_message(ShowTimeline(app.screen.analysis, np.empty(0, np.int64), ""))
    await settle(pilot)
    assert isinstance(app.screen, TimelineScreen)
    return app.screen


async def test_p_in_the_timeline_shows_and_hides_python_only_threads(tmp_path: Path) -> None:
    """The title says how many Python-only threads are hidden; ``p`` draws them."""
    from trnscope.tui.app import TrnscopeApp

    events = [op("aten::mm", 0, 50, tid=1), event("train.py(6): side", "python_function", 10, 60, tid=2)]
    app = TrnscopeApp([str(write_trace(tmp_path / "t.json", events))])
    async with app.run_test(size=(80, 24)) as pilot:
        timeline = await _timeline_of_the_trace(pilot)
        title = lambda: str(timeline.query_one("#tl-title").render())  # noqa: E731
        assert [lane.label for lane in timeline.lanes] == ["thread 1"] and "1 Python-only hidden (p)" in title()
        await press(pilot, "p")
        await settle(pilot)
        assert [(lane.kind, lane.label) for lane in timeline.lanes] == [("host", "thread 1"), ("python", "thread 2")]
        assert "hidden" not in title()
        await press(pilot, "p")
        await settle(pilot)
        assert len(timeline.lanes) == 1
        # a finding's long title kept "ou…" of itself beside the whole note: the note shortens first
        timeline.title_text = "outside_ops: ProfilerStep#6 of a long run"
        timeline.refresh_view()
        await settle(pilot)
        assert "+1 hidden (p)" in title() and "outside_ops" in title(), title()


async def test_the_line_under_the_timeline_tells_lanes_apart_at_80_columns(tmp_path: Path) -> None:
    """HTA's CPU-only trace at 80 columns: the cursor line elided both gloo threads'
    labels, "thread 3553 (pt_main_thread)" and "thread 3554 (pt_main_thread)", to
    "thread 3…ead)".  Where the whole label does not fit, the line names the lane as
    the lanes are told apart (without the process every lane repeats)."""
    from trnscope.tui.app import TrnscopeApp

    name = "gloo:all_reduce_" + "x" * 40
    events: list[dict] = [op("aten::empty", 0, 5, tid=1)]
    for tid in (3553, 3554):
        label = f"thread {tid} (pt_main_thread)"
        events.append({"ph": "M", "name": "thread_name", "pid": 1, "tid": tid, "args": {"name": label}})
        events.append(annotation(name, 10, 1000, tid=tid))
    path = write_trace(tmp_path / "gloo.json", events)
    app = TrnscopeApp([str(path)])
    async with app.run_test(size=(80, 24)) as pilot:
        timeline = await _timeline_of_the_trace(pilot)
        said = {}
        for index, lane in enumerate(timeline.lanes):
            timeline.lane = index
            timeline.cursor = timeline._cells() // 2
            timeline.refresh_view()
            line = str(timeline.query_one("#tl-info").render())
            assert len(line) <= 78
            said[lane.label] = line
        for tid in (3553, 3554):
            assert f"thread {tid}:" in said[f"thread {tid} (pt_main_thread)"]
        assert "thread 1: idle" in said["thread 1"]  # a label that fits stays whole


_NAME_PIECES = st.sampled_from(
    [
        "cudaStreamSynchronize",
        "HIPEVENTSYNCHRONIZE",
        "aten::item",
        "aten::ıtem",  # dotless i: Unicode case-insensitive matching takes it for "i"
        "ſynchronize",  # long s: taken for "s" the same way
        "aten::_Local_Scalar_Dense",
        "nrt_execute_wait",
        "NRT_x_WAIT",
        "synchronizer",
        "ncclKernel_AllReduce",
        "c10d::allgather_",
        "record_param_comms",
        "Broadcast",
        "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
        "enumerate(dataloader)#",
        "cudaStreamBeginCapture",
        "hipStreamEndCapture",
        "cuLaunchKernel",
        "hipMemcpyAsync",
        "MEMSET",
        "aten::mm",
        "::",
        "_",
        " ",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.one_of(_NAME_PIECES, st.text(max_size=4)), max_size=4).map("".join), max_size=12))
def test_names_matching_equals_the_pattern_alone(names: list[str]) -> None:
    """Ruling names out by their lower-case text first changes no answer, Unicode case
    folding and words split over pieces included."""
    for pattern, needles in (
        (_SYNC, _SYNC_NEEDLES),
        (_COLLECTIVE, _COLLECTIVE_NEEDLES),
        (DATA_LOADER, _DATA_LOADER_NEEDLES),
        (_CAPTURE_BEGIN, _CAPTURE_BEGIN_NEEDLES),
        (_CAPTURE_END, _CAPTURE_END_NEEDLES),
        (_DEVICE_CALL, _DEVICE_CALL_NEEDLES),
    ):
        expected = [pattern.search(name) is not None for name in names] or [False]
        assert names_matching(names, pattern, needles).tolist() == expected


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.integers(-(2**63), 2**63 - 1), st.integers(-(10**7), 10**7)), max_size=30))
def test_us_of_ns_is_us_of_each(values: list[int]) -> None:
    """Whole ns need no rounding after the division: the same floats as ``us``."""
    assert us_of_ns(np.array(values, dtype=np.int64)) == [us(v) for v in values]


def _style_per_cell(text: object) -> list[tuple[str, str]]:
    """(character, style) of each character of a Rich ``Text``, spans resolved."""
    from rich.text import Text

    assert isinstance(text, Text)
    styles = [""] * len(text.plain)
    for span in text.spans:
        for k in range(span.start, span.end):
            styles[k] = str(span.style)
    return list(zip(text.plain, styles))


@settings(max_examples=200, deadline=None)
@given(
    st.text(alphabet=" ▁▂▃▄▅▆▇█", min_size=1, max_size=40),
    st.integers(-3, 45),
    st.one_of(st.none(), st.lists(st.floats(0, 1), min_size=40, max_size=40)),
)
def test_timeline_cells_as_runs_look_like_one_span_per_cell(line: str, cursor: int, marks: list[float] | None) -> None:
    """A lane's cells go in as runs of one look: every character keeps the style (the
    lane's colour, the highlight's, the cursor's reverse) and the text (a blank under the
    cursor drawn as ·) it had as a span of its own."""
    from types import SimpleNamespace

    from rich.text import Text

    from trnscope.tui.screen_timeline import TimelineScreen

    mark = None if marks is None else np.array(marks[: len(line)])
    runs = Text()
    TimelineScreen._append_cells(SimpleNamespace(cursor=cursor), runs, line, "green", mark)  # type: ignore[arg-type]
    per_cell = Text()
    for cell, ch in enumerate(line):  # how the lines were drawn before: a span per cell
        style = "green"
        if mark is not None and mark[cell] > 0:
            style = "bold magenta"
        if cell == cursor:
            style += " reverse"
            ch = ch if ch != " " else "·"
        per_cell.append(ch, style=style)
    assert _style_per_cell(runs) == _style_per_cell(per_cell)
    if mark is None:  # the lane's colour before and after the cursor, and the cursor
        assert len(runs.spans) <= 3


def test_lanes_whose_labels_elide_alike_keep_where_they_differ(tmp_path: Path, capsys) -> None:
    """Two host threads of one process, tids 4242424 and 4242429: cut to the label
    column they read alike ("thread 4242…worker)") unless elided where they differ."""
    from trnscope.core.analysis.timeline import lane_labels

    labels = ["thread 4242 (python)", "thread 4249 (python)", "neuron stream 0"]
    shown = lane_labels(labels, 16)
    assert len(set(shown)) == 3 and all(len(s) <= 16 for s in shown) and shown[2] == "neuron stream 0"
    # the cut moves to keep the thread ids whole, which tells them apart
    assert "4242" in shown[0].split("…")[0] and "4249" in shown[1].split("…")[0]
    events = [op("aten::mm", 10.0 * k, 5.0, pid=7, tid=tid) for k, tid in enumerate((4242424, 4242429) * 3)]
    events += [  # named as Kineto names host threads
        {"ph": "M", "name": "thread_name", "pid": 7, "tid": tid, "args": {"name": f"thread {tid} (python3.11 worker)"}}
        for tid in (4242424, 4242429)
    ]
    trace = write_trace(tmp_path / "two_threads.json", events)
    assert main(["timeline", str(trace), "--width", "80", "--no-cache"]) == 0
    rows = [line.split("│")[0] for line in capsys.readouterr().out.splitlines() if "│" in line]
    threads = [row for row in rows if row.startswith("thre")]
    assert len(threads) == 2 and threads[0] != threads[1], rows


def test_a_long_lane_label_leaves_out_what_every_lane_repeats() -> None:
    """HTA's A100 trace at 80 columns read "thre…3113936… rt" and "python3.8 …am 20":
    the process name every lane repeats goes first, then the middle."""
    from trnscope.core.analysis.timeline import compact_lane_labels, lane_labels

    labels = [
        "thread -1029147072",
        "thread 3113936 (python3.8)",
        "thread 3113936 (python3.8) rt",
        "thread 3126441 (python3.8) ·1",
        "python3.8 (GPU 3) / stream 7",
        "python3.8 (GPU 3) / stream 20",
        "MTIA 9 (MTIA 9) / Stream 102 FW",
        "NC0",
    ]
    assert lane_labels(labels, 18) == [
        "thread -1029147072",
        "thread 3113936",
        "thread 3113936 rt",
        "thread 3126441 ·1",
        "GPU 3 / stream 7",
        "GPU 3 / stream 20",
        "MTIA 9 / St…102 FW",
        "NC0",
    ]
    assert lane_labels(labels, 40) == labels  # room for the whole label: nothing goes
    # threads of two processes: the process names tell them apart, so they stay
    two = ["thread 5 (trainer)", "thread 6 (loader)"]
    assert compact_lane_labels(two) == two
    # two processes' GPU 0: the short forms would read alike, so both stay whole
    same_gpu = ["rank0 (GPU 0) / stream 7", "rank1 (GPU 0) / stream 7", "rank1 (GPU 1) / stream 7"]
    assert compact_lane_labels(same_gpu) == [same_gpu[0], same_gpu[1], "GPU 1 / stream 7"]


def test_a_process_labelled_with_its_own_name_is_named_once(tmp_path: Path) -> None:
    """HTA's MTIA traces name a device process "MTIA 17" and label it "MTIA 17": the
    timeline's line read "MTIA 17 (MTIA 17) / Stream 112".  A label that adds something
    (a CUDA process's "GPU 3") stays."""

    def meta(name: str, pid: int, tid: int, value: str) -> dict:
        key = "labels" if name == "process_labels" else "name"
        return {"ph": "M", "name": name, "pid": pid, "tid": tid, "args": {key: value}}

    events = [
        meta("process_name", 17, 0, "MTIA 17"),
        meta("process_labels", 17, 0, "MTIA 17"),
        meta("thread_name", 17, 112, "Stream 112"),
        meta("process_name", 3, 0, "python3"),
        meta("process_labels", 3, 0, "GPU 3"),
        kernel("a", 0, 10, pid=17, stream=112),
        kernel("b", 0, 10, pid=3),
    ]
    analysis = _trace(tmp_path, events)
    labels = sorted(info.display for info in analysis.trace.threads if info.is_device)
    assert labels == ["MTIA 17 / Stream 112", "python3 (GPU 3) / stream 7"]


@pytest.mark.parametrize(
    ("op_us", "kernel_us", "bound"),
    [
        ((0, 950), (100, 600), "host"),  # device busy 60% of the wall, the host 95%: the host is the limit
        ((0, 300), (100, 700), "device"),  # device 70%, host 30%
        ((0, 100), (100, 400), "host"),  # device 40%: the rest is time neither shows (Python, I/O)
        ((0, 500), (100, 500), "device"),  # a tie at half the wall
    ],
)
def test_a_step_is_bound_by_its_busier_side(tmp_path: Path, op_us: tuple, kernel_us: tuple, bound: str) -> None:
    """TraceLens's xDiT step, host busy 94% and device 60%, read "device-bound" (the
    device was busy half the wall) beside "speed up the device work itself"."""
    events = [
        annotation("ProfilerStep#1", 0, 1000, ext=1),
        op("aten::mm", op_us[0], op_us[1], ext=2),
        launch(op_us[0] + 5, 10, correlation=100, ext=2),
        kernel("gemm", kernel_us[0], kernel_us[1], correlation=100, ext=2),
    ]
    (step,) = diagnose(_trace(tmp_path, events)).steps
    assert (step.host_busy_us, step.device_busy_us, step.bound) == (op_us[1], kernel_us[1], bound)


@pytest.mark.parametrize("at_once", [True, False])
async def test_the_timeline_and_the_diagnosis_open_with_their_figures(at_once: bool, monkeypatch) -> None:
    """A trace of at most ``AT_ONCE_EVENTS`` events: the lanes and the diagnosis are
    computed as the pane mounts, so its first frame shows them (not "building lanes…"
    and, a frame later, the lanes).  A larger one: in a worker, the same figures."""
    import threading

    import trnscope.tui.screen_base as screen_base
    import trnscope.tui.screen_diagnose as screen_diagnose
    import trnscope.tui.screen_timeline as screen_timeline
    from trnscope.tui.app import TrnscopeApp
    from trnscope.tui.screen_diagnose import DiagnoseScreen
    from trnscope.tui.screen_timeline import TimelineScreen

    on_ui_thread: list[bool] = []

    def recorded(compute):  # type: ignore[no-untyped-def]
        def run(*args, **kwargs):  # type: ignore[no-untyped-def]
            on_ui_thread.append(threading.current_thread() is threading.main_thread())
            return compute(*args, **kwargs)

        return run

    monkeypatch.setattr(screen_timeline, "build_lanes", recorded(screen_timeline.build_lanes))
    monkeypatch.setattr(screen_diagnose, "diagnose", recorded(screen_diagnose.diagnose))
    if not at_once:
        monkeypatch.setattr(screen_base, "AT_ONCE_EVENTS", 0)
    app = TrnscopeApp([str(SAMPLES / "trn_synthetic_rmsnorm_session")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_loaded(pilot)
        await pilot.press("T")
        timeline = app.screen
        assert isinstance(timeline, TimelineScreen)
        if at_once:
            assert timeline.lanes  # before any frame
        await settle(pilot)
        assert timeline.lanes and any(m is not None for m in timeline.marks)
        await press(pilot, "escape")
        await pilot.press("d")
        diagnosis = app.screen
        assert isinstance(diagnosis, DiagnoseScreen)
        if at_once:  # the first finding's message is under the table with it, not a frame later
            assert diagnosis.doc is not None
            assert str(diagnosis.query_one("#dg-detail").render()) == diagnosis.doc.findings[0].message
        await settle(pilot)
        assert diagnosis.doc is not None and diagnosis.doc.findings
    assert on_ui_thread == [at_once, at_once]


async def test_a_pane_whose_figures_fail_says_so_and_stays(monkeypatch) -> None:
    """Computed at once or in a worker, figures that fail are a notification; the app
    goes on (an exception in on_mount would have ended it)."""
    import trnscope.tui.screen_diagnose as screen_diagnose
    from trnscope.tui.app import TrnscopeApp

    def broken(analysis: Analysis) -> DiagnoseOut:
        raise ValueError("a figure nobody could compute")

    monkeypatch.setattr(screen_diagnose, "diagnose", broken)
    notices: list[str] = []
    app = TrnscopeApp([str(SAMPLES / "trn_synthetic_rmsnorm_session")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_loaded(pilot)
        monkeypatch.setattr(app, "notify", lambda message, **kwargs: notices.append(message))
        await press(pilot, "d")
        assert app.is_running
        assert any(n.startswith("diagnose failed: ValueError: a figure nobody could compute") for n in notices), notices
        await press(pilot, "escape")
        assert app.is_running


async def test_the_diagnosis_pane_shows_a_findings_whole_message_at_80x24(tmp_path: Path) -> None:
    """Every finding's message fits the pane under the table at 80×24: a device_idle
    message of five lines lost its last one, the figures of where the host was."""
    from rich.console import Console
    from rich.text import Text

    from trnscope.tui.app import TrnscopeApp
    from trnscope.tui.vtable import VirtualTable

    path = write_trace(tmp_path / "t.json", _captured_launches(), baseTimeNanoseconds=1_700_000_000_000_000_000)
    app = TrnscopeApp([str(path)])
    async with app.run_test(size=(80, 24)) as pilot:
        pane = await _diagnosis_pane(app, pilot)
        assert pane.doc is not None and len(pane.doc.findings) >= 2
        table = pane.query_one(VirtualTable)
        detail = pane.query_one("#dg-detail")
        longest = 0
        for index, finding in enumerate(pane.doc.findings):
            table.move_to(index)
            await settle(pilot)
            box = detail.content_region
            lines = Text(finding.message).wrap(Console(width=box.width), box.width)
            longest = max(longest, len(lines))
            assert len(lines) <= box.height, (finding.kind, len(lines), box.height)
        assert longest >= 5  # (the case that was cut)


async def _diagnosis_pane(app: Any, pilot: Any) -> Any:
    """The explorer's diagnosis pane, opened with `d` once the trace has loaded."""
    from trnscope.tui.screen_diagnose import DiagnoseScreen

    await wait_loaded(pilot)
    await press(pilot, "d")
    pane = app.screen
    assert isinstance(pane, DiagnoseScreen)
    await settle(pilot)
    return pane


async def _timeline_of_the_first_finding(app: Any, pilot: Any, kind: str) -> tuple[Any, Any]:
    """The diagnosis pane, whose first finding is of ``kind``, and the timeline enter
    opened from it."""
    from trnscope.tui.screen_timeline import TimelineScreen

    pane = await _diagnosis_pane(app, pilot)
    assert pane.doc is not None and pane.doc.findings[0].kind == kind
    await press(pilot, "enter")
    timeline = app.screen
    assert isinstance(timeline, TimelineScreen)
    await settle(pilot)
    return pane, timeline


async def test_the_diagnosis_panes_steps_say_how_long_the_host_fetched_batches(tmp_path: Path) -> None:
    """The steps view of the diagnosis pane has a Loading column where a step fetched
    from its DataLoader, and the step's line says what share of its wall time that was."""
    from trnscope.tui.app import TrnscopeApp
    from trnscope.tui.vtable import VirtualTable

    events = [annotation("ProfilerStep#1", 0, 10_000, ext=1)]
    events.append(annotation("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 100, 2_500))
    events.append(op("aten::add", 3_000, 20, ext=2))
    events.append(launch(3_005, 5, correlation=2, ext=2))
    events.append(kernel("add_kernel", 3_020, 4, correlation=2, ext=2))
    path = write_trace(tmp_path / "t.json", events)
    app = TrnscopeApp([str(path)])
    async with app.run_test(size=(100, 30)) as pilot:
        pane = await _diagnosis_pane(app, pilot)
        await press(pilot, "s")
        (step,) = pane.doc.steps
        assert step.data_loading_us == pytest.approx(2_500, abs=1e-3)
        table = pane.query_one("#findings", VirtualTable)
        assert [c.title for c in table.model.columns][3] == "Loading"
        assert "2.50ms" in str(table.model.cells(0)[3])
        assert "(25% fetching batches from the DataLoader)" in str(pane.query_one("#dg-detail").render())


def test_a_trace_without_steps_says_whose_ops_host_busy_counts(tmp_path: Path, capsys) -> None:
    """HTA's MTIA inference server: no ProfilerStep, 40 threads; its "whole trace" step
    read "host busy 2.766ms" without saying of which thread (the one with the most ops)."""
    events = [op("aten::add", 0, 10, tid=1), *[op("aten::mul", 20 + 30 * k, 10, tid=2) for k in range(3)]]
    path = write_trace(tmp_path / "server.json", events)
    assert main(["diagnose", str(path), "--no-cache", "--format", "json"]) == 0
    (step,) = json.loads(capsys.readouterr().out)["steps"]
    assert (step["step"], step["host_thread"], step["host_busy_us"]) == ("whole trace", "thread 2", 30.0)
    assert main(["diagnose", str(path), "--no-cache"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "(no ProfilerStep: host busy counts the ops of thread 2, the thread with the most)" in text
    # with steps: each step's own thread, and no note
    stepped = write_trace(tmp_path / "steps.json", [annotation("ProfilerStep#1", 0, 200, tid=1), *events])
    assert main(["diagnose", str(stepped), "--no-cache", "--format", "json"]) == 0
    (step,) = json.loads(capsys.readouterr().out)["steps"]
    assert (step["step"], step["host_thread"], step["host_busy_us"]) == ("ProfilerStep#1", "thread 1", 10.0)
    assert main(["diagnose", str(stepped), "--no-cache"]) == 0
    assert "no ProfilerStep" not in capsys.readouterr().out


async def test_a_trace_of_python_frames_alone_draws_them(tmp_path: Path, capsys) -> None:
    """Python frames and nothing else: "no lane to show (the trace has no timed events)"
    was wrong.  The text and the explorer draw them, and say why."""
    from trnscope.tui.app import TrnscopeApp

    events = [
        event("a.py(1): f", "python_function", 0, 100, tid=1),
        event("a.py(2): g", "python_function", 10, 50, tid=2),
    ]
    path = write_trace(tmp_path / "py.json", events)
    assert main(["timeline", str(path), "--no-cache", "--width", "60"]) == 0
    out = capsys.readouterr().out
    assert [line.split("│")[0].strip() for line in out.splitlines() if "│" in line] == ["thread 1", "thread 2"]
    assert "drawn as the trace has nothing else" in " ".join(out.split())
    app = TrnscopeApp([str(path)])
    async with app.run_test(size=(80, 24)) as pilot:
        timeline = await _timeline_of_the_trace(pilot)
        assert [lane.kind for lane in timeline.lanes] == ["python", "python"]
        assert "hidden" not in str(timeline.query_one("#tl-title").render())


async def test_the_explorers_whole_trace_step_says_whose_ops_it_counts(tmp_path: Path) -> None:
    """The diagnosis pane's step line names the thread a trace without ProfilerStep
    counts host busy on, as the text does."""
    from trnscope.tui.app import TrnscopeApp

    events = [op("aten::add", 0, 10, tid=1), *[op("aten::mul", 20 + 30 * k, 10, tid=2) for k in range(3)]]
    app = TrnscopeApp([str(write_trace(tmp_path / "server.json", events))])
    async with app.run_test(size=(100, 30)) as pilot:
        pane = await _diagnosis_pane(app, pilot)
        await press(pilot, "s")
        detail = " ".join(str(pane.query_one("#dg-detail").render()).split())
        assert "host busy" in detail and "(the ops of thread 2, the thread with the most)" in detail


async def test_p_in_a_timeline_with_nothing_to_hide_says_why(tmp_path: Path) -> None:
    """``p`` where no thread has only Python frames, and where they are all there is:
    each says what it does not do, and the lanes stay as they are."""
    from trnscope.tui.app import TrnscopeApp

    cases = [
        ([op("aten::mm", 0, 50, tid=1)], "no thread has only Python frames"),
        ([event("a.py(1): f", "python_function", 0, 100, tid=1)], "the trace has nothing else to draw"),
    ]
    for number, (events, said) in enumerate(cases):
        app = TrnscopeApp([str(write_trace(tmp_path / f"t{number}.json", events))])
        async with app.run_test(size=(80, 24)) as pilot:
            timeline = await _timeline_of_the_trace(pilot)
            before = [lane.label for lane in timeline.lanes]
            await press(pilot, "p")
            await settle(pilot)
            assert [lane.label for lane in timeline.lanes] == before and not timeline.python_threads
            assert any(said in n.message for n in app._notifications)


def test_a_step_ratio_without_an_interval_shows_the_ratio_alone() -> None:
    """A baseline whose resamples were all 0 has a ratio and no interval: "×2.50" and
    "no interval", not "×2.50 [nan–nan]" and "slower"."""
    from trnscope.core.analysis.compare_model import step_ratio_text, step_verdict_text
    from trnscope.core.analysis.distribution import RatioInterval

    nan = float("nan")
    assert (step_ratio_text(RatioInterval(2.5, nan, nan)), step_verdict_text(RatioInterval(2.5, nan, nan))) == (
        "×2.50",
        "no interval",
    )
    assert step_ratio_text(RatioInterval(nan, nan, nan)) == "—" and step_verdict_text(None) == "—"
    assert step_ratio_text(RatioInterval(0.044, 0.018, 1.016)) == "×0.044 [0.018–1.02]"


def test_device_idle_says_which_gaps_and_the_share_they_hold(tmp_path: Path) -> None:
    """Gaps of 4,000, 3,000 and 3,000 µs (each over 1 ms, each before a launch by an op
    begun inside it): half the idle time takes the two longest, which hold 70% of it."""
    events = [annotation("ProfilerStep#1", 0, 20_000)]
    at = 100
    for k, gap in enumerate((4_000, 3_000, 3_000)):
        start = at + 10 + gap  # the kernel after the gap
        events += [
            op("aten::mm", start - 50, 20, ext=k + 1),
            launch(start - 45, 5, correlation=k + 1, ext=k + 1),
            kernel("gemm", start, 10, correlation=k + 1, ext=k + 1),
        ]
        at = start
    events = [
        *events[:1],
        op("aten::mm", 50, 20, ext=9),
        launch(55, 5, correlation=9, ext=9),
        kernel("gemm", 100, 10, correlation=9, ext=9),
        *events[1:],
    ]
    (idle,) = [f for f in diagnose(_trace(tmp_path, events)).findings if f.kind == "device_idle"]
    assert idle.evidence_us == 10_000
    assert "; in the 2 longest gaps (70% of this time) the host was in no op or annotation" in idle.message
    assert "for 7.000ms (2 gaps: Python or untraced work)" in idle.message


def test_an_idle_gap_in_no_op_names_the_python_call_that_held_it(tmp_path: Path) -> None:
    """A gap with the launching thread in no op read "Python or untraced work" even
    where the trace has the Python frames (with_stack): it now names the call holding
    a quarter or more of that time, by the rule the straggler and outside_ops use."""
    events = [
        annotation("ProfilerStep#1", 0, 5_000),
        op("aten::mm", 10, 20, ext=1),
        launch(15, 5, correlation=1, ext=1),
        kernel("gemm", 40, 50, correlation=1, ext=1),
        event("train.py(40): log_metrics", "python_function", 150, 3_900),
        op("aten::mm", 4_100, 20, ext=2),
        launch(4_105, 5, correlation=2, ext=2),
        kernel("gemm", 4_115, 50, correlation=2, ext=2),
    ]
    (idle,) = [f for f in diagnose(_trace(tmp_path, events)).findings if f.kind == "device_idle"]
    assert "the host was in no op or annotation (but the step) of the launching thread for 4.025ms" in idle.message
    assert "(1 gap: Python or untraced work; 3.900ms of it inside train.py(40): log_metrics)" in idle.message
    # the loop's own frame holds every gap, and names no cause
    loop = [event("train.py(30): main", "python_function", 0, 5_000), *events[:4], *events[5:]]
    (tmp_path / "loop").mkdir()
    (idle,) = [f for f in diagnose(_trace(tmp_path / "loop", loop)).findings if f.kind == "device_idle"]
    assert idle.message.endswith("(1 gap: Python or untraced work)")
    from trnscope.core.analysis.idle_frames import holds_a_whole_step

    steps = (np.array([0, 100, 200]), np.array([100, 200, 300]))
    frames = (np.array([0, 50, 90, 150, 250]), np.array([300, 240, 200, 160, 400]))
    assert holds_a_whole_step(*steps, *frames).tolist() == [True, True, True, False, False]


def test_a_cpu_traces_time_outside_ops_is_a_finding(tmp_path: Path) -> None:
    """A CPU-only trace had no finding however much of its steps ran no op ("findings:
    none above their thresholds").  Its steps' op-free time is now one, when a fifth of
    their time or more: the Python between the ops, with the frame that held most of it
    where one did; and where a gloo thread executed collectives meanwhile, the steps
    waited for other ranks.  Its evidence is the steps' wall less their host busy time."""
    python = [
        annotation("ProfilerStep#1", 0, 1_000),
        op("aten::mm", 10, 200),
        event("train.py(12): log_metrics", "python_function", 300, 600),
        op("aten::add", 950, 40),
    ]
    doc = diagnose(_trace(tmp_path, python))
    (finding,) = [f for f in doc.findings if f.kind == "outside_ops"]
    step = doc.steps[0]
    assert finding.evidence_us == step.wall_us - step.host_busy_us == 760
    assert "in no op for 760.000us of their 1.000ms (76%): Python between the ops" in finding.message
    assert "600.000us of it inside train.py(12): log_metrics" in finding.message
    waiting = [
        annotation("ProfilerStep#1", 0, 1_000),
        op("aten::mm", 10, 100),
        event("gloo:all_reduce", "user_annotation", 150, 800, tid=7),
    ]
    (tmp_path / "w").mkdir()
    (finding,) = [f for f in diagnose(_trace(tmp_path / "w", waiting)).findings if f.kind == "outside_ops"]
    assert "while a host thread executed collectives for 800.000us of the steps (gloo:all_reduce" in finding.message
    busy = [annotation("ProfilerStep#1", 0, 1_000), op("aten::mm", 10, 900)]
    (tmp_path / "b").mkdir()
    assert not [f for f in diagnose(_trace(tmp_path / "b", busy)).findings if f.kind == "outside_ops"]
    ranges = [annotation("ProfilerStep#1", 0, 1_000), annotation("load", 10, 50)]  # no op at all: none to be between
    (tmp_path / "r").mkdir()
    assert not [f for f in diagnose(_trace(tmp_path / "r", ranges)).findings if f.kind == "outside_ops"]


def test_a_device_traces_time_before_its_first_launch_is_a_finding(tmp_path: Path) -> None:
    """TraceLens's TimeSformer step spends 213 of its 383 ms preprocessing video frames
    in Python before its first launch; the diagnosis said only "host-bound overall: see
    the other findings", and there were none.  The steps' op-free time before the
    host's first launch or after the devices' last work is now a finding, naming the
    frame; time after a launch whose work has not begun (the queue) and time inside a
    stream capture are not the host holding the device up."""
    step = [
        annotation("ProfilerStep#1", 0, 1_000),
        event("pipeline.py(129): preprocess", "python_function", 5, 600),
        event("image_utils.py(40): resize", "python_function", 10, 300),
        op("aten::mm", 700, 50, ext=1),
        launch(710, 5, correlation=1, ext=1),
        kernel("gemm", 720, 200, correlation=1, ext=1),
    ]
    doc = diagnose(_trace(tmp_path, step))
    (finding,) = [f for f in doc.findings if f.kind == "outside_ops"]
    # 0–710 before the launch less the op (700–710), and 920–1000 after the kernel
    assert finding.evidence_us == 700 + 80 and finding.severity == "high"
    assert "in no op for 780.000us of their 1.000ms (78%) before its first launch of device work" in finding.message
    # the frame that held the most of it, not its inner call that held half as much
    assert "600.000us of it inside pipeline.py(129): preprocess" in finding.message

    # a frame that runs the step's ops later (inside the devices' span) did not hold the
    # time before them: it is no Python call to name
    running = [
        annotation("ProfilerStep#1", 0, 1_000),
        event("model.py(10): run", "python_function", 5, 985),
        op("aten::mm", 400, 20, ext=1),
        launch(405, 5, correlation=1, ext=1),
        kernel("gemm", 410, 20, correlation=1, ext=1),
        op("aten::add", 430, 510, ext=2),
        launch(435, 5, correlation=2, ext=2),
        kernel("add", 440, 510, correlation=2, ext=2),
    ]
    (tmp_path / "r").mkdir()
    (finding,) = [f for f in diagnose(_trace(tmp_path / "r", running)).findings if f.kind == "outside_ops"]
    assert "inside" not in finding.message, finding.message

    def work(op_at: float, launch_at: float, kernel_at: float, kernel_for: float) -> list[dict]:
        return [
            op("aten::mm", op_at, 50, ext=1),
            launch(launch_at, 5, correlation=1, ext=1),
            kernel("gemm", kernel_at, kernel_for, correlation=1, ext=1),
        ]

    step = annotation("ProfilerStep#1", 0, 1_000)
    not_the_host = {
        # launched at 20 µs, run at 700: the device was busy elsewhere, not waiting on Python
        "queued": [step, *work(10, 20, 700, 290)],
        # recording a graph: nothing runs by design
        "capturing": [
            step,
            runtime("cudaStreamBeginCapture", 5, 2, correlation=7),
            runtime("cudaStreamEndCapture", 690, 2, correlation=8),
            *work(700, 710, 720, 270),
        ],
        # the step's thread runs no op at all (HTA's Triton example): no "between"
        "elsewhere": [annotation("ProfilerStep#1", 0, 1_000, tid=9), *work(700, 710, 720, 20)],
    }
    for name, events in not_the_host.items():
        (tmp_path / name).mkdir()
        assert not [f for f in diagnose(_trace(tmp_path / name, events)).findings if f.kind == "outside_ops"], name


async def test_enter_on_the_time_before_the_first_launch_opens_the_timeline_on_it(tmp_path: Path) -> None:
    """A device trace's ``outside_ops`` says where its time lies (``window_us``: the
    longest stretch, from the trace's start); enter in the diagnosis opens the timeline
    on that stretch, not on the whole step."""
    from trnscope.tui.app import TrnscopeApp

    events = [
        annotation("ProfilerStep#1", 0, 1_000),
        event("pipeline.py(129): preprocess", "python_function", 5, 600),
        op("aten::mm", 700, 50, ext=1),
        launch(710, 5, correlation=1, ext=1),
        kernel("gemm", 720, 200, correlation=1, ext=1),
    ]
    trace = write_trace(tmp_path / "t.json", events, baseTimeNanoseconds=1_700_000_000_000_000_000)
    (finding,) = [f for f in diagnose(Analysis(load_path(trace))).findings if f.kind == "outside_ops"]
    assert finding.window_us == [0.0, 710.0]  # the step's start to the first launch
    app = TrnscopeApp([str(trace)])
    async with app.run_test(size=(80, 24)) as pilot:
        pane, timeline = await _timeline_of_the_first_finding(app, pilot, "outside_ops")
        origin = pane.analysis.span_ns[0]
        assert (timeline.t0 - origin, timeline.t1 - origin) == (0, 710_000)


def test_no_finding_to_see_is_not_pointed_at(tmp_path: Path) -> None:
    """A host-bound step's long_queue said "see the other findings" where there were
    none (TimeSformer, before outside_ops covered it): with no other finding it says
    where to look instead."""
    events = [
        annotation("ProfilerStep#1", 0, 1_000),
        op("aten::mm", 0, 900, ext=1),
        launch(10, 5, correlation=1, ext=1),
        kernel("gemm", 200, 50, correlation=1, ext=1),
    ]
    doc = diagnose(_trace(tmp_path, events))
    assert [f.kind for f in doc.findings] == ["long_queue"] and doc.steps[0].bound == "host"
    assert "see the other findings" not in doc.findings[0].message
    assert "no cause passes its threshold: the timeline shows where the host's time went" in doc.findings[0].message


async def test_a_finding_of_no_op_opens_the_timeline_on_its_worst_step() -> None:
    """Enter on an op-less finding said "this finding points at no op": a dead end.  On a
    CPU trace's ``outside_ops`` it opens the timeline on the step with the most host time
    outside ops, where the gaps between the ops are to be seen."""
    from trnscope.tui.app import TrnscopeApp

    app = TrnscopeApp([str(SAMPLES / "cpu_train_tiny_session")])
    async with app.run_test(size=(80, 24)) as pilot:
        pane, timeline = await _timeline_of_the_first_finding(app, pilot, "outside_ops")
        worst = max(pane.doc.steps, key=lambda s: s.wall_us - s.host_busy_us)
        step = next(s for s in pane.analysis.steps() if s.name == worst.step)
        # the step's length, kept on the trace's lanes (the first step begins before its first op)
        assert timeline.t1 - timeline.t0 == step.end - step.start
        assert abs(timeline.t0 - step.start) < (step.end - step.start) // 10
        assert timeline.title_text == f"outside_ops: {worst.step}"


def test_the_label_column_fits_the_labels_and_grows_with_the_terminal(capsys) -> None:
    """The DDP rank's gloo threads read "thread 1074 (pt_…unloop)" even at 160
    columns, and a CPU trace's one "thread 5933" took 20 cells at 80: the column is as
    wide as the longest label (shortened as lane_labels shortens it) up to a quarter of
    the width."""
    from trnscope.core.analysis.timeline import label_column_width

    labels = ["thread 1074 (pt_gloo_runloop) rt", "thread 1068 (python3)", "GPU 0 / stream 7"]
    assert label_column_width(labels, 160) == len(labels[0])  # whole
    assert label_column_width(labels, 80) == 20  # a quarter of the width, elided there
    assert label_column_width(["thread 59330 (python3)"], 80) == len("thread 59330")  # its process name goes
    assert label_column_width(["NC0"], 80) == 12 and label_column_width([], 80) == 12
    assert label_column_width(["x" * 90], 400) == 48

    rank0 = SAMPLES / "cuda_ddp_gloo_session" / "rank0"
    assert main(["timeline", str(rank0), "--width", "160", "--no-cache"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("thread 1074 (pt_gloo_runloop) rt│") for line in lines), lines[:6]
    assert all(len(line) <= 160 for line in lines)
