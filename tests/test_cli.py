"""The ``trnscope`` command: output formats, the JSON contract, and clean errors."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import CORPUS, REPO, SAMPLES, requires_corpus
from trnscope.cli.main import main
from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.distribution import bootstrap_ratio
from trnscope.core.formats.options import LoadOptions

JSON_KEYS = {"source", "device_kind", "totals", "ops", "kernels", "link_coverage", "warnings"}
OP_KEYS = {"name", "input_shapes", "stack", "calls", "self_cpu_us", "cpu_total_us", "self_device_us", "device_total_us"}
KERNEL_KEYS = {"name", "calls", "total_us", "min_us", "max_us", "op"}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_summary_json_contract(capsys, small_synthetic) -> None:
    path, truth = small_synthetic
    code, out, _ = run(capsys, "summary", str(path), "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc.keys() >= JSON_KEYS
    assert set(doc["totals"]) == {"self_cpu_us", "self_device_us", "wall_us", "device_share_base_us"}
    assert all(op.keys() >= OP_KEYS for op in doc["ops"])
    assert all(k.keys() >= KERNEL_KEYS for k in doc["kernels"])
    ops = {op["name"]: op for op in doc["ops"]}
    assert ops["aten::linear"]["calls"] == truth.ops["aten::linear"].calls
    assert ops["aten::linear"]["self_cpu_us"] == pytest.approx(truth.ops["aten::linear"].self_cpu_ns / 1000, abs=1e-3)
    assert doc["link_coverage"] == 1.0
    kernel = next(k for k in doc["kernels"] if k["name"] == "ampere_sgemm_128x64_tn")
    assert kernel["op"] == "aten::addmm"


def test_summary_group_by_shape_json_lists(capsys, small_synthetic) -> None:
    path, _ = small_synthetic
    code, out, _ = run(capsys, "summary", str(path), "--format", "json", "--group-by", "shape")
    assert code == 0
    ops = json.loads(out)["ops"]
    mm = [op for op in ops if op["name"] == "aten::mm"]
    assert mm and mm[0]["input_shapes"] == [[64, 1024], [1024, 1024]]


def test_summary_sort_limit_csv(capsys, small_synthetic) -> None:
    path, _ = small_synthetic
    code, out, _ = run(capsys, "summary", str(path), "--format", "csv", "--sort", "calls", "--limit", "3")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 3
    calls = [int(r["calls"]) for r in rows]
    assert calls == sorted(calls, reverse=True)
    code, out, _ = run(capsys, "summary", str(path), "--format", "csv", "--table", "kernels")
    assert "ampere_sgemm_128x64_tn" in out


def test_summary_table_and_hide(capsys, small_synthetic) -> None:
    path, _ = small_synthetic
    code, out, _ = run(capsys, "summary", str(path), "--hide", "python", "--limit", "50")
    assert code == 0
    assert "Self CPU time total" in out and "Self CUDA time total" in out
    assert "nn.Module" not in out
    assert "aten::addmm" in out


def test_summary_says_what_its_limit_left_out_and_filters_names(capsys, small_synthetic) -> None:
    """The table printed 30 rows of 115 and said nothing of the other 85; ``--match``
    keeps the rows whose name matches, as ``/`` does in the explorer, ops and kernels
    (a kernel by its launching op too), and the JSON says how many rows there were."""
    path, _ = small_synthetic
    code, out, _ = run(capsys, "summary", str(path), "--format", "json")
    every = json.loads(out)
    assert every["op_rows"] == len(every["ops"]) and every["kernel_rows"] == len(every["kernels"])
    code, out, _ = run(capsys, "summary", str(path), "--limit", "3")
    assert code == 0 and f"3 of {len(every['ops']):,} ops (--limit 0 prints all)" in out
    code, out, _ = run(capsys, "summary", str(path), "--limit", "0")
    assert " ops (--limit" not in out and " of " not in out.split("Wall time")[1].split("\n")[1]

    code, out, _ = run(capsys, "summary", str(path), "--match", "ADDMM", "--format", "json")
    doc = json.loads(out)
    assert doc["match"] == "ADDMM" and doc["op_rows"] == len(doc["ops"]) >= 1
    assert all("addmm" in op["name"].lower() for op in doc["ops"])
    assert doc["kernels"] and all("addmm" in (k["name"] + k["op"]).lower() for k in doc["kernels"])
    assert len(doc["kernels"]) < len(every["kernels"])
    code, out, _ = run(capsys, "summary", str(path), "--match", "addmm")
    assert f"{len(doc['ops'])} of {len(doc['ops'])} ops matching 'addmm'" in out
    code, out, _ = run(capsys, "summary", str(path), "--match", "aten::add(")  # not a regex: the text itself
    assert code == 0 and "no op matches 'aten::add('" in out and "no device event matches" in out
    cpu = SAMPLES / "cpu_train_tiny_session"  # no device table to speak of
    code, out, _ = run(capsys, "summary", str(cpu), "--match", "zzz")
    assert "no op matches 'zzz'" in out and "device event" not in out


def test_summary_step_selects_one_profiler_step(capsys, small_synthetic) -> None:
    path, truth = small_synthetic
    code, out, _ = run(capsys, "summary", str(path), "--format", "json", "--step", "1")
    assert code == 0
    doc = json.loads(out)
    ops = {op["name"]: op for op in doc["ops"]}
    assert ops["ProfilerStep*"]["calls"] == 1 and doc["step"] == "ProfilerStep#1"  # by its number, named
    steps = truth.ops["ProfilerStep*"].calls
    assert ops["aten::linear"]["calls"] == truth.ops["aten::linear"].calls // steps
    code, out, _ = run(capsys, "summary", str(path), "--step", "1")
    assert "ProfilerStep#1 only" in out
    code, _, err = run(capsys, "summary", str(path), "--step", "999")
    assert code == 2 and "no ProfilerStep#999 in this trace (it has ProfilerStep#" in err


def test_step_numbers_are_the_names_the_tui_shows(capsys) -> None:
    """The CPU sample's steps are numbered from after warm-up; --step N is ProfilerStep#N."""
    from conftest import SAMPLES
    from trnscope.core.formats import load_path

    session = SAMPLES / "cpu_rmsnorm_session"
    analysis = Analysis(load_path(session))
    first = analysis.steps()[0].name
    number = first.removeprefix("ProfilerStep#")
    code, out, _ = run(capsys, "summary", str(session), "--format", "json", "--step", number)
    assert code == 0 and json.loads(out)["step"] == first


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "empty file"),
        (b"hello world", "not JSON"),
        (b'{"foo": 1}', "without a traceEvents array"),
        (  # what rocprofv3 --output-format json writes (TraceLens's tests/rocprof data)
            b'{"rocprofiler-sdk-tool": [{"metadata": {"pid": 908}}]}',
            "without a traceEvents array (a rocprofv3 results file: ROCm's own profiler, not torch.profiler)",
        ),
        (b'{"traceEvents": []}', "holds no events"),
        (
            b'{"traceEvents": [{"ph": "X", "name": "a", "ts": "NaN", "dur": 1}, {"ph": "X", "name": "b", "ts": 1, "dur": -5}]}',
            "no usable event (2 without a usable ts/dur)",
        ),
        (b'{"traceEvents": [1, 2]}', "not a list of event objects"),
        (b"[1, 2]", "a JSON array of numbers, not of trace events; not a PyTorch profiler trace"),
        (b'["a", "b"]', "a JSON array of strings, not of trace events"),
        (b"[true]", "a JSON array of values, not of trace events"),
        # what export_memory_timeline writes to a .raw.gz (HTA's memory_analysis test data)
        (b"[[-1, 1, 37888, 7], [-1, 1, 512, 7]]", "a memory timeline (export_memory_timeline's .raw.gz?)"),
        (b"\x1f\x8b\x08\x00garbage", "gzip"),
    ],
)
def test_bad_input_is_one_line_exit_2(capsys, tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    code, out, err = run(capsys, "summary", str(path))
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("trnscope: error:")
    assert message in err
    assert "Traceback" not in err + out


def test_missing_path_and_empty_folder(capsys, tmp_path: Path) -> None:
    code, _, err = run(capsys, "summary", str(tmp_path / "nope.json"))
    assert code == 2 and "no such file" in err
    code, _, err = run(capsys, "summary", str(tmp_path))
    assert code == 2 and "no PyTorch profiler trace" in err


def test_permission_denied(capsys, tmp_path: Path, small_synthetic, monkeypatch) -> None:
    path = tmp_path / "locked.json"
    path.write_bytes(small_synthetic[0].read_bytes())
    path.chmod(0)
    if os.geteuid() == 0:  # root reads anything: make the check see what a user would
        import trnscope.core.formats.source as source

        monkeypatch.setattr(source.os, "access", lambda *_: False)
    code, _, err = run(capsys, "summary", str(path), "--no-cache")
    assert code == 2 and "permission denied" in err


def test_fifo_is_refused(capsys, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    code, _, err = run(capsys, "summary", str(fifo))
    assert code == 2 and "FIFO" in err


def test_device_file_is_refused(capsys) -> None:
    code, _, err = run(capsys, "summary", "/dev/null")
    assert code == 2 and "device" in err


def test_bad_sort_column_is_a_clean_error(capsys, small_synthetic) -> None:
    code, _, err = run(capsys, "summary", str(small_synthetic[0]), "--sort", "bogus")
    assert code == 2 and "unknown sort column" in err


def test_folder_with_several_traces_says_which(capsys, tmp_path: Path, small_synthetic) -> None:
    for name in ("rank0.pt.trace.json", "rank1.pt.trace.json"):
        (tmp_path / name).write_bytes(small_synthetic[0].read_bytes())
    code, out, _ = run(capsys, "summary", str(tmp_path), "--format", "json", "--select", "rank1")
    assert code == 0 and json.loads(out)["label"] == "rank1"
    code, out, _ = run(capsys, "summary", str(tmp_path), "--format", "json")
    (said,) = [w for w in json.loads(out)["warnings"] if "holds 2 traces" in w]
    # not one job's ranks (no distributedInfo): picked or compared, not summed as ranks
    assert said.endswith("pick with --select, or compare two or three: trnscope compare A B)")


def test_a_folder_says_what_its_traces_are_for(capsys, tmp_path: Path) -> None:
    from trnscope.testing.synth_ranks import RankPlan, write_ranks

    write_ranks(tmp_path / "job", RankPlan(world=2))
    code, out, _ = run(capsys, "summary", str(tmp_path / "job"), "--format", "json")
    assert code == 0
    assert any(w.endswith("or see them as ranks: trnscope ranks, or R)") for w in json.loads(out)["warnings"])
    bench = Path(__file__).parent.parent / "sample_traces" / "nki_synthetic_rmsnorm_benchmarks"
    code, out, _ = run(capsys, "summary", str(bench), "--format", "json", "--no-cache")
    assert code == 0
    assert any(w.endswith(f"or compare them: trnscope compare {bench})") for w in json.loads(out)["warnings"])


def test_cache_info_and_clear(capsys, small_synthetic, isolated_cache: Path) -> None:
    run(capsys, "summary", str(small_synthetic[0]), "--format", "json")
    code, out, _ = run(capsys, "cache", "info")
    assert code == 0 and str(isolated_cache) in out and " 0 files" not in out
    assert run(capsys, "cache")[:2] == (0, out)  # info, unasked (it stopped at "arguments are required")
    code, out, _ = run(capsys, "cache", "clear")
    assert code == 0 and "cleared" in out
    assert not any(isolated_cache.rglob("*.idx"))


def test_entry_point_runs_without_textual_import(small_synthetic, tmp_path: Path) -> None:
    """summary must stay fast: it never imports Textual (nor torch), nor for a Kineto
    trace the Neuron backend's data and links (~4.5 ms), nor for a trace too small to
    decode in parallel or to link in two threads the process and thread pools (~8 ms of
    multiprocessing and concurrent.futures: a 1 MB trace's summary is mostly start-up),
    nor the export of raw Neuron captures (~9 ms: subprocess, OpenSSL's hashes)."""
    code = (
        "import sys; from trnscope.cli.main import main; rc = main(['summary', sys.argv[1], '--format', 'json']);"
        "assert 'textual' not in sys.modules and 'torch' not in sys.modules, sorted(m for m in sys.modules if m.startswith(('textual','torch')))[:5];"
        "neuron = ('trnscope.core.formats.neuron.data', 'trnscope.core.link.neuron');"
        "assert not any(m in sys.modules for m in neuron), [m for m in neuron if m in sys.modules];"
        "pools = ('multiprocessing', 'concurrent.futures', 'trnscope.core.formats.kineto.parallel', 'trnscope.core.formats.neuron.export');"
        "assert not any(m in sys.modules for m in pools), [m for m in pools if m in sys.modules];"
        "sys.exit(rc)"
    )
    env = {**os.environ, "TRNSCOPE_CACHE_DIR": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-c", code, str(small_synthetic[0])], capture_output=True, text=True, env=env
    )
    assert result.returncode == 0, result.stderr


def test_a_small_json_summary_without_cache_loads_no_file_utilities(small_synthetic) -> None:
    """``summary --format json --no-cache`` of a trace too small to decode in parallel
    imports none of what it does not use: ``shutil`` (argparse's help formatter looks
    up the terminal width with it, 2.3 ms with ``bz2`` and ``lzma``), ``tempfile``
    (only a load that writes its index needs it, ~2.8 ms) or ``csv``."""
    code = (
        "import sys; from trnscope.cli.main import main;"
        "rc = main(['summary', sys.argv[1], '--format', 'json', '--no-cache']);"
        "print(sorted(m for m in ('shutil', 'tempfile', 'csv') if m in sys.modules), file=sys.stderr);"
        "sys.exit(rc)"
    )
    result = subprocess.run([sys.executable, "-c", code, str(small_synthetic[0])], capture_output=True, text=True)
    assert result.returncode == 0 and result.stderr.strip() == "[]", result.stderr[-2000:]


def test_help_is_laid_out_for_the_terminal_width(monkeypatch) -> None:
    """The help formatter finds the width as ``shutil.get_terminal_size`` would
    (``COLUMNS`` first, 80 when nothing says): the help reads exactly as argparse's
    own formatter lays it out."""
    import argparse

    from trnscope.cli.arguments import _terminal_columns, build_parser

    for columns in ("52", "97"):
        monkeypatch.setenv("COLUMNS", columns)
        assert _terminal_columns() == int(columns)
        parser = build_parser()
        ours = parser.format_help()
        parser.formatter_class = argparse.RawDescriptionHelpFormatter  # (the epilog's lines are kept)
        assert ours == parser.format_help() and len(ours.splitlines()) > 10
    monkeypatch.setenv("COLUMNS", "0")
    monkeypatch.setattr(sys, "__stdout__", None)  # no terminal to ask
    assert _terminal_columns() == 80


@pytest.mark.parametrize("form", [["capture", "--help"], ["capture", "run", "--help"]])
def test_capture_help_says_its_three_forms_within_80_columns(capsys, monkeypatch, form: list[str]) -> None:
    # argparse's help listed --steps and --warmup with no word and never said what
    # 'run' and 'nki' do; that was only in 'capture run --help'
    monkeypatch.setenv("COLUMNS", "80")
    with pytest.raises(SystemExit) if form[1] == "--help" else contextlib.nullcontext():
        assert main(form) == 0
    out = capsys.readouterr().out
    for usage in ("capture --demo NAME --out DIR", "capture run SCRIPT.py [ARGS...]", "capture nki KERNELS.py"):
        assert usage in out
    assert "run: profiles your unmodified training script" in out and "nki: benchmarks each" in out
    assert all(len(line) <= 80 for line in out.splitlines()), max(out.splitlines(), key=len)
    if form[1] == "--help":
        assert "--steps N       steps profiled (default 5)" in out


def test_the_parallel_decode_loads_no_openssl() -> None:
    """A big trace's load imports the parallel decode; its load token comes from
    ``os.urandom``, not ``secrets``, whose ``hmac`` loads OpenSSL's bindings (~3 ms)."""
    code = (
        "import sys; import trnscope.core.formats.kineto.parallel;"
        "print(sorted(m for m in ('secrets', 'hmac', '_hashlib') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.strip() == "[]", result.stdout + result.stderr


def test_the_explorer_loads_neither_ranks_nor_neuron_chains_to_start() -> None:
    """The explorer imports its UI beside the early load: the per-rank map-reduce with
    its executors (~13 ms) comes when a ranks view is made, the Neuron chain and readers
    (~10 ms) when a Neuron trace's chain is, not before the first screen."""
    code = (
        "import sys; import trnscope.tui.app;"
        "late = ('trnscope.core.opening.ranks', 'trnscope.core.opening.executors',"
        " 'trnscope.core.analysis.neuron_chain', 'trnscope.core.formats.neuron.data');"
        "print([m for m in late if m in sys.modules])"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.strip() == "[]", result.stdout + result.stderr


@requires_corpus
def test_summary_on_every_corpus_file(capsys) -> None:
    for path in sorted(CORPUS.glob("*.json.gz")):
        code, out, err = run(capsys, "summary", str(path), "--format", "json", "--limit", "5")
        assert code == 0, err
        doc = json.loads(out)
        assert doc["ops"], path


def test_merge_sums_every_trace_of_a_folder(capsys, tmp_path: Path, small_synthetic) -> None:
    path, truth = small_synthetic
    for name in ("rank0.pt.trace.json", "rank1.pt.trace.json"):
        (tmp_path / name).write_bytes(path.read_bytes())
    code, out, _ = run(capsys, "summary", str(tmp_path), "--merge", "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["merged"] == ["rank0", "rank1"]
    ops = {op["name"]: op for op in doc["ops"] if op["kind"] == "op"}
    assert ops["aten::linear"]["calls"] == 2 * truth.ops["aten::linear"].calls
    kernel = next(k for k in doc["kernels"] if k["name"] == "ampere_sgemm_128x64_tn")
    assert kernel["calls"] == 2 * truth.kernels["ampere_sgemm_128x64_tn"].calls
    code, out, _ = run(capsys, "summary", str(tmp_path), "--merge", "--limit", "5")
    assert code == 0 and "2 traces merged" in out


def test_serve_builds_the_command_and_checks_its_inputs(monkeypatch, capsys, small_synthetic) -> None:
    pytest.importorskip("textual_serve")
    import trnscope.tui.serve as serve_module

    seen = {}

    def fake_serve(command: str, host: str, port: int) -> None:
        seen.update(command=command, host=host, port=port)

    monkeypatch.setattr(serve_module, "serve", fake_serve)
    assert main(["serve", str(small_synthetic[0]), "--port", "8123"]) == 0
    assert seen["host"] == "localhost" and seen["port"] == 8123
    assert "-m trnscope open" in seen["command"] and str(small_synthetic[0]) in seen["command"]
    seen.clear()
    code, _, err = run(capsys, "serve", "/no/such/trace.json")
    assert code == 2 and "no such file" in err and not seen  # checked before serving


def test_progress_reports_bytes_and_events(tmp_path: Path, small_synthetic) -> None:
    from trnscope.core.formats.kineto.loader import load_kineto

    seen: list[tuple] = []
    load_kineto(small_synthetic[0], LoadOptions(workers=1), progress=lambda *a: seen.append(a), chunk_bytes=64 << 10)
    parse = [s for s in seen if s[0] == "parse"]
    assert parse and parse[-1][3] > 0 and parse[-1][1] <= parse[-1][2]


@requires_corpus
def test_chain_picks_the_slowest_median_or_fastest_instance(capsys) -> None:
    import gzip

    path = CORPUS / "tracelens_h100_bert_small.json.gz"
    with gzip.open(path, "rt") as fh:  # the instances' durations, read independently
        durations = [
            e["dur"] for e in json.load(fh)["traceEvents"] if e.get("name") == "aten::addmm" and e.get("ph") == "X"
        ]
    by_duration = sorted(range(len(durations)), key=lambda k: (durations[k], k))
    expected = {
        "slowest": max(range(len(durations)), key=lambda k: (durations[k], -k)),
        "median": by_duration[(len(durations) - 1) // 2],
        "fastest": by_duration[0],
    }
    for pick, k in expected.items():
        code, out, _ = run(capsys, "chain", str(path), "--op", "aten::addmm", "--instance", pick, "--format", "json")
        assert code == 0 and json.loads(out)["instance"] == k, pick
    with pytest.raises(SystemExit) as exited:  # argparse's own refusal, as for any bad value
        main(["chain", str(path), "--op", "aten::addmm", "--instance", "middle"])
    assert exited.value.code == 2
    assert "'middle': give a number, or slowest, median, fastest" in capsys.readouterr().err
    # the core's own check, for callers that do not come through argparse, and its one list
    from trnscope.cli.arguments import _instance_choice
    from trnscope.core.analysis.chain import INSTANCE_PICKS, chain_for
    from trnscope.core.base.errors import TrnscopeError
    from trnscope.core.formats import load_path

    assert all(_instance_choice(pick) == pick for pick in INSTANCE_PICKS)
    with pytest.raises(TrnscopeError, match="instance 'middle': give a number or one of slowest, median, fastest"):
        chain_for(Analysis(load_path(path)), "aten::addmm", "middle")


def test_chain_text_json_and_errors(capsys, small_synthetic, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "160")  # laid out for the width: names give way on a narrow one
    path, _ = small_synthetic
    code, out, _ = run(capsys, "chain", str(path), "--op", "aten::addmm", "--instance", "0")
    assert code == 0 and "cudaLaunchKernel" in out and "ampere_sgemm_128x64_tn" in out and "dispatch" in out
    # numbered as --instance takes it and as the drill-down's title and # column show it
    # ("instance 0 of 3" read as a count from 1)
    assert out.splitlines()[0].startswith("aten::addmm  (instance #0 · ") and out.splitlines()[0].endswith(" in all)")
    code, out, _ = run(capsys, "chain", str(path), "--op", "aten::addm", "--format", "json")
    doc = json.loads(out)
    assert doc["op"] == "aten::addmm" and {h["layer"] for h in doc["hops"]} == {"framework", "runtime", "device"}
    assert set(doc["gaps"]) >= {"dispatch_us", "queue_us", "device_us"}
    code, _, err = run(capsys, "chain", str(path), "--op", "aten::addmm", "--instance", "99999")
    assert code == 2 and "out of range" in err
    code, _, err = run(capsys, "chain", str(path), "--op", "aten::")
    assert code == 2 and "matches several ops" in err
    code, _, err = run(capsys, "chain", str(path), "--op", "no-such-op")
    assert code == 2 and "no op named" in err and "`trnscope summary` lists the trace's ops" in err
    # a mistyped name is answered with the names closest to it
    code, _, err = run(capsys, "chain", str(path), "--op", "aten::adddmm")
    assert code == 2 and "no op named 'aten::adddmm'" in err and "close names: aten::addmm" in err
    # without --op: the op at the top of the op table, said (it stopped at "the
    # following arguments are required: --op")
    code, out, err = run(capsys, "chain", str(path))
    table = json.loads(run(capsys, "summary", str(path), "--format", "json", "--hide", "annotation")[1])
    top = max((r for r in table["ops"] if r["kind"] == "op"), key=lambda r: r["self_device_us"])
    assert code == 0 and err.startswith(f"chain of {top['name']}: the op with the most self device time")
    assert out.splitlines()[0].startswith(f"{top['name']}  (instance #")


def test_compare_table_csv_and_limits(capsys, small_synthetic, tmp_path: Path) -> None:
    path, _ = small_synthetic
    code, out, _ = run(capsys, "compare", str(path), str(path), "--limit", "5")
    assert code == 0 and "Ops, by largest change" in out
    # rows cut by the limit are said to be, as a table's left-out columns are
    code, doc, _ = run(capsys, "compare", str(path), str(path), "--format", "json")
    ops = [row for row in json.loads(doc)["ops"] if row["kind"] != "python"]
    assert re.search(rf"\(rows shown: .*ops 5 of {len(ops):,}, the largest changes first; --limit 0 prints all\)", out)
    code, out, _ = run(capsys, "compare", str(path), str(path), "--limit", "0")
    assert "rows shown" not in out
    # --match keeps the rows whose name matches, as / does in the explorer's comparison
    code, doc, _ = run(capsys, "compare", str(path), str(path), "--match", "ADDMM", "--format", "json")
    matched = json.loads(doc)
    assert (
        matched["match"] == "ADDMM"
        and matched["ops"]
        and all("addmm" in row["key"].lower() for row in matched["ops"] + matched["regions"])
    )
    code, out, _ = run(capsys, "compare", str(path), str(path), "--match", "addmm")
    assert code == 0 and "(only rows whose name matches 'addmm': --match)" in out
    code, out, _ = run(capsys, "compare", str(path), str(path), "--format", "csv")
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0][:3] == ["section", "key", "kind"] and len(rows) > 10
    code, _, err = run(capsys, "compare", str(path))
    assert code == 2 and "two or three" in err
    code, _, err = run(capsys, "compare", str(path), str(path), str(path), str(path))
    assert code == 2 and "at most three" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["capture", "--demo", "nope"], "unknown demo 'nope'; choose one of: rmsnorm, attention"),
        (["capture", "--demo", "rmsnorm", "--size", "huge"], "unknown size 'huge'; choose small or large"),
        (["capture", "--demo", "rmsnorm", "--device", "tpu"], "unknown device 'tpu': choose neuron, cuda or cpu"),
        (
            ["capture", "--demo", "rmsnorm", "--device", "cuda"],
            "CUDA capture requested but torch.cuda.is_available() is False on this host",
        ),
        (["capture"], "capture needs --demo NAME, 'run SCRIPT.py' or 'nki KERNELS.py' (capture --help)"),
        (["capture", "--demo", "rmsnorm", "extra"], "unexpected arguments: extra"),
        (["capture", "run"], "usage: trnscope capture run SCRIPT.py [ARGS...] --out DIR"),
        (["capture", "run", "no_such_script.py"], "no such script: no_such_script.py"),
    ],
)
def test_capture_argument_errors(capsys, tmp_path: Path, args: list[str], message: str) -> None:
    out = tmp_path / "session"
    code, _, err = run(capsys, *args, "--out", str(out))
    assert code == 2 and err == f"trnscope: error: {message}\n"
    assert not out.exists() and not list(tmp_path.iterdir())


def test_open_refuses_more_than_three_profiles(capsys, small_synthetic) -> None:
    path = str(small_synthetic[0])
    code, _, err = run(capsys, "open", path, path, path, path)
    assert code == 2 and err == "trnscope: error: open at most three profiles at once (several = compare)\n"


def test_skip_python_flag_and_capture_demo_list(capsys, small_synthetic) -> None:
    code, out, _ = run(capsys, "summary", str(small_synthetic[0]), "--skip", "python", "--format", "json", "--no-cache")
    assert code == 0 and not any(op["kind"] == "python" for op in json.loads(out)["ops"])
    code, out, _ = run(capsys, "capture", "--demo", "list")
    assert code == 0 and out.split() == ["rmsnorm", "attention"]
    code, _, err = run(capsys, "capture", "--demo", "rmsnorm")
    assert code == 2 and "--out" in err


def test_version(capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip().startswith("trnscope ")


def test_summary_stack_depth_limits_the_stack_key(capsys, small_synthetic) -> None:
    path, _ = small_synthetic
    _, out, _ = run(capsys, "summary", str(path), "--format", "json", "--group-by", "stack", "--no-cache")
    deep = json.loads(out)["ops"]
    _, out, _ = run(
        capsys, "summary", str(path), "--format", "json", "--group-by", "stack", "--stack-depth", "1", "--no-cache"
    )
    shallow = json.loads(out)["ops"]
    assert max(len(op["stack"]) for op in deep) == 5
    assert max(len(op["stack"]) for op in shallow) == 1
    assert len(shallow) < len(deep)  # fewer frames, fewer distinct keys
    assert sum(op["calls"] for op in shallow) == sum(op["calls"] for op in deep)


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--stack-depth", "0", "--stack-depth must be 1 or more (it was 0)"),
        ("--stack-depth", "-2", "--stack-depth must be 1 or more (it was -2)"),
        ("--step", "-5", "--step must be a step number, 0 or more (it was -5)"),
    ],
)
def test_summary_rejects_a_meaningless_number(capsys, small_synthetic, option, value, message) -> None:
    """A stack of no frames used to end in "list index out of range", and a negative
    step silently showed the whole trace."""
    path, _ = small_synthetic
    code, out, err = run(capsys, "summary", str(path), "--group-by", "stack", option, value, "--no-cache")
    assert code == 2 and err.strip() == f"trnscope: error: {message}" and not out


def test_summary_workers_reach_the_loader(capsys, small_synthetic, monkeypatch) -> None:
    from trnscope.core.formats.kineto import loader as kineto

    path, _ = small_synthetic
    monkeypatch.setattr(kineto, "PARALLEL_MIN_BYTES", 0)  # the small trace takes the parallel path too
    seen: list[int] = []
    real = kineto.load_kineto

    def recording(*args, **kwargs):  # type: ignore[no-untyped-def]
        trace = real(*args, **kwargs)
        seen.append(trace.stats.workers)
        return trace

    monkeypatch.setattr(kineto, "load_kineto", recording)
    outputs = []
    for workers in ("1", "2"):
        _, out, _ = run(capsys, "summary", str(path), "--format", "json", "--no-cache", "--workers", workers)
        outputs.append(json.loads(out))
    assert seen == [1, 2]
    assert outputs[0]["ops"] == outputs[1]["ops"] and outputs[0]["kernels"] == outputs[1]["kernels"]


def test_open_passes_its_options_to_the_app(monkeypatch, small_synthetic) -> None:
    """`trnscope open` hands --theme, --select, --skip, --no-cache, --workers, --export,
    --warmup and --op-tree to the app (the app's own handling of each is tested in the
    Pilot tests)."""
    import trnscope.tui.app
    import trnscope.tui.launch
    from trnscope.core.formats.kineto import parallel as kineto
    from trnscope.tui.early_load import EarlyLoad

    path, _ = small_synthetic
    made: dict[str, object] = {}
    monkeypatch.setattr(trnscope.tui.launch, "check_terminal", lambda: None)  # (pytest has no terminal)

    class RecordingApp:
        return_code = 0

        def __init__(self, paths, **options) -> None:  # type: ignore[no-untyped-def]
            made.update(options, paths=paths)

        def run(self) -> None:
            made["ran"] = True

        def cancel_load(self) -> None:
            made["load stopped on the way out"] = True

    monkeypatch.setattr(trnscope.tui.app, "TrnscopeApp", RecordingApp)
    monkeypatch.setattr(kineto, "start_worker_server", lambda: None)
    argv = ["open", str(path), "--theme", "ansi", "--select", "0", "--skip", "python", "--no-cache", "--workers", "1"]
    assert main([*argv, "--export", "--warmup", "2", "--op-tree", "python"]) == 0
    early = made.pop("early")  # the trace, already loading with the same options
    assert isinstance(early, EarlyLoad) and early.source.path == str(path)
    loaded = early.result(lambda *update: None)
    assert loaded.trace.stats.skipped_events > 0 and not loaded.trace.stats.from_cache  # --skip python, --no-cache
    assert loaded.trace.op_tree == "python"
    assert made == {
        "paths": [str(path)],
        "select": "0",
        "skip": ("python",),
        "use_cache": False,
        "theme": "ansi",
        "workers": 1,
        "export": True,
        "warmup": 2,
        "op_tree": "python",
        "ran": True,
        "load stopped on the way out": True,
    }


def test_capture_refuses_a_folder_that_is_not_empty(capsys, tmp_path: Path) -> None:
    out = tmp_path / "session"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    code, _, err = run(capsys, "capture", "--demo", "rmsnorm", "--out", str(out))
    assert code == 2 and err == f"trnscope: error: output folder exists and is not empty: {out}\n"
    assert [p.name for p in out.iterdir()] == ["keep.txt"]


def test_more_input_errors_are_one_line(capsys, tmp_path: Path, monkeypatch) -> None:
    import gzip

    empty = tmp_path / "empty.json.gz"
    empty.write_bytes(gzip.compress(b""))
    code, _, err = run(capsys, "summary", str(empty), "--no-cache")
    assert code == 2 and err == f"trnscope: error: gzip file holds no data: {empty}\n"

    not_folder = tmp_path / "raw.ntff"
    not_folder.write_bytes(b"\x00")
    code, _, err = run(capsys, "neuron-export", str(not_folder), "--yes")
    assert code == 2 and err == f"trnscope: error: not a folder: {not_folder}\n"

    monkeypatch.setitem(sys.modules, "textual_serve", None)  # as if not installed
    monkeypatch.setitem(sys.modules, "textual_serve.server", None)
    code, _, err = run(capsys, "serve", str(empty))
    assert code == 2 and err == "trnscope: error: serve needs textual-serve: pip install 'trnscope[serve]'\n"


def test_merge_sums_every_trace_once_and_refuses_select(capsys) -> None:
    from conftest import SAMPLES

    session = SAMPLES / "cpu_rmsnorm_session"
    singles = []
    for label in ("eager", "compiled", "fused"):
        code, out, _ = run(capsys, "summary", str(session), "--select", label, "--format", "json", "--no-cache")
        assert code == 0
        singles.append(json.loads(out))
    code, out, _ = run(capsys, "summary", str(session), "--merge", "--format", "json", "--no-cache")
    merged = json.loads(out)
    assert code == 0 and merged["merged"] == ["eager", "compiled", "fused"]
    assert merged["events"] == sum(s["events"] for s in singles)
    for total in ("self_cpu_us", "self_device_us", "wall_us"):  # every merged total is a sum
        assert merged["totals"][total] == pytest.approx(sum(s["totals"][total] for s in singles), abs=0.01)
    code, _, err = run(capsys, "summary", str(session), "--merge", "--select", "eager")
    assert code == 2 and "--merge" in err and "--select" in err


class _Stream:
    def __init__(self, terminal: bool) -> None:
        self.terminal = terminal

    def isatty(self) -> bool:
        return self.terminal


@pytest.mark.parametrize(
    ("stdin", "stderr", "driver", "refused"),
    [
        (True, True, None, None),
        (False, True, None, "stdin is not one (over ssh: ssh -t)"),
        (True, False, None, "open draws on stderr, which is not a terminal"),
        (False, False, "textual.drivers.web_driver:WebDriver", None),  # serve's driver brings its own
    ],
    ids=["terminal", "no-keys", "stderr-redirected", "web-driver"],
)
def test_open_refuses_to_start_without_a_terminal(monkeypatch, stdin, stderr, driver, refused) -> None:
    from trnscope.core.base.errors import TrnscopeError
    from trnscope.tui.launch import check_terminal

    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(sys, "__stdin__", _Stream(stdin))
    monkeypatch.setattr(sys, "__stderr__", _Stream(stderr))
    if driver is None:
        monkeypatch.delenv("TEXTUAL_DRIVER", raising=False)
    else:
        monkeypatch.setenv("TEXTUAL_DRIVER", driver)
    if refused is None:
        check_terminal()
    else:
        with pytest.raises(TrnscopeError, match=re.escape(refused)):
            check_terminal()


def test_open_without_a_terminal_says_so_instead_of_waiting_for_keys(tmp_path: Path) -> None:
    # ``ssh host trnscope open …`` without -t: Textual waited for keys forever
    env = {**os.environ, "TRNSCOPE_CACHE_DIR": str(tmp_path)}
    env.pop("TEXTUAL_DRIVER", None)

    def open_without_a_terminal(path: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "trnscope", "open", str(path)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            cwd=str(REPO),
            env=env,
            timeout=60,
        )

    done = open_without_a_terminal(REPO / "sample_traces" / "cpu_train_tiny_session")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("trnscope: error: open needs a terminal") and done.stderr.count("\n") == 1
    # a bad path is still the reason given first
    done = open_without_a_terminal(tmp_path / "nope")
    assert done.returncode == 2 and "no such file" in done.stderr


def test_open_checks_its_inputs_before_the_ui(capsys, small_synthetic) -> None:
    code, _, err = run(capsys, "open", str(REPO / "tests" / "data" / "not_a_trace.json"))
    assert code == 2 and err.startswith("trnscope: error: ") and "not a PyTorch profiler trace" in err
    code, _, err = run(capsys, "open", str(small_synthetic[0]), "--select", "nope")
    assert code == 2 and "no trace labelled 'nope'" in err
    code, _, err = run(capsys, "open", "/no/such/file.json")
    assert code == 2 and "no such file" in err


@requires_corpus
@pytest.mark.parametrize("width", [60, 80, 100, 140])
def test_compare_device_work_per_region_never_cuts_a_time(width: int, monkeypatch, capsys) -> None:
    """Each variant's device time per region is whole at every width (the kernels' text
    after it loses its middle instead; at 100 columns B's "376.149ms" was "376.149m…"),
    and the variants share the room: B's kernels are not left out to give A's all of it."""
    from trnscope.core.analysis.compare import compare
    from trnscope.core.base.units import fmt_time_ns
    from trnscope.core.formats import load_path

    paths = [CORPUS / "hta_diff_control_a100.json.gz", CORPUS / "hta_diff_test_v100.json.gz"]
    monkeypatch.setenv("COLUMNS", str(width))
    assert main(["compare", *map(str, paths), "--no-cache"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert all(len(line) <= width for line in lines)
    first = next(i for i, line in enumerate(lines) if line.startswith("Device work per region"))
    header = lines[first + 1]
    a_at, b_at = header.index(" A ") + 1, header.index(" B ") + 1
    comparison = compare([Analysis(load_path(p)) for p in paths], ["a", "b"], [])
    expected = {
        (row.key, k): fmt_time_ns(row.values[k].device_total_ns)
        for row in comparison.kernels
        for k in (0, 1)
        if row.values[k]
    }
    rows = lines[first + 2 : first + 2 + min(25, len(comparison.kernels))]
    for row, line in zip(comparison.kernels, rows):
        for k, at in ((0, a_at), (1, b_at)):
            if (row.key, k) in expected:
                cell = line[at:].split()[0]
                assert cell == expected[(row.key, k)], (line, cell)
    if width >= 100:  # room for both variants' kernels
        assert all("kernel" in line[a_at:b_at] and "kernel" in line[b_at:] for line in rows[:3]), rows[:3]
    if width >= 140:  # a long region name gives up cells to the kernels behind it (NAME_COMFORT)
        assert a_at == 34 and any("1 kernel: ncclKernel_AllRedu" in row for row in rows[:5]), rows[:5]


@requires_corpus
@pytest.mark.parametrize("width", [80, 100, 250])
def test_summary_text_never_cuts_a_number(width: int, monkeypatch, capsys) -> None:
    """At any width every line fits and every time keeps its unit: columns that do not
    fit are left out (and named), names lose their middle."""
    import re

    monkeypatch.setenv("COLUMNS", str(width))
    assert main(["summary", str(CORPUS / "tracelens_h100_bert_small.json.gz"), "--limit", "15"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert all(len(line) <= width for line in lines)
    table = lines[1 : lines.index(next(line for line in lines if line.startswith("Self CPU time total")))]
    for line in table[1:]:
        memory = re.findall(r"-?\d+(?:\.\d\d)? (?:B|KB|MB|GB)\b", line)  # PyTorch's memory format
        assert all(re.fullmatch(r"-?\d+(\.\d\d)? (B|KB|MB|GB)", m) for m in memory)
        cells = re.sub(r"-?\d+(?:\.\d\d)? (?:B|KB|MB|GB)\b", "", line).split()
        numbers = [c for c in cells if re.match(r"^-?[\d,.]+(us|ms|s|%)?$", c)]
        assert numbers and all(re.match(r"^[\d,]+$|^-?\d+\.\d{2,3}(us|ms|s|%)$", c) for c in numbers), line
        assert not re.search(r"\d…|…\d", line.split("  ")[-1])
    if width == 80:
        assert "(hidden at 80 columns: " in out
    if width == 250:
        assert "hidden at" not in out


def test_compare_metric_flag_orders_and_reports_that_metric(capsys) -> None:
    session = REPO / "sample_traces" / "trn_synthetic_rmsnorm_session"
    assert main(["compare", str(session), "--metric", "dispatch", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["metric"] == "dispatch_us"
    region = next(r for r in doc["regions"] if r["key"] == "rmsnorm")
    eager, compiled = region["values"]["eager"], region["values"]["compiled"]
    assert region["delta_us"]["compiled"] == pytest.approx(compiled["dispatch_us"] - eager["dispatch_us"], abs=1e-3)
    assert set(doc["diagnosis"]) == {"eager", "compiled", "fused"}
    assert doc["diagnosis"]["eager"]["dispatches_per_step"] == 6
    changes = [abs(max(r["delta_us"].values(), key=abs)) for r in doc["ops"]]
    assert changes == sorted(changes, reverse=True)  # largest change of the chosen metric first
    with pytest.raises(SystemExit) as refused:
        main(["compare", str(session), "--metric", "calories"])
    assert refused.value.code == 2


def test_compare_says_each_variants_median_step(capsys, monkeypatch, tmp_path: Path) -> None:
    """Which variant is faster is its median step first (HTA's diff traces: A100 76.8 ms,
    V100 114.7 ms, ×1.49 [1.19–2.17] slower; the diagnosis rows had only idle share,
    bound steps and launches).
    Checked against the steps' spans read from the files themselves; a variant without
    ProfilerStep says it has no steps (JSON: null)."""
    from trnscope.testing.events import annotation, op, write_trace

    walls = {"fast": [100, 300, 200], "slow": [400, 900, 500, 600]}  # µs: medians 200 and 550
    paths = []
    for label, spans in walls.items():
        events, start = [], 0
        for n, span in enumerate(spans):
            events += [annotation(f"ProfilerStep#{n}", start, span), op("aten::add", start + 1, span - 2)]
            start += span + 10
        paths.append(str(write_trace(tmp_path / f"{label}.json", events)))
    bare = str(write_trace(tmp_path / "bare.json", [op("aten::add", 0, 5)]))
    assert main(["compare", *paths, bare, "--format", "json", "--no-cache"]) == 0
    doc = json.loads(capsys.readouterr().out)["diagnosis"]
    assert [doc[label]["median_step_us"] for label in ("fast", "slow", "bare")] == [200.0, 550.0, None]
    # against the baseline: the ratio of medians and the bootstrap interval of the steps
    expected = bootstrap_ratio(np.array(walls["fast"]) * 1000, np.array(walls["slow"]) * 1000, "median")
    ratio = doc["slow"]["median_step_ratio"]
    assert ratio["ratio"] == pytest.approx(550 / 200) and ratio["verdict"] == expected.verdict
    assert (ratio["low"], ratio["high"]) == pytest.approx((expected.low, expected.high))
    assert doc["fast"]["median_step_ratio"] is None and doc["bare"]["median_step_ratio"] is None
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["compare", *paths, bare, "--no-cache"]) == 0
    lines = capsys.readouterr().out.splitlines()
    line = next(line for line in lines if line.startswith("median step "))
    assert line.split()[2:] == ["200.000us", "550.000us", "no", "steps"]
    line = next(line for line in lines if line.startswith("median step ÷ A"))
    assert line.split()[4:] == ["—", "×2.75", f"[{expected.low:.2f}–{expected.high:.2f}]", "—"]
    verdict = next(line for line in lines if line.startswith("step time against A"))
    assert verdict.split()[4:] == ["—", *expected.verdict.split(), "—"]


def test_a_trace_without_device_work_reports_no_device_not_zero(capsys, monkeypatch) -> None:
    """A CPU-only variant has no device idle share: 0% would read as a device kept busy
    (as diagnose itself says, "no device work"); JSON gives null, the texts say so."""
    session = REPO / "sample_traces" / "cpu_attention_session"
    assert main(["compare", str(session), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["diagnosis"] and all(row["device_idle_pct"] is None for row in doc["diagnosis"].values())
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["compare", str(session)]) == 0
    idle = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("device idle"))
    assert idle.split()[2:] == ["no", "device"] * len(doc["diagnosis"]) and "%" not in idle
    assert main(["diagnose", str(session), "--select", "eager"]) == 0
    out = capsys.readouterr().out
    assert "no device work in this trace (CPU only)" in out
    steps = [line for line in out.splitlines() if line.startswith("ProfilerStep#")]
    assert steps and all(line.split()[-2] == "—" for line in steps)  # device busy: none, not 0.000us


@requires_corpus
def test_timeline_nested_lanes_and_colour_on_request(capsys) -> None:
    """--nested: one lane per op depth (aten::linear above aten::addmm above …)."""
    session = CORPUS / "tracelens_h100_bert_small.json.gz"
    assert main(["timeline", str(session), "--nested", "--width", "90", "--lanes", "python3\\) ·"]) == 0
    labels = [line.split("│")[0].strip() for line in capsys.readouterr().out.splitlines()[2:]]
    assert any(label.endswith("·0") for label in labels) and any(label.endswith("·1") for label in labels)
    assert main(["timeline", str(session), "--color", "always", "--width", "90"]) == 0
    assert "\x1b[32m" in capsys.readouterr().out


@requires_corpus
def test_memory_columns_only_where_the_trace_has_memory_records(capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")
    assert main(["summary", str(CORPUS / "hta_cpu_only.json.gz"), "--format", "json", "--limit", "3"]) == 0
    ops = json.loads(capsys.readouterr().out)["ops"]
    assert all(op["cpu_memory_bytes"] is None and op["self_device_memory_bytes"] is None for op in ops)
    assert main(["summary", str(CORPUS / "hta_cpu_only.json.gz")]) == 0
    assert "CPU Mem" not in capsys.readouterr().out
    # the H100 trace was captured with profile_memory: CUDA allocations show as device
    # memory, in JSON when asked for (reading every record is not free)
    h100 = str(CORPUS / "tracelens_h100_bert_small.json.gz")
    assert main(["summary", h100, "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["extras"] == {"memory": "not computed", "flops": "not computed"}
    assert all(op["device_memory_bytes"] is None for op in document["ops"])
    assert main(["summary", h100, "--format", "json", "--with", "memory"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["extras"] == {"memory": "computed", "flops": "not computed"}
    assert any(op["device_memory_bytes"] for op in document["ops"])
    assert main(["summary", str(CORPUS / "tracelens_h100_bert_small.json.gz")]) == 0
    assert "CUDA Mem" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--from", "3ms", "--to", "2ms"], "--to must be after --from"),
        (["--width", "30"], "--width must be between 40 and 4,000"),
        (["--step", "99"], "no ProfilerStep#99"),
        (["--from", "soon"], "not a time: 'soon'"),
    ],
)
def test_timeline_refuses_bad_windows_in_one_line(args: list[str], message: str, capsys) -> None:
    session = REPO / "sample_traces" / "trn_synthetic_rmsnorm_session"
    assert main(["timeline", str(session), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_neuron_export_says_when_there_is_nothing_raw(tmp_path: Path, capsys) -> None:
    from trnscope.testing.synth_neuron import write_process_session

    write_process_session(tmp_path / "p", "eager", exports=("json",))
    for pb in (tmp_path / "p").rglob("*.pb"):
        pb.unlink()
    for ntff in (tmp_path / "p").rglob("*.ntff"):
        ntff.unlink()
    assert main(["neuron-export", str(tmp_path / "p"), "--yes"]) == 0
    assert "no raw .pb/.ntff capture to export" in capsys.readouterr().out


def test_compare_table_hides_python_frames_as_the_explorer_does(capsys) -> None:
    """Ranked by change, the frames that wrap a whole step (the script's, the capture
    harness's) came before every op; the table hides them, as the compare view does,
    says how many, and shows them on --hide none.  JSON keeps every row."""
    session = str(SAMPLES / "cpu_rmsnorm_session")
    code, out, _ = run(capsys, "compare", session, "--limit", "0")
    assert code == 0 and ".py(" not in out
    assert re.search(r"\(\d[\d,]* python rows hidden, as in the explorer: --hide none shows them\)", out)
    code, out, _ = run(capsys, "compare", session, "--limit", "0", "--hide", "none")
    assert code == 0 and ".py(" in out and "rows hidden" not in out
    code, out, _ = run(capsys, "compare", session, "--hide", "annotation", "--format", "json")
    assert any(row["kind"] == "python" for row in json.loads(out)["ops"])


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["summary", "t.json.gz"], [("t.json.gz", True, None)]),
        (["summary", "t.json", "--no-cache", "--workers", "3"], [("t.json", False, 3)]),
        (["diagnose", "t.json.gz"], [("t.json.gz", True, None)]),
        (["summary", "t.json.gz", "--merge"], []),  # read in worker processes
        (["open", "t.json.gz"], []),  # the explorer's early load does its own
        (["compare", "a.json.gz", "b.json.gz"], []),  # one decode ahead is for one trace
    ],
)
def test_the_console_script_starts_a_decode_ahead_for_one_trace_read_whole(
    monkeypatch: pytest.MonkeyPatch, argv: list[str], expected: list[tuple[str, bool, int | None]]
) -> None:
    """``cli.decode_ahead`` asks the loader to start a first open's decode (which itself
    declines a cached reopen or a copy not ready yet) for exactly the commands that read
    one trace file whole, with the command's cache and worker settings."""
    from trnscope.cli import decode_ahead
    from trnscope.cli.arguments import parse_command_line
    from trnscope.core.formats.kineto import loader

    asked: list[tuple[str, bool, int | None]] = []

    def record(path: Path, *, reuse: bool, workers: int | None) -> bool:
        asked.append((str(path), reuse, workers))
        return False

    monkeypatch.setattr(loader, "start_decode_ahead", record)
    decode_ahead(parse_command_line(argv))
    assert asked == expected


def _chain_cases() -> list[tuple[Path, str, str | None]]:
    cases: list[tuple[Path, str, str | None]] = [(SAMPLES / "trn_synthetic_rmsnorm_session", "aten::mul", "eager")]
    if (CORPUS / "tracelens_b200_eager_stack.json.gz").is_file():  # deep Python stacks, long kernel names
        cases.append((CORPUS / "tracelens_b200_eager_stack.json.gz", "aten::mm", None))
    return cases


@pytest.mark.parametrize("width", [40, 60, 80, 120])
def test_chain_text_fits_the_terminal_and_keeps_every_figure_whole(width: int, monkeypatch, capsys) -> None:
    """``trnscope chain`` at any width: every line fits, every hop's start and duration
    lead its line whole and in order, the closing figures are whole, and where a hop ran
    is said where it changes (a Python stack on one thread said it on every line); the
    copy (no width) keeps every line whole, each with its place."""
    from rich.cells import cell_len

    from trnscope.core.analysis.chain import chain_for
    from trnscope.core.analysis.chain_model import CONTEXT_KINDS, context_summary
    from trnscope.core.analysis.chain_text import render_chain_text
    from trnscope.core.base.units import fmt_time_ns
    from trnscope.core.formats import discover, load_source

    monkeypatch.setenv("COLUMNS", str(width))
    for path, op, select in _chain_cases():
        picked = ["--select", select] if select else []
        # by default the op's context is one line, as the explorer shows it first, wrapped whole
        code, out, _ = run(capsys, "chain", str(path), "--op", op, *picked)
        assert code == 0 and all(cell_len(line) <= width for line in out.splitlines())
        folded_text = " ".join(out.split())
        folded = [line for line in out.splitlines()[2:] if re.match(r" *-?[\d.]+(us|ms|s) +[\d.]+(us|ms|s)  ", line)]
        code, out, _ = run(capsys, "chain", str(path), "--op", op, "--context", *picked)
        assert code == 0
        lines = out.splitlines()
        assert all(cell_len(line) <= width for line in lines), [line for line in lines if cell_len(line) > width]
        ref = discover(path)
        chain = chain_for(Analysis(load_source(ref.select(select) if select else ref.sources[0])), op)
        starts = [f"{fmt_time_ns(h.start_us * 1000):>12} {fmt_time_ns(h.dur_us * 1000):>12}  " for h in chain.hops]
        hop_lines = [line for line in lines[2:] if re.match(r" *-?[\d.]+(us|ms|s) +[\d.]+(us|ms|s)  ", line)]
        assert [line[:27] for line in hop_lines] == starts
        g = chain.gaps
        text = "\n".join(lines)
        for figure in (
            f"dispatch {fmt_time_ns(g.dispatch_us * 1000)}",
            f"device {fmt_time_ns(g.device_us * 1000)}",
            f"host self {fmt_time_ns(g.host_us * 1000)}",
        ):
            assert figure in text
        places = [h.thread_or_stream for h in chain.hops]
        changes = sum(1 for i, place in enumerate(places) if i == 0 or place != places[i - 1])
        assert sum(1 for line in hop_lines if line.endswith("]")) == changes < len(places)
        if width >= 80:  # a place that does not fit whole reads as its compact form, whole
            # ("[threa…8)]" for "thread 3126441 (python3.8)")
            told = [line[line.rindex("  [") + 3 : -1] for line in hop_lines if line.endswith("]")]
            assert all("…" not in place for place in told), told
        outside = [h for h in chain.hops if h.kind not in CONTEXT_KINDS]
        assert len(folded) == len(outside) < len(chain.hops)
        assert [line[:27] for line in folded] == [line[:27] for line in hop_lines[-len(outside) :]]
        assert context_summary(chain).split(" ← ")[-1] in folded_text  # "16 Python frames": whole
        copy = render_chain_text(chain).splitlines()
        copied = [line for line in copy[2:] if re.match(r" *-?[\d.]+(us|ms|s) +[\d.]+(us|ms|s)  ", line)]
        assert len(copied) == len(chain.hops)
        assert all(line.endswith(f"  [{h.thread_or_stream}]") for line, h in zip(copied, chain.hops))


def test_launches_per_step_read_whole_in_the_comparison() -> None:
    """The comparison's "device launches per step" (CLI and pane): grouped thousands and
    the two decimals the figure keeps, never an exponent ("1.5e+06") or a digit cut
    ("12345.7" for 12,345.67)."""
    from trnscope.core.analysis.compare_model import per_step_text

    figures = (1575.0, 1663.5, 12345.67, 1.5e6, 0.0, 0.25, 10.0, 100.1)
    assert [per_step_text(x) for x in figures] == [
        "1,575", "1,663.5", "12,345.67", "1,500,000", "0", "0.25", "10", "100.1",
    ]  # fmt: skip
    assert all(float(per_step_text(x).replace(",", "")) == x for x in figures)


def test_a_large_drop_in_the_comparison_never_reads_as_zero() -> None:
    """``fmt_ratio`` (the compare tables' ×B, CLI and pane): two decimals, and below 0.1
    two significant digits, so a 2,000-fold drop reads 0.00050x, not 0.00x."""
    from trnscope.core.base.units import fmt_ratio

    assert fmt_ratio(1.76, 1.0) == "1.76x" and fmt_ratio(0.5, 1_000.0) == "0.00050x"
    assert fmt_ratio(12.0, 1_000.0) == "0.012x" and fmt_ratio(3.0, 0.0) == "new" and fmt_ratio(0.0, 3.0) == "gone"
    for k in range(1, 12):
        shown = fmt_ratio(1.0, 10.0**k)
        assert float(shown.rstrip("x")) == pytest.approx(10.0**-k, rel=0.05) and "e" not in shown


def test_the_comparison_panes_ratios_fit_their_column_whole() -> None:
    """``fit_ratio`` (the compare pane's B÷A): fewer decimals, then SI steps, so a ratio
    fits its column without an ellipsis through its digits (123.45x in six cells read
    "123.4…")."""
    from trnscope.core.base.units import fit_ratio
    from trnscope.tui.models import RATIO_WIDTH

    for ratio in (1.76, 12.345, 123.45, 1234.5, 12345.6, 123456.0, 1.5e7, 0.0005, 0.012, 0.099, 1.2e-5, 0.1):
        shown = fit_ratio(ratio, 1.0, RATIO_WIDTH)
        assert len(shown) <= RATIO_WIDTH and "…" not in shown and "e" not in shown, (ratio, shown)
        if ratio < 1e5:  # one significant digit left for the smallest
            assert float(shown.rstrip("x")) == pytest.approx(ratio, rel=0.06 if ratio > 1e-3 else 0.2)
    assert fit_ratio(123.45, 1.0, 6) == "123.5x" and fit_ratio(1234.5, 1.0, 6) == "1234x"


def test_a_share_is_never_rounded_to_nothing_or_to_the_whole() -> None:
    """A GPU busy 28.8 µs of its 57.8 ms (TraceLens's vLLM graph capture) read "idle
    100%": a share that is not all or nothing never reads as all or nothing."""
    from trnscope.core.base.units import fmt_share

    assert fmt_share(57_800 - 28.8, 57_800) == "99.95%" and fmt_share(28.8, 57_800) == "0.05%"
    assert (fmt_share(0, 5), fmt_share(5, 5), fmt_share(1, 3), fmt_share(0.996, 1)) == ("0%", "100%", "33%", "99.6%")
    assert (fmt_share(1e-5, 1), fmt_share(1 - 1e-5, 1), fmt_share(1, 0)) == ("<0.01%", ">99.99%", "—")
    for part in range(0, 100_001, 7):
        text = fmt_share(part, 100_000)
        assert (text == "0%") == (part == 0) and (text == "100%") == (part == 100_000), (part, text)
    assert (fmt_share(1, 3, 1), fmt_share(0.9999, 1, 1), fmt_share(5, 5, 1)) == ("33.3%", "99.99%", "100.0%")


def test_a_negative_self_time_is_explained(tmp_path: Path, capsys) -> None:
    """Two children that overlap one another (nested only partly: PyTorch leaves them
    side by side) add up to more than their parent; key_averages() subtracts both, and
    the row reads below zero.  SGLang's decode trace had ProfilerStep* at −257 µs and no
    word of why."""
    from trnscope.testing.events import op, write_trace

    path = write_trace(
        tmp_path / "t.json",
        [op("parent", 0, 100), op("a", 10, 70), op("b", 20, 75), op("alone", 200, 10)],
        baseTimeNanoseconds=1_700_000_000_000_000_000,
    )
    assert main(["summary", str(path), "--format", "json", "--no-cache"]) == 0
    doc = json.loads(capsys.readouterr().out)
    by_name = {row["name"]: row for row in doc["ops"]}
    assert by_name["parent"]["self_cpu_us"] == 100 - 70 - 75
    (said,) = [w for w in doc["warnings"] if "negative self CPU time" in w]
    assert said.startswith("1 op instance with a negative self CPU time (the lowest: parent, -45.000us)")
    assert (
        main(["summary", str(write_trace(tmp_path / "u.json", [op("x", 0, 10), op("y", 2, 5)])), "--format", "json"])
        == 0
    )
    assert not any("negative self" in w for w in json.loads(capsys.readouterr().out)["warnings"])


def test_the_top_level_help_says_where_to_start(capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    start = out[out.index("start here:") :].splitlines()
    assert [line.split()[1] for line in start[1:]] == ["open", "summary", "diagnose", "ranks", "capture", "COMMAND"]
    assert all(len(line) <= 80 for line in out.splitlines())


def test_steps_of_no_time_compare_without_a_ratio_or_a_warning(capsys, tmp_path: Path) -> None:
    """A baseline whose ProfilerSteps last 0 µs: numpy's "All-NaN slice" warning reached
    the terminal and the ratio read "nan"; its steps read "device-bound" with no device."""
    from trnscope.testing.events import annotation, op, write_trace

    paths = []
    for label, spans in {"a": [0, 0, 0], "b": [10, 20, 30]}.items():
        events = []
        for n, span in enumerate(spans):
            events += [annotation(f"ProfilerStep#{n}", 50 * n, span), op("aten::add", 50 * n, 1)]
        paths.append(str(write_trace(tmp_path / f"{label}.json", events)))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # what a terminal would have shown
        assert main(["compare", *paths, "--no-cache", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert err == "" and json.loads(out)["diagnosis"]["b"]["median_step_ratio"] is None
    assert main(["diagnose", paths[0], "--no-cache", "--format", "json"]) == 0
    assert {step["bound"] for step in json.loads(capsys.readouterr().out)["steps"]} == {"host"}
    interval = bootstrap_ratio(np.array([0.0, 5.0, 5.0]), np.array([1.0, 2.0, 3.0]))
    assert interval.ratio == pytest.approx(0.4) and interval.verdict in ("faster", "within noise", "slower")


def test_a_variant_without_steps_reads_no_steps_and_its_launches_in_all() -> None:
    """NKI benchmark runs have no steps: "host-bound steps" read "0 of 0" and
    "launches / step" read 53 per step of none."""
    from trnscope.core.analysis.compare_model import (
        VariantDiagnosis,
        host_bound_text,
        launches_label,
        launches_text,
    )

    stepless = VariantDiagnosis(device_idle_pct=85.7, host_bound_steps=0, steps=0, dispatches_per_step=53.0)
    stepped = VariantDiagnosis(device_idle_pct=10.0, host_bound_steps=2, steps=5, dispatches_per_step=1575.5)
    assert host_bound_text(stepless) == "no steps" and host_bound_text(stepped) == "2 of 5"
    assert launches_label([stepless, stepless], "launches / step") == "launches"
    assert [launches_text(x, [stepless, stepless]) for x in (stepless, stepless)] == ["53", "53"]
    mixed = [stepped, stepless]
    assert launches_label(mixed, "launches / step") == "launches / step"
    assert [launches_text(x, mixed) for x in mixed] == ["1,575.5", "53 in all"]


def test_chain_without_op_on_a_trace_of_no_op_says_so(capsys, tmp_path: Path) -> None:
    """``chain`` picks the op table's top op; a trace of annotations alone has none to
    follow: one line and exit 2, not a traceback."""
    from trnscope.testing.events import annotation, write_trace

    path = write_trace(tmp_path / "ranges.json", [annotation("ProfilerStep#1", 0, 100), annotation("load", 10, 50)])
    code, out, err = run(capsys, "chain", str(path))
    assert code == 2 and out == ""
    assert err.strip() == (
        "trnscope: error: no op or device event in this trace to follow (`trnscope summary` lists what it has)"
    )


def test_chain_follows_a_kernel_benchmarks_kernel(capsys) -> None:
    """A kernel benchmark (the Neuron runtime's events: no framework op) said "no op in
    this trace to follow", and ``--op rmsnorm_baseline`` "no op named", where the
    explorer drills into the same kernel.  Without ``--op`` the chain follows the
    kernel with the most device time; ``--op`` names any kernel; each is its runtime
    request's stages and its execution."""
    folder = str(SAMPLES / "nki_synthetic_rmsnorm_benchmarks")
    code, out, err = run(capsys, "chain", folder, "--format", "json")
    assert code == 0, err
    assert err.startswith("chain of rmsnorm_baseline: the device event with the most device time")
    document = json.loads(out)
    layers = [hop["layer"] for hop in document["hops"]]
    assert layers[0] == "runtime" and "device" in layers, layers
    assert document["gaps"]["device_us"] > 0
    code, out, err = run(capsys, "chain", folder, "--select", "rmsnorm_fused", "--op", "fused", "--instance", "median")
    assert code == 0, err
    assert out.startswith("rmsnorm_fused  (instance #") and "nrt_execute" in out


def test_the_gloo_recorders_grid_is_of_four_ranks(tmp_path: Path) -> None:
    from trnscope.capture.gloo_ranks import record

    with pytest.raises(ValueError, match="the grid is of 4 ranks"):
        record(tmp_path / "g", world=2, grid=True)
    assert not (tmp_path / "g").exists()


@pytest.mark.parametrize("command", ["summary", "compare", "chain", "diagnose"])
def test_text_and_table_are_one_format_for_every_command(capsys, command: str) -> None:
    """``--format text`` (chain, diagnose, ranks) and ``--format table``
    (summary, compare) print the same thing for a person: each command takes both, and
    prints what its own word prints; an unknown format is still one line and exit 2."""
    session = str(SAMPLES / "cpu_rmsnorm_session")
    printed = []
    for word in ("text", "table"):
        assert main([command, session, "--format", word, "--no-cache"]) == 0, word
        printed.append(capsys.readouterr().out)
    assert printed[0] == printed[1] and printed[0].strip()
    with pytest.raises(SystemExit) as stopped:
        main([command, session, "--format", "xml"])
    assert stopped.value.code == 2
    assert "invalid choice: 'xml'" in capsys.readouterr().err


def test_variants_of_one_script_are_told_apart_by_their_folders(capsys) -> None:
    """Three sessions of one script (eager, a CUDA graph replayed by hand, reduce-overhead)
    compared: their variants are all "infer_cuda_graph", and were labelled "0:…", "1:…",
    "2:…".  Each is now named by its nearest folder that differs; one file given twice
    is still numbered."""
    from trnscope.core.opening.sources import distinct_labels

    sessions = [SAMPLES / f"cuda_graph_{mode}_session" for mode in ("eager", "replay", "compiled")]
    code, out, err = run(capsys, "compare", *map(str, sessions), "--format", "json")
    assert code == 0, err
    labels = [f"cuda_graph_{mode}_session/infer_cuda_graph" for mode in ("eager", "replay", "compiled")]
    assert json.loads(out)["variants"] == labels
    assert distinct_labels(["t", "t"], ["/a/x/t.json", "/b/x/t.json"]) == ["a/x/t", "b/x/t"]
    assert distinct_labels(["t", "u", "t"], ["/a/t.json", "/a/u.json", "/b/t.json"]) == ["a/t", "u", "b/t"]
    assert distinct_labels(["t", "t"], ["/a/t.json", "/a/t.json"]) == ["0:t", "1:t"]
    assert distinct_labels(["t", "t"]) == ["0:t", "1:t"]
