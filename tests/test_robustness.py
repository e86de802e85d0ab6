"""Bad, broken, truncated and hostile input: nothing crashes, nothing is lost silently."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import msgspec
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import REPO
from trnscope.cli.main import main
from trnscope.core.analysis.analysis import Analysis
from trnscope.core.base.errors import TrnscopeError
from trnscope.core.formats import SourceRef, load_path
from trnscope.core.formats.options import NO_CACHE, LoadOptions
from trnscope.core.model.roles import Role
from trnscope.core.model.trace import Trace
from trnscope.core.opening.open import open_analysis
from trnscope.testing.events import op, trace_text
from trnscope.testing.synth_kineto import generate_text

SMALL_TEXT, SMALL_TRUTH = generate_text(1500, seed=11)
SMALL = SMALL_TEXT.encode()
EVENTS = SMALL_TRUTH.events


def complete_events_before(data: bytes, cut: int) -> int:
    """How many whole events a reader can recover from ``data[:cut]`` (ground truth by
    decoding the prefix up to each event's end with the standard library)."""
    doc = json.loads(data)
    start = data.index(b'"traceEvents"')
    count = 0
    position = data.index(b"[", start) + 1
    decoder = json.JSONDecoder()
    text = data.decode()
    index = len(data[:position].decode())
    for _ in doc["traceEvents"]:
        while text[index] in " \n\r\t,":
            index += 1
        _, end = decoder.raw_decode(text, index)
        if len(text[:end].encode()) > cut:
            break
        count += 1
        index = end
    return count


def write(tmp_path: Path, data: bytes, name: str = "t.json") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fraction=st.floats(min_value=0.02, max_value=0.999))
def test_truncated_anywhere_recovers_every_complete_event(tmp_path: Path, fraction: float) -> None:
    cut = int(len(SMALL) * fraction)
    path = write(tmp_path, SMALL[:cut], f"cut{cut}.json")
    expected = complete_events_before(SMALL, cut)
    if expected == 0:
        with pytest.raises(TrnscopeError):
            load_path(path, NO_CACHE)
        return
    trace = load_path(path, NO_CACHE)
    assert trace.stats.truncated
    assert trace.stats.events == expected
    assert 0 <= trace.stats.lost_bytes < 4096  # at most the event the cut went through
    assert any("truncated" in w for w in trace.warnings)
    Analysis(trace).op_table()


@pytest.mark.parametrize("fraction", [0.1, 0.5, 0.93])
def test_truncated_gzip_stream(tmp_path: Path, fraction: float) -> None:
    compressed = gzip.compress(SMALL)
    path = write(tmp_path, compressed[: int(len(compressed) * fraction)], "cut.json.gz")
    trace = load_path(path, NO_CACHE)
    assert trace.stats.truncated and trace.stats.events > 0
    assert any("gzip stream ends early" in w for w in trace.warnings)


def test_truncated_trace_in_cli_and_tui_messages(tmp_path: Path, capsys) -> None:
    path = write(tmp_path, SMALL[: len(SMALL) // 2])
    code = main(["summary", str(path), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and any("truncated" in w for w in doc["warnings"])
    from trnscope.tui.status import status_text

    analysis = open_analysis(SourceRef("t", str(path)))
    assert "TRUNCATED" in str(status_text(analysis))


def _trace(events: list[dict], **top: object) -> bytes:
    return trace_text(events, **top).encode()


BASE = [op("aten::mm", 10.0, 5.0, ext=1), op("aten::add", 20.0, 2.0, ext=2)]


def test_wrong_types_are_coerced_or_counted(tmp_path: Path) -> None:
    events = [
        *BASE,
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": "aten::sub",
            "pid": "1",
            "tid": "1",
            "ts": "30.5",
            "dur": "1.5",
            "args": {"External id": "3"},
        },
        {"ph": "X", "cat": "cpu_op", "name": "aten::null_dur", "pid": 1, "tid": 1, "ts": 40, "dur": None},
        {"ph": "X", "cat": "cpu_op", "name": "aten::negative", "pid": 1, "tid": 1, "ts": 50, "dur": -3},
        {"ph": "X", "cat": "cpu_op", "name": "no_ts", "pid": 1, "tid": 1, "dur": 3},
        {"cat": "cpu_op", "name": "no_ph", "pid": 1, "tid": 1, "ts": 60, "dur": 3},
        {"ph": "X", "cat": 7, "name": 12345, "pid": [1], "tid": {"a": 1}, "ts": 70, "dur": 1},
        7,
        "not an event",
        {"ph": "X", "cat": "cpu_op", "name": "bad_ts", "pid": 1, "tid": 1, "ts": "soon", "dur": 1},
    ]
    trace = load_path(write(tmp_path, _trace(events)), NO_CACHE)  # type: ignore[arg-type]
    names = {trace.names[i] for i in trace.events.name}
    assert {"aten::mm", "aten::add", "aten::sub", "12345"} <= names
    assert not names & {"aten::null_dur", "aten::negative", "no_ts", "no_ph", "bad_ts"}
    assert trace.stats.invalid_events == 7  # the five above and the two entries that are not objects
    assert "7 events without a usable ts/dur skipped" in trace.warnings
    assert "some event fields had unexpected JSON types and were converted or ignored" in trace.warnings
    sub = int(np.flatnonzero(np.array([trace.names[i] for i in trace.events.name]) == "aten::sub")[0])
    assert trace.events.dur[sub] == 1500 and trace.events.external_id[sub] == 3


def test_flows_duplicate_and_unmatched(tmp_path: Path) -> None:
    events = [
        *BASE,
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "pid": 1,
            "tid": 1,
            "ts": 11.0,
            "dur": 1.0,
            "args": {"correlation": 9},
        },
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 13.0, "dur": 1.0, "args": {}},
        {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 9, "pid": 1, "tid": 1, "ts": 11.0},
        {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 9, "pid": 1, "tid": 1, "ts": 11.0},
        {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": 9, "pid": 0, "tid": 7, "ts": 13.0, "bp": "e"},
        {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": 404, "pid": 0, "tid": 7, "ts": 13.0, "bp": "e"},
        {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": "str-id", "pid": 1, "tid": 1, "ts": 20.0},
    ]
    analysis = Analysis(load_path(write(tmp_path, _trace(events)), NO_CACHE))
    assert analysis.link_report.by_flow == 1
    table = analysis.op_table()
    assert table.self_device[table.find("aten::mm")] == 1000


def test_invalid_utf8_and_unescaped_quote(tmp_path: Path) -> None:
    good = _trace(BASE)
    broken_name = good.replace(b"aten::add", b"aten::\xff\xfeadd")
    trace = load_path(write(tmp_path, broken_name, "utf8.json"), NO_CACHE)
    assert any("\ufffd" in n for n in trace.names)
    assert any("UTF-8" in w for w in trace.warnings)
    quoted = good.replace(b'"aten::add"', b'"aten::"add"')
    trace = load_path(write(tmp_path, quoted, "quote.json"), NO_CACHE)
    assert trace.stats.lost_events == 1 and len(trace.events) == 1
    assert any("malformed events skipped" in w for w in trace.warnings)


def test_big_integers_and_string_pids(tmp_path: Path) -> None:
    events = [
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": "record_param_comms",
            "pid": "host-a",
            "tid": "worker 7",
            "ts": 1.0,
            "dur": 2.0,
            "args": {"External id": 10159970886766084423, "Comms Id": 101599708867660844231234},
        },
        {
            "ph": "X",
            "cat": "kernel",
            "name": "nccl",
            "pid": 0,
            "tid": 7,
            "ts": 1.5,
            "dur": 1.0,
            "args": {"External id": 10159970886766084423, "correlation": 5},
        },
    ]
    analysis = Analysis(load_path(write(tmp_path, _trace(events)), NO_CACHE))
    assert analysis.link_report.linked == 1
    assert analysis.trace.threads[int(analysis.trace.events.thread[0])].tid == "worker 7"


def test_legacy_bare_array_and_begin_end_pairs(tmp_path: Path) -> None:
    events = [
        {"ph": "B", "name": "outer", "pid": 1, "tid": 1, "ts": 0},
        {"ph": "X", "cat": "cpu_op", "name": "inner", "pid": 1, "tid": 1, "ts": 1, "dur": 2},
        {"ph": "E", "pid": 1, "tid": 1, "ts": 10},
        {"ph": "E", "pid": 1, "tid": 1, "ts": 11},
    ]
    trace = load_path(write(tmp_path, json.dumps(events).encode()), NO_CACHE)
    assert trace.format == "chrome-array"
    table = Analysis(trace).op_table()
    outer = table.find("outer")
    assert table.cpu_total[outer] == 10_000 and table.self_cpu[outer] == 8_000


def test_header_after_events_and_absolute_times(tmp_path: Path) -> None:
    events = [dict(e, ts=1661203462598738 + e["ts"]) for e in BASE]
    data = json.dumps({"traceEvents": events, "displayTimeUnit": "ns", "schemaVersion": 1}).encode()
    trace = load_path(write(tmp_path, data), NO_CACHE)
    assert trace.origin_is_unix and trace.origin_ns == 1661203462598748 * 1000
    assert trace.events.dur[0] == 5000


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 2),  # thread
            st.integers(0, 400),  # start
            st.integers(0, 60),  # duration
            st.sampled_from(["cpu_op", "user_annotation", "python_function", "cuda_runtime"]),
            st.integers(0, 5),  # name
            st.booleans(),  # launches a kernel
        ),
        min_size=1,
        max_size=60,
    )
)
def test_invariants_on_random_traces(tmp_path_factory, spec) -> None:  # type: ignore[no-untyped-def]
    """Random (also partly overlapping) host events and kernels: no crash, self ≤ total,
    self times partition root time per thread, every device event linked or counted."""
    events = []
    for i, (thread, start, dur, cat, name, launches) in enumerate(spec):
        events.append(
            {
                "ph": "X",
                "cat": cat,
                "name": f"op{name}",
                "pid": 1,
                "tid": thread,
                "ts": float(start),
                "dur": float(dur),
                "args": {"External id": i + 1},
            }
        )
        if launches:
            events.append(
                {
                    "ph": "X",
                    "cat": "kernel",
                    "name": f"k{name}",
                    "pid": 0,
                    "tid": 7,
                    "ts": float(start + dur),
                    "dur": 1.5,
                    "args": {"External id": i + 1 if i % 3 else 99999, "correlation": 10_000 + i},
                }
            )
    path = tmp_path_factory.mktemp("rand") / "r.json"
    path.write_bytes(_trace(events))
    analysis = Analysis(load_path(path, NO_CACHE))
    table = analysis.op_table()
    assert (table.self_cpu <= table.cpu_total).all()
    assert (table.self_device <= table.device_total).all()
    links = analysis.links
    ev = analysis.trace.events
    alive = links.in_op_tree & (links.merged_into < 0)
    roots = alive & (links.parent < 0)
    nested = np.flatnonzero(alive & (links.parent >= 0))
    assert alive[links.parent[nested]].all()  # folding never leaves a row under a folded one
    self_sum = np.bincount(
        ev.thread[alive], weights=analysis.times.self_cpu[alive], minlength=len(analysis.trace.threads)
    )
    root_sum = np.bincount(
        ev.thread[roots], weights=np.maximum(ev.dur[roots], 0), minlength=len(analysis.trace.threads)
    )
    assert np.allclose(self_sum, root_sum)
    report = analysis.link_report
    kernels = int((ev.role == int(Role.KERNEL)).sum())
    assert report.device_events == kernels
    assert report.linked + report.unlinkable + report.outside_ops + report.unresolved == kernels


def test_skip_python_at_load(small_synthetic) -> None:
    path, truth = small_synthetic
    full = load_path(path, NO_CACHE)
    lean = load_path(path, LoadOptions(skip=("python",), use_cache=False))
    python = int((full.events.role == int(Role.PYTHON)).sum())
    assert python > 0 and len(lean.events) == len(full.events) - python
    assert lean.stats.skipped_events == python
    table = Analysis(lean).op_table()
    assert table.calls[table.find("aten::linear")] == truth.ops["aten::linear"].calls


# -- caches -------------------------------------------------------------------------


def _digest(path: Path) -> tuple[str, float]:
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime


def test_cache_is_used_then_rebuilt_when_file_changes(tmp_path: Path, isolated_cache: Path) -> None:
    path = tmp_path / "t.pt.trace.json"
    path.write_bytes(SMALL)
    source = SourceRef("t", str(path))
    first = open_analysis(source)
    first.finish()
    assert not first.trace.stats.from_cache and list((isolated_cache / "index").glob("*.idx"))
    second = open_analysis(source)
    assert second.trace.stats.from_cache
    assert second.op_table().calls.tolist() == first.op_table().calls.tolist()
    # every field of the trace comes back as it was stored
    for field in msgspec.structs.fields(Trace):
        if field.name in ("stats", "buffer", "neuron"):
            continue
        before, after = getattr(first.trace, field.name), getattr(second.trace, field.name)
        if field.name == "events":
            for column in before.__struct_fields__:
                np.testing.assert_array_equal(getattr(before, column), getattr(after, column), err_msg=column)
        elif isinstance(before, np.ndarray):
            np.testing.assert_array_equal(before, after, err_msg=field.name)
        else:
            assert before == after, field.name
    assert second.trace.stats.events == first.trace.stats.events
    np.testing.assert_array_equal(second.links.forward_of, first.links.forward_of)
    # rewrite the file with other content: the fingerprint changes, the cache is not used
    path.write_bytes(_trace(BASE))
    time.sleep(0.01)
    third = open_analysis(source)
    assert not third.trace.stats.from_cache and len(third.trace.events) == 2


def test_corrupted_cache_is_detected_and_rebuilt(tmp_path: Path, isolated_cache: Path) -> None:
    path = tmp_path / "t.pt.trace.json"
    path.write_bytes(SMALL)
    source = SourceRef("t", str(path))
    open_analysis(source).finish()
    index = next((isolated_cache / "index").glob("*.idx"))
    data = bytearray(index.read_bytes())
    data[-100] ^= 0xFF  # flip bits in the payload
    index.write_bytes(bytes(data))
    again = open_analysis(source)
    assert not again.trace.stats.from_cache
    assert len(again.trace.events) == EVENTS
    again.finish()
    index.write_bytes(b"garbage")
    assert not open_analysis(source).trace.stats.from_cache


def test_no_cache_flag_and_concurrent_openers(tmp_path: Path, isolated_cache: Path) -> None:
    path = tmp_path / "t.pt.trace.json"
    path.write_bytes(SMALL)
    assert main(["summary", str(path), "--no-cache", "--format", "json"]) == 0
    assert not list(isolated_cache.rglob("*.idx"))
    env = {**os.environ, "TRNSCOPE_CACHE_DIR": str(isolated_cache), "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "trnscope", "summary", str(path), "--format", "json"]
    processes = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) for _ in range(4)]
    outputs = [p.communicate() for p in processes]
    assert all(p.returncode == 0 for p in processes), [o[1] for o in outputs]
    assert len({o[0] for o in outputs}) == 1
    assert len(list(isolated_cache.rglob("*.idx"))) == 1
    assert not list(isolated_cache.rglob("*.tmp"))
    cached = open_analysis(SourceRef("t", str(path)))
    assert cached.trace.stats.from_cache


def test_input_files_are_never_written(tmp_path: Path, small_synthetic) -> None:
    trace = tmp_path / "t.pt.trace.json"
    trace.write_bytes(small_synthetic[0].read_bytes())
    gz = tmp_path / "t2.pt.trace.json.gz"
    gz.write_bytes(gzip.compress(SMALL))
    session = REPO / "sample_traces" / "trn_synthetic_rmsnorm_session"
    inputs = [trace, gz, *(sorted(session.rglob("*")) if session.exists() else [])]
    before = {p: _digest(p) for p in inputs if p.is_file()}
    listing = sorted(str(p) for p in tmp_path.rglob("*"))
    for path in (trace, gz, session):
        assert main(["summary", str(path), "--format", "json"]) == 0
        assert main(["summary", str(path), "--format", "json"]) == 0
    assert main(["chain", str(trace), "--op", "aten::mm"]) == 0
    assert {p: _digest(p) for p in before} == before
    assert sorted(str(p) for p in tmp_path.rglob("*")) == listing


def test_gzip_is_decompressed_into_the_cache_once(tmp_path: Path, isolated_cache: Path) -> None:
    gz = tmp_path / "t.pt.trace.json.gz"
    gz.write_bytes(gzip.compress(SMALL))
    trace = load_path(gz)
    assert trace.stats.compressed and Path(trace.plain_path).parent == isolated_cache / "plain"
    first = Path(trace.plain_path).stat().st_ino  # a new copy would be a new file (written, then renamed)
    again = load_path(gz)
    assert again.plain_path == trace.plain_path and Path(again.plain_path).stat().st_ino == first


def test_lazy_args_after_cache_clear(tmp_path: Path, isolated_cache: Path, capsys) -> None:
    gz = tmp_path / "t.pt.trace.json.gz"
    gz.write_bytes(gzip.compress(SMALL))
    assert main(["summary", str(gz), "--format", "json"]) == 0
    assert main(["cache", "clear"]) == 0
    capsys.readouterr()
    assert main(["chain", str(gz), "--op", "aten::linear", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    op = next(h for h in doc["hops"] if h["kind"] == "op")
    assert op["details"]["Input Dims"] == [[64, 1024], [1024, 1024], [1024]]


@pytest.mark.parametrize("after", [False, True])
def test_entries_that_are_not_objects_at_the_end_of_the_array(tmp_path: Path, after: bool) -> None:
    """`[..., {...}, 7, "x"]` is a complete array: the last event loads and the two
    entries count as skipped, as they do anywhere else, instead of a truncation (also
    when more keys, with lists of their own, follow the array)."""
    body = {"schemaVersion": 1, "traceEvents": [*BASE, 7, "x"]}
    if after:
        body["deviceProperties"] = [{"id": 0, "name": "GPU"}]
    path = tmp_path / "tail.json"
    path.write_bytes(json.dumps(body).encode())
    trace = load_path(path, NO_CACHE)  # type: ignore[arg-type]
    assert not trace.stats.truncated
    assert len(trace.events) == len(BASE)
    assert trace.stats.invalid_events == 2
    assert not any("truncated" in w for w in trace.warnings)
