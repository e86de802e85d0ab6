"""Diagnosis advice follows the figures it is drawn from, on every corpus trace: no
"launch-bound" where the steps are device-bound, no "device-bound" where they are
host-bound, no finding under the noise floor, no sync finding that blames the host
while the device never idled; and "launched before the capture window" is said only of
device events that start before the first profiled op (checked against the raw JSON)."""

from __future__ import annotations

import gzip
import json

import pytest

from tests.conftest import corpus_files, requires_corpus
from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.diagnose import diagnose, noise_floor_ns
from trnscope.core.formats import load_path
from trnscope.core.formats.options import NO_CACHE


@requires_corpus
@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: p.name)
def test_findings_agree_with_the_steps(path) -> None:  # type: ignore[no-untyped-def]
    analysis = Analysis(load_path(path, NO_CACHE))
    doc = diagnose(analysis)
    total = sum(s.wall_us for s in doc.steps)
    device_bound = total > 0 and 2 * sum(s.wall_us for s in doc.steps if s.bound == "device") >= total
    wall = analysis.wall_ns
    for f in doc.findings:
        if device_bound:
            assert "launch-bound" not in f.message, f.message
        else:
            assert "the steps are device-bound" not in f.message, f.message
        if f.severity != "info":
            assert f.evidence_us * 1000 >= noise_floor_ns(wall), f
    if doc.devices and all(d.idle_pct < 1.0 for d in doc.devices):
        assert not any(f.kind == "synchronization" and f.severity == "high" for f in doc.findings)


@requires_corpus
@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: p.name)
def test_before_the_window_means_before_the_first_op(path) -> None:  # type: ignore[no-untyped-def]
    analysis = Analysis(load_path(path, NO_CACHE))
    report = analysis.link_report
    assert 0 <= report.before_window <= report.unlinkable
    with gzip.open(path, "rb") as handle:
        events = json.load(handle)
    events = events["traceEvents"] if isinstance(events, dict) else events
    first_op = min((e["ts"] for e in events if e.get("cat") in ("cpu_op", "Operator") and "ts" in e), default=None)
    if first_op is None:
        return
    device = [
        e for e in events if e.get("ph") == "X" and str(e.get("cat", "")).lower() in
        ("kernel", "gpu_memcpy", "gpu_memset", "mtia_ccp_events", "memcpy", "memset")
    ]  # fmt: skip
    early = sum(1 for e in device if float(e["ts"]) < float(first_op))
    assert report.before_window <= early


@requires_corpus
@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: p.name)
def test_the_whole_trace_step_is_the_summary_wall_time(path) -> None:  # type: ignore[no-untyped-def]
    """Where a trace has no ProfilerStep, its one step is the whole trace: the wall time
    summary reports (the profiler's own window left out), not a span of its own."""
    from trnscope.core.analysis.summary import summary_document, summary_figures

    analysis = Analysis(load_path(path, NO_CACHE))
    doc = diagnose(analysis)
    if [s.step for s in doc.steps] != ["whole trace"]:
        return
    wall_us = summary_document(summary_figures(analysis)).totals.wall_us
    assert doc.steps[0].wall_us == wall_us
