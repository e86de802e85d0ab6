"""Hostile input, second round: the FLOPs, memory, timeline and chain code paths meet
arbitrary values in every ``args`` field they read, and nesting deep anywhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trnscope.cli.main import main
from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.chain import chain_for_row
from trnscope.core.analysis.diagnose import diagnose
from trnscope.core.analysis.summary import build_summary
from trnscope.core.analysis.timeline import build_lanes
from trnscope.core.formats import load_path
from trnscope.core.formats.options import NO_CACHE

COUNTED = ("aten::add", "aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::mul", "aten::conv2d")
ODD_DIMS = ["5", "1.5", "true", "-3", '{"a": 1}', '"x"', "9" * 4000, "null", "[]", "[[-5, 3]]", "[5]", '[["a"]]']


def _ops_with(dims_text: str) -> str:
    events = [
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": name,
            "pid": 1,
            "tid": 1,
            "ts": 10 * k,
            "dur": 5,
            "args": {"Input Dims": 0},
        }
        for k, name in enumerate(COUNTED)
    ]
    return json.dumps({"traceEvents": events}).replace('"Input Dims": 0', f'"Input Dims": {dims_text}')


@pytest.mark.parametrize("dims", ODD_DIMS)
def test_odd_input_dims_give_no_flops_and_a_warning(tmp_path: Path, capsys, dims: str) -> None:
    path = tmp_path / "odd.json"
    path.write_text(_ops_with(dims))
    assert main(["summary", str(path), "--no-cache", "--format", "json", "--with", "flops"]) == 0
    document = json.loads(capsys.readouterr().out)
    counted = [op for op in document["ops"] if op["name"] in COUNTED]
    if not dims.startswith("["):  # not a list of inputs: no count, and the warning says why
        assert all(op["flops"] is None and op["flops_per_s"] is None for op in counted)
        assert any('"Input Dims" are not sizes' in w for w in document["warnings"])
    for group_by in ("shape", "op"):
        assert main(["summary", str(path), "--no-cache", "--group-by", group_by, "--with", "all"]) == 0
    capsys.readouterr()


def _deep(levels: int) -> str:
    return "[" * levels + "1" + "]" * levels


def test_a_deep_conv2d_stride_string(tmp_path: Path, capsys) -> None:
    conv = {
        "ph": "X",
        "cat": "cpu_op",
        "name": "aten::conv2d",
        "pid": 1,
        "tid": 1,
        "ts": 10,
        "dur": 5,
        "args": {
            "Input Dims": [[1, 3, 8, 8], [4, 3, 3, 3], [], [], [], [], []],
            "Concrete Inputs": ["", "", "", _deep(5000), "[0, 0]", "[1, 1]", "1"],
        },
    }
    path = tmp_path / "conv.json"
    path.write_text(json.dumps({"traceEvents": [conv]}))
    assert main(["summary", str(path), "--no-cache", "--format", "json", "--with", "all"]) == 0
    ops = {op["name"]: op for op in json.loads(capsys.readouterr().out)["ops"]}
    assert ops["aten::conv2d"]["flops"] in (None, 0)


def test_a_deep_list_standing_as_an_event(tmp_path: Path, capsys) -> None:
    """Between events it is skipped and counted; as the very first entry the array is
    not one of events (one line, exit 2) — never a RecursionError."""
    good = json.dumps({"ph": "X", "cat": "cpu_op", "name": "kept", "pid": 1, "tid": 1, "ts": 1, "dur": 1})
    path = tmp_path / "after.json"
    later = good.replace('"ts": 1', '"ts": 5')
    path.write_text('{"traceEvents": [' + good + ", " + _deep(1500) + ", " + later + "]}")
    assert main(["summary", str(path), "--no-cache", "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert [(op["name"], op["calls"]) for op in document["ops"]] == [("kept", 2)]
    assert any("1 event without a usable ts/dur" in w or "1 events without" in w for w in document["warnings"])
    assert not any("truncated" in w for w in document["warnings"])
    path = tmp_path / "last.json"
    path.write_text('{"traceEvents": [' + good + ", " + _deep(1500) + "]}")
    assert main(["summary", str(path), "--no-cache", "--format", "json"]) == 0
    assert not any("truncated" in w for w in json.loads(capsys.readouterr().out)["warnings"])
    path = tmp_path / "first.json"
    path.write_text('{"traceEvents": [' + _deep(1500) + ", " + good + "]}")
    assert main(["summary", str(path), "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert "not a list of event objects" in err and err.count("\n") == 1


@pytest.mark.parametrize("key", ["deviceProperties", "distributedInfo", "traceName", "anythingElse"])
def test_deep_nesting_in_a_top_level_key(tmp_path: Path, capsys, key: str) -> None:
    deep = '{"a": ' * 3000 + "1" + "}" * 3000
    event = json.dumps({"ph": "X", "cat": "cpu_op", "name": "kept", "pid": 1, "tid": 1, "ts": 1, "dur": 1})
    for text in (f'{{"{key}": {deep}, "traceEvents": [{event}]}}', f'{{"traceEvents": [{event}], "{key}": {deep}}}'):
        path = tmp_path / "header.json"
        path.write_text(text)
        assert main(["summary", str(path), "--no-cache", "--format", "json"]) == 0
        document = json.loads(capsys.readouterr().out)
        assert [op["name"] for op in document["ops"]] == ["kept"]


# -- every args field the FLOPs, memory and chain code read, fed any JSON value ------

_JSON = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=6),
    ),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=4), inner, max_size=3)),
    max_leaves=12,
)
_FIELDS = (
    "Input Dims",
    "Concrete Inputs",
    "Bytes",
    "Device Type",
    "External id",
    "correlation",
    "Sequence number",
    "Fwd thread id",
    "stream",
    "device",
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.fixed_dictionaries({field: _JSON for field in _FIELDS}), name=st.sampled_from(COUNTED))
def test_any_value_in_any_args_field(tmp_path: Path, values: dict[str, object], name: str) -> None:
    args = dict(values)
    events = [
        {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": 10, "dur": 50, "args": args},
        {
            "ph": "i",
            "cat": "cpu_instant_event",
            "name": "[memory]",
            "pid": 1,
            "tid": 1,
            "ts": 20,
            "s": "t",
            "args": args,
        },
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "pid": 1,
            "tid": 1,
            "ts": 30,
            "dur": 5,
            "args": args,
        },
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 40, "dur": 5, "args": args},
    ]
    path = tmp_path / "any.json"
    path.write_text(json.dumps({"traceEvents": events}))
    analysis = Analysis(load_path(path, NO_CACHE))
    build_summary(analysis, group_by="shape")
    build_summary(analysis)
    for row in range(len(analysis.trace.events)):
        chain_for_row(analysis, row, 0, 1)
    build_lanes(analysis, nested=True)
    diagnose(analysis)


# -- many threads: grouped once, drawn together, same answer as lane by lane ------


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 5), st.integers(0, 1000), st.integers(0, 300)), max_size=60),
    st.integers(1, 40),
    st.integers(0, 200),
)
def test_unions_and_cells_of_many_lanes_equal_one_lane_at_a_time(spans, cells: int, shift: int) -> None:  # type: ignore[no-untyped-def]
    import numpy as np

    from trnscope.core.base.intervals import Union, coverage_grid, unions_of_groups

    group = np.array([g for g, _, _ in spans], dtype=np.int64)
    start = np.array([s for _, s, _ in spans], dtype=np.int64)
    end = start + np.array([d for _, _, d in spans], dtype=np.int64)
    together = unions_of_groups(group, start, end, 6)
    edges = np.linspace(shift, shift + 900, cells + 1).round().astype(np.int64)
    grid = coverage_grid(together, edges)
    for g in range(6):
        alone = Union(start[group == g], end[group == g])
        assert together[g].start.tolist() == alone.start.tolist()
        assert together[g].end.tolist() == alone.end.tolist()
        assert together[g].prefix.tolist() == alone.prefix.tolist()
        expected = np.diff(alone.covered_before(edges)) if len(alone) else np.zeros(cells)
        assert grid[g].tolist() == expected.astype(float).tolist()


def test_many_threads_draw_and_diagnose(tmp_path: Path, capsys) -> None:
    """One op on each of 3,000 threads: every lane is drawn, and the busy time adds up."""
    events = []
    for k in range(3000):
        events.append({"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": k, "ts": k, "dur": 5})
    path = tmp_path / "threads.json"
    path.write_text(json.dumps({"traceEvents": events}))
    assert main(["timeline", str(path), "--width", "100", "--no-cache"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 + 3000 and all("│" in line for line in lines[2:])
    assert all(line.split("│")[1].strip() for line in lines[2:])  # every lane shows its op
    assert main(["diagnose", str(path), "--format", "json", "--no-cache"]) == 0
    steps = json.loads(capsys.readouterr().out)["steps"]
    assert steps and steps[0]["host_busy_us"] > 0


# -- timeline bounds and widths -----------------------------------------------------

SAMPLE = Path(__file__).resolve().parent.parent / "sample_traces" / "trn_synthetic_rmsnorm_session"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--to", "9" * 29 + "s"], "time out of range"),
        (["--from", "9" * 400], "time out of range"),
        (["--to", "9223372036854775807ns"], "time out of range"),
        (["--width", "0"], "--width must be between 40 and 4,000"),
        (["--width", "10000000"], "--width must be between 40 and 4,000"),
        (["--from", "100s"], "--from 100s is past the end of the trace"),
        (["--to", "-5ms"], "--to -5ms is before the start of the trace"),
        (["--from", "nan"], "not a time"),
        (["--from", "1e999ms"], "not a time"),
    ],
)
def test_timeline_bounds_out_of_range_are_one_line(capsys, args: list[str], message: str) -> None:
    assert main(["timeline", str(SAMPLE), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_a_window_reaching_past_the_trace_is_clamped_and_said(capsys) -> None:
    assert main(["timeline", str(SAMPLE), "--from", "-1ms", "--to", "1ms", "--width", "80"]) == 0
    out, err = capsys.readouterr()
    assert "reaches past the trace: showing 0.0us → 1.00ms" in err
    assert out.splitlines()[0].split("  ")[1].startswith("0.0us → 1.00ms")


def test_an_absurd_columns_is_clamped_and_said(capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "99999999999999999999")
    assert main(["timeline", str(SAMPLE)]) == 0
    out, err = capsys.readouterr()
    assert "is outside 40–4,000: laid out for 4,000" in err
    assert max(len(line) for line in out.splitlines()) <= 4000


# -- small leaks: links, numbers as labels, huge names ---------------------------------


def test_a_symlink_loop_and_a_dangling_link_say_what_they_are(tmp_path: Path, capsys) -> None:
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    assert main(["summary", str(tmp_path / "a")]) == 2
    assert "link loop" in capsys.readouterr().err
    (tmp_path / "c").symlink_to(tmp_path / "nothing")
    assert main(["summary", str(tmp_path / "c")]) == 2
    assert "a link to nothing" in capsys.readouterr().err


def test_select_by_number_names_the_label_with_that_number(tmp_path: Path, capsys) -> None:
    event = json.dumps({"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, "ts": 1, "dur": 1})
    for rank in (2, 10, 99, 299):
        (tmp_path / f"rank{rank}.json").write_text('{"traceEvents": [' + event + "]}")
    assert main(["summary", str(tmp_path), "--select", "299", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["label"] == "rank299"
    assert main(["summary", str(tmp_path), "--select", "10", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["label"] == "rank10"
    assert main(["summary", str(tmp_path), "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["label"] == "rank2"  # in number order: rank2 before rank10
    assert any("rank10, rank99, rank299" in w for w in document["warnings"])


def test_diagnose_text_caps_a_huge_op_name(tmp_path: Path, capsys) -> None:
    name = "x" * 2_000_000
    events = [
        {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": 0, "dur": 100},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "pid": 1, "tid": 1, "ts": 1, "dur": 90},
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 5, "dur": 1},
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 95, "dur": 1},
    ]
    path = tmp_path / "huge.json"
    path.write_text(json.dumps({"traceEvents": events}))
    assert main(["diagnose", str(path), "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert len(out) < 20_000 and "characters)…" in out
    assert main(["diagnose", str(path), "--no-cache", "--format", "json"]) == 0
    assert name in capsys.readouterr().out  # JSON keeps it whole


def _trace_with_a_frame(folder: Path) -> Path:
    """A trace whose Self CPU depends on the op-tree rule: an op under a Python frame
    under a range (classic: the range's self time includes the frame's; python: not)."""
    events = [
        {"ph": "X", "cat": "user_annotation", "name": "step", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
        {"ph": "X", "cat": "python_function", "name": "f.py(1): f", "pid": 1, "tid": 1, "ts": 10, "dur": 80},
        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 20, "dur": 10},
    ]
    folder.mkdir(exist_ok=True)
    trace = folder / "t.json"
    trace.write_text(json.dumps({"traceEvents": events}))
    return trace


@pytest.mark.parametrize(
    ("manifest", "rule"),
    [
        (b'{"torch_version": "2.13.0+cpu"}', "python"),
        (b'{"torch_version": "2.11.0+cu130"}', "classic"),
        (b'{"torch_version": 213}', "classic"),  # not text: as if unnamed
        (b'{"torch_version": "99999999999999999999999.1"}', "python"),
        (b'{"torch_version": "\\u001b[2Jrelease"}', "classic"),
        (b"[" * 100_000, "classic"),
        (b"\xff\xfe not json", "classic"),
        (b"", "classic"),
    ],
)
def test_a_session_json_beside_a_trace_sets_the_rule_or_nothing(
    tmp_path: Path, capsys, manifest: bytes, rule: str
) -> None:
    """The PyTorch release in a ``session.json`` beside a trace picks the op-tree rule;
    a manifest that is not one of ours (another type, deep, not UTF-8, empty) leaves the
    default, and the trace opens all the same."""
    trace = _trace_with_a_frame(tmp_path / "run")
    (tmp_path / "run" / "session.json").write_bytes(manifest)
    assert main(["summary", str(trace), "--format", "json", "--no-cache"]) == 0
    assert json.loads(capsys.readouterr().out)["op_tree"] == rule


def test_a_huge_session_json_is_not_read(tmp_path: Path, capsys, monkeypatch) -> None:
    """A ``session.json`` past the manifest limit is never read whole: beside a trace it
    is passed over (the trace opens under the default rule); as a session's manifest it
    is one line and exit 2."""
    from trnscope.core.model import session

    monkeypatch.setattr(session, "MAX_MANIFEST_BYTES", 1000)
    trace = _trace_with_a_frame(tmp_path / "run")
    (tmp_path / "run" / "session.json").write_bytes(b'{"torch_version": "2.13.0", "notes": "' + b"x" * 2000 + b'"}')
    assert main(["summary", str(trace), "--format", "json", "--no-cache"]) == 0
    assert json.loads(capsys.readouterr().out)["op_tree"] == "classic"
    assert main(["summary", str(tmp_path / "run"), "--no-cache"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "session.json" in err[0] and "more than any capture writes" in err[0], err
