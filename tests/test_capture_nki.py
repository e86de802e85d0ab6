"""``trnscope capture nki``: against the NKI stand-in (tests/standins/nki), which checks
the calls we make (``nki.jit`` kernels' ``benchmark(warmup=, iterations=)`` inside a
``nki.runtime.SystemTraceSession``, ``fetch_events_json()``) and returns SYNTHETIC
runtime events; the files it saves are what ``trnscope compare`` reads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

STANDINS = Path(__file__).parent / "standins"

KERNELS = """
import numpy as np
import nki

def rmsnorm_baseline(x):
    return x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-6)

def rmsnorm_fused(x):
    return x * (1.0 / np.sqrt((x ** 2).mean(axis=1, keepdims=True) + 1e-6))

def variants():
    x = np.arange(12.0).reshape(3, 4)
    return [("rmsnorm_baseline", nki.jit(rmsnorm_baseline), (x,)), ("rmsnorm_fused", nki.jit(rmsnorm_fused), (x,))]
"""


def _run(*args: str, log: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(STANDINS), str(Path.cwd())]),
        "STANDIN_NEURON_LOG": str(log),
    }
    return subprocess.run(
        [sys.executable, "-m", "trnscope", *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_capture_nki_benchmarks_each_variant_in_a_trace_session(tmp_path: Path) -> None:
    kernels = tmp_path / "kernels.py"
    kernels.write_text(KERNELS)
    out, log = tmp_path / "bench", tmp_path / "calls.jsonl"
    run = _run("capture", "nki", str(kernels), "--out", str(out), "--warmup", "2", "--iterations", "25", log=log)
    assert run.returncode == 0, run.stderr
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    benchmarks = [c for c in calls if c["call"] == "benchmark"]
    assert [(c["kernel"], c["warmup"], c["iterations"]) for c in benchmarks] == [
        ("rmsnorm_baseline", 2, 25),
        ("rmsnorm_fused", 2, 25),
    ]
    order = [
        c["call"] for c in calls if c["call"] in ("session_enter", "benchmark", "fetch_events_json", "session_exit")
    ]
    assert order == ["session_enter", "benchmark", "fetch_events_json", "session_exit"] * 2
    assert sorted(p.name for p in out.glob("*.benchmark_events.json")) == [
        "rmsnorm_baseline.benchmark_events.json",
        "rmsnorm_fused.benchmark_events.json",
    ]
    checks = json.loads((out / "result_checks.json").read_text())
    assert checks["rmsnorm_baseline"]["shape"] == "(3, 4)"
    compared = _run("compare", str(out), "--format", "json", "--no-cache", log=log)
    assert compared.returncode == 0, compared.stderr
    row = json.loads(compared.stdout)["kernel_runs"][0]
    assert [r["calls"] for r in row["runs"]] == [25, 25]
    assert row["against_baseline"][0]["verdict"] == "faster"


def test_capture_nki_without_nki_is_one_line(tmp_path: Path) -> None:
    kernels = tmp_path / "kernels.py"
    kernels.write_text("def variants():\n    return [('k', object(), ())]\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run(
        [sys.executable, "-m", "trnscope", "capture", "nki", str(kernels), "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert run.returncode == 2
    assert "nki.runtime or nrtpy" in run.stderr and len(run.stderr.strip().splitlines()) == 1
