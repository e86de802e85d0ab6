"""Hostile input, second round: the FLOPs, memory, timeline and chain code paths meet
arbitrary values in every ``args`` field they read, and nesting deep anywhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trnscope.cli import main
from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.chain import chain_for_row
from trnscope.core.analysis.diagnose import diagnose
from trnscope.core.analysis.summary import build_summary
from trnscope.core.analysis.timeline import build_lanes
from trnscope.core.formats import load_path

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
    analysis = Analysis(load_path(path, use_cache=False))
    build_summary(analysis, group_by="shape")
    build_summary(analysis)
    for row in range(len(analysis.trace.events)):
        chain_for_row(analysis, row, 0, 1)
    build_lanes(analysis, nested=True)
    diagnose(analysis)
