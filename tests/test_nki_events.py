"""Neuron runtime events JSON (NKI / nkipy / nrtpy kernel benchmarks) on SYNTHETIC
fixtures built from ``neuron-evidence.md`` §8 (``trnscope.testing.synth_nrt_events``):
every figure against the fixture's own truth, computed independently."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import numpy as np
import pytest

from trnscope.cli.main import main
from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.distribution import bootstrap_ratio, group_spread, sparkline
from trnscope.core.formats import discover, load_path
from trnscope.core.formats.options import LoadOptions
from trnscope.testing.synth_nrt_events import benchmark_events, write_benchmark, write_kernel_profile

NO_CACHE = LoadOptions(use_cache=False)


def _kernel(analysis: Analysis) -> tuple[np.ndarray, np.ndarray]:
    """(start, duration) of the executions, in time order."""
    table = analysis.kernel_table()
    assert len(table) == 1
    rows = np.sort(table.instances(0))
    ev = analysis.trace.events
    order = np.argsort(ev.ts[rows])
    return ev.ts[rows][order] + analysis.trace.origin_ns, ev.dur[rows][order]


@pytest.mark.parametrize("lnc", [1, 2])
@pytest.mark.parametrize("clock", ["device", "host"])
def test_one_execution_per_exec_id_whose_time_is_the_union_of_its_cores(tmp_path: Path, lnc: int, clock: str) -> None:
    path = tmp_path / "bench.json"
    truth = write_benchmark(path, lnc=lnc, clock=clock, executions=12)
    analysis = Analysis(load_path(path, NO_CACHE))
    starts, durations = _kernel(analysis)
    assert durations.tolist() == [e.union_ns for e in truth.executions]
    assert starts.tolist() == [e.host_start for e in truth.executions]  # placed by its own sync point
    assert analysis.trace.format == "neuron-events"
    said = " ".join(analysis.trace.warnings)
    assert ("NeuronCore clock" in said) == (clock == "device")
    assert "not inside their kbl_exec_wait" not in said


def test_disjoint_cores_add_up_and_span_and_longest_are_secondary(tmp_path: Path) -> None:
    path = tmp_path / "disjoint.json"
    truth = write_benchmark(path, lnc=2, disjoint_cores=True, executions=5)
    analysis = Analysis(load_path(path, NO_CACHE))
    _, durations = _kernel(analysis)
    assert durations.tolist() == [e.union_ns for e in truth.executions]
    assert all(e.union_ns < e.span_ns for e in truth.executions)
    from trnscope.core.analysis.chain import chain_for_row

    row = int(np.sort(analysis.kernel_table().instances(0))[0])
    chain = chain_for_row(analysis, row, 0, 5)
    execution = next(h for h in chain.hops if h.kind == "execution")
    text = json.dumps(execution.details)
    assert "span" in text and "longest" in text
    runtime = [h.name for h in chain.hops if h.kind == "runtime"]
    assert runtime[:5] == ["nrt_execute", "kbl_exec_pre", "kmgr_exec_core", "kbl_exec_wait", "kbl_exec_post"]


def test_drifting_offsets_need_the_sync_point_of_the_same_exec_id(tmp_path: Path) -> None:
    """With a drift of 37 ns per execution, the 40th execution placed by the first sync
    point would be 1.4 us off: each is placed exactly."""
    path = tmp_path / "drift.json"
    truth = write_benchmark(path, executions=40, clock="device")
    starts, _ = _kernel(Analysis(load_path(path, NO_CACHE)))
    assert starts.tolist() == [e.host_start for e in truth.executions]


def test_broken_pairs_and_unknown_types_are_counted_not_fatal(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    truth = write_benchmark(path, broken_pairs=True, executions=10)
    analysis = Analysis(load_path(path, NO_CACHE))
    _, durations = _kernel(analysis)
    assert durations.size == 10
    said = analysis.trace.warnings
    assert "1 START without STOP (left out)" in said
    assert "1 STOP without START (left out)" in said
    assert any("STOP comes before their START" in w for w in said)
    assert any("phase 'unknown'" in w for w in said)
    names = set(analysis.trace.names)
    assert "mystery_event_2027" in names and "nrt_tensor_write" in names  # unknown types shown, not dropped
    del truth


def test_layouts_bare_list_pretty_and_kernel_profile(tmp_path: Path) -> None:
    document, truth = benchmark_events(executions=6)
    (tmp_path / "list").mkdir()
    bare = tmp_path / "list" / "audit.json"
    bare.write_text(json.dumps(document["events"]))
    pretty = tmp_path / "system-trace.json"
    write_benchmark(pretty, pretty=True, executions=6)
    profile = tmp_path / "kernel_profile.json"
    write_kernel_profile(profile, executions=6)
    for path in (bare, pretty, profile):
        ref = discover(path)
        assert ref.kind == "neuron", path
        _, durations = _kernel(Analysis(load_path(path, NO_CACHE)))
        assert durations.tolist() == [e.union_ns for e in truth.executions], path


def test_warmup_leaves_out_the_first_executions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "with_warmup.json"
    truth = write_benchmark(path, warmup=3, executions=10)
    assert main(["summary", str(path), "--format", "json", "--warmup", "3", "--no-cache"]) == 0
    doc = json.loads(capsys.readouterr().out)
    kernel = doc["kernels"][0]
    measured = [e.union_ns for e in truth.measured(3)]
    assert kernel["calls"] == 10
    assert kernel["total_us"] == pytest.approx(sum(measured) / 1000, abs=1e-3)
    assert kernel["median_us"] == pytest.approx(statistics.median(measured) / 1000, abs=1e-3)
    assert kernel["std_us"] == pytest.approx(statistics.stdev(measured) / 1000, abs=1e-3)
    assert kernel["p10_us"] == pytest.approx(float(np.percentile(measured, 10)) / 1000, abs=1e-3)
    assert kernel["p90_us"] == pytest.approx(float(np.percentile(measured, 90)) / 1000, abs=1e-3)
    assert any("--warmup 3" in w for w in doc["warnings"])
    # without --warmup the cold starts are in, and diagnose still sees a slow first execution
    assert main(["summary", str(path), "--format", "json", "--no-cache"]) == 0
    assert json.loads(capsys.readouterr().out)["kernels"][0]["calls"] == 13


def test_compare_variants_says_which_difference_is_real(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_benchmark(tmp_path / "a_baseline.json", kernel="k_baseline", median_us=100, seed=1, executions=30)
    write_benchmark(tmp_path / "b_same.json", kernel="k_same", median_us=100.5, seed=2, executions=30)
    write_benchmark(tmp_path / "c_fast.json", kernel="k_fast", median_us=70, seed=3, executions=30)
    assert main(["compare", str(tmp_path), "--format", "json", "--no-cache"]) == 0
    doc = json.loads(capsys.readouterr().out)
    row = doc["kernel_runs"][0]
    assert row["aligned_by"] == "single"
    verdicts = {r["variant"]: r["verdict"] for r in row["against_baseline"]}
    assert verdicts == {"b_same": "within noise", "c_fast": "faster"}
    fast = next(r for r in row["against_baseline"] if r["variant"] == "c_fast")
    assert fast["median_low"] < fast["median_ratio"] < fast["median_high"] < 1
    assert main(["compare", str(tmp_path), "--no-cache"]) == 0
    text = capsys.readouterr().out
    assert "A = a_baseline" in text and "within noise" in text and "→ faster" in text
    assert "Kernel executions (one kernel per variant; " in text  # the JSON's code in words


def test_kernel_names_read_whole_at_80_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the bundled benchmarks' "rmsnorm_baseline" read "rmsnorm_b…line" beside a Std
    # column: the name identifies the variant, the spread is in P10 and P90 too
    names = ["rmsnorm_baseline", "rmsnorm_fused_v2", "rmsnorm_tiled_128"]
    for k, name in enumerate(names):
        write_benchmark(tmp_path / f"{k}_{name}.json", kernel=name, median_us=140 - 10 * k, seed=k, executions=20)
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["compare", str(tmp_path), "--no-cache"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [line for line in lines if line[:3] in ("A  ", "B  ", "C  ")]
    assert [row.split()[1] for row in rows] == names
    assert all(len(line) <= 80 for line in lines)
    (hidden,) = [line for line in lines if line.startswith("(hidden at 80 columns:")]
    assert "Std" in hidden and "P90" not in hidden
    # the title is one line though the table is narrower (Rich wrapped it at the table's
    # width), and no line is padded with spaces to the table's width
    assert "Kernel executions (one kernel per variant; each execution's device time)" in lines
    assert not [line for line in lines if line != line.rstrip()]


@pytest.mark.parametrize("hours_apart", [0, 3])
def test_a_framework_trace_of_another_run_above_a_benchmark_is_not_attached(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], hours_apart: int
) -> None:
    """A kernel benchmark saved one folder below some other run's trace took that
    trace's ops, steps and name, and called every execution "launched before the
    capture window".  A trace of the same run (a profiler around the benchmark loop)
    is still attached."""
    from trnscope.testing.events import op, write_trace
    from trnscope.testing.synth_nrt_events import BASE_NS, PERIOD_NS

    bench = tmp_path / "kernels" / "rmsnorm"
    bench.mkdir(parents=True)
    truth = write_benchmark(bench / "benchmark_events.json", kernel="rmsnorm_nki", executions=12)
    around_us = (BASE_NS - hours_apart * 3_600 * 10**9) // 1000  # the loop's start, Unix µs
    loop_us = 12 * PERIOD_NS // 1000 + 2_000
    write_trace(
        tmp_path / "trace.json", [op("ProfilerStep#1", around_us - 500, loop_us), op("my_loop", around_us, loop_us)]
    )
    assert main(["summary", str(bench / "benchmark_events.json"), "--format", "json", "--no-cache"]) == 0
    doc = json.loads(capsys.readouterr().out)
    names = {row["name"] for row in doc["ops"]}
    not_attached = [w for w in doc["warnings"] if "not attached" in w]
    assert doc["kernels"][0]["calls"] == len(truth.executions)
    if hours_apart:
        assert "my_loop" not in names and not doc["source"].endswith("trace.json")
        assert len(not_attached) == 1 and "(another run)" in not_attached[0], doc["warnings"]
        assert not any("before the capture window" in w for w in doc["warnings"])
    else:
        assert "my_loop" in names and doc["source"].endswith("trace.json")
        assert not not_attached


def test_align_names_kernels_that_differ(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from trnscope.testing.synth_nrt_events import write_benchmark as write

    a, b = tmp_path / "a.json", tmp_path / "b.json"
    doc_a, _ = benchmark_events(kernel="alpha", model_id=1, executions=8, seed=1)
    doc_b, _ = benchmark_events(kernel="beta", model_id=1, executions=8, seed=2, median_us=50)
    extra, _ = benchmark_events(kernel="gamma", model_id=2, executions=8, seed=3, nc_idx=1)
    doc_a["events"] += extra["events"]
    doc_b["events"] += extra["events"]
    a.write_text(json.dumps(doc_a))
    b.write_text(json.dumps(doc_b))
    assert main(["compare", str(a), str(b), "--format", "json", "--align", "alpha=beta", "--no-cache"]) == 0
    doc = json.loads(capsys.readouterr().out)
    first = doc["kernel_runs"][0]
    assert first["aligned_by"] == "align" and [r["name"] for r in first["runs"]] == ["alpha", "beta"]
    assert any(r["aligned_by"] == "name" and r["runs"][0]["name"] == "gamma" for r in doc["kernel_runs"])
    del write


def test_statistics_definitions() -> None:
    values = np.array([5.0, 1.0, 3.0, 2.0, 4.0, 10.0, 20.0])
    group = np.array([0, 0, 0, 0, 0, 1, 1])
    spread = group_spread(values, group, 3)
    assert spread.median[0] == 3.0 and spread.p10[0] == pytest.approx(np.percentile([1, 2, 3, 4, 5], 10))
    assert spread.std[0] == pytest.approx(statistics.stdev([1, 2, 3, 4, 5]))
    assert spread.median[1] == 15.0 and np.isnan(spread.median[2])
    same = bootstrap_ratio(np.arange(100.0) + 100, np.arange(100.0) + 100)
    assert same.within_noise and same.ratio == 1.0
    assert bootstrap_ratio(np.arange(100.0) + 100, np.arange(100.0) + 100) == same  # fixed seed
    picture, lo, hi = sparkline(np.array([1.0, 1.0, 2.0, 9.0]), 8)
    assert len(picture) == 8 and (lo, hi) == (1.0, 9.0)


def test_not_runtime_events_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "events.json"
    path.write_text('{"events": "not a list", "data_version": 2, "x": {"event_type": "a", "phase": "start"}}')
    assert main(["summary", str(path)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_slow_first_executions_are_pointed_out_and_warmup_removes_the_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from trnscope.core.analysis.kernel_compare import leading_warmups

    # against the median of all (100.5 here; of all but the first ten when there are 20 or more)
    assert leading_warmups([300, 290, 100, 101, 99, 100, 98, 102]) == (
        2,
        pytest.approx(290 / 100.5),
        pytest.approx(300 / 100.5),
    )
    assert leading_warmups([100, 300, 100, 101, 99, 100, 98, 102])[0] == 0  # a slow one later is no warm-up
    assert leading_warmups([110, 101, 99, 100, 98, 102])[0] == 0  # within 2× the others
    write_benchmark(tmp_path / "a.json", kernel="k_a", warmup=3, executions=30, seed=1)
    write_benchmark(tmp_path / "b.json", kernel="k_b", warmup=3, executions=30, seed=2)
    assert main(["compare", str(tmp_path), "--format", "json", "--no-cache"]) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert any("every kernel's first 3 executions take" in n and "--warmup 3" in n for n in notes), notes
    assert main(["compare", str(tmp_path), "--format", "json", "--no-cache", "--warmup", "3"]) == 0
    assert not any("warm-up?" in n for n in json.loads(capsys.readouterr().out)["notes"])
    assert main(["diagnose", str(tmp_path / "a.json"), "--no-cache"]) == 0
    assert "the first 3 of 33 executions take" in " ".join(capsys.readouterr().out.split())  # however it wraps
    # no steps and no host work: no "whole trace" step read "host busy 0 µs → host-bound"
    assert main(["diagnose", str(tmp_path / "a.json"), "--no-cache", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["steps"] == [] and doc["devices"] and "kernel_benchmark" in {f["kind"] for f in doc["findings"]}


async def test_the_compare_pane_says_it_has_notes_and_w_lists_them(tmp_path: Path) -> None:
    from tests.tui_helpers import press, wait_loaded
    from trnscope.tui.app import TrnscopeApp
    from trnscope.tui.screen_compare import CompareScreen
    from trnscope.tui.screen_text import WarningsScreen

    write_benchmark(tmp_path / "a.json", kernel="k_a", warmup=3, executions=30, seed=1)
    write_benchmark(tmp_path / "b.json", kernel="k_b", warmup=3, executions=30, seed=2)
    app = TrnscopeApp([str(tmp_path)], use_cache=False, workers=1)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot)
        compare = app.screen
        assert isinstance(compare, CompareScreen)
        assert "w: 1 note" in str(compare.query_one("#compare-info").render())
        title = str(compare.query_one("#compare-title").render())
        assert "B:b" in title and "Δ vs A" in title  # wrapped, not cut
        await press(pilot, "w")
        assert isinstance(app.screen, WarningsScreen) and "warm-up?" in app.screen.text


async def test_a_benchmarks_drill_down_names_each_hop_once(tmp_path: Path) -> None:
    """The runtime hop's line read "runtime · runtime · nrt_execute": its layer and its
    kind are one word there, and said once."""
    from tests.tui_helpers import press, settle, wait_loaded
    from trnscope.tui.app import TrnscopeApp
    from trnscope.tui.screen_drill import DrillScreen

    write_benchmark(tmp_path / "a.json", kernel="k_a", executions=8, seed=1)
    write_benchmark(tmp_path / "b.json", kernel="k_b", executions=8, seed=2)
    app = TrnscopeApp([str(tmp_path)], use_cache=False, workers=1)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot)
        await press(pilot, "enter")
        await settle(pilot)
        assert isinstance(app.screen, DrillScreen)
        detail = str(app.screen.query_one("#hop-detail").render())
        assert detail.startswith("runtime · nrt_execute"), detail[:80]


async def test_a_benchmarks_diagnosis_pane_has_no_steps(tmp_path: Path) -> None:
    """It read "0 steps: 0 host-bound, 0 device-bound" once a benchmark had no steps."""
    from tests.tui_helpers import press, settle, wait_loaded
    from trnscope.tui.app import TrnscopeApp
    from trnscope.tui.screen_diagnose import DiagnoseScreen

    write_benchmark(tmp_path / "a.json", kernel="k_a", executions=8, seed=1)
    app = TrnscopeApp([str(tmp_path / "a.json")], use_cache=False, workers=1)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot)
        await press(pilot, "d")
        pane = app.screen
        assert isinstance(pane, DiagnoseScreen)
        for _ in range(50):
            await settle(pilot)
            if pane.doc is not None:
                break
        assert pane.doc is not None and pane.doc.steps == []
        summary = str(pane.query_one("#dg-summary").render())
        assert "no ProfilerStep: no per-step figures" in summary and "0 steps" not in summary


def test_a_ratio_and_its_interval_read_in_one_precision() -> None:
    """``RatioInterval.text`` (compare's kernel runs, CLI and pane): the ratio and its
    bootstrap interval share their decimals, three where the column has room, fewer
    where it has not; ``verdict`` says whether the interval holds 1."""
    from trnscope.core.analysis.distribution import RatioInterval

    faster = RatioInterval(0.49912, 0.49351, 0.50694)
    assert faster.text() == "×0.499 [0.494–0.507]" and faster.text(22) == "×0.499 [0.494–0.507]"
    slower = RatioInterval(12.3456, 12.1, 12.6)
    assert slower.text(22) == "×12.35 [12.10–12.60]" and len(slower.text(22)) <= 22
    assert (faster.verdict, slower.verdict, RatioInterval(1.01, 0.97, 1.04).verdict) == (
        "faster", "slower", "within noise",
    )  # fmt: skip
