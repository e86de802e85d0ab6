"""The benchmarks the README's performance tables come from still run: each on one
small trace, one round, its results written to a temporary folder (``bench/out`` keeps
what real runs left there).  ``bench/first_screen.py`` once broke silently when the
parser it imported moved."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, SAMPLES

TRACE = SAMPLES / "cpu_train_tiny_session" / "train_tiny.pt.trace.json.gz"


def _bench(script: str, tmp_path: Path, *args: str) -> str:
    env = {**os.environ, "TRNSCOPE_BENCH_OUT": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / script), str(TRACE), "--no-corpus", "--rounds", "1", *args],
        cwd=str(REPO),
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.skipif(sys.platform != "linux", reason="peak RSS is read from /proc")
def test_real_traces_measures_a_trace_against_json_load(tmp_path: Path) -> None:
    table = _bench("real_traces.py", tmp_path)
    assert TRACE.name in table and "× json.load" in table
    (row,) = json.loads((tmp_path / "real_traces.json").read_text())["traces"]
    assert row["events"] > 0


@pytest.mark.skipif(sys.platform != "linux", reason="the first screen is timed from /proc")
def test_first_screen_times_the_explorer_against_summary(tmp_path: Path) -> None:
    table = _bench("first_screen.py", tmp_path)
    assert TRACE.name in table
    (row,) = json.loads((tmp_path / "first_screen.json").read_text())
    assert row["first_screen_s"] > 0 and row["summary_s"] > 0


@pytest.mark.skipif(sys.platform != "linux", reason="the decode workers and the gzip read-ahead fork")
def test_phases_splits_a_first_open_into_its_steps(tmp_path: Path) -> None:
    table = _bench("phases.py", tmp_path)
    assert TRACE.name in table and "3× budget" in table
    (row,) = json.loads((tmp_path / "phases.json").read_text())["traces"]
    steps = row["steps_s"]
    # every step the hook times was seen: the load began after the start-up, decoded
    # and linked something, and the steps account for the whole run (medians of one
    # round: they add up exactly)
    assert steps["start-up"] > 0 and steps["decode"] > 0 and steps["link"] > 0 and steps["tables"] > 0
    assert abs(sum(steps.values()) - row["first_open_s"]) < 1e-3
