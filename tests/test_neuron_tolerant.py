"""Neuron readers accept what real tool versions write (SYNTHETIC fixtures).

``neuron-evidence.md`` §3, §5: keys the tool does not need may be absent, null, a list
or an object; older releases wrote ``NaN``; ids and sizes arrive as strings; Parquet
tables are split, may disagree on a column's type, or may not be Parquet at all.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from trnscope.cli.main import main
from trnscope.core.analysis.analysis import Analysis
from trnscope.core.formats import load_neuron_profile
from trnscope.core.formats.neuron.discover import session_files
from trnscope.core.formats.neuron.export import export_folder_for, export_key, run_export
from trnscope.core.formats.neuron.tolerant import NONE, int_or_missing, replace_non_standard_numbers
from trnscope.testing.standins import standin_explorer
from trnscope.testing.synth_neuron import write_layout, write_process_session

pytest.importorskip("pyarrow")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (12, 12),
        ("12", 12),
        (" 0x10 ", 16),
        ("1.5e3", 1500),
        (2**63, NONE),
        (-(2**63) - 1, NONE),
        (float("nan"), NONE),
        (float("inf"), NONE),
        ("NaN", NONE),
        ("1e400", NONE),
        ("twelve", NONE),
        ([1], NONE),
        ({"a": 1}, NONE),
        (None, NONE),
        (True, NONE),
    ],
)
def test_numbers_are_used_or_missing_never_clamped(value, expected) -> None:  # type: ignore[no-untyped-def]
    assert int_or_missing(value) == expected


def test_nan_inside_strings_is_left_alone() -> None:
    raw = b'{"label": "NaN Infinity", "t": NaN, "u": -Infinity, "v": [Infinity, 1]}'
    cleaned, count = replace_non_standard_numbers(raw)
    assert count == 3
    assert json.loads(cleaned) == {"label": "NaN Infinity", "t": None, "u": None, "v": [None, 1]}


def _json_session(tmp_path: Path) -> tuple[Path, Path, object]:
    truth = write_process_session(tmp_path / "p", "eager", exports=("json",))
    system = next((tmp_path / "p").rglob("system_profile.json"))
    return tmp_path / "p", system, truth


def test_device_json_with_odd_keys_nan_and_strings_still_reads(tmp_path: Path) -> None:
    root, _system, truth = _json_session(tmp_path)
    device = sorted(root.rglob("device_profile_model_*.json"))[0]
    doc = json.loads(device.read_text())
    doc["metadata"] = [{"neuroncore_idx": 0}]  # a list where an object was
    doc["summary"] = {"total_time": "n/a"}
    doc["profile_info"] = "unexpected text"
    doc["instruction"][0]["operands"] = {"nested": [1, 2]}
    doc["instruction"][1]["timestamp"] = None
    doc["instruction"][2]["duration"] = "NaN"
    doc["instruction"].append("not an object")
    text = json.dumps(doc).replace('"NaN"', "NaN")
    text = text.replace('"duration": ' + str(doc["instruction"][3]["duration"]), '"duration": 99999999999999999999', 1)
    device.write_text(text)
    analysis = Analysis(load_neuron_profile(root))
    warnings = " | ".join(analysis.trace.warnings)
    assert "1 NaN/Infinity values read as missing" in warnings
    assert "1 instructions without a usable timestamp were dropped" in warnings
    assert "2 instructions without a usable duration count as instants" in warnings
    assert "1 instruction entries were not objects and were skipped" in warnings
    table = analysis.op_table()
    assert int(table.device_total[table.find("aten::pow")]) == truth.ops["aten::pow"].device_total_ns


def test_system_json_with_unusable_timestamps_drops_them_with_a_count(tmp_path: Path) -> None:
    root, system, _truth = _json_session(tmp_path)
    doc = json.loads(system.read_text())
    runtime = [e for e in doc["trace_event"] if e["name"] == "dmem_buf_copyin"]
    runtime[0]["timestamp"] = None
    runtime[1]["timestamp"] = "yesterday"
    runtime[2]["timestamp"] = 2**64  # ≥ 2^63: missing, never wrapped or clamped
    doc["warnings"] = {"message": "an object where a list was"}
    doc["device_profile_list"] = "n/a"
    system.write_text(json.dumps(doc))
    trace = load_neuron_profile(root)
    assert any("3 events without a usable timestamp" in w for w in trace.warnings)
    # nothing lands decades before the capture
    assert int(trace.events.ts.min()) >= 0 or trace.origin_ns + int(trace.events.ts.min()) > 10**18
    assert int(Analysis(trace).op_table().device_total.max()) > 0


def _parquet_session(tmp_path: Path) -> Path:
    write_process_session(tmp_path / "p", "eager", exports=("parquet",))
    return next((tmp_path / "p").rglob("SystemProfileEvents.parquet")).parent


def test_split_tables_whose_parts_disagree_on_a_type_are_read(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    system_dir = _parquet_session(tmp_path)
    table = pq.read_table(system_dir / "SystemProfileEvents.parquet")
    half = table.num_rows // 2
    first = table.slice(0, half)
    second = table.slice(half)
    # a later writer spelled ids and thread ids as strings
    for name in ("id", "thread_id"):
        index = second.schema.get_field_index(name)
        second = second.set_column(index, name, pa.array([str(v) for v in second.column(name).to_pylist()]))
    (system_dir / "SystemProfileEvents.parquet").unlink()
    pq.write_table(first, system_dir / "SystemProfileEvents_0.parquet")
    pq.write_table(second, system_dir / "SystemProfileEvents_1.parquet")
    analysis = Analysis(load_neuron_profile(tmp_path / "p", prefer="parquet"))
    assert analysis.neuron.report.linked == analysis.neuron.report.executions - 1


@pytest.mark.parametrize("fault", ["not-parquet", "empty-file", "missing-column", "fifo"])
def test_broken_tables_give_one_line(tmp_path: Path, capsys, fault: str) -> None:
    import pyarrow.parquet as pq

    system_dir = _parquet_session(tmp_path)
    target = system_dir / "SystemProfileEvents.parquet"
    if fault == "not-parquet":
        target.write_text("this is not parquet\n")
    elif fault == "empty-file":
        target.write_bytes(b"")
    elif fault == "missing-column":
        table = pq.read_table(target)
        pq.write_table(table.drop_columns(["start_ts"]), target)
    else:
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs here")
        target.unlink()
        os.mkfifo(target)
    code = main(["summary", str(tmp_path / "p")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert "SystemProfileEvents" in err


def test_mapping_file_that_is_broken_is_a_warning(tmp_path: Path) -> None:
    write_process_session(tmp_path / "p", "eager", exports=("json",), flows=False)
    mapping = next((tmp_path / "p").rglob("framework_mapping_*.json"))
    mapping.write_text("{not json")
    analysis = Analysis(load_neuron_profile(tmp_path / "p"))
    assert any("unreadable framework mapping" in w for w in analysis.trace.warnings)
    assert analysis.neuron.report.by_time == analysis.neuron.report.linked > 0


# -- exports ---------------------------------------------------------------------------------------


def test_export_cache_is_keyed_on_the_capture_files(tmp_path: Path, isolated_cache: Path) -> None:
    write_layout(tmp_path / "out", "april2026", ranks=1)
    pid_dir = next((tmp_path / "out").glob("*_pid_*"))
    files = session_files(pid_dir)
    before = export_key(files)
    assert export_key(session_files(pid_dir)) == before  # stable
    ntff = next(pid_dir.glob("*.ntff"))
    ntff.write_bytes(ntff.read_bytes() + b"more events")
    assert export_key(session_files(pid_dir)) != before


def test_unreadable_cache_entry_is_exported_again(tmp_path: Path, monkeypatch, isolated_cache: Path) -> None:
    write_layout(tmp_path / "out", "april2026", ranks=1)
    pid_dir = next((tmp_path / "out").glob("*_pid_*"))
    bin_dir = tmp_path / "bin"
    counter = tmp_path / "runs"
    standin_explorer(bin_dir, exports={"pid": 5000, "seed": 0, "steps": 3}, runs=counter)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    files = session_files(pid_dir)
    target = run_export(files)
    assert target == export_folder_for(files) and counter.read_text() == "1"
    assert run_export(files) == target and counter.read_text() == "1"  # cached
    for part in target.rglob("SystemProfileEvents*.parquet"):
        part.write_bytes(b"truncated")
    assert run_export(files) == target and counter.read_text() == "2"  # redone
    analysis = Analysis(load_neuron_profile(pid_dir))
    assert analysis.neuron_data.export_format == "parquet" and analysis.neuron.report.linked > 0


def test_explorer_error_is_one_clean_line(tmp_path: Path, monkeypatch, capsys, isolated_cache: Path) -> None:
    write_layout(tmp_path / "out", "april2026", ranks=1)
    standin_explorer(tmp_path / "bin", fail=(3, "loading\n\x1b[31mERROR: NTFF version 4 is not supported\x1b[0m\n"))
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    code = main(["summary", str(tmp_path / "out"), "--export"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "\x1b" not in err
    assert "neuron-explorer failed with status 3" in err and "NTFF version 4 is not supported" in err
    exports = isolated_cache / "neuron-export"
    assert not exports.exists() or not [p for p in exports.iterdir() if p.is_dir()]  # the failed run left nothing


def test_mapping_tells_forward_from_backward_ops_by_thread(tmp_path: Path) -> None:
    """A backward op carries its forward op's sequence number; the mapping's th_id
    says which of the two submitted the work."""
    from trnscope.testing.synth_neuron import BASE_TIME_NS

    session = tmp_path / "p" / "i-0synthetic_pid_7" / "1"
    session.mkdir(parents=True)
    (tmp_path / "p" / "SYNTHETIC.txt").write_text("SYNTHETIC\n")

    def op(name: str, tid: int, ts: float, dur: float, seq: int, fwd: int) -> dict:
        return {
            "ph": "X", "cat": "cpu_op", "name": name, "pid": 7, "tid": tid, "ts": ts, "dur": dur,
            "args": {"Sequence number": seq, "Fwd thread id": fwd, "External id": int(ts)},
        }  # fmt: skip

    events = [
        op("aten::mul", 1, 10.0, 20.0, 5, 0),  # forward, main thread (index 1)
        op("MulBackward0", 2, 100.0, 30.0, 5, 1),  # backward, autograd thread (index 2)
        op("aten::mul", 2, 105.0, 20.0, 5, 1),  # the backward's own aten::mul
    ]
    (session / "trace.json").write_text(
        json.dumps({"traceEvents": events, "baseTimeNanoseconds": BASE_TIME_NS, "schemaVersion": 1})
    )
    (session / "ntrace.pb").write_bytes(b"SYNTHETIC placeholder")
    system = {
        "trace_event": [
            {"name": "nrt_model_submit", "timestamp": BASE_TIME_NS + 15_000, "duration": 2_000, "thread_id": 9,
             "process_id": "7", "nrta_seq_id": "1", "exec_id": "1", "lnc_idx": "0"},
            {"name": "nrt_model_submit", "timestamp": BASE_TIME_NS + 110_000, "duration": 2_000, "thread_id": 9,
             "process_id": "7", "nrta_seq_id": "2", "exec_id": "2", "lnc_idx": "0"},
            {"name": "nc_exec_running", "timestamp": BASE_TIME_NS + 20_000, "duration": 10_000, "thread_id": 0,
             "process_id": "7", "exec_id": "1", "lnc_idx": "0", "type": 12},
            {"name": "nc_exec_running", "timestamp": BASE_TIME_NS + 115_000, "duration": 10_000, "thread_id": 0,
             "process_id": "7", "exec_id": "2", "lnc_idx": "0", "type": 12},
        ]
    }  # fmt: skip
    (session / "profile.json").write_text(json.dumps(system))
    mapping = {
        "version": 1,
        "data": [
            {"nrta_seq_id": 1, "framework_op_exec_ids": [{"seq_nr": 5, "th_id": 1, "stream_id": 0}]},
            {"nrta_seq_id": 2, "framework_op_exec_ids": [{"seq_nr": 5, "th_id": 2, "stream_id": 0}]},
        ],
    }
    (session / "framework_mapping_20261130_000000_000.json").write_text(json.dumps(mapping))
    analysis = Analysis(load_neuron_profile(tmp_path / "p"))
    neuron = analysis.neuron
    ev = analysis.trace.events
    names = [analysis.trace.names[int(ev.name[r])] for r in neuron.by_execution.op.tolist()]
    threads = [analysis.trace.threads[int(ev.thread[r])].tid for r in neuron.by_execution.op.tolist()]
    assert neuron.report.by_mapping == 2
    assert list(zip(names, threads)) == [("aten::mul", "1"), ("aten::mul", "2")]
    assert np.all(neuron.by_execution.method == neuron.by_execution.method[0])


def test_an_empty_system_table_is_said(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    system_dir = _parquet_session(tmp_path)
    table = pq.read_table(system_dir / "SystemProfileEvents.parquet")
    pq.write_table(table.slice(0, 0), system_dir / "SystemProfileEvents.parquet")
    trace = load_neuron_profile(tmp_path / "p", prefer="parquet")
    assert any("the system profile holds no events" in w for w in trace.warnings)
    assert len(Analysis(trace).op_table().name) > 0  # the framework trace is still there


def test_documented_spelling_and_payload_under_args(tmp_path: Path) -> None:
    """``trace_events`` (the documented spelling) and the payload nested under ``args``
    (older files) read the same as the observed flat ``trace_event``."""
    root, system, truth = _json_session(tmp_path)
    doc = json.loads(system.read_text())
    keep = {"name", "timestamp", "duration", "type", "group", "thread_id", "process_id", "instance_id"}
    events = [
        {**{k: v for k, v in e.items() if k in keep}, "args": {k: v for k, v in e.items() if k not in keep}}
        for e in doc["trace_event"]
    ]
    system.write_text(json.dumps({"trace_events": events}))
    analysis = Analysis(load_neuron_profile(root))
    assert analysis.neuron.report.linked == len(truth.executions)
    table = analysis.op_table()
    assert int(table.device_total[table.find("aten::pow")]) == truth.ops["aten::pow"].device_total_ns
